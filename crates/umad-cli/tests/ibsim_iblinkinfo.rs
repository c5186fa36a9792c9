//! `umad iblinkinfo` against C `iblinkinfo` on live ibsim fabrics (example.net,
//! fattree-1008.net, mixed.net, after one opensm sweep): the same stdout and exit code for
//! every option; `--json` validates against docs/json/iblinkinfo-v1.schema.json and has one
//! record per port line of the text.

mod common;

use common::{assert_valid, c_run, json_schema, our_run};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// A map naming a node that exists in all three fabrics (GUID 0x100000: see
/// ibsim_ibnetdiscover.rs) and one switch.
const NODE_NAME_MAP: &str = "0x100000 \"first-hca\"\n0x200000 \"spine or leaf\"\n";

fn compare(fabric: &str, cases_extra: &[&[&str]]) {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let map = sim.workdir().join("node-name-map");
    std::fs::write(&map, NODE_NAME_MAP).unwrap();
    let map = map.to_str().unwrap();
    let mut cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-l"],
        vec!["-p"],
        vec!["-l", "-p"],
        vec!["-d"],
        vec!["-d", "-l"],
        vec!["--switches-only"],
        vec!["--cas-only", "-l"],
        vec!["--node-name-map", map],
        vec!["-l", "--node-name-map", map],
        vec!["-o", "4"],
        vec!["-D", "0"],
        vec!["-D", "0,1"],
        vec!["-D", "0,1", "-a"],
        vec!["-D", "0,1", "-l", "-p"],
        vec!["-D", "0,1", "-n", "2", "-a"],
        vec!["-D", "0,1", "--cas-only"],
        vec!["-G", "0x999"],
        vec!["--no-such-option"],
    ];
    cases.extend(cases_extra.iter().map(|c| c.to_vec()));
    for args in &cases {
        let (c_code, c_out) = c_run(&sim, "iblinkinfo", args);
        let (our_code, our_out) = our_run(&sim, "iblinkinfo", args);
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes");
        assert_eq!(our_out, c_out, "{fabric} {args:?}: stdout differs");
        if args.is_empty() {
            assert!(c_out.contains("Switch: 0x"), "{fabric}: {c_out}");
        }
    }

    let schema = json_schema("iblinkinfo-v1.schema.json");
    for args in [
        vec!["--json"],
        vec!["--json", "-p", "-d"],
        vec!["--json", "-D", "0,1"],
    ] {
        let (code, out) = our_run(&sim, "iblinkinfo", &args);
        assert_eq!(code, 0, "{fabric} {args:?}");
        assert_valid(&schema, &out);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let text_args: Vec<&str> = args[1..].to_vec();
        let (_, text) = our_run(&sim, "iblinkinfo", &text_args);
        let port_lines = text.lines().filter(|l| l.contains("==(")).count();
        assert_eq!(v["ports"].as_array().unwrap().len(), port_lines, "{args:?}");
    }
}

#[test]
fn iblinkinfo_example() {
    if !require_ibsim("iblinkinfo_example") {
        return;
    }
    compare(
        "example.net",
        &[
            &["-G", "0x100008"],
            &["-S", "0x200001", "-l"],
            &["-D", "0,1,8", "-n", "2", "-a"],
        ],
    );
}

#[test]
fn iblinkinfo_mixed() {
    if !require_ibsim("iblinkinfo_mixed") {
        return;
    }
    compare("mixed.net", &[&["-G", "0x100000"]]);
}

#[test]
fn iblinkinfo_fattree_1008() {
    if !require_ibsim("iblinkinfo_fattree_1008") {
        return;
    }
    compare("fattree-1008.net", &[&["-G", "0x100000", "-p"]]);
}
