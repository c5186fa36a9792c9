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

use common::{mask_date, run, umad};
use ibmad::{DrPath, Method, Smp};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};
use umad::carrier::ibsim::wire::{self, ctl, ClientInfo, Ctl, Request};

/// How long an answer that must come may take (only a failing test waits it out: the
/// tests here run side by side, two of them with dozens of busy clients).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// Held by the tests that load the machine (many clients), one at a time.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    fn ctl(&self, args: &[&str]) -> Output {
        Command::new(umad())
            .args(["sim", "ctl", "--socket", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("umad sim ctl runs")
    }

    /// `umad sim ctl` that must succeed: its stdout.
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
        control.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
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
        self.send_dr_mod(attr, 0, path, tid);
    }

    /// Sends a directed-route Get(`attr`, `modifier`) along `path` with TID `tid`.
    fn send_dr_mod(&self, attr: u16, modifier: u32, path: &str, tid: u64) {
        let mad = Smp::dr_request(
            Method::Get,
            attr,
            modifier,
            tid,
            &DrPath::parse(path).unwrap(),
        );
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
    let r = c.recv(ANSWER_WAIT).expect("an answer");
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
        let r = c.recv(ANSWER_WAIT).expect("a late answer");
        assert_eq!(r.status, 0);
        got.push(tid_low(&r));
    }
    let took = t0.elapsed();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3]);
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
    drop(serve);

    let serve = Serve::start(&["example", "--faults", "dup=100%"]);
    let c = Raw::connect(&serve.socket, "", false);
    c.send_dr(ibmad::attr::id::NODE_INFO, "0,1,8", 9);
    for copy in 0..2 {
        let r = c.recv(ANSWER_WAIT).unwrap_or_else(|| panic!("copy {copy}"));
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
    let r = c.recv(ANSWER_WAIT).expect("the local answer");
    assert_eq!((r.status, tid_low(&r)), (0, 12));
}

/// PortInfo of `port` of the node at the end of `path`, through `c`.
fn port_info(c: &Raw, path: &str, port: u8) -> ibmad::PortInfo {
    c.send_dr_mod(ibmad::attr::id::PORT_INFO, u32::from(port), path, 77);
    loop {
        let r = c.recv(ANSWER_WAIT).expect("PortInfo answered");
        if r.mad[3] & 0x80 != 0 && tid_low(&r) == 77 {
            assert_eq!(r.status, 0);
            return ibmad::PortInfo::parse(Smp::new_unchecked(&r.mad[..]).data()).unwrap();
        }
    }
}

/// The next trap `sm` receives within `wait` (other packets skipped).
fn next_trap(sm: &Raw, wait: Duration) -> Option<Request> {
    let deadline = Instant::now() + wait;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let r = sm.recv(left)?;
        if r.mad[3] == 0x05 {
            return Some(r);
        }
    }
    None
}

/// `umad sim ctl link` takes a link down and up through the port state machine (both
/// ends), and the switch sends Trap 128 to the SM client at its MasterSMLID; the control
/// interface's other commands, and its errors (exit 1 with a message, 2 for usage).
#[test]
fn ctl_links_traps_faults_counters_status_and_quit() {
    let mut serve = Serve::start(&["example", "--configured"]);
    let sm = Raw::connect(&serve.socket, "H-host1", true);
    let probe = Raw::connect(&serve.socket, "H-host3", false);
    let sw1 = "0,1,8"; // from H-host3: S-sw2, then S-sw1
    let pi = port_info(&probe, sw1, 2);
    assert_eq!(pi.port_state, ibmad::PortState::Active);

    let out = serve.ctl_ok(&["link", "S-sw1", "2", "down"]);
    assert!(
        out.contains("S-sw1 port 2: LinkUp/Active -> Disabled/Down"),
        "{out}"
    );
    assert!(
        out.contains("far end H-host2 port 1: LinkUp/Active -> Polling/Down"),
        "{out}"
    );
    assert!(out.contains("traps sent: 1"), "{out}");
    let pi = port_info(&probe, sw1, 2);
    assert_eq!(
        (pi.port_state, pi.port_physical_state),
        (ibmad::PortState::Down, ibmad::PhysPortState::Disabled)
    );
    let trap = next_trap(&sm, ANSWER_WAIT).expect("Trap 128 at the SM");
    // A switch's LID and SM LID are its port 0's.
    let p0 = port_info(&probe, sw1, 0);
    let (sw1_lid, sm_lid) = (p0.lid, p0.master_sm_lid);
    assert_ne!(sw1_lid, 0);
    assert_eq!((trap.slid, trap.dlid, trap.dqp), (sw1_lid, sm_lid, 0));
    assert_eq!(trap.mad[..4], [1, 0x01, 1, 0x05], "SubnLid Trap");
    assert_eq!(trap.mad[16..18], [0, 2], "Notice");
    let notice = ibmad::Notice::parse_smp(&trap.mad[64..]).unwrap();
    assert_eq!(
        notice.trap_number(),
        Some(ibmad::TrapNumber::LinkStateChange)
    );
    assert_eq!(notice.issuer_lid, sw1_lid);

    let out = serve.ctl_ok(&["link", "sw1", "2", "up"]);
    assert!(
        out.contains("Disabled/Down -> LinkUp/Initialize"),
        "by NodeDescription: {out}"
    );
    assert!(next_trap(&sm, ANSWER_WAIT).is_some(), "a trap on up");
    let pi = port_info(&probe, sw1, 2);
    assert_eq!(
        (pi.port_state, pi.port_physical_state),
        (ibmad::PortState::Initialize, ibmad::PhysPortState::LinkUp)
    );

    // The inter-switch link: S-sw2 can no longer reach the SM, which status reports.
    serve.ctl_ok(&["link", "S-sw2", "8", "down"]);
    let status = serve.ctl_ok(&["status"]);
    assert!(status.contains("clients: 2"), "{status}");
    assert!(status.contains("at H-host1 port 1, SM"), "{status}");
    assert!(status.contains("undelivered: 1"), "{status}");
    serve.ctl_ok(&["link", "S-sw2", "8", "up"]);

    // Faults: everything over a link lost, then cleared.
    let out = serve.ctl_ok(&["fault", "seed=3", "drop=100%"]);
    assert!(out.contains("drop=100%"), "{out}");
    probe.send_dr(ibmad::attr::id::NODE_INFO, "0,1", 5);
    assert!(probe.recv(Duration::from_millis(400)).is_none(), "lost");
    assert!(serve.ctl_ok(&["dump"]).contains("faults: seed=3,drop=100%"));
    serve.ctl_ok(&["fault", "clear"]);
    assert!(serve.ctl_ok(&["status"]).contains("faults: none"));
    probe.send_dr(ibmad::attr::id::NODE_INFO, "0,1", 6);
    assert_eq!(tid_low(&probe.recv(ANSWER_WAIT).unwrap()), 6);

    // Counters: errors bumped, read back through the PMA by umad perfquery.
    let sw2_lid = port_info(&probe, "0,1", 0).lid;
    serve.ctl_ok(&["errors", "S-sw2", "1", "4"]);
    let out = serve.ctl_ok(&["counters", "S-sw2", "1", "LinkDownedCounter+=2"]);
    assert!(out.contains("SymbolErrorCounter: 4"), "{out}");
    assert!(out.contains("LinkDownedCounter: 2"), "{out}");
    let pq = Command::new(umad())
        .env("UMAD_IBSIM", &serve.socket)
        .env("UMAD_IBSIM_NODE", "H-host3")
        .env_remove("LD_PRELOAD")
        .args(["perfquery", &sw2_lid.to_string(), "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&pq.stdout);
    assert!(pq.status.success(), "{text}");
    assert!(
        text.contains("SymbolErrorCounter:..............4"),
        "{text}"
    );
    assert!(
        text.contains("PortRcvErrors:...................4"),
        "{text}"
    );
    assert!(
        text.contains("LinkDownedCounter:...............2"),
        "{text}"
    );

    // Errors a person can act on.
    for (args, code, says) in [
        (
            &["link", "nosuch", "1", "down"][..],
            1,
            "no node has the id",
        ),
        (&["link", "S-sw1", "9", "down"], 1, "S-sw1 has no port 9"),
        (&["link", "S-sw1", "0", "down"], 1, "no link"),
        (&["link", "H-host1", "0", "up"], 1, "H-host1 has no port 0"),
        (&["fault", "drop=7"], 1, "\"drop=7\""),
        (&["fault", "dead=nosuch"], 1, "nosuch"),
        (
            &["counters", "S-sw1", "1", "Bogus=1"],
            2,
            "not a PortCounters field",
        ),
        (&["link", "S-sw1", "1"], 2, "usage: link"),
        (&["reboot"], 2, "unknown command"),
    ] {
        let out = serve.ctl(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Hostile datagrams on the control socket: answered with an error, the daemon lives.
    let me = UnixDatagram::bind_addr(
        &wire::abstract_addr(&format!("{}:hostile", serve.socket)).unwrap(),
    )
    .unwrap();
    me.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
    let console = wire::abstract_addr(&format!("{}:console", serve.socket)).unwrap();
    let junk = b"umad-sim-ctl 1\0link\0S-sw1\0";
    for garbage in [&b""[..], b"\xff\xfe", b"umad-sim-ctl 1\0\xff\0", &junk[..]] {
        me.send_to_addr(garbage, &console).unwrap();
        let mut buf = [0u8; 4096];
        let n = me.recv(&mut buf).expect("answered");
        assert_eq!(
            &buf[..2],
            b"1\n",
            "{:?}",
            String::from_utf8_lossy(&buf[..n])
        );
    }
    assert!(serve.ctl_ok(&["status"]).contains("fabric: example"));

    serve.ctl_ok(&["quit"]);
    let deadline = Instant::now() + ANSWER_WAIT;
    let status = loop {
        if let Some(s) = serve.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "still running after quit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let out = serve.ctl(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no umad sim serve listens"));
}

/// Waits up to 60 s for `what` to hold of opensm's log.
fn wait_log(sm: &ibsim_harness::SmDaemon<'_>, what: &str, ok: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = sm.log();
        if ok(&log) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "opensm: no {what} within 60 s; its log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A resident opensm (under umad2sim) on the daemon: `umad sim ctl link S-sw1 2 down`
/// makes S-sw1 send Trap 128 to it, opensm logs the trap and sweeps again (another
/// SUBNET UP), and afterwards `umad ibnetdiscover` no longer finds H-host2 and
/// `umad iblinkinfo` shows the port down; `link ... up` brings another trap and sweep, and
/// H-host2 back, its link Active.
#[test]
fn opensm_sweeps_again_on_trap_128_when_a_link_goes_down_and_up() {
    if !require_ibsim(
        "umad_cli::sim_serve_ctl::opensm_sweeps_again_on_trap_128_when_a_link_goes_down_and_up",
    ) {
        return;
    }
    let netfile = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&[netfile.to_str().unwrap()]);
    let socket = serve.socket.clone();
    let sm = sim
        .opensm()
        .configure(move |c| {
            c.env("IBSIM_SOCKNAME", &socket);
            Ok(())
        })
        .start_daemon()
        .expect("opensm on umad sim serve");
    let tool = |name: &str| {
        let out = run(Command::new(umad())
            .env("UMAD_IBSIM", &serve.socket)
            .env_remove("UMAD_IBSIM_NODE")
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null())
            .arg(name));
        assert!(out.status.success(), "umad {name}: {out:?}");
        mask_date(&String::from_utf8_lossy(&out.stdout))
    };
    let traps = |log: &str| log.matches("num:128 (Link state change)").count();
    let ups = |log: &str| log.matches("SUBNET UP").count();
    let up0 = ups(&sm.log());
    assert_eq!(traps(&sm.log()), 0, "no trap during the first sweep");
    assert!(tool("ibnetdiscover").contains("host2 HCA-1"));

    let out = serve.ctl_ok(&["link", "S-sw1", "2", "down"]);
    assert!(out.contains("traps sent: 1"), "{out}");
    wait_log(&sm, "trap 128 and a new sweep", |l| {
        traps(l) == 1 && ups(l) > up0
    });
    let log = sm.log();
    assert!(log.contains("Producer:2 (Switch)"), "{log}");
    let down = tool("ibnetdiscover");
    assert!(!down.contains("host2 HCA-1"), "{down}");
    let links = tool("iblinkinfo");
    let port2 = links
        .lines()
        .skip_while(|l| !l.contains("sw1:"))
        .find(|l| l.contains(" 2[  ] ==("))
        .unwrap_or_else(|| panic!("sw1 port 2 in:\n{links}"));
    assert!(port2.contains("Down/Disabled"), "{port2}");

    let up1 = ups(&sm.log());
    let out = serve.ctl_ok(&["link", "S-sw1", "2", "up"]);
    assert!(out.contains("traps sent: 1"), "{out}");
    wait_log(&sm, "a second trap 128 and a new sweep", |l| {
        traps(l) == 2 && ups(l) > up1
    });
    let back = tool("ibnetdiscover");
    assert!(back.contains("host2 HCA-1"), "{back}");
    let links = tool("iblinkinfo");
    let port2 = links
        .lines()
        .skip_while(|l| !l.contains("sw1:"))
        .find(|l| l.contains(" 2[  ] ==("))
        .unwrap_or_else(|| panic!("sw1 port 2 in:\n{links}"));
    assert!(port2.contains("Active/  LinkUp"), "{port2}");
    let status = serve.ctl_ok(&["status"]);
    assert!(status.contains("traps sent: 2, undelivered: 0"), "{status}");
}

/// Fifty clients at once (processes, natively over `UMAD_IBSIM`): 25 `umad smpquery` and 25
/// `umad ibnetdiscover` on a 1,008-node fat tree all print what one alone prints; then all
/// have given their slots back.
#[test]
fn fifty_clients_at_once_are_all_answered() {
    let _heavy = HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let serve = Serve::start(&["fattree:36,8,28"]);
    let cmd = |args: &[&str]| {
        let mut c = Command::new(umad());
        c.env("UMAD_IBSIM", &serve.socket)
            .env_remove("UMAD_IBSIM_NODE")
            .env_remove("LD_PRELOAD")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let smp: &[&str] = &["smpquery", "-D", "nodedesc", "0,1,29,2,1"];
    let disc: &[&str] = &["ibnetdiscover"];
    let alone = |args: &[&str]| {
        let out = cmd(args).output().unwrap();
        assert!(out.status.success(), "{args:?} alone: {out:?}");
        mask_date(&String::from_utf8_lossy(&out.stdout))
    };
    let want_smp = alone(smp);
    let want_disc = alone(disc);
    assert!(want_disc.lines().count() > 1000, "{want_disc}");
    let t0 = Instant::now();
    let children: Vec<(usize, Child)> = (0..50)
        .map(|i| (i, cmd(if i % 2 == 0 { smp } else { disc }).spawn().unwrap()))
        .collect();
    let mut bad = Vec::new();
    for (i, child) in children {
        let out = child.wait_with_output().unwrap();
        let text = mask_date(&String::from_utf8_lossy(&out.stdout));
        let want = if i % 2 == 0 { &want_smp } else { &want_disc };
        if !out.status.success() || &text != want {
            bad.push(format!(
                "client {i}: {} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    eprintln!("50 clients at once: {:?}", t0.elapsed());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let status = serve.ctl_ok(&["status"]);
    assert!(status.contains("clients: 0"), "{status}");
}

/// The CPU time process `pid` has used (user and system), in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which is in parentheses): utime is the 12th
    // and stime the 13th of them, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|w| w.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

/// SMPs a second from `clients` raw clients at once, each with one request in flight (a
/// directed-route NodeInfo three hops out), for `span`; every answer checked.
fn smp_rate(serve: &Serve, clients: usize, span: Duration) -> f64 {
    let barrier = std::sync::Barrier::new(clients);
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..clients)
            .map(|_| {
                let c = Raw::connect(&serve.socket, "", false);
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let end = Instant::now() + span;
                    let mut n = 0u64;
                    while Instant::now() < end {
                        n += 1;
                        c.send_dr(ibmad::attr::id::NODE_INFO, "0,1,29,2,1", n);
                        let r = c.recv(ANSWER_WAIT).expect("an answer");
                        assert_eq!((r.status, tid_low(&r)), (0, n));
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total as f64 / span.as_secs_f64()
}

/// The daemon's SMP rate with one client and with several: a slot's thread each, the
/// fabric's lock held only to compute an answer, so more clients use more cores. Printed
/// (`--nocapture`); the check is only that every answer is right.
#[test]
fn smp_rate_with_one_and_with_several_clients() {
    let _heavy = HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let serve = Serve::start(&["fattree:36,8,28"]);
    let span = Duration::from_millis(1500);
    let mut line = String::from("umad sim serve, SMPs/s (and the daemon's CPU, in cores):");
    for clients in [1, 2, 4, 8] {
        let cpu0 = cpu_seconds(serve.child.id());
        let t0 = Instant::now();
        let rate = smp_rate(&serve, clients, span);
        let cores = (cpu_seconds(serve.child.id()) - cpu0) / t0.elapsed().as_secs_f64();
        line += &format!(" {clients} client(s) {rate:.0} ({cores:.2});");
    }
    eprintln!("{line}");
}
