//! A `umad` tool killed by SIGTERM, SIGINT or SIGHUP while attached to ibsim gives its client slot
//! back (ibsim has ten and frees one only on DISCONNECT: before, every killed tool leaked
//! one until ibsim restarted) and still dies of the signal, as C's tools do.
//!
//! The tool waits for as long as the test likes: `umad sminfo -t 60000` asks the SM's port
//! for SMInfo, which ibsim forwards to the port's SM client instead of answering, and that
//! client is the test's own, silent one. Its receiving the query is the proof that the tool
//! is attached and waiting.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ibsim_harness::{example_fabric, example_net as net, require_ibsim, Ibsim};
use umad::carrier::ibsim::{IbsimCarrier, IbsimOptions};
use umad::layer::Carrier;

/// ibsim's client slots (`IBSIM_MAX_CLIENTS`).
const SLOTS: usize = 10;

/// Waits (≤ `limit`) for `child` to end.
fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the tool") {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the tool did not end within {limit:?} of its signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Attaches as many clients as ibsim lets (at most `SLOTS` + 1 tries): how many slots were
/// free. They are disconnected again on return.
fn free_slots(sim: &Ibsim) -> usize {
    let mut held = Vec::new();
    for _ in 0..=SLOTS {
        match IbsimCarrier::connect(&IbsimOptions::new(sim.socket_name())) {
            Ok(c) => held.push(c),
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains("refused to attach"), "{text}");
                break;
            }
        }
    }
    held.len()
}

/// Whether this process ignores `signal` (then so does the tool it starts, on purpose: a
/// shell's background job ignores SIGINT, and an ignored signal stays ignored).
fn ignored(signal: i32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let mask = s.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

#[test]
fn ibsim_a_tool_killed_by_a_signal_frees_its_slot() {
    if !require_ibsim("umad_cli::ibsim_signals::ibsim_a_tool_killed_by_a_signal_frees_its_slot") {
        return;
    }
    let sim = Ibsim::start(example_fabric()).expect("start ibsim");
    sim.run_sm_once().expect("opensm -o: LIDs and the SM's LID");
    // The silent SM, where opensm was: it gets the SMInfo queries and never answers.
    let mut opts = IbsimOptions::new(sim.socket_name()).node(net::ATTACH_NODE);
    opts.issm = true;
    let sm = IbsimCarrier::connect(&opts).expect("attach the silent SM");
    assert_eq!(free_slots(&sim), SLOTS - 1, "the silent SM holds one slot");

    for (signal, name) in [
        (libc_sig::TERM, "TERM"),
        (libc_sig::INT, "INT"),
        (libc_sig::HUP, "HUP"),
    ] {
        if ignored(signal) {
            eprintln!("SIG{name} not tried: this test process ignores it, and so would the tool");
            continue;
        }
        let t0 = Instant::now();
        let mut tool = common::native(&sim, &common::umad())
            .env("UMAD_IBSIM_NODE", net::HCAS[2])
            .args(["sminfo", "-t", "60000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start umad sminfo");
        // Attached and waiting once its query is at the silent SM.
        loop {
            if sm.try_recv().expect("the silent SM's socket").is_some() {
                break;
            }
            if let Some(status) = tool.try_wait().expect("tool") {
                let out = tool.wait_with_output().expect("output");
                panic!(
                    "umad sminfo ended ({status}) before its SMInfo reached the SM:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no SMInfo query reached the silent SM in 30 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(free_slots(&sim), SLOTS - 2, "the waiting tool holds a slot");
        let killed = Instant::now();
        let sent = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(tool.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{name}: {sent}");
        let status = wait(&mut tool, Duration::from_secs(10));
        let took = killed.elapsed();
        assert_eq!(
            status.signal(),
            Some(signal),
            "SIG{name}: the tool must die of the signal, as C's tools do: {status}"
        );
        assert!(took < Duration::from_secs(2), "SIG{name}: {took:?} to die");
        // Its slot is free again: all but the silent SM's.
        assert_eq!(
            free_slots(&sim),
            SLOTS - 1,
            "SIG{name} left the tool's ibsim slot taken"
        );
        eprintln!("SIG{name}: the tool died {took:?} after the signal, its slot freed");
    }
    drop(sm);
    // Ten new clients attach at once, an eleventh is refused: nothing leaked.
    assert_eq!(free_slots(&sim), SLOTS);
}

/// The signal numbers, without a libc dependency in the tests.
mod libc_sig {
    pub const HUP: i32 = 1;
    pub const INT: i32 = 2;
    pub const TERM: i32 = 15;
}
