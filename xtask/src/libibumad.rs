//! `cargo xtask libibumad`: build the drop-in `libibumad.so.3` and check its ELF interface.
//!
//! 1. `cargo build -p libibumad --profile capi --features capi` (staticlib, `panic = "abort"`;
//!    the `capi` feature refuses to compile otherwise);
//! 2. link it with `cc -shared -Wl,--whole-archive … -Wl,--version-script=…` — the only way to
//!    get symbol versions from Rust (a cdylib's build-script link args leave them unversioned);
//! 3. `libibumad.so` symlink and `libibumad.pc` next to it, in `<target>/libibumad/`;
//! 4. check with `readelf`: exactly the 42 functions with their `@@IBUMAD_1.x` versions, the
//!    version nodes 1.0…1.4 chained, nothing else exported, SONAME, NEEDED, BIND_NOW, RELRO;
//!    and compare the symbol/version set with the system libibumad (Debian 44.0 has all of
//!    ours but the three HEAD additions).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, workspace_root};

/// The SONAME (and file name) of the library.
const SONAME: &str = "libibumad.so.3";
/// The system library compared against.
const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libibumad.so.3";
/// The version script, relative to the workspace root.
const VERSION_SCRIPT: &str = "crates/libibumad/libibumad.map";
/// The pkg-config version: SONAME major 3, ABI minor 4 (IBUMAD_1.4).
const PC_VERSION: &str = "3.4.0";

/// The version nodes and their parents.
const NODES: [(&str, Option<&str>); 5] = [
    ("IBUMAD_1.0", None),
    ("IBUMAD_1.1", Some("IBUMAD_1.0")),
    ("IBUMAD_1.2", Some("IBUMAD_1.1")),
    ("IBUMAD_1.3", Some("IBUMAD_1.2")),
    ("IBUMAD_1.4", Some("IBUMAD_1.3")),
];

/// Every exported function and its version node (rdma-core HEAD).
const SYMBOLS: [(&str, &str); 42] = [
    ("umad_init", "IBUMAD_1.0"),
    ("umad_done", "IBUMAD_1.0"),
    ("umad_get_cas_names", "IBUMAD_1.0"),
    ("umad_get_ca_portguids", "IBUMAD_1.0"),
    ("umad_open_port", "IBUMAD_1.0"),
    ("umad_get_ca", "IBUMAD_1.0"),
    ("umad_release_ca", "IBUMAD_1.0"),
    ("umad_get_port", "IBUMAD_1.0"),
    ("umad_release_port", "IBUMAD_1.0"),
    ("umad_close_port", "IBUMAD_1.0"),
    ("umad_get_mad", "IBUMAD_1.0"),
    ("umad_get_issm_path", "IBUMAD_1.0"),
    ("umad_size", "IBUMAD_1.0"),
    ("umad_set_grh", "IBUMAD_1.0"),
    ("umad_set_pkey", "IBUMAD_1.0"),
    ("umad_get_pkey", "IBUMAD_1.0"),
    ("umad_set_addr", "IBUMAD_1.0"),
    ("umad_set_addr_net", "IBUMAD_1.0"),
    ("umad_send", "IBUMAD_1.0"),
    ("umad_recv", "IBUMAD_1.0"),
    ("umad_poll", "IBUMAD_1.0"),
    ("umad_get_fd", "IBUMAD_1.0"),
    ("umad_register", "IBUMAD_1.0"),
    ("umad_register2", "IBUMAD_1.0"),
    ("umad_register_oui", "IBUMAD_1.0"),
    ("umad_unregister", "IBUMAD_1.0"),
    ("umad_status", "IBUMAD_1.0"),
    ("umad_get_mad_addr", "IBUMAD_1.0"),
    ("umad_debug", "IBUMAD_1.0"),
    ("umad_addr_dump", "IBUMAD_1.0"),
    ("umad_dump", "IBUMAD_1.0"),
    ("umad_class_str", "IBUMAD_1.0"),
    ("umad_method_str", "IBUMAD_1.0"),
    ("umad_common_mad_status_str", "IBUMAD_1.0"),
    ("umad_sa_mad_status_str", "IBUMAD_1.0"),
    ("umad_attribute_str", "IBUMAD_1.0"),
    ("umad_get_ca_device_list", "IBUMAD_1.1"),
    ("umad_free_ca_device_list", "IBUMAD_1.1"),
    ("umad_sort_ca_device_list", "IBUMAD_1.2"),
    ("umad_open_smi_port", "IBUMAD_1.3"),
    ("umad_get_smi_gsi_pairs", "IBUMAD_1.4"),
    ("umad_get_smi_gsi_pair_by_ca_name", "IBUMAD_1.4"),
];

/// The symbols rdma-core added after Debian's 44.0 (v53 and v56).
const HEAD_ONLY: [&str; 3] = [
    "umad_open_smi_port",
    "umad_get_smi_gsi_pairs",
    "umad_get_smi_gsi_pair_by_ca_name",
];

/// Libraries the .so may need: libc, and the dynamic loader (Rust's thread-locals use
/// `__tls_get_addr`, which lives there).
const ALLOWED_NEEDED: [&str; 2] = ["libc.so.6", "ld-linux-x86-64.so.2"];

/// What the staticlib needs besides libc (`rustc --print native-static-libs` gives
/// `-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`); libgcc is linked statically
/// (`-static-libgcc`) so the .so does not need libgcc_s, and `--as-needed` drops the glibc
/// stubs.
const NATIVE_LIBS: [&str; 6] = ["-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];

/// Runs `cargo xtask libibumad`. `Err` carries a message for the user.
pub fn run() -> Result<(), String> {
    let root = workspace_root();
    let target = target_dir(&root)?;
    build_staticlib(&root)?;
    let archive = target.join("capi").join("libibumad.a");
    if !archive.is_file() {
        return Err(format!("{} was not produced", archive.display()));
    }
    let out_dir = target.join("libibumad");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let so = out_dir.join(SONAME);
    // Link to a temporary name and rename it into place, so a test running meanwhile never
    // sees a missing or half-written library.
    let partial = out_dir.join(format!("{SONAME}.partial"));
    link(&root, &archive, &partial)?;
    std::fs::rename(&partial, &so)
        .map_err(|e| format!("rename {} to {}: {e}", partial.display(), so.display()))?;
    let link_name = out_dir.join("libibumad.so");
    let _ = std::fs::remove_file(&link_name);
    std::os::unix::fs::symlink(SONAME, &link_name)
        .map_err(|e| format!("symlink {}: {e}", link_name.display()))?;
    write_pc(&out_dir)?;

    println!("xtask libibumad: checking {}", so.display());
    let ours = check(&so)?;
    compare_with_system(&ours)?;
    println!("{}", so.display());
    Ok(())
}

/// `$CARGO_TARGET_DIR` (relative to the current directory, as cargo reads it) or
/// `<workspace>/target`.
pub(crate) fn target_dir(root: &Path) -> Result<PathBuf, String> {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                Ok(dir)
            } else {
                let cwd = std::env::current_dir().map_err(|e| format!("current dir: {e}"))?;
                Ok(cwd.join(dir))
            }
        }
        None => Ok(root.join("target")),
    }
}

fn run_cmd(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn build_staticlib(root: &Path) -> Result<(), String> {
    let mut cmd = Command::new(cargo());
    cmd.args([
        "build",
        "-p",
        "libibumad",
        "--profile",
        "capi",
        "--features",
        "capi",
    ])
    .current_dir(root);
    println!("xtask libibumad: {cmd:?}");
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build failed ({status})"));
    }
    Ok(())
}

fn link(root: &Path, archive: &Path, so: &Path) -> Result<(), String> {
    let script = root.join(VERSION_SCRIPT);
    let mut cmd = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    cmd.arg("-shared")
        .arg("-o")
        .arg(so)
        .arg("-Wl,--whole-archive")
        .arg(archive)
        .arg("-Wl,--no-whole-archive")
        .arg(format!("-Wl,--version-script={}", script.display()))
        .arg(format!("-Wl,-soname,{SONAME}"))
        .args([
            "-Wl,-z,now",
            "-Wl,-z,relro",
            "-Wl,--gc-sections",
            "-Wl,--no-undefined",
            "-static-libgcc",
            "-Wl,--as-needed",
        ])
        .args(NATIVE_LIBS);
    println!("xtask libibumad: {cmd:?}");
    run_cmd(&mut cmd).map(drop)
}

fn write_pc(out_dir: &Path) -> Result<(), String> {
    let pc = format!(
        "# libibumad.so.3 built by umad-rs (`cargo xtask libibumad`); the C headers are the\n\
         # system's (libibumad-dev), this library only replaces libibumad.so.3.\n\
         prefix={dir}\n\
         libdir=${{prefix}}\n\
         includedir=/usr/include\n\
         \n\
         Name: libibumad\n\
         Description: InfiniBand user MAD access library (umad-rs drop-in, rdma-core HEAD ABI)\n\
         URL: https://example.invalid/umad-rs\n\
         Version: {PC_VERSION}\n\
         Libs: -L${{libdir}} -libumad\n\
         Cflags: -I${{includedir}}\n",
        dir = out_dir.display()
    );
    let path = out_dir.join("libibumad.pc");
    std::fs::write(&path, pc).map_err(|e| format!("{}: {e}", path.display()))
}

/// One defined dynamic symbol: type, binding, name, version and whether it is the default
/// (`@@`) version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DynSym {
    kind: String,
    bind: String,
    section: String,
    name: String,
    version: Option<String>,
    default_version: bool,
}

/// The defined (not `UND`) symbols of `readelf --dyn-syms -W`.
fn defined_symbols(lib: &Path) -> Result<Vec<DynSym>, String> {
    let text = run_cmd(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(lib))?;
    let mut syms = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name [(version)]
        if f.len() < 8 || !f[0].ends_with(':') || f[0] == "Num:" || f[6] == "UND" {
            continue;
        }
        let raw = f[7];
        let (name, version, default_version) = if let Some((n, v)) = raw.split_once("@@") {
            (n, Some(v.to_owned()), true)
        } else if let Some((n, v)) = raw.split_once('@') {
            (n, Some(v.to_owned()), false)
        } else {
            (raw, None, false)
        };
        syms.push(DynSym {
            kind: f[3].to_owned(),
            bind: f[4].to_owned(),
            section: f[6].to_owned(),
            name: name.to_owned(),
            version,
            default_version,
        });
    }
    Ok(syms)
}

/// The version definitions (`readelf -V`): node → parent.
fn version_definitions(lib: &Path) -> Result<BTreeMap<String, Option<String>>, String> {
    let text = run_cmd(Command::new("readelf").args(["-V", "-W"]).arg(lib))?;
    let mut defs = BTreeMap::new();
    let mut in_defs = false;
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("Version definition section") {
            in_defs = true;
            continue;
        }
        if line.starts_with("Version needs section") || line.starts_with("Version symbols section")
        {
            in_defs = false;
        }
        if !in_defs {
            continue;
        }
        if let Some(i) = line.find("Name: ") {
            if line.contains("Flags: BASE") {
                current = None;
                continue;
            }
            let name = line[i + 6..].trim().to_owned();
            defs.insert(name.clone(), None);
            current = Some(name);
        } else if let Some(i) = line.find("Parent 1: ") {
            if let Some(c) = &current {
                defs.insert(c.clone(), Some(line[i + 10..].trim().to_owned()));
            }
        }
    }
    Ok(defs)
}

/// The dynamic section entries (`readelf -d`) of one tag, e.g. `NEEDED`, as their values.
fn dynamic_entries(text: &str, tag: &str) -> Vec<String> {
    let needle = format!("({tag})");
    text.lines()
        .filter(|l| l.contains(&needle))
        .map(|l| {
            let rest = l.split_once(&needle).map_or("", |(_, r)| r).trim();
            match (rest.find('['), rest.rfind(']')) {
                (Some(a), Some(b)) if a < b => rest[a + 1..b].to_owned(),
                _ => rest.to_owned(),
            }
        })
        .collect()
}

/// Checks our library; returns its exported functions with their versions.
fn check(so: &Path) -> Result<BTreeSet<(String, String)>, String> {
    let mut problems = Vec::new();

    // Symbols.
    let syms = defined_symbols(so)?;
    let expected: BTreeMap<&str, &str> = SYMBOLS.iter().copied().collect();
    let mut funcs = BTreeSet::new();
    let mut nodes_seen = BTreeSet::new();
    for s in &syms {
        if s.bind != "GLOBAL" && s.bind != "WEAK" {
            continue;
        }
        let is_node = NODES.iter().any(|(n, _)| *n == s.name);
        if is_node && s.kind == "OBJECT" && s.section == "ABS" {
            nodes_seen.insert(s.name.clone());
            continue;
        }
        match (expected.get(s.name.as_str()), &s.version) {
            (Some(want), Some(v)) if s.kind == "FUNC" && s.bind == "GLOBAL" => {
                if v != want || !s.default_version {
                    problems.push(format!(
                        "{} has version {}{v}, expected @@{want}",
                        s.name,
                        if s.default_version { "@@" } else { "@" }
                    ));
                }
                funcs.insert((s.name.clone(), v.clone()));
            }
            _ => problems.push(format!(
                "unexpected exported symbol {} ({} {} {}, version {:?})",
                s.name, s.kind, s.bind, s.section, s.version
            )),
        }
    }
    for (name, ver) in SYMBOLS {
        if !funcs.iter().any(|(n, _)| n == name) {
            problems.push(format!("missing {name}@@{ver}"));
        }
    }
    if funcs.iter().any(|(n, _)| n == "umad_set_grh_net") {
        problems.push("umad_set_grh_net must not be exported".to_owned());
    }
    for (node, _) in NODES {
        if !nodes_seen.contains(node) {
            problems.push(format!("version node symbol {node} missing"));
        }
    }

    // Version definitions and their chain.
    let defs = version_definitions(so)?;
    let want_defs: BTreeMap<String, Option<String>> = NODES
        .iter()
        .map(|(n, p)| ((*n).to_owned(), p.map(str::to_owned)))
        .collect();
    if defs != want_defs {
        problems.push(format!(
            "version definitions {defs:?}, expected {want_defs:?}"
        ));
    }

    // Dynamic section.
    let dynamic = run_cmd(Command::new("readelf").args(["-d", "-W"]).arg(so))?;
    let soname = dynamic_entries(&dynamic, "SONAME");
    if soname != [SONAME] {
        problems.push(format!("SONAME {soname:?}, expected {SONAME}"));
    }
    let needed = dynamic_entries(&dynamic, "NEEDED");
    for lib in &needed {
        if !ALLOWED_NEEDED.contains(&lib.as_str()) {
            problems.push(format!(
                "NEEDED {lib} (only {ALLOWED_NEEDED:?} are expected)"
            ));
        }
    }
    let bind_now = dynamic_entries(&dynamic, "FLAGS")
        .iter()
        .any(|f| f.contains("BIND_NOW"))
        || dynamic_entries(&dynamic, "FLAGS_1")
            .iter()
            .any(|f| f.split_whitespace().any(|w| w == "NOW"));
    if !bind_now {
        problems.push("not linked with -z now (no BIND_NOW)".to_owned());
    }
    let segments = run_cmd(Command::new("readelf").args(["-l", "-W"]).arg(so))?;
    if !segments.contains("GNU_RELRO") {
        problems.push("no GNU_RELRO segment (not linked with -z relro)".to_owned());
    }

    if !problems.is_empty() {
        return Err(format!(
            "{} does not have libibumad's interface:\n  {}",
            so.display(),
            problems.join("\n  ")
        ));
    }
    let per_node: Vec<String> = NODES
        .iter()
        .map(|(n, _)| {
            let count = funcs.iter().filter(|(_, v)| v == n).count();
            format!("{n}: {count}")
        })
        .collect();
    println!(
        "  {} functions, all @@default: {}",
        funcs.len(),
        per_node.join(", ")
    );
    println!(
        "  version nodes chained IBUMAD_1.0 <- 1.1 <- 1.2 <- 1.3 <- 1.4; nothing else exported"
    );
    println!(
        "  SONAME {SONAME}; NEEDED {}; BIND_NOW; GNU_RELRO",
        needed.join(", ")
    );
    Ok(funcs)
}

/// Our functions/versions must be the system library's plus the HEAD additions.
fn compare_with_system(ours: &BTreeSet<(String, String)>) -> Result<(), String> {
    let system = Path::new(SYSTEM_LIB);
    if !system.exists() {
        println!("  {SYSTEM_LIB} not installed: comparison skipped (apt-get install libibumad3)");
        return Ok(());
    }
    let theirs: BTreeSet<(String, String)> = defined_symbols(system)?
        .into_iter()
        .filter(|s| s.kind == "FUNC" && s.bind == "GLOBAL")
        .filter_map(|s| s.version.map(|v| (s.name, v)))
        .collect();
    let ours_common: BTreeSet<(String, String)> = ours
        .iter()
        .filter(|(n, _)| !HEAD_ONLY.contains(&n.as_str()))
        .cloned()
        .collect();
    if ours_common != theirs {
        let missing: Vec<_> = theirs.difference(&ours_common).collect();
        let extra: Vec<_> = ours_common.difference(&theirs).collect();
        return Err(format!(
            "symbol set differs from {SYSTEM_LIB}: missing {missing:?}, extra {extra:?}"
        ));
    }
    println!(
        "  same {} functions and versions as {SYSTEM_LIB}, plus {}",
        theirs.len(),
        HEAD_ONLY.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_agree() {
        let names: BTreeSet<&str> = SYMBOLS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), 42);
        for (_, v) in SYMBOLS {
            assert!(NODES.iter().any(|(n, _)| *n == v));
        }
        assert_eq!(
            SYMBOLS.iter().filter(|(_, v)| *v == "IBUMAD_1.0").count(),
            36
        );
        for h in HEAD_ONLY {
            assert!(names.contains(h));
        }
    }

    #[test]
    fn version_script_lists_the_same_symbols() {
        let script = std::fs::read_to_string(workspace_root().join(VERSION_SCRIPT)).unwrap();
        let mut node = "";
        let mut found = BTreeMap::new();
        for line in script.lines().map(str::trim) {
            if let Some(n) = line.strip_suffix(" {") {
                node = n;
            } else if let Some(sym) = line.strip_suffix(';') {
                if sym.starts_with("umad_") {
                    found.insert(sym.to_owned(), node.to_owned());
                }
            }
        }
        let want: BTreeMap<String, String> = SYMBOLS
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn check_refuses_a_library_without_the_head_symbols() {
        let system = Path::new(SYSTEM_LIB);
        if !system.exists() || Command::new("readelf").arg("--version").output().is_err() {
            return;
        }
        // Debian's 44.0 lacks IBUMAD_1.3/1.4: the check must say so.
        let err = check(system).unwrap_err();
        assert!(
            err.contains("missing umad_open_smi_port@@IBUMAD_1.3"),
            "{err}"
        );
        assert!(err.contains("version definitions"), "{err}");
    }

    #[test]
    fn dynamic_entry_parsing() {
        let text = " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n \
                    0x000000000000000e (SONAME)             Library soname: [libibumad.so.3]\n \
                    0x000000006ffffffb (FLAGS_1)            Flags: NOW\n";
        assert_eq!(dynamic_entries(text, "NEEDED"), ["libc.so.6"]);
        assert_eq!(dynamic_entries(text, "SONAME"), ["libibumad.so.3"]);
        assert_eq!(dynamic_entries(text, "FLAGS_1"), ["Flags: NOW"]);
    }
}
