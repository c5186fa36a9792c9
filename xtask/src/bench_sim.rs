//! `cargo xtask bench-sim [--runs N] [--quick]`: the in-process simulator (`ibnetsim`, under
//! `umad`'s MAD layer) against ibsim (issue 16's benchmark, first version).
//!
//! On three two-level fat trees — `fabrics/fattree-1008.net` (1,052 nodes) and two generated
//! with [`crate::fattree`] (10,400 and 40,958 nodes) — it measures, in `N` interleaved rounds
//! (default 5, at least 5; the order rotates every round):
//!
//! 1. **Start-up.** Ours: a child process of this program ([`CHILD_COMMAND`] `load`) that
//!    runs `ibnetsim::Fabric::load` + `configure` and prints its figures; timed from spawn to
//!    that line, so that both sides pay a process start. Its peak memory is its own
//!    `ru_maxrss` (one process per measurement, so the peak is that measurement's). ibsim:
//!    started with the `-N`/`-S`/`-P`/`-L` flags the tree needs, timed from spawn to its
//!    control socket answering (a native `umad` port attaching to it), its peak memory the
//!    `VmHWM` of `/proc/<pid>/status` at that point. The 41k-node ibsim takes about 20 s to
//!    start, so it is started in [`IBSIM_RUNS_LARGE`] rounds only; `--quick` skips it.
//! 2. **Raw SMP rate.** [`SMPS`] directed-route Get(NodeInfo) from the first HCA up its leaf
//!    to the first spine (2 hops), [`WINDOW`] in flight through `umad::rpc::Rpc`: on a port
//!    of this process's simulated fabric (`Port::open_sim`, loaded once per tree), and on
//!    the port that found ibsim answering (`Port::open_ibsim`), same route, same count.
//!    And through our daemon, `umad sim serve NETFILE --socket NAME` (the `umad` binary of
//!    3., started unconfigured as ibsim is, one per round): the same route and count on a
//!    port attached to it with `Port::open_ibsim`, its start-up and `VmHWM` taken as
//!    ibsim's are.
//! 3. **Discovery.** `umad ibnetdiscover` (crates/umad-cli, release; or `UMAD_BIN`) with
//!    `UMAD_SIM=<netfile>`: wall from spawn to exit (load, configure, discover, print), and
//!    its peak memory, through a child of this program ([`CHILD_COMMAND`] `discover`) whose
//!    `RUSAGE_CHILDREN` has only that process. Every run must list every node.
//! 4. **opensm bring-up.** On trees under [`LARGE_NODES`] (at ~41k nodes one bring-up on
//!    ibsim takes over a minute): a fresh ibsim (the harness's [`Ibsim`]) and a fresh,
//!    unconfigured daemon per round, `opensm -o` under umad2sim on each (the harness's
//!    runner; `IBSIM_SOCKNAME` pointed at the daemon for ours), in alternating order: the
//!    wall of each opensm process, which must log `SUBNET UP`. opensm's log at its default
//!    level gives no SMP count, so none is printed.
//!
//! Peak memory per port: each side's peak bytes ÷ the tree's ports (every switch port,
//! port 0 included, and every HCA port: what ibsim's `-P` counts).
//!
//! Goals (issue 16): start-up ≥ [`GOAL_LOAD_SPEEDUP`]× faster than ibsim's at ~41k nodes; the
//! in-process SMP rate ≥ [`GOAL_RATE`]× ibsim's, through our daemon ≥ [`GOAL_RATE_DAEMON`]×;
//! discovery of 10,400 nodes in < 1 s and of ~41k in < 4 s. opensm's bring-up on our daemon ÷
//! on ibsim is printed without a goal. Unpinned (on 2 CPUs a simulator and its client each
//! get one).
//!
//! The SMP rates run in this process, so the command re-runs itself as an optimized build.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ibmad::{DrPath, Method, NodeInfo, NodeType, Smp};
use ibsim_harness::{find_tool, install_hint, run_with_timeout, Ibsim, Need, TempDir};
use umad::rpc::{Outcome, Rpc, Window};
use umad::{IbsimOptions, MadAddr, Port, SimOptions};

use crate::bench;
use crate::fattree::FatTree;
use crate::stats::{goal_met, median, median_f64, met, ms, per_second, ratio, sorted_ms, Goal};

const COMMAND: &str = "bench-sim";
/// The subcommand this program runs as its own child (`load`, `discover`).
pub(crate) const CHILD_COMMAND: &str = "bench-sim-child";
const DEFAULT_RUNS: usize = 5;
const MIN_RUNS: usize = 5;
/// ibsim start-ups measured on the largest tree (about 20 s each).
const IBSIM_RUNS_LARGE: usize = 3;
/// Trees at least this big count as "large" (fewer ibsim start-ups, skipped by `--quick`).
const LARGE_NODES: usize = 20_000;
/// SMPs per rate run, and requests in flight.
const SMPS: usize = 20_000;
const WINDOW: usize = 64;
/// Untimed SMPs before each rate run.
const WARM_SMPS: usize = 1_000;
/// Time limit of one discovery or load child, and of one ibsim start-up.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);
/// How often a starting ibsim is probed.
const PROBE: Duration = Duration::from_millis(1);
/// ibsim start-up ÷ ours to reach at ~41k nodes.
const GOAL_LOAD_SPEEDUP: f64 = 20.0;
/// In-process SMP rate ÷ ibsim's to reach.
const GOAL_RATE: f64 = 10.0;
/// SMP rate through our daemon ÷ ibsim's to reach.
const GOAL_RATE_DAEMON: f64 = 3.0;
/// Discovery walls to stay under: (nodes at least, seconds).
const GOAL_DISCOVER: [(usize, f64); 2] = [(10_000, 1.0), (40_000, 4.0)];
/// ibsim 0.10's LinearFDBCap without `-L`, and the most a unicast LID needs.
const IBSIM_DEFAULT_LINEAR_CAP: usize = 30_720;
const MAX_LINEAR_CAP: usize = 49_152;

/// The fat trees: `gen-fattree 36 8 28` (= fabrics/fattree-1008.net, 1,052 nodes),
/// `159 65 64 160` (10,400) and `254 64 160 254` (40,958).
const TREES: [FatTree; 3] = [
    FatTree {
        leaves: 36,
        spines: 8,
        hosts_per_leaf: 28,
        radix: 36,
    },
    FatTree {
        leaves: 159,
        spines: 65,
        hosts_per_leaf: 64,
        radix: 160,
    },
    FatTree {
        leaves: 254,
        spines: 64,
        hosts_per_leaf: 160,
        radix: 254,
    },
];
/// The checked-in netfile of the first tree.
const CHECKED_IN: &str = "fattree-1008.net";

/// Command-line options.
#[derive(Debug, PartialEq, Eq)]
struct Opts {
    runs: usize,
    /// Skip the large trees' ibsim start-ups (and so their ibsim SMP rate).
    quick: bool,
}

fn parse_opts(args: &[String]) -> Result<Opts, String> {
    let (runs, flags) = bench::parse_runs_and_flags(
        args,
        COMMAND,
        DEFAULT_RUNS,
        MIN_RUNS,
        &["--quick"],
        "[--quick]",
    )?;
    Ok(Opts {
        runs,
        quick: !flags.is_empty(),
    })
}

/// The ibsim flags `tree` needs: the generator's `-N`/`-S`/`-P`, and `-L` once its LIDs (one
/// per switch and per single-port HCA) pass ibsim's default LinearFDBCap.
fn ibsim_args(tree: &FatTree) -> Vec<String> {
    let mut args: Vec<String> = tree
        .ibsim_flags()
        .iter()
        .flat_map(|f| f.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let top_lid = nodes(tree);
    if top_lid >= IBSIM_DEFAULT_LINEAR_CAP {
        let cap = (top_lid + 1).next_power_of_two().min(MAX_LINEAR_CAP);
        args.extend(["-L".to_owned(), cap.to_string()]);
    }
    args
}

fn nodes(tree: &FatTree) -> usize {
    tree.hosts() + tree.switches()
}

/// How many ibsim start-ups a tree gets.
fn ibsim_runs(nodes: usize, runs: usize, quick: bool) -> usize {
    match (nodes >= LARGE_NODES, quick) {
        (false, _) => runs,
        (true, false) => runs.min(IBSIM_RUNS_LARGE),
        (true, true) => 0,
    }
}

/// The discovery wall limit (seconds) for a tree of `nodes`, if there is one: the largest
/// [`GOAL_DISCOVER`] size it reaches.
fn discover_goal(nodes: usize) -> Option<f64> {
    GOAL_DISCOVER
        .iter()
        .rev()
        .find(|(n, _)| nodes >= *n)
        .map(|&(_, s)| s)
}

/// Whether the start-up goal applies to a tree of `nodes` (the ~41k one).
fn load_goal_applies(nodes: usize) -> bool {
    nodes >= 40_000
}

/// A verdict as printed: `met`, `NOT met`, or why there is none.
fn verdict(value: Option<f64>, goal: Goal) -> &'static str {
    match value {
        Some(v) => met(goal_met(v, goal)),
        None => "not measured",
    }
}

/// What one tree's rounds found (medians).
#[derive(Debug, Default)]
struct Figures {
    nodes: usize,
    /// Ports (switch ports with port 0, HCA ports), as the `load` child counted them.
    ports: usize,
    /// Ours: spawn to loaded and configured; the load and configure inside; peak kB.
    ours_ready: Duration,
    ours_load: Duration,
    ours_configure: Duration,
    ours_peak_kb: u64,
    /// ibsim: spawn to answering, peak kB, runs (`None`: not started).
    ibsim: Option<(Duration, u64, usize)>,
    /// SMPs/s in process and through ibsim.
    rate_sim: f64,
    rate_ibsim: Option<f64>,
    /// Our daemon: spawn to answering, peak kB then, and SMPs/s through it (`None`: no
    /// `umad` binary).
    daemon: Option<(Duration, u64)>,
    rate_daemon: Option<f64>,
    /// `umad ibnetdiscover` under UMAD_SIM: wall, peak kB.
    discover: Option<(Duration, u64)>,
    /// `opensm -o` walls on our daemon and on ibsim, and the rounds (`None`: not run).
    opensm: Option<(Duration, Duration, usize)>,
}

impl Figures {
    /// ibsim's start-up ÷ ours.
    fn load_speedup(&self) -> Option<f64> {
        self.ibsim
            .map(|(t, _, _)| t.as_secs_f64() / self.ours_ready.as_secs_f64().max(1e-9))
    }
    fn rate_ratio(&self) -> Option<f64> {
        self.rate_ibsim.map(|r| self.rate_sim / r.max(1e-9))
    }
    /// The SMP rate through our daemon ÷ through ibsim.
    fn daemon_rate_ratio(&self) -> Option<f64> {
        Some(self.rate_daemon? / self.rate_ibsim?.max(1e-9))
    }
    /// opensm's bring-up on our daemon ÷ on ibsim.
    fn opensm_ratio(&self) -> Option<f64> {
        self.opensm.map(|(ours, ib, _)| ratio(ours, ib))
    }
    /// Peak bytes per port of a peak in kB.
    fn per_port(&self, peak_kb: u64) -> f64 {
        peak_kb as f64 * 1024.0 / self.ports.max(1) as f64
    }
}

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let opts = parse_opts(args)?;
    if let Some(outcome) = bench::rerun_optimized(COMMAND, args) {
        return outcome;
    }
    crate::packages::ensure(&[Need::Ibsim], &format!("cargo xtask {COMMAND}"))?;
    let ibsim = find_tool("ibsim").ok_or_else(|| format!("ibsim not found: {}", install_hint()))?;
    let umad = crate::bench_discover::umad_binary()?;
    if umad.is_none() {
        println!("{COMMAND}: no umad binary: the discovery rows are left out");
    }
    let dir = TempDir::new(COMMAND).map_err(|e| format!("temporary directory: {e}"))?;
    let mut all = Vec::new();
    for tree in TREES {
        let net = netfile(&tree, dir.path())?;
        let f = measure(&tree, &net, &ibsim, umad.as_deref(), &opts, dir.path())?;
        all.push((tree, f));
    }
    summary(&all, &opts);
    Ok(())
}

/// The netfile of `tree`: the checked-in one for the first, else generated into `dir`.
fn netfile(tree: &FatTree, dir: &Path) -> Result<PathBuf, String> {
    if *tree == TREES[0] {
        return Ok(ibsim_harness::fabrics_dir().join(CHECKED_IN));
    }
    let name = format!(
        "fattree-{}-{}-{}-{}.net",
        tree.leaves, tree.spines, tree.hosts_per_leaf, tree.radix
    );
    let net = dir.join(name);
    std::fs::write(&net, tree.netfile()?).map_err(|e| format!("{}: {e}", net.display()))?;
    Ok(net)
}

/// What is measured in one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    OursLoad,
    /// ibsim's start-up, then its SMP rate on that instance.
    Ibsim,
    OursRate,
    /// Our daemon's start-up, then its SMP rate.
    Daemon,
    Discover,
    /// `opensm -o` on a fresh daemon and on a fresh ibsim.
    Opensm,
}

fn measure(
    tree: &FatTree,
    net: &Path,
    ibsim: &Path,
    umad: Option<&Path>,
    opts: &Opts,
    dir: &Path,
) -> Result<Figures, String> {
    let n = nodes(tree);
    let flags = ibsim_args(tree);
    let ib_runs = ibsim_runs(n, opts.runs, opts.quick);
    println!(
        "{COMMAND}: {} ({n} nodes: {} leaves x {} hosts + {} spines, radix {}), ibsim {}; {} \
         rounds, ibsim started in {ib_runs}",
        net.file_name().unwrap_or_default().to_string_lossy(),
        tree.leaves,
        tree.hosts_per_leaf,
        tree.spines,
        tree.radix,
        if flags.is_empty() {
            "(default limits)".to_owned()
        } else {
            flags.join(" ")
        },
        opts.runs
    );
    let uplink = u8::try_from(tree.hosts_per_leaf + 1).map_err(|_| "leaf uplink port > 255")?;
    let route = [1, uplink];

    // Untimed: the netfile into the page cache, a checked discovery, the in-process port.
    let first = load_child(net)?;
    if first.nodes != n {
        return Err(format!(
            "ibnetsim loaded {} nodes from {}, the tree has {n}",
            first.nodes,
            net.display()
        ));
    }
    if let Some(u) = umad {
        discover_child(u, net, n)?;
    }
    let sim_port =
        Port::open_sim(&SimOptions::new(net)).map_err(|e| format!("Port::open_sim: {e}"))?;
    let sim_rpc = Rpc::with_window(sim_port, Window::of(WINDOW));

    let with_opensm = umad.is_some() && opensm_applies(n);
    let mut contenders = vec![Contender::OursLoad, Contender::Ibsim, Contender::OursRate];
    if umad.is_some() {
        contenders.extend([Contender::Daemon, Contender::Discover]);
    }
    if with_opensm {
        contenders.push(Contender::Opensm);
    }
    let mut ours: Vec<LoadFigures> = Vec::new();
    let mut ours_ready = Vec::new();
    let mut ib_ready = Vec::new();
    let mut ib_peak = Vec::new();
    let mut ib_rate = Vec::new();
    let mut sim_rate = Vec::new();
    let mut disc = Vec::new();
    let mut disc_peak = Vec::new();
    let mut dm_ready = Vec::new();
    let mut dm_peak = Vec::new();
    let mut dm_rate = Vec::new();
    let (mut sm_ours, mut sm_ibsim) = (Vec::new(), Vec::new());
    for i in 0..opts.runs {
        for k in 0..contenders.len() {
            match contenders[(i + k) % contenders.len()] {
                Contender::OursLoad => {
                    let f = load_child(net)?;
                    ours_ready.push(f.ready);
                    ours.push(f);
                }
                Contender::Ibsim if ib_ready.len() < ib_runs => {
                    let (ready, peak, rate) =
                        server_run(Server::Ibsim(ibsim, &flags), net, &route, dir)?;
                    ib_ready.push(ready);
                    ib_peak.push(peak as f64);
                    ib_rate.push(rate);
                }
                Contender::Ibsim => {}
                Contender::OursRate => sim_rate.push(smp_rate(&sim_rpc, &route)?),
                Contender::Daemon => {
                    if let Some(u) = umad {
                        let (ready, peak, rate) = server_run(Server::Daemon(u), net, &route, dir)?;
                        dm_ready.push(ready);
                        dm_peak.push(peak as f64);
                        dm_rate.push(rate);
                    }
                }
                Contender::Opensm => {
                    if let Some(u) = umad {
                        let (ours, ib) = opensm_pair(net, &flags, u, dir, i % 2 == 0)?;
                        sm_ours.push(ours);
                        sm_ibsim.push(ib);
                    }
                }
                Contender::Discover => {
                    if let Some(u) = umad {
                        let (wall, peak) = discover_child(u, net, n)?;
                        disc.push(wall);
                        disc_peak.push(peak as f64);
                    }
                }
            }
        }
    }
    drop(sim_rpc);
    let med_of = |v: &[LoadFigures], f: fn(&LoadFigures) -> Duration| {
        median(&v.iter().map(f).collect::<Vec<_>>())
    };
    println!(
        "  ours, spawn to loaded + configured (ms, sorted): {}",
        sorted_ms(&ours_ready)
    );
    if !ib_ready.is_empty() {
        println!(
            "  ibsim, spawn to answering (ms, sorted):          {}",
            sorted_ms(&ib_ready)
        );
    }
    println!(
        "  SMPs/s in process (k, sorted):                   {}",
        sorted_k(&sim_rate)
    );
    if !ib_rate.is_empty() {
        println!(
            "  SMPs/s through ibsim (k, sorted):                {}",
            sorted_k(&ib_rate)
        );
    }
    if !dm_ready.is_empty() {
        println!(
            "  our daemon, spawn to answering (ms, sorted):     {}",
            sorted_ms(&dm_ready)
        );
        println!(
            "  SMPs/s through our daemon (k, sorted):           {}",
            sorted_k(&dm_rate)
        );
    }
    if !disc.is_empty() {
        println!(
            "  umad ibnetdiscover, UMAD_SIM (ms, sorted):       {}",
            sorted_ms(&disc)
        );
    }
    if !sm_ours.is_empty() {
        println!(
            "  opensm -o on our daemon (ms, sorted):            {}",
            sorted_ms(&sm_ours)
        );
        println!(
            "  opensm -o on ibsim (ms, sorted):                 {}",
            sorted_ms(&sm_ibsim)
        );
    }
    let f = Figures {
        nodes: n,
        ports: first.ports,
        ours_ready: median(&ours_ready),
        ours_load: med_of(&ours, |f| f.load),
        ours_configure: med_of(&ours, |f| f.configure),
        ours_peak_kb: median_f64(&ours.iter().map(|f| f.peak_kb as f64).collect::<Vec<_>>()) as u64,
        ibsim: (!ib_ready.is_empty()).then(|| {
            (
                median(&ib_ready),
                median_f64(&ib_peak) as u64,
                ib_ready.len(),
            )
        }),
        rate_sim: median_f64(&sim_rate),
        rate_ibsim: (!ib_rate.is_empty()).then(|| median_f64(&ib_rate)),
        daemon: (!dm_ready.is_empty()).then(|| (median(&dm_ready), median_f64(&dm_peak) as u64)),
        rate_daemon: (!dm_rate.is_empty()).then(|| median_f64(&dm_rate)),
        discover: (!disc.is_empty()).then(|| (median(&disc), median_f64(&disc_peak) as u64)),
        opensm: (!sm_ours.is_empty()).then(|| (median(&sm_ours), median(&sm_ibsim), sm_ours.len())),
    };
    println!(
        "  medians ({} ports): ours {:.1} ms (load {:.1} + configure {:.1} in process), {:.1} \
         MB peak ({:.0} B/port); ibsim {}; our daemon {}; SMPs in process {:.1}k/s, ibsim {}, \
         our daemon {}; discovery {}; opensm -o on our daemon / on ibsim {}",
        f.ports,
        ms(f.ours_ready),
        ms(f.ours_load),
        ms(f.ours_configure),
        mb(f.ours_peak_kb),
        f.per_port(f.ours_peak_kb),
        f.ibsim.map_or("not started".into(), |(t, p, _)| format!(
            "{:.1} ms, {:.1} MB peak ({:.0} B/port)",
            ms(t),
            mb(p),
            f.per_port(p)
        )),
        f.daemon.map_or("not started".into(), |(t, p)| format!(
            "{:.1} ms, {:.1} MB peak ({:.0} B/port)",
            ms(t),
            mb(p),
            f.per_port(p)
        )),
        f.rate_sim / 1e3,
        f.rate_ibsim
            .map_or("-".into(), |r| format!("{:.1}k/s", r / 1e3)),
        f.rate_daemon
            .map_or("-".into(), |r| format!("{:.1}k/s", r / 1e3)),
        f.discover.map_or("-".into(), |(t, p)| format!(
            "{:.1} ms, {:.1} MB peak",
            ms(t),
            mb(p)
        )),
        f.opensm.map_or("-".into(), |(o, i, _)| format!(
            "{:.2} s / {:.2} s",
            o.as_secs_f64(),
            i.as_secs_f64()
        )),
    );
    Ok(f)
}

fn sorted_k(rates: &[f64]) -> String {
    let mut v = rates.to_vec();
    v.sort_by(f64::total_cmp);
    v.iter()
        .map(|r| format!("{:.1}", r / 1e3))
        .collect::<Vec<_>>()
        .join(" ")
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// The closing table and the goals.
fn summary(all: &[(FatTree, Figures)], opts: &Opts) {
    println!(
        "\n  {:>6} {:>9} {:>9} {:>8} {:>13} {:>6} {:>9} {:>9} {:>7} {:>10} {:>7} {:>10} {:>9} \
         {:>15} {:>6}",
        "nodes",
        "ours ms",
        "ibsim ms",
        "speed-up",
        "peak MB o/i",
        "B/port",
        "SMP k/s",
        "ibsim k/s",
        "÷ ibsim",
        "daemon k/s",
        "÷ ibsim",
        "discover",
        "disc. MB",
        "opensm o/i s",
        "o ÷ i"
    );
    for (_, f) in all {
        let (ib_ms, speedup, peaks) = match f.ibsim {
            Some((t, p, runs)) => (
                format!("{:.0}{}", ms(t), if runs < opts.runs { "*" } else { "" }),
                format!("{:.1}×", f.load_speedup().unwrap_or(0.0)),
                format!("{:.0} / {:.0}", mb(f.ours_peak_kb), mb(p)),
            ),
            None => (
                "-".into(),
                "-".into(),
                format!("{:.0} / -", mb(f.ours_peak_kb)),
            ),
        };
        let (disc, disc_mb) = f.discover.map_or(("-".into(), "-".into()), |(t, p)| {
            (format!("{:.2} s", t.as_secs_f64()), format!("{:.0}", mb(p)))
        });
        let sm = f.opensm.map_or("-".into(), |(o, i, _)| {
            format!("{:.2} / {:.2}", o.as_secs_f64(), i.as_secs_f64())
        });
        println!(
            "  {:>6} {:>9.1} {ib_ms:>9} {speedup:>8} {peaks:>13} {:>6.0} {:>9.1} {:>9} {:>7} \
             {:>10} {:>7} {disc:>10} {disc_mb:>9} {sm:>15} {:>6}",
            f.nodes,
            ms(f.ours_ready),
            f.per_port(f.ours_peak_kb),
            f.rate_sim / 1e3,
            f.rate_ibsim
                .map_or("-".into(), |r| format!("{:.1}", r / 1e3)),
            f.rate_ratio().map_or("-".into(), |r| format!("{r:.1}×")),
            f.rate_daemon
                .map_or("-".into(), |r| format!("{:.1}", r / 1e3)),
            f.daemon_rate_ratio()
                .map_or("-".into(), |r| format!("{r:.1}×")),
            f.opensm_ratio().map_or("-".into(), |r| format!("{r:.2}")),
        );
    }
    println!(
        "  ours: a child process, spawn to Fabric::load + configure done; ibsim: spawn to its \
         socket answering; peak = ru_maxrss (ours) / VmHWM (ibsim); B/port = ours ÷ ports; \
         SMPs: {SMPS} DR Get(NodeInfo), 2 hops, {WINDOW} in flight (umad::rpc), in process, \
         through ibsim and through our daemon (`umad sim serve`); discover: `umad \
         ibnetdiscover` under UMAD_SIM, spawn to exit; opensm: `opensm -o` wall, cold, on our \
         daemon / on ibsim (trees under {LARGE_NODES} nodes); medians of {} rounds{}",
        opts.runs,
        if all
            .iter()
            .any(|(_, f)| f.ibsim.is_some_and(|(_, _, r)| r < opts.runs))
        {
            format!(" (* ibsim started in {IBSIM_RUNS_LARGE} of them)")
        } else {
            String::new()
        }
    );
    println!("  goals:");
    for (_, f) in all.iter().filter(|(_, f)| load_goal_applies(f.nodes)) {
        println!(
            "    start-up at {} nodes ≥ {GOAL_LOAD_SPEEDUP:.0}× faster than ibsim: {}{}",
            f.nodes,
            f.load_speedup()
                .map_or(String::new(), |s| format!("{s:.1}×, ")),
            match (f.load_speedup(), opts.quick) {
                (None, true) => "not measured (--quick)",
                (s, _) => verdict(s, Goal::AtLeast(GOAL_LOAD_SPEEDUP)),
            }
        );
    }
    for (_, f) in all {
        println!(
            "    SMP rate in process ≥ {GOAL_RATE:.0}× ibsim's at {} nodes: {}{}",
            f.nodes,
            f.rate_ratio()
                .map_or(String::new(), |r| format!("{r:.1}×, ")),
            match (f.rate_ratio(), opts.quick) {
                (None, true) => "not measured (--quick)",
                (r, _) => verdict(r, Goal::AtLeast(GOAL_RATE)),
            }
        );
    }
    for (_, f) in all {
        println!(
            "    SMP rate through our daemon ≥ {GOAL_RATE_DAEMON:.0}× ibsim's at {} nodes: {}{}",
            f.nodes,
            f.daemon_rate_ratio()
                .map_or(String::new(), |r| format!("{r:.1}×, ")),
            match (f.daemon_rate_ratio(), f.rate_ibsim, opts.quick) {
                (None, None, true) => "not measured (--quick)",
                (r, _, _) => verdict(r, Goal::AtLeast(GOAL_RATE_DAEMON)),
            }
        );
    }
    for (_, f) in all {
        if let Some(limit) = discover_goal(f.nodes) {
            let s = f.discover.map(|(t, _)| t.as_secs_f64());
            println!(
                "    {} nodes loaded and discovered in < {limit:.0} s: {}{}",
                f.nodes,
                s.map_or(String::new(), |s| format!("{s:.2} s, ")),
                verdict(s, Goal::AtMost(limit))
            );
        }
    }
    println!("  opensm -o cold bring-up, on our daemon ÷ on ibsim (no goal):");
    for (_, f) in all {
        match (f.opensm, f.opensm_ratio()) {
            (Some((o, i, runs)), Some(r)) => println!(
                "    {} nodes: {:.2} s ÷ {:.2} s = {r:.2} ({runs} rounds)",
                f.nodes,
                o.as_secs_f64(),
                i.as_secs_f64()
            ),
            _ => println!(
                "    {} nodes: not measured{}",
                f.nodes,
                if opensm_applies(f.nodes) {
                    " (no umad binary)"
                } else {
                    " (over a minute per bring-up on ibsim)"
                }
            ),
        }
    }
}

/// What a `load` child reports.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LoadFigures {
    /// Spawn to its report (measured by the parent).
    ready: Duration,
    load: Duration,
    configure: Duration,
    peak_kb: u64,
    nodes: usize,
    /// Switch ports with port 0, and HCA ports.
    ports: usize,
}

/// Parses a `load` child's line: `LOAD_US CONFIGURE_US PEAK_KB NODES PORTS`.
fn parse_load_line(line: &str) -> Option<(Duration, Duration, u64, usize, usize)> {
    let v: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match v[..] {
        [l, c, p, n, ports] => Some((
            Duration::from_micros(l),
            Duration::from_micros(c),
            p,
            usize::try_from(n).ok()?,
            usize::try_from(ports).ok()?,
        )),
        _ => None,
    }
}

/// Parses a `discover` child's line: `WALL_US PEAK_KB NODES`.
fn parse_discover_line(line: &str) -> Option<(Duration, u64, usize)> {
    let v: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match v[..] {
        [w, p, n] => Some((Duration::from_micros(w), p, usize::try_from(n).ok()?)),
        _ => None,
    }
}

fn child_command() -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg(CHILD_COMMAND)
        .stdin(Stdio::null())
        .env_remove(umad::carrier::sim::ENV_SIM)
        .env_remove(umad::carrier::ibsim::ENV_SOCKET);
    Ok(cmd)
}

/// One `load` child, timed from spawn to its line.
fn load_child(net: &Path) -> Result<LoadFigures, String> {
    let mut cmd = child_command()?;
    cmd.arg("load")
        .arg(net)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{CHILD_COMMAND} load: {e}"))?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|o| BufReader::new(o).read_line(&mut line));
    let ready = started.elapsed();
    let status = child
        .wait()
        .map_err(|e| format!("{CHILD_COMMAND} load: {e}"))?;
    if !status.success() || !matches!(read, Some(Ok(_))) {
        return Err(format!(
            "{CHILD_COMMAND} load {} failed ({status})",
            net.display()
        ));
    }
    let (load, configure, peak_kb, nodes, ports) =
        parse_load_line(&line).ok_or_else(|| format!("{CHILD_COMMAND} load printed {line:?}"))?;
    Ok(LoadFigures {
        ready,
        load,
        configure,
        peak_kb,
        nodes,
        ports,
    })
}

/// One `discover` child: the wall and peak memory of `umad ibnetdiscover` under UMAD_SIM,
/// which must list `nodes` nodes.
fn discover_child(umad: &Path, net: &Path, nodes: usize) -> Result<(Duration, u64), String> {
    let mut cmd = child_command()?;
    cmd.arg("discover").arg(umad).arg(net);
    let out = run_with_timeout(&mut cmd, RUN_TIMEOUT)
        .map_err(|e| format!("{CHILD_COMMAND} discover: {e}"))?;
    let line = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "umad ibnetdiscover under UMAD_SIM={} failed ({}):\n{}{}",
            net.display(),
            out.status,
            line,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let (wall, peak, listed) = parse_discover_line(&line)
        .ok_or_else(|| format!("{CHILD_COMMAND} discover printed {line:?}"))?;
    if listed != nodes {
        return Err(format!(
            "umad ibnetdiscover under UMAD_SIM listed {listed} nodes, the netfile has {nodes}"
        ));
    }
    Ok((wall, peak))
}

/// A simulator a native port attaches to.
#[derive(Debug, Clone, Copy)]
enum Server<'a> {
    /// ibsim, with the flags the tree needs.
    Ibsim(&'a Path, &'a [String]),
    /// Our daemon, `umad sim serve` of this `umad` binary, unconfigured (as ibsim starts).
    Daemon(&'a Path),
}

impl Server<'_> {
    fn name(&self) -> &'static str {
        match self {
            Server::Ibsim(..) => "ibsim",
            Server::Daemon(_) => "umad sim serve",
        }
    }

    /// The command serving `net` on the socket name `socket`.
    fn command(&self, net: &Path, socket: &str) -> Command {
        match *self {
            Server::Ibsim(ibsim, flags) => {
                let mut cmd = Command::new(ibsim);
                cmd.args(["-s", "--no-console"])
                    .args(flags)
                    .arg(net)
                    .env(ibsim_harness::SOCKNAME_ENV, socket);
                cmd
            }
            Server::Daemon(umad) => {
                let mut cmd = Command::new(umad);
                cmd.args(["sim", "serve"])
                    .arg(net)
                    .args(["--socket", socket]);
                cmd
            }
        }
    }
}

/// A started simulator, stopped (SIGKILL, then reaped) when dropped.
struct ServerProcess {
    child: Child,
    socket: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `server` on `net` (its output in `dir/<socket>.log`); returns it once its control
/// socket answers, with the port that found it answering and the time from spawn.
fn start_server(
    server: Server,
    net: &Path,
    dir: &Path,
) -> Result<(ServerProcess, Port, Duration), String> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = server.name();
    let socket = format!(
        "benchsim{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let log_path = dir.join(format!("{socket}.log"));
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = server.command(net, &socket);
    cmd.current_dir(dir)
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2));
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("starting {name}: {e}"))?;
    let mut proc = ServerProcess {
        child,
        socket: socket.clone(),
    };
    let opts = IbsimOptions::new(socket.as_str());
    let port = loop {
        if let Ok(p) = Port::open_ibsim(&opts) {
            break p;
        }
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Ok(Some(status)) = proc.child.try_wait() {
            return Err(format!(
                "{name} exited during start-up ({status}):\n{}",
                log()
            ));
        }
        if started.elapsed() > RUN_TIMEOUT {
            return Err(format!(
                "{name} not answering after {RUN_TIMEOUT:?}:\n{}",
                log()
            ));
        }
        std::thread::sleep(PROBE);
    };
    Ok((proc, port, started.elapsed()))
}

/// Starts `server` on `net`; returns spawn-to-answering, its peak kB then, and the SMP rate
/// measured on it.
fn server_run(
    server: Server,
    net: &Path,
    route: &[u8],
    dir: &Path,
) -> Result<(Duration, u64, f64), String> {
    let (proc, port, ready) = start_server(server, net, dir)?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", proc.child.id()))
        .map_err(|e| format!("{}'s /proc status: {e}", server.name()))?;
    let peak = vm_hwm_kb(&status)
        .ok_or_else(|| format!("no VmHWM in {}'s /proc status", server.name()))?;
    let rpc = Rpc::with_window(port, Window::of(WINDOW));
    let rate = smp_rate(&rpc, route)?;
    drop(rpc);
    drop(proc);
    Ok((ready, peak, rate))
}

/// Whether opensm's bring-up is measured on a tree of `nodes`.
fn opensm_applies(nodes: usize) -> bool {
    nodes < LARGE_NODES
}

/// `opensm -o` (the harness's runner, under umad2sim) on a fresh, unconfigured daemon of
/// `umad` and on a fresh ibsim, both serving `net`, our daemon first if `daemon_first`;
/// returns the walls (ours, ibsim's). Each run must log `SUBNET UP`.
fn opensm_pair(
    net: &Path,
    flags: &[String],
    umad: &Path,
    dir: &Path,
    daemon_first: bool,
) -> Result<(Duration, Duration), String> {
    let sim = Ibsim::builder(net)
        .args(flags)
        .ready_timeout(RUN_TIMEOUT)
        .start()
        .map_err(|e| format!("starting ibsim for opensm: {e}"))?;
    let subnet_up = |run: ibsim_harness::SmOnce, on: &str| {
        if run.log().contains("SUBNET UP") {
            Ok(run.elapsed)
        } else {
            Err(format!(
                "opensm -o on {on} did not log SUBNET UP:\n{}",
                ibsim_harness::tail(&run.log(), 20)
            ))
        }
    };
    let (mut ours, mut theirs) = (None, None);
    for on_daemon in [daemon_first, !daemon_first] {
        if on_daemon {
            let (daemon, port, _) = start_server(Server::Daemon(umad), net, dir)?;
            drop(port);
            let socket = daemon.socket.clone();
            let run = sim
                .opensm()
                .configure(move |c| {
                    c.env(ibsim_harness::SOCKNAME_ENV, &socket);
                    Ok(())
                })
                .run_once()
                .map_err(|e| format!("opensm -o on umad sim serve: {e}"))?;
            ours = Some(subnet_up(run, "umad sim serve")?);
            drop(daemon);
        } else {
            let run = sim
                .opensm()
                .run_once()
                .map_err(|e| format!("opensm -o on ibsim: {e}"))?;
            theirs = Some(subnet_up(run, "ibsim")?);
        }
    }
    match (ours, theirs) {
        (Some(o), Some(t)) => Ok((o, t)),
        _ => Err("opensm_pair: a side was not run".into()),
    }
}

/// The `VmHWM:` of a `/proc/<pid>/status` text, in kB.
fn vm_hwm_kb(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
}

/// NodeInfo along `route`, [`WINDOW`] in flight: checks that the route ends at a switch,
/// warms up, then returns the rate of [`SMPS`] requests.
fn smp_rate(rpc: &Rpc, route: &[u8]) -> Result<f64, String> {
    let path = DrPath::from_hops(route).map_err(|e| e.to_string())?;
    let mad = Smp::dr_request(Method::Get, ibmad::attr::id::NODE_INFO, 0, 1, &path);
    let request = rpc.request(mad.to_vec(), MadAddr::directed_route());
    let c = rpc
        .call(request.clone())
        .map_err(|e| format!("NodeInfo over {path}: {e}"))?;
    let end = c
        .outcome
        .response()
        .and_then(|r| Smp::new_checked(&r.mad[..]).ok())
        .filter(|s| s.status().is_success())
        .and_then(|s| NodeInfo::parse(s.data()).ok())
        .map(|ni| ni.node_type);
    if end != Some(NodeType::Switch) {
        return Err(format!(
            "NodeInfo over {path} did not find a switch: {end:?}"
        ));
    }
    pipeline(rpc, &request, WARM_SMPS)?;
    let started = Instant::now();
    pipeline(rpc, &request, SMPS)?;
    Ok(per_second(SMPS as u64, started.elapsed()))
}

/// `total` requests through `rpc`, [`WINDOW`] submitted at a time, each completion's request
/// resubmitted; every answer must be a successful response.
fn pipeline(rpc: &Rpc, request: &umad::rpc::Request, total: usize) -> Result<(), String> {
    let fail = |e: umad::Error| format!("SMPs: {e}");
    let mut sent = 0;
    while sent < total.min(WINDOW) {
        rpc.submit(request.clone()).map_err(fail)?;
        sent += 1;
    }
    for _ in 0..total {
        let c = rpc
            .next(Some(Duration::from_secs(5)))
            .map_err(fail)?
            .ok_or("SMPs: no completion within 5 s")?;
        let ok = matches!(&c.outcome, Outcome::Response(r)
            if Smp::new_checked(&r.mad[..]).is_ok_and(|s| s.status().is_success()));
        if !ok {
            return Err(format!("SMPs: a NodeInfo failed: {:?}", c.outcome));
        }
        if sent < total {
            rpc.submit(c.request).map_err(fail)?;
            sent += 1;
        }
    }
    Ok(())
}

/// `bench-sim-child load NETFILE` | `discover UMAD NETFILE`: see the module docs.
pub fn child(args: &[String]) -> Result<(), String> {
    match args {
        [mode, net] if mode == "load" => {
            let t0 = Instant::now();
            let mut fabric = ibnetsim::Fabric::load(net).map_err(|e| format!("{net}: {e}"))?;
            let t1 = Instant::now();
            fabric.configure(None);
            let t2 = Instant::now();
            let peak = peak_kb(libc::RUSAGE_SELF).ok_or("getrusage failed")?;
            // A CA's `ports[0]` is a placeholder (it has no port 0).
            let ports: usize = fabric
                .nodes()
                .iter()
                .map(|n| n.ports.len() - usize::from(!n.is_switch()))
                .sum();
            println!(
                "{} {} {peak} {} {ports}",
                (t1 - t0).as_micros(),
                (t2 - t1).as_micros(),
                fabric.len()
            );
            Ok(())
        }
        [mode, umad, net] if mode == "discover" => {
            let started = Instant::now();
            let out = Command::new(umad)
                .arg("ibnetdiscover")
                .env(umad::carrier::sim::ENV_SIM, net)
                .env_remove(umad::carrier::sim::ENV_SIM_NODE)
                .env_remove(umad::carrier::sim::ENV_SIM_UNCONFIGURED)
                .env_remove("LD_PRELOAD")
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| format!("{umad}: {e}"))?;
            let wall = started.elapsed();
            if !out.status.success() {
                return Err(format!("{umad} ibnetdiscover failed ({})", out.status));
            }
            let peak = peak_kb(libc::RUSAGE_CHILDREN).ok_or("getrusage failed")?;
            let listed = listed_nodes(&String::from_utf8_lossy(&out.stdout));
            println!("{} {peak} {listed}", wall.as_micros());
            Ok(())
        }
        _ => Err(format!(
            "usage: {CHILD_COMMAND} load NETFILE | discover UMAD NETFILE, got {args:?}"
        )),
    }
}

/// The nodes an ibnetdiscover topology lists (its `Switch`, `Ca` and `Rt` lines).
fn listed_nodes(out: &str) -> usize {
    out.lines()
        .filter(|l| l.starts_with("Switch\t") || l.starts_with("Ca\t") || l.starts_with("Rt\t"))
        .count()
}

/// `ru_maxrss` (kB on Linux) of this process or of its waited-for children.
fn peak_kb(who: libc::c_int) -> Option<u64> {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct (integers and
    // timevals only).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call, and `who` is
    // RUSAGE_SELF or RUSAGE_CHILDREN.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return None;
    }
    u64::try_from(ru.ru_maxrss).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options() {
        assert_eq!(
            parse_opts(&[]).unwrap(),
            Opts {
                runs: 5,
                quick: false
            }
        );
        assert_eq!(
            parse_opts(&args(&["--quick", "--runs", "7"])).unwrap(),
            Opts {
                runs: 7,
                quick: true
            }
        );
        assert!(parse_opts(&args(&["--runs", "4"])).is_err());
        assert!(parse_opts(&args(&["--runs"])).is_err());
        assert!(parse_opts(&args(&["--runs", "x"])).is_err());
        assert!(parse_opts(&args(&["--pin"])).is_err());
    }

    #[test]
    fn the_trees_and_their_ibsim_flags() {
        let n: Vec<usize> = TREES.iter().map(nodes).collect();
        assert_eq!(n, [1052, 10_400, 40_958]);
        for t in TREES {
            t.validate().unwrap();
        }
        assert_eq!(
            TREES[0].netfile().unwrap(),
            std::fs::read_to_string(ibsim_harness::fabrics_dir().join(CHECKED_IN)).unwrap()
        );
        assert!(ibsim_args(&TREES[0]).is_empty());
        assert_eq!(ibsim_args(&TREES[1]), ["-N", "16384", "-P", "65536"]);
        assert_eq!(
            ibsim_args(&TREES[2]),
            ["-N", "65536", "-S", "512", "-P", "131072", "-L", "49152"]
        );
        assert_eq!(ibsim_runs(1052, 5, true), 5);
        assert_eq!(ibsim_runs(40_958, 5, false), 3);
        assert_eq!(ibsim_runs(40_958, 2, false), 2);
        assert_eq!(ibsim_runs(40_958, 9, true), 0);
    }

    #[test]
    fn goals_and_verdicts() {
        assert_eq!(discover_goal(1052), None);
        assert_eq!(discover_goal(10_400), Some(1.0));
        assert_eq!(discover_goal(40_958), Some(4.0));
        assert!(!load_goal_applies(10_400));
        assert!(load_goal_applies(40_958));
        assert_eq!(verdict(Some(20.0), Goal::AtLeast(GOAL_LOAD_SPEEDUP)), "met");
        assert_eq!(
            verdict(Some(19.996), Goal::AtLeast(GOAL_LOAD_SPEEDUP)),
            "met"
        );
        assert_eq!(
            verdict(Some(19.9), Goal::AtLeast(GOAL_LOAD_SPEEDUP)),
            "NOT met"
        );
        assert_eq!(verdict(Some(0.99), Goal::AtMost(1.0)), "met");
        assert_eq!(verdict(Some(1.2), Goal::AtMost(1.0)), "NOT met");
        assert_eq!(verdict(None, Goal::AtMost(1.0)), "not measured");
        let f = Figures {
            ours_ready: Duration::from_millis(100),
            ibsim: Some((Duration::from_secs(2), 1, 3)),
            rate_sim: 1.0e6,
            rate_ibsim: Some(1.6e5),
            ..Figures::default()
        };
        assert_eq!(f.load_speedup(), Some(20.0));
        assert_eq!(f.rate_ratio(), Some(6.25));
        assert_eq!(Figures::default().rate_ratio(), None);
        assert_eq!(f.daemon_rate_ratio(), None);
        let g = Figures {
            ports: 1024,
            rate_ibsim: Some(1.0e5),
            rate_daemon: Some(3.5e5),
            opensm: Some((Duration::from_millis(500), Duration::from_secs(1), 5)),
            ..Figures::default()
        };
        assert_eq!(g.daemon_rate_ratio(), Some(3.5));
        assert_eq!(g.opensm_ratio(), Some(0.5));
        assert_eq!(g.per_port(2048), 2048.0);
        assert!(opensm_applies(10_400));
        assert!(!opensm_applies(40_958));
    }

    #[test]
    fn child_lines_and_proc_status() {
        assert_eq!(
            parse_load_line("1500 20 65536 1052 2628\n"),
            Some((
                Duration::from_micros(1500),
                Duration::from_micros(20),
                65536,
                1052,
                2628
            ))
        );
        assert_eq!(parse_load_line("1 2 3 4"), None);
        assert_eq!(parse_load_line("a b c d e"), None);
        assert_eq!(
            parse_discover_line("450000 68000 10400\n"),
            Some((Duration::from_micros(450_000), 68000, 10400))
        );
        assert_eq!(parse_discover_line(""), None);
        let status = "Name:\tibsim\nVmPeak:\t  9000 kB\nVmHWM:\t    1896 kB\nVmRSS:\t 10 kB\n";
        assert_eq!(vm_hwm_kb(status), Some(1896));
        assert_eq!(vm_hwm_kb("Name: x\n"), None);
        let topo = "#\n# Total MADs used: 3\n\nSwitch\t8 \"S-a\"\t# x\n[1]\t\"H-b\"[1]\n\n\
                    Ca\t1 \"H-b\"\t# y\n[1](1)\t\"S-a\"[1]\n";
        assert_eq!(listed_nodes(topo), 2);
    }
}
