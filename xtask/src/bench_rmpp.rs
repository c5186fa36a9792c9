//! `cargo xtask bench-rmpp [--runs N] [--no-pin]`: how fast RMPP carries a big SA table
//! through ibsim, next to the raw MAD rate ibsim sustains in the same run.
//!
//! On the 1052-node fat tree (`fabrics/fattree-1008.net`) a resident opensm on our drop-in
//! `libibumad.so.3` over the native ibsim transport (`UMAD_IBSIM`, no LD_PRELOAD) brings the
//! fabric up and serves the SA from [`SM_NODE`]. Then, interleaved, `N` runs each of:
//!
//! * (a) C `saquery` (all NodeRecords) on the drop-in from [`CLIENT_NODE`], stdout to
//!   `/dev/null`: wall time of the process;
//! * (b) a Rust SA GetTable of all NodeRecords through `umad::Port` (native transport) from
//!   the same node: wall time of the transaction (request sent → table reassembled);
//! * (c) directed-route NodeInfo SMPs from a `umad::Port` on the same node to the SM's node
//!   (through as many switches as the table crosses), [`WINDOW`] in flight: round trips/s.
//!
//! For (a) and (b) it prints the median wall time, the RMPP segments per second (segments =
//! ceil(SA payload / 200), the payload computed from the answer) and that rate ÷ the median
//! raw MAD rate of (c); the goal is ≥ [`GOAL`]. Speed never fails the command; a wrong
//! answer does: an untimed first saquery must list every node of the netfile (the timed ones
//! are only checked for their exit status), every Rust table must be whole.
//!
//! The Rust clients run in this process, so the command re-runs itself as an optimized build
//! first (`cargo xtask` is a dev build). Pinning and the options are those of
//! `bench-libibumad` ([`crate::bench`]).

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibmad::sa::{NodeRecord, SaMad, SaRecord, SA_DATA_LEN};
use ibmad::NodeType;
use ibsim_harness::{
    fabrics_dir, find_tool, run_with_timeout, status_with_timeout, tail, Ibsim, Need, SmDaemon,
};
use umad::carrier::ibsim::{ENV_NODE, ENV_SOCKET};
use umad::{AgentId, AgentSpec, IbsimOptions, MadAddr, Port};

use crate::bench::{self, Opts};
use crate::raw_smps::RawSmps;
use crate::stats::{goal_met, median, met, ms, per_second, sorted_ms, Goal};

const COMMAND: &str = "bench-rmpp";
const FABRIC: &str = "fattree-1008.net";
/// Where opensm runs (the netfile's first node, leaf 1).
const SM_NODE: &str = "H-host0001";
/// Where every measured client runs (the last host, on leaf 36: the table crosses leaf 1, a
/// spine and leaf 36).
const CLIENT_NODE: &str = "H-host1008";
/// The directed route from [`CLIENT_NODE`] to [`SM_NODE`]: out of the HCA's port 1, leaf 36's
/// port 29 (to spine 1), spine 1's port 1 (to leaf 1), leaf 1's port 1 (to host 1); see the
/// layout in `xtask/src/fattree.rs`.
const ROUTE_TO_SM: [u8; 4] = [1, 29, 1, 1];
/// MADs in flight in (c), the RMPP window of the MAD layer's receiver.
const WINDOW: usize = 64;
/// SMPs per run of (c).
const RAW_MADS: usize = 20_000;
/// Time limit of one saquery run.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Transaction timeout and retries of the Rust GetTable (saquery's default timeout is 1 s).
const SA_TIMEOUT_MS: u32 = 1000;
const SA_RETRIES: u32 = 2;
/// segments/s ÷ raw MADs/s to reach.
const GOAL: f64 = 0.8;

/// SA class and class version.
const SA_CLASS: u8 = 0x03;

/// One contender of the interleaved runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    /// (a) C saquery on the drop-in.
    Saquery,
    /// (b) Rust GetTable through `umad::Port`.
    RustTable,
    /// (c) pipelined DR NodeInfo SMPs.
    RawSmps,
}

const CONTENDERS: [Contender; 3] = [Contender::Saquery, Contender::RustTable, Contender::RawSmps];

/// Runs the benchmark. `Err` carries a message for the user.
pub fn run(args: &[String]) -> Result<(), String> {
    let Opts { runs, pin } = bench::parse_opts(args, COMMAND)?;
    if let Some(outcome) = bench::rerun_optimized(COMMAND, args) {
        return outcome;
    }
    let lib_dir = bench::our_lib_dir()?;
    crate::packages::ensure(&[Need::Ibsim], &format!("cargo xtask {COMMAND}"))?;
    let saquery = find_tool("saquery").ok_or(
        "saquery not found although infiniband-diags counts as installed: install infiniband-diags",
    )?;
    let placement = if pin {
        format!(
            "ibsim, opensm and clients pinned to CPU {}",
            bench::pin_to_one_cpu()?
        )
    } else {
        "unpinned".to_owned()
    };
    let net = fabrics_dir().join(FABRIC);
    let nodes = std::fs::read_to_string(&net)
        .map_err(|e| format!("{}: {e}", net.display()))
        .and_then(|text| netfile_descriptions(&text))?;

    // Drop order (reverse of this): the clients, then opensm, then ibsim.
    let sim = Ibsim::start(&net).map_err(|e| format!("starting ibsim on {FABRIC}: {e}"))?;
    let sm = start_sm(&sim, &lib_dir)?;
    let scratch = sim
        .new_scratch_dir("saquery")
        .map_err(|e| format!("scratch directory: {e}"))?;
    let c_client = CSaquery {
        program: saquery,
        lib_dir,
        socket: sim.socket_name().to_owned(),
        scratch,
    };
    let mut table = RustTable::open(&sim)?;
    let mut raw = RawSmps::open(
        &IbsimOptions::new(sim.socket_name()).node(CLIENT_NODE),
        &ROUTE_TO_SM,
        WINDOW,
    )?;

    // Untimed warm-up of each, checking the answers.
    let c_records = c_client.checked_run(&nodes, &sm)?;
    let (_, payload) = table.get_checked(&nodes)?;
    match raw.node_type()? {
        NodeType::ChannelAdapter => {}
        other => {
            return Err(format!(
                "the directed route {ROUTE_TO_SM:?} from {CLIENT_NODE} ends at a {other}, not \
                 at a CA: is {FABRIC} the 36-leaf fat tree?"
            ))
        }
    }
    raw.run(WINDOW)?;
    let c_payload = c_records * record_bytes();
    if c_payload != payload {
        return Err(format!(
            "saquery printed {c_records} NodeRecords ({c_payload} bytes) but the Rust GetTable \
             got {payload} bytes"
        ));
    }
    let segments = sa_segments(payload);

    let mut times: [Vec<Duration>; 3] = Default::default();
    for i in 0..runs {
        // Rotate the order, so drift and cache effects hit every contender alike.
        for k in 0..CONTENDERS.len() {
            let which = CONTENDERS[(i + k) % CONTENDERS.len()];
            let t = match which {
                Contender::Saquery => c_client.timed_run(&sm)?,
                Contender::RustTable => table.get_checked(&nodes)?.0,
                Contender::RawSmps => raw.run(RAW_MADS)?,
            };
            times[which as usize].push(t);
        }
    }
    drop((raw, table, sm));

    let [a, b, c] = times;
    for (label, t) in [
        ("(a) saquery", &a),
        ("(b) Rust GetTable", &b),
        ("(c) raw SMPs", &c),
    ] {
        println!("  {label:18} runs (ms, sorted): {}", sorted_ms(t));
    }
    let raw_rate = per_second(RAW_MADS as u64, median(&c));
    println!(
        "(c) raw MAD rate: {:.1}k MADs/s ({RAW_MADS} directed-route NodeInfo round trips per \
         run, {WINDOW} in flight, {CLIENT_NODE} -> {SM_NODE}, {} hops)",
        raw_rate / 1e3,
        ROUTE_TO_SM.len()
    );
    println!(
        "NodeRecord table: {} records, {payload} bytes of SA data = {segments} RMPP segments",
        nodes.len()
    );
    let mut verdicts = Vec::new();
    for (tag, label, t) in [
        ("(a)", "C saquery on the drop-in (process wall time)", &a),
        ("(b)", "Rust GetTable via umad::Port (transaction)", &b),
    ] {
        let wall = median(t);
        let rate = per_second(segments, wall);
        let ratio = rate / raw_rate;
        println!(
            "{tag} {label}: {:.2} ms, {:.1}k segments/s, {ratio:.2} of the raw MAD rate",
            ms(wall),
            rate / 1e3
        );
        verdicts.push(format!(
            "{tag} {}",
            met(goal_met(ratio, Goal::AtLeast(GOAL)))
        ));
    }
    println!(
        "goal segments/s ÷ raw MAD rate ≥ {GOAL:.2}: {} (medians of {runs} interleaved runs \
         each, {placement})",
        verdicts.join(", ")
    );
    Ok(())
}

/// Starts the resident opensm on [`SM_NODE`], on our library over the native ibsim
/// transport; returns once it logs SUBNET UP.
fn start_sm<'a>(sim: &'a Ibsim, lib_dir: &Path) -> Result<SmDaemon<'a>, String> {
    let socket = sim.socket_name().to_owned();
    let lib_dir = lib_dir.to_owned();
    sim.opensm()
        .configure(move |cmd| {
            on_native_ibsim(cmd, &socket, &lib_dir, SM_NODE);
            Ok(())
        })
        .start_daemon()
        .map_err(|e| {
            format!(
                "opensm on our libibumad over UMAD_IBSIM ({SM_NODE}) did not bring {FABRIC} up: {e}"
            )
        })
}

/// Makes `cmd` use our library over the native ibsim transport at `node`, without umad2sim.
fn on_native_ibsim(cmd: &mut Command, socket: &str, lib_dir: &Path, node: &str) {
    cmd.env_remove("LD_PRELOAD")
        .env("LD_LIBRARY_PATH", lib_dir)
        .env(ENV_SOCKET, socket)
        .env(ENV_NODE, node);
}

/// (a): the C `saquery` on the drop-in at [`CLIENT_NODE`].
struct CSaquery {
    program: PathBuf,
    lib_dir: PathBuf,
    socket: String,
    /// Its cwd, also holding its stderr of the last timed run.
    scratch: PathBuf,
}

impl CSaquery {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        on_native_ibsim(&mut cmd, &self.socket, &self.lib_dir, CLIENT_NODE);
        cmd.current_dir(&self.scratch).stdin(Stdio::null());
        cmd
    }

    /// A run with its output captured and checked against the netfile's nodes; returns the
    /// number of NodeRecords printed.
    fn checked_run(&self, nodes: &BTreeSet<String>, sm: &SmDaemon<'_>) -> Result<usize, String> {
        let out = run_with_timeout(&mut self.command(), RUN_TIMEOUT)
            .map_err(|e| format!("saquery: {e}"))?;
        if !out.status.success() {
            return Err(self.failure(
                &out.status.to_string(),
                &String::from_utf8_lossy(&out.stderr),
                sm,
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        check_nodes(saquery_descriptions(&text), nodes).map_err(|e| format!("saquery: {e}"))
    }

    /// A run with stdout to `/dev/null`: its wall time (checked for its exit status only).
    fn timed_run(&self, sm: &SmDaemon<'_>) -> Result<Duration, String> {
        let stderr_path = self.scratch.join("saquery.err");
        let stderr = File::create(&stderr_path).map_err(|e| format!("saquery stderr: {e}"))?;
        let mut cmd = self.command();
        cmd.stdout(Stdio::null()).stderr(stderr);
        let started = Instant::now();
        let status = status_with_timeout(&mut cmd, RUN_TIMEOUT);
        let elapsed = started.elapsed();
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        match status {
            Ok(s) if s.success() => Ok(elapsed),
            Ok(s) => Err(self.failure(&s.to_string(), &stderr, sm)),
            Err(e) => Err(self.failure(&e.to_string(), &stderr, sm)),
        }
    }

    fn failure(&self, what: &str, stderr: &str, sm: &SmDaemon<'_>) -> String {
        format!(
            "saquery on our libibumad over UMAD_IBSIM ({CLIENT_NODE}) failed ({what}):\n{}\n\
             --- opensm.log (tail) ---\n{}",
            stderr.trim_end(),
            tail(&sm.log(), 20)
        )
    }
}

/// (b): SA GetTable(NodeRecord) through a `umad::Port` at [`CLIENT_NODE`].
struct RustTable {
    port: Port,
    agent: AgentId,
    sa: MadAddr,
    tid: u64,
}

impl RustTable {
    fn open(sim: &Ibsim) -> Result<RustTable, String> {
        let fail = |e: umad::Error| format!("Rust SA client on {CLIENT_NODE}: {e}");
        let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node(CLIENT_NODE))
            .map_err(fail)?;
        let agent = port
            .register(&AgentSpec::new(SA_CLASS, 2).rmpp_version(1))
            .map_err(fail)?;
        let ca = port.ca().map_err(fail)?;
        let sm_lid = ca
            .ports
            .first()
            .map(|p| p.sm_lid)
            .and_then(|l| u16::try_from(l).ok())
            .filter(|l| *l != 0)
            .ok_or_else(|| format!("{CLIENT_NODE} has no SM LID although opensm is up"))?;
        Ok(RustTable {
            port,
            agent,
            sa: MadAddr::gsi(sm_lid),
            tid: 0,
        })
    }

    /// One GetTable: the time from sending the request to the whole table, and the table's
    /// SA payload in bytes, after checking that it holds every node.
    fn get_checked(&mut self, nodes: &BTreeSet<String>) -> Result<(Duration, usize), String> {
        self.tid += 1;
        let req = SaMad::get_table_request(&NodeRecord::default(), 0, self.tid);
        let started = Instant::now();
        let r = self
            .port
            .transact(self.agent, &req, &self.sa, SA_TIMEOUT_MS, SA_RETRIES)
            .map_err(|e| format!("Rust GetTable(NodeRecord): {e}"))?;
        let elapsed = started.elapsed();
        if r.status != 0 {
            return Err(format!(
                "Rust GetTable(NodeRecord): no answer (transport status {})",
                r.status
            ));
        }
        let sa = SaMad::new_checked(&r.mad[..]).map_err(|e| format!("GetTableResp: {e}"))?;
        if !sa.status().is_success() || sa.attr_offset() != NodeRecord::ATTR_OFFSET {
            return Err(format!(
                "GetTableResp: status {:#06x}, AttributeOffset {} (want 0 and {})",
                sa.status().raw(),
                sa.attr_offset(),
                NodeRecord::ATTR_OFFSET
            ));
        }
        let payload = sa.data().len();
        if payload % record_bytes() != 0 {
            return Err(format!(
                "GetTableResp: {payload} bytes of records are not whole {}-byte NodeRecords",
                record_bytes()
            ));
        }
        let descriptions = sa
            .parse_records::<NodeRecord>()
            .map(|r| r.map(|r| r.node_description.as_str().into_owned()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("GetTableResp: {e}"))?;
        check_nodes(descriptions, nodes).map_err(|e| format!("Rust GetTable: {e}"))?;
        Ok((elapsed, payload))
    }
}

/// Bytes of one NodeRecord in a GetTableResp (padded to 8 bytes).
fn record_bytes() -> usize {
    usize::from(NodeRecord::ATTR_OFFSET) * 8
}

/// RMPP segments of an SA answer with `payload` bytes of SA data: 200 bytes each, and at
/// least one (an empty table is one segment).
fn sa_segments(payload: usize) -> u64 {
    payload.div_ceil(SA_DATA_LEN).max(1) as u64
}

/// The NodeDescription of every node of a netfile: the quoted text after `#` on its
/// `Hca`/`Ca`/`Switch` line (`Hca 1 "H-host0001" # "host0001 HCA-1"`). They must be unique
/// for the checks to mean "every node".
fn netfile_descriptions(net: &str) -> Result<BTreeSet<String>, String> {
    let mut set = BTreeSet::new();
    for (n, line) in net.lines().enumerate() {
        let kind = line.split_whitespace().next().unwrap_or_default();
        if !matches!(kind, "Hca" | "Ca" | "Switch") {
            continue;
        }
        let desc = line
            .split_once('#')
            .and_then(|(_, c)| c.trim_start().strip_prefix('"'))
            .and_then(|c| c.split_once('"'))
            .map(|(d, _)| d.to_owned())
            .ok_or_else(|| format!("netfile line {}: no \"description\" after #", n + 1))?;
        if !set.insert(desc.clone()) {
            return Err(format!(
                "netfile line {}: description {desc:?} is not unique",
                n + 1
            ));
        }
    }
    if set.is_empty() {
        return Err("netfile has no nodes".into());
    }
    Ok(set)
}

/// The NodeDescriptions in saquery's NodeRecord dump (`NodeDescription.........text`).
fn saquery_descriptions(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix("NodeDescription"))
        .map(|rest| rest.trim_start_matches('.').trim_end().to_owned())
        .collect()
}

/// Checks that `got` names each of `want` exactly once; returns the count.
fn check_nodes(got: Vec<String>, want: &BTreeSet<String>) -> Result<usize, String> {
    let n = got.len();
    let set: BTreeSet<String> = got.into_iter().collect();
    if n == want.len() && set == *want {
        return Ok(n);
    }
    let missing: Vec<&String> = want.difference(&set).take(3).collect();
    let extra: Vec<&String> = set.difference(want).take(3).collect();
    Err(format!(
        "{n} NodeRecords ({} distinct) for the {} nodes of the netfile; missing e.g. {missing:?}, \
         unexpected e.g. {extra:?}",
        set.len(),
        want.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_of_sa_payloads() {
        assert_eq!(sa_segments(0), 1);
        assert_eq!(sa_segments(1), 1);
        assert_eq!(sa_segments(200), 1);
        assert_eq!(sa_segments(201), 2);
        // The 1052-node NodeRecord table: 1052 × 112 bytes.
        assert_eq!(record_bytes(), 112);
        assert_eq!(sa_segments(1052 * 112), 590);
    }

    #[test]
    fn rates() {
        assert_eq!(per_second(590, Duration::from_millis(5)), 118_000.0);
        assert_eq!(per_second(0, Duration::from_secs(1)), 0.0);
        assert!(per_second(1, Duration::ZERO).is_finite());
        assert_eq!(ms(Duration::from_micros(2500)), 2.5);
    }

    #[test]
    fn netfile_nodes() {
        let net = "# comment \"x\"\n\
                   Hca\t1 \"H-host0001\"\t\t# \"host0001 HCA-1\"\n\
                   [1]\t\"S-leaf01\"[1]\t\t# lid 0 lmc 0 \"leaf01\" lid 0 4xQDR\n\n\
                   Switch\t36 \"S-leaf01\"\t\t# \"leaf01\" enhanced port 0 lid 0 lmc 0\n";
        let want: BTreeSet<String> = ["host0001 HCA-1", "leaf01"].map(String::from).into();
        assert_eq!(netfile_descriptions(net), Ok(want));
        assert!(netfile_descriptions("Hca 1 \"a\"\n").is_err());
        assert!(netfile_descriptions("Hca 1 \"a\" # \"d\"\nSwitch 8 \"b\" # \"d\"\n").is_err());
        assert!(netfile_descriptions("# nothing\n").is_err());
    }

    #[test]
    fn the_fattree_has_1052_distinct_nodes() {
        let net = std::fs::read_to_string(fabrics_dir().join(FABRIC)).unwrap();
        assert_eq!(netfile_descriptions(&net).unwrap().len(), 1052);
    }

    #[test]
    fn saquery_dump_and_node_check() {
        let out = "NodeRecord dump:\n\t\tlid.....................0x1\n\
                   \t\tNodeDescription.........host0001 HCA-1\n\
                   NodeRecord dump:\n\t\tNodeDescription.........leaf01\n";
        let got = saquery_descriptions(out);
        assert_eq!(got, ["host0001 HCA-1", "leaf01"]);
        let want: BTreeSet<String> = ["host0001 HCA-1", "leaf01"].map(String::from).into();
        assert_eq!(check_nodes(got.clone(), &want), Ok(2));
        assert!(check_nodes(got[..1].to_vec(), &want).is_err());
        let twice = vec![got[0].clone(), got[0].clone()];
        assert!(check_nodes(twice, &want)
            .unwrap_err()
            .contains("missing e.g. [\"leaf01\"]"));
    }
}
