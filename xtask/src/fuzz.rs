//! `cargo xtask fuzz`: runs every cargo-fuzz target of `fuzz/` (one per `mad` parser).
//!
//! `--seconds N` bounds each target's time (CI uses a short run); `--runs N` asks for N
//! executions per target (the long run recorded in the README). Needs `cargo-fuzz`
//! (`cargo install cargo-fuzz`); only a stable toolchain exists here, so the nightly flags
//! cargo-fuzz passes are allowed with `RUSTC_BOOTSTRAP=1`.

use std::process::Command;

use crate::{cargo, workspace_root};

/// Target names, from the `[[bin]]` entries of `fuzz/Cargo.toml`.
fn targets() -> Result<Vec<String>, String> {
    let path = workspace_root().join("fuzz/Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(v) = line.strip_prefix("name = ").filter(|_| in_bin) {
            names.push(v.trim_matches('"').to_string());
        }
    }
    if names.is_empty() {
        return Err(format!("no [[bin]] targets in {}", path.display()));
    }
    Ok(names)
}

/// Runs the fuzz command. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let (mut seconds, mut runs) = (None::<u64>, None::<u64>);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{what} needs a number"))
        };
        match a.as_str() {
            "--seconds" => seconds = Some(num("--seconds")?),
            "--runs" => runs = Some(num("--runs")?),
            other => {
                return Err(format!(
                    "unknown argument {other:?}: use --seconds N and/or --runs N"
                ))
            }
        }
    }
    let limit: Vec<String> = match (seconds, runs) {
        (None, None) => vec!["-max_total_time=10".into()],
        (s, r) => s
            .map(|s| format!("-max_total_time={s}"))
            .into_iter()
            .chain(r.map(|r| format!("-runs={r}")))
            .collect(),
    };
    let mut report = Vec::new();
    for t in targets()? {
        println!("xtask fuzz: {t} ({})", limit.join(" "));
        let out = Command::new(cargo())
            .current_dir(workspace_root())
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", &t, "--"])
            .args(&limit)
            .output()
            .map_err(|e| format!("cannot run cargo fuzz (cargo install cargo-fuzz): {e}"))?;
        let log = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(format!("fuzz target {t} failed:\n{}", tail.join("\n")));
        }
        let done = log
            .lines()
            .rev()
            .find(|l| l.starts_with("Done "))
            .unwrap_or("Done ? runs")
            .to_string();
        println!("  {done}");
        report.push(format!("{t}: {done}"));
    }
    println!(
        "\nxtask fuzz: no crash in {} targets:\n  {}",
        report.len(),
        report.join("\n  ")
    );
    Ok(())
}
