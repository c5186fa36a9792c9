//! `cargo xtask bench-roundtrip [--runs N] [--no-pin]`: MAD round trips per second of the
//! Rust API on the kernel transport ÷ the same loop in C on the system libibumad, both under
//! ibsim's umad2sim shim, so both make the same system calls into the same shim and the
//! ratio is the user-space cost of each library.
//!
//! The request is a directed-route Get(NodeInfo) over 2 hops ([`PATH`]: H-host1 → S-sw1 →
//! S-sw2 on `fabrics/example.net`), built once with `ibmad::Smp::dr_request`; both sides
//! reuse it and only write a fresh TID per request. Rows ([`ROWS`]): serial round trips
//! (Rust `Port::transact_into`, and Rust `Port::send` + `Port::recv_into` — exactly the C loop's
//! `umad_send` + `umad_recv`), and 16 and 64 in flight. Each timed run is one process started
//! under umad2sim (`LD_PRELOAD`): the C program `xtask/c/roundtrip.c` (compiled against the
//! system headers and library), or this binary's hidden `bench-roundtrip-child` command, which
//! opens the port with `Port::open_kernel` — `/dev/infiniband/umad0` through libc, which the
//! shim serves. Each process does an untimed warm-up, then times its loop itself (process
//! start-up is not measured) and prints the time. Every reply must be a successful GetResp,
//! else the command fails.
//!
//! Runs are interleaved (C and Rust alternately, the order flipped every run) on one ibsim,
//! medians of N ≥ 9 runs (default 11). Pinning and the options are those of `bench-libibumad`
//! ([`crate::bench`]); by default everything shares one CPU, where user-space cost counts
//! most. Prints the rates and Rust ÷ C per row (goal ≥ [`GOAL`]), then the cost model per row:
//! the CPU time per round trip (one request MAD and its response) of each whole client
//! process — user + system of every thread, the shim's receiver thread included, from
//! `getrusage(RUSAGE_SELF)` around the timed loop ([`ibsim_harness::self_cpu`]; the C program
//! calls the same) — Rust ÷ C, and the Rust client's heap allocations per round trip (this
//! binary's global allocator is [`ibsim_harness::CountingAlloc`]; the test
//! `crates/umad/tests/alloc_per_mad.rs` ratchets the same figures on an in-process transport).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use ibmad::{DrPath, Mad, Method, NodeInfo, NodeType, Smp};
use ibsim_harness::{example_fabric, run_with_timeout, Ibsim, Need};
use umad::carrier::ibsim::{ENV_NODE, ENV_SOCKET};
use umad::device::Devices;
use umad::rpc::{Completion, Outcome, Request, Rpc, Window};
use umad::{AgentSpec, MadAddr, Port, Received};

use crate::bench::{self, Opts};
use crate::stats::{goal_met, median_f64, met, per_second, Goal};

const COMMAND: &str = "bench-roundtrip";
/// The hidden command a Rust client process runs (under umad2sim).
pub(crate) const CHILD_COMMAND: &str = "bench-roundtrip-child";
/// The directed route from ibsim's default attach point (H-host1 port 1) to S-sw2.
const PATH: &str = "0,1,8";
/// Rust ÷ C round trips per second on every row (issue 15).
const GOAL: f64 = 1.05;
const DEFAULT_RUNS: usize = 11;
const MIN_RUNS: usize = 9;
/// One attempt per request; a lost reply ends the run (the C program uses the same).
const TIMEOUT_MS: u32 = 1000;
const RETRIES: u32 = 0;
/// How long a client waits for any reply before it gives up.
const RECV_WAIT: Duration = Duration::from_secs(3);
/// Time limit of one client process.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The C program's source, relative to the workspace root.
const C_SOURCE: &str = "xtask/c/roundtrip.c";

/// How a Rust client process keeps its requests going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `Port::transact`, one at a time.
    Transact,
    /// `Port::send`, `Port::recv`: the C loop's calls, `window` in flight.
    SendRecv,
    /// The transaction engine (`umad::rpc::Rpc` with `Window::of(window)`): `Rpc::call` one
    /// at a time for a window of 1, else `submit` and `next`.
    Rpc,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Transact => "transact",
            Mode::SendRecv => "send-recv",
            Mode::Rpc => "rpc",
        }
    }

    fn from_arg(s: &str) -> Option<Mode> {
        [Mode::Transact, Mode::SendRecv, Mode::Rpc]
            .into_iter()
            .find(|m| m.arg() == s)
    }
}

/// One line of the result table.
#[derive(Debug, Clone, Copy)]
struct Row {
    label: &'static str,
    window: usize,
    warmup: usize,
    count: usize,
    rust: Mode,
}

/// What is measured, C and Rust alike with the same window and counts.
const ROWS: [Row; 7] = [
    serial("serial, Port::transact_into", Mode::Transact),
    serial("serial, Rpc::call", Mode::Rpc),
    serial("serial, Port::send + recv_into", Mode::SendRecv),
    pipelined("16 in flight, Rpc", 16, Mode::Rpc),
    pipelined("64 in flight, Rpc", 64, Mode::Rpc),
    pipelined("16 in flight, Port::send + recv_into", 16, Mode::SendRecv),
    pipelined("64 in flight, Port::send + recv_into", 64, Mode::SendRecv),
];

const fn serial(label: &'static str, rust: Mode) -> Row {
    Row {
        label,
        window: 1,
        warmup: 200,
        count: 4_000,
        rust,
    }
}

const fn pipelined(label: &'static str, window: usize, rust: Mode) -> Row {
    Row {
        label,
        window,
        warmup: 1_000,
        count: 20_000,
        rust,
    }
}

/// Which program a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    C,
    Rust,
}

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let Opts { runs, pin } = bench::parse_opts_with(args, COMMAND, DEFAULT_RUNS, MIN_RUNS)?;
    if let Some(outcome) = bench::rerun_optimized(COMMAND, args) {
        return outcome;
    }
    crate::packages::ensure(
        &[Need::Ibsim, Need::Test],
        &format!("cargo xtask {COMMAND}"),
    )?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let c_dir = exe
        .parent()
        .map_or_else(|| PathBuf::from("."), |d| d.join("xtask-c"));
    let c_program = compat::differential::compile_c(crate::workspace_root().join(C_SOURCE), &c_dir)
        .map_err(|e| format!("compiling {C_SOURCE}: {e}"))?;
    let placement = if pin {
        format!(
            "ibsim and clients pinned to CPU {}",
            bench::pin_to_one_cpu()?
        )
    } else {
        "unpinned".to_owned()
    };
    let path = DrPath::parse(PATH).map_err(|e| e.to_string())?;
    let request = Smp::dr_request(Method::Get, ibmad::attr::id::NODE_INFO, 0, 1, &path);
    let hex = to_hex(&request);
    let sim = Ibsim::start(example_fabric()).map_err(|e| format!("starting ibsim: {e}"))?;
    let clients = Clients {
        sim: &sim,
        exe,
        c_program,
        hex,
    };

    // Untimed: a Rust client checks that the route ends at a switch, and both sides run once.
    clients.run(Side::Rust, Mode::Transact, 1, 0, 1, true)?;
    for row in &ROWS {
        for side in [Side::C, Side::Rust] {
            clients.run(side, row.rust, row.window, 0, row.window, false)?;
        }
    }

    // reports[row][0] = C, [1] = Rust, in run order.
    let mut reports: Vec<[Vec<Report>; 2]> = vec![Default::default(); ROWS.len()];
    for i in 0..runs {
        for (r, row) in ROWS.iter().enumerate() {
            // Alternate the order too, so drift and cache effects hit both sides alike.
            let order = if (i + r) % 2 == 0 {
                [Side::C, Side::Rust]
            } else {
                [Side::Rust, Side::C]
            };
            for side in order {
                let rep = clients.run(side, row.rust, row.window, row.warmup, row.count, false)?;
                reports[r][usize::from(side == Side::Rust)].push(rep);
            }
        }
    }
    drop(sim);

    println!(
        "bench-roundtrip: directed-route NodeInfo over {} hops ({PATH}), kernel transport and \
         system libibumad, both under umad2sim; medians of {runs} interleaved runs, {placement}",
        path.hop_count()
    );
    println!(
        "  {:32} {:>8} {:>8} {:>8}  {:11}  {:>6} {:>6} {:>7}",
        "round trips/s", "Rust", "C", "Rust÷C", "goal ≥ 1.05", "µs CPU", "per RT", "C÷Rust"
    );
    let mut verdicts = Vec::new();
    for (row, [c, rust]) in ROWS.iter().zip(&reports) {
        let t = table_row(row.count, c, rust);
        let ok = goal_met(t.ratio, Goal::AtLeast(GOAL));
        let cpu = |v: Option<f64>| v.map_or("?".to_string(), |x| format!("{x:.2}"));
        println!(
            "  {:32} {:>7.1}k {:>7.1}k {:>8.2}  {:11}  {:>6} {:>6} {:>7}",
            row.label,
            t.rust_rate / 1e3,
            t.c_rate / 1e3,
            t.ratio,
            met(ok),
            cpu(t.rust_cpu_us),
            cpu(t.c_cpu_us),
            cpu(t.rust_cpu_us.zip(t.c_cpu_us).map(|(r, c)| c / r)),
        );
        verdicts.push(ok);
    }
    println!(
        "  (µs CPU per RT: the main thread's CPU time per round trip, Rust then C; C÷Rust ≥ 1 \
         = Rust spends less)"
    );
    for (row, [c, rust]) in ROWS.iter().zip(&reports) {
        let k = |v: &[Report]| {
            let mut v: Vec<f64> = v
                .iter()
                .map(|r| per_second(row.count as u64, r.wall))
                .collect();
            v.sort_by(f64::total_cmp);
            v.iter()
                .map(|x| format!("{:.1}", x / 1e3))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "  {} (k/s, sorted): Rust {} | C {}",
            row.label,
            k(rust),
            k(c)
        );
    }
    println!(
        "goal Rust ÷ C ≥ {GOAL:.2} on every row: {}",
        met(verdicts.iter().all(|&v| v))
    );
    println!(
        "\n  {:32} {:>9} {:>9} {:>8} {:>10} {:>10}",
        "cost per round trip", "Rust µs", "C µs", "Rust÷C", "wall R÷C", "allocs"
    );
    for (row, [c, rust]) in ROWS.iter().zip(&reports) {
        let k = cost_row(row.count, c, rust);
        let f = |v: Option<f64>, prec: usize| v.map_or("?".to_string(), |x| format!("{x:.prec$}"));
        println!(
            "  {:32} {:>9} {:>9} {:>8} {:>10.2} {:>10}",
            row.label,
            f(k.rust_cpu_us, 2),
            f(k.c_cpu_us, 2),
            f(k.rust_cpu_us.zip(k.c_cpu_us).map(|(r, c)| r / c), 2),
            k.wall_ratio,
            f(k.allocs, 2),
        );
    }
    println!(
        "  (process CPU, user + sys of every thread, per round trip, medians; Rust÷C ≤ 1 = Rust \
         spends less; wall R÷C = Rust ÷ C time per round trip; allocs = the Rust client's heap \
         allocations per round trip)"
    );
    Ok(())
}

/// One row of the cost table: medians per round trip.
#[derive(Debug, PartialEq)]
struct CostRow {
    /// Whole-process CPU µs (`None` if a client could not tell).
    rust_cpu_us: Option<f64>,
    c_cpu_us: Option<f64>,
    /// Median wall per round trip, Rust ÷ C (the reciprocal of the rate ratio).
    wall_ratio: f64,
    /// The Rust client's allocations.
    allocs: Option<f64>,
}

fn cost_row(count: usize, c: &[Report], rust: &[Report]) -> CostRow {
    let n = count.max(1) as f64;
    let per = |v: &[Report], f: fn(&Report) -> Option<f64>| {
        let x: Option<Vec<f64>> = v.iter().map(|r| f(r).map(|x| x / n)).collect();
        x.filter(|x| !x.is_empty()).map(|x| median_f64(&x))
    };
    let cpu = |r: &Report| r.proc_cpu.map(|d| d.as_secs_f64() * 1e6);
    let wall = |r: &Report| Some(r.wall.as_secs_f64());
    let wall_ratio =
        per(rust, wall).unwrap_or(0.0) / per(c, wall).unwrap_or(0.0).max(f64::MIN_POSITIVE);
    CostRow {
        rust_cpu_us: per(rust, cpu),
        c_cpu_us: per(c, cpu),
        wall_ratio,
        allocs: per(rust, |r| r.allocs.map(|a| a as f64)),
    }
}

/// One row's figures from its reports.
#[derive(Debug, PartialEq)]
struct TableRow {
    /// Median round trips per second.
    rust_rate: f64,
    c_rate: f64,
    /// `rust_rate / c_rate`.
    ratio: f64,
    /// Median main-thread CPU µs per round trip (`None` if a client could not tell).
    rust_cpu_us: Option<f64>,
    c_cpu_us: Option<f64>,
}

fn table_row(count: usize, c: &[Report], rust: &[Report]) -> TableRow {
    let rate = |v: &[Report]| {
        median_f64(
            &v.iter()
                .map(|r| per_second(count as u64, r.wall))
                .collect::<Vec<_>>(),
        )
    };
    let cpu = |v: &[Report]| {
        let us: Option<Vec<f64>> = v
            .iter()
            .map(|r| r.cpu.map(|d| d.as_secs_f64() * 1e6 / count.max(1) as f64))
            .collect();
        us.filter(|u| !u.is_empty()).map(|u| median_f64(&u))
    };
    let (rust_rate, c_rate) = (rate(rust), rate(c));
    TableRow {
        rust_rate,
        c_rate,
        ratio: rust_rate / c_rate,
        rust_cpu_us: cpu(rust),
        c_cpu_us: cpu(c),
    }
}

/// Starts the client processes of one ibsim.
struct Clients<'a> {
    sim: &'a Ibsim,
    /// This program (its [`CHILD_COMMAND`] is the Rust client).
    exe: PathBuf,
    c_program: PathBuf,
    /// The request MAD in hex.
    hex: String,
}

impl Clients<'_> {
    /// One client process under umad2sim: `warmup` untimed, then `count` timed round trips
    /// with `window` in flight. Returns what the client measured.
    fn run(
        &self,
        side: Side,
        mode: Mode,
        window: usize,
        warmup: usize,
        count: usize,
        check_node: bool,
    ) -> Result<Report, String> {
        let nums = [window, warmup, count].map(|n| n.to_string());
        let mut cmd: Command = match side {
            Side::C => {
                let mut cmd = self.sim.umad2sim_command(&self.c_program);
                cmd.args(&nums);
                cmd
            }
            Side::Rust => {
                let mut cmd = self.sim.umad2sim_command(&self.exe);
                cmd.arg(CHILD_COMMAND).arg(mode.arg()).args(&nums);
                if check_node {
                    cmd.env(CHECK_NODE_ENV, "1");
                }
                cmd
            }
        };
        // The Rust client must take the kernel transport (the shim), never native ibsim.
        cmd.arg(&self.hex)
            .env_remove(ENV_SOCKET)
            .env_remove(ENV_NODE)
            .env_remove("LD_LIBRARY_PATH");
        let what = match side {
            Side::C => "the C client".to_owned(),
            Side::Rust => format!("the Rust client ({})", mode.arg()),
        };
        let out = run_with_timeout(&mut cmd, RUN_TIMEOUT).map_err(|e| format!("{what}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "{what} failed ({}):\n{stdout}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        parse_report(&stdout, count).map_err(|e| format!("{what}: {e}"))
    }
}

/// Set (to anything) for a Rust client that checks the first reply's NodeInfo: a switch.
const CHECK_NODE_ENV: &str = "UMAD_XTASK_CHECK_NODE";

/// What a client measured: the wall time of its timed loop, the CPU time its main thread and
/// its whole process spent in it, and (the Rust client) the heap allocations it made in it
/// (`None` when it could not tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Report {
    wall: Duration,
    cpu: Option<Duration>,
    proc_cpu: Option<Duration>,
    allocs: Option<u64>,
}

/// `elapsed_ns=N round_trips=COUNT cpu_ns=M [proc_cpu_ns=P] [allocs=A]` → the report, after
/// checking COUNT (a negative or missing figure is unknown).
fn parse_report(out: &str, count: usize) -> Result<Report, String> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("elapsed_ns="))
        .ok_or_else(|| format!("no elapsed_ns= line in its output {out:?}"))?;
    let mut ns = None;
    let mut trips = None;
    let mut rep = Report::default();
    let nanos = |v: &str| v.parse::<u64>().ok().map(Duration::from_nanos);
    for field in line.split_whitespace() {
        match field.split_once('=') {
            Some(("elapsed_ns", v)) => ns = v.parse::<u64>().ok(),
            Some(("round_trips", v)) => trips = v.parse::<usize>().ok(),
            Some(("cpu_ns", v)) => rep.cpu = nanos(v),
            Some(("proc_cpu_ns", v)) => rep.proc_cpu = nanos(v),
            Some(("allocs", v)) => rep.allocs = v.parse::<u64>().ok(),
            _ => {}
        }
    }
    match (ns, trips) {
        (Some(ns), Some(t)) if t == count => Ok(Report {
            wall: Duration::from_nanos(ns),
            ..rep
        }),
        _ => Err(format!("bad report {line:?} (wanted {count} round trips)")),
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return Err(format!("not hex: {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| format!("not hex: {s:?}")))
        .collect()
}

/// The Rust client: `bench-roundtrip-child MODE WINDOW WARMUP COUNT MAD_HEX` (run under
/// umad2sim by [`run`]); prints `elapsed_ns=N round_trips=COUNT cpu_ns=M proc_cpu_ns=P` as
/// the C program does, and `allocs=A`, the heap allocations of the timed loop.
pub fn child(args: &[String]) -> Result<(), String> {
    let [mode, window, warmup, count, hex] = args else {
        return Err(format!(
            "usage: {CHILD_COMMAND} MODE WINDOW WARMUP COUNT MAD_HEX, got {args:?}"
        ));
    };
    let mode = Mode::from_arg(mode).ok_or_else(|| format!("unknown mode {mode:?}"))?;
    let num = |s: &String| {
        s.parse::<usize>()
            .map_err(|_| format!("not a count: {s:?}"))
    };
    let (window, warmup, count) = (num(window)?.max(1), num(warmup)?, num(count)?);
    let request = from_hex(hex)?;
    if request.len() < 24 {
        return Err("the request is shorter than a MAD header".into());
    }
    let fail = |e: umad::Error| e.to_string();
    // The kernel transport by construction (UMAD_IBSIM plays no part in open_kernel).
    let port = Port::open_kernel(&Devices::new(), None, 0).map_err(fail)?;
    if std::env::var_os(CHECK_NODE_ENV).is_some() {
        check_node(&port, &request)?;
    }
    let elapsed = if mode == Mode::Rpc {
        let rpc = Rpc::with_window(port, Window::of(window));
        let req = Request::new(request, MadAddr::directed_route())
            .timeout(Duration::from_millis(TIMEOUT_MS.into()))
            .retries(RETRIES);
        rpc_run(&rpc, &req, window, warmup)?;
        let before = Before::now();
        rpc_run(&rpc, &req, window, count)?;
        before.measured()
    } else {
        let agent = port
            .register(&AgentSpec::new(request[1], request[2]))
            .map_err(fail)?;
        let mut client = RustClient {
            port,
            agent,
            request,
            tid: 0,
            addr: MadAddr::directed_route(),
        };
        client.run(mode, window, warmup)?;
        let before = Before::now();
        client.run(mode, window, count)?;
        before.measured()
    };
    let ns = |d: Option<Duration>| d.map_or(-1, |d| d.as_nanos() as i64);
    println!(
        "elapsed_ns={} round_trips={count} cpu_ns={} proc_cpu_ns={} allocs={}",
        elapsed.wall.as_nanos(),
        ns(elapsed.cpu),
        ns(elapsed.proc_cpu),
        elapsed.allocs.unwrap_or(0),
    );
    Ok(())
}

/// The clocks and counters at the start of a timed loop.
struct Before {
    thread: Option<Duration>,
    process: Option<Duration>,
    allocs: u64,
    started: Instant,
}

impl Before {
    fn now() -> Before {
        let (thread, process, allocs) = (
            thread_cpu(),
            ibsim_harness::self_cpu(),
            ibsim_harness::allocations(),
        );
        Before {
            thread,
            process,
            allocs,
            started: Instant::now(),
        }
    }

    /// What the loop since [`Before::now`] took.
    fn measured(self) -> Report {
        let wall = self.started.elapsed();
        let (allocs, process, thread) = (
            ibsim_harness::allocations(),
            ibsim_harness::self_cpu(),
            thread_cpu(),
        );
        let since =
            |a: Option<Duration>, b: Option<Duration>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        Report {
            wall,
            cpu: since(self.thread, thread),
            proc_cpu: since(self.process, process),
            allocs: Some(allocs - self.allocs),
        }
    }
}

/// The CPU time of the calling thread so far (the first field of
/// `/proc/thread-self/schedstat`, as the C program reads it).
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// `count` round trips through the engine: `Rpc::call` one at a time for a window of 1,
/// else `window` submitted and one more after each completion (the C loop's shape).
fn rpc_run(rpc: &Rpc, req: &Request, window: usize, count: usize) -> Result<(), String> {
    // Buffers are given back as a program that cares does it (no allocation per MAD): each
    // completion's request is the next request, its response's MAD goes back to the port.
    let settle = |c: Completion| -> Result<Request, String> {
        let Completion {
            request, outcome, ..
        } = c;
        match outcome {
            Outcome::Response(r) => {
                check_mad(&r.mad)?;
                rpc.port().recycle(r.mad);
                Ok(request)
            }
            other => Err(format!("a request ended with {other:?}")),
        }
    };
    if window == 1 {
        let mut next = req.clone();
        for _ in 0..count {
            next = settle(rpc.call(next).map_err(|e| e.to_string())?)?;
        }
        return Ok(());
    }
    let mut sent = 0;
    while sent < count.min(window) {
        rpc.submit(req.clone()).map_err(|e| e.to_string())?;
        sent += 1;
    }
    let mut done = 0;
    while let Some(c) = rpc.next(Some(RECV_WAIT)).map_err(|e| e.to_string())? {
        let again = settle(c)?;
        done += 1;
        if sent < count {
            rpc.submit(again).map_err(|e| e.to_string())?;
            sent += 1;
        }
    }
    if done != count {
        return Err(format!(
            "{done} of {count} requests completed within {RECV_WAIT:?} each"
        ));
    }
    Ok(())
}

/// One transaction whose reply must be a switch's NodeInfo (the end of [`PATH`]).
fn check_node(port: &Port, request: &[u8]) -> Result<(), String> {
    let fail = |e: umad::Error| e.to_string();
    let agent = port
        .register(&AgentSpec::new(request[1], request[2]))
        .map_err(fail)?;
    let r = port
        .transact(agent, request, &MadAddr::directed_route(), TIMEOUT_MS, 2)
        .map_err(fail)?;
    port.unregister(agent).map_err(fail)?;
    check_reply(&r)?;
    let smp = Smp::new_checked(&r.mad[..]).map_err(|e| e.to_string())?;
    let info = NodeInfo::parse(smp.data()).map_err(|e| e.to_string())?;
    if info.node_type != NodeType::Switch {
        return Err(format!(
            "the route {PATH} ends at a {}, not at a switch: is this fabrics/example.net?",
            info.node_type
        ));
    }
    Ok(())
}

/// The Rust client's state: its port, agent and request buffer.
struct RustClient {
    port: Port,
    agent: umad::AgentId,
    request: Vec<u8>,
    tid: u32,
    addr: MadAddr,
}

impl RustClient {
    /// Gives the request the next TID (as the C program does: one buffer, a new TID).
    fn next_tid(&mut self) {
        self.tid = self.tid.wrapping_add(1);
        Mad::new_unchecked(&mut self.request[..]).set_tid(u64::from(self.tid));
    }

    fn send(&mut self) -> Result<(), String> {
        self.next_tid();
        self.port
            .send(self.agent, &self.request, &self.addr, TIMEOUT_MS, RETRIES)
            .map_err(|e| e.to_string())
    }

    fn run(&mut self, mode: Mode, window: usize, count: usize) -> Result<(), String> {
        match mode {
            // Both receive into one buffer, as the C loop does (no allocation per MAD).
            Mode::Transact => {
                let mut r = Received::default();
                for _ in 0..count {
                    self.next_tid();
                    self.port
                        .transact_into(
                            self.agent,
                            &self.request,
                            &self.addr,
                            TIMEOUT_MS,
                            RETRIES,
                            &mut r,
                        )
                        .map_err(|e| e.to_string())?;
                    check_reply(&r)?;
                }
            }
            Mode::SendRecv => {
                let mut sent = 0;
                while sent < count.min(window) {
                    self.send()?;
                    sent += 1;
                }
                let mut r = Received::default();
                for _ in 0..count {
                    let got = self
                        .port
                        .recv_into(Some(RECV_WAIT), usize::MAX, &mut r)
                        .map_err(|e| e.to_string())?;
                    if !got {
                        return Err(format!("no reply within {RECV_WAIT:?}"));
                    }
                    check_reply(&r)?;
                    if sent < count {
                        self.send()?;
                        sent += 1;
                    }
                }
            }
            Mode::Rpc => return Err("the engine runs in rpc_run".into()),
        }
        Ok(())
    }
}

/// A reply must be a successful GetResp, not a timeout report.
fn check_reply(r: &Received) -> Result<(), String> {
    if r.status != 0 {
        return Err(format!(
            "a request was not answered (transport status {})",
            r.status
        ));
    }
    check_mad(&r.mad)
}

/// A reply MAD must be a successful GetResp.
fn check_mad(mad: &[u8]) -> Result<(), String> {
    let smp = Smp::new_checked(mad).map_err(|e| format!("reply: {e}"))?;
    if smp.method() != Method::GetResp || !smp.status().is_success() {
        return Err(format!(
            "reply: method {:?}, status {:#06x}",
            smp.method(),
            smp.status().raw()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports() {
        assert_eq!(
            parse_report("x\nelapsed_ns=2500000 round_trips=10 cpu_ns=700\n", 10),
            Ok(Report {
                wall: Duration::from_micros(2500),
                cpu: Some(Duration::from_nanos(700)),
                ..Report::default()
            })
        );
        assert_eq!(
            parse_report("elapsed_ns=5 round_trips=10 cpu_ns=-1\n", 10),
            Ok(Report {
                wall: Duration::from_nanos(5),
                ..Report::default()
            })
        );
        assert_eq!(
            parse_report(
                "elapsed_ns=5 round_trips=10 cpu_ns=3 proc_cpu_ns=4 allocs=20\n",
                10
            ),
            Ok(Report {
                wall: Duration::from_nanos(5),
                cpu: Some(Duration::from_nanos(3)),
                proc_cpu: Some(Duration::from_nanos(4)),
                allocs: Some(20),
            })
        );
        assert!(parse_report("elapsed_ns=5 round_trips=9\n", 10).is_err());
        assert!(parse_report("elapsed_ns=x round_trips=10\n", 10).is_err());
        assert!(parse_report("", 10).is_err());
    }

    #[test]
    fn hex_round_trip() {
        let mad = Smp::dr_request(Method::Get, 0x11, 0, 7, &DrPath::parse(PATH).unwrap());
        assert_eq!(from_hex(&to_hex(&mad)), Ok(mad.to_vec()));
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
        assert!(from_hex("é0").is_err());
    }

    #[test]
    fn table_rows() {
        let rep = |ms: u64, cpu_us: Option<u64>| Report {
            wall: Duration::from_millis(ms),
            cpu: cpu_us.map(Duration::from_micros),
            ..Report::default()
        };
        let c = [rep(10, Some(500)), rep(20, Some(700)), rep(30, Some(900))];
        let rust = [rep(10, Some(400)), rep(5, Some(100)), rep(8, Some(300))];
        let t = table_row(100, &c, &rust);
        assert_eq!(t.c_rate, 5_000.0);
        assert_eq!(t.rust_rate, 12_500.0);
        assert_eq!(t.ratio, 2.5);
        assert_eq!(t.c_cpu_us, Some(7.0));
        assert_eq!(t.rust_cpu_us, Some(3.0));
        let unknown = [rep(10, None)];
        assert_eq!(table_row(100, &unknown, &rust).c_cpu_us, None);
    }

    #[test]
    fn cost_rows() {
        let rep = |ms: u64, proc_us: Option<u64>, allocs: Option<u64>| Report {
            wall: Duration::from_millis(ms),
            proc_cpu: proc_us.map(Duration::from_micros),
            allocs,
            ..Report::default()
        };
        let c = [
            rep(10, Some(500), None),
            rep(20, Some(700), None),
            rep(30, Some(900), None),
        ];
        let rust = [
            rep(10, Some(400), Some(300)),
            rep(5, Some(100), Some(100)),
            rep(8, Some(300), Some(200)),
        ];
        let k = cost_row(100, &c, &rust);
        assert_eq!(k.c_cpu_us, Some(7.0));
        assert_eq!(k.rust_cpu_us, Some(3.0));
        assert_eq!(k.wall_ratio, 0.4);
        assert_eq!(k.allocs, Some(2.0));
        assert_eq!(cost_row(100, &c, &c).allocs, None);
        assert_eq!(cost_row(100, &[rep(1, None, None)], &rust).c_cpu_us, None);
    }

    #[test]
    fn modes() {
        for m in [Mode::Transact, Mode::SendRecv, Mode::Rpc] {
            assert_eq!(Mode::from_arg(m.arg()), Some(m));
        }
        assert_eq!(Mode::from_arg("x"), None);
    }
}
