//! `umad ibstat` against C `ibstat` on live ibsim fabrics (example.net, fattree-1008.net,
//! mixed.net, after one opensm sweep), attached at HCAs (one- and multi-port, with dead
//! ports) and switches: `-l`, `-s`, `-p`, a CA name, a CA and port, and the errors (no such
//! CA or port, options ibstat doesn't take). Ours runs twice: natively (`UMAD_IBSIM`, the
//! simulated port) and under umad2sim (the kernel transport reading the shim's fake sysfs);
//! both print C's stdout byte for byte, with C's exit code. `--json` validates against
//! docs/json/ibstat-v1.schema.json.

mod common;

use std::process::Command;

use common::smp::{strings, through_link};
use common::{assert_valid, native, repo_root, run, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

const CASES: &[&[&str]] = &[
    &[],
    &["-l"],
    &["-s"],
    &["-p"],
    &["ibsim0"],
    &["ibsim0", "1"],
    &["-s", "ibsim0", "1"],
    &["-l", "ibsim0"],
    &["-p", "ibsim0"],
    // Errors: an unknown option (getopt), no such CA, no such port (0 on a CA), options
    // ibstat excludes.
    &["ibsim0", "-1"],
    &["foo"],
    &["ibsim0", "9"],
    &["ibsim0", "0"],
    &["-C", "ibsim0"],
    &["-P", "1"],
    &["--bogus"],
];

fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = run(cmd);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn compare_on(fabric: &str, nodes: &[&str]) {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("docs/json/ibstat-v1.schema.json")).unwrap(),
    )
    .unwrap();
    for node in nodes {
        let mut succeeded = 0;
        for args in CASES {
            let (c_code, c_out, _) = output(
                sim.umad2sim_command("ibstat")
                    .env("SIM_HOST", node)
                    .args(*args),
            );
            let (n_code, n_out, n_err) = output(
                native(&sim, &umad())
                    .env("UMAD_IBSIM_NODE", node)
                    .arg("ibstat")
                    .args(*args),
            );
            let (s_code, s_out, s_err) = output(
                sim.umad2sim_command(umad())
                    .env("SIM_HOST", node)
                    .arg("ibstat")
                    .args(*args),
            );
            let what = format!("{fabric} at {node}: ibstat {args:?}");
            assert_eq!(
                (n_code, &n_out),
                (c_code, &c_out),
                "{what} natively: {n_err}"
            );
            assert_eq!(
                (s_code, &s_out),
                (c_code, &c_out),
                "{what} under umad2sim: {s_err}"
            );
            if c_code == 0 {
                succeeded += 1;
                assert!(!c_out.is_empty(), "{what}");
            }
        }
        // All but the errors ("ibsim0 -1" is an unknown option to getopt too). The
        // simulated CA has one port: port 0 of a switch (so `ibsim0 1` fails there and
        // `ibsim0 0` works), a CA's first port.
        assert_eq!(succeeded, 9, "{fabric} at {node}");
        let (_, c_out, _) = output(sim.umad2sim_command("ibstat").env("SIM_HOST", node));
        assert!(
            c_out.contains("State: Active"),
            "{fabric} at {node}: {c_out}"
        );

        let (code, json, err) = output(
            native(&sim, &umad())
                .env("UMAD_IBSIM_NODE", node)
                .args(["ibstat", "--json"]),
        );
        assert_eq!(code, 0, "{err}");
        assert_valid(&schema, &json);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let ca = &doc["cas"][0];
        assert_eq!(ca["name"], "ibsim0");
        assert!(c_out.contains(&format!(
            "Node GUID: {}\n",
            ca["node_guid"].as_str().unwrap()
        )));
        for p in ca["ports"].as_array().unwrap() {
            assert!(c_out.contains(&format!("Port {}:\n", p["port"])));
            assert!(c_out.contains(&format!("Base lid: {}\n", p["base_lid"])));
        }
    }
    // Through a link named ibstat (attached at the default port).
    let (_, c_out, _) = output(&mut sim.umad2sim_command("ibstat"));
    assert_eq!(through_link(&sim, "ibstat", &strings(&[])), (0, c_out));
}

#[test]
fn ibstat_matches_c_on_example() {
    if !require_ibsim("umad_cli::ibstat_matches_c_on_example") {
        return;
    }
    compare_on("example.net", &["H-host1", "H-host2", "H-host3", "S-sw1"]);
}

#[test]
fn ibstat_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::ibstat_matches_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net", &["H-host0001", "S-leaf01"]);
}

#[test]
fn ibstat_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::ibstat_matches_c_on_mixed") {
        return;
    }
    compare_on("mixed.net", &["H-head", "H-dual", "H-quad", "S-right"]);
}
