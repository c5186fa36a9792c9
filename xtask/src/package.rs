//! `cargo xtask package` and `cargo xtask msrv`: publish readiness.
//!
//! The publishable crates are the workspace members whose `publish` is not `false` (read from
//! `cargo metadata`), so a crate that lands later is covered without editing this file.
//! `package` checks the crates.io metadata of each, then runs one `cargo package` over all of
//! them together: cargo (>= 1.85) packages path dependencies that are not yet on crates.io
//! into a temporary local registry and verifies each package (builds it from the `.crate`
//! contents) against the others.
//!
//! `msrv` builds every workspace member with the toolchain its `rust-version` names
//! (`cargo +1.80 check --all-targets`), installing that toolchain with rustup (minimal
//! profile) when it is missing, so the declared MSRV is a tested fact and not a guess.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::{cargo, workspace_root};

/// One workspace member, as `cargo metadata` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    name: String,
    version: String,
    publishable: bool,
    rust_version: Option<String>,
}

/// `cargo metadata --no-deps` of the workspace.
fn metadata() -> Result<Value, String> {
    let out = Command::new(cargo())
        .current_dir(workspace_root())
        .args(["metadata", "--no-deps", "--format-version", "1", "--locked"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: bad JSON: {e}"))
}

/// The workspace members' packages (`cargo metadata` lists exactly those with `--no-deps`).
fn packages(meta: &Value) -> Result<&Vec<Value>, String> {
    meta["packages"]
        .as_array()
        .ok_or_else(|| "cargo metadata: no \"packages\" array".to_string())
}

fn member(pkg: &Value) -> Member {
    let text = |k: &str| pkg[k].as_str().map(str::to_string);
    Member {
        name: text("name").unwrap_or_default(),
        version: text("version").unwrap_or_default(),
        // `publish`: null = any registry; [] = `publish = false`; a list = those registries.
        publishable: !matches!(pkg["publish"].as_array(), Some(r) if r.is_empty()),
        rust_version: text("rust_version"),
    }
}

/// What keeps `pkg` (a publishable member) from being a good crates.io package: missing
/// metadata, a README that is not there, a dependency on an unpublishable member or one
/// without a version requirement. `members` are all workspace members by name.
fn problems(pkg: &Value, members: &BTreeMap<String, Member>) -> Vec<String> {
    let mut out = Vec::new();
    let present = |k: &str| match &pkg[k] {
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    for key in [
        "description",
        "license",
        "repository",
        "readme",
        "keywords",
        "categories",
        "rust_version",
    ] {
        if !present(key) {
            out.push(format!("no `{}` in its Cargo.toml", key.replace('_', "-")));
        }
    }
    if pkg["keywords"].as_array().is_some_and(|k| k.len() > 5) {
        out.push("more than 5 keywords (crates.io takes at most 5)".into());
    }
    if let (Some(readme), Some(manifest)) = (pkg["readme"].as_str(), pkg["manifest_path"].as_str())
    {
        let dir = Path::new(manifest).parent().unwrap_or(Path::new("."));
        if !dir.join(readme).is_file() {
            out.push(format!("readme {readme:?} does not exist"));
        }
    }
    for dep in pkg["dependencies"].as_array().into_iter().flatten() {
        if dep["path"].is_null() || dep["kind"].as_str() == Some("dev") {
            continue; // registry dependencies; path dev-dependencies are dropped by cargo
        }
        let name = dep["name"].as_str().unwrap_or("?");
        let req = dep["req"].as_str().unwrap_or("*");
        match members.get(name) {
            Some(m) if !m.publishable => out.push(format!(
                "depends on {name}, which is `publish = false` (crates.io cannot have it)"
            )),
            _ if req == "*" => out.push(format!(
                "path dependency {name} has no version (add `version = \"...\"` next to the \
                 path, in the root Cargo.toml's [workspace.dependencies])"
            )),
            _ => {}
        }
    }
    out
}

/// `cargo xtask package [CARGO_PACKAGE_ARGS...]`, e.g. `--allow-dirty` or `--no-verify`.
pub fn run(args: &[String]) -> Result<(), String> {
    let meta = metadata()?;
    let pkgs = packages(&meta)?;
    let members: BTreeMap<String, Member> = pkgs
        .iter()
        .map(member)
        .map(|m| (m.name.clone(), m))
        .collect();
    let mut failures = Vec::new();
    let mut names = Vec::new();
    for pkg in pkgs {
        let m = member(pkg);
        if !m.publishable {
            println!("xtask package: {} is publish = false: skipped", m.name);
            continue;
        }
        for p in problems(pkg, &members) {
            failures.push(format!("{}: {p}", m.name));
        }
        if pkg["repository"]
            .as_str()
            .is_some_and(|r| r.contains("example.invalid"))
        {
            println!(
                "xtask package: warning: {}'s repository is the placeholder {}: set the \
                 public address in the root Cargo.toml before publishing",
                m.name,
                pkg["repository"].as_str().unwrap_or_default()
            );
        }
        names.push(m.name);
    }
    if !failures.is_empty() {
        return Err(format!(
            "not ready to publish:\n  {}",
            failures.join("\n  ")
        ));
    }
    if names.is_empty() {
        return Err("no publishable workspace member (every one is publish = false)".into());
    }
    println!("xtask package: {}", names.join(", "));
    let ours: Vec<String> = names
        .iter()
        .filter_map(|n| members.get(n))
        .map(|m| format!("{}-{}", m.name, m.version))
        .collect();
    remove_stale_unpacked(&ours)?;
    // A target directory of its own, emptied first: cargo fingerprints a registry dependency
    // by name, version and source, not by content, so a verification build would reuse the
    // compiled copy of a sibling packaged earlier under the same version.
    let target =
        Path::new(meta["target_directory"].as_str().unwrap_or("target")).join("xtask-package");
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .map_err(|e| format!("emptying {}: {e}", target.display()))?;
    }
    let mut cmd = Command::new(cargo());
    cmd.current_dir(workspace_root())
        .args(["package", "--locked", "--target-dir"])
        .arg(&target);
    for n in &names {
        cmd.args(["-p", n]);
    }
    cmd.args(args);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo package: {e}"))?;
    if !status.success() {
        return Err(format!("cargo package failed ({status})"));
    }
    for m in names.iter().filter_map(|n| members.get(n)) {
        println!(
            "xtask package: {}/package/{}-{}.crate",
            target.display(),
            m.name,
            m.version
        );
    }
    Ok(())
}

/// Verification builds each package against the others through a temporary local registry,
/// whose packages cargo unpacks into `$CARGO_HOME/registry/src/-<hash>/<name>-<version>`; on
/// the next run it reuses such a directory although the package changed under the same
/// version, and verification then compiles against stale sources (seen here: umad against an
/// older ibmad; other projects clear the whole registry cache for the same reason). So remove
/// the unpacked copies of our own packages, and only those, from local-registry sources (the
/// directories whose name starts with `-`; crates.io's are `index.crates.io-…`).
fn remove_stale_unpacked(packages: &[String]) -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return Ok(());
    };
    let Ok(dirs) = std::fs::read_dir(&src) else {
        return Ok(()); // nothing unpacked yet
    };
    for dir in dirs.flatten() {
        if !dir.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for p in packages {
            let stale = dir.path().join(p);
            if stale.is_dir() {
                std::fs::remove_dir_all(&stale)
                    .map_err(|e| format!("removing the stale {}: {e}", stale.display()))?;
            }
        }
    }
    Ok(())
}

/// Workspace members grouped by their `rust-version` (members without one are left out: they
/// promise nothing).
fn by_rust_version(members: &[Member]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in members {
        if let Some(v) = &m.rust_version {
            groups.entry(v.clone()).or_default().push(m.name.clone());
        }
    }
    groups
}

/// Whether rustup has a toolchain for `version` (e.g. `1.80` matches `1.80.1-x86_64-…`).
fn has_toolchain(listing: &str, version: &str) -> bool {
    listing.lines().any(|l| {
        let name = l.split_whitespace().next().unwrap_or("");
        name == version
            || name.starts_with(&format!("{version}-"))
            || name.starts_with(&format!("{version}."))
    })
}

/// `cargo xtask msrv`.
///
/// With `--if-installable` (CI), a toolchain that rustup cannot install (a machine that
/// reaches only package registries, not rustup's servers) is reported loudly and its check
/// left out instead of failing the run; a crate that does not build with an installed
/// toolchain always fails.
pub fn msrv(args: &[String]) -> Result<(), String> {
    let if_installable = match args {
        [] => false,
        [a] if a == "--if-installable" => true,
        _ => return Err(format!("msrv takes only --if-installable, got {args:?}")),
    };
    let meta = metadata()?;
    let members: Vec<Member> = packages(&meta)?.iter().map(member).collect();
    let groups = by_rust_version(&members);
    if groups.is_empty() {
        return Err("no workspace member declares a rust-version".into());
    }
    let rustup = |a: &[&str]| Command::new("rustup").args(a).output();
    let listing = rustup(&["toolchain", "list"]).map_err(|e| {
        format!("cannot run rustup (needed to build with the declared MSRV toolchains): {e}")
    })?;
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let mut unchecked = Vec::new();
    for (version, crates) in &groups {
        if !has_toolchain(&listing, version) {
            println!("xtask msrv: installing Rust {version} (rustup, minimal profile)");
            let st = Command::new("rustup")
                .args(["toolchain", "install", version, "--profile", "minimal"])
                .status()
                .map_err(|e| format!("cannot run rustup: {e}"))?;
            if !st.success() {
                let msg = format!("rustup toolchain install {version} failed ({st})");
                if if_installable {
                    eprintln!(
                        "xtask msrv: NOT CHECKED for Rust {version} ({}): {msg}; run \
                         `cargo xtask msrv` where rustup can download toolchains",
                        crates.join(", ")
                    );
                    unchecked.push(version.to_string());
                    continue;
                }
                return Err(msg);
            }
        }
        println!("xtask msrv: Rust {version}: {}", crates.join(", "));
        let mut cmd = Command::new("cargo");
        // `cargo +V` is rustup's proxy; drop the outer cargo's toolchain variables so the
        // inner build is really done by Rust `version`.
        cmd.current_dir(workspace_root())
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTC")
            .env_remove("CARGO")
            .arg(format!("+{version}"))
            .args(["check", "--locked", "--all-targets"]);
        for c in crates {
            cmd.args(["-p", c]);
        }
        // A target directory of its own: artefacts of another rustc are never reused.
        let target = meta["target_directory"].as_str().unwrap_or("target");
        cmd.env(
            "CARGO_TARGET_DIR",
            Path::new(target).join(format!("msrv-{version}")),
        );
        let st = cmd
            .status()
            .map_err(|e| format!("cannot run cargo +{version}: {e}"))?;
        if !st.success() {
            return Err(format!(
                "{} do not build with Rust {version}, their declared rust-version: raise it \
                 honestly or avoid the newer feature",
                crates.join(", ")
            ));
        }
    }
    if unchecked.is_empty() {
        println!("xtask msrv: every member builds with its declared rust-version");
    } else {
        eprintln!(
            "xtask msrv: the other toolchains passed; NOT CHECKED (no toolchain): {}",
            unchecked.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(json: &str) -> Value {
        serde_json::from_str(json).unwrap()
    }

    fn members(list: &[(&str, bool)]) -> BTreeMap<String, Member> {
        list.iter()
            .map(|&(n, p)| {
                let m = Member {
                    name: n.into(),
                    version: "0.1.0".into(),
                    publishable: p,
                    rust_version: Some("1.80".into()),
                };
                (n.to_string(), m)
            })
            .collect()
    }

    #[test]
    fn publish_field() {
        assert!(member(&pkg(r#"{"name":"a","publish":null}"#)).publishable);
        assert!(!member(&pkg(r#"{"name":"a","publish":[]}"#)).publishable);
        assert!(member(&pkg(r#"{"name":"a","publish":["crates-io"]}"#)).publishable);
    }

    #[test]
    fn finds_missing_metadata_and_bad_dependencies() {
        let p = pkg(
            r#"{"name":"a","description":"x","license":"MIT","keywords":[],
            "dependencies":[
              {"name":"b","req":"*","kind":null,"path":"/b"},
              {"name":"c","req":"^0.1.0","kind":null,"path":"/c"},
              {"name":"h","req":"*","kind":"dev","path":"/h"},
              {"name":"libc","req":"^0.2","kind":null}]}"#,
        );
        let got = problems(&p, &members(&[("a", true), ("b", true), ("c", false)]));
        let has = |s: &str| got.iter().any(|g| g.contains(s));
        for missing in [
            "repository",
            "readme",
            "keywords",
            "categories",
            "rust-version",
        ] {
            assert!(has(&format!("no `{missing}`")), "{missing}: {got:?}");
        }
        assert!(!has("no `description`") && !has("no `license`"), "{got:?}");
        assert!(has("path dependency b has no version"), "{got:?}");
        assert!(has("depends on c, which is `publish = false`"), "{got:?}");
        assert_eq!(
            got.len(),
            7,
            "only b and c, not the dev-dependency h nor libc: {got:?}"
        );
    }

    #[test]
    fn this_workspace_is_ready() {
        // The real manifests: every publishable member passes the checks.
        let meta = metadata().unwrap();
        let pkgs = packages(&meta).unwrap();
        let all: BTreeMap<String, Member> = pkgs
            .iter()
            .map(member)
            .map(|m| (m.name.clone(), m))
            .collect();
        let publishable: Vec<&Value> = pkgs.iter().filter(|p| member(p).publishable).collect();
        assert!(publishable.iter().any(|p| p["name"] == "ibmad"));
        assert!(publishable.iter().any(|p| p["name"] == "umad"));
        for p in publishable {
            assert_eq!(problems(p, &all), Vec::<String>::new(), "{}", p["name"]);
        }
        for internal in ["compat", "ibsim-harness", "xtask", "libibumad"] {
            assert!(!all[internal].publishable, "{internal}");
        }
    }

    #[test]
    fn toolchain_names() {
        let listing = "stable-x86_64-unknown-linux-gnu (default)\n\
                       1.80-x86_64-unknown-linux-gnu\n1.95.0-x86_64-unknown-linux-gnu\n";
        assert!(has_toolchain(listing, "1.80"));
        assert!(has_toolchain(listing, "1.95"));
        assert!(has_toolchain(listing, "1.95.0"));
        assert!(!has_toolchain(listing, "1.8"));
        assert!(!has_toolchain(listing, "1.85"));
    }

    #[test]
    fn groups_by_rust_version() {
        let m = |n: &str, v: Option<&str>| Member {
            name: n.into(),
            version: "0.1.0".into(),
            publishable: true,
            rust_version: v.map(Into::into),
        };
        let g = by_rust_version(&[
            m("a", Some("1.80")),
            m("b", Some("1.85")),
            m("c", None),
            m("d", Some("1.80")),
        ]);
        assert_eq!(g["1.80"], ["a", "d"]);
        assert_eq!(g["1.85"], ["b"]);
        assert_eq!(g.len(), 2);
    }
}
