//! `cargo xtask bench-discover [--runs N] [--pin]`: fabric discovery speed on generated fat
//! trees, the Rust `umad ibnetdiscover` against C `ibnetdiscover` and against the floor that
//! ibsim's own speed sets.
//!
//! For each fat tree of [`FABRICS`] (≈ 1,000 and ≈ 2,300 nodes, generated with
//! [`crate::fattree`]; ibsim gets the `-N`/`-S`/`-P` flags the tree needs), one ibsim, brought
//! up once with `opensm -o`. Then `N` interleaved rounds (default 11, at least 10; the order
//! rotates every round) of:
//!
//! * `umad ibnetdiscover -m` (the binary of `crates/umad-cli`) on the native ibsim transport
//!   (`UMAD_IBSIM`, default window): process wall time;
//! * the same on the kernel transport under umad2sim (`UMAD_IBSIM` unset, so `umad` opens
//!   `/dev/infiniband/umad*`, which the shim serves, as C does): process wall time;
//! * C `ibnetdiscover -m` under umad2sim, default (2 SMPs outstanding), and with `-o 128`:
//!   process wall time;
//! * the floor: directed-route NodeInfo SMPs blasted from this process over the native
//!   transport (from the default node to the first spine, 2 hops), [`WINDOWS`] in flight,
//!   [`RAW_MADS`] each: the best of their median rates is the MAD rate ibsim sustains.
//!
//! Printed per fabric: the median walls, the SMPs each discovery reports (`# Total MADs
//! used`), umad ÷ C default (goal ≤ [`GOAL_VS_DEFAULT`]), umad ÷ C `-o 128` (goal ≤
//! [`GOAL_VS_O128`]), and the fraction of the floor: (umad's SMPs ÷ the best MAD rate) ÷ umad's
//! wall, 1.00 being as fast as ibsim answers (goal ≥ [`GOAL_OF_FLOOR`]). Method and anchors:
//! docs/performance.md.
//!
//! The cost model, for every discovery process: its CPU time (user + system of every thread,
//! from `getrusage(RUSAGE_CHILDREN)` before and after the run,
//! [`ibsim_harness::children_cpu`]) ÷ the SMPs that run reports, medians; and on the kernel
//! transport, where both sides go through the same shim, umad ÷ C `-o 128` CPU per SMP (goal
//! ≤ [`GOAL_CPU_KERNEL`]) and wall (goal ≤ [`GOAL_WALL_KERNEL`]).
//!
//! A discovery that does not list every node of the netfile fails the command (untimed first
//! runs are checked in full; timed runs by their node count). Without `crates/umad-cli` (or
//! `UMAD_BIN=<path of a umad binary>`) the umad rows are left out and the rest is measured.
//! The floor runs in this process, so the command re-runs itself as an optimized build.
//!
//! Unpinned by default (unlike `bench-libibumad`): the goals against C come from the anchors
//! of docs/performance.md, where C's serial round trips pay the cross-CPU wake-ups a 2-CPU
//! machine has; on one CPU (`--pin`) C's default run is about twice as fast and the floor
//! lower. The fraction of the floor holds either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibmad::NodeType;
use ibsim_harness::{children_cpu, run_with_timeout, Ibsim, Need, TempDir};
use umad::carrier::ibsim::{ENV_NODE, ENV_SOCKET};
use umad::IbsimOptions;

use crate::bench::{self, Opts};
use crate::fattree::FatTree;
use crate::raw_smps::RawSmps;
use crate::stats::{goal_met, median, median_f64, met, ms, per_second, ratio, sorted_ms, Goal};

const COMMAND: &str = "bench-discover";
const DEFAULT_RUNS: usize = 11;
const MIN_RUNS: usize = 10;
/// The fabrics: `gen-fattree 36 8 28` (1,052 nodes) and `gen-fattree 48 16 48 64` (2,368).
pub(crate) const FABRICS: [FatTree; 2] = [
    FatTree {
        leaves: 36,
        spines: 8,
        hosts_per_leaf: 28,
        radix: 36,
    },
    FatTree {
        leaves: 48,
        spines: 16,
        hosts_per_leaf: 48,
        radix: 64,
    },
];
/// SMPs in flight of the floor measurement; the best counts.
const WINDOWS: [usize; 3] = [32, 64, 128];
/// SMPs per floor run.
const RAW_MADS: usize = 20_000;
/// Time limit of one discovery process.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// umad ÷ C default wall to reach.
const GOAL_VS_DEFAULT: f64 = 0.12;
/// umad ÷ C `-o 128` wall to reach.
const GOAL_VS_O128: f64 = 0.40;
/// umad (kernel transport) ÷ C `-o 128` CPU per SMP to reach, both under umad2sim.
const GOAL_CPU_KERNEL: f64 = 0.5;
/// umad (kernel transport) ÷ C `-o 128` wall to reach, both under umad2sim.
const GOAL_WALL_KERNEL: f64 = 0.8;
/// The floor ÷ umad's wall (native transport) to reach.
const GOAL_OF_FLOOR: f64 = 0.85;
/// Environment variable naming a `umad` binary to measure instead of building crates/umad-cli.
const UMAD_BIN_ENV: &str = "UMAD_BIN";

/// One contender of the interleaved rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    Umad,
    /// `umad` under umad2sim, on its kernel transport.
    UmadKernel,
    CDefault,
    C128,
    /// The floor blaster with `WINDOWS[i]` in flight.
    Floor(usize),
}

/// What one fabric's rounds found.
#[derive(Debug)]
struct Figures {
    nodes: usize,
    umad: Option<(Duration, u64)>,
    /// `umad` on the kernel transport: median wall, SMPs.
    umad_kernel: Option<(Duration, u64)>,
    c_default: (Duration, u64),
    c_128: Duration,
    /// Median process CPU µs per SMP of umad, umad (kernel), C default, C `-o 128` (`None`
    /// when not measured or unknown).
    cpu_per_smp: [Option<f64>; 4],
    /// Median MADs/s per window of [`WINDOWS`].
    floor_rates: Vec<f64>,
}

impl Figures {
    fn best_rate(&self) -> f64 {
        self.floor_rates.iter().copied().fold(0.0, f64::max)
    }
}

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let Opts { runs, pin } = bench::parse_opts_full(args, COMMAND, DEFAULT_RUNS, MIN_RUNS, false)?;
    if let Some(outcome) = bench::rerun_optimized(COMMAND, args) {
        return outcome;
    }
    crate::packages::ensure(&[Need::Ibsim], &format!("cargo xtask {COMMAND}"))?;
    let umad = umad_binary()?;
    if umad.is_none() {
        println!(
            "bench-discover: no umad binary (crates/umad-cli is not in this tree and {UMAD_BIN_ENV} \
             is not set): measuring C and the floor only"
        );
    }
    let placement = if pin {
        format!(
            "ibsim and clients pinned to CPU {}",
            bench::pin_to_one_cpu()?
        )
    } else {
        "unpinned".to_owned()
    };
    let mut all = Vec::new();
    for tree in FABRICS {
        let f = measure(&tree, runs, umad.as_deref())?;
        report(&tree, &f, runs, &placement);
        all.push((tree, f));
    }
    summary(&all);
    Ok(())
}

/// The `umad` binary to measure: `$UMAD_BIN`, else crates/umad-cli built now (release), else
/// `None`.
pub(crate) fn umad_binary() -> Result<Option<PathBuf>, String> {
    if let Some(p) = std::env::var_os(UMAD_BIN_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(format!("{UMAD_BIN_ENV}={} is not a file", p.display()))
        };
    }
    let root = crate::workspace_root();
    if !root.join("crates/umad-cli/Cargo.toml").is_file() {
        return Ok(None);
    }
    println!("bench-discover: building umad (cargo build --release -p umad-cli)");
    let status = Command::new(crate::cargo())
        .current_dir(&root)
        .args(["build", "--release", "--quiet", "--package", "umad-cli"])
        .status()
        .map_err(|e| format!("cargo build -p umad-cli: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cargo build --release -p umad-cli failed ({status})"
        ));
    }
    // This process is the optimized xtask: the release directory is ours.
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let umad = exe.with_file_name("umad");
    if umad.is_file() {
        Ok(Some(umad))
    } else {
        Err(format!(
            "{} not found after building umad-cli",
            umad.display()
        ))
    }
}

/// The interleaved rounds on one fabric.
fn measure(tree: &FatTree, runs: usize, umad: Option<&Path>) -> Result<Figures, String> {
    let dir = TempDir::new("bench-discover").map_err(|e| format!("temporary directory: {e}"))?;
    let name = format!(
        "fattree-{}-{}-{}-{}.net",
        tree.leaves, tree.spines, tree.hosts_per_leaf, tree.radix
    );
    let net = dir.path().join(&name);
    std::fs::write(&net, tree.netfile()?).map_err(|e| format!("{}: {e}", net.display()))?;
    let nodes = tree.hosts() + tree.switches();
    let flags: Vec<String> = tree
        .ibsim_flags()
        .iter()
        .flat_map(|f| f.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    println!(
        "bench-discover: {name} ({nodes} nodes), ibsim {}",
        if flags.is_empty() {
            "(default limits)".to_owned()
        } else {
            flags.join(" ")
        }
    );
    let sim = Ibsim::builder(&net)
        .args(&flags)
        .start()
        .map_err(|e| format!("starting ibsim on {name}: {e}"))?;
    sim.run_sm_once()
        .map_err(|e| format!("opensm -o on {name}: {e}"))?;
    let discoverer = Discoverer { sim: &sim, umad };

    // Untimed first runs, checked in full.
    let c_mads = discoverer.checked(Contender::CDefault, nodes)?;
    discoverer.checked(Contender::C128, nodes)?;
    let (umad_mads, umad_kernel_mads) = match umad {
        Some(_) => (
            Some(discoverer.checked(Contender::Umad, nodes)?),
            Some(discoverer.checked(Contender::UmadKernel, nodes)?),
        ),
        None => (None, None),
    };
    // The floor: from the default node (H-host0001) up its leaf to the first spine.
    let uplink = u8::try_from(tree.hosts_per_leaf + 1).map_err(|_| "leaf uplink port > 255")?;
    let mut raw = RawSmps::open(
        &IbsimOptions::new(sim.socket_name()),
        &[1, uplink],
        WINDOWS[0],
    )?;
    if raw.node_type()? != NodeType::Switch {
        return Err(format!(
            "the route 0,1,{uplink} from the default node does not end at a spine switch"
        ));
    }
    raw.run(1_000)?;

    let mut contenders = vec![Contender::CDefault, Contender::C128];
    if umad.is_some() {
        contenders.splice(0..0, [Contender::Umad, Contender::UmadKernel]);
    }
    contenders.extend((0..WINDOWS.len()).map(Contender::Floor));
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); contenders.len()];
    // Process CPU µs per SMP of each run (`None`: unknown).
    let mut cpus: Vec<Vec<Option<f64>>> = vec![Vec::with_capacity(runs); contenders.len()];
    for i in 0..runs {
        for k in 0..contenders.len() {
            let idx = (i + k) % contenders.len();
            let t = match contenders[idx] {
                Contender::Floor(w) => {
                    raw.window = WINDOWS[w];
                    raw.run(RAW_MADS)?
                }
                c => {
                    let run = discoverer.timed(c, nodes)?;
                    cpus[idx].push(
                        run.cpu
                            .map(|d| d.as_secs_f64() * 1e6 / run.mads.max(1) as f64),
                    );
                    run.wall
                }
            };
            times[idx].push(t);
        }
    }
    drop(raw);
    let med = |c: Contender| -> Duration {
        let i = contenders.iter().position(|&x| x == c).unwrap_or(0);
        median(&times[i])
    };
    let cpu = |c: Contender| -> Option<f64> {
        let i = contenders.iter().position(|&x| x == c)?;
        let v: Option<Vec<f64>> = cpus[i].iter().copied().collect();
        v.filter(|v| !v.is_empty()).map(|v| median_f64(&v))
    };
    for (c, t) in contenders.iter().zip(&times) {
        println!("  {:28} (ms, sorted): {}", label(*c), sorted_ms(t));
    }
    Ok(Figures {
        nodes,
        umad: umad_mads.map(|m| (med(Contender::Umad), m)),
        umad_kernel: umad_kernel_mads.map(|m| (med(Contender::UmadKernel), m)),
        c_default: (med(Contender::CDefault), c_mads),
        c_128: med(Contender::C128),
        cpu_per_smp: [
            Contender::Umad,
            Contender::UmadKernel,
            Contender::CDefault,
            Contender::C128,
        ]
        .map(cpu),
        floor_rates: (0..WINDOWS.len())
            .map(|w| per_second(RAW_MADS as u64, med(Contender::Floor(w))))
            .collect(),
    })
}

fn label(c: Contender) -> String {
    match c {
        Contender::Umad => "umad ibnetdiscover".into(),
        Contender::UmadKernel => "umad ibnetdiscover (kernel)".into(),
        Contender::CDefault => "C ibnetdiscover".into(),
        Contender::C128 => "C ibnetdiscover -o 128".into(),
        Contender::Floor(w) => format!("floor, {} in flight", WINDOWS[w]),
    }
}

/// Prints one fabric's figures.
fn report(tree: &FatTree, f: &Figures, runs: usize, placement: &str) {
    println!(
        "{} leaves x {} hosts + {} spines, radix {} ({} nodes): medians of {runs} interleaved \
         rounds, {placement}",
        tree.leaves, tree.hosts_per_leaf, tree.spines, tree.radix, f.nodes
    );
    let (c_wall, c_mads) = f.c_default;
    println!(
        "  C ibnetdiscover (default)    {:8.1} ms  {c_mads} MADs",
        ms(c_wall)
    );
    println!("  C ibnetdiscover -o 128       {:8.1} ms", ms(f.c_128));
    if let Some((wall, mads)) = f.umad {
        println!(
            "  umad ibnetdiscover           {:8.1} ms  {mads} MADs",
            ms(wall)
        );
    }
    if let Some((wall, mads)) = f.umad_kernel {
        println!(
            "  umad ibnetdiscover (kernel)  {:8.1} ms  {mads} MADs (under umad2sim)",
            ms(wall)
        );
    }
    let rates: Vec<String> = WINDOWS
        .iter()
        .zip(&f.floor_rates)
        .map(|(w, r)| format!("{w}: {:.1}k/s", r / 1e3))
        .collect();
    let best = f.best_rate();
    println!(
        "  MAD rate ibsim sustains (NodeInfo, 2 hops): {}; best {:.1}k/s",
        rates.join(", "),
        best / 1e3
    );
    let smps = f.umad.map_or(c_mads, |(_, m)| m);
    let floor = Duration::from_secs_f64(smps as f64 / best.max(f64::MIN_POSITIVE));
    println!(
        "  floor: {smps} SMPs ({}) ÷ {:.1}k/s = {:.1} ms",
        if f.umad.is_some() {
            "umad's count"
        } else {
            "C's count"
        },
        best / 1e3,
        ms(floor)
    );
    if let Some((wall, _)) = f.umad {
        let (a, b) = (ratio(wall, c_wall), ratio(wall, f.c_128));
        let f = ratio(floor, wall);
        println!(
            "  umad ÷ C default {a:.3} (goal ≤ {GOAL_VS_DEFAULT:.2}: {}), umad ÷ C -o 128 {b:.3} \
             (goal ≤ {GOAL_VS_O128:.2}: {}), {f:.2} of the floor (goal ≥ {GOAL_OF_FLOOR:.2}: {})",
            met(goal_met(a, Goal::AtMost(GOAL_VS_DEFAULT))),
            met(goal_met(b, Goal::AtMost(GOAL_VS_O128))),
            met(goal_met(f, Goal::AtLeast(GOAL_OF_FLOOR))),
        );
    }
    let us = |v: Option<f64>| v.map_or("?".to_string(), |x| format!("{x:.2}"));
    let [u, uk, cd, c128] = f.cpu_per_smp;
    println!(
        "  process CPU µs per SMP: umad {}, umad (kernel) {}, C default {}, C -o 128 {}",
        us(u),
        us(uk),
        us(cd),
        us(c128)
    );
    if let Some((wall, _)) = f.umad_kernel {
        let w = ratio(wall, f.c_128);
        let cpu_line = match uk.zip(c128) {
            Some((a, b)) => {
                let r = a / b.max(f64::MIN_POSITIVE);
                format!(
                    "CPU per SMP {r:.3} (goal ≤ {GOAL_CPU_KERNEL:.2}: {})",
                    met(goal_met(r, Goal::AtMost(GOAL_CPU_KERNEL)))
                )
            }
            None => "CPU per SMP ?".to_string(),
        };
        println!(
            "  kernel transport, umad ÷ C -o 128: {cpu_line}, wall {w:.3} (goal ≤ \
             {GOAL_WALL_KERNEL:.2}: {})",
            met(goal_met(w, Goal::AtMost(GOAL_WALL_KERNEL)))
        );
    }
}

/// The closing table, one line per fabric.
fn summary(all: &[(FatTree, Figures)]) {
    println!(
        "\n  {:>6} {:>9} {:>9} {:>9} {:>7} {:>9} {:>8} {:>10} {:>9}",
        "nodes", "C (ms)", "C -o128", "umad", "SMPs", "floor", "÷ C", "÷ C -o128", "of floor"
    );
    for (_, f) in all {
        let smps = f.umad.map_or(f.c_default.1, |(_, m)| m);
        let floor = Duration::from_secs_f64(smps as f64 / f.best_rate().max(f64::MIN_POSITIVE));
        let (umad, a, b, frac) = match f.umad {
            Some((w, _)) => (
                format!("{:.1}", ms(w)),
                format!("{:.3}", ratio(w, f.c_default.0)),
                format!("{:.3}", ratio(w, f.c_128)),
                format!("{:.2}", ratio(floor, w)),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "  {:>6} {:>9.1} {:>9.1} {umad:>9} {smps:>7} {:>9.1} {a:>8} {b:>10} {frac:>9}",
            f.nodes,
            ms(f.c_default.0),
            ms(f.c_128),
            ms(floor)
        );
    }
    println!(
        "  goals: umad ÷ C default ≤ {GOAL_VS_DEFAULT:.2}, umad ÷ C -o 128 ≤ {GOAL_VS_O128:.2}, of floor ≥ \
         {GOAL_OF_FLOOR:.2}; floor = SMPs ÷ best raw MAD rate, 'of floor' = floor ÷ umad wall"
    );
    println!(
        "\n  {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "nodes",
        "umad µs",
        "kernel µs",
        "C µs",
        "-o128 µs",
        "CPU ÷-o128",
        "kernel ms",
        "wall ÷-o128"
    );
    for (_, f) in all {
        let us = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
        let [u, uk, cd, c128] = f.cpu_per_smp;
        let cpu_ratio = uk.zip(c128).map(|(a, b)| a / b.max(f64::MIN_POSITIVE));
        let (wall, wall_ratio) = match f.umad_kernel {
            Some((w, _)) => (format!("{:.1}", ms(w)), format!("{:.3}", ratio(w, f.c_128))),
            None => ("-".into(), "-".into()),
        };
        println!(
            "  {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {wall:>10} {wall_ratio:>10}",
            f.nodes,
            us(u),
            us(uk),
            us(cd),
            us(c128),
            cpu_ratio.map_or("-".to_string(), |r| format!("{r:.3}")),
        );
    }
    println!(
        "  process CPU per SMP (user + sys, getrusage of each child ÷ the SMPs it reports), \
         medians: umad (native), umad (kernel transport under umad2sim), C default, C -o 128; \
         goals on the kernel transport: umad ÷ C -o 128 CPU per SMP ≤ {GOAL_CPU_KERNEL:.2}, \
         wall ≤ {GOAL_WALL_KERNEL:.2}"
    );
}

/// Runs the discovery processes of one ibsim.
struct Discoverer<'a> {
    sim: &'a Ibsim,
    umad: Option<&'a Path>,
}

impl Discoverer<'_> {
    fn command(&self, c: Contender) -> Result<Command, String> {
        let mut cmd = match c {
            Contender::Umad => {
                let umad = self.umad.ok_or("no umad binary")?;
                let scratch = self
                    .sim
                    .new_scratch_dir("umad")
                    .map_err(|e| format!("scratch directory: {e}"))?;
                let mut cmd = Command::new(umad);
                cmd.arg("ibnetdiscover")
                    .current_dir(scratch)
                    .stdin(Stdio::null())
                    .env(ENV_SOCKET, self.sim.socket_name())
                    .env_remove(ENV_NODE)
                    .env_remove("LD_PRELOAD");
                cmd
            }
            Contender::UmadKernel => {
                let umad = self.umad.ok_or("no umad binary")?;
                // UMAD_IBSIM unset: umad takes the kernel transport, which the shim serves.
                let mut cmd = self.sim.umad2sim_command(umad);
                cmd.arg("ibnetdiscover")
                    .env_remove(ENV_SOCKET)
                    .env_remove(ENV_NODE)
                    .env_remove("LD_LIBRARY_PATH");
                cmd
            }
            Contender::CDefault | Contender::C128 => {
                let mut cmd = self.sim.umad2sim_command("ibnetdiscover");
                cmd.env_remove("LD_LIBRARY_PATH").env_remove(ENV_SOCKET);
                if c == Contender::C128 {
                    cmd.args(["-o", "128"]);
                }
                cmd
            }
            Contender::Floor(_) => return Err("the floor is not a process".into()),
        };
        cmd.arg("-m");
        Ok(cmd)
    }

    /// One run: its wall time, its CPU time (`None`: unknown) and its output, failing unless
    /// it exited 0.
    fn run(&self, c: Contender) -> Result<(Duration, Option<Duration>, String), String> {
        let mut cmd = self.command(c)?;
        let cpu_before = children_cpu();
        let started = Instant::now();
        let out =
            run_with_timeout(&mut cmd, RUN_TIMEOUT).map_err(|e| format!("{}: {e}", label(c)))?;
        let wall = started.elapsed();
        let cpu = cpu_before
            .zip(children_cpu())
            .map(|(a, b)| b.saturating_sub(a));
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}",
                label(c),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((wall, cpu, String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// An untimed run that must list every node once; returns its MAD count.
    fn checked(&self, c: Contender, nodes: usize) -> Result<u64, String> {
        let (_, _, out) = self.run(c)?;
        let listed = node_names(&out);
        let distinct: std::collections::BTreeSet<&str> = listed.iter().copied().collect();
        if listed.len() != nodes || distinct.len() != nodes {
            return Err(format!(
                "{} listed {} nodes ({} distinct), the netfile has {nodes}",
                label(c),
                listed.len(),
                distinct.len()
            ));
        }
        total_mads(&out).ok_or_else(|| format!("{}: no '# Total MADs used' line", label(c)))
    }

    /// A timed run, checked by its node count.
    fn timed(&self, c: Contender, nodes: usize) -> Result<TimedRun, String> {
        let (wall, cpu, out) = self.run(c)?;
        let n = node_names(&out).len();
        if n != nodes {
            return Err(format!(
                "{} listed {n} nodes, the netfile has {nodes}",
                label(c)
            ));
        }
        let mads =
            total_mads(&out).ok_or_else(|| format!("{}: no '# Total MADs used' line", label(c)))?;
        Ok(TimedRun { wall, cpu, mads })
    }
}

/// What one timed discovery took.
struct TimedRun {
    wall: Duration,
    /// The process's user + system CPU time (`None`: unknown).
    cpu: Option<Duration>,
    /// The SMPs it reports.
    mads: u64,
}

/// The quoted node ids of ibnetdiscover's `Switch`/`Ca`/`Rt` lines (`Ca\t1 "H-…"`).
fn node_names(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("Switch\t") || l.starts_with("Ca\t") || l.starts_with("Rt\t"))
        .filter_map(|l| l.split('"').nth(1))
        .collect()
}

/// The count of `# Total MADs used: N` (ibnetdiscover -m).
fn total_mads(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.strip_prefix("# Total MADs used:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ibnetdiscover_output() {
        let out = "#\n# Topology file: generated on x\n#\n# Reported max hops discovered: 3\n\
                   # Total MADs used: 36\n\nSwitch\t8 \"S-sw2\"\t\t# \"sw2\" enhanced port 0 lid 3\n\
                   [1]\t\"H-host3\"[1]\t\t# \"host3 HCA-1\" lid 4 4xQDR\n\n\
                   Ca\t2 \"H-host2\"\t\t# \"host2 HCA-1\"\n[1](1)\t\"S-sw1\"[2]\n";
        assert_eq!(total_mads(out), Some(36));
        assert_eq!(node_names(out), ["S-sw2", "H-host2"]);
        assert_eq!(total_mads("# Total MADs used: x\n"), None);
        assert_eq!(total_mads(""), None);
    }

    #[test]
    fn the_fabrics_fit_ibsim() {
        assert_eq!(FABRICS[0].hosts() + FABRICS[0].switches(), 1052);
        assert_eq!(FABRICS[1].hosts() + FABRICS[1].switches(), 2368);
        for t in FABRICS {
            t.validate().unwrap();
        }
        assert!(FABRICS[0].ibsim_flags().is_empty());
        assert_eq!(FABRICS[1].ibsim_flags(), ["-N 4096"]);
    }
}
