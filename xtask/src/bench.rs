//! `cargo xtask bench-libibumad [--runs N] [--no-pin]`: wall time of `ibnetdiscover` on the
//! 1052-node fat tree (`fabrics/fattree-1008.net`) on the system `libibumad.so.3` and on ours,
//! interleaved on one ibsim instance; prints the medians and the ratio ours ÷ system (goal
//! ≤ 1.00, see docs/performance.md).
//!
//! By default this process pins itself — and so ibsim, opensm and every client it starts — to
//! one CPU with `taskset`. Unpinned, a run takes 75–400 ms on a 2-CPU machine depending on
//! whether the scheduler puts ibsim and the client on the same CPU (a serial SMP round trip
//! costs ≈ 15 µs on one CPU, ≈ 83 µs across two); pinned, runs agree within a few percent and
//! the library's own cost is a larger share of the total. `--no-pin` measures unpinned.
//!
//! The options, the pinning and locating our library are shared with the other benchmarks
//! (`cargo xtask bench-rmpp`, [`crate::bench_rmpp`], …); their statistics are
//! [`crate::stats`].

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ibsim_harness::{fabrics_dir, ibsim_available, install_hint, run_with_timeout, Ibsim};

use crate::stats::{goal_met, median, met, ratio, Goal};
use crate::{cargo, workspace_root};

/// Environment variable naming the directory that holds our `libibumad.so.3`.
const LIB_DIR_ENV: &str = "UMAD_LIBIBUMAD_DIR";
const SONAME: &str = "libibumad.so.3";
const DEFAULT_RUNS: usize = 7;
const MIN_RUNS: usize = 5;
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const FABRIC: &str = "fattree-1008.net";

/// Which library a run uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    System,
    Ours,
}

/// Command-line options of the benchmarks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Opts {
    /// Timed runs per contender (≥ 5).
    pub(crate) runs: usize,
    /// Pin everything to one CPU.
    pub(crate) pin: bool,
}

/// Parses `[--runs N] [--no-pin]` (N ≥ 5, default 7) of `cargo xtask COMMAND`.
pub(crate) fn parse_opts(args: &[String], command: &str) -> Result<Opts, String> {
    parse_opts_with(args, command, DEFAULT_RUNS, MIN_RUNS)
}

/// [`parse_opts`] with another default and minimum number of runs.
pub(crate) fn parse_opts_with(
    args: &[String],
    command: &str,
    default_runs: usize,
    min_runs: usize,
) -> Result<Opts, String> {
    parse_opts_full(args, command, default_runs, min_runs, true)
}

/// [`parse_opts_with`] with pinning on or off by default; `--pin` and `--no-pin` both work.
pub(crate) fn parse_opts_full(
    args: &[String],
    command: &str,
    default_runs: usize,
    min_runs: usize,
    pin_default: bool,
) -> Result<Opts, String> {
    let usage = if pin_default { "[--no-pin]" } else { "[--pin]" };
    let (runs, given) = parse_runs_and_flags(
        args,
        command,
        default_runs,
        min_runs,
        &["--pin", "--no-pin"],
        usage,
    )?;
    let pin = given.iter().fold(pin_default, |_, f| *f == "--pin");
    Ok(Opts { runs, pin })
}

/// Parses `[--runs N]` (N ≥ `min_runs`, default `default_runs`) and the bare `flags` of
/// `cargo xtask COMMAND`; returns N and the flags given, in order. An unknown option is an
/// error whose usage line lists `usage` after `[--runs N]`.
pub(crate) fn parse_runs_and_flags<'a>(
    args: &'a [String],
    command: &str,
    default_runs: usize,
    min_runs: usize,
    flags: &[&str],
    usage: &str,
) -> Result<(usize, Vec<&'a str>), String> {
    let mut runs = default_runs;
    let mut given = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => {
                let n = it.next().ok_or("--runs needs a number")?;
                runs = match n.parse::<usize>() {
                    Ok(n) if n >= min_runs => n,
                    _ => return Err(format!("--runs needs a number ≥ {min_runs}, got {n:?}")),
                };
            }
            f if flags.contains(&f) => given.push(f),
            other => {
                return Err(format!(
                    "unknown option {other:?} (usage: cargo xtask {command} [--runs N] {usage})"
                ));
            }
        }
    }
    Ok((runs, given))
}

/// Pins this process (and so every process it starts later) to its last allowed CPU with
/// `taskset`; returns the CPU.
pub(crate) fn pin_to_one_cpu() -> Result<usize, String> {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cpu = allowed_cpus()?.into_iter().last().unwrap_or(cpus - 1);
    let status = Command::new("taskset")
        .args([
            "-p",
            "-c",
            &cpu.to_string(),
            &std::process::id().to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| {
            format!("taskset (util-linux) is needed to pin to one CPU ({e}); use --no-pin")
        })?;
    if status.success() {
        Ok(cpu)
    } else {
        Err(format!("taskset failed ({status}); use --no-pin"))
    }
}

/// The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status).
fn allowed_cpus() -> Result<Vec<usize>, String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or("no Cpus_allowed_list in /proc/self/status")?;
    parse_cpu_list(list.trim())
}

/// Parses a CPU list such as `0-3,6`.
fn parse_cpu_list(list: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list {list:?}");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.parse::<usize>().map_err(|_| bad())?,
                    b.parse::<usize>().map_err(|_| bad())?,
                );
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

/// The directory holding our `libibumad.so.3`: `$UMAD_LIBIBUMAD_DIR`, else
/// `<workspace>/target/libibumad`. `Err` (naming the command that builds it) when the library
/// is not there.
pub(crate) fn our_lib_dir() -> Result<PathBuf, String> {
    let dir = match std::env::var_os(LIB_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => workspace_root().join("target").join("libibumad"),
    };
    let lib = dir.join(SONAME);
    if lib.is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "{} not found: run `cargo xtask libibumad` first (or set {LIB_DIR_ENV})",
            lib.display()
        ))
    }
}

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let Opts { runs, pin } = parse_opts(args, "bench-libibumad")?;
    let dir = our_lib_dir()?;
    if !ibsim_available() {
        return Err(format!("ibsim is not installed: {}", install_hint()));
    }
    let placement = if pin {
        format!("ibsim and clients pinned to CPU {}", pin_to_one_cpu()?)
    } else {
        "unpinned".to_owned()
    };
    let net = fabrics_dir().join(FABRIC);
    let sim = Ibsim::start(&net).map_err(|e| format!("starting ibsim on {FABRIC}: {e}"))?;
    sim.run_sm_once()
        .map_err(|e| format!("opensm -o on {FABRIC}: {e}"))?;

    // Untimed warm-up on both sides: proves which library each side loads and that both
    // discover the same fabric.
    let reference = warm_up(&sim, Side::System, &dir)?;
    let ours_out = warm_up(&sim, Side::Ours, &dir)?;
    if ours_out != reference {
        return Err(format!(
            "ibnetdiscover output differs between the system library and ours ({} vs {} lines); \
             run `cargo test -p compat --test real_programs` for the diff",
            reference.lines().count(),
            ours_out.lines().count()
        ));
    }
    let nodes = reference
        .lines()
        .filter(|l| l.starts_with("Switch") || l.starts_with("Ca"))
        .count();

    let mut times = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
    for i in 0..runs {
        // Alternate the order too, so drift and cache effects hit both sides alike.
        let order = if i % 2 == 0 {
            [Side::System, Side::Ours]
        } else {
            [Side::Ours, Side::System]
        };
        for side in order {
            let started = Instant::now();
            let out = ibnetdiscover(&sim, side, &dir, &[])?;
            let elapsed = started.elapsed();
            if masked(&out) != reference {
                return Err(format!(
                    "run {} on the {} library printed a different fabric",
                    i + 1,
                    label(side)
                ));
            }
            times[usize::from(side == Side::Ours)].push(elapsed);
        }
    }
    for (side, t) in [(Side::System, &times[0]), (Side::Ours, &times[1])] {
        let ms: Vec<String> = t.iter().map(|d| d.as_millis().to_string()).collect();
        println!("  {:6} runs (ms, in order): {}", label(side), ms.join(" "));
    }
    let [system, ours] = times.map(|t| median(&t));
    let ratio = ratio(ours, system);
    println!(
        "ibnetdiscover on {nodes} nodes: system {:.3} s, ours {:.3} s, ratio {ratio:.2} ({runs} runs each)",
        system.as_secs_f64(),
        ours.as_secs_f64()
    );
    println!(
        "goal ours ÷ system ≤ 1.00: {} (medians of interleaved runs, {placement})",
        met(goal_met(ratio, Goal::AtMost(1.0)))
    );
    Ok(())
}

/// Environment variable set on the optimized re-run of [`rerun_optimized`].
const OPTIMIZED_ENV: &str = "UMAD_XTASK_OPTIMIZED";

/// For a benchmark that measures Rust code running in this process: when this xtask was built
/// without optimizations (`cargo xtask` is a dev build), runs `cargo run --release -p xtask --
/// COMMAND ARGS` and returns its outcome; `None` when this process is the optimized one.
pub(crate) fn rerun_optimized(command: &str, args: &[String]) -> Option<Result<(), String>> {
    if !cfg!(debug_assertions) || std::env::var_os(OPTIMIZED_ENV).is_some() {
        return None;
    }
    eprintln!("xtask {command}: re-running as an optimized build (cargo run --release -p xtask)");
    let status = Command::new(cargo())
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            "xtask",
            "--",
            command,
        ])
        .args(args)
        .env(OPTIMIZED_ENV, "1")
        .current_dir(workspace_root())
        .status();
    Some(match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!(
            "the optimized run failed ({s}; its message is above)"
        )),
        Err(e) => Err(format!("cargo run --release -p xtask: {e}")),
    })
}

fn label(side: Side) -> &'static str {
    match side {
        Side::System => "system",
        Side::Ours => "ours",
    }
}

/// A untimed run with `LD_DEBUG=libs` checking which `libibumad.so.3` was initialised;
/// returns the masked output.
fn warm_up(sim: &Ibsim, side: Side, dir: &Path) -> Result<String, String> {
    let debug = sim.workdir().join(format!("ld-debug-{}", label(side)));
    let out = ibnetdiscover(
        sim,
        side,
        dir,
        &[
            ("LD_DEBUG", OsStr::new("libs")),
            ("LD_DEBUG_OUTPUT", debug.as_os_str()),
        ],
    )?;
    let mut loaded = Vec::new();
    for entry in std::fs::read_dir(sim.workdir()).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(OsStr::to_str).unwrap_or_default();
        if name.starts_with(&format!("ld-debug-{}.", label(side))) {
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            loaded.extend(
                text.lines()
                    .filter_map(|l| l.split_once("calling init: ").map(|(_, p)| p.trim()))
                    .filter(|p| p.ends_with(&format!("/{SONAME}")))
                    .map(PathBuf::from),
            );
        }
    }
    let ours = dir.join(SONAME);
    let is_ours = |p: &PathBuf| {
        p == &ours || matches!((p.canonicalize(), ours.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    let ok = match side {
        Side::Ours => !loaded.is_empty() && loaded.iter().all(is_ours),
        Side::System => !loaded.is_empty() && !loaded.iter().any(is_ours),
    };
    if !ok {
        return Err(format!(
            "the {} run initialised {loaded:?}, expected {}",
            label(side),
            match side {
                Side::Ours => ours.display().to_string(),
                Side::System => "the system library".to_owned(),
            }
        ));
    }
    Ok(masked(&out))
}

/// Runs `ibnetdiscover` under umad2sim on `side`; returns its stdout (unmasked).
fn ibnetdiscover(
    sim: &Ibsim,
    side: Side,
    dir: &Path,
    env: &[(&str, &OsStr)],
) -> Result<String, String> {
    let mut cmd: Command = sim.umad2sim_command("ibnetdiscover");
    match side {
        Side::System => cmd.env_remove("LD_LIBRARY_PATH"),
        Side::Ours => cmd.env("LD_LIBRARY_PATH", dir),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = run_with_timeout(&mut cmd, RUN_TIMEOUT)
        .map_err(|e| format!("ibnetdiscover on the {} library: {e}", label(side)))?;
    if !out.status.success() {
        return Err(format!(
            "ibnetdiscover on the {} library failed ({}):\n{}",
            label(side),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The output without ibnetdiscover's `generated on <date>` line.
fn masked(out: &str) -> String {
    out.lines()
        .filter(|l| !l.starts_with("# Topology file: generated on"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options() {
        let parse = |a: &[&str]| parse_opts(&args(a), "bench-x");
        assert_eq!(parse(&[]), Ok(Opts { runs: 7, pin: true }));
        assert_eq!(
            parse(&["--runs", "11", "--no-pin"]),
            Ok(Opts {
                runs: 11,
                pin: false
            })
        );
        assert!(parse(&["--runs", "3"]).is_err());
        assert_eq!(
            parse_opts_full(&args(&["--pin"]), "x", 11, 10, false),
            Ok(Opts {
                runs: 11,
                pin: true
            })
        );
        assert!(parse_opts_full(&args(&["-y"]), "x", 11, 10, false)
            .unwrap_err()
            .contains("[--pin]"));
        assert!(parse(&["--runs"]).is_err());
        assert!(parse(&["-x"])
            .unwrap_err()
            .contains("cargo xtask bench-x [--runs N]"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("1"), Ok(vec![1]));
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn masks_only_the_date() {
        assert_eq!(
            masked("#\n# Topology file: generated on Mon\nSwitch 8\n"),
            "#\nSwitch 8"
        );
    }
}
