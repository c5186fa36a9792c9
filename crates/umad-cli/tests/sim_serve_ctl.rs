//! `umad sim serve` beyond ibsim: built-in fabric names, seeded faults (`--faults`: late
//! answers sent when due, duplicates twice, lost packets unanswered), the control interface
//! (`umad sim ctl`: links down and up, faults, counters, status, quit), Trap 128 to a
//! running opensm when a link changes, and many clients at once.
//!
//! The tests that need no C program talk ibsim's protocol to the daemon themselves (a raw
//! client below); the ones with opensm or C tools need ibsim's umad2sim
//! (`ibsim_harness::require_ibsim`).

mod common;

use std::os::unix::net::UnixDatagram;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::umad;
use ibmad::{DrPath, Method, Smp};
use umad::carrier::ibsim::wire::{self, ctl, ClientInfo, Ctl, Request};

/// A socket name of this process's own.
fn socket_name(what: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "umadrs-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A running `umad sim serve`, stopped (and reaped) when dropped.
struct Serve {
    child: Child,
    socket: String,
}

impl Serve {
    /// `umad sim serve <args> --socket <own name>`, once its control socket answers.
    fn start(args: &[&str]) -> Serve {
        let socket = socket_name("ctl");
        let child = Command::new(umad())
            .args(["sim", "serve"])
            .args(args)
            .args(["--socket", &socket])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("umad sim serve starts");
        let mut s = Serve { child, socket };
        s.wait_ready();
        s
    }

    fn wait_ready(&mut self) {
        let me = UnixDatagram::bind_addr(
            &wire::abstract_addr(&format!("{}:probe", self.socket)).unwrap(),
        )
        .unwrap();
        me.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let server = wire::abstract_addr(&wire::server_ctl(&self.socket)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut buf = [0u8; 128];
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("umad sim serve exited during start-up: {status}");
            }
            let probe = Ctl::request(0, ctl::DISCONNECT, &[]).encode();
            if me.send_to_addr(&probe, &server).is_ok() && me.recv(&mut buf).is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "umad sim serve is not ready");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `umad sim ctl --socket <this> <args>`.
    #[allow(dead_code)]
    fn ctl(&self, args: &[&str]) -> Output {
        Command::new(umad())
            .args(["sim", "ctl", "--socket", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("umad sim ctl runs")
    }

    /// `umad sim ctl` that must succeed: its stdout.
    #[allow(dead_code)]
    fn ctl_ok(&self, args: &[&str]) -> String {
        let out = self.ctl(args);
        assert!(
            out.status.success(),
            "umad sim ctl {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client speaking ibsim's protocol itself: its own control and data sockets.
struct Raw {
    data: UnixDatagram,
}

impl Raw {
    /// CONNECTs to the daemon at `node` (`""`: the first node).
    fn connect(base: &str, node: &str, issm: bool) -> Raw {
        static N: AtomicU32 = AtomicU32::new(0);
        let id = std::process::id() % 10_000 * 100_000 + N.fetch_add(1, Ordering::Relaxed);
        let bind = |name: String| UnixDatagram::bind_addr(&wire::abstract_addr(&name).unwrap());
        let control = bind(wire::client_ctl(base, id)).unwrap();
        let data = bind(wire::client_in(base, id)).unwrap();
        control
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut info = [0u8; wire::CLIENT_INFO_LEN];
        ClientInfo::new(id, issm, node).encode_into(&mut info);
        let server = wire::abstract_addr(&wire::server_ctl(base)).unwrap();
        control
            .send_to_addr(&Ctl::request(0, ctl::CONNECT, &info).encode(), &server)
            .unwrap();
        let mut buf = [0u8; 128];
        let n = control.recv(&mut buf).expect("CONNECT answered");
        let c = Ctl::decode(&buf[..n]).unwrap();
        assert_ne!(c.typ, ctl::ERROR, "CONNECT at {node:?} refused");
        let slot = ClientInfo::decode(&c.data).id;
        data.connect_addr(&wire::abstract_addr(&wire::server_out(base, slot)).unwrap())
            .unwrap();
        Raw { data }
    }

    /// Sends a directed-route Get(`attr`) along `path` with TID `tid`.
    fn send_dr(&self, attr: u16, path: &str, tid: u64) {
        let mad = Smp::dr_request(Method::Get, attr, 0, tid, &DrPath::parse(path).unwrap());
        let r = Request {
            dlid: 0xffff,
            slid: 0xffff,
            dqp: 0,
            sqp: 0,
            status: 0,
            length: 256,
            mad,
        };
        self.data.send(&r.encode()).unwrap();
    }

    /// The next packet within `wait`.
    fn recv(&self, wait: Duration) -> Option<Request> {
        self.data.set_read_timeout(Some(wait)).unwrap();
        let mut buf = [0u8; 512];
        let n = self.data.recv(&mut buf).ok()?;
        Request::decode(&buf[..n])
    }
}

/// Transaction ID bits 0-47 (the daemon stamps its slot above).
fn tid_low(r: &Request) -> u64 {
    u64::from_be_bytes(r.mad[8..16].try_into().unwrap()) & 0xffff_ffff_ffff
}

#[test]
fn a_built_in_name_is_served() {
    let serve = Serve::start(&["fattree:4,2,2", "--configured"]);
    let c = Raw::connect(&serve.socket, "", false);
    c.send_dr(ibmad::attr::id::NODE_INFO, "0,1", 7);
    let r = c.recv(Duration::from_secs(5)).expect("an answer");
    assert_eq!(r.status, 0);
    assert_eq!(tid_low(&r), 7);
}

#[test]
fn a_bad_fault_spec_is_a_usage_error_naming_the_item() {
    let out = Command::new(umad())
        .args(["sim", "serve", "example", "--faults", "seed=1,drop=2"])
        .args(["--socket", &socket_name("bad")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"drop=2\""), "{err}");
    let out = Command::new(umad())
        .args([
            "sim",
            "serve",
            "nosuch-fabric",
            "--socket",
            &socket_name("bad"),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fattree:"), "the names are listed: {err}");
}

/// delay=100%@300ms: every answer comes, 300 ms late (by the timer: other answers are not
/// held up behind it); dup=100%: every answer twice; drop=100%: none, and no status 110.
#[test]
fn faults_delay_duplicate_and_lose_answers() {
    let serve = Serve::start(&["example", "--faults", "seed=5,delay=100%@300ms"]);
    let c = Raw::connect(&serve.socket, "", false);
    let t0 = Instant::now();
    for tid in 1..=3 {
        c.send_dr(ibmad::attr::id::NODE_INFO, "0,1", tid);
    }
    let mut got = Vec::new();
    for _ in 0..3 {
        let r = c.recv(Duration::from_secs(5)).expect("a late answer");
        assert_eq!(r.status, 0);
        got.push(tid_low(&r));
    }
    let took = t0.elapsed();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3]);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    drop(serve);

    let serve = Serve::start(&["example", "--faults", "dup=100%"]);
    let c = Raw::connect(&serve.socket, "", false);
    c.send_dr(ibmad::attr::id::NODE_INFO, "0,1,8", 9);
    for copy in 0..2 {
        let r = c
            .recv(Duration::from_secs(5))
            .unwrap_or_else(|| panic!("copy {copy}"));
        assert_eq!((r.status, tid_low(&r)), (0, 9));
    }
    assert!(c.recv(Duration::from_millis(300)).is_none(), "a third copy");
    drop(serve);

    let serve = Serve::start(&["example", "--faults", "drop=100%"]);
    let c = Raw::connect(&serve.socket, "", false);
    c.send_dr(ibmad::attr::id::NODE_INFO, "0,1", 11);
    assert!(
        c.recv(Duration::from_millis(500)).is_none(),
        "lost, unanswered"
    );
    // A local SMP crosses no link: answered.
    c.send_dr(ibmad::attr::id::NODE_INFO, "0", 12);
    let r = c.recv(Duration::from_secs(5)).expect("the local answer");
    assert_eq!((r.status, tid_low(&r)), (0, 12));
}
