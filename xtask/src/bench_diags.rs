//! `cargo xtask bench-diags [--runs N] [--pin]`: the fabric-sweeping diagnostics, Rust
//! `umad iblinkinfo` / `umad ibqueryerrors` against C `iblinkinfo` / `ibqueryerrors`, on the
//! 1,052-node fat tree of `fabrics/fattree-1008.net`.
//!
//! One ibsim, brought up once with `opensm -o`. An untimed first run of each contender checks
//! that umad prints exactly what C prints (`ibqueryerrors --skip-sl`: no SM answers the SL
//! PathRecords after `opensm -o`, and C then stops before sweeping). Then `N` interleaved
//! rounds (default 9, at least 7; the order rotates every round) of the four processes, each
//! timed by its wall clock and checked for C's line count. Printed: the medians, umad ÷ C per
//! tool against the goal ≤ [`GOAL`].
//!
//! umad runs on the native ibsim transport (`UMAD_IBSIM`, default window), C under umad2sim;
//! the umad binary is crates/umad-cli built now (release), or `UMAD_BIN`. Unpinned by default,
//! as bench-discover (the same reasoning: C's serial round trips pay the cross-CPU wake-ups of
//! a 2-CPU machine, which the goals assume).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibsim_harness::{run_with_timeout, Ibsim, Need};
use umad::carrier::ibsim::{ENV_NODE, ENV_SOCKET};

use crate::bench::{self, Opts};
use crate::stats::{goal_met, median, met, ms, ratio, sorted_ms, Goal};

const COMMAND: &str = "bench-diags";
const DEFAULT_RUNS: usize = 9;
const MIN_RUNS: usize = 7;
/// umad ÷ C wall to reach, for both tools.
const GOAL: f64 = 0.25;
/// Time limit of one process.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The fabric, relative to the workspace root.
const FABRIC: &str = "fabrics/fattree-1008.net";
/// Its node count.
const NODES: usize = 1052;

/// The tools and their arguments.
const TOOLS: [(&str, &[&str]); 2] = [("iblinkinfo", &[]), ("ibqueryerrors", &["--skip-sl"])];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Contender {
    /// Index into [`TOOLS`].
    tool: usize,
    umad: bool,
}

impl Contender {
    fn label(self) -> String {
        let (name, args) = TOOLS[self.tool];
        format!(
            "{} {name}{}{}",
            if self.umad { "umad" } else { "C" },
            if args.is_empty() { "" } else { " " },
            args.join(" ")
        )
    }
}

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let Opts { runs, pin } = bench::parse_opts_full(args, COMMAND, DEFAULT_RUNS, MIN_RUNS, false)?;
    if let Some(outcome) = bench::rerun_optimized(COMMAND, args) {
        return outcome;
    }
    crate::packages::ensure(&[Need::Ibsim], &format!("cargo xtask {COMMAND}"))?;
    let umad = crate::bench_discover::umad_binary()?
        .ok_or("bench-diags needs a umad binary (crates/umad-cli or UMAD_BIN)")?;
    let placement = if pin {
        format!(
            "ibsim and clients pinned to CPU {}",
            bench::pin_to_one_cpu()?
        )
    } else {
        "unpinned".to_owned()
    };
    let net = crate::workspace_root().join(FABRIC);
    println!("{COMMAND}: {FABRIC} ({NODES} nodes), {placement}");
    let sim = Ibsim::start(&net).map_err(|e| format!("starting ibsim on {FABRIC}: {e}"))?;
    sim.run_sm_once()
        .map_err(|e| format!("opensm -o on {FABRIC}: {e}"))?;
    let runner = Runner {
        sim: &sim,
        umad: &umad,
    };

    let contenders: Vec<Contender> = (0..TOOLS.len())
        .flat_map(|tool| [true, false].map(|umad| Contender { tool, umad }))
        .collect();
    // Untimed: umad prints what C prints; C's line count checks the timed runs.
    let mut lines = Vec::new();
    for tool in 0..TOOLS.len() {
        let (_, c_out) = runner.run(Contender { tool, umad: false })?;
        let (_, u_out) = runner.run(Contender { tool, umad: true })?;
        if c_out != u_out {
            return Err(format!(
                "{} and {} print different text",
                Contender { tool, umad: true }.label(),
                Contender { tool, umad: false }.label()
            ));
        }
        if tool == 0 && c_out.matches("Switch: 0x").count() + c_out.matches("CA: ").count() != NODES
        {
            return Err(format!("C iblinkinfo does not list the {NODES} nodes"));
        }
        if tool == 1 && !c_out.contains(&format!("## Summary: {NODES} nodes checked")) {
            return Err(format!(
                "C ibqueryerrors did not check the {NODES} nodes:\n{c_out}"
            ));
        }
        lines.push(c_out.lines().count());
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); contenders.len()];
    for i in 0..runs {
        for k in 0..contenders.len() {
            let idx = (i + k) % contenders.len();
            let c = contenders[idx];
            let (wall, out) = runner.run(c)?;
            if out.lines().count() != lines[c.tool] {
                return Err(format!(
                    "{} printed {} lines, C's first run {}",
                    c.label(),
                    out.lines().count(),
                    lines[c.tool]
                ));
            }
            times[idx].push(wall);
        }
    }
    let med = |c: Contender| -> Duration {
        let i = contenders.iter().position(|&x| x == c).unwrap_or(0);
        median(&times[i])
    };
    for (c, t) in contenders.iter().zip(&times) {
        println!("  {:28} (ms, sorted): {}", c.label(), sorted_ms(t));
    }
    println!("medians of {runs} interleaved rounds:");
    let mut all_met = true;
    for (tool, (name, _)) in TOOLS.iter().enumerate() {
        let u = med(Contender { tool, umad: true });
        let c = med(Contender { tool, umad: false });
        let r = ratio(u, c);
        let ok = goal_met(r, Goal::AtMost(GOAL));
        all_met &= ok;
        println!(
            "  {name:14} umad {:7.1} ms   C {:7.1} ms   umad ÷ C {r:.3} (goal ≤ {GOAL:.2}: {})",
            ms(u),
            ms(c),
            met(ok)
        );
    }
    if !all_met {
        println!("  (a goal not met is reported, not an error: see docs/performance.md)");
    }
    Ok(())
}

struct Runner<'a> {
    sim: &'a Ibsim,
    umad: &'a Path,
}

impl Runner<'_> {
    fn command(&self, c: Contender) -> Result<Command, String> {
        let (name, args) = TOOLS[c.tool];
        let mut cmd = if c.umad {
            let scratch = self
                .sim
                .new_scratch_dir("umad")
                .map_err(|e| format!("scratch directory: {e}"))?;
            let mut cmd = Command::new(self.umad);
            cmd.arg(name)
                .current_dir(scratch)
                .stdin(Stdio::null())
                .env(ENV_SOCKET, self.sim.socket_name())
                .env_remove(ENV_NODE)
                .env_remove("LD_PRELOAD");
            cmd
        } else {
            let mut cmd = self.sim.umad2sim_command(name);
            cmd.env_remove("LD_LIBRARY_PATH").env_remove(ENV_SOCKET);
            cmd
        };
        cmd.args(args);
        Ok(cmd)
    }

    /// One run: its wall time and stdout, failing unless it exited 0.
    fn run(&self, c: Contender) -> Result<(Duration, String), String> {
        let mut cmd = self.command(c)?;
        let started = Instant::now();
        let out =
            run_with_timeout(&mut cmd, RUN_TIMEOUT).map_err(|e| format!("{}: {e}", c.label()))?;
        let wall = started.elapsed();
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}",
                c.label(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((wall, String::from_utf8_lossy(&out.stdout).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(
            Contender {
                tool: 0,
                umad: true
            }
            .label(),
            "umad iblinkinfo"
        );
        assert_eq!(
            Contender {
                tool: 1,
                umad: false
            }
            .label(),
            "C ibqueryerrors --skip-sl"
        );
    }
}
