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
//! - `perfquery`, `ibqueryerrors`: PerfMgt, which ibsim answers and ibnetsim does not yet.
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

use common::{mask_date, native, run, umad};
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
