//! `umad perfquery` against C `perfquery` on live ibsim fabrics (example.net,
//! fattree-1008.net, mixed.net, after one opensm sweep): the same stdout and exit code for
//! every option and argument form, masking only the traffic counters (ibsim counts the tools'
//! own MADs: data and packet counters, and the relay errors its switches count for them);
//! every `--json` validates against docs/json/perfquery-v1.schema.json.

mod common;

use common::{assert_valid, c_run, json_schema, local_and_neighbor_lids, mask_traffic, our_run};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

fn compare(fabric: &str) {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let (ca, sw) = local_and_neighbor_lids(&sim);
    let (ca, sw) = (ca.to_string(), sw.to_string());
    let (ca, sw) = (ca.as_str(), sw.as_str());
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-x"],
        vec!["-E"],
        vec!["-D"],
        vec!["--oprcvcounters"],
        vec!["--flowctlcounters"],
        vec!["--vloppackets"],
        vec![ca],
        vec![ca, "1"],
        vec!["-x", ca, "1"],
        vec!["-a", ca],
        vec!["-x", "-a", ca],
        vec!["-l", ca, "255"],
        vec![sw, "1"],
        vec!["-x", sw, "2"],
        vec!["-a", sw],
        vec!["-x", "-a", sw],
        vec!["-l", sw],
        vec![sw, "255"],
        vec!["-l", sw, "255"],
        vec!["-a", sw, "1-3"],
        vec!["-x", "-a", sw, "1,2"],
        vec!["-l", sw, "1,3"],
        vec!["-E", sw, "1"],
        vec!["-D", sw, "2"],
        vec!["-r", sw, "1"],
        vec!["-x", "-r", sw, "1"],
        vec!["-R", sw, "1"],
        vec!["-R", "-a", sw],
        vec!["-R", sw, "2", "0x0fff"],
        vec!["-x", "-R", sw, "1"],
        vec!["-R", "-E", sw, "1"],
        // Errors: a port the switch does not have, a bad range, an invalid LID, a LID
        // nobody has, attributes ibsim does not answer.
        vec![sw, "250"],
        vec![sw, "3-1"],
        vec!["0"],
        vec!["-t", "100", "40000"],
        vec!["-t", "100", "-X", sw, "1"],
        vec!["-t", "100", "-S", sw, "1"],
        vec!["-t", "100", "-T", sw, "1"],
        vec!["-t", "100", "-c", sw, "1"],
        vec!["--no-such-option"],
    ];
    for args in &cases {
        let (c_code, c_out) = c_run(&sim, "perfquery", args);
        let (our_code, our_out) = our_run(&sim, "perfquery", args);
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes");
        assert_eq!(
            mask_traffic(&our_out),
            mask_traffic(&c_out),
            "{fabric} {args:?}: stdout differs"
        );
    }
    // The expected successes really printed counters, the failures C's iberror line.
    let (code, out) = our_run(&sim, "perfquery", &["-a", sw]);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("# Port counters: Lid {sw} port 255 (CapMask: 0x")));
    let (code, out) = our_run(&sim, "perfquery", &[sw, "3-1"]);
    assert_eq!(code, 255);
    assert_eq!(
        out,
        "perfquery: iberror: failed: max port must be greater than min port in range\n"
    );

    let schema = json_schema("perfquery-v1.schema.json");
    for args in [
        vec!["--json"],
        vec!["--json", "-x", "-a", sw],
        vec!["--json", "-l", sw, "1,2"],
        vec!["--json", "-r", "-E", sw, "1"],
        vec!["--json", "-a", ca],
    ] {
        let (code, out) = our_run(&sim, "perfquery", &args);
        assert_eq!(code, 0, "{fabric} {args:?}");
        assert_valid(&schema, &out);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(!v["queries"].as_array().unwrap().is_empty(), "{args:?}");
    }
}

#[test]
fn perfquery_example() {
    if !require_ibsim("perfquery_example") {
        return;
    }
    compare("example.net");
}

#[test]
fn perfquery_mixed() {
    if !require_ibsim("perfquery_mixed") {
        return;
    }
    compare("mixed.net");
}

#[test]
fn perfquery_fattree_1008() {
    if !require_ibsim("perfquery_fattree_1008") {
        return;
    }
    compare("fattree-1008.net");
}
