//! `umad ibqueryerrors`: discover the fabric, read every port's error counters and report
//! those beyond the thresholds, as infiniband-diags' `ibqueryerrors` (same options, text
//! and summary, exit status 1 when a port has errors), or `--json`
//! (docs/json/ibqueryerrors-v1.schema.json).
//!
//! Unlike C, which queries the PMAs one at a time, every ClassPortInfo and every
//! PortCounters(Extended) query of a sweep is pipelined over the rpc window; the text is
//! assembled afterwards in C's order (clears are sent after all reads).
//!
//! Options: `-s` suppress counters, `-c` suppress PortRcvSwitchRelayErrors, `-r` link info
//! of ports with errors, `--data`, `--counters`, `--details`, `--switch`/`--ca`/`--router`,
//! `-k`/`-K` clear error/data counters, `--threshold-file`, `--skip-sl`, `-G`/`-S` and `-D`
//! one node, `-o` SMPs in flight for the discovery, `--node-name-map`, `--load-cache` the
//! fabric from an ibnetdisc cache file (C's or `umad ibnetdiscover --cache`'s; our text and
//! JSON too) instead of discovering it, the counters still read live, as C.
//!
//! The SL to each destination (unless `--skip-sl`) comes from one SA PathRecord GetTable
//! from the local port (C's `path_record_query` through `sa_query`: no retries, 3 s for the
//! whole RMPP answer); without it (no SA, an answer cut short or never complete) C's
//! `Query SA failed: ...; sa call path_query failed` goes to stderr and the tool ends with
//! status 0 and nothing on stdout, as C. `-G`/`-S` resolve the GUID with a PathRecord (its
//! SL kept) and discover from that LID with one hop, as libibnetdisc does (see
//! `iblinkinfo`); `-D` from the route. `tests/ibsim_sa_paths.rs` compares all of it with C
//! against opensm answering whole tables (both on the drop-in libibumad), and the failures.
//!
//! Differences from C: C's `ibwarn: ... sa_query: umad_recv failed: ...` line comes when
//! its `umad_recv` times out before the send reports its own timeout (C on the drop-in,
//! whose RMPP receive waits in `umad_recv`); ours only when the request's user-space
//! deadline ended it: the native transports report an incomplete answer as the send's
//! timeout.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::Node;
use ibmad::attr::id;
use ibmad::dump::{self, perf as tables, Field};
use ibmad::perf::{attr_id, cap, cap2};
use ibmad::sa::path_record::comp;
use ibmad::sa::PathRecord;
use ibmad::{Gid, Method, NodeType};
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtoull, ibexit, ibwarn, Dest, DrRoute, SmpPort};
use crate::iblinkinfo::{self, Links, Show, Start};
use crate::perfquery::{Pma, PmaCaps, ALL_PORTS};
use crate::saquery::Sa;

/// libibmad's `portid2str` of a PMA's LID-routed portid (`Lid 3`; LID 0, before an SM ran:
/// `DR path slid 0; dlid 0; 0`).
fn portid(lid: u16) -> String {
    Dest::lid(lid).to_c_string()
}

/// C's `DEFAULT_HALF_WORLD_PR_TIMEOUT`: the time the SL PathRecord table has.
const DEFAULT_HALF_WORLD_PR_TIMEOUT_MS: u64 = 3000;

/// The default threshold file.
pub const DEFAULT_THRESHOLD_FILE: &str = "/etc/infiniband-diags/error_thresholds";

/// The clap command.
pub fn command() -> Command {
    let flag = |id: &'static str, help: &'static str| {
        Arg::new(id).long(id).action(ArgAction::SetTrue).help(help)
    };
    let value = |id: &'static str, help: &'static str| Arg::new(id).long(id).num_args(1).help(help);
    let cmd = Command::new("ibqueryerrors")
        .about("Report port error counters beyond thresholds (as infiniband-diags' ibqueryerrors)")
        .override_usage("ibqueryerrors [options] ")
        .arg(
            value("suppress", "suppress errors listed")
                .short('s')
                .value_name("err1,err2,...")
                .action(ArgAction::Append),
        )
        .arg(flag("suppress-common", "suppress some of the common counters").short('c'))
        .arg(common::node_name_map_arg())
        .arg(
            value(
                "port-guid",
                "report the node containing the port specified by <port_guid>",
            )
            .short('G')
            .value_name("port_guid"),
        )
        .arg(
            Arg::new("S")
                .short('S')
                .num_args(1)
                .value_name("port_guid")
                .help("Same as \"-G\" for backward compatibility"),
        )
        .arg(
            value(
                "Direct",
                "report the node containing the port specified by <dr_path>",
            )
            .short('D')
            .value_name("dr_path"),
        )
        .arg(flag("skip-sl", "don't obtain SL to all destinations"))
        .arg(flag("report-port", "report port link information").short('r'))
        .arg(
            value(
                "threshold-file",
                "specify an alternate threshold file, default: /etc/infiniband-diags/error_thresholds",
            )
            .value_name("val"),
        )
        .arg(flag("GNDN", "(This option is obsolete and does nothing)").short('R'))
        .arg(flag("data", "include data counters for ports with errors"))
        .arg(flag("switch", "print data for switches only"))
        .arg(flag("ca", "print data for CA's only"))
        .arg(flag("router", "print data for routers only"))
        .arg(flag("details", "include transmit discard details"))
        .arg(flag("counters", "print data counters only"))
        .arg(flag("clear-errors", "Clear error counters after read").short('k'))
        .arg(flag("clear-counts", "Clear data counters after read").short('K'))
        .arg(value("load-cache", "filename of ibnetdiscover cache to load").value_name("file"))
        .arg(
            value(
                "outstanding_smps",
                "specify the number of outstanding SMP's which should be issued during the scan",
            )
            .short('o')
            .value_name("val"),
        )
        .arg(common::json_arg("ibqueryerrors"));
    common::add_common_args(cmd, "cDGKLnRrSs")
}

/// `umad ibqueryerrors`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

/// The error thresholds (by counter name; 0 when not set) and C's `Thresholds:` text
/// (`None`: no threshold file, which C prints as `(null)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thresholds {
    /// Counter name → threshold.
    pub values: HashMap<String, u64>,
    /// `Thresholds: [name = value]...`.
    pub text: Option<String>,
}

impl Thresholds {
    /// Reads a threshold file as C's `set_thresholds`: `name=value` lines (`#` comments),
    /// the names of PortCountersExtended's error counters.
    pub fn parse(text: &str) -> Thresholds {
        let mut t = Thresholds {
            values: HashMap::new(),
            text: Some("Thresholds: ".to_string()),
        };
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            let value = c_strtoull(value);
            if ERROR_COUNTERS.iter().any(|c| c.name == name) {
                t.values.insert(name.to_string(), value);
                if let Some(s) = &mut t.text {
                    s.push_str(&format!("[{name} = {value}]"));
                }
            }
        }
        t
    }

    /// Reads `path`; a missing file means no thresholds (and `(null)` in the summary).
    pub fn load(path: &str) -> Thresholds {
        match std::fs::read(path) {
            Ok(b) => Thresholds::parse(&String::from_utf8_lossy(&b)),
            Err(_) => Thresholds::default(),
        }
    }

    fn exceeds(&self, name: &str, v: u64) -> bool {
        v > self.values.get(name).copied().unwrap_or(0)
    }
}

/// One error counter: its name and where it is in PortCounters and PortCountersExtended.
#[derive(Debug, Clone, Copy)]
struct Counter {
    name: &'static str,
    pc: Field,
    ext: Field,
}

/// The error counters C checks (`IB_PC_ERR_SYM_F`..`IB_PC_VL15_DROPPED_F`, then
/// PortXmitWait), with their PortCountersExtended twins.
const ERROR_COUNTERS: &[Counter] = &{
    const fn c(name: &'static str, pc: (u16, u8), ext: u16) -> Counter {
        Counter {
            name,
            pc: Field {
                name,
                offset: pc.0,
                width: pc.1,
                fmt: dump::Fmt::Uint,
            },
            ext: Field {
                name,
                offset: ext,
                width: 64,
                fmt: dump::Fmt::Uint,
            },
        }
    }
    [
        c("SymbolErrorCounter", (32, 16), 576),
        c("LinkErrorRecoveryCounter", (48, 8), 640),
        c("LinkDownedCounter", (56, 8), 704),
        c("PortRcvErrors", (64, 16), 768),
        c("PortRcvRemotePhysicalErrors", (80, 16), 832),
        c("PortRcvSwitchRelayErrors", (96, 16), 896),
        c("PortXmitDiscards", (112, 16), 960),
        c("PortXmitConstraintErrors", (128, 8), 1024),
        c("PortRcvConstraintErrors", (136, 8), 1088),
        c("LocalLinkIntegrityErrors", (152, 4), 1152),
        c("ExcessiveBufferOverrunErrors", (156, 4), 1216),
        c("VL15Dropped", (176, 16), 1280),
        c("PortXmitWait", (320, 32), 1344),
    ]
};

/// The names `-s` accepts: PortCounters' field names (libibmad's `IB_PC_FIRST_F`..).
fn pc_field_names() -> impl Iterator<Item = &'static str> {
    tables::PORT_COUNTERS
        .iter()
        .map(|f| f.name)
        .filter(|n| *n != "QP1Dropped")
}

/// C's `conv_cnt_human_readable`, in C's single precision: the scaled value and its unit
/// (`data`: bytes counted in 4-byte words).
pub fn human(v: u64, data: bool) -> (f32, &'static str) {
    let mut tmp = v / 1024;
    let mut ui = 0usize;
    let mut div: u64 = 1;
    while tmp != 0 {
        ui += 1;
        tmp /= 1024;
        div = div.wrapping_mul(1024);
    }
    let mut val = v as f32;
    if data {
        val *= 4.0;
        if val / div as f32 > 1024.0 {
            ui += 1;
            div = div.wrapping_mul(1024);
        }
    }
    val /= div as f32;
    const DATA: [&str; 7] = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    const COUNT: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let units = if data { &DATA } else { &COUNT };
    (val, units.get(ui).copied().unwrap_or(""))
}

fn human_text(name: &str, v: u64, data: bool) -> String {
    let (val, unit) = human(v, data);
    format!(" [{name} == {v} ({:5.3}{unit})]", f64::from(val))
}

/// What each node's PMA answered.
#[derive(Default, Clone)]
struct NodeAnswers {
    caps: Option<PmaCaps>,
    /// PortCounters and PortCountersExtended by port select (0xff: all ports).
    pc: HashMap<u8, Option<Vec<u8>>>,
    pce: HashMap<u8, Option<Vec<u8>>>,
}

/// A PMA query to pipeline.
#[derive(Clone, Copy)]
enum Ask {
    Cpi,
    Pc(u8),
    Pce(u8),
}

struct Ctx<'a> {
    pma: Pma<'a>,
    links: Links<'a>,
    show: Show<'a>,
    thresholds: Thresholds,
    suppressed: Vec<&'static str>,
    only: u8,
    data: bool,
    counters_only: bool,
    details: bool,
    port_config: bool,
    clear_errors: bool,
    clear_counts: bool,
    sl: HashMap<u16, u8>,
    answers: Vec<NodeAnswers>,
    out: String,
    nodes_checked: usize,
    bad_nodes: usize,
    ports_checked: usize,
    bad_ports: usize,
    failures: usize,
    clears: Vec<(u16, u8, u16, u8, u32, String)>,
    records: Vec<Value>,
}

const PRINT_SWITCH: u8 = 1;
const PRINT_CA: u8 = 2;
const PRINT_ROUTER: u8 = 4;

fn type_bit(t: NodeType) -> u8 {
    match t {
        NodeType::Switch => PRINT_SWITCH,
        NodeType::ChannelAdapter => PRINT_CA,
        NodeType::Router => PRINT_ROUTER,
        _ => 0,
    }
}

impl Ctx<'_> {
    fn node_name(&self, node: &Node) -> String {
        self.links.name(&self.show, node)
    }

    /// Where a node's PMA is queried first: (LID, port select).
    fn node_portid(node: &Node) -> (u16, u8) {
        if node.is_switch() {
            (node.lid, 0)
        } else {
            match node.ports.iter().find(|p| p.number >= 1) {
                Some(p) => (p.lid, p.number),
                None => (0, node.num_ports.saturating_add(1)),
            }
        }
    }

    fn port_lid(node: &Node, p: u8) -> u16 {
        if node.is_switch() {
            node.lid
        } else {
            node.port(p).map_or(0, |x| x.lid)
        }
    }

    fn ext_supported(caps: PmaCaps) -> bool {
        caps.cap_mask & (cap::EXT_WIDTH_SUPPORTED | cap::EXT_WIDTH_NOIETF_SUPPORTED) != 0
    }

    /// Runs `asks` (node index, LID, query) pipelined and files the answers.
    fn run_asks(&mut self, asks: Vec<(usize, u16, Ask)>) {
        let reqs: Vec<_> = asks
            .iter()
            .map(|&(_, lid, ask)| {
                let sl = self.sl.get(&lid).copied().unwrap_or(0);
                let (attr, port) = match ask {
                    Ask::Cpi => (id::CLASS_PORT_INFO, 0),
                    Ask::Pc(p) => (attr_id::PORT_COUNTERS, p),
                    Ask::Pce(p) => (attr_id::PORT_COUNTERS_EXT, p),
                };
                self.pma.request(lid, sl, Method::Get, attr, port, |_| {})
            })
            .collect();
        let done = self.pma.run_all(reqs);
        for ((n, lid, ask), c) in asks.into_iter().zip(done) {
            let data = self.pma.interpret(lid, c);
            let a = &mut self.answers[n];
            match ask {
                Ask::Cpi => a.caps = data.map(|d| PmaCaps::parse(&d)),
                Ask::Pc(p) => {
                    a.pc.insert(p, data);
                }
                Ask::Pce(p) => {
                    a.pce.insert(p, data);
                }
            }
        }
    }
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    let s = |id: &str| m.get_one::<String>(id).cloned();
    let mut suppressed: Vec<&'static str> = Vec::new();
    // C handles the options in command-line order; -s lists and -c append.
    let mut sup_events: Vec<(usize, Vec<&'static str>)> = Vec::new();
    if let (Some(vals), Some(idx)) = (m.get_many::<String>("suppress"), m.indices_of("suppress")) {
        for (v, i) in vals.zip(idx) {
            let names: Vec<&'static str> = v
                .split(',')
                .filter(|t| !t.is_empty())
                .flat_map(|t| pc_field_names().filter(move |n| *n == t))
                .collect();
            sup_events.push((i, names));
        }
    }
    if m.get_flag("suppress-common") {
        let i = m.index_of("suppress-common").unwrap_or(0);
        sup_events.push((i, vec!["PortRcvSwitchRelayErrors"]));
    }
    sup_events.sort_by_key(|e| e.0);
    for (_, names) in sup_events {
        for n in names {
            if suppressed.len() >= 64 {
                ibwarn(
                    "add_suppressed",
                    &format!("Maximum (64) fields have been suppressed; skipping {n}"),
                );
            } else {
                suppressed.push(n);
            }
        }
    }
    let mut only = 0u8;
    if m.get_flag("switch") {
        only |= PRINT_SWITCH;
    }
    if m.get_flag("ca") {
        only |= PRINT_CA;
    }
    if m.get_flag("router") {
        only |= PRINT_ROUTER;
    }
    if only == 0 {
        only = 0xff;
    }
    let guid_str = s("port-guid").or_else(|| s("S"));
    let dr_path = s("Direct");
    let obtain_sl = !m.get_flag("skip-sl");
    let outstanding = s("outstanding_smps")
        .map(|o| c_strtoull(&o) as usize)
        .filter(|&n| n > 0);
    let json_out = m.get_flag("json");

    let Some(sp) = iblinkinfo::open_sweep_port(prog, &opts, outstanding) else {
        let ca = opts.ca.as_deref().unwrap_or("(null)");
        return ibexit(prog, &format!("Failed to open port; {ca}:{}\n", opts.port));
    };
    let load_cache = s("load-cache").map(PathBuf::from);
    if dr_path.is_some() && load_cache.is_some() {
        eprintln!("Cannot specify cache and direct route path");
        return 255;
    }
    let Some(local) = sp.local() else {
        return ibexit(prog, "can't resolve self port (null)");
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    let mut from = None;
    let mut start = None;
    let mut sl = HashMap::new();
    if let Some(dr) = &dr_path {
        match DrRoute::parse(dr) {
            Some(r) => {
                start = Some(r.path().map_or(Start::DrTooLong(r.hop_count()), Start::Dr));
                from = Some(r);
            }
            None => ibwarn(
                "main",
                &format!("Failed to resolve {dr}; attempting full scan"),
            ),
        }
    } else if let Some(g) = &guid_str {
        let guid = c_strtoull(g);
        match (guid != 0).then(|| sp.resolve_guid_path(guid)).flatten() {
            Some(pr) => {
                if obtain_sl {
                    sl.insert(pr.dlid, pr.sl);
                }
                start = Some(Start::Lid(pr.dlid));
            }
            None => ibwarn(
                "main",
                &format!("Failed to resolve {g}; attempting full scan"),
            ),
        }
    }
    let mut discovery = None;
    let mut loaded = None;
    if let Some(p) = &load_cache {
        match crate::ibnetdiscover::load_topology(p) {
            Ok(fabric) => {
                let port_infos = iblinkinfo::port_infos_from_raw(&fabric);
                loaded = Some((fabric, port_infos));
            }
            Err(e) => {
                if opts.errors || opts.verbose > 0 {
                    eprintln!("{prog}: {e}");
                }
                eprintln!("loading cached fabric failed");
                return 255;
            }
        }
    } else if let Some(start) = start {
        match iblinkinfo::discover(prog, &sp, 1, start) {
            Ok(d) => discovery = Some(d),
            Err(_) => ibwarn("main", "Single node discover failed; attempting full scan"),
        }
    }
    let (fabric, port_infos) = match (loaded, discovery) {
        (Some(l), _) => l,
        (None, Some(d)) => (d.fabric, d.port_infos),
        (None, None) => match iblinkinfo::discover(prog, &sp, 0, Start::Local) {
            Ok(d) => (d.fabric, d.port_infos),
            Err(e) => {
                if opts.errors || opts.verbose > 0 {
                    eprintln!("{prog}: {e}");
                }
                eprintln!("discover failed");
                return 255;
            }
        },
    };
    let thresholds = Thresholds::load(
        s("threshold-file")
            .as_deref()
            .unwrap_or(DEFAULT_THRESHOLD_FILE),
    );
    let links = Links {
        fabric: &fabric,
        infos: &port_infos,
    };
    let show = Show {
        line: false,
        additional: false,
        down_only: false,
        map: map.as_ref(),
        json: json_out,
        filter_down: None,
    };
    let mut ctx = Ctx {
        pma: Pma { port: &sp },
        links,
        show,
        thresholds,
        suppressed,
        only,
        data: m.get_flag("data"),
        counters_only: m.get_flag("counters"),
        details: m.get_flag("details"),
        port_config: m.get_flag("report-port"),
        clear_errors: m.get_flag("clear-errors"),
        clear_counts: m.get_flag("clear-counts"),
        sl,
        answers: vec![NodeAnswers::default(); fabric.nodes.len()],
        out: String::new(),
        nodes_checked: 0,
        bad_nodes: 0,
        ports_checked: 0,
        bad_ports: 0,
        failures: 0,
        clears: Vec::new(),
        records: Vec::new(),
    };
    let self_gid = Gid::new(local.gid_prefix, local.port_guid);
    let nodes: Vec<usize> = if let Some(g) = &guid_str {
        let guid = c_strtoull(g);
        match find_port_node(&fabric.nodes, guid) {
            Some(n) => vec![n],
            None => {
                eprintln!("Failed to find node: {g}");
                vec![]
            }
        }
    } else if let Some(r) = &from {
        let dest = Dest {
            lid: 0,
            dr: Some(r.clone()),
        };
        let Some(ni) = sp.get(&dest, id::NODE_INFO, 0) else {
            eprintln!("Failed to query local Node Info");
            return 0;
        };
        let guid = dump::get_bits(&ni, 160, 64);
        match find_port_node(&fabric.nodes, guid) {
            Some(n) => {
                let port_guid = fabric.nodes[n]
                    .ports
                    .iter()
                    .find(|p| p.guid == guid)
                    .map_or(guid, |p| p.guid);
                if obtain_sl && !path_records(&sp, &mut ctx.sl, self_gid, Some(port_guid)) {
                    return 0;
                }
                vec![n]
            }
            None => {
                eprintln!("Failed to find node: {}", dr_path.as_deref().unwrap_or(""));
                vec![]
            }
        }
    } else {
        if obtain_sl && !path_records(&sp, &mut ctx.sl, self_gid, None) {
            return 0;
        }
        (0..fabric.nodes.len()).collect()
    };
    sweep(&mut ctx, &nodes);
    let summary = ctx.summary();
    let mut stdout = std::io::stdout().lock();
    if json_out {
        let v = json!({
            "schema_version": 1,
            "tool": "ibqueryerrors",
            "nodes": ctx.records,
            "summary": {
                "nodes_checked": ctx.nodes_checked,
                "bad_nodes": ctx.bad_nodes,
                "ports_checked": ctx.ports_checked,
                "bad_ports": ctx.bad_ports,
                "pma_query_failures": ctx.failures,
                "thresholds": ctx.thresholds.values,
                "suppressed": ctx.suppressed,
            },
        });
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        );
    } else {
        let _ = stdout.write_all(ctx.out.as_bytes());
        let _ = stdout.write_all(summary.as_bytes());
    }
    i32::from(ctx.bad_ports > 0)
}

/// `ibnd_find_port_guid`: the node with a port of GUID `guid`.
fn find_port_node(nodes: &[Node], guid: u64) -> Option<usize> {
    nodes
        .iter()
        .position(|n| n.port_guid == guid || n.ports.iter().any(|p| p.guid == guid))
}

/// C's `path_record_query`: the SL to every destination (or to `dguid`), from an SA
/// PathRecord GetTable (C's `sa_query`, 3 s for the whole answer); `false` after C's
/// message when there is none.
fn path_records(sp: &SmpPort, sl: &mut HashMap<u16, u8>, sgid: Gid, dguid: Option<u64>) -> bool {
    let mut template = PathRecord {
        sgid,
        numb_path: 1,
        reversible: true,
        ..PathRecord::default()
    };
    let mut mask = comp::SGID | comp::NUMB_PATH | comp::REVERSIBLE;
    if let Some(g) = dguid {
        template.dgid = Gid::new(sgid.prefix(), g);
        mask |= comp::DGID;
    }
    if !crate::saquery::sa_found(&sp.rpc, &sp.opts) {
        return false;
    }
    let sa = Sa {
        rpc: sp.rpc.clone(),
        sm_key: 0,
        timeout: std::time::Duration::from_millis(DEFAULT_HALF_WORLD_PR_TIMEOUT_MS),
    };
    match sa.query(Method::GetTable, &template, mask) {
        Ok(records) => {
            for r in records {
                sl.insert(r.dlid, r.sl);
            }
            true
        }
        Err(e) => {
            let msg = e.message.unwrap_or_default();
            if msg.starts_with("Query SA failed: ") {
                eprintln!("{msg}; sa call path_query failed");
            } else {
                // The SA's error status (sa_report_err).
                eprintln!("{msg}");
            }
            false
        }
    }
}

/// Pipelines the PMA queries of `nodes`, then prints in C's order.
fn sweep(ctx: &mut Ctx, nodes: &[usize]) {
    let fabric = ctx.links.fabric;
    let wanted: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&n| type_bit(fabric.nodes[n].node_type) & ctx.only != 0)
        .collect();
    // ClassPortInfo of every node.
    let asks = wanted
        .iter()
        .map(|&n| (n, Ctx::node_portid(&fabric.nodes[n]).0, Ask::Cpi))
        .collect();
    ctx.run_asks_cpi(asks, &wanted);
    // The counters: all ports at once where the PMA can, else port by port.
    let mut asks = Vec::new();
    for &n in &wanted {
        let node = &fabric.nodes[n];
        let caps = ctx.answers[n].caps.unwrap_or(PmaCaps {
            cap_mask: 0,
            cap_mask2: 0,
        });
        let ext = Ctx::ext_supported(caps);
        let all = caps.cap_mask & cap::ALL_PORT_SELECT != 0;
        let start = if node.is_switch() && node.enhanced_port0 {
            0
        } else {
            1
        };
        if ctx.counters_only {
            for p in node.ports.iter().filter(|p| p.number >= start) {
                let lid = Ctx::port_lid(node, p.number);
                asks.push((
                    n,
                    lid,
                    if ext {
                        Ask::Pce(p.number)
                    } else {
                        Ask::Pc(p.number)
                    },
                ));
            }
        } else if all {
            asks.push((n, node.lid_for_pma(), Ask::Pc(ALL_PORTS)));
            if ext {
                asks.push((n, node.lid_for_pma(), Ask::Pce(ALL_PORTS)));
            }
        } else {
            for p in node.ports.iter().filter(|p| p.number >= start) {
                let lid = Ctx::port_lid(node, p.number);
                asks.push((n, lid, Ask::Pc(p.number)));
                if ext {
                    asks.push((n, lid, Ask::Pce(p.number)));
                }
            }
        }
    }
    ctx.run_asks(asks);
    // Switches with errors in the sum: their ports.
    let mut asks = Vec::new();
    for &n in &wanted {
        let node = &fabric.nodes[n];
        let Some(caps) = ctx.answers[n].caps else {
            continue;
        };
        if ctx.counters_only || caps.cap_mask & cap::ALL_PORT_SELECT == 0 {
            continue;
        }
        if ctx
            .errors_text(n, ALL_PORTS, caps, false)
            .is_some_and(|t| !t.is_empty())
        {
            let ext = Ctx::ext_supported(caps);
            let start = if node.is_switch() && node.enhanced_port0 {
                0
            } else {
                1
            };
            for p in node.ports.iter().filter(|p| p.number >= start) {
                let lid = Ctx::port_lid(node, p.number);
                asks.push((n, lid, Ask::Pc(p.number)));
                if ext {
                    asks.push((n, lid, Ask::Pce(p.number)));
                }
            }
        }
    }
    ctx.run_asks(asks);
    for &n in &wanted {
        ctx.print_node(n);
    }
    // Clears, after all reads.
    let clears = std::mem::take(&mut ctx.clears);
    if !clears.is_empty() {
        let reqs: Vec<_> = clears
            .iter()
            .map(|&(lid, sl, attr, port, mask, _)| ctx.pma.reset_request(lid, sl, attr, port, mask))
            .collect();
        let done = ctx.pma.run_all(reqs);
        for ((lid, _, _, _, _, fail), c) in clears.into_iter().zip(done) {
            if ctx.pma.interpret(lid, c).is_none() && !fail.is_empty() {
                eprintln!("{fail}");
            }
        }
    }
}

trait PmaLid {
    fn lid_for_pma(&self) -> u16;
}

impl PmaLid for Node {
    fn lid_for_pma(&self) -> u16 {
        Ctx::node_portid(self).0
    }
}

impl Ctx<'_> {
    fn run_asks_cpi(&mut self, asks: Vec<(usize, u16, Ask)>, wanted: &[usize]) {
        // ClassPortInfo goes with the node's first port as PortSelect.
        let fabric = self.links.fabric;
        let reqs: Vec<_> = asks
            .iter()
            .zip(wanted)
            .map(|(&(_, lid, _), &n)| {
                let sl = self.sl.get(&lid).copied().unwrap_or(0);
                let port = Ctx::node_portid(&fabric.nodes[n]).1;
                self.pma
                    .request(lid, sl, Method::Get, id::CLASS_PORT_INFO, port, |_| {})
            })
            .collect();
        let done = self.pma.run_all(reqs);
        for ((n, lid, _), c) in asks.into_iter().zip(done) {
            let data = self.pma.interpret(lid, c);
            self.answers[n].caps = data.map(|d| PmaCaps::parse(&d));
        }
    }

    /// C's `print_results` text for `port` (0xff: all), `None` if the PortCounters query
    /// failed. `report`: print the failure warnings and run `--details` queries.
    fn errors_text(&mut self, n: usize, port: u8, caps: PmaCaps, report: bool) -> Option<String> {
        let node = &self.links.fabric.nodes[n];
        let name = self.node_name(node);
        let lid = if port == ALL_PORTS {
            node.lid_for_pma()
        } else {
            Ctx::port_lid(node, port)
        };
        let ext_sup = Ctx::ext_supported(caps);
        let pc = self.answers[n].pc.get(&port).cloned().flatten();
        let Some(mut pc) = pc else {
            if report {
                self.pma_warn(
                    lid,
                    &format!(
                        "IB_GSI_PORT_COUNTERS query failed on {name}, {} port {port}",
                        portid(lid)
                    ),
                );
            }
            return None;
        };
        let pce = if ext_sup {
            match self.answers[n].pce.get(&port).cloned().flatten() {
                Some(e) => Some(e),
                None => {
                    if report {
                        self.pma_warn(
                            lid,
                            &format!(
                                "IB_GSI_PORT_COUNTERS_EXT query failed on {name}, {} port {port}",
                                portid(lid)
                            ),
                        );
                    }
                    return None;
                }
            }
        } else {
            None
        };
        if caps.cap_mask & cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED == 0 {
            tables::put_bits(&mut pc, 320, 32, 0);
        }
        let addl = caps.cap_mask2 & cap2::IS_ADDL_PORT_CTRS_EXT_SUPPORTED != 0;
        let mut s = String::new();
        for c in ERROR_COUNTERS {
            if self.suppressed.contains(&c.name) {
                continue;
            }
            let exceeded = if addl {
                let v = pce
                    .as_deref()
                    .map_or(0, |e| dump::get_bits(e, c.ext.offset, 64));
                let x = self.thresholds.exceeds(c.name, v);
                if x {
                    s.push_str(&human_text(c.name, v, false));
                }
                x
            } else {
                let v = dump::get_bits(&pc, c.pc.offset, c.pc.width);
                let x = self.thresholds.exceeds(c.name, v);
                if x {
                    s.push_str(&format!(" [{} == {v}]", c.name));
                }
                x
            };
            if exceeded && self.details && report {
                // C: PortXmitDiscards → PortXmitDiscardDetails dumped with the
                // PortRcvErrorDetails fields, and the other way round (as infiniband-diags).
                let q = match c.name {
                    "PortXmitDiscards" => Some((
                        "PortXmitDiscardDetails",
                        attr_id::PORT_XMIT_DISCARD_DETAILS,
                        tables::PORT_RCV_ERROR_DETAILS,
                    )),
                    "PortRcvErrors" => Some((
                        "PortRcvErrorDetails",
                        attr_id::PORT_RCV_ERROR_DETAILS,
                        tables::PORT_XMIT_DISCARD_DETAILS,
                    )),
                    _ => None,
                };
                if let Some((aname, attr, fields)) = q {
                    match self.pma.get(lid, attr, port) {
                        Some(d) => {
                            for f in fields {
                                let v = dump::get_bits(&d, f.offset, f.width) as u32;
                                if v != 0 {
                                    s.push_str(&format!(" [{} == {v}]", f.name));
                                }
                            }
                        }
                        None => {
                            ibwarn(
                                "query_and_dump",
                                &format!(
                                    "{aname} query failed on {name}, {} port {port}",
                                    portid(lid)
                                ),
                            );
                            self.failures += 1;
                        }
                    }
                }
            }
        }
        if !s.is_empty() && self.data {
            let (pkt, fields): (&[u8], Vec<&Field>) = match &pce {
                Some(e) => {
                    let mut f: Vec<&Field> = tables::PORT_COUNTERS_EXT[2..].iter().collect();
                    if caps.cap_mask & cap::EXT_WIDTH_SUPPORTED != 0 {
                        f.extend(tables::PORT_COUNTERS_EXT_WIDTH.iter());
                    }
                    (e, f)
                }
                None => (&pc, data_fields_pc()),
            };
            for f in fields {
                let v = dump::get_bits(pkt, f.offset, f.width);
                if v != 0 {
                    s.push_str(&human_text(f.name, v, is_data(f.name)));
                }
            }
        }
        Some(s)
    }

    fn pma_warn(&mut self, _lid: u16, msg: &str) {
        ibwarn("print_errors", msg);
        self.failures += 1;
    }

    /// C's `print_node`.
    fn print_node(&mut self, n: usize) {
        let fabric = self.links.fabric;
        let node = &fabric.nodes[n];
        let name = self.node_name(node);
        let (lid0, p0) = Ctx::node_portid(node);
        let caps = match self.answers[n].caps {
            Some(c) => c,
            None => {
                ibwarn(
                    "query_cap_mask",
                    &format!(
                        "classportinfo query failed on {name}, {} port {p0}",
                        portid(lid0)
                    ),
                );
                self.failures += 1;
                PmaCaps {
                    cap_mask: 0,
                    cap_mask2: 0,
                }
            }
        };
        let all = caps.cap_mask & cap::ALL_PORT_SELECT != 0;
        let start = if node.is_switch() && node.enhanced_port0 {
            0
        } else {
            1
        };
        let mut header = false;
        let mut record = json!({
            "guid": format!("0x{:016x}", node.guid),
            "node_type": iblinkinfo::type_str(node.node_type),
            "description": name,
            "ports": [],
        });
        let ports: Vec<u8> = node
            .ports
            .iter()
            .filter(|p| p.number >= start)
            .map(|p| p.number)
            .collect();
        if self.counters_only {
            for &p in &ports {
                self.data_counts(n, p, caps, &name, &mut header, &mut record);
                self.ports_checked += 1;
                if !all {
                    self.clear(node, p, caps, &name);
                }
            }
        } else {
            let mut skip_ports = false;
            if all {
                let t = self.errors_text(n, ALL_PORTS, caps, true);
                match t {
                    Some(t) if !t.is_empty() => {
                        self.report(n, ALL_PORTS, &t, &name, &mut header, &mut record);
                    }
                    _ => {
                        self.ports_checked += usize::from(node.num_ports);
                        skip_ports = true;
                    }
                }
            }
            if !skip_ports {
                for &p in &ports {
                    if let Some(t) = self.errors_text(n, p, caps, true) {
                        if !t.is_empty() {
                            self.report(n, p, &t, &name, &mut header, &mut record);
                        }
                    }
                    self.ports_checked += 1;
                    if !all {
                        self.clear(node, p, caps, &name);
                    }
                }
            }
        }
        self.nodes_checked += 1;
        if all {
            self.clear(node, ALL_PORTS, caps, &name);
        }
        if header {
            self.records.push(record);
        }
    }

    fn report(
        &mut self,
        n: usize,
        port: u8,
        text: &str,
        name: &str,
        header: &mut bool,
        record: &mut Value,
    ) {
        let node = &self.links.fabric.nodes[n];
        if !*header {
            if node.is_switch() {
                let g = node.port(0).map_or(node.port_guid, |p| p.guid);
                self.out
                    .push_str(&format!("Errors for 0x{g:x} \"{name}\"\n"));
            } else {
                self.out.push_str(&format!("Errors for \"{name}\"\n"));
            }
            *header = true;
            self.bad_nodes += 1;
        }
        if port == ALL_PORTS {
            if node.is_switch() {
                let g = node.port(0).map_or(node.port_guid, |p| p.guid);
                self.out
                    .push_str(&format!("   GUID 0x{g:x} port ALL:{text}\n"));
            }
        } else {
            let g = node.port(port).map_or(0, |p| p.guid);
            self.out
                .push_str(&format!("   GUID 0x{g:x} port {port}:{text}\n"));
            if self.port_config {
                self.port_config_text(node, port);
            }
            self.bad_ports += 1;
        }
        if let Value::Array(a) = &mut record["ports"] {
            a.push(json!({
                "port": if port == ALL_PORTS { json!("ALL") } else { json!(port) },
                "text": text.trim_start(),
            }));
        }
    }

    /// C's `print_port_config`.
    fn port_config_text(&mut self, node: &Node, p: u8) {
        let Some(port) = node.port(p) else { return };
        let (link, ..) = self.links.link_str(node, port);
        let remote = match port.remote.map(|r| (r, &self.links.fabric.nodes[r.node])) {
            Some((r, rnode)) => match rnode.port(r.port) {
                Some(rport) => {
                    let ext = if rport.ext_port != 0 {
                        rport.ext_port.to_string()
                    } else {
                        String::new()
                    };
                    let (w, s) = self.links.max_msg(node, port, rnode, rport);
                    let rname = self.links.name(&self.show, rnode);
                    let lid = if rport.lid != 0 { rport.lid } else { rnode.lid };
                    format!(
                        "0x{:016x} {lid:6} {:4}[{ext:>2}] \"{rname}\" ({w} {s})\n",
                        rport.guid, rport.number
                    )
                }
                None => "           [  ] \"\" ( )\n".to_string(),
            },
            None => "           [  ] \"\" ( )\n".to_string(),
        };
        let ext = if port.ext_port != 0 {
            port.ext_port.to_string()
        } else {
            String::new()
        };
        let lid = if node.is_switch() { node.lid } else { port.lid };
        self.out.push_str(&format!(
            "       Link info: {lid:6}{:4}[{ext:>2}] =={link}==>  {remote}",
            port.number
        ));
    }

    /// C's `print_data_cnts`.
    fn data_counts(
        &mut self,
        n: usize,
        p: u8,
        caps: PmaCaps,
        name: &str,
        header: &mut bool,
        record: &mut Value,
    ) {
        let node = &self.links.fabric.nodes[n];
        let lid = Ctx::port_lid(node, p);
        let ext = Ctx::ext_supported(caps);
        let (data, fields) = if ext {
            let Some(d) = self.answers[n].pce.get(&p).cloned().flatten() else {
                self.pma_warn(
                    lid,
                    &format!(
                        "IB_GSI_PORT_COUNTERS_EXT query failed on {name}, {} port {p}",
                        portid(lid)
                    ),
                );
                return;
            };
            let mut f: Vec<&Field> = tables::PORT_COUNTERS_EXT[2..].iter().collect();
            if caps.cap_mask & cap::EXT_WIDTH_SUPPORTED != 0 {
                f.extend(tables::PORT_COUNTERS_EXT_WIDTH.iter());
            }
            (d, f)
        } else {
            let Some(d) = self.answers[n].pc.get(&p).cloned().flatten() else {
                self.pma_warn(
                    lid,
                    &format!(
                        "IB_GSI_PORT_COUNTERS query failed on {name}, {} port {p}",
                        portid(lid)
                    ),
                );
                return;
            };
            (d, data_fields_pc())
        };
        if !*header {
            self.out
                .push_str(&format!("Data Counters for 0x{:x} \"{name}\"\n", node.guid));
            *header = true;
        }
        let mut line = format!("   GUID 0x{:x} port {p}:", node.guid);
        let mut counters = serde_json::Map::new();
        for f in fields {
            let v = dump::get_bits(&data, f.offset, f.width);
            line.push_str(&human_text(f.name, v, is_data(f.name)));
            counters.insert(f.name.to_string(), json!(v));
        }
        line.push('\n');
        self.out.push_str(&line);
        if p != ALL_PORTS && self.port_config {
            self.port_config_text(node, p);
        }
        if let Value::Array(a) = &mut record["ports"] {
            a.push(json!({"port": p, "data": counters}));
        }
    }

    /// C's `clear_port`: queue the resets `-k`/`-K` ask for.
    fn clear(&mut self, node: &Node, port: u8, caps: PmaCaps, name: &str) {
        let lid = if port == ALL_PORTS {
            node.lid_for_pma()
        } else {
            Ctx::port_lid(node, port)
        };
        let sl = self.sl.get(&lid).copied().unwrap_or(0);
        let mut mask = 0u32;
        if self.clear_errors {
            mask |= 0xfff;
            if caps.cap_mask & cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED != 0 {
                mask |= 0x10000;
            }
        }
        if self.clear_counts {
            mask |= 0xf000;
        }
        if mask != 0 {
            self.clears.push((
                lid,
                sl,
                attr_id::PORT_COUNTERS,
                port,
                mask,
                format!("Failed to reset errors {name} port {port}"),
            ));
        }
        if self.clear_errors && self.details {
            self.clears.push((
                lid,
                sl,
                attr_id::PORT_XMIT_DISCARD_DETAILS,
                port,
                0xf,
                String::new(),
            ));
            self.clears.push((
                lid,
                sl,
                attr_id::PORT_RCV_ERROR_DETAILS,
                port,
                0x3f,
                String::new(),
            ));
        }
        if Ctx::ext_supported(caps) {
            let mut mask = 0u32;
            if self.clear_counts {
                mask = if caps.cap_mask & cap::EXT_WIDTH_SUPPORTED != 0 {
                    0xff
                } else {
                    0x0f
                };
            }
            if self.clear_errors && caps.cap_mask2 & cap2::IS_ADDL_PORT_CTRS_EXT_SUPPORTED != 0 {
                mask |= 0xfff_0000;
                if caps.cap_mask & cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED != 0 {
                    mask |= 1 << 28;
                }
            }
            if mask != 0 {
                self.clears.push((
                    lid,
                    sl,
                    attr_id::PORT_COUNTERS_EXT,
                    port,
                    mask,
                    format!(
                        "Failed to reset extended data counters {name}, {} port {port}",
                        portid(lid)
                    ),
                ));
            }
        }
    }

    /// C's `print_summary`.
    fn summary(&self) -> String {
        let mut s = format!(
            "\n## Summary: {} nodes checked, {} bad nodes found\n",
            self.nodes_checked, self.bad_nodes
        );
        s.push_str(&format!(
            "##          {} ports checked, {} ports have errors beyond threshold\n",
            self.ports_checked, self.bad_ports
        ));
        s.push_str(&format!(
            "## {}\n",
            self.thresholds.text.as_deref().unwrap_or("(null)")
        ));
        if self.failures > 0 {
            s.push_str(&format!(
                "##          {} PMA query failures\n",
                self.failures
            ));
        }
        s.push_str("## Suppressed:");
        for n in &self.suppressed {
            s.push(' ');
            s.push_str(n);
        }
        s.push('\n');
        s
    }
}

/// PortCounters' data counters (`IB_PC_XMT_BYTES_F`..=`IB_PC_RCV_PKTS_F`).
fn data_fields_pc() -> Vec<&'static Field> {
    tables::PORT_COUNTERS
        .iter()
        .filter(|f| {
            matches!(
                f.name,
                "PortXmitData" | "PortRcvData" | "PortXmitPkts" | "PortRcvPkts"
            )
        })
        .collect()
}

fn is_data(name: &str) -> bool {
    matches!(name, "PortXmitData" | "PortRcvData")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_readable_as_c() {
        assert_eq!(human_text("X", 8280, true), " [X == 8280 (32.344KB)]");
        assert_eq!(human_text("X", 115, false), " [X == 115 (115.000)]");
        assert_eq!(human_text("X", 0, true), " [X == 0 (0.000B)]");
        assert_eq!(
            human_text("X", 5_000_000, false),
            " [X == 5000000 (4.768M)]"
        );
    }

    #[test]
    fn threshold_file() {
        let t = Thresholds::parse("# c\nSymbolErrorCounter=10\nBogus=3\nPortXmitWait=0x10\n");
        assert_eq!(t.values.get("SymbolErrorCounter"), Some(&10));
        assert_eq!(t.values.get("PortXmitWait"), Some(&16));
        assert_eq!(
            t.text.as_deref(),
            Some("Thresholds: [SymbolErrorCounter = 10][PortXmitWait = 16]")
        );
        assert!(!t.exceeds("SymbolErrorCounter", 10));
        assert!(t.exceeds("SymbolErrorCounter", 11));
        assert!(t.exceeds("VL15Dropped", 1));
    }
}
