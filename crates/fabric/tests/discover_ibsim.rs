//! Discovery (`ibfabric::discover`) over the native ibsim transport, checked against the
//! netfile ibsim runs (nodes, links, port counts, descriptions, width/speed) and against C
//! `ibnetdiscover` under umad2sim on the same simulator: the same node order (by type, as
//! the C tool prints them), the same "Total MADs used" and "max hops discovered" (`-m`),
//! whatever the window. Also: 5 % loss on every switch (whole, or the misses named, in
//! bounded time) and an unplugged link (a dead port, not an error).
#![cfg(feature = "discover")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibfabric::discover::{discover, DiscoverOptions, Discovery, Query};
use ibfabric::netfile::{Netfile, NetfileExt};
use ibfabric::Fabric;
use ibmad::{NodeType, PhysPortState};
use ibsim_harness::{
    example_fabric, fabrics_dir, netfile_switches, require_ibsim, run_with_timeout, Ibsim,
};
use umad::{IbsimOptions, Port};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

fn fattree() -> PathBuf {
    fabrics_dir().join("fattree-1008.net")
}

fn start(net: &Path, console: bool) -> Ibsim {
    Ibsim::builder(net)
        .console(console)
        .start()
        .expect("start ibsim")
}

/// Discovery from the netfile's default attach point (its first node), where umad2sim
/// attaches the C tool too.
fn run(sim: &Ibsim, net: &Netfile, opts: &DiscoverOptions) -> Discovery {
    let node = &net.nodes[0].id;
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node(node)).expect("port");
    discover(port, opts).expect("discover")
}

/// `(guid, port)` pairs of every link, each link once, lower end first.
fn links(f: &Fabric) -> BTreeSet<((u64, u8), (u64, u8))> {
    f.links()
        .into_iter()
        .map(|l| {
            let a = (f.nodes[l.a.node].guid, l.a.port);
            let b = (f.nodes[l.b.node].guid, l.b.port);
            (a.min(b), a.max(b))
        })
        .collect()
}

/// Everything discovered is what the netfile says; with `whole`, nothing is missing either.
/// Returns how many netfile nodes and links were not found.
fn check_against_netfile(d: &Discovery, net: &Netfile, whole: bool) -> (usize, usize) {
    let expected = net.to_fabric();
    let found = &d.fabric;
    found.validate().expect("a consistent model");
    for n in &found.nodes {
        let e = expected
            .node_by_guid(n.guid)
            .unwrap_or_else(|| panic!("node {:#x} is not in the netfile", n.guid));
        assert_eq!(n.node_type, e.node_type, "{:#x}", n.guid);
        assert_eq!(n.num_ports, e.num_ports, "{:#x}", n.guid);
        if n.queried.node_description {
            assert_eq!(n.description, e.description, "{:#x}", n.guid);
        }
        if n.is_switch() && n.queried.port_info {
            // A switch: port 0 and every physical port.
            assert_eq!(
                n.ports.len(),
                usize::from(n.num_ports) + 1,
                "{}",
                n.description
            );
        }
        for p in &n.ports {
            let ep = e.port(p.number).expect("port exists in the netfile");
            if p.has_info && p.number != 0 {
                assert_eq!(
                    p.phys_state, ep.phys_state,
                    "{} port {}",
                    e.description, p.number
                );
                if ep.remote.is_some() {
                    assert_eq!(
                        (p.width, p.speed, p.speed_ext),
                        (ep.width, ep.speed, ep.speed_ext),
                        "{} port {}: width/speed",
                        e.description,
                        p.number
                    );
                }
            }
        }
    }
    let want = links(&expected);
    let got = links(found);
    let wrong: Vec<_> = got.difference(&want).collect();
    assert!(wrong.is_empty(), "links not in the netfile: {wrong:x?}");
    let missing_links = want.difference(&got).count();
    let missing_nodes = expected
        .nodes
        .iter()
        .filter(|n| found.node_by_guid(n.guid).is_none())
        .count();
    if whole {
        assert_eq!(missing_nodes, 0, "nodes missing; missed: {:#?}", d.missed);
        assert_eq!(missing_links, 0, "links missing; missed: {:#?}", d.missed);
        assert!(d.is_complete(), "missed: {:#?}", d.missed);
        assert!(found.nodes.iter().all(|n| n.queried.is_complete()));
    }
    (missing_nodes, missing_links)
}

/// C `ibnetdiscover -m` on the simulator (default attach point).
fn c_ibnetdiscover(sim: &Ibsim, args: &[&str]) -> String {
    let mut cmd = sim.umad2sim_command("ibnetdiscover");
    cmd.args(args);
    let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT).expect("C ibnetdiscover");
    assert!(
        out.status.success(),
        "C ibnetdiscover failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The node GUIDs in the order C prints them (`switchguid=`/`caguid=` lines).
fn c_order(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("switchguid=0x")
                .or_else(|| l.strip_prefix("caguid=0x"))
        })
        .map(|g| {
            let hex = g.split('(').next().unwrap_or(g);
            u64::from_str_radix(hex, 16).expect("hex GUID")
        })
        .collect()
}

/// The node GUIDs in the order the writer prints them: switches, then CAs, in `Vec` order.
fn our_order(f: &Fabric) -> Vec<u64> {
    f.nodes_of_type(NodeType::Switch)
        .chain(f.nodes_of_type(NodeType::ChannelAdapter))
        .map(|(_, n)| n.guid)
        .collect()
}

/// `# Total MADs used: N` and `# Reported max hops discovered: N` of `ibnetdiscover -m`.
fn c_counts(text: &str) -> (u32, u32) {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key:?} line"))
    };
    (
        get("# Total MADs used:"),
        get("# Reported max hops discovered:"),
    )
}

/// Discovery with several windows against C: same order, same counts, same topology.
fn compare_with_c(net_path: &Path, windows: &[Option<usize>]) {
    let net = Netfile::load(net_path).expect("netfile");
    let sim = start(net_path, false);
    // Before any SM: LIDs 0, the topology is the netfile's.
    let d = run(&sim, &net, &DiscoverOptions::default());
    check_against_netfile(&d, &net, true);
    sim.run_sm_once().expect("opensm -o");
    let c = c_ibnetdiscover(&sim, &["-m"]);
    let c_nodes = c_order(&c);
    assert_eq!(c_nodes.len(), net.nodes.len(), "C found the whole fabric");
    let (mads, hops) = c_counts(&c);
    for &w in windows {
        let opts = DiscoverOptions {
            outstanding: w,
            ..DiscoverOptions::default()
        };
        let started = Instant::now();
        let d = run(&sim, &net, &opts);
        let took = started.elapsed();
        check_against_netfile(&d, &net, true);
        assert_eq!(
            our_order(&d.fabric),
            c_nodes,
            "node order with window {w:?}"
        );
        assert_eq!(
            d.fabric.total_mads_used,
            Some(mads),
            "MADs used, window {w:?}"
        );
        assert_eq!(
            d.fabric.max_hops_discovered,
            Some(hops),
            "max hops, window {w:?}"
        );
        if let Some(w) = w {
            assert!(d.stats.max_in_flight <= w, "{:?}", d.stats);
        }
        let from = d.fabric.from_node().expect("origin");
        assert_eq!(from.guid, net.nodes[0].guid);
        // Every switch has a LID now, and every CA port that was reached.
        for n in &d.fabric.nodes {
            assert_ne!(n.shown_lid(n.local_port), 0, "{} has a LID", n.description);
        }
        eprintln!(
            "{}: window {w:?}: {} nodes, {} SMPs, {} in flight at most, {:?}",
            net_path.display(),
            d.fabric.nodes.len(),
            d.stats.smps,
            d.stats.max_in_flight,
            took
        );
    }
}

#[test]
fn example_net_matches_netfile_and_c_order() {
    if !require_ibsim("ibfabric::discover_ibsim::example_net_matches_netfile_and_c_order") {
        return;
    }
    compare_with_c(&example_fabric(), &[None, Some(1), Some(2), Some(64)]);
}

#[test]
fn fattree_1008_matches_netfile_and_c_order() {
    if !require_ibsim("ibfabric::discover_ibsim::fattree_1008_matches_netfile_and_c_order") {
        return;
    }
    compare_with_c(&fattree(), &[None, Some(2), Some(16)]);
}

#[test]
fn progress_callback_sees_every_nodeinfo_in_order() {
    if !require_ibsim("ibfabric::discover_ibsim::progress_callback_sees_every_nodeinfo_in_order") {
        return;
    }
    let net = Netfile::load(example_fabric()).expect("netfile");
    let sim = start(&example_fabric(), false);
    sim.run_sm_once().expect("opensm -o");
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let opts = DiscoverOptions {
        record_progress: true,
        progress: Some(Arc::new(move |_| {
            s.fetch_add(1, Ordering::Relaxed);
        })),
        ..DiscoverOptions::default()
    };
    let d = run(&sim, &net, &opts);
    check_against_netfile(&d, &net, true);
    let nodeinfos = d.fabric.progress.len();
    assert_eq!(seen.load(Ordering::Relaxed), nodeinfos);
    // At least the start and one per link (ibsim's switch PortInfo has LocalPortNum 0, so
    // a switch also looks back through the port it was reached by, as C does).
    assert!(nodeinfos > d.fabric.links().len(), "{nodeinfos}");
    assert!(d.fabric.progress[0].new);
    assert_eq!(d.fabric.progress.iter().filter(|p| p.new).count(), 6);
    // C -s prints the same records: count its "-> new"/"-> known" lines.
    let c = c_ibnetdiscover(&sim, &["-s"]);
    let c_new = c.lines().filter(|l| l.contains(" -> new ")).count();
    let c_known = c.lines().filter(|l| l.contains(" -> known ")).count();
    assert_eq!((c_new, c_known), (6, nodeinfos - 6), "{c}");
}

/// 5 % loss on every switch: with retries discovery finds everything or lists what it
/// missed; it never reports something false, and it ends in bounded time.
#[test]
fn lossy_fabric_whole_or_misses_named() {
    if !require_ibsim("ibfabric::discover_ibsim::lossy_fabric_whole_or_misses_named") {
        return;
    }
    // Retries 8: expected whole; retries 0 on the big fabric: misses, each checked.
    for (path, retries) in [(example_fabric(), [8; 4].as_slice()), (fattree(), &[8, 0])] {
        let net = Netfile::load(&path).expect("netfile");
        let sim = start(&path, true);
        sim.run_sm_once().expect("opensm -o");
        // C's text before the loss: a whole discovery under loss (retried SMPs complete out
        // of order) must still give exactly this.
        let c = mask_date(&c_ibnetdiscover(&sim, &["-m"]));
        for s in netfile_switches(&path).expect("switches") {
            sim.console(&format!("Error \"{s}\" 5"))
                .expect("set 5% loss");
        }
        for &retries in retries {
            let opts = DiscoverOptions {
                timeout: Some(Duration::from_millis(100)),
                retries: Some(retries),
                ..DiscoverOptions::default()
            };
            let started = Instant::now();
            let d = run(&sim, &net, &opts);
            let took = started.elapsed();
            let (nodes, links) = check_against_netfile(&d, &net, false);
            if nodes + links > 0 {
                assert!(!d.missed.is_empty(), "parts missing but nothing named");
            }
            check_misses_are_precise(&d, &net);
            if d.missed.is_empty() {
                check_against_netfile(&d, &net, true);
                let ours = d.fabric.to_ibnetdiscover(&ibfabric::WriteOptions {
                    max_hops: true,
                    date: "DATE".into(),
                    ..ibfabric::WriteOptions::default()
                });
                assert_eq!(mask_date(&ours), c, "whole under loss: C's text");
            }
            for m in &d.missed {
                assert!(!m.to_string().is_empty());
            }
            assert!(took < Duration::from_secs(90), "took {took:?}");
            eprintln!(
                "{}: 5% loss, {retries} retries: {} nodes, {} missing, {} links missing, missed {:?}, stats {:?}, {took:?}",
                path.display(),
                d.fabric.nodes.len(),
                nodes,
                links,
                d.missed.iter().map(ToString::to_string).collect::<Vec<_>>(),
                d.stats
            );
        }
    }
}

/// Every miss names a real gap: a missed NodeInfo is a link the netfile has (found by
/// walking its route through the netfile) that discovery does not have, unless the far end
/// probed it back; a missed per-node query left that node's data out.
fn check_misses_are_precise(d: &Discovery, net: &Netfile) {
    let expected = net.to_fabric();
    let found = links(&d.fabric);
    for m in &d.missed {
        match m.query {
            Query::NodeInfo => {
                let (from, to) = walk(&expected, m.path.hops())
                    .unwrap_or_else(|| panic!("{m}: no such route in the netfile"));
                let g = |r: ibfabric::PortRef| (expected.nodes[r.node].guid, r.port);
                let (a, b) = (g(from), g(to));
                // Found anyway only if the far end looked back through the link itself (a
                // switch, or the start node).
                let looks_back = expected.nodes[to.node].is_switch() || to.node == 0;
                assert!(
                    looks_back || !found.contains(&(a.min(b), a.max(b))),
                    "{m}: but the link {a:x?}-{b:x?} was found"
                );
            }
            q => {
                let guid = m.node_guid.expect("per-node queries name the node");
                let n = d.fabric.node_by_guid(guid).expect("the node is known");
                match q {
                    Query::NodeDescription => assert!(!n.queried.node_description, "{m}"),
                    Query::SwitchInfo => assert!(!n.queried.switch_info, "{m}"),
                    Query::PortInfo(p) => {
                        assert!(!n.queried.port_info, "{m}");
                        assert!(!n.port(p).is_some_and(|p| p.has_info), "{m}");
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The last link of a directed route from the netfile's first node: (port left, port
/// entered).
fn walk(f: &Fabric, hops: &[u8]) -> Option<(ibfabric::PortRef, ibfabric::PortRef)> {
    let mut node = 0usize; // to_fabric keeps file order: the attach node first
    let mut last = None;
    for &h in hops {
        let out = ibfabric::PortRef { node, port: h };
        let to = f.port(out)?.remote?;
        last = Some((out, to));
        node = to.node;
    }
    last
}

/// An unplugged link: the HCA behind it is gone, the switch port is down and unlinked, and
/// that is not an error (nothing missed). C agrees on the nodes.
#[test]
fn unplugged_link_is_a_dead_port_not_an_error() {
    if !require_ibsim("ibfabric::discover_ibsim::unplugged_link_is_a_dead_port_not_an_error") {
        return;
    }
    let net = Netfile::load(example_fabric()).expect("netfile");
    let sim = start(&example_fabric(), true);
    sim.run_sm_once().expect("opensm -o");
    sim.console(r#"Unlink "H-host3"[1]"#).expect("unlink");
    let d = run(&sim, &net, &DiscoverOptions::default());
    assert!(d.is_complete(), "missed: {:#?}", d.missed);
    let f = &d.fabric;
    let host3 = net.node("H-host3").unwrap().guid;
    assert!(f.node_by_guid(host3).is_none(), "H-host3 is unreachable");
    let sw2 = f
        .node_by_guid(net.node("S-sw2").unwrap().guid)
        .expect("S-sw2");
    let p1 = sw2.port(1).expect("S-sw2 port 1 queried");
    assert!(p1.remote.is_none());
    assert_ne!(p1.phys_state, PhysPortState::LinkUp);
    assert_eq!(f.nodes.len(), 5);
    let c = c_ibnetdiscover(&sim, &["-m"]);
    assert_eq!(our_order(f), c_order(&c));
    assert_eq!(f.total_mads_used, Some(c_counts(&c).0));
    let ours = f.to_ibnetdiscover(&ibfabric::WriteOptions {
        max_hops: true,
        date: "DATE".into(),
        ..ibfabric::WriteOptions::default()
    });
    assert_eq!(mask_date(&ours), mask_date(&c));
    // Dead ports as the netfile has them (H-host2 port 2 too).
    let by_guid: BTreeMap<u64, _> = f.nodes.iter().map(|n| (n.guid, n)).collect();
    assert!(by_guid.contains_key(&net.node("H-host2").unwrap().guid));
}

/// `max_hops` as libibnetdisc applies it: nothing beyond one hop past the limit, and the
/// unreached part is not reported as missed (it was not asked).
#[test]
fn max_hops_limits_the_walk() {
    if !require_ibsim("ibfabric::discover_ibsim::max_hops_limits_the_walk") {
        return;
    }
    let net = Netfile::load(example_fabric()).expect("netfile");
    let sim = start(&example_fabric(), false);
    let d = run(
        &sim,
        &net,
        &DiscoverOptions {
            max_hops: 1,
            ..DiscoverOptions::default()
        },
    );
    assert!(d.is_complete());
    assert!(d.fabric.nodes.len() < 6, "{} nodes", d.fabric.nodes.len());
    for n in &d.fabric.nodes {
        assert!(
            n.path.path.hop_count() <= 2,
            "{} at {}",
            n.description,
            n.path.path
        );
    }
    assert!(d.missed.iter().all(|m| m.query != Query::NodeInfo));
}

mod common;

/// `WriteOptions` for one of the captured C flag sets.
fn write_options<'a>(case: &str, map: &'a ibfabric::NodeNameMap) -> ibfabric::WriteOptions<'a> {
    use ibfabric::{Format, WriteOptions};
    let mut o = WriteOptions {
        date: "DATE".into(),
        ..WriteOptions::default()
    };
    let list = |ca, switch, router| Format::List { ca, switch, router };
    match case {
        "default" => {}
        "ports" => o.format = Format::Ports,
        "show" => o.show_progress = true,
        "hca_list" => o.format = list(true, false, false),
        "switch_list" => o.format = list(false, true, false),
        "router_list" => o.format = list(false, false, true),
        "list" => o.format = list(true, true, true),
        "grouping" => o.grouping = true,
        "full" => o.full = true,
        "max_hops" => o.max_hops = true,
        "node_name_map" => o.node_name_map = Some(map),
        other => panic!("unknown case {other}"),
    }
    o
}

/// The date line of the topology header, masked.
fn mask_date(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("# Topology file: generated on ") {
                "# Topology file: generated on DATE"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Discovery written by the ibnetdiscover writer equals C `ibnetdiscover`, byte for byte
/// (date masked), for every captured flag set.
fn text_equals_c(fabric: &str) {
    text_equals_c_on(&fabrics_dir().join(format!("{fabric}.net")));
}

fn text_equals_c_on(path: &Path) {
    let fabric = path.display();
    let sim = start(path, false);
    sim.run_sm_once().expect("opensm -o");
    let net = Netfile::load(path).expect("netfile");
    check_against_netfile(&run(&sim, &net, &DiscoverOptions::default()), &net, true);
    let d = run(
        &sim,
        &net,
        &DiscoverOptions {
            record_progress: true,
            ..DiscoverOptions::default()
        },
    );
    assert!(d.is_complete(), "{:?}", d.missed);
    let map = ibfabric::NodeNameMap::load(common::name_map_path()).expect("node name map");
    for case in common::CASES {
        let c = common::run_c(&sim, case.args);
        let ours = d.fabric.to_ibnetdiscover(&write_options(case.name, &map));
        let (c, ours) = (mask_date(&c), mask_date(&ours));
        if c != ours {
            let first = c
                .lines()
                .zip(ours.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(c.lines().count().min(ours.lines().count()));
            panic!(
                "{fabric} {:?}: differs at line {}:\nC:    {:?}\nours: {:?}",
                case.args,
                first + 1,
                c.lines().nth(first),
                ours.lines().nth(first)
            );
        }
    }
}

#[test]
fn example_net_text_equals_c_for_every_flag() {
    if !require_ibsim("ibfabric::discover_ibsim::example_net_text_equals_c_for_every_flag") {
        return;
    }
    text_equals_c("example");
}

#[test]
fn fattree_1008_text_equals_c_for_every_flag() {
    if !require_ibsim("ibfabric::discover_ibsim::fattree_1008_text_equals_c_for_every_flag") {
        return;
    }
    text_equals_c("fattree-1008");
}

/// Mellanox devices (ConnectX-3 HCAs, SwitchX switches: libibnetdisc asks them for the
/// Mellanox ExtendedPortInfo), FDR10, FDR, EDR, 1x SDR and 12x DDR links, parallel links
/// between two switches, a 2-port HCA on two switches: equal to the netfile and to C's text.
const MIXED: &str = r#"# discovery test fabric: Mellanox device IDs, mixed speeds and widths
devid=0x1003
Hca	2 "H-a"		# "a HCA-1"
[1]	"S-one"[1]		# lid 0 lmc 0 "one" lid 0 4xFDR10
[2]	"S-two"[1]		# lid 0 lmc 0 "two" lid 0 4xFDR

Hca	1 "H-b"		# "b HCA-1"
[1]	"S-one"[2]		# lid 0 lmc 0 "one" lid 0 1xSDR

devid=0xc738
Switch	8 "S-one"		# "one" enhanced port 0 lid 0 lmc 0
[1]	"H-a"[1]		# "a HCA-1" lid 0 4xFDR10
[2]	"H-b"[1]		# "b HCA-1" lid 0 1xSDR
[5]	"S-two"[5]		# "two" lid 0 4xEDR
[6]	"S-two"[6]		# "two" lid 0 12xDDR
[7]	"S-two"[7]		# "two" lid 0 4xQDR

Switch	8 "S-two"		# "two" base port 0 lid 0 lmc 0
[1]	"H-a"[2]		# "a HCA-1" lid 0 4xFDR
[5]	"S-one"[5]		# "one" lid 0 4xEDR
[6]	"S-one"[6]		# "one" lid 0 12xDDR
[7]	"S-one"[7]		# "one" lid 0 4xQDR
"#;

#[test]
fn mixed_mellanox_fabric_text_equals_c() {
    if !require_ibsim("ibfabric::discover_ibsim::mixed_mellanox_fabric_text_equals_c") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ibfabric-mixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("mixed.net");
    std::fs::write(&path, MIXED).expect("write netfile");
    let net = Netfile::load(&path).expect("netfile");
    assert!(net.warnings.is_empty(), "{:?}", net.warnings);
    text_equals_c_on(&path);
    // The Mellanox ExtendedPortInfo was asked where C asks it, and FDR10 came back.
    let sim = start(&path, false);
    sim.run_sm_once().expect("opensm -o");
    let d = run(&sim, &net, &DiscoverOptions::default());
    let a = d
        .fabric
        .node_by_guid(net.node("H-a").unwrap().guid)
        .unwrap();
    assert_eq!(a.port(1).unwrap().mlnx_speed & 1, 1, "FDR10 on H-a port 1");
    let without = run(
        &sim,
        &net,
        &DiscoverOptions {
            mlx_epi: false,
            ..DiscoverOptions::default()
        },
    );
    assert!(without.stats.smps < d.stats.smps, "MLX EPI adds SMPs");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Discovery from a switch (attached at its port 0) and from a CA behind the second switch:
/// the same text as C attached there (`SIM_HOST`), for the default and `-s` output.
#[test]
fn discovery_from_other_nodes_equals_c() {
    if !require_ibsim("ibfabric::discover_ibsim::discovery_from_other_nodes_equals_c") {
        return;
    }
    let sim = start(&example_fabric(), false);
    sim.run_sm_once().expect("opensm -o");
    for node in ["S-sw1", "S-sw2", "H-host4"] {
        let port =
            Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node(node)).expect("port");
        let opts = DiscoverOptions {
            record_progress: true,
            ..DiscoverOptions::default()
        };
        let d = discover(port, &opts).expect("discover");
        assert!(d.is_complete(), "{node}: {:?}", d.missed);
        assert_eq!(d.fabric.nodes.len(), 6, "{node}");
        for args in [&[][..], &["-s"][..]] {
            let mut cmd = sim.umad2sim_command("ibnetdiscover");
            cmd.env("SIM_HOST", node).args(args);
            let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT).expect("C ibnetdiscover");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let c = String::from_utf8(out.stdout).expect("UTF-8");
            let ours = d.fabric.to_ibnetdiscover(&ibfabric::WriteOptions {
                show_progress: !args.is_empty(),
                date: "DATE".into(),
                ..ibfabric::WriteOptions::default()
            });
            assert_eq!(mask_date(&ours), mask_date(&c), "from {node} {args:?}");
        }
    }
}

/// Every netfile in `fabrics/` (the ones above and any added later): discovery equals the
/// netfile, and its text (with `-m`'s counters) equals C's.
#[test]
fn every_fabric_in_fabrics_dir_equals_its_netfile_and_c() {
    if !require_ibsim(
        "ibfabric::discover_ibsim::every_fabric_in_fabrics_dir_equals_its_netfile_and_c",
    ) {
        return;
    }
    let mut nets: Vec<PathBuf> = std::fs::read_dir(fabrics_dir())
        .expect("fabrics/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "net"))
        .collect();
    nets.sort();
    assert!(nets.len() >= 2, "{nets:?}");
    for path in &nets {
        let net = Netfile::load(path).unwrap_or_else(|e| panic!("{e}"));
        let sim = start(path, false);
        sim.run_sm_once().expect("opensm -o");
        let d = run(&sim, &net, &DiscoverOptions::default());
        check_against_netfile(&d, &net, true);
        let c = c_ibnetdiscover(&sim, &["-m"]);
        let ours = d.fabric.to_ibnetdiscover(&ibfabric::WriteOptions {
            max_hops: true,
            date: "DATE".into(),
            ..ibfabric::WriteOptions::default()
        });
        assert_eq!(mask_date(&ours), mask_date(&c), "{}", path.display());
    }
}

/// A LID-routed start (`DiscoverOptions::from_lid`, what `-G` gives the diags): the start
/// node by LID, its neighbours by combined LID/directed routes from a switch (which ibsim
/// does not answer: missed NodeInfos with the right DrSLID), nothing past a CA.
#[test]
fn from_lid_starts_at_the_lid() {
    if !require_ibsim("ibfabric::discover_ibsim::from_lid_starts_at_the_lid") {
        return;
    }
    let net = Netfile::load(example_fabric()).expect("netfile");
    let sim = start(&example_fabric(), false);
    sim.run_sm_once().expect("opensm sweeps");
    let whole = run(&sim, &net, &DiscoverOptions::default());
    let lid_of = |t: NodeType| {
        whole
            .fabric
            .nodes
            .iter()
            .filter(|n| n.node_type == t)
            .map(|n| (n.guid, n.ports.iter().map(|p| p.lid).max().unwrap_or(0)))
            .find(|&(_, lid)| lid > 0 && lid != whole.self_lid)
            .expect("a node with a LID")
    };
    for t in [NodeType::Switch, NodeType::ChannelAdapter] {
        let (guid, lid) = lid_of(t);
        let d = run(
            &sim,
            &net,
            &DiscoverOptions {
                max_hops: 1,
                from_lid: lid,
                // (ibsim fails the combined routes at once; the transport waits them out.)
                timeout: Some(Duration::from_millis(250)),
                retries: Some(2),
                ..DiscoverOptions::default()
            },
        );
        assert_eq!(d.fabric.nodes.len(), 1, "{t:?} LID {lid}");
        let node = &d.fabric.nodes[0];
        assert_eq!(node.guid, guid);
        assert_eq!(node.path.path.hop_count(), 0);
        let tried: Vec<_> = d
            .missed
            .iter()
            .filter(|m| m.query == Query::NodeInfo)
            .collect();
        if t == NodeType::Switch {
            let active: Vec<u8> = node
                .ports
                .iter()
                .filter(|p| p.number > 0 && p.phys_state == PhysPortState::LinkUp)
                .map(|p| p.number)
                .collect();
            assert!(active.len() >= 2);
            // Every active port but the one the SMPs came in by (ibsim's LID-routed
            // PortInfo names none: every one, as C asks too).
            let hops: Vec<u8> = tried.iter().map(|m| m.path.hops()[0]).collect();
            assert!(hops.iter().all(|h| active.contains(h)), "{:?}", d.missed);
            assert!(hops.len() + 1 >= active.len(), "{:?}", d.missed);
            assert!(tried.iter().all(|m| m.path.hop_count() == 1));
        } else {
            assert!(tried.is_empty(), "{:?}", d.missed);
            assert_eq!(node.ports.iter().filter(|p| p.has_info).count(), 1);
        }
    }
}

/// An ibsim connection that goes silent after `cut_after` packets sent: every packet after
/// that is swallowed (sent "successfully", never answered, never bounced), as when the
/// fabric dies behind a relay.
#[derive(Debug)]
struct GoesSilent {
    inner: umad::carrier::ibsim::IbsimCarrier,
    cut_after: usize,
    sent: AtomicUsize,
    cut_at: std::sync::Mutex<Option<Instant>>,
}

impl umad::layer::Carrier for GoesSilent {
    fn ca_name(&self) -> &str {
        umad::layer::Carrier::ca_name(&self.inner)
    }
    fn port_num(&self) -> u32 {
        umad::layer::Carrier::port_num(&self.inner)
    }
    fn ca(&self) -> umad::Result<umad::device::Ca> {
        umad::layer::Carrier::ca(&self.inner)
    }
    fn issm(&self) -> umad::Result<umad::Issm> {
        umad::layer::Carrier::issm(&self.inner)
    }
    fn send(&self, pkt: &umad::layer::Packet) -> umad::Result<()> {
        if self.sent.fetch_add(1, Ordering::Relaxed) < self.cut_after {
            return umad::layer::Carrier::send(&self.inner, pkt);
        }
        self.cut_at.lock().unwrap().get_or_insert_with(Instant::now);
        Ok(())
    }
    fn try_recv(&self) -> umad::Result<Option<umad::layer::Packet>> {
        umad::layer::Carrier::try_recv(&self.inner)
    }
    fn raw_fd(&self) -> std::os::unix::io::RawFd {
        umad::layer::Carrier::raw_fd(&self.inner)
    }
}

#[test]
fn a_fabric_that_goes_silent_ends_the_walk_within_a_request_budget() {
    if !require_ibsim(
        "ibfabric::discover_ibsim::a_fabric_that_goes_silent_ends_the_walk_within_a_request_budget",
    ) {
        return;
    }
    let path = fattree();
    let net = Netfile::load(&path).expect("netfile");
    let sim = start(&path, false);
    for (timeout_ms, retries, window) in [(200, 2, 32), (100, 0, 128)] {
        let opts = DiscoverOptions {
            timeout: Some(Duration::from_millis(timeout_ms)),
            retries: Some(retries),
            outstanding: Some(window),
            ..DiscoverOptions::default()
        };
        let budget = Duration::from_millis(timeout_ms * u64::from(retries + 1));
        let carrier = Arc::new(GoesSilent {
            inner: umad::carrier::ibsim::IbsimCarrier::connect(
                &IbsimOptions::new(sim.socket_name()).node(&net.nodes[0].id),
            )
            .expect("connect"),
            cut_after: 1_500,
            sent: AtomicUsize::new(0),
            cut_at: std::sync::Mutex::new(None),
        });
        let port = Port::from_carrier(
            Box::new(ArcCarrier(carrier.clone())),
            umad::layer::LayerConfig::default(),
        )
        .expect("layer");
        let d = discover(port, &opts).expect("discover");
        let ended = Instant::now();
        let cut_at = carrier
            .cut_at
            .lock()
            .unwrap()
            .expect("the fabric went silent");
        let after_cut = ended - cut_at;
        let swallowed = carrier.sent.load(Ordering::Relaxed) - carrier.cut_after;
        eprintln!(
            "{timeout_ms} ms × {} tries, {window} in flight: ended {after_cut:?} after the cut, \
             {swallowed} packets swallowed, {} nodes of {}, stats {:?}",
            retries + 1,
            d.fabric.nodes.len(),
            net.nodes.len(),
            d.stats
        );
        assert!(d.went_silent(), "the walk was cut short");
        assert!(!d.is_complete());
        assert!(d.fabric.nodes.len() < net.nodes.len());
        assert!(d.stats.abandoned > 0);
        assert!(d
            .missed
            .iter()
            .any(|m| m.reason == ibfabric::discover::MissReason::Silent));
        // The SMPs in flight at the cut time out within one budget; the probe then gets
        // two tries at most, and those sent meanwhile are given up, not walked through one
        // window at a time.
        let per_try = Duration::from_millis(timeout_ms);
        assert!(
            after_cut <= budget + per_try * 2 + Duration::from_millis(1_000),
            "ended {after_cut:?} after the cut, budget {budget:?}"
        );
        assert!(d.stats.probes >= 1);
        // At most two windows' worth of SMPs (the one in flight at the cut, and the one sent
        // while nothing had answered for a try yet; none while the probe is out), each tried
        // `retries + 1` times, and the probe.
        let bound = 2 * window * (retries as usize + 1) + 2;
        assert!(
            swallowed <= bound,
            "{swallowed} packets after the cut (bound {bound})"
        );
    }
}

/// A shared carrier handed to the layer, so the test can read its counters afterwards.
#[derive(Debug)]
struct ArcCarrier(Arc<GoesSilent>);

impl umad::layer::Carrier for ArcCarrier {
    fn ca_name(&self) -> &str {
        self.0.ca_name()
    }
    fn port_num(&self) -> u32 {
        self.0.port_num()
    }
    fn ca(&self) -> umad::Result<umad::device::Ca> {
        self.0.ca()
    }
    fn issm(&self) -> umad::Result<umad::Issm> {
        self.0.issm()
    }
    fn send(&self, pkt: &umad::layer::Packet) -> umad::Result<()> {
        self.0.send(pkt)
    }
    fn try_recv(&self) -> umad::Result<Option<umad::layer::Packet>> {
        self.0.try_recv()
    }
    fn raw_fd(&self) -> std::os::unix::io::RawFd {
        self.0.raw_fd()
    }
}
