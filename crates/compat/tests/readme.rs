//! The README's library example ("The library"), compiled from the README itself by
//! `build.rs` and run against a private ibsim on `fabrics/example.net`: its directed route
//! must reach a node, from the default attach point (the first node of the netfile).
//!
//! The example opens its port with `Port::open`, which talks to ibsim natively when
//! `UMAD_IBSIM` names the socket. So that the variable is not set in this process (tests run
//! in parallel threads), the example runs in a child: this test binary again, running only
//! the ignored [`readme_library_example_child`].

use std::process::Command;
use std::time::Duration;

use ibsim_harness::{example_fabric, example_net, require_ibsim, run_with_timeout, Ibsim};
use umad::transport::ibsim::ENV_SOCKET;

include!(concat!(env!("OUT_DIR"), "/readme_library.rs"));

/// Name of the child test (the README code itself).
const CHILD: &str = "readme_library_example_child";

/// Runs the README code; only meaningful with `UMAD_IBSIM` set (see the module docs).
#[test]
#[ignore = "run by readme_library_example_reaches_a_node, with UMAD_IBSIM set"]
fn readme_library_example_child() {
    readme_library_example().expect("the README's library example");
}

#[test]
fn readme_library_example_reaches_a_node() {
    if !require_ibsim("compat::readme::readme_library_example_reaches_a_node") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([CHILD, "--exact", "--ignored", "--nocapture"])
        .env(ENV_SOCKET, sim.socket_name());
    let out = run_with_timeout(&mut cmd, Duration::from_secs(60)).expect("running the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed ({})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
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
