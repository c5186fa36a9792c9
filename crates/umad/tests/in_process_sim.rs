//! The fabric simulated in process (`UMAD_SIM`, [`Port::open_sim`]): no ibsim, nothing
//! installed. Directed-route SMPs through `Port::transact`, `Rpc` and eight threads at once,
//! the attach rules, and the errors a person can act on.

use std::path::PathBuf;
use std::time::Duration;

use ibmad::{attr::id, DrPath, Method, NodeInfo, Smp};
use umad::rpc::{Request, Rpc};
use umad::{AgentSpec, MadAddr, Port, SimOptions, Simulated};

fn example() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fabrics/example.net"
    ))
}

fn node_info_req(path: &[u8], tid: u64) -> [u8; 256] {
    Smp::dr_request(
        Method::Get,
        id::NODE_INFO,
        0,
        tid,
        &DrPath::from_hops(path).unwrap(),
    )
}

fn guid_of(mad: &[u8]) -> u64 {
    NodeInfo::parse(Smp::new_checked(mad).unwrap().data())
        .unwrap()
        .node_guid
}

#[test]
fn transact_reaches_every_hop_of_the_example_fabric() {
    let port = Port::open_sim(&SimOptions::new(example())).expect("attach");
    assert_eq!(port.ca_name(), "sim0");
    assert_eq!(port.port_num(), 1, "a CA attaches at port 1");
    let ca = port.ca().expect("ca");
    assert_eq!(ca.node_guid, 0x100000);
    assert_eq!(ca.ports[0].port_guid, 0x100001);
    assert_eq!(ca.ports[0].state, 4, "configured: Active");
    assert_ne!(ca.ports[0].base_lid, 0, "configured: a LID");
    let agent = port.register(&AgentSpec::new(0x81, 1)).unwrap();
    // H-host1 → S-sw1 → S-sw2 → H-host3 (fabrics/example.net).
    for (path, guid) in [
        (&[][..], 0x100000),
        (&[1][..], 0x200000),
        (&[1, 8][..], 0x200001),
        (&[1, 8, 1][..], 0x100005),
    ] {
        let r = port
            .transact(
                agent,
                &node_info_req(path, 7),
                &MadAddr::directed_route(),
                200,
                0,
            )
            .expect("transact");
        assert_eq!(r.status, 0, "{path:?}");
        assert_eq!(guid_of(&r.mad), guid, "{path:?}");
    }
    // A route out of an unlinked port: no answer, a timeout report after the budget.
    let t = std::time::Instant::now();
    let r = port
        .transact(
            agent,
            &node_info_req(&[1, 5], 8),
            &MadAddr::directed_route(),
            50,
            1,
        )
        .expect("transact");
    assert!(r.is_timeout(), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[test]
fn eight_threads_share_one_rpc_on_the_simulated_port() {
    let port = Port::open_sim(&SimOptions::new(example()).node("H-host3")).expect("attach");
    assert_eq!(port.ca().unwrap().node_guid, 0x100005);
    let rpc = Rpc::new(port);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let rpc = rpc.clone();
            s.spawn(move || {
                for i in 0..250u64 {
                    // From H-host3: 0,1 is S-sw2, 0,1,8 is S-sw1.
                    let (path, guid) = if (t + i) % 2 == 0 {
                        (&[1][..], 0x200001)
                    } else {
                        (&[1, 8][..], 0x200000)
                    };
                    let req =
                        Request::new(node_info_req(path, 0).to_vec(), MadAddr::directed_route())
                            .timeout(Duration::from_millis(500));
                    let done = rpc.call(req).expect("call");
                    let resp = done.outcome.response().expect("a response");
                    assert_eq!(guid_of(&resp.mad), guid);
                }
            });
        }
    });
}

#[test]
fn ports_of_one_process_share_one_fabric_and_a_switch_attaches_at_port_0() {
    let a = Port::open_sim(&SimOptions::new(example()).node("S-sw1")).expect("attach");
    assert_eq!(a.port_num(), 0);
    let b = Port::open_sim(&SimOptions::new(example()).node("sw2")).expect("by description");
    let (ca, cb) = (a.ca().unwrap(), b.ca().unwrap());
    assert_eq!((ca.node_guid, cb.node_guid), (0x200000, 0x200001));
    assert_ne!(
        ca.ports[0].base_lid, cb.ports[0].base_lid,
        "one fabric, distinct LIDs"
    );
}

#[test]
fn bad_choices_are_refused_with_what_to_do() {
    let e = Port::open_sim(&SimOptions::new(example()).node("nope")).unwrap_err();
    assert!(e.to_string().contains("no node of"), "{e}");
    let e = Port::open_sim(&SimOptions::new("/nonexistent/fabric.net")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/fabric.net"), "{e}");
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"\xff");
    let x = Some(OsStr::new("x.net"));
    let e = SimOptions::from_vars(x, Some(bad), None, None).unwrap_err();
    assert!(e.to_string().contains("UMAD_SIM_NODE is not UTF-8"), "{e}");
    let e = SimOptions::from_vars(x, None, Some(OsStr::new("yes")), None).unwrap_err();
    assert!(e.to_string().contains("set it to 1"), "{e}");
    let e = SimOptions::from_vars(x, None, None, Some(bad)).unwrap_err();
    assert!(
        e.to_string().contains("UMAD_SIM_FAULTS is not UTF-8"),
        "{e}"
    );
    let o = SimOptions::from_vars(x, None, Some(OsStr::new("1")), Some(OsStr::new("drop=1%")));
    let o = o.unwrap().unwrap();
    assert!(!o.configured);
    assert_eq!(o.faults.as_deref(), Some("drop=1%"));
    assert_eq!(
        SimOptions::from_vars(Some(OsStr::new("")), None, None, None).unwrap(),
        None
    );
    // A fault spec that does not parse is refused when the port opens, naming the item.
    let e = Port::open_sim(&SimOptions::new(example()).faults("seed=1,drop=lots")).unwrap_err();
    assert!(
        e.to_string().contains("UMAD_SIM_FAULTS") && e.to_string().contains("drop=lots"),
        "{e}"
    );
    // Both simulators at once: refused by name.
    let sim = Simulated::InProcess(SimOptions::new(example()));
    assert_eq!(sim.variable(), "UMAD_SIM");
}

#[test]
fn late_and_duplicated_answers_arrive_and_each_call_gets_its_own() {
    // Every answer 30 ms late and twice: the timer thread hands both copies over; the
    // second copy of one call's answer must not complete the next call.
    let port =
        Port::open_sim(&SimOptions::new(example()).faults("seed=3,delay=100%@30ms,dup=100%"))
            .expect("attach");
    let rpc = Rpc::new(port);
    for (i, (path, guid)) in [(&[1][..], 0x200000u64), (&[1, 8][..], 0x200001)]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let t = std::time::Instant::now();
        let req = Request::new(node_info_req(path, 0).to_vec(), MadAddr::directed_route())
            .timeout(Duration::from_millis(1000));
        let done = rpc.call(req).expect("call");
        let resp = done
            .outcome
            .response()
            .expect("a late response, not a timeout");
        assert_eq!(guid_of(&resp.mad), guid, "call {i}");
        assert!(
            t.elapsed() >= Duration::from_millis(30),
            "{:?}",
            t.elapsed()
        );
    }
}

#[test]
fn retries_ride_out_seeded_loss() {
    // Half the packets lost on every link: one hop out and back is 25 % a try; 40 tries.
    let port =
        Port::open_sim(&SimOptions::new(example()).faults("seed=9,drop=50%")).expect("attach");
    let agent = port.register(&AgentSpec::new(0x81, 1)).unwrap();
    let (mut answered, mut lost) = (0, 0);
    for tid in 0..20 {
        let r = port
            .transact(
                agent,
                &node_info_req(&[1], tid),
                &MadAddr::directed_route(),
                5,
                0,
            )
            .expect("transact");
        if r.is_timeout() {
            lost += 1;
        } else {
            answered += 1;
            assert_eq!(guid_of(&r.mad), 0x200000);
        }
    }
    assert!(answered > 0 && lost > 0, "{answered} answered, {lost} lost");
    let r = port
        .transact(
            agent,
            &node_info_req(&[1], 99),
            &MadAddr::directed_route(),
            5,
            40,
        )
        .expect("transact");
    assert!(!r.is_timeout(), "40 retries at 25 % each: lost every time?");
}

#[test]
fn built_in_fabric_names_need_no_file() {
    // `example` is fabrics/example.net, built in.
    let port = Port::open_sim(&SimOptions::new("example")).expect("attach");
    assert_eq!(port.ca().unwrap().node_guid, 0x100000);
    let agent = port.register(&AgentSpec::new(0x81, 1)).unwrap();
    let r = port
        .transact(
            agent,
            &node_info_req(&[1, 8, 1], 1),
            &MadAddr::directed_route(),
            200,
            0,
        )
        .unwrap();
    assert_eq!(guid_of(&r.mad), 0x100005);
    // A generated fat tree: a host, its leaf, a spine.
    let port = Port::open_sim(&SimOptions::new("fattree:4,2,3")).expect("attach");
    let agent = port.register(&AgentSpec::new(0x81, 1)).unwrap();
    for path in [&[][..], &[1], &[1, 4]] {
        let r = port
            .transact(
                agent,
                &node_info_req(path, 2),
                &MadAddr::directed_route(),
                200,
                0,
            )
            .unwrap();
        assert_eq!(r.status, 0, "{path:?}");
    }
    let e = Port::open_sim(&SimOptions::new("fattree:0,0,0")).unwrap_err();
    assert!(e.to_string().contains("UMAD_SIM"), "{e}");
    let e = Port::open_sim(&SimOptions::new("no-such-fabric")).unwrap_err();
    assert!(e.to_string().contains("the names are"), "{e}");
}

#[test]
fn the_cas_p_keys_are_the_ports_table_sets_included() {
    let port = Port::open_sim(&SimOptions::new(example()).node("H-host2")).expect("attach");
    let keys = port.ca().unwrap().ports[0].pkeys.clone();
    assert_eq!(keys.len(), 32, "one block, as ibsim's GET_PKEYS");
    assert_eq!(&keys[..2], &[0xffff, 0]);
    let agent = port.register(&AgentSpec::new(0x81, 1)).unwrap();
    let mut set = Smp::dr_request(Method::Set, id::PKEY_TABLE, 0, 5, &DrPath::local());
    Smp::new_unchecked(&mut set[..]).data_mut()[..4].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
    let r = port
        .transact(agent, &set, &MadAddr::directed_route(), 200, 0)
        .unwrap();
    assert!(Smp::new_checked(&r.mad[..]).unwrap().status().is_success());
    assert_eq!(
        &port.ca().unwrap().ports[0].pkeys[..3],
        &[0xffff, 0x8001, 0]
    );
}

#[test]
fn an_sm_port_in_process_answers_sminfo_by_directed_route_and_by_lid() {
    use ibmad::{Mad, Status};
    use std::sync::atomic::{AtomicBool, Ordering};
    use umad::MethodMask;
    // The SM at H-host3 (IsSM held); a client at H-host1 asks its SMInfo along 0,1,8,1 and by
    // LID: both reach the SM port, whose answers come back (the directed one along its
    // return path).
    let sm = Port::open_sim(&SimOptions::new(example()).node("H-host3")).expect("sm port");
    let _issm = sm.issm().expect("issm");
    let sm_lid = sm.ca().unwrap().ports[0].base_lid as u16;
    let client = Port::open_sim(&SimOptions::new(example())).expect("client port");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let methods = MethodMask::of(&[Method::Get.into()]);
            let dr = sm
                .register(&AgentSpec::new(0x81, 1).methods(methods))
                .unwrap();
            let lid = sm
                .register(&AgentSpec::new(0x01, 1).methods(methods))
                .unwrap();
            while !stop.load(Ordering::Relaxed) {
                let Some(req) = sm.recv(Some(Duration::from_millis(20))).unwrap() else {
                    continue;
                };
                let mut resp = req.mad.clone();
                let mut smp = Smp::new_unchecked(&mut resp[..]);
                assert_eq!(smp.header().attr_id(), id::SM_INFO);
                smp.make_response(Status::SUCCESS);
                smp.data_mut()[..8].copy_from_slice(&0x5a5a_u64.to_be_bytes());
                let agent = if Mad::new_unchecked(&req.mad[..]).mgmt_class() == 0x81.into() {
                    dr
                } else {
                    lid
                };
                sm.send(agent, &resp, &req.addr, 0, 0).unwrap();
            }
        });
        let dr = client.register(&AgentSpec::new(0x81, 1)).unwrap();
        let req = Smp::dr_request(
            Method::Get,
            id::SM_INFO,
            0,
            1,
            &DrPath::from_hops(&[1, 8, 1]).unwrap(),
        );
        let r = client
            .transact(dr, &req, &MadAddr::directed_route(), 500, 1)
            .unwrap();
        assert!(!r.is_timeout(), "no SMInfo answer by directed route");
        let smp = Smp::new_checked(&r.mad[..]).unwrap();
        assert!(smp.status().is_success() && smp.direction());
        assert_eq!(&smp.data()[..8], &0x5a5a_u64.to_be_bytes());
        let lr = client.register(&AgentSpec::new(0x01, 1)).unwrap();
        let req = Smp::lid_request(Method::Get, id::SM_INFO, 0, 2);
        let r = client
            .transact(lr, &req, &MadAddr::new(sm_lid, 0, 0, 0), 500, 1)
            .unwrap();
        assert!(!r.is_timeout(), "no SMInfo answer by LID {sm_lid}");
        assert_eq!(
            &Smp::new_checked(&r.mad[..]).unwrap().data()[..8],
            &0x5a5a_u64.to_be_bytes()
        );
        stop.store(true, Ordering::Relaxed);
    });
}

#[test]
fn a_link_taken_down_in_process_sends_trap_128_to_the_sm_port() {
    use ibmad::{Mad, Notice, PhysPortState, PortInfo, PortState};
    use umad::MethodMask;
    // The configured start names LID 1 the SM's: H-host1's port.
    // (A fabric of its own: the seed makes it a different one from the other tests'.)
    let sm = Port::open_sim(&SimOptions::new(example()).faults("seed=0")).expect("sm port");
    let _issm = sm.issm().unwrap();
    assert_eq!(sm.ca().unwrap().ports[0].base_lid, 1);
    sm.register(&AgentSpec::new(0x01, 1).methods(MethodMask::of(&[0x05])))
        .unwrap();
    // Another port disables S-sw1's port 2 (H-host2's link) by directed route.
    let client = Port::open_sim(&SimOptions::new(example()).faults("seed=0").node("H-host3"))
        .expect("client port");
    let agent = client.register(&AgentSpec::new(0x81, 1)).unwrap();
    let path = DrPath::from_hops(&[1, 8]).unwrap();
    let get = Smp::dr_request(Method::Get, id::PORT_INFO, 2, 1, &path);
    let r = client
        .transact(agent, &get, &MadAddr::directed_route(), 500, 1)
        .unwrap();
    let mut pi = PortInfo::parse(Smp::new_checked(&r.mad[..]).unwrap().data()).unwrap();
    pi.port_state = PortState::NoChange;
    pi.port_physical_state = PhysPortState::Disabled;
    let mut set = Smp::dr_request(Method::Set, id::PORT_INFO, 2, 2, &path);
    pi.emit(Smp::new_unchecked(&mut set[..]).data_mut());
    let r = client
        .transact(agent, &set, &MadAddr::directed_route(), 500, 1)
        .unwrap();
    assert!(Smp::new_checked(&r.mad[..]).unwrap().status().is_success());
    // The switch's trap reaches the SM port.
    let t = sm
        .recv(Some(Duration::from_secs(2)))
        .unwrap()
        .expect("Trap 128 at the SM port");
    let mad = Mad::new_unchecked(&t.mad[..]);
    assert_eq!((u8::from(mad.method()), mad.attr_id()), (0x05, id::NOTICE));
    let notice = Notice::parse_smp(Smp::new_unchecked(&t.mad[..]).data()).unwrap();
    assert_eq!(notice.trap_number().map(u16::from), Some(128), "{notice:?}");
    assert_ne!(t.addr.lid, 0, "from the switch's LID");
}
