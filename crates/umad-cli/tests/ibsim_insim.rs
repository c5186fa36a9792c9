//! The fabric simulated in process against ibsim: the same `umad` tools run natively over
//! ibsim (`UMAD_IBSIM`) and over `UMAD_SIM_UNCONFIGURED=1 UMAD_SIM=<the same netfile>` (no
//! `UMAD_IBSIM` there), with no SM on either side, must print the same stdout and exit with
//! the same code, on every fabric in `fabrics/`. Discovery (ibnetdiscover in its modes,
//! iblinkinfo, ibswitches, ibhosts, ...) and directed-route queries (smpquery, smpdump,
//! ibaddr, ibroute, ibportstate) along routes derived from each netfile: the local port, every
//! node of the smaller fabrics and a sample of the larger ones, each at ports 0, linked,
//! unlinked, the last and one past it, and a route to nowhere.
//!
//! Left out, because they legitimately differ or cannot work without an SM:
//! - `sminfo`, `saquery`, `dump_fts` by LID, `ibtracert`, and any query by LID or GUID
//!   (`-L`, `-G`, the default addressing): they need an SM (an SA, LIDs, LFTs); with no SM
//!   every LID is 0 and both sides only time out.
//! - `ibqueryerrors`: it needs an SA. `perfquery` needs LIDs and routes: it is compared on
//!   fabrics an opensm sweep configured ([`compare_perf_on`]), the traffic counters masked.
//! - `ibstat`: it prints what each carrier makes of the local CA (the CA's name `ibsim0` or
//!   `sim0`, a hardware version), not what the SMA answers.
//! - `smpquery` PortInfoExtended: an SMA attribute neither answers.
//! - GUIDInfo, SL2VL, VLArbitration and MFT blocks, ports or positions a node does not have
//!   (`smpdump` with such a modifier): ibsim answers zeros (or reads past its tables),
//!   ibnetsim "invalid attribute value", as hardware does.
//! - `smpquery -x` (PortInfo with attribute modifier bit 31): ibsim ignores the bit, ibnetsim
//!   refuses the modifier.
//! - Sets (`ibportstate` enable/disable/speed, `smpquery` with values): ibnetsim has no Set
//!   methods yet.
//! - A route whose first hop out of a CA is not the CA's own port (`0,17` from a 1-port CA):
//!   ibsim then reads past the CA's port table.
//!
//! The order of the table matters in one place: ibsim answers Mellanox ExtPortInfo with
//! zeros until it has built that port's PortInfo once (ibnetsim's README), so each port's
//! PortInfo is queried before its ExtPortInfo, as discovery does.

mod common;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;
use std::process::Command;

use common::{mask_date, mask_traffic, native, run, umad};
use ibfabric::netfile::Netfile;
use ibmad::NodeType;
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// The fabrics of `fabrics/`, in three groups (every `.net` file must be in one: see
/// [`the_groups_cover_every_fabric`]).
const SMALL: &[&str] = &["example.net", "b2b.net", "chain.net", "ring.net"];
const ODD: &[&str] = &["odd.net", "mixed.net", "lmc.net"];
const LARGE: &[&str] = &["fattree-1008.net", "fattree3-1760.net"];

/// Fabrics with at most this many nodes have every node queried; larger ones a sample.
const QUERY_ALL_UP_TO: usize = 16;

/// What a case's native run must do (so that both failing alike is not taken for success).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    Fails,
    Either,
}

struct Case {
    args: Vec<String>,
    expect: Expect,
}

fn case(expect: Expect, args: &[&str]) -> Case {
    Case {
        args: args.iter().map(|a| a.to_string()).collect(),
        expect,
    }
}

/// `umad <args>` over the fabric simulated in process, unconfigured, on `netfile`.
fn in_process(sim: &Ibsim, netfile: &Path) -> Command {
    let scratch = sim.new_scratch_dir("insim").expect("scratch directory");
    let mut cmd = Command::new(umad());
    cmd.current_dir(scratch)
        .env("UMAD_SIM", netfile)
        .env("UMAD_SIM_UNCONFIGURED", "1")
        .env_remove("UMAD_SIM_NODE")
        .env_remove("UMAD_IBSIM")
        .env_remove("UMAD_IBSIM_NODE")
        .env_remove("LD_PRELOAD")
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .stdin(std::process::Stdio::null());
    cmd
}

/// `umad <args>` natively over `sim`, with nothing of `UMAD_SIM` in its environment.
fn over_ibsim(sim: &Ibsim) -> Command {
    let mut cmd = native(sim, &umad());
    cmd.env_remove("UMAD_SIM")
        .env_remove("UMAD_SIM_NODE")
        .env_remove("UMAD_SIM_UNCONFIGURED");
    cmd
}

fn outcome(cmd: &mut Command, args: &[String]) -> (i32, String) {
    let out = run(cmd.args(args));
    let text = String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), mask_date(&text))
}

/// The first lines where `a` and `b` differ, for a failure message.
fn first_differences(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut out = String::new();
    let mut shown = 0;
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            out += &format!(
                "      line {}:\n        ibsim: {}\n        ours:  {}\n",
                i + 1,
                x.unwrap_or(&"<none>"),
                y.unwrap_or(&"<none>")
            );
            shown += 1;
            if shown == 4 {
                out += "      ...\n";
                break;
            }
        }
    }
    out
}

/// Runs every case both ways on a fresh ibsim of `fabric` (no SM) and returns what
/// differed (empty: nothing).
fn compare_on(fabric: &str, cases: impl Fn(&Netfile) -> Vec<Case>) -> String {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    let netfile = sim.netfile().to_path_buf();
    let net = Netfile::load(&netfile).expect("the netfile parses");
    let cases = cases(&net);
    assert!(!cases.is_empty());
    let mut report = String::new();
    for c in &cases {
        let (code, out) = outcome(&mut over_ibsim(&sim), &c.args);
        let (our_code, our_out) = outcome(&mut in_process(&sim, &netfile), &c.args);
        let expected = match c.expect {
            Expect::Ok => code == 0,
            Expect::Fails => code != 0,
            Expect::Either => true,
        };
        if !expected {
            report += &format!(
                "  {fabric}: umad {}: over ibsim it exited {code}, expected {:?}\n",
                c.args.join(" "),
                c.expect
            );
        }
        if (code, &out) != (our_code, &our_out) {
            report += &format!(
                "  {fabric}: umad {}: exit {code} over ibsim, {our_code} in process\n{}",
                c.args.join(" "),
                first_differences(&out, &our_out)
            );
        }
    }
    eprintln!("{fabric}: {} commands compared", cases.len());
    report
}

fn compare_all(fabrics: &[&str], cases: impl Fn(&Netfile) -> Vec<Case> + Copy) {
    let report: String = fabrics.iter().map(|f| compare_on(f, cases)).collect();
    assert!(
        report.is_empty(),
        "in process (UMAD_SIM_UNCONFIGURED=1) differs from ibsim:\n{report}"
    );
}

/// The discovery tools, once each over the whole fabric.
fn discovery_cases(_: &Netfile) -> Vec<Case> {
    let mut cases: Vec<Case> = [
        &["ibnetdiscover"][..],
        &["ibnetdiscover", "-p"],
        &["ibnetdiscover", "-s"],
        &["ibnetdiscover", "-l"],
        &["ibnetdiscover", "-g"],
        &["ibnetdiscover", "-H"],
        &["ibnetdiscover", "-S"],
        &["ibnetdiscover", "-R"],
        &["iblinkinfo"],
        &["iblinkinfo", "-l"],
        &["iblinkinfo", "-p"],
        &["iblinkinfo", "-d"],
        &["iblinkinfo", "--switches-only"],
        &["ibswitches"],
        &["ibhosts"],
        &["ibrouters"],
        &["ibnodes"],
    ]
    .iter()
    .map(|a| case(Expect::Ok, a))
    .collect();
    // Every switch's (empty) LFT and MFT, by directed route.
    cases.push(case(Expect::Either, &["dump_lfts", "-D"]));
    cases.push(case(Expect::Either, &["dump_mfts", "-D"]));
    cases
}

/// A node reached by a directed route from the attach point.
struct Target {
    /// The route in the tools' `-D` form (`0`, `0,1`, `0,1,8`, ...).
    route: String,
    node: usize,
    /// The port it is reached through.
    in_port: u8,
}

/// Every node reachable from the first port of the first node (ibsim's default attach
/// point, a CA here), breadth first, by the first route found; routes only pass switches.
fn targets(net: &Netfile) -> Vec<Target> {
    let by_id: HashMap<&str, usize> = net
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let first = &net.nodes[0];
    assert_ne!(
        first.node_type,
        NodeType::Switch,
        "the fabrics attach at a CA"
    );
    let mut seen = vec![false; net.nodes.len()];
    seen[0] = true;
    let mut out = vec![Target {
        route: "0".into(),
        node: 0,
        in_port: 1,
    }];
    let mut queue = VecDeque::new();
    if let Some(p) = first.ports.iter().find(|p| p.number == 1) {
        queue.push_back((
            by_id[p.remote.node.as_str()],
            p.remote.port,
            "0,1".to_string(),
        ));
    }
    while let Some((node, in_port, route)) = queue.pop_front() {
        if seen[node] {
            continue;
        }
        seen[node] = true;
        let n = &net.nodes[node];
        if n.node_type == NodeType::Switch && route.split(',').count() < 60 {
            for p in &n.ports {
                let far = by_id[p.remote.node.as_str()];
                if !seen[far] {
                    queue.push_back((far, p.remote.port, format!("{route},{}", p.number)));
                }
            }
        }
        out.push(Target {
            route,
            node,
            in_port,
        });
    }
    out
}

/// The targets queried: all of a small fabric's, else the attach point, the first two
/// nodes out, the farthest, the first router and the first switch with an unlinked port.
fn sample(net: &Netfile, all: Vec<Target>) -> Vec<Target> {
    if all.len() <= QUERY_ALL_UP_TO {
        return all;
    }
    let mut keep = BTreeSet::from([0, 1, 2, all.len() - 1]);
    let node = |t: &Target| &net.nodes[t.node];
    if let Some(i) = all
        .iter()
        .position(|t| node(t).node_type == NodeType::Router)
    {
        keep.insert(i);
    }
    if let Some(i) = all.iter().position(|t| {
        let n = node(t);
        n.node_type == NodeType::Switch && n.ports.len() < usize::from(n.num_ports)
    }) {
        keep.insert(i);
    }
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, t)| t)
        .collect()
}

/// The port numbers asked of a target: 0, the arrival port, a linked and an unlinked port,
/// the last port and one past it.
fn ports_of(net: &Netfile, t: &Target) -> Vec<u8> {
    let n = &net.nodes[t.node];
    let linked = |p: u8| n.ports.iter().any(|l| l.number == p);
    let mut ports = BTreeSet::from([0, t.in_port, n.num_ports, n.num_ports.saturating_add(1)]);
    if n.node_type == NodeType::Switch {
        if let Some(p) = n.ports.iter().map(|p| p.number).find(|&p| p != t.in_port) {
            ports.insert(p);
        }
        if let Some(p) = (1..=n.num_ports).find(|&p| !linked(p)) {
            ports.insert(p);
        }
    } else {
        ports.extend(1..=n.num_ports);
    }
    ports.into_iter().collect()
}

/// The directed-route queries, target by target.
fn smp_cases(net: &Netfile) -> Vec<Case> {
    let mut cases = Vec::new();
    let targets = sample(net, targets(net));
    for t in &targets {
        let n = &net.nodes[t.node];
        let switch = n.node_type == NodeType::Switch;
        let r = t.route.as_str();
        let ports = ports_of(net, t);
        // A port the node has (0 only on a switch; on a CA 0 means the arrival port).
        let valid = |p: u8| p <= n.num_ports;
        cases.push(case(Expect::Ok, &["smpquery", "-D", "nodeinfo", r]));
        cases.push(case(Expect::Ok, &["smpquery", "-D", "nodedesc", r]));
        let si = if switch { Expect::Ok } else { Expect::Fails };
        cases.push(case(si, &["smpquery", "-D", "switchinfo", r]));
        for &p in &ports {
            let e = if valid(p) { Expect::Ok } else { Expect::Fails };
            cases.push(case(e, &["smpquery", "-D", "portinfo", r, &p.to_string()]));
        }
        // After the PortInfo of the same ports (see the module's comment).
        for &p in &ports {
            let e = if valid(p) { Expect::Ok } else { Expect::Fails };
            cases.push(case(e, &["smpquery", "-D", "mepi", r, &p.to_string()]));
        }
        cases.push(case(
            Expect::Ok,
            &[
                "smpquery",
                "--json",
                "-D",
                "portinfo",
                r,
                &t.in_port.to_string(),
            ],
        ));
        for attr in ["0x11", "0x10", "0x12"] {
            cases.push(case(Expect::Ok, &["smpdump", "-D", r, attr]));
        }
        cases.push(case(Expect::Ok, &["smpdump", "-s", "-D", r, "0x10"]));
        for &p in &ports {
            for attr in ["0x15", "0xff90"] {
                cases.push(case(
                    Expect::Ok,
                    &["smpdump", "-D", r, attr, &p.to_string()],
                ));
            }
        }
        cases.push(case(Expect::Ok, &["ibaddr", "-D", r]));
        cases.push(case(Expect::Ok, &["ibaddr", "-g", "-l", "-D", r]));
        // The SMA's tables: P_Keys, SL-to-VL, VL arbitration by port; GUIDs; the raw blocks.
        cases.push(case(Expect::Ok, &["smpquery", "-D", "guidinfo", r]));
        for &p in &ports {
            let e = if valid(p) { Expect::Ok } else { Expect::Fails };
            for op in ["pkeys", "sl2vl", "vlarb"] {
                cases.push(case(e, &["smpquery", "-D", op, r, &p.to_string()]));
            }
        }
        cases.push(case(Expect::Ok, &["smpdump", "-D", r, "0x14", "0"]));
        let last = n.num_ports;
        let sl2vl_mod = if switch { u32::from(last) << 8 | 1 } else { 0 };
        cases.push(case(
            Expect::Ok,
            &["smpdump", "-D", r, "0x17", &sl2vl_mod.to_string()],
        ));
        let vlarb_port = if switch { last } else { 0 };
        for block in [1u32, 3] {
            let m = (block << 16) | u32::from(vlarb_port);
            cases.push(case(
                Expect::Ok,
                &["smpdump", "-D", r, "0x18", &m.to_string()],
            ));
        }
        if switch {
            cases.push(case(Expect::Ok, &["ibroute", "-D", r]));
            cases.push(case(Expect::Ok, &["ibroute", "-M", "-D", r]));
            cases.push(case(Expect::Ok, &["ibroute", "-M", "-a", "-D", r]));
            // The last MFT block, at the last PortMask position.
            let m = (u32::from(last) / 16) << 28 | 31;
            cases.push(case(
                Expect::Ok,
                &["smpdump", "-D", r, "0x1b", &m.to_string()],
            ));
            if let Some(p) = n.ports.first() {
                let p = p.number.to_string();
                cases.push(case(Expect::Ok, &["ibportstate", "-D", r, &p, "query"]));
            }
        }
    }
    // A route to nowhere: out of the first unlinked port of a switch.
    let dead = targets.iter().find_map(|t| {
        let n = &net.nodes[t.node];
        (n.node_type == NodeType::Switch)
            .then(|| (1..=n.num_ports).find(|&p| n.ports.iter().all(|l| l.number != p)))
            .flatten()
            .map(|p| format!("{},{p}", t.route))
    });
    if let Some(dead) = dead {
        cases.push(case(
            Expect::Fails,
            &["smpquery", "-t", "100", "-D", "nodeinfo", &dead],
        ));
        cases.push(case(Expect::Fails, &["ibaddr", "-t", "100", "-D", &dead]));
    }
    cases
}

/// What `perfquery` is asked of a node: its LID and the ports asked.
struct PerfTarget {
    lid: u16,
    switch: bool,
    num_ports: u8,
    ports: Vec<u8>,
}

/// The LID of every node port ibsim's SM gave one (CA ports; a switch's port 0), read by
/// directed route through a native ibsim port, written into a copy of the netfile as
/// presets (so the fabric in process, configured, has the same LIDs), and the targets.
fn lids_after_sweep(sim: &Ibsim, net: &mut Netfile) -> Vec<PerfTarget> {
    use umad::rpc::{Rpc, Target as RpcTarget};
    let port = umad::Port::open_ibsim(&umad::IbsimOptions::new(sim.socket_name())).unwrap();
    let rpc = Rpc::new(std::sync::Arc::new(port));
    let mut out = Vec::new();
    for t in sample(net, targets(net)) {
        let hops: Vec<u8> = t
            .route
            .split(',')
            .skip(1)
            .map(|h| h.parse().unwrap())
            .collect();
        let path = RpcTarget::Dr(ibmad::DrPath::from_hops(&hops).unwrap());
        let n = &mut net.nodes[t.node];
        let switch = n.node_type == NodeType::Switch;
        let pi = |p: u32| -> ibmad::attr::PortInfo { rpc.smp_get(&path, p).expect("PortInfo") };
        if switch {
            let p0 = pi(0);
            n.lid = p0.lid;
            n.lmc = 0;
            let linked: Vec<u8> = n.ports.iter().map(|p| p.number).collect();
            let mut ports = BTreeSet::from([0, 255, n.num_ports, t.in_port]);
            ports.extend(linked.first());
            ports.extend((1..=n.num_ports).find(|p| !linked.contains(p)));
            out.push(PerfTarget {
                lid: p0.lid,
                switch,
                num_ports: n.num_ports,
                ports: ports.into_iter().collect(),
            });
        } else {
            for p in &mut n.ports {
                let info = pi(u32::from(p.number));
                p.lid = info.lid;
                p.lmc = info.lmc;
            }
            // By the LID of the port the route arrives at (ibsim's CA PMA answers only
            // for that port).
            let lid = n.port(t.in_port).map_or(0, |p| p.lid);
            if lid != 0 {
                out.push(PerfTarget {
                    lid,
                    switch,
                    num_ports: n.num_ports,
                    ports: vec![t.in_port],
                });
            }
        }
    }
    out
}

/// `perfquery`'s queries of every target: each attribute ibsim answers on each of the
/// target's ports (a switch's 0, linked and unlinked ports, its last and 255, AllPortSelect);
/// Get then reset (`-r`) and reset only (`-R`, all counters and the error counters) of some;
/// `-a` and `-l`; a port past the last; the attributes ibsim does not answer (both fail the
/// same way), on the first CA and the first switch; the local port.
fn perf_cases(targets: &[PerfTarget]) -> Vec<Case> {
    // The attributes ibsim answers, as perfquery names them ("": PortCounters).
    const ANSWERED: &[&str] = &[
        "",
        "-x",
        "-D",
        "-E",
        "--oprcvcounters",
        "--flowctlcounters",
        "--vloppackets",
        "--vlopdata",
        "--vlxmitflowctlerrors",
        "--vlxmitcounters",
    ];
    // Reset, aggregated and looped: one attribute of each shape.
    const SOME: &[&str] = &["", "-x", "-E", "--vloppackets", "--vlopdata"];
    // What ibsim does not answer (it times out; ibnetsim says "not supported"); not -c:
    // PortSamplesControl, which ibnetsim answers as hardware does.
    const UNANSWERED: &[&str] = &[
        "-X",
        "-S",
        "-T",
        "--swportvlcong",
        "--rcvcc",
        "--slrcvfecn",
        "--slrcvbecn",
        "--xmitcc",
        "--vlxmittimecc",
    ];
    let args = |flag: &str, rest: &[&str]| -> Vec<String> {
        let mut v = vec!["perfquery".to_string()];
        v.extend(flag.split_whitespace().map(str::to_string));
        v.extend(rest.iter().map(|a| a.to_string()));
        v
    };
    let mut cases = Vec::new();
    let mut push = |e: Expect, flag: &str, rest: &[&str]| {
        cases.push(Case {
            args: args(flag, rest),
            expect: e,
        })
    };
    for f in ANSWERED {
        push(Expect::Ok, f, &[]);
    }
    let mut unanswered_asked = (false, false);
    for t in targets {
        let lid = t.lid.to_string();
        for f in ANSWERED {
            for p in &t.ports {
                push(Expect::Ok, f, &[&lid, &p.to_string()]);
            }
        }
        let first = t.ports.iter().find(|&&p| p != 0).copied().unwrap_or(1);
        let first = first.to_string();
        for f in SOME {
            push(Expect::Ok, f, &["-r", &lid, &first]);
            push(Expect::Ok, f, &["-R", &lid, &first]);
            if t.switch {
                push(Expect::Ok, f, &["-a", &lid]);
                push(Expect::Ok, f, &["-R", "-a", &lid]);
                push(Expect::Ok, f, &["-l", &lid]);
                push(Expect::Ok, f, &["-a", &lid, "1,2"]);
                let last = t.ports.iter().filter(|&&p| p != 255).max().unwrap();
                let past = (last + 1).to_string();
                push(Expect::Fails, f, &[&lid, &past]);
            } else if f.is_empty() || *f == "-x" {
                // Without AllPortSelect perfquery sums the CA's ports itself, asking each by
                // the LID of the first: ibsim refuses the ports a request did not arrive at
                // and ibnetsim does not know which one it arrived at (README), so only a
                // 1-port CA is asked.
                if t.num_ports == 1 {
                    push(Expect::Ok, f, &["-a", &lid]);
                }
            } else {
                // PortSelect 0xFF, which a CA refuses.
                push(Expect::Fails, f, &["-a", &lid]);
            }
        }
        push(Expect::Ok, "-R", &[&lid, &first, "0x0fff"]);
        let asked = if t.switch {
            &mut unanswered_asked.1
        } else {
            &mut unanswered_asked.0
        };
        if !*asked {
            *asked = true;
            for f in UNANSWERED {
                push(Expect::Fails, "-t 100", &[f, &lid, &first]);
            }
        }
    }
    cases
}

/// Runs `perfquery`'s cases both ways on `fabric` after one opensm sweep of ibsim, the fabric
/// in process configured with the LIDs the sweep gave (the routes may differ: both are
/// min-hop), the counters the tools' own traffic changes masked ([`mask_traffic`]: ibsim
/// counted the sweep and every command before). Returns what differed.
fn compare_perf_on(fabric: &str) -> String {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let mut net = Netfile::load(sim.netfile()).expect("the netfile parses");
    let targets = lids_after_sweep(&sim, &mut net);
    let dir = sim.new_scratch_dir("perf").expect("scratch directory");
    let preset = dir.join(fabric);
    std::fs::write(&preset, net.write()).expect("the netfile with LIDs is written");
    let cases = perf_cases(&targets);
    let mut report = String::new();
    for c in &cases {
        let (code, out) = outcome(&mut over_ibsim(&sim), &c.args);
        let mut ours = in_process(&sim, &preset);
        ours.env_remove("UMAD_SIM_UNCONFIGURED");
        let (our_code, our_out) = outcome(&mut ours, &c.args);
        let (out, our_out) = (mask_traffic(&out), mask_traffic(&our_out));
        let expected = match c.expect {
            Expect::Ok => code == 0,
            Expect::Fails => code != 0,
            Expect::Either => true,
        };
        if !expected {
            report += &format!(
                "  {fabric}: umad {}: over ibsim it exited {code}, expected {:?}\n{out}",
                c.args.join(" "),
                c.expect
            );
        }
        if (code, &out) != (our_code, &our_out) {
            report += &format!(
                "  {fabric}: umad {}: exit {code} over ibsim, {our_code} in process\n{}",
                c.args.join(" "),
                first_differences(&out, &our_out)
            );
        }
    }
    eprintln!("{fabric}: {} perfquery commands compared", cases.len());
    report
}

fn compare_perf(fabric: &str) {
    let report = compare_perf_on(fabric);
    assert!(
        report.is_empty(),
        "perfquery in process (configured) differs from ibsim after a sweep:\n{report}"
    );
}

#[test]
fn insim_perfquery_matches_ibsim_on_example() {
    if !require_ibsim("umad_cli::insim_perfquery_matches_ibsim_on_example") {
        return;
    }
    compare_perf("example.net");
}

#[test]
fn insim_perfquery_matches_ibsim_on_mixed() {
    if !require_ibsim("umad_cli::insim_perfquery_matches_ibsim_on_mixed") {
        return;
    }
    compare_perf("mixed.net");
}

#[test]
fn insim_perfquery_matches_ibsim_on_ring() {
    if !require_ibsim("umad_cli::insim_perfquery_matches_ibsim_on_ring") {
        return;
    }
    compare_perf("ring.net");
}

#[test]
fn the_groups_cover_every_fabric() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fabrics_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".net"))
        .collect();
    on_disk.sort();
    let mut grouped: Vec<String> = [SMALL, ODD, LARGE]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect();
    grouped.sort();
    assert_eq!(grouped, on_disk, "add the new fabric to a group");
}

#[test]
fn insim_discovery_matches_ibsim_on_the_small_fabrics() {
    if !require_ibsim("umad_cli::insim_discovery_matches_ibsim_on_the_small_fabrics") {
        return;
    }
    compare_all(SMALL, discovery_cases);
}

#[test]
fn insim_discovery_matches_ibsim_on_the_odd_fabrics() {
    if !require_ibsim("umad_cli::insim_discovery_matches_ibsim_on_the_odd_fabrics") {
        return;
    }
    compare_all(ODD, discovery_cases);
}

#[test]
fn insim_discovery_matches_ibsim_on_the_large_fabrics() {
    if !require_ibsim("umad_cli::insim_discovery_matches_ibsim_on_the_large_fabrics") {
        return;
    }
    compare_all(LARGE, discovery_cases);
}

#[test]
fn insim_smp_queries_match_ibsim_on_the_small_fabrics() {
    if !require_ibsim("umad_cli::insim_smp_queries_match_ibsim_on_the_small_fabrics") {
        return;
    }
    compare_all(SMALL, smp_cases);
}

#[test]
fn insim_smp_queries_match_ibsim_on_the_odd_fabrics() {
    if !require_ibsim("umad_cli::insim_smp_queries_match_ibsim_on_the_odd_fabrics") {
        return;
    }
    compare_all(ODD, smp_cases);
}

#[test]
fn insim_smp_queries_match_ibsim_on_the_large_fabrics() {
    if !require_ibsim("umad_cli::insim_smp_queries_match_ibsim_on_the_large_fabrics") {
        return;
    }
    compare_all(LARGE, smp_cases);
}
