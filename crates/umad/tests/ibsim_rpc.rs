//! The transaction engine (`umad::rpc`) on ibsim through the native transport: pipelined
//! directed-route SMPs agree with serial ones, typed one-liners (SMP, PerfMgt, SA tables
//! through RMPP), timeouts as typed errors in bounded time, several threads on one engine.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use ibmad::sa::NodeRecord;
use ibmad::{attr, DrPath, Method, NodeDescription, NodeInfo, NodeType, PortInfo, Smp};
use ibsim_harness::{example_fabric, require_ibsim, Ibsim};
use umad::rpc::{Outcome, Request, Rpc, Target, Window};
use umad::{Error, IbsimOptions, MadAddr, Port, TransportKind};

fn rpc_on(sim: &Ibsim, node: &str) -> Rpc {
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node(node)).expect("port");
    assert_eq!(
        port.transport_kind(),
        TransportKind::MadLayer { carrier: "ibsim" }
    );
    let rpc = Rpc::new(port);
    rpc.set_budget(Duration::from_millis(100), 2);
    rpc
}

/// Every DR path of the example fabric up to 3 hops out of H-host1, with the NodeInfo found.
fn serial_walk(rpc: &Rpc) -> BTreeMap<Vec<u8>, Option<NodeInfo>> {
    let mut found = BTreeMap::new();
    for a in 1..=8u8 {
        for b in 0..=8u8 {
            let hops: Vec<u8> = if b == 0 { vec![a] } else { vec![1, a, b] };
            let path = DrPath::from_hops(&hops).unwrap();
            let got = rpc.smp_get::<NodeInfo>(&Target::Dr(path), 0).ok();
            found.insert(hops, got);
        }
    }
    found
}

#[test]
fn pipelined_dr_smps_agree_with_serial_ones() {
    if !require_ibsim("pipelined_dr_smps_agree_with_serial_ones") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let rpc = rpc_on(&sim, "H-host1");
    let serial = serial_walk(&rpc);
    // Local node and the switch behind it.
    let local = rpc
        .smp_get::<NodeInfo>(&Target::Dr(DrPath::from_hops(&[]).unwrap()), 0)
        .unwrap();
    assert_eq!(
        (local.node_type, local.node_guid),
        (NodeType::ChannelAdapter, 0x100000)
    );
    assert_eq!(
        serial[&vec![1]].as_ref().unwrap().node_type,
        NodeType::Switch
    );

    // The same paths at once, 32 in flight.
    let mut tickets = BTreeMap::new();
    for hops in serial.keys() {
        let path = DrPath::from_hops(hops).unwrap();
        let smp = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 0, &path);
        let req = Request::new(smp, MadAddr::directed_route())
            .timeout(Duration::from_millis(100))
            .retries(2);
        tickets.insert(rpc.submit(req).unwrap(), hops.clone());
    }
    let mut piped = BTreeMap::new();
    while let Some(c) = rpc.next(Some(Duration::from_secs(10))).unwrap() {
        let hops = tickets.remove(&c.ticket).expect("a ticket of ours, once");
        let info = match &c.outcome {
            Outcome::Response(r) => {
                let smp = Smp::new_checked(&r.mad[..]).unwrap();
                Some(NodeInfo::parse(smp.data()).unwrap())
            }
            Outcome::Timeout => None,
            other => panic!("{other:?}"),
        };
        piped.insert(hops, info);
    }
    assert!(tickets.is_empty(), "every request completed");
    assert_eq!(piped, serial);
    // Dead ports time out, live ones answer: sw1 has 3 live ports (1, 2, 8) of 8.
    let live_one_hop = (1..=8u8).filter(|&a| serial[&vec![a]].is_some()).count();
    assert_eq!(live_one_hop, 1, "H-host1 has one port");
    let stats = rpc.stats();
    assert!(stats.max_in_flight <= Window::DEFAULT.total);
    assert!(stats.max_in_flight > 1, "{stats:?}");
}

#[test]
fn typed_one_liners_and_typed_timeouts() {
    if !require_ibsim("typed_one_liners_and_typed_timeouts") {
        return;
    }
    let mut sim = Ibsim::start(example_fabric()).expect("ibsim");
    sim.start_sm_daemon().expect("opensm");
    let rpc = rpc_on(&sim, "H-host3");
    // Wait until the SM has configured our port (SM LID known).
    let t0 = Instant::now();
    while rpc.sa_addr().is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no SM LID after 30 s"
        );
        thread::sleep(Duration::from_millis(200));
    }
    let sw = Target::Dr(DrPath::from_hops(&[1]).unwrap());
    let desc = rpc.smp_get::<NodeDescription>(&sw, 0).unwrap();
    assert_eq!(desc.to_string(), "sw2");
    let pi = rpc.smp_get::<PortInfo>(&sw, 0).unwrap(); // a switch's LID is port 0's
    assert_ne!(pi.lid, 0);
    let info = rpc.smp_get::<NodeInfo>(&Target::Lid(pi.lid), 0).unwrap();
    assert_eq!(info.node_type, NodeType::Switch);
    // PerfMgt at our own LID.
    let me = rpc.port().ca().unwrap().ports[0].base_lid as u16;
    rpc.port_counters(me, 1).expect("PortCounters");
    rpc.reset_port_counters(me, 1, 0xffff).expect("reset");
    // The SA's NodeRecord of our own LID (one MAD: the system opensm runs under umad2sim,
    // which cannot carry an RMPP table; compat's ibsim_native tests take whole tables from
    // opensm on the drop-in). opensm answers SA queries once its first sweep is done.
    rpc.set_budget(Duration::from_millis(500), 20);
    let template = NodeRecord {
        lid: me,
        ..NodeRecord::default()
    };
    let mine = rpc
        .sa_get(&template, ibmad::sa::node_record::comp::LID)
        .unwrap();
    rpc.set_budget(Duration::from_millis(100), 2);
    assert_eq!(mine.lid, me);
    assert_eq!(mine.node_info.node_guid, 0x100005, "H-host3");
    assert_eq!(mine.node_description.to_string(), "host3 HCA-1");
    // A dead DR path: a typed timeout, within the budget (100 ms × 3) plus slack.
    let dead = Target::Dr(DrPath::from_hops(&[1, 5]).unwrap());
    let t0 = Instant::now();
    let err = rpc.smp_get::<NodeInfo>(&dead, 0).unwrap_err();
    assert!(matches!(err, Error::TimedOut { attempts: 3, .. }), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(err.to_string().contains("DR path 0,1,5"), "{err}");
}

#[test]
fn threads_share_one_engine_on_ibsim() {
    if !require_ibsim("threads_share_one_engine_on_ibsim") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let rpc = rpc_on(&sim, "H-host1");
    let serial = serial_walk(&rpc);
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let rpc = rpc.clone();
            thread::spawn(move || serial_walk(&rpc))
        })
        .collect();
    for w in workers {
        assert_eq!(w.join().unwrap(), serial);
    }
}

/// The executor of the unit tests (one copy).
#[cfg(feature = "async")]
#[path = "../src/rpc/block_on.rs"]
mod block_on;

/// The async face over the same engine on ibsim: the same answers as the blocking calls.
#[cfg(feature = "async")]
#[test]
fn async_calls_agree_with_blocking_ones_on_ibsim() {
    use block_on::block_on;

    if !require_ibsim("async_calls_agree_with_blocking_ones_on_ibsim") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let rpc = rpc_on(&sim, "H-host1");
    let serial = serial_walk(&rpc);
    let futures: Vec<_> = serial
        .keys()
        .map(|hops| {
            let path = DrPath::from_hops(hops).unwrap();
            let smp = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 0, &path);
            let req = rpc.request(smp, MadAddr::directed_route());
            (hops.clone(), rpc.call_async(req).unwrap())
        })
        .collect();
    let mut got = BTreeMap::new();
    for (hops, f) in futures {
        let c = block_on(f).unwrap();
        let info = c
            .outcome
            .response()
            .map(|r| NodeInfo::parse(Smp::new_checked(&r.mad[..]).unwrap().data()).unwrap());
        got.insert(hops, info);
    }
    assert_eq!(got, serial);
}
