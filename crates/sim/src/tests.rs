use ibmad::{
    attr::id, DrPath, Method, NodeDescription, NodeInfo, NodeType, PortInfo, PortState, Smp,
    Status, SwitchInfo,
};

use crate::{Builder, Dropped, Fabric, NodeIdx, NodeSpec, Origin};

fn spec(node_type: NodeType, id: &str, ports: u8, guid: u64) -> NodeSpec {
    NodeSpec {
        node_type,
        id: id.into(),
        description: format!("{id} desc"),
        num_ports: ports,
        guid,
        system_image_guid: guid,
        vendor_id: 0x2c9,
        device_id: 0xb924,
        enhanced_port0: false,
        origin: Origin::default(),
    }
}

/// h1 ─1:sw1:3─ 2:sw2 ─4─ h2 (port 1); sw1 port 2 unused.
fn two_switches() -> (Fabric, [NodeIdx; 4]) {
    let mut b = Builder::new();
    let h1 = b
        .node(spec(NodeType::ChannelAdapter, "h1", 2, 0x100))
        .unwrap();
    let sw1 = b.node(spec(NodeType::Switch, "sw1", 8, 0x200)).unwrap();
    let sw2 = b.node(spec(NodeType::Switch, "sw2", 8, 0x300)).unwrap();
    let h2 = b
        .node(spec(NodeType::ChannelAdapter, "h2", 1, 0x400))
        .unwrap();
    let o = Origin::default();
    b.link((h1, 1), (sw1, 1), &o).unwrap();
    b.link((sw1, 3), (sw2, 2), &o).unwrap();
    b.link((sw2, 4), (h2, 1), &o).unwrap();
    (b.build(), [h1, sw1, sw2, h2])
}

/// Get(`attr`) along `path` in the text form's order (a leading 0, then each hop's port).
fn get(
    f: &mut Fabric,
    from: (NodeIdx, u8),
    attr: u16,
    modifier: u32,
    path: &[u8],
) -> Result<[u8; 256], Dropped> {
    assert_eq!(path.first(), Some(&0), "a route begins with 0");
    let path = DrPath::from_hops(&path[1..]).unwrap();
    let req = Smp::dr_request(Method::Get, attr, modifier, 0x1234_5678, &path);
    f.smp(from, &req)
}

#[test]
fn node_info_along_a_directed_route_comes_back_with_the_arrival_port() {
    let (mut f, [h1, _, sw2, h2]) = two_switches();
    let _ = (sw2, h2);
    let resp = get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3]).unwrap();
    let smp = Smp::new_checked(&resp[..]).unwrap();
    assert_eq!(smp.method(), Method::GetResp);
    assert!(smp.status().is_success(), "{:?}", smp.status());
    assert_eq!(smp.tid(), 0x1234_5678);
    assert_eq!(smp.hop_pointer(), 0, "a response ends with hop pointer 0");
    assert_eq!(&smp.return_path()[1..3], &[1, 2], "the ports it arrived on");
    let ni = NodeInfo::parse(smp.data()).unwrap();
    assert_eq!(ni.node_type, NodeType::Switch);
    assert_eq!(ni.node_guid, 0x300);
    assert_eq!(ni.local_port_num, 2);
    assert_eq!(ni.num_ports, 8);
    // Three hops to the far host: its port GUID is node GUID + port.
    let resp = get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3, 4]).unwrap();
    let ni = NodeInfo::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
    assert_eq!(
        (ni.node_guid, ni.port_guid, ni.local_port_num),
        (0x400, 0x401, 1)
    );
}

#[test]
fn the_local_node_answers_an_empty_route() {
    let (mut f, [h1, ..]) = two_switches();
    let resp = get(&mut f, (h1, 1), id::NODE_DESC, 0, &[0]).unwrap();
    let d = NodeDescription::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
    assert_eq!(d.as_str(), "h1 desc");
}

#[test]
fn routes_through_missing_or_unlinked_ports_are_dropped() {
    let (mut f, [h1, ..]) = two_switches();
    // sw1 port 2 has no link; port 9 does not exist; h1 port 2 has no link.
    assert_eq!(
        get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 2]),
        Err(Dropped::NoLink)
    );
    assert_eq!(
        get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 9]),
        Err(Dropped::NoLink)
    );
    assert_eq!(
        get(&mut f, (h1, 2), id::NODE_INFO, 0, &[0, 2]),
        Err(Dropped::NoLink)
    );
    // A CA does not forward: the second hop out of h2 is discarded there.
    assert_eq!(
        get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3, 4, 1]),
        Err(Dropped::BadHop)
    );
}

#[test]
fn port_info_and_switch_info_follow_the_configured_state() {
    let (mut f, [h1, sw1, _, h2]) = two_switches();
    let resp = get(&mut f, (h1, 1), id::PORT_INFO, 3, &[0, 1]).unwrap();
    let pi = PortInfo::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
    assert_eq!(
        pi.port_state,
        PortState::Initialize,
        "linked, not yet swept"
    );
    let resp = get(&mut f, (h1, 1), id::PORT_INFO, 2, &[0, 1]).unwrap();
    let pi = PortInfo::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
    assert_eq!(pi.port_state, PortState::Down, "no link");

    assert_eq!(f.configure(None), Some(5));
    assert_eq!(f.node(sw1).lid_of(7), f.node(sw1).ports[0].lid);
    let resp = get(&mut f, (h1, 1), id::PORT_INFO, 0, &[0, 1, 3, 4]).unwrap();
    let pi = PortInfo::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.lid, f.node(h2).ports[1].lid);
    assert_eq!(pi.master_sm_lid, 1);
    let resp = get(&mut f, (h1, 1), id::SWITCH_INFO, 0, &[0, 1]).unwrap();
    let smp = Smp::new_checked(&resp[..]).unwrap();
    assert!(smp.status().is_success());
    let si = SwitchInfo::parse(smp.data()).unwrap();
    assert_eq!(si.linear_fdb_cap, 30 * 1024, "ibsim's LinearFDBCap");
    assert!(!si.port_state_change, "the sweep cleared it");
    // SwitchInfo of a CA, and a port beyond the node's: errors in the status, not silence.
    let resp = get(&mut f, (h1, 1), id::SWITCH_INFO, 0, &[0]).unwrap();
    let st = Smp::new_checked(&resp[..])
        .unwrap()
        .status()
        .without_direction();
    assert_eq!(st, Status(Status::METHOD_ATTR_NOT_SUPPORTED));
    let resp = get(&mut f, (h1, 1), id::PORT_INFO, 9, &[0, 1]).unwrap();
    let st = Smp::new_checked(&resp[..])
        .unwrap()
        .status()
        .without_direction();
    assert_eq!(st, Status(Status::INVALID_ATTR_VALUE));
}

#[test]
fn the_builder_refuses_what_iba_forbids_and_names_where() {
    let mut b = Builder::new();
    let at = Origin {
        file: Some("x.net".into()),
        line: 7,
    };
    let mut s = spec(NodeType::Switch, "big", 255, 0x1);
    s.origin = at.clone();
    let e = b.node(s).unwrap_err().to_string();
    assert!(
        e.starts_with("x.net:7: ") && e.contains("at most 254"),
        "{e}"
    );
    let a = b.node(spec(NodeType::Switch, "a", 4, 0x10)).unwrap();
    let e = b
        .node(spec(NodeType::Switch, "b", 4, 0x10))
        .unwrap_err()
        .to_string();
    assert!(e.contains("already \"a\"'s"), "{e}");
    let e = b
        .node(spec(NodeType::Switch, "a", 4, 0x11))
        .unwrap_err()
        .to_string();
    assert!(e.contains("already used"), "{e}");
    let c = b
        .node(spec(NodeType::ChannelAdapter, "c", 1, 0x20))
        .unwrap();
    let d = b
        .node(spec(NodeType::ChannelAdapter, "d", 1, 0x30))
        .unwrap();
    b.link((a, 1), (c, 1), &at).unwrap();
    b.link((a, 1), (c, 1), &at)
        .expect("the same link twice (both ends list it) is fine");
    let e = b.link((a, 1), (d, 1), &at).unwrap_err().to_string();
    assert!(e.contains("is linked to \"c\" port 1"), "{e}");
    let e = b.link((a, 5), (d, 1), &at).unwrap_err().to_string();
    assert!(e.contains("does not exist"), "{e}");
}

#[test]
fn lids_kept_where_set_and_given_from_the_lowest_free() {
    let (mut f, [h1, sw1, sw2, h2]) = two_switches();
    // A LID already set (here sw2's) is kept.
    f.node_mut(sw2).ports[0].lid = 2;
    assert_eq!(f.configure(Some(9)), Some(5));
    let lids = [
        f.node(h1).ports[1].lid,
        f.node(h1).ports[2].lid,
        f.node(sw1).ports[0].lid,
        f.node(sw2).ports[0].lid,
        f.node(h2).ports[1].lid,
    ];
    assert_eq!(lids, [1, 3, 4, 2, 5]);
    assert_eq!(f.node(h2).ports[1].master_sm_lid, 9);
    assert_eq!(
        f.node(h1).ports[2].state,
        PortState::Down,
        "unlinked stays down"
    );
}

/// Every fabric of the repository loads, and from its first CA port a directed route
/// reaches every node: the neighbour of every linked port answers NodeInfo with its GUID.
#[test]
fn every_repository_fabric_loads_and_every_link_answers() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fabrics");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("net") {
            continue;
        }
        let mut f = Fabric::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
        f.configure(None);
        // Breadth-first over switches from the first CA port, by directed route.
        let Some(start) = f
            .nodes()
            .iter()
            .position(|n| !n.is_switch() && n.ports.iter().any(|p| p.remote.is_some()))
        else {
            continue;
        };
        let start = NodeIdx(start as u32);
        let port = f
            .node(start)
            .ports
            .iter()
            .find(|p| p.remote.is_some())
            .unwrap()
            .num;
        let mut routes = vec![(
            f.node(start).ports[usize::from(port)].remote.unwrap().0,
            vec![0u8, port],
        )];
        let mut visited = std::collections::HashSet::new();
        while let Some((node, route)) = routes.pop() {
            if !visited.insert(node) || route.len() > 60 {
                continue;
            }
            let resp = get(&mut f, (start, port), id::NODE_INFO, 0, &route)
                .unwrap_or_else(|e| panic!("{}: route {route:?}: {e:?}", path.display()));
            let ni = NodeInfo::parse(Smp::new_checked(&resp[..]).unwrap().data()).unwrap();
            assert_eq!(
                ni.node_guid,
                f.node(node).spec.guid,
                "{}: {route:?}",
                path.display()
            );
            if f.node(node).is_switch() {
                for p in f.node(node).ports.iter().skip(1) {
                    if let Some((far, _)) = p.remote {
                        let mut r = route.clone();
                        r.push(p.num);
                        routes.push((far, r));
                    }
                }
            }
        }
    }
    assert!(seen >= 5, "found {seen} fabrics");
}

#[test]
fn configured_fabrics_route_every_lid_by_min_hop_tables() {
    let (mut f, [h1, sw1, sw2, h2]) = two_switches();
    // Unconfigured: no LIDs, nothing routes.
    assert_eq!(f.lid_route((h1, 1), 5), None);
    f.configure(None);
    let lid = |f: &Fabric, n: NodeIdx, p: u8| f.node(n).lid_of(p);
    let (l_h1, l_sw1, l_sw2, l_h2) = (
        lid(&f, h1, 1),
        lid(&f, sw1, 0),
        lid(&f, sw2, 0),
        lid(&f, h2, 1),
    );
    assert_eq!(f.lid_route((h1, 1), l_h2), Some((h2, 1)));
    assert_eq!(f.lid_route((h2, 1), l_h1), Some((h1, 1)));
    assert_eq!(
        f.lid_route((h1, 1), l_sw2),
        Some((sw2, 2)),
        "arrives on sw2's port 2"
    );
    assert_eq!(f.lid_route((h1, 1), l_sw1), Some((sw1, 1)));
    assert_eq!(
        f.lid_route((sw1, 0), l_h2),
        Some((h2, 1)),
        "from a switch's port 0"
    );
    assert_eq!(f.lid_route((h1, 1), l_h1), Some((h1, 1)), "to itself");
    // h1's unlinked port 2 has a LID nobody can reach, and routes nowhere itself.
    let dead = lid(&f, h1, 2);
    assert_eq!(f.lid_route((h2, 1), dead), None);
    assert_eq!(f.lid_route((h1, 2), l_h2), None);
    // A LID-routed Get(NodeInfo) and its answer by LID.
    let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, 9);
    let r = f.deliver((h1, 1), l_sw2, 0, &req).unwrap();
    assert_eq!(r.slid, l_sw2);
    let ni = NodeInfo::parse(Smp::new_checked(&r.mad[..]).unwrap().data()).unwrap();
    assert_eq!((ni.node_guid, ni.local_port_num), (0x300, 2));
    // A link taken down (its port no longer Active) breaks the route.
    f.node_mut(sw1).ports[3].state = PortState::Down;
    assert_eq!(f.lid_route((h1, 1), l_h2), None);
    assert_eq!(f.deliver((h1, 1), l_h2, 0, &req), Err(Dropped::NoRoute));
}

/// On the three-level fat tree every host reaches every sampled host in at most the tree's
/// diameter of switch hops, and the tables hold no loop (every walk ends).
#[test]
fn min_hop_tables_on_a_fat_tree_reach_everything() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fabrics/fattree3-1760.net"
    );
    let mut f = Fabric::load(path).unwrap();
    f.configure(None);
    let hosts: Vec<(NodeIdx, u8)> = f
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_switch())
        .flat_map(|(i, n)| {
            n.ports
                .iter()
                .filter(|p| p.remote.is_some())
                .map(move |p| (NodeIdx(i as u32), p.num))
        })
        .collect();
    assert!(hosts.len() > 1000);
    for (i, &a) in hosts.iter().enumerate().step_by(37) {
        for &b in hosts.iter().skip(i % 11).step_by(53) {
            let to = f.node(b.0).lid_of(b.1);
            assert_eq!(f.lid_route(a, to), Some(b), "{a:?} -> {b:?}");
        }
    }
}

#[test]
fn the_pma_counts_simulated_traffic_and_resets() {
    use ibmad::perf::attr_id;
    use ibmad::{MadHeader, MgmtClass, PortCounters, PortCountersExt};
    let (mut f, [h1, sw1, _, h2]) = two_switches();
    f.configure(None);
    let (l_sw1, l_h2) = (f.node(sw1).lid_of(0), f.node(h2).lid_of(1));
    let pma = |attr: u16, method: Method, port: u8| {
        let mut buf = [0u8; 256];
        MadHeader::request(MgmtClass::Perf, 1, method, attr, 0, 5)
            .emit(&mut ibmad::Mad::new_unchecked(&mut buf[..]));
        buf[64 + 1] = port;
        buf
    };
    let counters = |f: &mut Fabric, lid: u16, port: u8| {
        let r = f
            .deliver(
                (h1, 1),
                lid,
                1,
                &pma(attr_id::PORT_COUNTERS, Method::Get, port),
            )
            .unwrap();
        assert_eq!(r.sqp, 1);
        PortCounters::parse(&r.mad[64..]).unwrap()
    };
    // Three directed-route SMPs to h2 cross sw1's port 3 out and back.
    for _ in 0..3 {
        get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3, 4]).unwrap();
    }
    let c = counters(&mut f, l_sw1, 3);
    assert_eq!((c.port_xmit_pkts, c.port_rcv_pkts), (3, 3));
    assert_eq!(c.port_xmit_data, 3 * 72);
    // The PMA request itself crossed sw1 port 1 in (and its answer goes out after).
    let c1 = counters(&mut f, l_sw1, 1);
    assert_eq!(
        c1.port_rcv_pkts,
        3 + 2,
        "3 SMPs and 2 PMA requests came in on port 1"
    );
    // AllPortSelect sums the switch's ports; extended counters agree.
    let all = counters(&mut f, l_sw1, 0xff);
    assert!(all.port_xmit_pkts >= c.port_xmit_pkts + c1.port_xmit_pkts);
    let r = f
        .deliver(
            (h1, 1),
            l_sw1,
            1,
            &pma(attr_id::PORT_COUNTERS_EXT, Method::Get, 3),
        )
        .unwrap();
    let e = PortCountersExt::parse(&r.mad[64..]).unwrap();
    assert_eq!(e.port_xmit_pkts, 3);
    // Set resets; a port the node does not have is an error status.
    f.deliver(
        (h1, 1),
        l_sw1,
        1,
        &pma(attr_id::PORT_COUNTERS, Method::Set, 3),
    )
    .unwrap();
    assert_eq!(counters(&mut f, l_sw1, 3).port_xmit_pkts, 0);
    let r = f
        .deliver(
            (h1, 1),
            l_h2,
            1,
            &pma(attr_id::PORT_COUNTERS, Method::Get, 9),
        )
        .unwrap();
    assert_eq!(
        Smp::new_unchecked(&r.mad[..]).status().without_direction(),
        Status(Status::INVALID_ATTR_VALUE)
    );
    // A class no node serves gets no answer.
    let mut sa = pma(0x12, Method::Get, 0);
    sa[1] = 0x03;
    assert_eq!(f.deliver((h1, 1), l_sw1, 1, &sa), Err(Dropped::NoAgent));
}
