//! Discovery on the in-process simulator under seeded faults (`UMAD_SIM_FAULTS`), nothing
//! installed: under 20 % loss `umad ibnetdiscover` finds the whole fabric or names what it
//! missed (`-v`), and the same seed twice gives the same missed list and the same topology;
//! another seed another list. A dead switch: every node behind it missing, and named.

mod common;

use std::process::Command;

use common::{mask_date, repo_root, run, umad};

/// `umad ibnetdiscover -v -t 20 <args>` over `UMAD_SIM=<netfile>` with `faults`: exit code,
/// stdout (date masked), the missed lines of stderr.
fn discover(netfile: &str, faults: &str, args: &[&str]) -> (i32, String, Vec<String>) {
    let mut cmd = Command::new(umad());
    cmd.env("UMAD_SIM", repo_root().join("fabrics").join(netfile))
        .env("UMAD_SIM_FAULTS", faults)
        .env_remove("UMAD_SIM_NODE")
        .env_remove("UMAD_SIM_UNCONFIGURED")
        .env_remove("UMAD_IBSIM")
        .env_remove("LD_PRELOAD")
        .args(["ibnetdiscover", "-v", "-t", "20"])
        .args(args);
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let missed = stderr
        .lines()
        .filter(|l| l.starts_with("  DR path "))
        .map(str::to_owned)
        .collect();
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
        missed,
    )
}

/// The node GUIDs of an ibnetdiscover topology (`switchguid=`/`caguid=` lines).
fn guids(topology: &str) -> Vec<String> {
    let mut g: Vec<String> = topology
        .lines()
        .filter_map(|l| l.strip_prefix("switchguid=").or(l.strip_prefix("caguid=")))
        .map(|g| g.split('(').next().unwrap_or(g).to_string())
        .collect();
    g.sort();
    g
}

#[test]
fn discovery_under_20_percent_loss_finds_all_or_names_the_misses_and_replays() {
    let (code, clean, none) = discover("fattree-1008.net", "", &[]);
    assert_eq!(code, 0);
    assert!(none.is_empty());
    let all = guids(&clean);
    assert_eq!(all.len(), 1052);
    let a = discover("fattree-1008.net", "seed=1,drop=20%", &[]);
    let b = discover("fattree-1008.net", "seed=1,drop=20%", &[]);
    assert_eq!(a, b, "the same seed, the same run");
    let (code, topo, missed) = a;
    assert_eq!(code, 0, "lost SMPs are not an error (C's exit code)");
    let found = guids(&topo);
    assert!(found.iter().all(|g| all.contains(g)));
    if found.len() < all.len() {
        assert!(
            !missed.is_empty(),
            "{} nodes missing and nothing named",
            all.len() - found.len()
        );
    }
    // Lost packets were retried: most of the fabric is there.
    assert!(
        found.len() * 10 > all.len() * 9,
        "{} of {}",
        found.len(),
        all.len()
    );
    eprintln!(
        "seed 1: {} of {} nodes, {} SMPs named as missed",
        found.len(),
        all.len(),
        missed.len()
    );
    let (_, _, other) = discover("fattree-1008.net", "seed=2,drop=20%", &[]);
    assert_ne!(missed, other, "another seed, other losses");
}

#[test]
fn a_dead_switch_hides_what_is_behind_it_and_is_named() {
    // example.net: H-host1 - S-sw1 - S-sw2 - H-host3 (and the other hosts).
    let (_, clean, _) = discover("example.net", "", &[]);
    let (code, topo, missed) = discover("example.net", "dead=S-sw2", &[]);
    assert_eq!(code, 0);
    let (all, found) = (guids(&clean), guids(&topo));
    assert!(found.len() < all.len(), "{found:?}");
    assert!(!found.contains(&"0x200001".to_string()), "S-sw2 answered");
    assert!(
        missed.iter().any(|m| m.contains("NodeInfo")),
        "the NodeInfo of the dead switch is named: {missed:?}"
    );
    // Alive again (a later spec item wins): the whole fabric.
    let (_, again, _) = discover("example.net", "dead=S-sw2,alive=S-sw2", &[]);
    assert_eq!(again, clean);
}

#[test]
fn a_bad_fault_spec_is_refused_with_the_item() {
    let mut cmd = Command::new(umad());
    cmd.env("UMAD_SIM", repo_root().join("fabrics/example.net"))
        .env("UMAD_SIM_FAULTS", "seed=1,drop=often")
        .env_remove("UMAD_IBSIM")
        .args(["ibnetdiscover"]);
    let out = run(&mut cmd);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("UMAD_SIM_FAULTS") && stderr.contains("drop=often"),
        "{stderr}"
    );
    // No topology (C's iberror line goes to stdout, as C's does).
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Topology"));
}
