//! `umad sim serve` in ibsim's place: on every fabric in `fabrics/`, `umad ibnetdiscover`
//! (natively, `UMAD_IBSIM`) and C `ibnetdiscover` under umad2sim print the same bytes and exit
//! with the same codes against the daemon as against ibsim (no SM on either); C and umad
//! `smpquery -D nodeinfo` along a route and to nowhere (C's must fail at once, on the status
//! 110 the daemon returns, not after its timeout); more clients at once than ibsim's ten; a
//! second SM on one node refused, as ibsim refuses it; clients killed without a DISCONNECT
//! do not wedge the daemon.

mod common;

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{mask_date, native, run, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};
use umad::carrier::ibsim::wire::{self, ctl, Ctl};
use umad::IbsimOptions;

const SMALL: &[&str] = &["example.net", "b2b.net", "chain.net", "ring.net"];
const ODD: &[&str] = &["odd.net", "mixed.net", "lmc.net"];
const LARGE: &[&str] = &["fattree-1008.net", "fattree3-1760.net"];

/// A running `umad sim serve`, stopped (and reaped) when dropped.
struct Serve {
    child: Child,
    socket: String,
}

impl Serve {
    /// Starts `umad sim serve <netfile>` on a socket name of its own and waits until its
    /// control socket answers.
    fn start(netfile: &Path) -> Serve {
        static N: AtomicU32 = AtomicU32::new(0);
        let socket = format!(
            "umadrs-serve-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let child = Command::new(umad())
            .args(["sim", "serve"])
            .arg(netfile)
            .args(["--socket", &socket])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("umad sim serve starts");
        let mut s = Serve { child, socket };
        s.wait_ready();
        s
    }

    /// Until a DISCONNECT of slot 0 (answered even when the slot is free) gets its answer.
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

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `umad <tool> <args>` natively against the daemon.
fn ours_native(sim: &Ibsim, serve: &Serve, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad())
        .env("UMAD_IBSIM", &serve.socket)
        .arg(tool)
        .args(args));
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
    )
}

/// C `<tool> <args>` under umad2sim against the daemon.
fn ours_c(sim: &Ibsim, serve: &Serve, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(sim
        .umad2sim_command(tool)
        .env("IBSIM_SOCKNAME", &serve.socket)
        .args(args));
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
    )
}

/// `umad <tool> <args>` natively against ibsim.
fn ibsim_native(sim: &Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad()).arg(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
    )
}

/// C `<tool> <args>` under umad2sim against ibsim.
fn ibsim_c(sim: &Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(sim.umad2sim_command(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
    )
}

/// What differs between ibsim's `(code, text)` and the daemon's, for a report.
fn differs(what: &str, ibsim: &(i32, String), ours: &(i32, String)) -> String {
    if ibsim == ours {
        return String::new();
    }
    let first = ibsim
        .1
        .lines()
        .zip(ours.1.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map_or_else(
            || {
                format!(
                    "      {} lines against {}",
                    ibsim.1.lines().count(),
                    ours.1.lines().count()
                )
            },
            |(i, (a, b))| {
                format!(
                    "      line {}:\n        ibsim: {a}\n        ours:  {b}",
                    i + 1
                )
            },
        );
    format!(
        "  {what}: exit {} against ibsim, {} against umad sim serve\n{first}\n",
        ibsim.0, ours.0
    )
}

/// ibnetdiscover, natively and in C, against ibsim and against the daemon, on `fabrics`.
fn ibnetdiscover_matches(fabrics: &[&str]) {
    let mut report = String::new();
    for fabric in fabrics {
        let netfile = fabrics_dir().join(fabric);
        let sim = Ibsim::start(&netfile).expect("ibsim starts");
        let serve = Serve::start(&netfile);
        let want = ibsim_c(&sim, "ibnetdiscover", &[]);
        assert_eq!(want.0, 0, "{fabric}: C ibnetdiscover over ibsim");
        assert!(
            want.1.contains("Switch") || want.1.contains("Ca"),
            "{}",
            want.1
        );
        report += &differs(
            &format!("{fabric}: C ibnetdiscover"),
            &want,
            &ours_c(&sim, &serve, "ibnetdiscover", &[]),
        );
        let want = ibsim_native(&sim, "ibnetdiscover", &[]);
        report += &differs(
            &format!("{fabric}: umad ibnetdiscover"),
            &want,
            &ours_native(&sim, &serve, "ibnetdiscover", &[]),
        );
    }
    assert!(
        report.is_empty(),
        "umad sim serve differs from ibsim:\n{report}"
    );
}

#[test]
fn the_groups_cover_every_fabric() {
    let mut listed: Vec<&str> = SMALL.iter().chain(ODD).chain(LARGE).copied().collect();
    listed.sort_unstable();
    let mut found: Vec<String> = std::fs::read_dir(fabrics_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".net"))
        .collect();
    found.sort_unstable();
    assert_eq!(listed, found);
}

#[test]
fn ibnetdiscover_matches_ibsim_on_the_small_fabrics() {
    if !require_ibsim("umad_cli::sim_serve::ibnetdiscover_matches_ibsim_on_the_small_fabrics") {
        return;
    }
    ibnetdiscover_matches(SMALL);
}

#[test]
fn ibnetdiscover_matches_ibsim_on_the_odd_fabrics() {
    if !require_ibsim("umad_cli::sim_serve::ibnetdiscover_matches_ibsim_on_the_odd_fabrics") {
        return;
    }
    ibnetdiscover_matches(ODD);
}

#[test]
fn ibnetdiscover_matches_ibsim_on_the_large_fabrics() {
    if !require_ibsim("umad_cli::sim_serve::ibnetdiscover_matches_ibsim_on_the_large_fabrics") {
        return;
    }
    ibnetdiscover_matches(LARGE);
}

/// `smpquery -D nodeinfo` along routes that reach a node and one that ends at an unlinked
/// port: the same text and exit codes as against ibsim, and C's failure comes at once (the
/// daemon's status 110), not after C's timeout.
#[test]
fn smpquery_along_a_route_and_to_nowhere() {
    if !require_ibsim("umad_cli::sim_serve::smpquery_along_a_route_and_to_nowhere") {
        return;
    }
    let netfile = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&netfile);
    let mut report = String::new();
    for route in ["0", "0,1", "0,1,8", "0,1,8,1", "0,1,3", "0,1,8,7,2"] {
        let args = ["-D", "nodeinfo", route];
        let want = ibsim_c(&sim, "smpquery", &args);
        let t0 = Instant::now();
        let got = ours_c(&sim, &serve, "smpquery", &args);
        let took = t0.elapsed();
        report += &differs(&format!("C smpquery -D nodeinfo {route}"), &want, &got);
        if got.0 != 0 {
            assert!(
                took < Duration::from_secs(1),
                "C smpquery to nowhere ({route}) took {took:?}: the fast failure is missing"
            );
        }
        report += &differs(
            &format!("umad smpquery -D nodeinfo {route}"),
            &ibsim_native(&sim, "smpquery", &args),
            &ours_native(&sim, &serve, "smpquery", &args),
        );
    }
    // The routes do reach somewhere and nowhere.
    assert_eq!(ibsim_c(&sim, "smpquery", &["-D", "nodeinfo", "0,1,8"]).0, 0);
    assert_ne!(ibsim_c(&sim, "smpquery", &["-D", "nodeinfo", "0,1,3"]).0, 0);
    assert!(
        report.is_empty(),
        "umad sim serve differs from ibsim:\n{report}"
    );
}

/// Twenty native clients attached at once (ibsim has ten slots), and C and umad discovery
/// beside them as the 21st and 22nd; then all give their slots back.
#[test]
fn more_clients_at_once_than_ibsims_ten() {
    if !require_ibsim("umad_cli::sim_serve::more_clients_at_once_than_ibsims_ten") {
        return;
    }
    let netfile = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&netfile);
    let want_c = ibsim_c(&sim, "ibnetdiscover", &[]);
    let want_native = ibsim_native(&sim, "ibnetdiscover", &[]);
    let hosts = ["H-host1", "host2 HCA-1", "sw1", "S-sw2", ""];
    let ports: Vec<umad::Port> = (0..20)
        .map(|i| {
            let mut o = IbsimOptions::new(serve.socket.clone());
            let h = hosts[i % hosts.len()];
            if !h.is_empty() {
                o = o.node(h);
            }
            umad::Port::open_ibsim(&o).unwrap_or_else(|e| panic!("client {i} at {h:?}: {e}"))
        })
        .collect();
    for p in &ports {
        let ca = p.ca().expect("the CA over the control channel");
        assert!(ca.port(p.port_num()).is_some());
    }
    assert_eq!(ours_c(&sim, &serve, "ibnetdiscover", &[]), want_c);
    assert_eq!(ours_native(&sim, &serve, "ibnetdiscover", &[]), want_native);
    drop(ports);
    assert_eq!(ours_c(&sim, &serve, "ibnetdiscover", &[]), want_c);
}

/// A second SM client on one node is refused, by the daemon as by ibsim; a plain client
/// there is not, and once the SM has gone another may attach.
#[test]
fn a_second_sm_on_one_node_is_refused_as_ibsim_refuses_it() {
    if !require_ibsim("umad_cli::sim_serve::a_second_sm_on_one_node_is_refused_as_ibsim_refuses_it")
    {
        return;
    }
    let netfile = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&netfile);
    for socket in [sim.socket_name().to_string(), serve.socket.clone()] {
        let sm = |node: &str| {
            let mut o = IbsimOptions::new(socket.clone()).node(node);
            o.issm = true;
            umad::Port::open_ibsim(&o)
        };
        let first = sm("H-host1").expect("the first SM");
        let again = sm("H-host1");
        assert!(
            again.is_err(),
            "{socket}: a second SM on H-host1 was let in"
        );
        let plain = umad::Port::open_ibsim(&IbsimOptions::new(socket.clone()).node("H-host1"))
            .expect("a plain client beside the SM");
        let elsewhere = sm("H-host2").expect("an SM on another node");
        drop(first);
        let after = sm("H-host1").expect("an SM once the first has gone");
        drop((plain, elsewhere, after));
    }
}

/// Clients killed (SIGKILL, no DISCONNECT) in the middle of a discovery: the daemon goes on
/// serving the others, and the same discovery still gives the same answer.
#[test]
fn clients_killed_without_disconnect_do_not_wedge_the_daemon() {
    if !require_ibsim(
        "umad_cli::sim_serve::clients_killed_without_disconnect_do_not_wedge_the_daemon",
    ) {
        return;
    }
    let netfile = fabrics_dir().join("fattree-1008.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let mut serve = Serve::start(&netfile);
    let want = ours_c(&sim, &serve, "ibnetdiscover", &[]);
    assert_eq!(want.0, 0);
    for round in 0..6 {
        let mut victims: Vec<Child> = Vec::new();
        for k in 0..3 {
            let mut cmd = if k == 0 {
                let mut c = native(&sim, &umad());
                c.env("UMAD_IBSIM", &serve.socket).arg("ibnetdiscover");
                c
            } else {
                let mut c = sim.umad2sim_command("ibnetdiscover");
                c.env("IBSIM_SOCKNAME", &serve.socket);
                c
            };
            victims.push(
                cmd.stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("a client starts"),
            );
        }
        std::thread::sleep(Duration::from_millis(10 + 30 * round));
        for mut v in victims {
            let _ = v.kill();
            let _ = v.wait();
        }
        assert!(serve.running(), "the daemon died with its clients");
    }
    assert_eq!(ours_c(&sim, &serve, "ibnetdiscover", &[]), want);
    assert_eq!(
        ours_native(&sim, &serve, "ibnetdiscover", &[]),
        ibsim_native(&sim, "ibnetdiscover", &[])
    );
}

// ---- An SM on the daemon: requests the fabric does not answer go to the SM client ----

/// The ids of the first two CAs of `netfile` (`Hca <ports> "<id>"`).
fn two_cas(netfile: &Path) -> (String, String) {
    let text = std::fs::read_to_string(netfile).unwrap();
    let mut ids = text.lines().filter_map(|l| {
        let l = l.trim_start();
        if !(l.starts_with("Hca") || l.starts_with("Ca")) {
            return None;
        }
        l.split('"').nth(1).map(str::to_string)
    });
    (ids.next().unwrap(), ids.next().unwrap())
}

/// `opensm -o` under umad2sim against ibsim and, on the daemon started unconfigured,
/// against the daemon: afterwards every linked port is Active on both and both show the same
/// LIDs (umad iblinkinfo and ibnetdiscover natively through each, the same bytes).
fn opensm_sweeps(fabric: &str) {
    let netfile = fabrics_dir().join(fabric);
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&netfile);
    let before = ours_native(&sim, &serve, "iblinkinfo", &[]);
    assert!(
        before.1.contains("Initialize") || before.1.contains("Down"),
        "{fabric}: unconfigured at start:\n{}",
        before.1
    );
    sim.run_sm_once().expect("opensm -o on ibsim");
    let socket = serve.socket.clone();
    sim.opensm()
        .configure(move |c| {
            c.env("IBSIM_SOCKNAME", &socket);
            Ok(())
        })
        .run_once()
        .unwrap_or_else(|e| panic!("{fabric}: opensm -o on umad sim serve: {e}"));
    let mut report = String::new();
    for (tool, args) in [("iblinkinfo", &[][..]), ("ibnetdiscover", &[][..])] {
        let ours = ours_native(&sim, &serve, tool, args);
        assert_eq!(ours.0, 0, "{fabric}: umad {tool}:\n{}", ours.1);
        report += &differs(
            &format!("{fabric}: umad {tool} after opensm -o"),
            &ibsim_native(&sim, tool, args),
            &ours,
        );
        if tool == "iblinkinfo" {
            // Linked ports (an unlinked one shows no far end: `[  ] "" ( )`).
            for l in ours
                .1
                .lines()
                .filter(|l| l.contains("==(") && !l.contains("[  ] \"\" ("))
            {
                assert!(
                    l.contains("Active/  LinkUp") || l.contains("Active"),
                    "{fabric}: a linked port not Active: {l}"
                );
                assert!(
                    !l.contains("Initialize") && !l.contains("Armed"),
                    "{fabric}: {l}"
                );
            }
        } else {
            assert!(
                !ours.1.contains("# lid 0 "),
                "{fabric}: a port without a LID:\n{}",
                ours.1
            );
        }
    }
    assert!(
        report.is_empty(),
        "after opensm -o, umad sim serve differs from ibsim:\n{report}"
    );
}

#[test]
fn opensm_once_brings_up_example() {
    if !require_ibsim("opensm_once_brings_up_example") {
        return;
    }
    opensm_sweeps("example.net");
}

#[test]
fn opensm_once_brings_up_fattree_1008() {
    if !require_ibsim("opensm_once_brings_up_fattree_1008") {
        return;
    }
    opensm_sweeps("fattree-1008.net");
}

/// `sminfo`'s activity count moves with time: masked.
fn mask_activity(text: &str) -> String {
    text.split_whitespace()
        .scan(false, |after, w| {
            let out = if *after {
                "N".to_string()
            } else {
                w.to_string()
            };
            *after = w == "count";
            Some(out)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A resident opensm on each (under umad2sim): from the second CA, C `sminfo` and C
/// `saquery` (under umad2sim, which cuts SA answers to one MAD on both) and the native
/// `umad sminfo` print the same through the daemon as through ibsim. The daemon forwards
/// SMInfo and SA requests to the node's SM client and routes its answers back by TID slot.
#[test]
fn a_resident_opensm_answers_sminfo_and_saquery_through_the_daemon() {
    if !require_ibsim(
        "umad_cli::sim_serve::a_resident_opensm_answers_sminfo_and_saquery_through_the_daemon",
    ) {
        return;
    }
    let netfile = fabrics_dir().join("example.net");
    let (_, second) = two_cas(&netfile);
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let serve = Serve::start(&netfile);
    let _on_ibsim = sim.opensm().start_daemon().expect("opensm on ibsim");
    let socket = serve.socket.clone();
    let _on_daemon = sim
        .opensm()
        .configure(move |c| {
            c.env("IBSIM_SOCKNAME", &socket);
            Ok(())
        })
        .start_daemon()
        .expect("opensm on umad sim serve");
    let c_from = |socket: &str, tool: &str, args: &[&str]| {
        let out = run(sim
            .umad2sim_command(tool)
            .env("IBSIM_SOCKNAME", socket)
            .env("SIM_HOST", &second)
            .args(args));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let native_from = |socket: &str, tool: &str| {
        let out = run(native(&sim, &umad())
            .env("UMAD_IBSIM", socket)
            .env("UMAD_IBSIM_NODE", &second)
            .arg(tool));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ibsim, daemon) = (sim.socket_name().to_string(), serve.socket.clone());
    let want = c_from(&ibsim, "sminfo", &[]);
    assert_eq!(want.0, 0, "sminfo on ibsim: {want:?}");
    let got = c_from(&daemon, "sminfo", &[]);
    assert_eq!(
        (got.0, mask_activity(&got.1)),
        (want.0, mask_activity(&want.1))
    );
    assert!(got.1.contains("SMINFO_MASTER"), "{got:?}");
    let want = native_from(&ibsim, "sminfo");
    let got = native_from(&daemon, "sminfo");
    assert_eq!(
        (got.0, mask_activity(&got.1)),
        (want.0, mask_activity(&want.1))
    );
    let want = c_from(&ibsim, "saquery", &[]);
    assert_eq!(want.0, 0, "saquery on ibsim: {want:?}");
    assert!(want.1.contains("NodeRecord dump"), "{want:?}");
    assert_eq!(c_from(&daemon, "saquery", &[]), want);
}
