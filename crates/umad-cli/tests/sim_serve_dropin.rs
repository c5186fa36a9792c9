//! opensm on the drop-in (`libibumad.so.3` of this workspace, `UMAD_IBSIM`, no preload)
//! against `umad sim serve`: `opensm -o` brings the daemon's unconfigured fabrics up as C
//! opensm under umad2sim brings up ibsim's (the same `umad iblinkinfo` and `ibnetdiscover`
//! afterwards), and a resident opensm on the drop-in serves its SA through the daemon (the
//! same `umad saquery` NodeRecords as from the same opensm on ibsim: RMPP through the
//! daemon).

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{mask_date, native, run, umad};
use compat::{require_drop_in, Library};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};
use serve::Serve;

/// opensm's command turned from a umad2sim client of `sim` into a native client of the
/// daemon on the drop-in in `dir`. That it ran on the drop-in needs no other check: without
/// the preload only the drop-in knows `UMAD_IBSIM` (the system library would find no umad
/// device here, and opensm would fail).
fn on_drop_in(cmd: &mut Command, dir: &Path, socket: &str) {
    cmd.env_remove("LD_PRELOAD")
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .env("UMAD_IBSIM", socket);
    Library::DropIn(dir.to_path_buf()).apply(cmd);
}

/// `umad <tool> <args>` natively through `socket` (ibsim's or the daemon's), at `node` if
/// given: exit code and stdout (date masked).
fn ours(sim: &Ibsim, socket: &str, node: Option<&str>, tool: &str, args: &[&str]) -> (i32, String) {
    let mut cmd = native(sim, &umad());
    cmd.env("UMAD_IBSIM", socket).arg(tool).args(args);
    if let Some(n) = node {
        cmd.env("UMAD_IBSIM_NODE", n);
    }
    let out = run(&mut cmd);
    (
        out.status.code().unwrap_or(-1),
        mask_date(&String::from_utf8_lossy(&out.stdout)),
    )
}

fn gates(test: &str) -> Option<PathBuf> {
    if !require_ibsim(test) {
        return None;
    }
    require_drop_in(test)
}

fn sweep_on_the_drop_in(fabric: &str, dir: &Path) {
    let netfile = fabrics_dir().join(fabric);
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let daemon = Serve::start(&netfile);
    sim.run_sm_once().expect("C opensm -o on ibsim");
    let socket = daemon.socket().to_string();
    let dir2 = dir.to_path_buf();
    let swept = sim
        .opensm()
        .configure(move |c| {
            on_drop_in(c, &dir2, &socket);
            Ok(())
        })
        .run_once()
        .unwrap_or_else(|e| panic!("{fabric}: opensm -o on the drop-in, on the daemon: {e}"));
    assert!(swept.log().contains("SUBNET UP"), "{fabric}: no SUBNET UP");
    for tool in ["iblinkinfo", "ibnetdiscover"] {
        let want = ours(&sim, sim.socket_name(), None, tool, &[]);
        let got = ours(&sim, daemon.socket(), None, tool, &[]);
        assert_eq!(want.0, 0, "{fabric}: {tool} on ibsim");
        assert!(
            got == want,
            "{fabric}: umad {tool} after opensm -o: on the daemon (opensm on the drop-in) \
             differs from ibsim (C opensm under umad2sim)"
        );
    }
}

#[test]
fn opensm_on_the_drop_in_brings_up_the_daemons_example_fabric() {
    let Some(dir) = gates("opensm_on_the_drop_in_brings_up_the_daemons_example_fabric") else {
        return;
    };
    sweep_on_the_drop_in("example.net", &dir);
}

#[test]
fn opensm_on_the_drop_in_brings_up_the_daemons_fattree_1008() {
    let Some(dir) = gates("opensm_on_the_drop_in_brings_up_the_daemons_fattree_1008") else {
        return;
    };
    sweep_on_the_drop_in("fattree-1008.net", &dir);
}

#[test]
fn a_resident_opensm_on_the_drop_in_serves_saquery_through_the_daemon() {
    let Some(dir) = gates("a_resident_opensm_on_the_drop_in_serves_saquery_through_the_daemon")
    else {
        return;
    };
    let netfile = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&netfile).expect("ibsim starts");
    let daemon = Serve::start(&netfile);
    // opensm on the drop-in on both: opensm under umad2sim answers a multi-MAD SA table
    // with broken RMPP (one GetTableResp with only the ACTIVE flag), which no native
    // client can take whole.
    let resident = |socket: String| {
        let dir = dir.clone();
        sim.opensm()
            .configure(move |c| {
                on_drop_in(c, &dir, &socket);
                Ok(())
            })
            .start_daemon()
    };
    let _on_ibsim = resident(sim.socket_name().to_string()).expect("opensm on ibsim");
    let _on_daemon = resident(daemon.socket().to_string()).expect("opensm on the daemon");
    // From another CA than the SM's: NodeRecords (a multi-MAD RMPP table) and sminfo.
    for (tool, args) in [("saquery", &[][..]), ("saquery", &["-N"][..])] {
        let want = ours(&sim, sim.socket_name(), Some("H-host3"), tool, args);
        let got = ours(&sim, daemon.socket(), Some("H-host3"), tool, args);
        assert_eq!(want.0, 0, "{tool} {args:?} on ibsim: {}", want.1);
        assert_eq!(got, want, "umad {tool} {args:?} through the daemon");
    }
    let (code, text) = ours(&sim, daemon.socket(), Some("H-host3"), "sminfo", &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("SMINFO_MASTER"), "{text}");
}

/// A 10,400-node fat tree (`fattree:159,65,64,160`) on the daemon, brought up by `opensm -o`
/// on the drop-in and, on a fresh daemon, under umad2sim: every linked port Active with a
/// LID afterwards (`umad iblinkinfo`), the same on both.
#[test]
fn opensm_brings_up_10400_nodes_on_the_daemon() {
    let Some(dir) = gates("opensm_brings_up_10400_nodes_on_the_daemon") else {
        return;
    };
    // ibsim only for its scratch directories and opensm runner (its own fabric is small).
    let sim = Ibsim::start(fabrics_dir().join("example.net")).expect("ibsim starts");
    let spec = ibnetsim::generate::Spec::parse("fattree:159,65,64,160").unwrap();
    let netfile = sim
        .new_scratch_dir("fattree-10400")
        .unwrap()
        .join("fattree.net");
    std::fs::write(&netfile, spec.netfile().unwrap()).unwrap();
    let mut seen = Vec::new();
    for drop_in in [true, false] {
        let daemon = Serve::start(&netfile);
        let socket = daemon.socket().to_string();
        let dir = dir.clone();
        let started = Instant::now();
        sim.opensm()
            .configure(move |c| {
                if drop_in {
                    on_drop_in(c, &dir, &socket);
                } else {
                    c.env("IBSIM_SOCKNAME", &socket);
                }
                Ok(())
            })
            .run_once()
            .unwrap_or_else(|e| panic!("opensm -o (drop-in: {drop_in}) on 10,400 nodes: {e}"));
        eprintln!(
            "opensm -o {} on the daemon, 10,400 nodes: {:?}",
            if drop_in {
                "on the drop-in"
            } else {
                "under umad2sim"
            },
            started.elapsed()
        );
        let (code, text) = ours(&sim, daemon.socket(), None, "iblinkinfo", &[]);
        assert_eq!(code, 0);
        let linked: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("==(") && !l.contains("[  ] \"\" ("))
            .collect();
        // Switch ports: 159 leaves × (64 hosts + 65 spines) + 65 spines × 159 leaves; and
        // the 159 × 64 HCA ports.
        assert_eq!(linked.len(), 159 * (64 + 65) + 65 * 159 + 159 * 64);
        assert!(
            linked.iter().all(|l| l.contains("Active")),
            "a linked port not Active"
        );
        seen.push(text);
    }
    assert!(
        seen[0] == seen[1],
        "opensm on the drop-in and under umad2sim differ"
    );
}
