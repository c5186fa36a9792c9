//! The README's library examples ("The library", "Many requests in flight"), compiled from
//! the README itself by `build.rs` and run against a private ibsim on `fabrics/example.net`
//! from the default attach point (the first node of the netfile): the first one's directed
//! route must reach a node, the second must find sw1's neighbours.
//!
//! The example opens its port with `Port::open`, which talks to ibsim natively when
//! `UMAD_IBSIM` names the socket. So that the variable is not set in this process (tests run
//! in parallel threads), the example runs in a child: this test binary again, running only
//! the ignored [`readme_library_example_child`].

use std::process::Command;
use std::time::Duration;

use ibsim_harness::{example_fabric, example_net, require_ibsim, run_with_timeout, Ibsim};
use umad::carrier::ibsim::ENV_SOCKET;

include!(concat!(env!("OUT_DIR"), "/readme_library.rs"));

/// Name of the child test (the README code itself).
const CHILD: &str = "readme_library_example_child";

/// Runs the ignored test `child` of this binary with `UMAD_IBSIM` naming `sim`, and returns
/// its stdout and stderr after checking that it ran and passed.
fn run_child(sim: &Ibsim, child: &str) -> (String, String) {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([child, "--exact", "--ignored", "--nocapture"])
        .env(ENV_SOCKET, sim.socket_name());
    let out = run_with_timeout(&mut cmd, Duration::from_secs(60)).expect("running the child");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{child} failed ({})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// Runs the README code; only meaningful with `UMAD_IBSIM` set (see the module docs).
#[test]
#[ignore = "run by readme_library_example_reaches_a_node, with UMAD_IBSIM set"]
fn readme_library_example_child() {
    readme_library_example().expect("the README's library example");
}

/// Runs the README's `umad::rpc` example; only meaningful with `UMAD_IBSIM` set.
#[test]
#[ignore = "run by readme_rpc_example_finds_the_switch_neighbours, with UMAD_IBSIM set"]
fn readme_rpc_example_child() {
    readme_rpc_example().expect("the README's rpc example");
}

#[test]
fn readme_rpc_example_finds_the_switch_neighbours() {
    if !require_ibsim("compat::readme::readme_rpc_example_finds_the_switch_neighbours") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    sim.run_sm_once().expect("opensm -o"); // the example asks LID 1
    let (stdout, _) = run_child(&sim, "readme_rpc_example_child");
    // sw1's ports: 1 → H-host1, 2 → H-host2, 8 → S-sw2; 3..7 lead nowhere.
    for guid in ["0x100000\n", "0x100002\n", "0x200001\n"] {
        assert!(stdout.contains(guid), "no {guid:?} in\n{stdout}");
    }
    assert_eq!(stdout.matches("nothing behind").count(), 5, "{stdout}");
}

/// Runs the README's `ibfabric` example; only meaningful with `UMAD_IBSIM` set.
#[test]
#[ignore = "run by readme_fabric_example_prints_the_topology, with UMAD_IBSIM set"]
fn readme_fabric_example_child() {
    readme_fabric_example().expect("the README's ibfabric example");
}

#[test]
fn readme_fabric_example_prints_the_topology() {
    if !require_ibsim("compat::readme::readme_fabric_example_prints_the_topology") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let (stdout, stderr) = run_child(&sim, "readme_fabric_example_child");
    // Every node of example.net, and nothing missed (H-host2's dead port is no miss).
    for desc in [
        "\"sw1\"",
        "\"sw2\"",
        "host1 HCA-1",
        "host2 HCA-1",
        "host3 HCA-1",
        "host4 HCA-1",
    ] {
        assert!(stdout.contains(desc), "no {desc} in\n{stdout}");
    }
    assert!(!stderr.contains("not reached"), "{stderr}");
}

#[test]
fn readme_library_example_reaches_a_node() {
    if !require_ibsim("compat::readme::readme_library_example_reaches_a_node") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let (stdout, stderr) = run_child(&sim, CHILD);
    assert!(
        !stderr.contains("no node at the end of"),
        "the README's directed route leads nowhere on fabrics/example.net from {}:\n{stderr}",
        example_net::ATTACH_NODE
    );
    // The README's route is 0,1,8,1: H-host1 → S-sw1 → S-sw2 → H-host3.
    let want = format!("Channel Adapter {:#018x}", example_net::HOST3_NODE_GUID);
    assert!(
        stdout.contains(&want),
        "expected `{want}` from the README example\n--- stdout ---\n{stdout}"
    );
}
