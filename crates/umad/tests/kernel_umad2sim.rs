//! The kernel transport in-process under ibsim's umad2sim shim: this test binary re-runs
//! itself with `LD_PRELOAD=libumad2sim.so`, where `child_kernel_transport_under_umad2sim`
//! opens `/dev/infiniband/umad0` through libc exactly as it would on hardware.
//!
//! Under the shim REGISTER_AGENT2 fails with EINVAL (exercising the fallback to
//! REGISTER_AGENT), ENABLE_PKEY is a no-op, the header is 56 bytes, and dropped MADs come back
//! at once with status ETIMEDOUT.

use std::time::Duration;

use ibmad::attr::id;
use ibmad::{DrPath, Method, NodeInfo, PortInfo, PortState, Smp};
use ibsim_harness::{example_fabric, example_net as net, require_ibsim, run_with_timeout, Ibsim};
use umad::device::Devices;
use umad::{AgentSpec, Error, MadAddr, Port, Received};

const CHILD: &str = "child_kernel_transport_under_umad2sim";
const CHILD_ENV: &str = "UMAD_TEST_UNDER_UMAD2SIM";

#[test]
fn umad2sim_kernel_transport() {
    if !require_ibsim("umad2sim_kernel_transport") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    sim.run_sm_once().expect("opensm -o");
    let exe = std::env::current_exe().expect("test binary");
    let out = run_with_timeout(
        sim.umad2sim_command(exe)
            .args([
                "--exact",
                CHILD,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .env_remove("UMAD_IBSIM"),
        Duration::from_secs(60),
    )
    .expect("run the child under umad2sim");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed under umad2sim:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the child test did not run:\n{text}"
    );
}

fn data(r: &Received) -> &[u8] {
    assert!(!r.is_timeout(), "timed out");
    let smp = Smp::new_checked(&r.mad[..]).expect("SMP");
    assert!(
        smp.status().is_success(),
        "MAD status {:#06x}",
        smp.status().raw()
    );
    smp.data()
}

#[test]
#[ignore = "runs only under LD_PRELOAD=libumad2sim.so, started by umad2sim_kernel_transport"]
fn child_kernel_transport_under_umad2sim() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run through umad2sim_kernel_transport, not directly"
    );
    let devices = Devices::new();
    assert_eq!(
        devices.abi_version().expect("abi_version through the shim"),
        5
    );
    assert_eq!(devices.ca_names().expect("CA list"), ["ibsim0"]);
    assert_eq!(
        devices.resolve(None, 0, false).expect("default port"),
        ("ibsim0".to_string(), 1)
    );
    let ca = devices.ca("ibsim0").expect("read the CA");
    assert_eq!(ca.node_guid, net::HOST1_NODE_GUID);
    assert_eq!(
        ca.ports[0].link_layer, "IB",
        "umad2sim has no link_layer file"
    );

    let port = Port::open_kernel(&devices, None, 0).expect("open umad0");
    assert_eq!((port.ca_name(), port.port_num()), ("ibsim0", 1));
    let dr = port
        .register(&AgentSpec::new(0x81, 1))
        .expect("REGISTER_AGENT2 → EINVAL → REGISTER_AGENT");
    let lr = port
        .register(&AgentSpec::new(0x01, 1))
        .expect("LID-routed agent");
    let perf = port
        .register(&AgentSpec::new(0x04, 1))
        .expect("PerfMgt agent");

    let get = |agent, hops: &[u8], attr, attr_mod, tid| {
        let req = Smp::dr_request(
            Method::Get,
            attr,
            attr_mod,
            tid,
            &DrPath::from_hops(hops).unwrap(),
        );
        port.transact(agent, &req, &MadAddr::directed_route(), 500, 1)
            .expect("transact")
    };
    let me = NodeInfo::parse(data(&get(dr, &[], id::NODE_INFO, 0, 1))).unwrap();
    assert_eq!(me.node_guid, net::HOST1_NODE_GUID);
    let host3 = NodeInfo::parse(data(&get(dr, net::DR_HOST3, id::NODE_INFO, 0, 2))).unwrap();
    assert_eq!(host3.node_guid, net::HOST3_NODE_GUID);
    let pi = PortInfo::parse(data(&get(dr, net::DR_HOST3, id::PORT_INFO, 1, 3))).unwrap();
    assert_eq!(pi.port_state, PortState::Active);

    let dead = get(dr, net::DR_DEAD_END, id::NODE_INFO, 0, 4);
    assert!(
        dead.is_timeout(),
        "a dead path reports ETIMEDOUT, status {}",
        dead.status
    );

    let req = Smp::lid_request(Method::Get, id::NODE_INFO, 0, 5);
    let r = port
        .transact(lr, &req, &MadAddr::smi(pi.lid), 500, 1)
        .unwrap();
    assert_eq!(
        NodeInfo::parse(data(&r)).unwrap().node_guid,
        net::HOST3_NODE_GUID
    );

    let r = port
        .transact(
            perf,
            &ibmad::perf::port_counters_get(1, 6),
            &MadAddr::gsi(pi.lid),
            500,
            1,
        )
        .unwrap();
    assert!(!r.is_timeout());
    let pc = ibmad::PortCounters::parse(&r.mad[ibmad::perf::PERF_DATA_OFFSET..]).unwrap();
    assert_eq!(pc.port_select, 1);

    // 32 agents per port, then a clean refusal.
    let mut more = Vec::new();
    while more.len() < 29 {
        more.push(
            port.register(&AgentSpec::new(0x81, 1))
                .expect("agents up to 32"),
        );
    }
    let e = port.register(&AgentSpec::new(0x81, 1)).unwrap_err();
    assert!(matches!(e, Error::TooManyAgents { max: 32, .. }), "{e:?}");
    for id in more {
        port.unregister(id).unwrap();
    }
    assert!(matches!(
        port.unregister(77).unwrap_err(),
        Error::BadAgent { agent: 77, .. }
    ));

    assert!(
        port.recv(Some(Duration::from_millis(20)))
            .unwrap()
            .is_none(),
        "nothing left queued"
    );

    // issm0 opens (umad2sim fd 2048): the port becomes the SM port, so ibsim's trap 144
    // (capability mask changed) reaches our LID-routed SMI agent, as it would reach an SM.
    let issm = port.issm().expect("open issm0");
    let trap = port
        .recv(Some(Duration::from_secs(2)))
        .unwrap()
        .expect("trap 144 for the new SM");
    assert_eq!(
        (trap.agent, trap.mad[1], trap.mad[3]),
        (lr, 0x01, 0x05),
        "a Subn Trap(): {:02x?}",
        &trap.mad[..24]
    );
    drop(issm);

    // The transaction engine on the kernel transport: every DR path one and two hops out,
    // 16 in flight, agree with one-at-a-time answers; dead ports end as typed timeouts.
    let rpc = umad::rpc::Rpc::with_window(port, umad::rpc::Window::of(16));
    rpc.set_budget(Duration::from_millis(100), 1);
    let paths: Vec<Vec<u8>> = (1..=8u8).flat_map(|b| [vec![1, b], vec![b]]).collect();
    let serial: Vec<Option<u64>> = paths
        .iter()
        .map(|h| {
            let t = umad::rpc::Target::Dr(DrPath::from_hops(h).unwrap());
            match rpc.smp_get::<NodeInfo>(&t, 0) {
                Ok(n) => Some(n.node_guid),
                Err(Error::TimedOut { .. }) => None,
                Err(e) => panic!("{h:?}: {e}"),
            }
        })
        .collect();
    assert!(
        serial.iter().filter(|g| g.is_some()).count() >= 4,
        "{serial:?}"
    );
    assert!(serial.iter().any(|g| g.is_none()), "dead ports time out");
    let piped = rpc
        .run_all(paths.iter().map(|h| {
            let path = DrPath::from_hops(h).unwrap();
            let smp = Smp::dr_request(Method::Get, id::NODE_INFO, 0, 0, &path);
            rpc.request(smp, MadAddr::directed_route())
        }))
        .unwrap();
    let piped: Vec<Option<u64>> = piped
        .iter()
        .map(|c| {
            c.outcome.response().map(|r| {
                NodeInfo::parse(Smp::new_checked(&r.mad[..]).unwrap().data())
                    .unwrap()
                    .node_guid
            })
        })
        .collect();
    assert_eq!(piped, serial);
    assert!(rpc.stats().max_in_flight > 1 && rpc.stats().max_in_flight <= 16);
}
