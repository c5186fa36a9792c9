//! `umad ibqueryerrors` against C `ibqueryerrors` on live ibsim fabrics (example.net,
//! fattree-1008.net, mixed.net, after one opensm sweep, errors injected with ibsim's
//! `PerformanceSet`): the same stdout and exit code for every option, the data counters
//! masked (ibsim counts the tools' own MADs); `-k`/`-K` clear what C clears; `--json`
//! validates against docs/json/ibqueryerrors-v1.schema.json.

mod common;

use common::{assert_valid, c_run, json_schema, mask_data, our_run};
use ibsim_harness::{fabrics_dir, netfile_switches, require_ibsim, Ibsim};

/// The first CA of a netfile (its `Hca`/`Ca` line's quoted id).
fn first_ca(netfile: &std::path::Path) -> String {
    let text = std::fs::read_to_string(netfile).unwrap();
    text.lines()
        .find(|l| l.starts_with("Hca") || l.starts_with("Ca"))
        .and_then(|l| l.split('"').nth(1))
        .unwrap()
        .to_string()
}

fn inject(sim: &Ibsim, ca: &str, sw: &str) {
    for cmd in [
        format!("PerformanceSet \"{ca}\"[1] PortCounters.SymbolErrorCounter=42"),
        format!("PerformanceSet \"{sw}\"[2] PortCounters.PortXmitDiscards=7"),
        format!("PerformanceSet \"{sw}\"[2] PortCounters.PortRcvErrors=3"),
        format!("PerformanceSet \"{sw}\"[1] PortCounters.LinkDownedCounter=9"),
        format!("PerformanceSet \"{sw}\"[1] PortCounters.PortRcvSwitchRelayErrors=5"),
    ] {
        sim.console(&cmd).expect("PerformanceSet");
    }
}

fn same(sim: &Ibsim, fabric: &str, args: &[&str]) -> (i32, String) {
    let (c_code, c_out) = c_run(sim, "ibqueryerrors", args);
    let (our_code, our_out) = our_run(sim, "ibqueryerrors", args);
    assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes");
    assert_eq!(
        mask_data(&our_out),
        mask_data(&c_out),
        "{fabric} {args:?}: stdout differs"
    );
    (c_code, c_out)
}

fn compare(fabric: &str, extra: &[&[&str]]) {
    let netfile = fabrics_dir().join(fabric);
    let sim = Ibsim::builder(&netfile)
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let ca = first_ca(&netfile);
    let sw = netfile_switches(&netfile).unwrap()[0].clone();
    // No SM answers the SL PathRecords: C (and we) stop silently.
    let (code, out) = same(&sim, fabric, &[]);
    assert_eq!((code, out.as_str()), (0, ""));

    inject(&sim, &ca, &sw);
    let thresholds = sim.workdir().join("thresholds");
    std::fs::write(
        &thresholds,
        "# t\nPortXmitDiscards=10\nLinkDownedCounter=2\n",
    )
    .unwrap();
    let thresholds = thresholds.to_str().unwrap();
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["--skip-sl"],
        vec!["--skip-sl", "-c"],
        vec![
            "--skip-sl",
            "-s",
            "PortXmitDiscards,SymbolErrorCounter",
            "-s",
            "LinkDownedCounter",
        ],
        vec!["--skip-sl", "-s", "NoSuchCounter,VL15Dropped"],
        vec!["--skip-sl", "--switch"],
        vec!["--skip-sl", "--ca"],
        vec!["--skip-sl", "--router"],
        vec!["--skip-sl", "--threshold-file", thresholds],
        vec!["--skip-sl", "--threshold-file", "/nonexistent/thresholds"],
        vec!["--skip-sl", "-r"],
        vec!["--skip-sl", "-r", "--switch"],
        vec!["--skip-sl", "--details"],
        vec!["--skip-sl", "--data"],
        vec!["--skip-sl", "--data", "-r", "--ca"],
        vec!["--skip-sl", "--counters", "--switch"],
        vec!["--skip-sl", "--counters", "-r", "--ca"],
        vec!["--skip-sl", "-D", "0,1"],
        vec!["--skip-sl", "-D", "0"],
        vec!["--skip-sl", "-G", "0x999"],
        vec!["--skip-sl", "-R", "-o", "8"],
        vec!["--no-such-option"],
    ];
    cases.extend(extra.iter().map(|c| c.to_vec()));
    for args in &cases {
        same(&sim, fabric, args);
    }
    let (code, out) = our_run(&sim, "ibqueryerrors", &["--skip-sl"]);
    assert_eq!(code, 1, "{fabric}: errors were injected");
    assert!(
        out.contains("[SymbolErrorCounter == 42]"),
        "{fabric}: {out}"
    );
    assert!(out.contains("[PortXmitDiscards == 7]"), "{fabric}: {out}");

    let schema = json_schema("ibqueryerrors-v1.schema.json");
    for args in [
        vec!["--skip-sl", "--json"],
        vec!["--skip-sl", "--json", "--counters", "--switch"],
    ] {
        let (_, out) = our_run(&sim, "ibqueryerrors", &args);
        assert_valid(&schema, &out);
    }

    // -k clears the error counters, -K the data counters: C's run, then the same injection
    // and ours, each followed by a plain run.
    for clear in ["-k", "-K"] {
        let (c_code, c_out) = c_run(&sim, "ibqueryerrors", &["--skip-sl", clear]);
        let (_, c_after) = c_run(&sim, "ibqueryerrors", &["--skip-sl"]);
        inject(&sim, &ca, &sw);
        let (our_code, our_out) = our_run(&sim, "ibqueryerrors", &["--skip-sl", clear]);
        let (_, our_after) = our_run(&sim, "ibqueryerrors", &["--skip-sl"]);
        assert_eq!(our_code, c_code, "{fabric} {clear}");
        assert_eq!(mask_data(&our_out), mask_data(&c_out), "{fabric} {clear}");
        assert_eq!(
            mask_data(&our_after),
            mask_data(&c_after),
            "{fabric} {clear} after"
        );
        if clear == "-k" {
            assert!(!our_after.contains("SymbolErrorCounter =="), "{our_after}");
        }
        inject(&sim, &ca, &sw);
    }
}

#[test]
fn ibqueryerrors_example() {
    if !require_ibsim("ibqueryerrors_example") {
        return;
    }
    compare(
        "example.net",
        &[
            &["--skip-sl", "-G", "0x100001"],
            &["--skip-sl", "-D", "0,1,8", "-r"],
        ],
    );
}

#[test]
fn ibqueryerrors_mixed() {
    if !require_ibsim("ibqueryerrors_mixed") {
        return;
    }
    compare("mixed.net", &[]);
}

#[test]
fn ibqueryerrors_fattree_1008() {
    if !require_ibsim("ibqueryerrors_fattree_1008") {
        return;
    }
    compare("fattree-1008.net", &[]);
}
