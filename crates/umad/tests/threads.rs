//! Threads sharing one [`Port`] against a private ibsim on `fabrics/example.net` (native
//! transport, no LD_PRELOAD): every `transact` gets exactly its own response, and a `recv`
//! loop on another thread gets exactly the MADs no `transact` waits for. Written against
//! `Port` alone, so they hold for whatever transport `Port::open_ibsim` builds.
//!
//! Only directed-route SMPs are used, so no subnet manager has to run first. ibsim stalls with
//! a few hundred unread replies queued; every test here keeps at most a handful outstanding.
//!
//! Fabric (see `fabrics/README.md`): H-host1[1] – [1]S-sw1[8] – [8]S-sw2[1] – [1]H-host3;
//! a client attaches to H-host1; S-sw1 port 3 leads nowhere.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ibmad::attr::id;
use ibmad::{DrPath, Method, NodeInfo, Smp};
use ibsim_harness::{example_fabric, example_net as net, require_ibsim, Ibsim};
use umad::carrier::ibsim::IbsimOptions;
use umad::{AgentSpec, Error, MadAddr, MethodMask, Port, Received};

const DR: u8 = 0x81;

/// The request windows here are one per thread; each answer takes well under a millisecond,
/// so a timeout means a lost or misrouted MAD, not a slow simulator.
const TIMEOUT_MS: u32 = 2000;

/// A private ibsim on the example fabric, or `None` (and a loud SKIPPED line) when ibsim is not
/// installed outside CI.
fn fabric(test: &str) -> Option<Ibsim> {
    if !require_ibsim(test) {
        return None;
    }
    Some(Ibsim::start(example_fabric()).expect("start ibsim"))
}

fn open(sim: &Ibsim) -> Port {
    Port::open_ibsim(&IbsimOptions::new(sim.socket_name())).expect("attach to ibsim")
}

/// The directed routes the threads take turns on, with the node GUID at each end.
const ROUTES: [(&[u8], u64); 4] = [
    (&[], net::HOST1_NODE_GUID),
    (net::DR_SW1, net::SW1_NODE_GUID),
    (net::DR_SW2, net::SW2_NODE_GUID),
    (net::DR_HOST3, net::HOST3_NODE_GUID),
];

fn node_info_request(tid: u32, hops: &[u8]) -> [u8; 256] {
    let path = DrPath::from_hops(hops).expect("path");
    Smp::dr_request(Method::Get, id::NODE_INFO, 0, u64::from(tid), &path)
}

fn tid_of(r: &Received) -> u32 {
    u32::from_be_bytes(r.mad[12..16].try_into().expect("a MAD header"))
}

/// Checks that `r` is the NodeInfo response to the request with `tid` along the route whose
/// end is `guid`, delivered to `agent`.
/// Thread `t`'s `count` transactions on `port` with `agent`, each checked to get its own
/// answer (TIDs `t << 24 | i`, routes taken in turn).
fn transact_each(port: &Port, agent: u32, t: u32, count: u32) {
    for i in 0..count {
        let tid = (t << 24) | i;
        let (hops, guid) = ROUTES[((t + i) % 4) as usize];
        let req = node_info_request(tid, hops);
        let r = port
            .transact(agent, &req, &MadAddr::directed_route(), TIMEOUT_MS, 0)
            .unwrap();
        check_answer(&r, agent, tid, guid);
    }
}

fn check_answer(r: &Received, agent: u32, tid: u32, guid: u64) {
    assert!(!r.is_timeout(), "TID {tid:#x} timed out");
    assert_eq!(r.agent, agent, "TID {tid:#x} delivered to the wrong agent");
    assert_eq!(tid_of(r), tid, "someone else's response");
    let smp = Smp::new_checked(&r.mad[..]).expect("SMP");
    assert_eq!(smp.method(), Method::GetResp);
    assert!(
        smp.status().is_success(),
        "status {:#06x}",
        smp.status().raw()
    );
    let ni = NodeInfo::parse(smp.data()).expect("NodeInfo");
    assert_eq!(
        ni.node_guid, guid,
        "TID {tid:#x}: the answer of another route"
    );
}

#[test]
fn ibsim_eight_threads_2000_transacts_each_on_one_port() {
    let Some(sim) = fabric("ibsim_eight_threads_2000_transacts_each_on_one_port") else {
        return;
    };
    const THREADS: u32 = 8;
    const EACH: u32 = 2000;
    let port = open(&sim);
    let agents = [
        port.register(&AgentSpec::new(DR, 1)).unwrap(),
        port.register(&AgentSpec::new(DR, 1)).unwrap(),
    ];
    let started = Instant::now();
    let answered: u32 = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let port = &port;
                let agent = agents[t as usize % 2];
                s.spawn(move || {
                    transact_each(port, agent, t, EACH);
                    EACH
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let took = started.elapsed();
    eprintln!(
        "{} transactions from {THREADS} threads in {took:?}",
        THREADS * EACH
    );
    assert_eq!(answered, THREADS * EACH);
    assert!(took < Duration::from_secs(120), "{took:?}");
    // Nothing answered twice or left over for recv, nothing discarded.
    assert!(port
        .recv(Some(Duration::from_millis(100)))
        .unwrap()
        .is_none());
    assert_eq!(port.dropped(), 0);
}

#[test]
fn ibsim_transact_beside_a_recv_loop() {
    let Some(sim) = fabric("ibsim_transact_beside_a_recv_loop") else {
        return;
    };
    const THREADS: u32 = 4;
    const EACH: u32 = 500;
    /// What the receiving thread sends itself (with `send`) and expects back through `recv`.
    const OWN: u32 = 400;
    const OWN_TID: u32 = 0x8000_0000;
    const WINDOW: u32 = 4;
    let port = open(&sim);
    let a = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let r_agent = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        let receiver = s.spawn(|| {
            let (mut sent, mut got) = (0u32, HashSet::new());
            let deadline = Instant::now() + Duration::from_secs(60);
            while got.len() < OWN as usize {
                while sent < OWN && sent - got.len() as u32 <= WINDOW {
                    let (hops, _) = ROUTES[(sent % 4) as usize];
                    let req = node_info_request(OWN_TID + sent, hops);
                    port.send(r_agent, &req, &MadAddr::directed_route(), TIMEOUT_MS, 0)
                        .unwrap();
                    sent += 1;
                }
                assert!(
                    Instant::now() < deadline,
                    "{} of {OWN} came back",
                    got.len()
                );
                // Alternate poll and recv: neither may take a transaction's response.
                if !port.poll(Some(Duration::from_millis(5))).unwrap() {
                    continue;
                }
                while let Some(r) = port.recv(Some(Duration::ZERO)).unwrap() {
                    let tid = tid_of(&r);
                    assert!(tid >= OWN_TID, "recv took transaction TID {tid:#x}");
                    let (_, guid) = ROUTES[((tid - OWN_TID) % 4) as usize];
                    check_answer(&r, r_agent, tid, guid);
                    assert!(got.insert(tid), "TID {tid:#x} came twice");
                }
            }
            // Then keep receiving until the transactions are over: nothing more may come.
            while !done.load(Ordering::SeqCst) {
                if let Some(r) = port.recv(Some(Duration::from_millis(5))).unwrap() {
                    panic!("recv took TID {:#x} of agent {}", tid_of(&r), r.agent);
                }
            }
            got.len()
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let port = &port;
                // Half of them share the receiver's agent: routing is by agent and TID.
                let agent = if t % 2 == 0 { a } else { r_agent };
                s.spawn(move || {
                    transact_each(port, agent, t, EACH);
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        assert_eq!(receiver.join().unwrap(), OWN as usize);
    });
    assert_eq!(port.dropped(), 0);
}

#[test]
fn ibsim_the_same_agent_and_tid_at_once_is_refused() {
    let Some(sim) = fabric("ibsim_the_same_agent_and_tid_at_once_is_refused") else {
        return;
    };
    let port = open(&sim);
    let a = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let b = port.register(&AgentSpec::new(DR, 1)).unwrap();
    // ibsim hands SMInfo to the SM client of the node asked. H-host3's (another client)
    // takes the request with an agent of its own and never answers, so the request waits for
    // its timeout.
    let mut opts = IbsimOptions::new(sim.socket_name()).node("H-host3");
    opts.issm = true;
    let sm = Port::open_ibsim(&opts).expect("attach to H-host3 as its SM");
    let sm_agent = sm
        .register(&AgentSpec::new(DR, 1).methods(MethodMask::of(&[Method::Get.into()])))
        .unwrap();
    let path = DrPath::from_hops(net::DR_HOST3).unwrap();
    let dead = Smp::dr_request(Method::Get, id::SM_INFO, 0, 0x55, &path);
    thread::scope(|s| {
        let waiting = s.spawn(|| {
            port.transact(a, &dead, &MadAddr::directed_route(), 1000, 0)
                .unwrap()
        });
        let held = sm
            .recv(Some(Duration::from_secs(2)))
            .unwrap()
            .expect("the SMInfo request");
        assert_eq!((held.agent, tid_of(&held)), (sm_agent, 0x55));
        let started = Instant::now();
        let e = port
            .transact(
                a,
                &node_info_request(0x55, net::DR_SW1),
                &MadAddr::directed_route(),
                1000,
                0,
            )
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(100));
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains("0x00000055"), "{e}");
        // The same TID on another agent is a different transaction.
        let r = port
            .transact(
                b,
                &node_info_request(0x55, net::DR_SW1),
                &MadAddr::directed_route(),
                1000,
                0,
            )
            .unwrap();
        check_answer(&r, b, 0x55, net::SW1_NODE_GUID);
        let r = waiting.join().unwrap();
        assert!(r.is_timeout(), "status {}", r.status);
        assert_eq!((r.agent, tid_of(&r)), (a, 0x55));
    });
    assert!(port
        .recv(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
}

#[test]
fn ibsim_unregister_discards_queued_mads() {
    let Some(sim) = fabric("ibsim_unregister_discards_queued_mads") else {
        return;
    };
    let port = open(&sim);
    let a = port.register(&AgentSpec::new(DR, 1)).unwrap();
    let b = port.register(&AgentSpec::new(DR, 1)).unwrap();
    for (agent, tid) in [(a, 1), (b, 2), (a, 3), (b, 4)] {
        let req = node_info_request(tid, net::DR_SW1);
        port.send(agent, &req, &MadAddr::directed_route(), TIMEOUT_MS, 0)
            .unwrap();
    }
    // A transaction sent after them reads their responses into the port's queue first.
    let r = port
        .transact(
            b,
            &node_info_request(5, net::DR_SW2),
            &MadAddr::directed_route(),
            TIMEOUT_MS,
            0,
        )
        .unwrap();
    check_answer(&r, b, 5, net::SW2_NODE_GUID);
    port.unregister(a).unwrap();
    let mut left = Vec::new();
    while let Some(r) = port.recv(Some(Duration::from_millis(200))).unwrap() {
        left.push((r.agent, tid_of(&r)));
    }
    assert_eq!(left, [(b, 2), (b, 4)]);
}
