//! End-to-end tests of the harness against the real ibsim (skipped loudly when not installed,
//! fatal under `CI=true`).

use std::io;
use std::path::Path;
use std::time::Duration;

use ibsim_harness::{
    example_fabric, example_net, find_tool, ibsim_required, require_ibsim, run_with_timeout, Ibsim,
    TempDir,
};

const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The C diagnostic tool `name`, or `None` (with a loud skip line) when infiniband-diags is
/// missing outside CI.
fn c_tool(name: &str, test: &str) -> Option<std::path::PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        assert!(
            !ibsim_required(),
            "{name} is required under CI: apt-get install -y infiniband-diags"
        );
        eprintln!("SKIPPED {test}: {name} not installed (apt-get install -y infiniband-diags)");
    }
    found
}

/// Runs a C tool under umad2sim against `sim` and returns its stdout; panics on failure.
fn run_tool(sim: &Ibsim, tool: &Path, args: &[&str]) -> String {
    run_tool_env(sim, tool, args, &[])
}

fn run_tool_env(sim: &Ibsim, tool: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = sim.umad2sim_command(tool);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT).expect("run C tool");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\n{stdout}\n{}\n--- ibsim.log ---\n{}",
        tool.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr),
        sim.log()
    );
    stdout
}

/// `0,1,8,1`-style DR path string for the C tools.
fn dr(path: &[u8]) -> String {
    std::iter::once("0".to_owned())
        .chain(path.iter().map(u8::to_string))
        .collect::<Vec<_>>()
        .join(",")
}

fn proc_net_unix_has(name: &str) -> bool {
    std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .contains(&format!("@{name}:ctl@"))
}

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Number of `Ca`/`Switch` node headers in ibnetdiscover output.
fn count_nodes(topology: &str) -> (usize, usize) {
    let cas = topology.lines().filter(|l| l.starts_with("Ca\t")).count();
    let sws = topology
        .lines()
        .filter(|l| l.starts_with("Switch\t"))
        .count();
    (cas, sws)
}

#[test]
fn starts_ready_and_tears_down() {
    if !require_ibsim("ibsim_harness::starts_ready_and_tears_down") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    let (name, workdir, pid) = (
        sim.socket_name().to_owned(),
        sim.workdir().to_owned(),
        sim.pid(),
    );
    assert!(name.starts_with(&format!("umadrs-{}-", std::process::id())));
    assert!(proc_net_unix_has(&name));
    assert!(sim.is_running());
    assert!(workdir.join("ibsim.log").is_file());
    assert_eq!(sim.netfile(), example_fabric().canonicalize().unwrap());
    let log = sim.log();
    assert!(log.contains("parsed"), "{log}");
    // The example fabric must load without a single warning.
    assert!(
        !log.contains("ibwarn"),
        "warnings while loading example.net:\n{log}"
    );
    drop(sim);
    assert!(
        !workdir.exists(),
        "workdir {} left behind",
        workdir.display()
    );
    assert!(!process_exists(pid), "ibsim pid {pid} still there");
    assert!(!proc_net_unix_has(&name));
}

#[test]
fn builder_passes_extra_args() {
    if !require_ibsim("ibsim_harness::builder_passes_extra_args") {
        return;
    }
    let sim = Ibsim::builder(example_fabric())
        .arg("-N")
        .arg("4096")
        .args(["-S", "300"])
        .start()
        .expect("start ibsim");
    let log = sim.log();
    assert!(log.contains("MaxNetNodes    = 4096"), "{log}");
    assert!(log.contains("MaxNetSwitches = 300"), "{log}");
}

#[test]
fn bad_netfile_error_contains_log() {
    if !require_ibsim("ibsim_harness::bad_netfile_error_contains_log") {
        return;
    }
    let dir = TempDir::new("umadrs-badnet").unwrap();
    let net = dir.join("one-sided.net");
    // The switch does not list the HCA's link: ibsim refuses to start.
    std::fs::write(
        &net,
        "Hca 1 \"H-a\"\n[1] \"S-x\"[1] # lid 0 4xQDR\n\nSwitch 8 \"S-x\"\n[2] \"H-a\"[1] # lid 0 4xQDR\n",
    )
    .unwrap();
    let err = Ibsim::start(&net).expect_err("one-sided link must be rejected");
    drop(dir);
    let msg = err.to_string();
    assert!(msg.contains("ibsim.log"), "{msg}");
    assert!(msg.contains("is not connected"), "{msg}");

    let err = Ibsim::start("/nonexistent/umadrs.net").expect_err("missing netfile");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[test]
fn sm_once_then_c_ibstat_is_active() {
    const TEST: &str = "ibsim_harness::sm_once_then_c_ibstat_is_active";
    if !require_ibsim(TEST) {
        return;
    }
    let Some(ibstat) = c_tool("ibstat", TEST) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    let sweep = sim.opensm().run_once().expect("opensm -o");
    assert!(sweep.scratch.starts_with(sim.workdir()), "{sweep:?}");
    assert!(sweep.log().contains("SUBNET UP"), "{}", sweep.log());
    let out = run_tool(&sim, &ibstat, &[]);
    assert!(out.contains("CA 'ibsim0'"), "{out}");
    assert!(out.contains("State: Active"), "{out}");
    assert!(out.contains("Physical state: LinkUp"), "{out}");
    let guid = format!("Node GUID: 0x{:016x}", example_net::HOST1_NODE_GUID);
    assert!(out.contains(&guid), "attach point is not H-host1:\n{out}");
    // umad2sim's fake sysfs went into the client's scratch dir and was removed at exit.
    let leftovers: Vec<_> = walk(sim.workdir())
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("sys-"))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A second sweep (e.g. after a fault) works on the same instance.
    sim.run_sm_once().expect("second opensm -o");
}

#[test]
fn example_fabric_matches_documented_layout() {
    const TEST: &str = "ibsim_harness::example_fabric_matches_documented_layout";
    if !require_ibsim(TEST) {
        return;
    }
    let (Some(ibnetdiscover), Some(smpquery)) =
        (c_tool("ibnetdiscover", TEST), c_tool("smpquery", TEST))
    else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    sim.run_sm_once().expect("opensm -o");

    let topo = run_tool(&sim, &ibnetdiscover, &[]);
    assert_eq!(count_nodes(&topo), (4, 2), "{topo}");
    for desc in [
        "host1 HCA-1",
        "host2 HCA-1",
        "host3 HCA-1",
        "host4 HCA-1",
        "sw1",
        "sw2",
    ] {
        assert!(
            topo.contains(&format!("# \"{desc}\"")),
            "{desc} missing:\n{topo}"
        );
    }
    // Every listed link is up (ibnetdiscover lists only active links) and has 4xQDR.
    let links = topo.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(links, 4 + 2 * 3, "{topo}");
    assert_eq!(topo.matches("4xQDR").count(), links, "{topo}");

    let node = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodeinfo", &dr(example_net::DR_HOST3)],
    );
    assert!(
        node.contains(&format!(
            "Guid:............................0x{:016x}",
            example_net::HOST3_NODE_GUID
        )),
        "{node}"
    );
    assert!(node.contains("Channel Adapter"), "{node}");
    let desc = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodedesc", &dr(example_net::DR_SW2)],
    );
    assert!(desc.trim_end().ends_with("sw2"), "{desc}");
    let desc = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodedesc", &dr(example_net::DR_SW1)],
    );
    assert!(desc.trim_end().ends_with("sw1"), "{desc}");
    let sw = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodeinfo", &dr(example_net::DR_SW2)],
    );
    assert!(
        sw.contains(&format!("0x{:016x}", example_net::SW2_NODE_GUID)),
        "{sw}"
    );
    let desc = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodedesc", &dr(example_net::DR_HOST4)],
    );
    assert!(desc.trim_end().ends_with("host4 HCA-1"), "{desc}");
    let mut dead = sim.umad2sim_command(&smpquery);
    dead.args(["-D", "nodedesc", &dr(example_net::DR_DEAD_END)]);
    let out = run_with_timeout(&mut dead, TOOL_TIMEOUT).unwrap();
    assert!(
        !out.status.success(),
        "DR into an unconnected switch port answered"
    );
    let host2 = run_tool(
        &sim,
        &smpquery,
        &["-D", "nodeinfo", &dr(example_net::DR_HOST2)],
    );
    assert!(
        host2.contains("NumPorts:........................2"),
        "{host2}"
    );

    // The dead port: H-host2 port 2 is Down/Polling, port 1 is Active.
    let dead_port = example_net::DEAD_PORT.to_string();
    let p2 = run_tool(
        &sim,
        &smpquery,
        &["-D", "portinfo", &dr(example_net::DR_HOST2), &dead_port],
    );
    assert!(p2.contains("LinkState:.......................Down"), "{p2}");
    assert!(
        p2.contains("PhysLinkState:...................Polling"),
        "{p2}"
    );
    let p1 = run_tool(
        &sim,
        &smpquery,
        &["-D", "portinfo", &dr(example_net::DR_HOST2), "1"],
    );
    assert!(
        p1.contains("LinkState:.......................Active"),
        "{p1}"
    );
}

#[test]
fn console_unlink_relink_and_errors() {
    const TEST: &str = "ibsim_harness::console_unlink_relink_and_errors";
    if !require_ibsim(TEST) {
        return;
    }
    let Some(ibnetdiscover) = c_tool("ibnetdiscover", TEST) else {
        return;
    };
    let sim = Ibsim::builder(example_fabric())
        .console(true)
        .start()
        .expect("start ibsim with console");
    sim.run_sm_once().expect("opensm -o");
    assert_eq!(count_nodes(&run_tool(&sim, &ibnetdiscover, &[])), (4, 2));

    sim.console(r#"Unlink "H-host3"[1]"#).expect("Unlink");
    assert_eq!(count_nodes(&run_tool(&sim, &ibnetdiscover, &[])), (3, 2));
    let dump = sim.console_output(r#"Dump "H-host3""#).expect("Dump");
    assert!(dump.contains("Down/Polling"), "{dump}");

    sim.console(r#"ReLink "H-host3"[1]"#).expect("ReLink");
    sim.run_sm_once().expect("opensm -o after ReLink");
    assert_eq!(count_nodes(&run_tool(&sim, &ibnetdiscover, &[])), (4, 2));

    // Rejected commands are errors carrying ibsim's message.
    let err = sim.console(r#"Unlink "H-nosuch"[1]"#).unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    let err = sim.console("Bogus").unwrap_err();
    assert!(err.to_string().contains("unknown"), "{err}");
    let err = sim.console(&format!(
        r#"Unlink "{}"[{}]"#,
        example_net::DEAD_PORT_NODE,
        example_net::DEAD_PORT
    ));
    assert!(err.unwrap_err().to_string().contains("is not linked"));
    assert_eq!(
        sim.console("a\nb").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    // Many barriers in a row (barrier-1 vs barrier-10 must not be confused).
    for _ in 0..12 {
        sim.console("# just a comment").expect("comment");
    }
    assert!(sim.is_running());
}

#[test]
fn console_requires_console_mode() {
    if !require_ibsim("ibsim_harness::console_requires_console_mode") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    let err = sim.console(r#"Unlink "H-host3"[1]"#).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Unsupported);
}

#[test]
fn two_instances_side_by_side() {
    const TEST: &str = "ibsim_harness::two_instances_side_by_side";
    if !require_ibsim(TEST) {
        return;
    }
    let Some(ibstat) = c_tool("ibstat", TEST) else {
        return;
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Ibsim::builder(example_fabric()).console(true).start());
        let b = s.spawn(|| Ibsim::start(example_fabric()));
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    assert_ne!(a.socket_name(), b.socket_name());
    assert_ne!(a.workdir(), b.workdir());
    std::thread::scope(|s| {
        s.spawn(|| a.run_sm_once().unwrap());
        s.spawn(|| b.run_sm_once().unwrap());
    });
    // Fault injected into `a` only.
    a.console(r#"Unlink "H-host1""#).unwrap();
    let out_a = run_tool(&a, &ibstat, &[]);
    let out_b = run_tool(&b, &ibstat, &[]);
    assert!(out_a.contains("State: Down"), "{out_a}");
    assert!(out_b.contains("State: Active"), "{out_b}");

    let (a_dir, a_pid) = (a.workdir().to_owned(), a.pid());
    drop(a);
    assert!(!a_dir.exists());
    assert!(!process_exists(a_pid));
    assert!(b.is_running());
    assert!(run_tool(&b, &ibstat, &[]).contains("State: Active"));
}

#[test]
fn sm_daemon_lifecycle() {
    const TEST: &str = "ibsim_harness::sm_daemon_lifecycle";
    if !require_ibsim(TEST) {
        return;
    }
    let Some(sminfo) = c_tool("sminfo", TEST) else {
        return;
    };
    let mut sim = Ibsim::start(example_fabric()).expect("start ibsim");
    assert!(sim.sm_daemon_pid().is_none());
    // The SM sits on H-host4, so tests on the default attach point talk to a remote SM.
    sim.start_sm_daemon_on("H-host4").expect("opensm daemon");
    let sm_pid = sim.sm_daemon_pid().expect("daemon pid");
    assert!(process_exists(sm_pid));
    let err = sim.start_sm_daemon().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    // SMInfo is forwarded by ibsim to the resident SM, which answers.
    let out = run_tool(&sim, &sminfo, &[]);
    assert!(out.contains("SMINFO_MASTER"), "{out}");

    sim.stop_sm_daemon().unwrap();
    assert!(!process_exists(sm_pid));
    sim.start_sm_daemon()
        .expect("restart daemon at the default port");
    let (sm_pid, ibsim_pid, dir) = (
        sim.sm_daemon_pid().unwrap(),
        sim.pid(),
        sim.workdir().to_owned(),
    );
    drop(sim);
    assert!(!process_exists(sm_pid), "opensm survived drop");
    assert!(!process_exists(ibsim_pid), "ibsim survived drop");
    assert!(!dir.exists());
}

/// A daemon of the caller's own ([`Ibsim::opensm`]): configure steps run in order on the
/// command (an error stops the start), it logs into its own scratch directory, exits by
/// itself on SIGTERM, and is stopped on drop.
#[test]
fn own_sm_daemon_and_configure_steps() {
    const TEST: &str = "ibsim_harness::own_sm_daemon_and_configure_steps";
    if !require_ibsim(TEST) {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    let err = sim
        .opensm()
        .configure(|_| Err(io::Error::other("refused by the test")))
        .start_daemon()
        .unwrap_err();
    assert!(err.to_string().contains("refused by the test"), "{err}");

    let seen = std::cell::Cell::new(0);
    let mut sm = sim
        .opensm()
        .host("H-host4")
        .configure(|cmd| {
            assert!(cmd.get_current_dir().is_some_and(Path::is_dir));
            seen.set(seen.get() * 10 + 1);
            Ok(())
        })
        .configure(|_| {
            seen.set(seen.get() * 10 + 2);
            Ok(())
        })
        .start_daemon()
        .expect("own opensm daemon");
    assert_eq!(seen.get(), 12, "configure steps in call order");
    assert!(sm.scratch().starts_with(sim.workdir()));
    assert!(sm.log().contains("SUBNET UP"));
    let pid = sm.pid().expect("running");
    let status = sm.stop().expect("stop").expect("was running");
    assert!(status.code().is_some(), "killed, not exited: {status:?}");
    assert!(!process_exists(pid));
    assert_eq!(sm.stop().unwrap(), None);
    assert_eq!(sm.pid(), None);

    let sm = sim.opensm().start_daemon().expect("second own daemon");
    let pid = sm.pid().expect("running");
    drop(sm);
    assert!(!process_exists(pid), "opensm survived drop");
}

#[test]
fn sm_once_on_other_host() {
    const TEST: &str = "ibsim_harness::sm_once_on_other_host";
    if !require_ibsim(TEST) {
        return;
    }
    let Some(ibstat) = c_tool("ibstat", TEST) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    sim.run_sm_once_on("S-sw2").expect("opensm -o on S-sw2");
    // ibstat attached elsewhere via SIM_HOST sees its own port Active.
    let out = run_tool_env(&sim, &ibstat, &[], &[("SIM_HOST", "H-host3")]);
    assert!(out.contains("State: Active"), "{out}");
    assert!(
        out.contains(&format!(
            "Node GUID: 0x{:016x}",
            example_net::HOST3_NODE_GUID
        )),
        "{out}"
    );
    // An unknown SIM_HOST makes opensm fail, and the error says why.
    let err = sim.run_sm_once_on("H-nosuch").unwrap_err();
    assert!(err.to_string().contains("opensm"), "{err}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
    }
    out
}
