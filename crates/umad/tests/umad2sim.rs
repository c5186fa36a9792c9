//! The kernel transport and sysfs enumeration through ibsim's LD_PRELOAD shim (umad2sim),
//! compared with the C tools on the same simulated port: our `nodeinfo` example against
//! `smpquery -D nodeinfo`. The example also runs natively (`UMAD_IBSIM`), which must print the
//! same. (`umad ibstat`, the ibstat that was an example here, is compared with the C `ibstat`
//! the same three ways in `crates/umad-cli/tests/ibsim_ibstat.rs`.)
//!
//! The example binaries are built by plain `cargo test` before tests run (`cargo test
//! --all-targets` would build them as test harnesses instead).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use ibsim_harness::{example_fabric, require_ibsim, run_with_timeout, Ibsim};

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: plain `cargo test` builds it (`--all-targets` builds examples as test harnesses instead)",
        path.display()
    );
    path
}

fn run(cmd: &mut Command) -> Output {
    cmd.env_remove("UMAD_IBSIM").env_remove("UMAD_IBSIM_NODE");
    run_with_timeout(cmd, Duration::from_secs(30)).expect("run under the simulator")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The C tool, our example under umad2sim, and our example over the native transport.
fn three_ways(sim: &Ibsim, node: &str, c_tool: &str, ours: &str, args: &[&str]) -> [Output; 3] {
    let c = run(sim
        .umad2sim_command(c_tool)
        .env("SIM_HOST", node)
        .args(args));
    let shim = run(sim
        .umad2sim_command(example(ours))
        .env("SIM_HOST", node)
        .args(args));
    let native = run_with_timeout(
        Command::new(example(ours))
            .args(args)
            .env("UMAD_IBSIM", sim.socket_name())
            .env("UMAD_IBSIM_NODE", node),
        Duration::from_secs(30),
    )
    .expect("run natively");
    [c, shim, native]
}

#[test]
fn umad2sim_nodeinfo_matches_smpquery() {
    if !require_ibsim("umad2sim_nodeinfo_matches_smpquery") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    sim.run_sm_once().expect("opensm -o");
    for path in ["0", "0,1", "0,1,8", "0,1,8,1", "0,1,2"] {
        let c = run(sim
            .umad2sim_command("smpquery")
            .args(["-D", "nodeinfo", path]));
        assert!(
            c.status.success(),
            "smpquery failed: {}",
            String::from_utf8_lossy(&c.stderr)
        );
        let [_, shim, native] = three_ways(&sim, "H-host1", "true", "nodeinfo", &[path]);
        assert_eq!(
            stdout(&shim),
            stdout(&c),
            "nodeinfo {path} under umad2sim; stderr: {}",
            String::from_utf8_lossy(&shim.stderr)
        );
        assert_eq!(
            stdout(&native),
            stdout(&c),
            "nodeinfo {path} natively; stderr: {}",
            String::from_utf8_lossy(&native.stderr)
        );
    }
    // A dead path fails with a message, through both transports.
    let [_, shim, native] = three_ways(&sim, "H-host1", "true", "nodeinfo", &["0,1,3"]);
    for o in [shim, native] {
        assert!(!o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("timed out"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
