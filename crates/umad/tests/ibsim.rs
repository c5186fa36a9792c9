//! The `umad` core against a private ibsim on `fabrics/example.net`, through the native ibsim
//! transport (no LD_PRELOAD). Each test starts its own simulator, so tests that change the
//! fabric (error rates) cannot disturb the others.
//!
//! Fabric (see `fabrics/README.md`): H-host1[1] – [1]S-sw1[8] – [8]S-sw2[1] – [1]H-host3;
//! H-host1 is where a client attaches by default; S-sw1 port 3 leads nowhere.

use std::time::{Duration, Instant};

use ibmad::attr::id;
use ibmad::{DrPath, Method, NodeDescription, NodeInfo, NodeType, PortInfo, PortState, Smp};
use ibsim_harness::{example_fabric, example_net as net, require_ibsim, Ibsim};
use umad::carrier::ibsim::IbsimOptions;
use umad::{AgentSpec, Error, MadAddr, Port, Received};

const DR: u8 = 0x81;
const LID_ROUTED: u8 = 0x01;
const PERF: u8 = 0x04;

/// A private ibsim on the example fabric with LIDs assigned by one opensm sweep, or `None`
/// (and a loud SKIPPED line) when ibsim is not installed outside CI.
fn fabric(test: &str, console: bool) -> Option<Ibsim> {
    if !require_ibsim(test) {
        return None;
    }
    let sim = Ibsim::builder(example_fabric())
        .console(console)
        .start()
        .expect("start ibsim");
    sim.run_sm_once().expect("opensm -o");
    Some(sim)
}

fn open(sim: &Ibsim) -> Port {
    Port::open_ibsim(&IbsimOptions::new(sim.socket_name())).expect("attach to ibsim")
}

fn dr_get(port: &Port, agent: u32, attr: u16, attr_mod: u32, hops: &[u8], tid: u64) -> Received {
    let path = DrPath::from_hops(hops).expect("path");
    let req = Smp::dr_request(Method::Get, attr, attr_mod, tid, &path);
    port.transact(agent, &req, &MadAddr::directed_route(), 500, 0)
        .expect("transact")
}

fn smp_data(r: &Received) -> &[u8] {
    assert!(!r.is_timeout(), "request timed out");
    let smp = Smp::new_checked(&r.mad[..]).expect("SMP");
    assert!(
        smp.status().is_success(),
        "MAD status {:#06x}",
        smp.status().raw()
    );
    smp.data()
}

fn node_info(port: &Port, agent: u32, hops: &[u8]) -> NodeInfo {
    NodeInfo::parse(smp_data(&dr_get(port, agent, id::NODE_INFO, 0, hops, 7))).expect("NodeInfo")
}

fn port_info_dr(port: &Port, agent: u32, hops: &[u8], portnum: u32) -> PortInfo {
    PortInfo::parse(smp_data(&dr_get(
        port,
        agent,
        id::PORT_INFO,
        portnum,
        hops,
        8,
    )))
    .expect("PortInfo")
}

#[test]
fn ibsim_enumerate_attached_ports() {
    let Some(sim) = fabric("ibsim_enumerate_attached_ports", false) else {
        return;
    };
    let port = open(&sim);
    let ca = port.ca().expect("describe CA");
    assert_eq!(ca.name, "ibsim0");
    assert_eq!(ca.node_type.code(), 1, "H-host1 is a CA");
    assert_eq!(ca.node_guid, net::HOST1_NODE_GUID);
    assert_eq!(ca.ca_type, "simulator");
    assert_eq!(port.port_num(), 1);
    let p = ca.port(1).expect("port 1");
    assert_eq!(p.port_guid, net::HOST1_NODE_GUID + 1);
    assert_eq!(p.state, 4, "Active after opensm");
    assert_eq!(p.phys_state, 5, "LinkUp");
    assert_ne!(p.base_lid, 0, "LID assigned by opensm");
    assert_ne!(p.sm_lid, 0);
    assert_eq!(p.rate, 40, "4X QDR");
    assert_eq!(p.pkeys.first(), Some(&0xffff));
    assert_eq!(ca.num_ports(), 1);

    // A switch attaches at port 0.
    let sw = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node("S-sw2"))
        .expect("attach to S-sw2");
    let ca = sw.ca().expect("describe switch");
    assert_eq!(ca.node_type.code(), 2);
    assert_eq!(sw.port_num(), 0);
    assert_eq!(ca.node_guid, net::SW2_NODE_GUID);
    assert_eq!(ca.num_ports(), 0);

    // An unknown node is refused with a message naming it.
    let e =
        Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node("no-such-node")).unwrap_err();
    assert!(e.to_string().contains("no-such-node"), "{e}");
}

#[test]
fn ibsim_directed_route_nodeinfo_self_and_hops() {
    let Some(sim) = fabric("ibsim_directed_route_nodeinfo_self_and_hops", false) else {
        return;
    };
    let port = open(&sim);
    let agent = port
        .register(&AgentSpec::new(DR, 1))
        .expect("register DR agent");

    let me = node_info(&port, agent, &[]);
    assert_eq!(me.node_type, NodeType::ChannelAdapter);
    assert_eq!(me.node_guid, net::HOST1_NODE_GUID);
    assert_eq!(me.port_guid, net::HOST1_NODE_GUID + 1);
    assert_eq!(me.local_port_num, 1);

    let sw1 = node_info(&port, agent, net::DR_SW1);
    assert_eq!(
        (sw1.node_type, sw1.num_ports, sw1.node_guid),
        (NodeType::Switch, 8, net::SW1_NODE_GUID)
    );
    assert_eq!(sw1.local_port_num, 1, "entered sw1 through port 1");

    let sw2 = node_info(&port, agent, net::DR_SW2);
    assert_eq!(
        (sw2.node_type, sw2.node_guid, sw2.local_port_num),
        (NodeType::Switch, net::SW2_NODE_GUID, 8)
    );

    let host3 = node_info(&port, agent, net::DR_HOST3);
    assert_eq!(
        (host3.node_type, host3.node_guid),
        (NodeType::ChannelAdapter, net::HOST3_NODE_GUID)
    );

    let desc = dr_get(&port, agent, id::NODE_DESC, 0, net::DR_HOST3, 9);
    let desc = NodeDescription::parse(smp_data(&desc)).expect("NodeDescription");
    assert_eq!(desc.as_str(), "host3 HCA-1");
    let desc = NodeDescription::parse(smp_data(&dr_get(
        &port,
        agent,
        id::NODE_DESC,
        0,
        net::DR_SW2,
        10,
    )))
    .unwrap();
    assert_eq!(desc.as_str(), "sw2");
}

#[test]
fn ibsim_lid_routed_nodeinfo_and_portinfo() {
    let Some(sim) = fabric("ibsim_lid_routed_nodeinfo_and_portinfo", false) else {
        return;
    };
    let port = open(&sim);
    let dr = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let lr = port.register(&AgentSpec::new(LID_ROUTED, 1)).unwrap();
    let host3 = port_info_dr(&port, dr, net::DR_HOST3, 1);
    assert_eq!(host3.port_state, PortState::Active);
    assert_ne!(host3.lid, 0);

    let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, 0x42);
    let r = port
        .transact(lr, &req, &MadAddr::smi(host3.lid), 500, 1)
        .unwrap();
    assert_eq!(r.addr.lid, host3.lid, "response comes from host3's LID");
    let ni = NodeInfo::parse(smp_data(&r)).unwrap();
    assert_eq!(ni.node_guid, net::HOST3_NODE_GUID);

    let req = Smp::lid_request(Method::Get, id::PORT_INFO, 1, 0x43);
    let r = port
        .transact(lr, &req, &MadAddr::smi(host3.lid), 500, 1)
        .unwrap();
    let pi = PortInfo::parse(smp_data(&r)).unwrap();
    assert_eq!(pi.lid, host3.lid);
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.master_sm_lid, host3.master_sm_lid);
}

#[test]
fn ibsim_perfmgt_port_counters_over_qp1() {
    let Some(sim) = fabric("ibsim_perfmgt_port_counters_over_qp1", false) else {
        return;
    };
    let port = open(&sim);
    let dr = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let host3 = port_info_dr(&port, dr, net::DR_HOST3, 1);
    let perf = port.register(&AgentSpec::new(PERF, 1)).unwrap();
    let req = ibmad::perf::port_counters_get(1, 0x99);
    let r = port
        .transact(perf, &req, &MadAddr::gsi(host3.lid), 500, 1)
        .unwrap();
    assert!(!r.is_timeout());
    assert_eq!(r.addr.qpn, 1, "PerfMgt answers from QP1");
    let hdr = ibmad::MadHeader::parse(&ibmad::Mad::new_checked(&r.mad[..]).unwrap()).unwrap();
    assert_eq!(hdr.method, Method::GetResp);
    assert!(hdr.status.is_success(), "status {:#06x}", hdr.status.raw());
    let pc = ibmad::PortCounters::parse(&r.mad[ibmad::perf::PERF_DATA_OFFSET..]).unwrap();
    assert_eq!(pc.port_select, 1);
    assert!(
        pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0,
        "ibsim counts the SMPs that crossed host3: {pc:?}"
    );
}

#[test]
fn ibsim_dead_path_reports_timeout() {
    let Some(sim) = fabric("ibsim_dead_path_reports_timeout", false) else {
        return;
    };
    let port = open(&sim);
    let agent = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let started = Instant::now();
    let r = dr_get(&port, agent, id::NODE_INFO, 0, net::DR_DEAD_END, 11);
    assert!(r.is_timeout(), "status {}", r.status);
    assert_eq!(r.agent, agent);
    assert_eq!(
        &r.mad[12..16],
        &11u32.to_be_bytes(),
        "the report carries the request's TID"
    );

    // With retries the request is sent again, and still ends.
    let path = DrPath::from_hops(net::DR_DEAD_END).unwrap();
    let req = Smp::dr_request(Method::Get, id::NODE_INFO, 0, 12, &path);
    port.send(agent, &req, &MadAddr::directed_route(), 50, 3)
        .unwrap();
    let r = port
        .recv(Some(Duration::from_secs(5)))
        .unwrap()
        .expect("a timeout report");
    assert!(r.is_timeout());
    assert!(started.elapsed() < Duration::from_secs(5));

    // A LID nobody has: also a timeout, not a hang.
    let lr = port.register(&AgentSpec::new(LID_ROUTED, 1)).unwrap();
    let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, 13);
    let r = port
        .transact(lr, &req, &MadAddr::smi(0x7777), 100, 1)
        .unwrap();
    assert!(r.is_timeout());
    // Nothing else is left queued.
    assert!(port
        .recv(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
}

#[test]
fn ibsim_error_rate_every_request_ends() {
    let Some(sim) = fabric("ibsim_error_rate_every_request_ends", true) else {
        return;
    };
    sim.console(r#"Error "S-sw2" 20"#)
        .expect("set a 20% error rate");
    let port = open(&sim);
    let agent = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let path = DrPath::from_hops(net::DR_HOST3).unwrap();
    const N: u32 = 200;
    const WINDOW: u32 = 16;
    let (mut sent, mut replies, mut timeouts) = (0u32, 0u32, 0u32);
    let mut seen = std::collections::HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while replies + timeouts < N {
        while sent < N && sent - (replies + timeouts) < WINDOW {
            let req = Smp::dr_request(Method::Get, id::NODE_INFO, 0, u64::from(sent) + 1000, &path);
            port.send(agent, &req, &MadAddr::directed_route(), 100, 0)
                .unwrap();
            sent += 1;
        }
        assert!(
            Instant::now() < deadline,
            "requests hang: {replies} replies, {timeouts} timeouts of {N}"
        );
        let Some(r) = port.recv(Some(Duration::from_secs(2))).unwrap() else {
            panic!(
                "no completion within 2 s: {replies} replies, {timeouts} timeouts of {sent} sent"
            );
        };
        let tid = u32::from_be_bytes(r.mad[12..16].try_into().unwrap());
        assert!(seen.insert(tid), "TID {tid} completed twice");
        if r.is_timeout() {
            timeouts += 1;
        } else {
            assert_eq!(
                NodeInfo::parse(smp_data(&r)).unwrap().node_guid,
                net::HOST3_NODE_GUID
            );
            replies += 1;
        }
    }
    assert_eq!(seen.len() as u32, N);
    assert!(timeouts > 0, "a 20% error rate dropped nothing");
    assert!(replies > N / 2, "only {replies} of {N} answered");
}

#[test]
fn ibsim_two_agents_get_only_their_own_responses() {
    let Some(sim) = fabric("ibsim_two_agents_get_only_their_own_responses", false) else {
        return;
    };
    let port = open(&sim);
    let a = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let b = port.register(&AgentSpec::new(DR, 1)).unwrap();
    assert_ne!(a, b);
    for i in 0..20u64 {
        let (agent, hops) = if i % 2 == 0 {
            (a, net::DR_SW1)
        } else {
            (b, net::DR_HOST3)
        };
        let req = Smp::dr_request(
            Method::Get,
            id::NODE_INFO,
            0,
            i,
            &DrPath::from_hops(hops).unwrap(),
        );
        port.send(agent, &req, &MadAddr::directed_route(), 500, 0)
            .unwrap();
    }
    for _ in 0..20 {
        let r = port
            .recv(Some(Duration::from_secs(2)))
            .unwrap()
            .expect("response");
        let tid = u32::from_be_bytes(r.mad[12..16].try_into().unwrap());
        let (owner, guid) = if tid % 2 == 0 {
            (a, net::SW1_NODE_GUID)
        } else {
            (b, net::HOST3_NODE_GUID)
        };
        assert_eq!(r.agent, owner, "TID {tid} delivered to the wrong agent");
        assert_eq!(NodeInfo::parse(smp_data(&r)).unwrap().node_guid, guid);
    }
    assert!(port
        .recv(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());

    // Two clients in one process are separate too.
    let other = open(&sim);
    let c = other.register(&AgentSpec::new(DR, 1)).unwrap();
    let req = Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        77,
        &DrPath::from_hops(net::DR_SW2).unwrap(),
    );
    other
        .send(c, &req, &MadAddr::directed_route(), 500, 0)
        .unwrap();
    assert!(other.recv(Some(Duration::from_secs(2))).unwrap().is_some());
    assert!(port
        .recv(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
}

#[test]
fn ibsim_33rd_agent_is_refused_cleanly() {
    let Some(sim) = fabric("ibsim_33rd_agent_is_refused_cleanly", false) else {
        return;
    };
    let port = open(&sim);
    let ids: Vec<u32> = (0..32)
        .map(|_| {
            port.register(&AgentSpec::new(DR, 1))
                .expect("32 agents fit")
        })
        .collect();
    let e = port.register(&AgentSpec::new(DR, 1)).unwrap_err();
    assert!(matches!(e, Error::TooManyAgents { max: 32, .. }), "{e:?}");
    assert!(e.to_string().contains("at most 32 agents"), "{e}");
    port.unregister(ids[5]).unwrap();
    assert_eq!(port.register(&AgentSpec::new(DR, 1)).unwrap(), ids[5]);
    let e = port.unregister(99).unwrap_err();
    assert!(matches!(e, Error::BadAgent { agent: 99, .. }), "{e:?}");
    let e = port
        .send(40, &[0u8; 256], &MadAddr::directed_route(), 0, 0)
        .unwrap_err();
    assert!(matches!(e, Error::BadAgent { agent: 40, .. }), "{e:?}");
    // The port still works after all that.
    assert_eq!(
        node_info(&port, ids[0], net::DR_SW1).node_guid,
        net::SW1_NODE_GUID
    );
}

#[test]
fn ibsim_issm_sets_the_capability_bit() {
    let Some(sim) = fabric("ibsim_issm_sets_the_capability_bit", false) else {
        return;
    };
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node("H-host3")).unwrap();
    let is_sm = |p: &Port| p.ca().unwrap().ports[0].cap_mask & 0x2 != 0;
    assert!(!is_sm(&port));
    let guard = port.issm().expect("become SM");
    assert!(is_sm(&port));
    drop(guard);
    assert!(!is_sm(&port));
}

/// The connect no longer retries a socket nobody is bound to: it relies on `Ibsim::start`
/// returning only once ibsim's control socket is bound, which ibsim does after building its
/// fabric, so the first connect is answered. On the largest fabric (the longest start), a
/// connect made at once attaches, and promptly.
#[test]
fn ibsim_connect_right_after_start_needs_no_retry() {
    if !require_ibsim("ibsim_connect_right_after_start_needs_no_retry") {
        return;
    }
    let net = ibsim_harness::fabrics_dir().join("fattree3-1760.net");
    let t0 = Instant::now();
    let sim = Ibsim::start(&net).expect("start ibsim");
    let started = t0.elapsed();
    let t1 = Instant::now();
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()))
        .expect("the first connect after start attaches");
    let took = t1.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?} to attach");
    assert_eq!(port.ca().expect("describe CA").name, "ibsim0");
    eprintln!(
        "ibsim started on {} in {started:?}; attached in {took:?}",
        net.display()
    );
}
