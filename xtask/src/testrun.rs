//! `cargo xtask test` and `cargo xtask ci`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use ibsim_harness::{ibsim_required, Need, TempDir, RAN_FILE_ENV, REQUIRE_ENV};

use crate::{cargo, workspace_root};

/// Options of `cargo xtask test`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOpts {
    /// Fail unless at least `min_ibsim_tests` ibsim-backed tests ran (also implied by `CI`).
    pub require_ibsim: bool,
    /// Minimum number of distinct ibsim-backed tests when required.
    pub min_ibsim_tests: usize,
    /// Extra arguments for `cargo test` (after `--`).
    pub cargo_args: Vec<String>,
}

/// How many distinct ibsim-backed tests the workspace has. A ratchet: CI fails when fewer
/// ran, so a test that silently stops reaching ibsim is noticed. Raise it with new tests.
pub const IBSIM_TESTS: usize = 181;

impl Default for TestOpts {
    fn default() -> Self {
        TestOpts {
            require_ibsim: false,
            min_ibsim_tests: IBSIM_TESTS,
            cargo_args: Vec::new(),
        }
    }
}

/// Parses `[--require-ibsim] [--min-ibsim-tests N] [-- CARGO_TEST_ARGS...]`.
pub fn parse_opts(args: &[String], allow_require_flag: bool) -> Result<TestOpts, String> {
    let mut opts = TestOpts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--require-ibsim" if allow_require_flag => opts.require_ibsim = true,
            "--min-ibsim-tests" => {
                let n = it.next().ok_or("--min-ibsim-tests needs a number")?;
                opts.min_ibsim_tests = n
                    .parse()
                    .map_err(|_| format!("--min-ibsim-tests: not a number: {n:?}"))?;
            }
            "--" => {
                opts.cargo_args = it.cloned().collect();
                break;
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(opts)
}

/// `cargo test --workspace` with the ibsim bookkeeping; `Err` = failure message.
///
/// Plain `cargo test` (not `--all-targets`) also runs doctests and builds the examples as
/// programs, which the umad2sim tests run next to the C tools.
pub fn test(opts: &TestOpts) -> Result<(), String> {
    crate::packages::ensure(&[Need::Ibsim, Need::Test], "cargo xtask test")?;
    let required = opts.require_ibsim || ibsim_required();
    let ran_dir = TempDir::new("umadrs-xtask-test").map_err(|e| e.to_string())?;
    let ran_file = ran_dir.join("ibsim-ran.txt");
    std::fs::write(&ran_file, "").map_err(|e| format!("{}: {e}", ran_file.display()))?;

    // The compatibility tests run C programs and infiniband-diags on the drop-in library.
    crate::libibumad::run()?;

    let mut cmd = Command::new(cargo());
    // The async face of umad::rpc is a feature: test it too (not --all-features: libibumad's
    // `capi` feature only builds with `cargo xtask libibumad`).
    cmd.args(["test", "--workspace", "--features", "umad/async"])
        .args(&opts.cargo_args)
        .current_dir(workspace_root())
        .env(RAN_FILE_ENV, &ran_file);
    if required {
        // Makes every ibsim-gated test panic (instead of skip) when ibsim is missing.
        cmd.env(REQUIRE_ENV, "1");
    }
    println!(
        "xtask: running {cmd:?} ({RAN_FILE_ENV}={})",
        ran_file.display()
    );
    let status = cmd.status();
    let ran = read_ran(&ran_file);
    drop(ran_dir);

    println!("\nxtask: ibsim-backed tests that ran ({}):", ran.len());
    for t in &ran {
        println!("    {t}");
    }
    let verdict = evaluate(
        status
            .as_ref()
            .map(|s| s.success())
            .map_err(ToString::to_string),
        &ran,
        required,
        opts.min_ibsim_tests,
    );
    // The kernel transport and the drop-in on a real kernel, in a QEMU guest (a NOT RUN line
    // where QEMU cannot be installed, except under CI).
    println!("\nxtask: ==> the real-kernel guest (cargo xtask realkernel)");
    let verdict = match (verdict, crate::realkernel::run_in_test()) {
        (Ok(w), Ok(())) => Ok(w),
        (Ok(_), Err(e)) => Err(format!("realkernel: {e}")),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(k)) => Err(format!("{e}; realkernel: {k}")),
    };
    match &verdict {
        Ok(warning) => {
            if let Some(w) = warning {
                println!("xtask: WARNING: {w}");
            }
            println!("xtask: tests passed");
        }
        Err(e) => println!("xtask: FAILED: {e}"),
    }
    verdict.map(drop)
}

/// Pass/fail decision: `cargo_ok` is whether `cargo test` succeeded (or why it could not run).
/// `Ok(Some(warning))` = pass with a warning.
fn evaluate(
    cargo_ok: Result<bool, String>,
    ran: &BTreeSet<String>,
    required: bool,
    min: usize,
) -> Result<Option<String>, String> {
    let mut errors = Vec::new();
    match cargo_ok {
        Ok(true) => {}
        Ok(false) => errors.push("cargo test failed".to_owned()),
        Err(e) => errors.push(format!("cannot run cargo test: {e}")),
    }
    if required && ran.len() < min {
        errors.push(format!(
            "only {} ibsim-backed test(s) ran, at least {min} required (CI=true or \
             --require-ibsim): is ibsim installed and are the tests gated with \
             ibsim_harness::require_ibsim?",
            ran.len()
        ));
    }
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    Ok((ran.is_empty()).then(|| {
        "no ibsim-backed test ran (ibsim not installed?); set CI=true or pass --require-ibsim \
         to make this an error"
            .to_owned()
    }))
}

/// Distinct non-empty lines of the ran-file.
fn read_ran(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `cargo xtask ci`: fmt check, clippy with `-D warnings`, then [`test()`] with CI semantics.
/// All steps run; the result fails if any step failed.
pub fn ci(opts: &TestOpts) -> Result<(), String> {
    let root = workspace_root();
    let mut failed = Vec::new();
    let mut step = |name: &str, args: &[&str]| {
        println!("\nxtask ci: ==> {name}: cargo {}", args.join(" "));
        let ok = Command::new(cargo())
            .args(args)
            .current_dir(&root)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("xtask ci: {name} FAILED");
            failed.push(name.to_owned());
        }
    };
    step("fmt", &["fmt", "--all", "--", "--check"]);
    step(
        "clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--features",
            "umad/async",
            "--",
            "-D",
            "warnings",
        ],
    );
    println!("\nxtask ci: ==> test (ibsim required)");
    let test_opts = TestOpts {
        require_ibsim: true,
        ..opts.clone()
    };
    if let Err(e) = test(&test_opts) {
        println!("xtask ci: test FAILED: {e}");
        failed.push("test".to_owned());
    }
    if failed.is_empty() {
        println!("\nxtask ci: all steps passed");
        Ok(())
    } else {
        Err(format!("ci steps failed: {}", failed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_options() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_opts(&[], true), Ok(TestOpts::default()));
        let o = parse_opts(
            &args(&[
                "--require-ibsim",
                "--min-ibsim-tests",
                "5",
                "--",
                "-p",
                "umad",
            ]),
            true,
        )
        .unwrap();
        assert!(o.require_ibsim);
        assert_eq!(o.min_ibsim_tests, 5);
        assert_eq!(o.cargo_args, args(&["-p", "umad"]));
        assert!(parse_opts(&args(&["--require-ibsim"]), false).is_err());
        assert!(parse_opts(&args(&["--min-ibsim-tests"]), true).is_err());
        assert!(parse_opts(&args(&["--min-ibsim-tests", "x"]), true).is_err());
        assert!(parse_opts(&args(&["--bogus"]), true).is_err());
    }

    #[test]
    fn verdicts() {
        let two = set(&["a", "b"]);
        assert_eq!(evaluate(Ok(true), &two, true, 2), Ok(None));
        assert!(evaluate(Ok(true), &two, true, 3).is_err());
        assert_eq!(evaluate(Ok(true), &two, false, 3), Ok(None));
        assert!(evaluate(Ok(false), &two, false, 1).is_err());
        assert!(evaluate(Err("spawn".into()), &two, false, 1).is_err());
        // Nothing ran: failure only when required, else a warning.
        assert!(evaluate(Ok(true), &set(&[]), true, 1).is_err());
        assert!(matches!(
            evaluate(Ok(true), &set(&[]), false, 1),
            Ok(Some(_))
        ));
        let both = evaluate(Ok(false), &set(&[]), true, 1).unwrap_err();
        assert!(
            both.contains("cargo test failed") && both.contains("only 0"),
            "{both}"
        );
    }

    #[test]
    fn reads_distinct_names() {
        let dir = TempDir::new("umadrs-xtask-test").unwrap();
        let path = dir.join("ran.txt");
        std::fs::write(&path, "b::t\na::t\n\nb::t\n").unwrap();
        assert_eq!(read_ran(&path), set(&["a::t", "b::t"]));
        std::fs::remove_file(&path).unwrap();
        assert!(read_ran(&path).is_empty());
    }
}
