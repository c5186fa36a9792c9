use ibmad::{
    attr::id, DrPath, Method, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo,
    PortState, Smp, Status, SwitchInfo,
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
    // Set resets what CounterSelect selects: nothing with 0, one counter with its bit,
    // everything with 0xffff (what perfquery -R sends); a port the node does not have is
    // an error status.
    let reset = |f: &mut Fabric, select: u16| {
        let mut req = pma(attr_id::PORT_COUNTERS, Method::Set, 3);
        req[64 + 2..64 + 4].copy_from_slice(&select.to_be_bytes());
        f.deliver((h1, 1), l_sw1, 1, &req).unwrap();
    };
    let before = counters(&mut f, l_sw1, 3);
    assert_ne!(before.port_xmit_pkts, 0);
    reset(&mut f, 0);
    // (Port 3 carries none of these queries: its counts stand still.)
    assert_eq!(counters(&mut f, l_sw1, 3), before);
    reset(&mut f, 1 << 14);
    let after = counters(&mut f, l_sw1, 3);
    assert_eq!(after.port_xmit_pkts, 0, "PortXmitPkts reset");
    assert_eq!(
        after.port_xmit_data, before.port_xmit_data,
        "PortXmitData kept"
    );
    reset(&mut f, 0xffff);
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
    assert_eq!(
        f.deliver((h1, 1), l_sw1, 1, &sa),
        Err(Dropped::NoAgent { at: sw1, port: 1 })
    );
}

// ---- The SMA's Set side (state.rs) ----

/// The status (without the D bit) and data of the answer to `method`(`attr`) along `path`
/// (as [`get`]), with `data` as the request's attribute.
fn smp_call(
    f: &mut Fabric,
    from: (NodeIdx, u8),
    method: Method,
    attr: u16,
    modifier: u32,
    path: &[u8],
    data: &[u8],
) -> Result<(Status, [u8; 64]), Dropped> {
    assert_eq!(path.first(), Some(&0), "a route begins with 0");
    let route = DrPath::from_hops(&path[1..]).unwrap();
    let mut req = Smp::dr_request(method, attr, modifier, 0x77, &route);
    req[64..64 + data.len()].copy_from_slice(data);
    let r = f.deliver(from, 0xffff, 0, &req)?;
    let smp = Smp::new_checked(&r.mad[..]).unwrap();
    assert_eq!(smp.method(), Method::GetResp);
    let mut out = [0u8; 64];
    out.copy_from_slice(smp.data());
    Ok((smp.status().without_direction(), out))
}

fn pi_get(f: &mut Fabric, from: (NodeIdx, u8), num: u8, path: &[u8]) -> PortInfo {
    let (st, d) = smp_call(f, from, Method::Get, id::PORT_INFO, num.into(), path, &[]).unwrap();
    assert!(st.is_success(), "{st:?}");
    PortInfo::parse(&d).unwrap()
}

/// Read-modify-write of a PortInfo as an SM does it: the states NoChange unless `edit`
/// changes them. Returns the status and the PortInfo of the response.
fn pi_set(
    f: &mut Fabric,
    from: (NodeIdx, u8),
    num: u8,
    path: &[u8],
    edit: impl FnOnce(&mut PortInfo),
) -> (Status, PortInfo) {
    let mut pi = pi_get(f, from, num, path);
    if pi.lid == 0 {
        pi.lid = 0x40;
    }
    if pi.master_sm_lid == 0 {
        pi.master_sm_lid = 0x41;
    }
    pi.port_state = PortState::NoChange;
    pi.port_physical_state = PhysPortState::NoChange;
    edit(&mut pi);
    let mut data = [0u8; 64];
    pi.emit(&mut data);
    pi_set_raw(f, from, num, path, &data)
}

fn pi_set_raw(
    f: &mut Fabric,
    from: (NodeIdx, u8),
    num: u8,
    path: &[u8],
    data: &[u8; 64],
) -> (Status, PortInfo) {
    let (st, d) = smp_call(f, from, Method::Set, id::PORT_INFO, num.into(), path, data).unwrap();
    (st, PortInfo::parse(&d).unwrap())
}

const INVALID: Status = Status(Status::INVALID_ATTR_VALUE);

/// The nodes without their traffic counters (which every SMP changes).
fn snapshot(f: &Fabric) -> Vec<crate::Node> {
    let mut nodes = f.nodes().to_vec();
    for n in &mut nodes {
        for p in &mut n.ports {
            p.counters = Default::default();
        }
    }
    nodes
}

fn psc(f: &Fabric, sw: NodeIdx) -> bool {
    f.node(sw).switch.as_ref().unwrap().port_state_change
}

fn state(f: &Fabric, n: NodeIdx, p: u8) -> (PortState, PhysPortState) {
    let p = &f.node(n).ports[usize::from(p)];
    (p.state, p.phys)
}

#[test]
fn port_info_set_stores_an_end_ports_fields_and_answers_the_result() {
    let (mut f, [h1, sw1, ..]) = two_switches();
    let from = (h1, 1);
    let (st, pi) = pi_set(&mut f, from, 1, &[0], |pi| {
        pi.lid = 0x10;
        pi.lmc = 2;
        pi.master_sm_lid = 0x20;
        pi.master_sm_sl = 3;
        pi.gid_prefix = 0xfe80_0000_0000_0000;
        pi.m_key = 0x1122_3344_5566_7788;
        pi.m_key_lease_period = 60;
        pi.m_key_protect_bits = 1;
        pi.hoq_life = 0x13;
        pi.operational_vls = 2;
        pi.neighbor_mtu = ibmad::Mtu::Mtu1024;
        pi.link_down_default_state = 1;
    });
    assert!(st.is_success(), "{st:?}");
    assert_eq!(pi.m_key, 0x1122_3344_5566_7788);
    let again = pi_get(&mut f, from, 0, &[0]);
    // Asked without the M_Key at protection level 1: read as 0 (crate::mkey).
    assert_eq!(again.m_key, 0);
    for pi in [pi, again] {
        assert_eq!(
            (pi.lid, pi.lmc, pi.master_sm_lid, pi.master_sm_sl),
            (0x10, 2, 0x20, 3)
        );
        assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!((pi.m_key_lease_period, pi.m_key_protect_bits), (60, 1));
        assert_eq!((pi.hoq_life, pi.operational_vls), (0x13, 2));
        assert_eq!(pi.neighbor_mtu, ibmad::Mtu::Mtu1024);
        assert_eq!(pi.link_down_default_state, 1);
        assert_eq!(pi.port_state, PortState::Initialize, "NoChange keeps");
    }
    // Switch port 0's LID is the switch's; LMC on a base port 0 is not its field.
    let (st, pi) = pi_set(&mut f, from, 0, &[0, 1], |pi| {
        pi.lid = 0x30;
        pi.lmc = 3;
    });
    assert!(st.is_success(), "{st:?}");
    assert_eq!((pi.lid, pi.lmc), (0x30, 0));
    assert_eq!(f.node(sw1).lid_of(7), 0x30);
    // A switch's external port ignores the end-port fields.
    let (st, pi) = pi_set(&mut f, from, 3, &[0, 1], |pi| {
        pi.lid = 0x99;
        pi.m_key = 5;
    });
    assert!(st.is_success(), "{st:?}");
    assert_eq!((pi.lid, pi.m_key), (0, 0));
    assert_eq!(f.node(sw1).lid_of(0), 0x30);
    assert_eq!(f.node(sw1).ports[3].lid, 0);
}

#[test]
fn hostile_port_info_sets_are_refused_and_change_nothing() {
    let (mut f, [h1, sw1, ..]) = two_switches();
    let from = (h1, 1);
    let before = snapshot(&f);
    type Edit = fn(&mut PortInfo);
    let cases: [(&str, u8, &[u8], Edit); 17] = [
        ("LID 0", 1, &[0], |pi| pi.lid = 0),
        ("LID 0xc000 (multicast)", 1, &[0], |pi| pi.lid = 0xc000),
        ("LID 0xffff (permissive)", 1, &[0], |pi| pi.lid = 0xffff),
        ("LID range past 0xbfff", 1, &[0], |pi| {
            pi.lid = 0xbffe;
            pi.lmc = 2
        }),
        ("SM LID 0xc000", 1, &[0], |pi| pi.master_sm_lid = 0xc000),
        ("SM LID 0", 0, &[0, 1], |pi| pi.master_sm_lid = 0),
        ("switch LID 0xc001", 0, &[0, 1], |pi| pi.lid = 0xc001),
        ("width not supported", 1, &[0], |pi| {
            pi.link_width_enabled = 0x20
        }),
        ("speed not supported", 1, &[0], |pi| {
            pi.link_speed_enabled = 8
        }),
        ("ext speed reserved", 3, &[0, 1], |pi| {
            pi.link_speed_ext_enabled = 16
        }),
        ("MTU 0", 1, &[0], |pi| pi.neighbor_mtu = ibmad::Mtu::from(0)),
        ("MTU above MTUCap", 1, &[0], |pi| {
            pi.neighbor_mtu = ibmad::Mtu::Mtu4096
        }),
        ("OperationalVLs above VLCap", 1, &[0], |pi| {
            pi.operational_vls = 5
        }),
        ("LinkDownDefaultState 3", 1, &[0], |pi| {
            pi.link_down_default_state = 3
        }),
        ("PhysState Sleep", 1, &[0], |pi| {
            pi.port_physical_state = PhysPortState::Sleep
        }),
        ("PhysState on switch port 0", 0, &[0, 1], |pi| {
            pi.port_physical_state = PhysPortState::Disabled
        }),
        ("PortState 5", 1, &[0], |pi| {
            pi.port_state = PortState::from(5)
        }),
    ];
    for (what, num, path, edit) in cases {
        let (st, _) = pi_set(&mut f, from, num, path, edit);
        assert_eq!(st, INVALID, "{what}");
        assert_eq!(snapshot(&f), before, "{what} changed something");
    }
    // A port the node does not have, a modifier past 8 bits, and on a CA a port other
    // than the one the SMP came in on.
    let mut data = [0u8; 64];
    PortInfo {
        lid: 5,
        master_sm_lid: 5,
        neighbor_mtu: ibmad::Mtu::Mtu2048,
        ..PortInfo::default()
    }
    .emit(&mut data);
    for (modifier, path) in [
        (9u32, &[0u8, 1][..]),
        (0x103, &[0, 1]),
        (2, &[0]),
        (3, &[0]),
    ] {
        let (st, _) = smp_call(
            &mut f,
            from,
            Method::Set,
            id::PORT_INFO,
            modifier,
            path,
            &data,
        )
        .unwrap();
        assert_eq!(st, INVALID, "modifier {modifier:#x} along {path:?}");
    }
    assert_eq!(snapshot(&f), before);
    // LMC is three bits: a byte 34 of all ones is M_KeyProtectBits 3, LMC 7 (the reserved
    // bits between are ignored).
    let mut pi = pi_get(&mut f, from, 1, &[0]);
    pi.lid = 0x80;
    pi.master_sm_lid = 1;
    pi.port_state = PortState::NoChange;
    pi.port_physical_state = PhysPortState::NoChange;
    pi.emit(&mut data);
    data[34] = 0xff;
    let (st, pi) = pi_set_raw(&mut f, from, 1, &[0], &data);
    assert!(st.is_success(), "{st:?}");
    assert_eq!((pi.lmc, pi.m_key_protect_bits), (7, 3));
    let _ = sw1;
}

/// Every (state, requested state) pair on sw1's port 3 (linked to sw2) and its port 2
/// (unlinked): Down from anything, Init -> Armed -> Active in order, the current state
/// again is no change; everything else is "invalid attribute value".
#[test]
fn port_state_transitions_follow_the_state_machine() {
    use PortState::*;
    let reach = |f: &mut Fabric, from: PortState| {
        // sw1 port 3 into `from`, through Sets (Down: disabled).
        let (h1, _) = (NodeIdx(0), ());
        let from_port = (h1, 1);
        let steps: &[PortState] = match from {
            Initialize => &[],
            Armed => &[Armed],
            Active => &[Armed, Active],
            _ => &[],
        };
        for &s in steps {
            let (st, _) = pi_set(f, from_port, 3, &[0, 1], |pi| pi.port_state = s);
            assert!(st.is_success());
        }
        if from == Down {
            let (st, _) = pi_set(f, from_port, 3, &[0, 1], |pi| {
                pi.port_physical_state = PhysPortState::Disabled
            });
            assert!(st.is_success());
        }
    };
    let allowed = |from: PortState, to: PortState| -> Option<PortState> {
        // The state after an allowed Set (Down retrains a link at once: Initialize).
        match (from, to) {
            (_, NoChange) => Some(from),
            (Down, Down) => Some(Down),
            (_, Down) => Some(Initialize),
            (Initialize, Initialize) | (Initialize, Armed) => Some(to),
            (Armed, Armed) | (Armed, Active) => Some(to),
            (Active, Active) => Some(Active),
            _ => None,
        }
    };
    let all = [
        NoChange,
        Down,
        Initialize,
        Armed,
        Active,
        PortState::from(5),
        PortState::from(15),
    ];
    for from in [Down, Initialize, Armed, Active] {
        for to in all {
            let (mut f, [h1, sw1, ..]) = two_switches();
            reach(&mut f, from);
            assert_eq!(state(&f, sw1, 3).0, from);
            let before = snapshot(&f);
            let (st, pi) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| pi.port_state = to);
            match allowed(from, to) {
                Some(after) => {
                    assert!(st.is_success(), "{from} -> {to}: {st:?}");
                    assert_eq!(pi.port_state, after, "{from} -> {to}");
                    assert_eq!(state(&f, sw1, 3).0, after, "{from} -> {to}");
                }
                None => {
                    assert_eq!(st, INVALID, "{from} -> {to}");
                    assert_eq!(snapshot(&f), before, "{from} -> {to} changed something");
                }
            }
        }
    }
    // An unlinked port is Down: only NoChange and Down are allowed.
    for to in all {
        let (mut f, [h1, ..]) = two_switches();
        let (st, pi) = pi_set(&mut f, (h1, 1), 2, &[0, 1], |pi| pi.port_state = to);
        if matches!(to, NoChange | Down) {
            assert!(st.is_success(), "unlinked -> {to}");
            assert_eq!(pi.port_state, Down);
        } else {
            assert_eq!(st, INVALID, "unlinked -> {to}");
        }
    }
    // A switch's port 0 is Active: Active is no change, Down and Armed are refused.
    for (to, ok) in [
        (Active, true),
        (Armed, false),
        (Down, false),
        (Initialize, false),
    ] {
        let (mut f, [h1, ..]) = two_switches();
        let (st, _) = pi_set(&mut f, (h1, 1), 0, &[0, 1], |pi| pi.port_state = to);
        assert_eq!(st.is_success(), ok, "port 0 -> {to}");
    }
    // A physical change with the logical state going up is refused.
    let (mut f, [h1, ..]) = two_switches();
    let (st, _) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_physical_state = PhysPortState::Polling;
        pi.port_state = Armed;
    });
    assert_eq!(st, INVALID);
}

#[test]
fn down_retrains_the_link_and_raises_port_state_change_on_both_switches() {
    let (mut f, [h1, sw1, sw2, _]) = two_switches();
    for sw in [sw1, sw2] {
        assert!(psc(&f, sw), "linked at build: set");
        let (st, _) = smp_call(
            &mut f,
            (h1, 1),
            Method::Get,
            id::SWITCH_INFO,
            0,
            if sw == sw1 { &[0, 1] } else { &[0, 1, 3] },
            &[],
        )
        .unwrap();
        assert!(st.is_success());
    }
    // Clear both (writing 0 leaves it, writing 1 clears).
    for (sw, path) in [(sw1, &[0u8, 1][..]), (sw2, &[0, 1, 3])] {
        let (_, d) = smp_call(&mut f, (h1, 1), Method::Get, id::SWITCH_INFO, 0, path, &[]).unwrap();
        let mut si = SwitchInfo::parse(&d).unwrap();
        si.port_state_change = false;
        let mut data = [0u8; 64];
        si.emit(&mut data);
        let (st, _) = smp_call(
            &mut f,
            (h1, 1),
            Method::Set,
            id::SWITCH_INFO,
            0,
            path,
            &data,
        )
        .unwrap();
        assert!(st.is_success());
        assert!(psc(&f, sw), "writing 0 keeps it");
        si.port_state_change = true;
        si.emit(&mut data);
        let (st, d) = smp_call(
            &mut f,
            (h1, 1),
            Method::Set,
            id::SWITCH_INFO,
            0,
            path,
            &data,
        )
        .unwrap();
        assert!(st.is_success());
        assert!(!SwitchInfo::parse(&d).unwrap().port_state_change);
        assert!(!psc(&f, sw), "writing 1 clears it");
    }
    // Arm and activate both ends of sw1-sw2, then take it Down from sw1's end.
    for s in [PortState::Armed, PortState::Active] {
        for (num, path) in [(3u8, &[0u8, 1][..]), (2, &[0, 1, 3])] {
            let (st, _) = pi_set(&mut f, (h1, 1), num, path, |pi| pi.port_state = s);
            assert!(st.is_success());
        }
    }
    assert!(
        !psc(&f, sw1) && !psc(&f, sw2),
        "Armed and Active are not link events"
    );
    assert_eq!(state(&f, sw2, 2).0, PortState::Active);
    let (st, pi) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_state = PortState::Down
    });
    assert!(st.is_success());
    assert_eq!(
        (pi.port_state, pi.port_physical_state),
        (PortState::Initialize, PhysPortState::LinkUp),
        "down, then trained again"
    );
    assert_eq!(
        state(&f, sw2, 2),
        (PortState::Initialize, PhysPortState::LinkUp)
    );
    assert!(psc(&f, sw1) && psc(&f, sw2), "both ends went down and up");
}

#[test]
fn disable_takes_the_link_down_on_both_ends_and_polling_brings_it_back() {
    let (mut f, [h1, sw1, sw2, h2]) = two_switches();
    f.configure(None);
    let l_h2 = f.node(h2).lid_of(1);
    assert!(f.lid_route((h1, 1), l_h2).is_some());
    let (st, pi) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_physical_state = PhysPortState::Disabled
    });
    assert!(st.is_success());
    assert_eq!(
        (pi.port_state, pi.port_physical_state),
        (PortState::Down, PhysPortState::Disabled)
    );
    assert_eq!(state(&f, sw2, 2), (PortState::Down, PhysPortState::Polling));
    assert!(psc(&f, sw1) && psc(&f, sw2));
    assert_eq!(
        get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3]),
        Err(Dropped::NoLink)
    );
    assert_eq!(f.lid_route((h1, 1), l_h2), None);
    // Disabled again is fine; enabling brings both ends up to Initialize.
    let (st, _) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_physical_state = PhysPortState::Disabled
    });
    assert!(st.is_success());
    let (st, pi) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_physical_state = PhysPortState::Polling
    });
    assert!(st.is_success());
    assert_eq!(
        (pi.port_state, pi.port_physical_state),
        (PortState::Initialize, PhysPortState::LinkUp)
    );
    assert_eq!(
        state(&f, sw2, 2),
        (PortState::Initialize, PhysPortState::LinkUp)
    );
    assert!(get(&mut f, (h1, 1), id::NODE_INFO, 0, &[0, 1, 3]).is_ok());
    // Polling on a link that is up retrains it (ibportstate's reset): Active -> Initialize.
    let (mut f, [h1, _, sw2, _]) = two_switches();
    f.configure(None);
    let (st, pi) = pi_set(&mut f, (h1, 1), 3, &[0, 1], |pi| {
        pi.port_physical_state = PhysPortState::Polling
    });
    assert!(st.is_success());
    assert_eq!(pi.port_state, PortState::Initialize);
    assert_eq!(state(&f, sw2, 2).0, PortState::Initialize);
    // A far end whose LinkDownDefaultState is Sleep does not retrain until it polls.
    let (mut f, [h1, sw1, _, _]) = two_switches();
    let (st, _) = pi_set(&mut f, (h1, 1), 1, &[0, 1], |pi| {
        pi.link_down_default_state = 1
    });
    assert!(st.is_success());
    let (st, pi) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| {
        pi.port_state = PortState::Down
    });
    assert!(st.is_success());
    assert_eq!(pi.port_physical_state, PhysPortState::Polling);
    assert_eq!(state(&f, sw1, 1), (PortState::Down, PhysPortState::Sleep));
}

#[test]
fn enabled_widths_and_speeds_renegotiate_with_the_far_end() {
    let (mut f, [h1, sw1, ..]) = two_switches();
    let active = |f: &mut Fabric| {
        let a = pi_get(f, (h1, 1), 1, &[0]);
        let b = pi_get(f, (h1, 1), 1, &[0, 1]);
        assert_eq!(a.link_width_active, b.link_width_active);
        assert_eq!(a.link_speed_active, b.link_speed_active);
        (u8::from(a.link_width_active), a.link_speed_active)
    };
    assert_eq!(active(&mut f), (2, 1), "4x SDR");
    // 255 and 15 enable everything supported; the far end still enables only 4x SDR.
    let (st, pi) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| {
        pi.link_width_enabled = 255;
        pi.link_speed_enabled = 15;
    });
    assert!(st.is_success());
    assert_eq!((pi.link_width_enabled, pi.link_speed_enabled), (0x1f, 7));
    let (st, _) = pi_set(&mut f, (h1, 1), 1, &[0, 1], |pi| {
        pi.link_width_enabled = 1 | 8;
        pi.link_speed_enabled = 2 | 4;
    });
    assert!(st.is_success());
    assert_eq!(active(&mut f), (8, 4), "12x QDR, the best both enable");
    let (st, _) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| pi.link_width_enabled = 1);
    assert!(st.is_success());
    assert_eq!(active(&mut f), (1, 4), "1x");
    assert_eq!(state(&f, sw1, 1).1, PhysPortState::LinkUp);
    // Nothing in common: the link goes down on both ends, and comes back once there is.
    let (st, _) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| pi.link_speed_enabled = 1);
    assert!(st.is_success());
    assert_eq!(state(&f, sw1, 1), (PortState::Down, PhysPortState::Polling));
    assert_eq!(state(&f, h1, 1), (PortState::Down, PhysPortState::Polling));
    let (st, _) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| pi.link_speed_enabled = 15);
    assert!(st.is_success());
    assert_eq!(
        state(&f, sw1, 1),
        (PortState::Initialize, PhysPortState::LinkUp)
    );
    assert_eq!(active(&mut f), (1, 4));
    // Extended speeds: 0 keeps, 31 enables the supported ones, 30 disables them.
    f.node_mut(sw1).ports[1].speed_ext_enabled = 1;
    let (st, pi) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| {
        pi.link_speed_ext_enabled = 31
    });
    assert!(st.is_success());
    assert_eq!(
        (pi.link_speed_ext_enabled, pi.link_speed_ext_active),
        (7, 1)
    );
    let (st, pi) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| pi.link_speed_ext_enabled = 0);
    assert!(st.is_success());
    assert_eq!(pi.link_speed_ext_active, 1, "0 is no change");
    let (st, pi) = pi_set(&mut f, (h1, 1), 1, &[0], |pi| {
        pi.link_speed_ext_enabled = 30
    });
    assert!(st.is_success());
    assert_eq!(pi.link_speed_ext_active, 0);
    assert_eq!(f.node(h1).ports[1].speed_ext_enabled, 0);
}

#[test]
fn switch_info_and_lft_sets_program_the_switch() {
    let (mut f, [h1, sw1, _, h2]) = two_switches();
    f.configure(None);
    let from = (h1, 1);
    let (_, d) = smp_call(&mut f, from, Method::Get, id::SWITCH_INFO, 0, &[0, 1], &[]).unwrap();
    let si = SwitchInfo::parse(&d).unwrap();
    let set_si = |f: &mut Fabric, edit: &dyn Fn(&mut SwitchInfo)| {
        let mut s = si;
        edit(&mut s);
        let mut data = [0u8; 64];
        s.emit(&mut data);
        let (st, d) = smp_call(f, from, Method::Set, id::SWITCH_INFO, 0, &[0, 1], &data).unwrap();
        (st, SwitchInfo::parse(&d).unwrap())
    };
    let (st, got) = set_si(&mut f, &|s| {
        s.linear_fdb_top = 0x1ff;
        s.life_time_value = 0x12;
        s.default_port = 3;
        s.default_multicast_primary_port = 1;
        s.default_multicast_not_primary_port = 0xff;
        s.linear_fdb_cap = 7; // read-only: ignored
    });
    assert!(st.is_success());
    assert_eq!(
        (got.linear_fdb_top, got.life_time_value, got.default_port),
        (0x1ff, 0x12, 3)
    );
    assert_eq!(
        (
            got.default_multicast_primary_port,
            got.default_multicast_not_primary_port
        ),
        (1, 0xff)
    );
    assert_eq!(got.linear_fdb_cap, 30 * 1024);
    let before = snapshot(&f);
    for (what, edit) in [
        (
            "top at LinearFDBCap",
            &(|s: &mut SwitchInfo| s.linear_fdb_top = 30 * 1024) as &dyn Fn(&mut SwitchInfo),
        ),
        ("top 0xffff", &|s| s.linear_fdb_top = 0xffff),
        ("default port 9", &|s| s.default_port = 9),
        ("multicast port 200", &|s| {
            s.default_multicast_primary_port = 200
        }),
    ] {
        let (st, _) = set_si(&mut f, edit);
        assert_eq!(st, INVALID, "{what}");
        assert_eq!(snapshot(&f), before, "{what}");
    }
    // LFT blocks: written, grown up to LinearFDBCap, answered back; past it refused.
    let mut block = [0xffu8; 64];
    block[5] = 3;
    block[63] = 1;
    let (st, d) = smp_call(&mut f, from, Method::Set, id::LFT, 7, &[0, 1], &block).unwrap();
    assert!(st.is_success());
    assert_eq!(d, block);
    let lft = &f.node(sw1).switch.as_ref().unwrap().lft;
    assert_eq!(
        (lft.len(), lft[7 * 64 + 5], lft[8 * 64 - 1]),
        (8 * 64, 3, 1)
    );
    let (st, d) = smp_call(&mut f, from, Method::Get, id::LFT, 7, &[0, 1], &[]).unwrap();
    assert!(st.is_success());
    assert_eq!(d, block);
    let last = 30 * 1024 / 64 - 1;
    let (st, _) = smp_call(&mut f, from, Method::Set, id::LFT, last, &[0, 1], &block).unwrap();
    assert!(st.is_success());
    assert_eq!(f.node(sw1).switch.as_ref().unwrap().lft.len(), 30 * 1024);
    for b in [last + 1, 767, 0xffff_ffff] {
        let (st, _) = smp_call(&mut f, from, Method::Set, id::LFT, b, &[0, 1], &block).unwrap();
        assert_eq!(st, INVALID, "block {b}");
    }
    // LFTs are a switch's: a CA answers "not supported".
    let (st, _) = smp_call(&mut f, from, Method::Set, id::LFT, 0, &[0], &block).unwrap();
    assert_eq!(st, Status(Status::METHOD_ATTR_NOT_SUPPORTED));
    // LinearFDBTop bounds routing: a DLID above it is discarded.
    let l_h2 = f.node(h2).lid_of(1);
    assert!(f.lid_route(from, l_h2).is_some());
    let (st, _) = set_si(&mut f, &|s| s.linear_fdb_top = l_h2 - 1);
    assert!(st.is_success());
    assert_eq!(f.lid_route(from, l_h2), None);
    // Routing follows a rewritten block: h2's LID out of port 2 (no link) is dropped.
    let (st, _) = set_si(&mut f, &|s| s.linear_fdb_top = 0x1ff);
    assert!(st.is_success());
    let mut b0 = [0u8; 64];
    b0.copy_from_slice(&f.node(sw1).switch.as_ref().unwrap().lft[..64]);
    b0[usize::from(l_h2)] = 2;
    let (st, _) = smp_call(&mut f, from, Method::Set, id::LFT, 0, &[0, 1], &b0).unwrap();
    assert!(st.is_success());
    assert_eq!(f.lid_route(from, l_h2), None);
}

#[test]
fn read_only_and_sm_attributes_refuse_sets() {
    let (mut f, [h1, ..]) = two_switches();
    let from = (h1, 1);
    let data = [0x41u8; 64];
    for (method, attr, path) in [
        (Method::Set, id::NODE_DESC, &[0u8, 1][..]),
        (Method::Set, id::NODE_DESC, &[0]),
        (Method::Set, id::NODE_INFO, &[0, 1]),
        (Method::Set, id::SWITCH_INFO, &[0]),
        (Method::Get, id::SM_INFO, &[0, 1]),
        (Method::Set, id::SM_INFO, &[0]),
        (Method::Set, id::MLNX_EXT_PORT_INFO, &[0]),
    ] {
        let before = snapshot(&f);
        let (st, _) = smp_call(&mut f, from, method, attr, 0, path, &data).unwrap();
        assert_eq!(
            st,
            Status(Status::METHOD_ATTR_NOT_SUPPORTED),
            "{method:?} {attr:#x}"
        );
        assert_eq!(snapshot(&f), before);
    }
    let d = get(&mut f, from, id::NODE_DESC, 0, &[0]).unwrap();
    let d = NodeDescription::parse(Smp::new_checked(&d[..]).unwrap().data()).unwrap();
    assert_eq!(d.as_str(), "h1 desc");
}

/// Directed routes from `from` to every node, by the port each is entered through: for a
/// switch one route, for a CA one a linked port (the route arrives on it).
fn dr_routes(f: &Fabric, from: (NodeIdx, u8)) -> Vec<((NodeIdx, u8), Vec<u8>)> {
    let mut out = vec![(from, vec![0u8])];
    let mut seen = std::collections::HashSet::from([from.0]);
    let mut queue = std::collections::VecDeque::new();
    let (first, first_port) = f.node(from.0).ports[usize::from(from.1)].remote.unwrap();
    queue.push_back(((first, first_port), vec![0u8, from.1]));
    while let Some(((n, in_port), route)) = queue.pop_front() {
        if !f.node(n).is_switch() {
            out.push(((n, in_port), route));
            continue;
        }
        if !seen.insert(n) {
            continue;
        }
        out.push(((n, 0), route.clone()));
        for p in f.node(n).ports.iter().skip(1) {
            if let Some(far) = p.remote {
                if !f.node(far.0).is_switch() || far != from {
                    let mut r = route.clone();
                    r.push(p.num);
                    queue.push_back((far, r));
                }
            }
        }
    }
    out
}

/// An SM's sweep by hand over `Fabric::deliver` on an unconfigured fabric: LIDs and the SM
/// LID into every end port, LFT blocks (min-hop tables, computed on a copy) and
/// LinearFDBTop into every switch, PortStateChange cleared, then Armed and Active on both
/// ends of every link. Every linked port ends Active and LID routes work.
fn sweep_by_hand(path: &str) {
    let mut f = Fabric::load(path).unwrap();
    let sm = f
        .nodes()
        .iter()
        .enumerate()
        .find_map(|(i, n)| {
            let p = n.ports.iter().find(|p| p.remote.is_some())?;
            (!n.is_switch()).then_some((NodeIdx(i as u32), p.num))
        })
        .unwrap();
    let routes = dr_routes(&f, sm);
    let switch_routes: Vec<_> = routes
        .iter()
        .filter(|((n, _), _)| f.node(*n).is_switch())
        .cloned()
        .collect();
    // LIDs: in route order from 1; the SM's port is LID 1.
    let mut lid = 0u16;
    for ((n, num), route) in &routes {
        lid += 1;
        let (st, pi) = pi_set(&mut f, sm, *num, route, |pi| {
            pi.lid = lid;
            pi.master_sm_lid = 1;
            pi.gid_prefix = 0xfe80_0000_0000_0000;
        });
        assert!(st.is_success(), "{n:?} {num}: {st:?}");
        assert_eq!(pi.lid, lid);
    }
    // LFTs from min-hop routing on a copy with the LIDs the Sets gave.
    let mut plan = f.clone();
    plan.route_min_hop();
    for ((n, _), route) in switch_routes.iter() {
        let sw = plan.node(*n).switch.clone().unwrap();
        for (b, chunk) in sw.lft.chunks(64).enumerate() {
            let mut block = [0xffu8; 64];
            block[..chunk.len()].copy_from_slice(chunk);
            let (st, _) =
                smp_call(&mut f, sm, Method::Set, id::LFT, b as u32, route, &block).unwrap();
            assert!(st.is_success());
        }
        let (_, d) = smp_call(&mut f, sm, Method::Get, id::SWITCH_INFO, 0, route, &[]).unwrap();
        let mut si = SwitchInfo::parse(&d).unwrap();
        si.linear_fdb_top = sw.linear_fdb_top;
        si.port_state_change = true;
        let mut data = [0u8; 64];
        si.emit(&mut data);
        let (st, _) = smp_call(&mut f, sm, Method::Set, id::SWITCH_INFO, 0, route, &data).unwrap();
        assert!(st.is_success());
        assert!(!psc(&f, *n));
    }
    // Both ends of every link: Armed, then Active. A switch port is set through the
    // switch's route; a CA port through the route that arrives on it.
    let route_to = |(n, num): (NodeIdx, u8)| -> (u8, Vec<u8>) {
        let key = if f.node(n).is_switch() {
            (n, 0)
        } else {
            (n, num)
        };
        let r = routes.iter().find(|(k, _)| *k == key).unwrap().1.clone();
        (if f.node(n).is_switch() { num } else { 0 }, r)
    };
    let mut ends = Vec::new();
    for (i, n) in f.nodes().iter().enumerate() {
        for p in n.ports.iter().filter(|p| p.remote.is_some()) {
            ends.push(route_to((NodeIdx(i as u32), p.num)));
        }
    }
    for s in [PortState::Armed, PortState::Active] {
        for (num, route) in &ends {
            let (st, pi) = pi_set(&mut f, sm, *num, route, |pi| pi.port_state = s);
            assert!(st.is_success(), "{s} along {route:?}: {st:?}");
            assert_eq!(pi.port_state, s);
        }
    }
    for n in f.nodes() {
        for p in n.ports.iter().filter(|p| p.remote.is_some()) {
            assert_eq!(
                (p.state, p.phys),
                (PortState::Active, PhysPortState::LinkUp),
                "{} port {}",
                n.spec.id,
                p.num
            );
        }
        if let Some(sw) = &n.switch {
            assert!(
                !sw.port_state_change,
                "{}: arming is no link event",
                n.spec.id
            );
        }
    }
    // LID routes between sampled hosts, and to every switch from the SM.
    let hosts: Vec<(NodeIdx, u8)> = routes
        .iter()
        .filter(|((n, _), _)| !f.node(*n).is_switch())
        .map(|(k, _)| *k)
        .collect();
    let step = (hosts.len() / 12).max(1);
    for &a in hosts.iter().step_by(step) {
        for &b in hosts.iter().skip(1).step_by(step) {
            let to = f.node(b.0).lid_of(b.1);
            assert_eq!(f.lid_route(a, to), Some(b), "{a:?} -> {b:?}");
        }
    }
    for ((n, _), _) in switch_routes.iter() {
        let l = f.node(*n).lid_of(0);
        let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, 3);
        let r = f.deliver(sm, l, 0, &req).unwrap();
        let ni = NodeInfo::parse(Smp::new_checked(&r.mad[..]).unwrap().data()).unwrap();
        assert_eq!(ni.node_guid, f.node(*n).spec.guid);
    }
}

#[test]
fn a_hand_written_sweep_leaves_every_link_active_and_lids_routing() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fabrics/");
    for net in ["example.net", "fattree-1008.net", "lmc.net"] {
        sweep_by_hand(&format!("{dir}{net}"));
    }
}

/// A Trap (whose TrapRepress is no response) sent to an agent is answered with GetResp and
/// "method not supported" (found by the fuzz target `sim_deliver`).
#[test]
fn a_trap_to_an_agent_is_answered_with_a_response() {
    use ibmad::{MadHeader, MgmtClass};
    let (mut f, [h1, sw1, ..]) = two_switches();
    f.configure(None);
    let l_sw1 = f.node(sw1).lid_of(0);
    for (class, qp) in [(MgmtClass::Perf, 1), (MgmtClass::SubnLid, 0)] {
        let mut buf = [0u8; 256];
        MadHeader::request(class, 1, Method::Trap, 0x12, 0, 5)
            .emit(&mut ibmad::Mad::new_unchecked(&mut buf[..]));
        let r = f.deliver((h1, 1), l_sw1, qp, &buf).unwrap();
        let mad = ibmad::Mad::new_unchecked(&r.mad[..]);
        assert_eq!(mad.method(), Method::GetResp, "{class:?}");
        assert_eq!(
            mad.status().without_direction(),
            Status(Status::METHOD_NOT_SUPPORTED)
        );
    }
}

#[test]
fn p_key_tables_start_as_ibsim_and_take_sets_by_block() {
    let (mut f, [h1, sw1, ..]) = two_switches();
    let pkeys =
        |f: &mut Fabric, method: Method, modifier: u32, path: &[u8], keys: Option<[u16; 32]>| {
            let p = DrPath::from_hops(&path[1..]).unwrap();
            let mut req = Smp::dr_request(method, id::PKEY_TABLE, modifier, 3, &p);
            if let Some(k) = keys {
                ibmad::PKeyTable { pkeys: k }.emit(Smp::new_unchecked(&mut req[..]).data_mut());
            }
            let r = f.smp((h1, 1), &req).unwrap();
            let smp = Smp::new_checked(&r[..]).unwrap();
            (
                smp.status().without_direction(),
                ibmad::PKeyTable::parse(smp.data()).unwrap().pkeys,
            )
        };
    // The default: 0xFFFF at index 0; a CA has 64 keys (2 blocks), a switch port 0 8.
    let (st, k) = pkeys(&mut f, Method::Get, 0, &[0], None);
    assert!(st.is_success());
    assert_eq!((k[0], k[1]), (0xffff, 0));
    assert!(pkeys(&mut f, Method::Get, 1, &[0], None).0.is_success());
    assert_eq!(
        pkeys(&mut f, Method::Get, 2, &[0], None).0,
        Status(Status::INVALID_ATTR_VALUE)
    );
    assert_eq!(
        pkeys(&mut f, Method::Get, 1, &[0, 1], None).0,
        Status(Status::INVALID_ATTR_VALUE)
    );
    // A switch's external port by bits 16-23; one that does not exist is refused.
    assert!(pkeys(&mut f, Method::Get, 3 << 16, &[0, 1], None)
        .0
        .is_success());
    assert_eq!(
        pkeys(&mut f, Method::Get, 9 << 16, &[0, 1], None).0,
        Status(Status::INVALID_ATTR_VALUE)
    );
    // A Set writes one block and answers with it.
    let mut keys = [0u16; 32];
    keys[0] = 0xffff;
    keys[5] = 0x8001;
    let (st, k) = pkeys(&mut f, Method::Set, 3 << 16, &[0, 1], Some(keys));
    assert!(st.is_success());
    assert_eq!(k[5], 0x8001);
    assert_eq!(
        pkeys(&mut f, Method::Get, 3 << 16, &[0, 1], None).1[5],
        0x8001
    );
    assert_eq!(
        pkeys(&mut f, Method::Get, 2 << 16, &[0, 1], None).1[5],
        0,
        "other ports keep theirs"
    );
    let _ = sw1;
}

#[test]
fn preset_lids_keep_their_whole_lmc_range_and_any_value_is_survived() {
    let (mut f, [h1, sw1, sw2, h2]) = two_switches();
    // h1 port 1 holds LIDs 4-7 (LMC 2); sw2 has a LID past the unicast range (a builder may
    // set anything): neither makes configure panic or give a LID twice.
    f.node_mut(h1).ports[1].lid = 4;
    f.node_mut(h1).ports[1].lmc = 2;
    f.node_mut(sw2).ports[0].lid = 0xffff;
    f.configure(None);
    let given = [
        f.node(h1).ports[2].lid,
        f.node(sw1).ports[0].lid,
        f.node(h2).ports[1].lid,
    ];
    for lid in given {
        assert!(
            !(4..=7).contains(&lid),
            "LID {lid} is inside h1's range 4-7: {given:?}"
        );
        assert_ne!(lid, 0);
    }
}

#[test]
fn lid_routes_cross_any_number_of_switches_and_loops_are_dropped() {
    // A ring of 200 switches, one HCA each: min-hop routes up to 100 switches long.
    let mut f = Fabric::load_named("ring:200,1").unwrap();
    f.configure(None).unwrap();
    let hcas: Vec<NodeIdx> = (0..f.len() as u32)
        .map(NodeIdx)
        .filter(|&n| !f.node(n).is_switch())
        .collect();
    let (a, far) = (hcas[0], hcas[100]);
    let mut hops = Vec::new();
    let there = f.lid_path((a, 1), f.lid_of(far, 1), &mut hops);
    assert_eq!(there, Some((far, 1)));
    assert!(hops.len() > 100, "{} links", hops.len());
    // A loop: two neighbours' tables point at each other for that LID.
    let lid = f.lid_of(far, 1);
    let sw = f.node(a).ports[1].remote.unwrap().0;
    let out = f.node(sw).switch.as_ref().unwrap().route(lid).unwrap();
    let (next, back) = f.node(sw).ports[usize::from(out)].remote.unwrap();
    let block = usize::from(lid);
    f.node_mut(next).switch.as_mut().unwrap().lft[block] = back;
    assert_eq!(f.lid_route((a, 1), lid), None, "a loop is dropped");
}

/// Each IBA rule a netfile can break, as text: refused with the file, the line of the node
/// (or link) at fault and what is wrong.
#[test]
fn bad_netfiles_are_refused_with_the_file_and_line() {
    let good_sw = "Switch\t4 \"S-a\"\t\t# \"a\" base port 0 lid 0 lmc 0\n[1]\t\"H-b\"[1]\n\n";
    let good_ca = "Hca\t1 \"H-b\"\t\t# \"b\"\n[1]\t\"S-a\"[1]\n\n";
    let cases: [(&str, String, usize, &str); 5] = [
        (
            "a 255-port switch",
            format!("{good_ca}Switch\t255 \"S-a\"\n[1]\t\"H-b\"[1]\n"),
            4,
            "at most 254",
        ),
        (
            "a duplicate GUID",
            format!("{good_sw}{good_ca}caguid=0x100000\nHca\t1 \"H-c\"\n"),
            8,
            "already",
        ),
        (
            "a LID past the unicast range",
            format!("{good_sw}Hca\t1 \"H-b\"\t\t# \"b\"\n[1]\t\"S-a\"[1]\t\t# lid 49152 lmc 0 \"a\" lid 0 4xQDR\n"),
            4,
            "unicast",
        ),
        (
            "a port past the node's ports",
            format!("{good_ca}Switch\t4 \"S-a\"\n[1]\t\"H-b\"[1]\n[5]\t\"H-b\"[1]\n"),
            6,
            "bad port num 5",
        ),
        (
            "ends that disagree",
            format!("{good_sw}Hca\t2 \"H-b\"\n[1]\t\"S-a\"[1]\n[2]\t\"S-a\"[1]\n"),
            4,
            "",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("ibnetsim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (what, text, line, says)) in cases.into_iter().enumerate() {
        let path = dir.join(format!("bad{i}.net"));
        std::fs::write(&path, text).unwrap();
        let e = Fabric::load(&path).map(|_| ()).expect_err(what).to_string();
        let at = format!("{}:{line}: ", path.display());
        assert!(e.starts_with(&at), "{what}: not at {at}: {e}");
        assert!(e.contains(says), "{what}: {e}");
        eprintln!("{what}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
