//! Binary interface of our `libibumad.so.3` against the system library and the spec
//! (`libibumad-spec.md` §1 and §3):
//!
//! * struct layouts: `c/abi_layout.c` prints size/alignment/offsets from the system headers;
//!   they must equal the spec's tables and the drop-in's `#[repr(C)]` types (crate
//!   `libibumad`, lib `ibumad`); `struct umad_ca_pair` (HEAD-only) is checked against the spec;
//! * exported symbols (`readelf --dyn-syms`, the same data `objdump -T` shows): exactly the
//!   system's plus the three HEAD functions and their version nodes, nothing else global;
//! * version definitions `IBUMAD_1.0` … `IBUMAD_1.4` chained by parent;
//! * dynamic section: SONAME `libibumad.so.3`, `BIND_NOW`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use compat::{compile_c, line_diff, require_drop_in, system_library, SONAME};
use ibumad::{
    ib_mad_addr_t, ib_user_mad_t, umad_ca_pair, umad_ca_t, umad_device_node, umad_gid, umad_port_t,
    umad_reg_attr,
};

/// The layouts of spec §3 (x86_64), in the format of `c/abi_layout.c`.
const SPEC_LAYOUT: &str = "\
union umad_gid size=16 align=4
ib_mad_addr_t size=44 align=4
ib_mad_addr_t.qpn offset=0 size=4
ib_mad_addr_t.qkey offset=4 size=4
ib_mad_addr_t.lid offset=8 size=2
ib_mad_addr_t.sl offset=10 size=1
ib_mad_addr_t.path_bits offset=11 size=1
ib_mad_addr_t.grh_present offset=12 size=1
ib_mad_addr_t.gid_index offset=13 size=1
ib_mad_addr_t.hop_limit offset=14 size=1
ib_mad_addr_t.traffic_class offset=15 size=1
ib_mad_addr_t.gid offset=16 size=16
ib_mad_addr_t.flow_label offset=32 size=4
ib_mad_addr_t.pkey_index offset=36 size=2
ib_mad_addr_t.reserved offset=38 size=6
ib_user_mad_t size=64 align=4
ib_user_mad_t.agent_id offset=0 size=4
ib_user_mad_t.status offset=4 size=4
ib_user_mad_t.timeout_ms offset=8 size=4
ib_user_mad_t.retries offset=12 size=4
ib_user_mad_t.length offset=16 size=4
ib_user_mad_t.addr offset=20 size=44
umad_port_t size=112 align=8
umad_port_t.ca_name offset=0 size=20
umad_port_t.portnum offset=20 size=4
umad_port_t.base_lid offset=24 size=4
umad_port_t.lmc offset=28 size=4
umad_port_t.sm_lid offset=32 size=4
umad_port_t.sm_sl offset=36 size=4
umad_port_t.state offset=40 size=4
umad_port_t.phys_state offset=44 size=4
umad_port_t.rate offset=48 size=4
umad_port_t.capmask offset=52 size=4
umad_port_t.gid_prefix offset=56 size=8
umad_port_t.port_guid offset=64 size=8
umad_port_t.pkeys_size offset=72 size=4
umad_port_t.pkeys offset=80 size=8
umad_port_t.link_layer offset=88 size=20
umad_ca_t size=208 align=8
umad_ca_t.ca_name offset=0 size=20
umad_ca_t.node_type offset=20 size=4
umad_ca_t.numports offset=24 size=4
umad_ca_t.fw_ver offset=28 size=20
umad_ca_t.ca_type offset=48 size=40
umad_ca_t.hw_ver offset=88 size=20
umad_ca_t.node_guid offset=112 size=8
umad_ca_t.system_guid offset=120 size=8
umad_ca_t.ports offset=128 size=80
struct umad_device_node size=16 align=8
struct umad_device_node.next offset=0 size=8
struct umad_device_node.ca_name offset=8 size=8
struct umad_reg_attr size=32 align=8
struct umad_reg_attr.mgmt_class offset=0 size=1
struct umad_reg_attr.mgmt_class_version offset=1 size=1
struct umad_reg_attr.flags offset=4 size=4
struct umad_reg_attr.method_mask offset=8 size=16
struct umad_reg_attr.oui offset=24 size=4
struct umad_reg_attr.rmpp_version offset=28 size=1
";

/// `struct umad_ca_pair` (HEAD, spec §3.6).
const SPEC_CA_PAIR: &str = "\
struct umad_ca_pair size=48 align=4
struct umad_ca_pair.smi_name offset=0 size=20
struct umad_ca_pair.smi_preferred_port offset=20 size=4
struct umad_ca_pair.gsi_name offset=24 size=20
struct umad_ca_pair.gsi_preferred_port offset=44 size=4
";

/// The size of the field a projection closure points at.
fn field_size<T, F>(_: impl Fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! ty {
    ($out:ident, $name:expr, $t:ty) => {
        let _ = writeln!(
            $out,
            "{} size={} align={}",
            $name,
            size_of::<$t>(),
            align_of::<$t>()
        );
    };
}

macro_rules! field {
    ($out:ident, $name:expr, $t:ty, $f:ident) => {
        let _ = writeln!(
            $out,
            "{}.{} offset={} size={}",
            $name,
            stringify!($f),
            offset_of!($t, $f),
            field_size(|s: &$t| &s.$f)
        );
    };
}

/// The drop-in's layouts, in the format of `c/abi_layout.c`.
fn ours_layout() -> String {
    let mut o = String::new();
    ty!(o, "union umad_gid", umad_gid);

    ty!(o, "ib_mad_addr_t", ib_mad_addr_t);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, qpn);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, qkey);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, lid);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, sl);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, path_bits);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, grh_present);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, gid_index);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, hop_limit);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, traffic_class);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, gid);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, flow_label);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, pkey_index);
    field!(o, "ib_mad_addr_t", ib_mad_addr_t, reserved);

    ty!(o, "ib_user_mad_t", ib_user_mad_t);
    field!(o, "ib_user_mad_t", ib_user_mad_t, agent_id);
    field!(o, "ib_user_mad_t", ib_user_mad_t, status);
    field!(o, "ib_user_mad_t", ib_user_mad_t, timeout_ms);
    field!(o, "ib_user_mad_t", ib_user_mad_t, retries);
    field!(o, "ib_user_mad_t", ib_user_mad_t, length);
    field!(o, "ib_user_mad_t", ib_user_mad_t, addr);

    ty!(o, "umad_port_t", umad_port_t);
    field!(o, "umad_port_t", umad_port_t, ca_name);
    field!(o, "umad_port_t", umad_port_t, portnum);
    field!(o, "umad_port_t", umad_port_t, base_lid);
    field!(o, "umad_port_t", umad_port_t, lmc);
    field!(o, "umad_port_t", umad_port_t, sm_lid);
    field!(o, "umad_port_t", umad_port_t, sm_sl);
    field!(o, "umad_port_t", umad_port_t, state);
    field!(o, "umad_port_t", umad_port_t, phys_state);
    field!(o, "umad_port_t", umad_port_t, rate);
    field!(o, "umad_port_t", umad_port_t, capmask);
    field!(o, "umad_port_t", umad_port_t, gid_prefix);
    field!(o, "umad_port_t", umad_port_t, port_guid);
    field!(o, "umad_port_t", umad_port_t, pkeys_size);
    field!(o, "umad_port_t", umad_port_t, pkeys);
    field!(o, "umad_port_t", umad_port_t, link_layer);

    ty!(o, "umad_ca_t", umad_ca_t);
    field!(o, "umad_ca_t", umad_ca_t, ca_name);
    field!(o, "umad_ca_t", umad_ca_t, node_type);
    field!(o, "umad_ca_t", umad_ca_t, numports);
    field!(o, "umad_ca_t", umad_ca_t, fw_ver);
    field!(o, "umad_ca_t", umad_ca_t, ca_type);
    field!(o, "umad_ca_t", umad_ca_t, hw_ver);
    field!(o, "umad_ca_t", umad_ca_t, node_guid);
    field!(o, "umad_ca_t", umad_ca_t, system_guid);
    field!(o, "umad_ca_t", umad_ca_t, ports);

    ty!(o, "struct umad_device_node", umad_device_node);
    field!(o, "struct umad_device_node", umad_device_node, next);
    field!(o, "struct umad_device_node", umad_device_node, ca_name);

    ty!(o, "struct umad_reg_attr", umad_reg_attr);
    field!(o, "struct umad_reg_attr", umad_reg_attr, mgmt_class);
    field!(o, "struct umad_reg_attr", umad_reg_attr, mgmt_class_version);
    field!(o, "struct umad_reg_attr", umad_reg_attr, flags);
    field!(o, "struct umad_reg_attr", umad_reg_attr, method_mask);
    field!(o, "struct umad_reg_attr", umad_reg_attr, oui);
    field!(o, "struct umad_reg_attr", umad_reg_attr, rmpp_version);
    o
}

fn ours_ca_pair_layout() -> String {
    let mut o = String::new();
    ty!(o, "struct umad_ca_pair", umad_ca_pair);
    field!(o, "struct umad_ca_pair", umad_ca_pair, smi_name);
    field!(o, "struct umad_ca_pair", umad_ca_pair, smi_preferred_port);
    field!(o, "struct umad_ca_pair", umad_ca_pair, gsi_name);
    field!(o, "struct umad_ca_pair", umad_ca_pair, gsi_preferred_port);
    o
}

/// Struct layouts: system headers (C) == spec, drop-in types == system headers, and
/// `umad_ca_pair` == spec.
#[test]
fn struct_layouts_match_system_headers_and_spec() {
    if require_drop_in("struct_layouts_match_system_headers_and_spec").is_none() {
        return;
    }
    let bin =
        compile_c("abi_layout.c", env!("CARGO_TARGET_TMPDIR")).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(&bin).output().expect("running abi_layout");
    assert!(out.status.success(), "abi_layout failed: {out:?}");
    let c = String::from_utf8(out.stdout).expect("utf-8");
    let mut report = String::new();
    if let Some(d) = line_diff(SPEC_LAYOUT, &c, "spec", "system headers") {
        let _ = writeln!(report, "system headers differ from the spec:\n{d}");
    }
    if let Some(d) = line_diff(&c, &ours_layout(), "system headers", "ours") {
        let _ = writeln!(report, "our types differ from the system headers:\n{d}");
    }
    if let Some(d) = line_diff(SPEC_CA_PAIR, &ours_ca_pair_layout(), "spec", "ours") {
        let _ = writeln!(report, "our umad_ca_pair differs from the spec:\n{d}");
    }
    assert!(report.is_empty(), "{report}");
}

// ---- ELF ---------------------------------------------------------------------------------------

fn readelf(args: &[&str], lib: &Path) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(lib)
        .output()
        .unwrap_or_else(|e| panic!("running readelf (install binutils): {e}"));
    assert!(
        out.status.success(),
        "readelf {args:?} {}: {}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Defined dynamic symbols with global or weak binding, as `"<type> <bind> <vis> <section or
/// ABS> <name>[@@version]"` (`DEF` for any defined section index, so section numbering does not
/// matter).
fn exported_symbols(lib: &Path) -> BTreeSet<String> {
    readelf(&["--dyn-syms", "-W"], lib)
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            if f.len() < 8 || !f[0].ends_with(':') || f[6] == "UND" {
                return None;
            }
            if f[4] != "GLOBAL" && f[4] != "WEAK" && f[4] != "GNU_UNIQUE" {
                return None;
            }
            let ndx = if f[6] == "ABS" { "ABS" } else { "DEF" };
            Some(format!("{} {} {} {} {}", f[3], f[4], f[5], ndx, f[7]))
        })
        .collect()
}

fn system_lib() -> PathBuf {
    system_library()
        .expect("the system libibumad.so.3 is not installed (apt-get install libibumad3)")
}

/// The symbols the drop-in must export beyond the system's (spec §1, HEAD).
const HEAD_SYMBOLS: [&str; 5] = [
    "FUNC GLOBAL DEFAULT DEF umad_open_smi_port@@IBUMAD_1.3",
    "FUNC GLOBAL DEFAULT DEF umad_get_smi_gsi_pairs@@IBUMAD_1.4",
    "FUNC GLOBAL DEFAULT DEF umad_get_smi_gsi_pair_by_ca_name@@IBUMAD_1.4",
    "OBJECT GLOBAL DEFAULT ABS IBUMAD_1.3",
    "OBJECT GLOBAL DEFAULT ABS IBUMAD_1.4",
];

/// The reference itself: the system library exports the 39 functions of the spec's table with
/// default versions (36 × 1.0, 2 × 1.1, 1 × 1.2) plus the three version-node symbols.
#[test]
fn system_library_exports_match_spec() {
    if require_drop_in("system_library_exports_match_spec").is_none() {
        return;
    }
    let sys = exported_symbols(&system_lib());
    let funcs: Vec<&String> = sys.iter().filter(|s| s.starts_with("FUNC ")).collect();
    assert_eq!(funcs.len(), 39, "{funcs:#?}");
    for (node, n) in [("IBUMAD_1.0", 36), ("IBUMAD_1.1", 2), ("IBUMAD_1.2", 1)] {
        let count = funcs
            .iter()
            .filter(|s| s.ends_with(&format!("@@{node}")))
            .count();
        assert_eq!(count, n, "functions in {node}: {funcs:#?}");
        assert!(
            sys.contains(&format!("OBJECT GLOBAL DEFAULT ABS {node}")),
            "{sys:#?}"
        );
    }
    assert!(
        funcs
            .iter()
            .all(|s| s.starts_with("FUNC GLOBAL DEFAULT DEF umad_")),
        "{funcs:#?}"
    );
    assert_eq!(sys.len(), 42, "{sys:#?}");
}

/// Ours exports exactly the system's symbols (same type, binding, visibility, default
/// version) plus `umad_open_smi_port@@IBUMAD_1.3`, `umad_get_smi_gsi_pairs@@IBUMAD_1.4`,
/// `umad_get_smi_gsi_pair_by_ca_name@@IBUMAD_1.4` and the version-node symbols
/// `IBUMAD_1.3`/`IBUMAD_1.4`; no other defined global symbol (no Rust or libc leaks).
#[test]
fn exported_symbols_are_system_plus_head() {
    let Some(dir) = require_drop_in("exported_symbols_are_system_plus_head") else {
        return;
    };
    let ours = exported_symbols(&dir.join(SONAME));
    let mut expected = exported_symbols(&system_lib());
    expected.extend(HEAD_SYMBOLS.iter().map(|s| (*s).to_owned()));
    let missing: Vec<&String> = expected.difference(&ours).collect();
    let extra: Vec<&String> = ours.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "dynamic symbols of {} differ from the system library + HEAD:\n\
         missing ({}):\n  {}\nextra ({}):\n  {}",
        dir.join(SONAME).display(),
        missing.len(),
        missing
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        extra.len(),
        extra
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// Version definitions as `(name, parent)` in file order (BASE first with parent "").
fn version_definitions(lib: &Path) -> Vec<(String, String)> {
    let text = readelf(&["-V", "-W"], lib);
    let mut defs: Vec<(String, String)> = Vec::new();
    let mut in_defs = false;
    for line in text.lines() {
        if line.starts_with("Version definition section") {
            in_defs = true;
            continue;
        }
        if line.starts_with("Version ") && !line.starts_with("Version definition") {
            in_defs = false;
        }
        if !in_defs {
            continue;
        }
        if let Some(name) = line.split("Name: ").nth(1) {
            defs.push((name.trim().to_owned(), String::new()));
        } else if let Some(parent) = line.split("Parent 1: ").nth(1) {
            if let Some(last) = defs.last_mut() {
                last.1 = parent.trim().to_owned();
            }
        }
    }
    defs
}

/// Version nodes: BASE `libibumad.so.3`, then `IBUMAD_1.0` … `IBUMAD_1.4`, each 1.x child of
/// the previous one (the system's 1.0–1.2 chain extended by 1.3 and 1.4).
#[test]
fn version_nodes_are_ibumad_1_0_to_1_4() {
    let Some(dir) = require_drop_in("version_nodes_are_ibumad_1_0_to_1_4") else {
        return;
    };
    let expected: Vec<(String, String)> = [
        ("libibumad.so.3", ""),
        ("IBUMAD_1.0", ""),
        ("IBUMAD_1.1", "IBUMAD_1.0"),
        ("IBUMAD_1.2", "IBUMAD_1.1"),
        ("IBUMAD_1.3", "IBUMAD_1.2"),
        ("IBUMAD_1.4", "IBUMAD_1.3"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    let sys = version_definitions(&system_lib());
    assert_eq!(sys, expected[..4], "system library version definitions");
    let ours = version_definitions(&dir.join(SONAME));
    assert_eq!(ours, expected, "our version definitions");
}

/// `(tag, value)` pairs of the dynamic section, e.g. `("SONAME", "Library soname:
/// [libibumad.so.3]")`.
fn dynamic_entries(lib: &Path) -> Vec<(String, String)> {
    readelf(&["-d", "-W"], lib)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let open = line.find('(')?;
            let close = line[open..].find(')')? + open;
            if !line.starts_with("0x") {
                return None;
            }
            Some((
                line[open + 1..close].to_owned(),
                line[close + 1..].trim().to_owned(),
            ))
        })
        .collect()
}

/// SONAME `libibumad.so.3` and immediate binding (`FLAGS BIND_NOW`, `FLAGS_1 NOW`) as in the
/// system build. NEEDED entries are printed for information.
#[test]
fn dynamic_section_soname_and_bind_now() {
    let Some(dir) = require_drop_in("dynamic_section_soname_and_bind_now") else {
        return;
    };
    let mut report = String::new();
    for (label, lib) in [("system", system_lib()), ("ours", dir.join(SONAME))] {
        let entries = dynamic_entries(&lib);
        let get = |tag: &str| -> Vec<&str> {
            entries
                .iter()
                .filter(|(t, _)| t == tag)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        eprintln!("{label}: NEEDED {:?}", get("NEEDED"));
        if get("SONAME") != ["Library soname: [libibumad.so.3]"] {
            let _ = writeln!(report, "{label}: SONAME {:?}", get("SONAME"));
        }
        if !get("FLAGS")
            .iter()
            .any(|v| v.split_whitespace().any(|w| w == "BIND_NOW"))
        {
            let _ = writeln!(report, "{label}: FLAGS {:?} lacks BIND_NOW", get("FLAGS"));
        }
        if !get("FLAGS_1")
            .iter()
            .any(|v| v.split_whitespace().any(|w| w == "NOW"))
        {
            let _ = writeln!(report, "{label}: FLAGS_1 {:?} lacks NOW", get("FLAGS_1"));
        }
    }
    assert!(report.is_empty(), "{report}");
}
