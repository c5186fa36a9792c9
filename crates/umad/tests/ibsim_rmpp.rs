//! RMPP end to end through ibsim, which carries only 256-byte packets: the MAD layer on both
//! ends segments, windows, ACKs and reassembles. A Rust SA-like server on H-host3 answers
//! GetTable with tables of any size; a client on H-host1 gets them whole. The same server
//! and client also run on the fabric simulated in process (`UMAD_SIM`, no ibsim): two ports
//! of one process, the request forwarded to the serving port, under seeded loss too. Also:
//! many open/close cycles of one port in one process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibmad::{Mad, Rmpp, RmppHeader};
use ibsim_harness::{example_fabric, require_ibsim, Ibsim};
use umad::carrier::ibsim::IbsimOptions;
use umad::{AgentSpec, MadAddr, MethodMask, Port, SimOptions};

const SA: u8 = 0x03;
const GET_TABLE: u8 = 0x12;
const GET_TABLE_RESP: u8 = 0x92;
const SET: u8 = 0x02;
const GET_RESP: u8 = 0x81;

fn fabric(test: &str) -> Option<Ibsim> {
    if !require_ibsim(test) {
        return None;
    }
    let sim = Ibsim::builder(example_fabric())
        .console(true)
        .start()
        .expect("start ibsim");
    sim.run_sm_once().expect("opensm -o");
    Some(sim)
}

/// An SA MAD: `records` bytes of numbered data after the 56-byte SA header, RMPP ACTIVE when
/// `rmpp`; the attribute modifier says how many data bytes follow (so the server knows).
fn sa_mad(method: u8, tid: u64, data_len: usize, rmpp: bool, attr_mod: u32) -> Vec<u8> {
    let mut m = vec![0u8; 56 + data_len];
    m[..4].copy_from_slice(&[1, SA, 2, method]);
    m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
    Mad::new_unchecked(&mut m[..]).set_tid(tid);
    if rmpp {
        let mut h = RmppHeader::data(0, false, false, 0);
        h.flags = ibmad::rmpp::RmppFlags(ibmad::rmpp::RmppFlags::ACTIVE);
        h.emit(&mut Rmpp::new_unchecked(&mut m[..]));
    }
    for (i, b) in m[56..].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0];
    }
    m
}

/// Starts the server on H-host3: every GetTable gets a table of `attr_mod` data bytes, every
/// RMPP Set a one-MAD GetResp carrying the request's length. Returns its LID and a stop flag.
fn serve(sim: &Ibsim) -> (u16, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let mut opts = IbsimOptions::new(sim.socket_name()).node("H-host3");
    opts.issm = true; // ibsim hands requests only to the port's SM client
    serve_on(Port::open_ibsim(&opts).expect("server port"))
}

/// [`serve`] on `port`.
fn serve_on(port: Port) -> (u16, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let lid = port.ca().expect("ca").ports[0].base_lid as u16;
    assert_ne!(lid, 0, "opensm gave H-host3 a LID");
    let agent = port
        .register(
            &AgentSpec::new(SA, 2)
                .rmpp_version(1)
                .methods(MethodMask::of(&[GET_TABLE, SET])),
        )
        .expect("server agent");
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let t = std::thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            let Some(req) = port
                .recv(Some(Duration::from_millis(50)))
                .expect("server recv")
            else {
                continue;
            };
            let m = Mad::new_unchecked(&req.mad[..]);
            let resp = if u8::from(m.method()) == GET_TABLE {
                sa_mad(
                    GET_TABLE_RESP,
                    m.tid(),
                    m.attr_mod() as usize,
                    true,
                    m.attr_mod(),
                )
            } else {
                let mut r = sa_mad(GET_RESP, m.tid(), 200, false, 0);
                r[56..64].copy_from_slice(&(req.mad.len() as u64).to_be_bytes());
                r[64..96].copy_from_slice(&req.mad[req.mad.len() - 32..]);
                r
            };
            // As opensm sends its SA responses: with its transaction timeout, which bounds
            // the wait for each RMPP ACK.
            port.send(agent, &resp, &req.addr, 200, 3)
                .expect("server send");
        }
    });
    (lid, stop, t)
}

/// A client port on ibsim's default node (H-host1) with an RMPP SA agent.
fn client(sim: &Ibsim) -> (Port, u32) {
    client_on(Port::open_ibsim(&IbsimOptions::new(sim.socket_name())).expect("client port"))
}

/// [`client`] on `port`.
fn client_on(port: Port) -> (Port, u32) {
    let agent = port
        .register(&AgentSpec::new(SA, 2).rmpp_version(1))
        .expect("client agent");
    (port, agent)
}

fn sa_addr(lid: u16) -> MadAddr {
    MadAddr::new(lid, 1, 0, MadAddr::DEFAULT_QKEY)
}

#[test]
fn ibsim_rmpp_tables_of_any_size_arrive_whole() {
    let Some(sim) = fabric("ibsim_rmpp_tables_of_any_size_arrive_whole") else {
        return;
    };
    let (lid, stop, server) = serve(&sim);
    let (port, agent) = client(&sim);
    tables_arrive_whole(&port, agent, lid);
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server thread");
}

/// GetTables of 0 bytes to 123 KB and an RMPP Set of 60 KB, each whole.
fn tables_arrive_whole(port: &Port, agent: u32, lid: u16) {
    for (tid, len) in [
        (1u64, 0usize),
        (2, 150),
        (3, 200),
        (4, 201),
        (5, 1000 * 200),
        (6, 123_457),
    ] {
        let req = sa_mad(GET_TABLE, tid, 0, false, len as u32);
        let started = Instant::now();
        let r = port
            .transact(agent, &req, &sa_addr(lid), 2000, 2)
            .expect("transact");
        assert_eq!(r.status, 0, "table of {len} bytes: status {}", r.status);
        let want = sa_mad(GET_TABLE_RESP, 0, len, true, len as u32);
        assert_eq!(r.mad.len(), want.len(), "table of {len} bytes");
        assert!(r.mad[56..] == want[56..], "table of {len} bytes differs");
        let rmpp = Rmpp::new_checked(&r.mad[..]).unwrap();
        assert!(rmpp.flags().is_first() && rmpp.flags().is_active());
        eprintln!("{len} bytes in {:?}", started.elapsed());
    }
    // A long request the other way: the server saw all of it.
    let req = sa_mad(SET, 9, 300 * 200 + 17, true, 0);
    let r = port
        .transact(agent, &req, &sa_addr(lid), 2000, 2)
        .expect("transact");
    assert_eq!(r.status, 0);
    assert_eq!(
        u64::from_be_bytes(r.mad[56..64].try_into().unwrap()),
        req.len() as u64
    );
    assert_eq!(&r.mad[64..96], &req[req.len() - 32..]);
}

/// Ten GetTables of 50-59 KB, `timeout_ms` and 5 retries each, on a lossy fabric: each
/// whole or timed out, never partial. Returns how many came whole.
fn tables_under_loss(port: &Port, agent: u32, lid: u16, timeout_ms: u32) -> usize {
    let mut whole = 0;
    for tid in 0..10u64 {
        let len = 50_000 + tid as usize * 1000;
        let req = sa_mad(GET_TABLE, 100 + tid, 0, false, len as u32);
        let r = port
            .transact(agent, &req, &sa_addr(lid), timeout_ms, 5)
            .expect("transact");
        if r.status == 0 {
            let want = sa_mad(GET_TABLE_RESP, 0, len, true, len as u32);
            assert_eq!(r.mad.len(), want.len(), "never a partial answer");
            assert!(r.mad[56..] == want[56..]);
            whole += 1;
        } else {
            assert!(r.is_timeout(), "status {}", r.status);
        }
    }
    whole
}

/// The example fabric in process, as configured as ibsim's after `opensm -o`.
fn in_process(node: &str, faults: &str) -> Port {
    let netfile = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fabrics/example.net");
    Port::open_sim(&SimOptions::new(netfile).node(node).faults(faults)).expect("in-process port")
}

#[test]
fn in_process_rmpp_tables_of_any_size_arrive_whole() {
    let (lid, stop, server) = serve_on(in_process("H-host3", ""));
    let (port, agent) = client_on(in_process("H-host1", ""));
    tables_arrive_whole(&port, agent, lid);
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server thread");
}

#[test]
fn in_process_rmpp_under_seeded_loss_whole_or_timed_out() {
    // 2 % of packets lost on their way (segments, ACKs, requests): RMPP's windows and
    // retries carry most tables through; none arrives partial.
    let faults = "seed=4,drop=2%";
    let (lid, stop, server) = serve_on(in_process("H-host3", faults));
    let (port, agent) = client_on(in_process("H-host1", faults));
    let whole = tables_under_loss(&port, agent, lid, 300);
    eprintln!("{whole} of 10 tables whole under 2 % loss");
    assert!(whole >= 5, "only {whole} of 10 tables came through");
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server thread");
}

#[test]
fn ibsim_rmpp_with_injected_errors_whole_or_timed_out() {
    let Some(sim) = fabric("ibsim_rmpp_with_injected_errors_whole_or_timed_out") else {
        return;
    };
    let (lid, stop, server) = serve(&sim);
    let (port, agent) = client(&sim);
    // 5 % of the packets through the switches are lost (ibsim bounces them).
    sim.console(r#"Error "S-sw1" 5"#).expect("console");
    sim.console(r#"Error "S-sw2" 5"#).expect("console");
    let whole = tables_under_loss(&port, agent, lid, 500);
    eprintln!("{whole} of 10 tables whole under 5 % loss");
    assert!(whole >= 5, "only {whole} of 10 tables came through");
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server thread");
}

#[test]
fn ibsim_ten_thousand_open_close_cycles() {
    let Some(sim) = fabric("ibsim_ten_thousand_open_close_cycles") else {
        return;
    };
    let opts = IbsimOptions::new(sim.socket_name());
    for i in 0..10_000 {
        let port = Port::open_ibsim(&opts).unwrap_or_else(|e| panic!("open {i}: {e}"));
        if i % 1000 == 0 {
            let a = port.register(&AgentSpec::new(0x81, 1)).expect("register");
            let path = ibmad::DrPath::from_hops(&[0]).unwrap();
            let req =
                ibmad::Smp::dr_request(ibmad::Method::Get, ibmad::attr::id::NODE_INFO, 0, 1, &path);
            let r = port
                .transact(a, &req, &MadAddr::directed_route(), 500, 1)
                .expect("transact");
            assert!(!r.is_timeout(), "cycle {i}");
        }
    }
}

#[test]
fn ibsim_port_fd_is_readable_exactly_while_a_mad_waits() {
    use std::os::unix::io::AsRawFd;
    let Some(sim) = fabric("ibsim_port_fd_is_readable_exactly_while_a_mad_waits") else {
        return;
    };
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name())).expect("port");
    let fd = port.as_raw_fd();
    let readable = |ms| umad::raw::poll_once(fd, libc::POLLIN, ms).expect("poll").0 == 1;
    let agent = port.register(&AgentSpec::new(0x81, 1)).expect("register");
    assert!(!readable(0), "nothing queued yet");
    let path = ibmad::DrPath::from_hops(&[0]).unwrap();
    // Many times over: the port's progress thread may be in a pass of its own (holding the
    // reader role) at any of these points, and none may then miss the waiting MAD.
    for tid in 0..200u64 {
        let req = ibmad::Smp::dr_request(
            ibmad::Method::Get,
            ibmad::attr::id::NODE_INFO,
            0,
            tid,
            &path,
        );
        port.send(agent, &req, &MadAddr::directed_route(), 1000, 0)
            .expect("send");
        assert!(
            readable(2000),
            "the answer makes the descriptor readable ({tid})"
        );
        // Port::poll and a recv_fit that is too small look without taking.
        assert!(
            port.poll(Some(Duration::ZERO)).expect("poll"),
            "poll ({tid})"
        );
        assert!(
            port.recv_fit(Some(Duration::ZERO), 10).is_err(),
            "recv_fit ({tid})"
        );
        assert!(readable(0), "still readable: the MAD still waits ({tid})");
        let r = port
            .recv(Some(Duration::ZERO))
            .expect("recv")
            .expect("the answer");
        assert_eq!(r.status, 0);
        assert!(!readable(0), "taken: no longer readable ({tid})");
    }
}
