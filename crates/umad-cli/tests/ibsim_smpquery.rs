//! `umad smpquery` against C `smpquery` on live ibsim fabrics (example.net, fattree-1008.net,
//! mixed.net, with a resident opensm): every operation, by LID, `-D` and `-G`, with and
//! without a port argument, `-K`, `-x`, `-s`, `-y`, `-z`, `-e`, `-v`, `-L`, `-P`, `-t`, `--node-name-map`, and the errors (unknown op, bad
//! or unreachable destinations, invalid ports, a CA asked for SwitchInfo, no such CA/port,
//! bad options): the same stdout byte for byte and the same exit code. `--json` validates
//! against docs/json/smpquery-v1.schema.json and carries what the text shows.

mod common;

use common::smp::{c, compare, expand, json_cases, same, start, through_link, vars};
use ibsim_harness::require_ibsim;

const CASES: &[&[&str]] = &[
    // NodeInfo
    &["nodeinfo", "1"],
    &["NI", "{sw}"],
    &["-D", "nodeinfo", "0"],
    &["-D", "nodeinfo", "0,1"],
    &["-D", "NodeInfo", "0,1,2"],
    &["-G", "nodeinfo", "{hg}"],
    &["-G", "ni", "{swg}"],
    // NodeDesc
    &["nodedesc", "1"],
    &["ND", "{sw}"],
    &["-D", "nodedesc", "0,1,2"],
    &["--node-name-map", "{map}", "nodedesc", "1"],
    &["--node-name-map", "{map}", "nd", "{sw}"],
    // PortInfo
    &["portinfo", "1"],
    &["portinfo", "1", "1"],
    &["PI", "{sw}", "0"],
    &["pi", "{sw}", "1"],
    &["-D", "portinfo", "0,1", "2"],
    &["-K", "portinfo", "1"],
    &["-x", "portinfo", "{sw}", "1"],
    &["-G", "pi", "{swg}", "3"],
    // PortInfoExtended (ibsim's ports don't support it: C's message)
    &["pie", "1"],
    &["PortInfoExtended", "{sw}", "1"],
    // SwitchInfo
    &["switchinfo", "{sw}"],
    &["-D", "si", "0,1"],
    &["si", "1"],
    // PKeyTable
    &["pkeys", "1"],
    &["pkeys", "{sw}"],
    &["PKeyTable", "{sw}", "1"],
    &["pkeys", "1", "5"],
    // SL2VLTable
    &["sl2vl", "1"],
    &["sl2vl", "{sw}"],
    &["SL2VLTable", "{sw}", "1"],
    &["sl2vl", "1", "9"],
    // VLArbitration
    &["vlarb", "1"],
    &["vlarb", "{sw}"],
    &["VLArbitration", "{sw}", "1"],
    &["-D", "vlarb", "0,1", "2"],
    // GUIDInfo
    &["GI", "1"],
    &["GUIDInfo", "{sw}"],
    &["guids", "1"],
    // MlnxExtPortInfo
    &["mepi", "1"],
    &["MlnxExtPortInfo", "{sw}", "1"],
    // Combined routing (ibsim doesn't answer it: C's failure)
    &["-c", "nodeinfo", "{sw}", "0"],
    // Common options
    &["-s", "1", "-G", "nodeinfo", "{hg}"],
    &["-s", "{sw}", "-t", "100", "-G", "ni", "{hg}"],
    &["-s", "0", "nodeinfo", "1"],
    &["-y", "0", "nodeinfo", "1"],
    &["-z", "/nonexistent", "nodeinfo", "1"],
    &["-e", "-v", "nodeinfo", "1"],
    &["-L", "-P", "0", "nodeinfo", "1"],
    // Errors
    &["bogus", "1"],
    &["nodeinfo"],
    &[],
    &["nodeinfo", "0"],
    &["nodeinfo", "x"],
    &["nodeinfo", "0xc000"],
    &["-G", "nodeinfo", "0x999"],
    &["-G", "ni", "0"],
    &["-t", "100", "nodeinfo", "0xbfff"],
    &["-D", "-t", "100", "nodeinfo", "{dead}"],
    &["-C", "nosuch", "nodeinfo", "1"],
    &["-P", "5", "nodeinfo", "1"],
    &["--bogus", "nodeinfo", "1"],
    &["-t", "0", "nodeinfo", "1"],
];

fn compare_on(fabric: &str) {
    let sim = start(fabric);
    let v = vars(&sim);
    let ok = compare(&sim, fabric, "smpquery", CASES, &v, same);
    assert!(ok >= 30, "{fabric}: only {ok} cases succeeded in C");

    // --json: valid, and the same values as the text.
    let docs = json_cases(
        &sim,
        "smpquery",
        &[
            &["nodeinfo", "1"],
            &["-D", "nodedesc", "0,1"],
            &["portinfo", "{sw}", "1"],
            &["-K", "pi", "1"],
            &["switchinfo", "{sw}"],
            &["pkeys", "{sw}", "1"],
            &["sl2vl", "{sw}"],
            &["vlarb", "1"],
            &["gi", "1"],
            &["mepi", "1"],
        ],
        &v,
    );
    let (_, ni_text) = c(&sim, "smpquery", &expand(&["nodeinfo", "1"], &v));
    for f in docs[0]["result"]["fields"].as_array().unwrap() {
        let line = format!(
            "{}:{}{}",
            f["name"].as_str().unwrap(),
            ".".repeat(32 - f["name"].as_str().unwrap().len()),
            f["text"].as_str().unwrap()
        );
        assert!(
            ni_text.contains(&line),
            "{fabric}: {line} not in\n{ni_text}"
        );
    }
    assert_eq!(docs[0]["destination"]["text"], "Lid 1");
    assert_eq!(docs[3]["result"]["fields"][0]["name"], "Mkey");
    assert!(docs[3]["result"]["fields"][0]["value"].is_string());
    let (_, pk_text) = c(&sim, "smpquery", &expand(&["pkeys", "{sw}", "1"], &v));
    let first = format!("0x{:04x}", docs[5]["result"]["pkeys"][0].as_u64().unwrap());
    assert!(pk_text.starts_with(&format!("   0: {first}")), "{pk_text}");

    // Through a link named smpquery.
    let args = expand(&["-D", "portinfo", "0,1", "1"], &v);
    assert_eq!(
        through_link(&sim, "smpquery", &args),
        c(&sim, "smpquery", &args)
    );
}

#[test]
fn smpquery_matches_c_on_example() {
    if !require_ibsim("umad_cli::smpquery_matches_c_on_example") {
        return;
    }
    compare_on("example.net");
}

#[test]
fn smpquery_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::smpquery_matches_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net");
}

#[test]
fn smpquery_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::smpquery_matches_c_on_mixed") {
        return;
    }
    compare_on("mixed.net");
}
