//! `umad smpdump` against C `smpdump` on live ibsim fabrics with a resident opensm: LID and
//! `-D` routed Gets of NodeInfo, NodeDesc (`-s`), PortInfo with a modifier, attributes a node
//! answers with an error status, unreachable routes (C dumps the zeroed request), and bad
//! arguments: the same stdout and exit code. `--json` validates against
//! docs/json/smpdump-v1.schema.json and holds the same bytes.

mod common;

use common::smp::{c, compare, expand, json_cases, same, start, through_link, vars};
use ibsim_harness::require_ibsim;

const CASES: &[&[&str]] = &[
    &["1", "0x11"],
    &["{sw}", "0x11"],
    &["{sw}", "0x12"],
    &["{sw}", "0x15", "1"],
    &["1", "0x15", "1"],
    &["1", "0x12"],
    &["-s", "1", "0x10"],
    &["-s", "{sw}", "16"],
    &["-D", "0", "0x11"],
    &["-D", "0,1", "0x11"],
    &["-D", "0,1,2", "0x15", "1"],
    &["-D", "-s", "0,1", "0x10"],
    &["-D", "0,1", "0x17", "0x0102"],
    &["-D", "0,1", "0x18", "0x10000"],
    &["-L", "1", "0x11"],
    // Nobody answers: the request's own (zeroed) data.
    &["-t", "100", "0xbfff", "0x11"],
    &["-D", "-t", "100", "{dead}", "0x11"],
    // Errors.
    &["1"],
    &[],
    &["-G", "1", "0x11"],
    &["-K", "1", "0x11"],
    &["--bogus", "1", "0x11"],
];

fn compare_on(fabric: &str) {
    let sim = start(fabric);
    let v = vars(&sim);
    let ok = compare(&sim, fabric, "smpdump", CASES, &v, same);
    // Every dump but the bad usages succeeds (the dead route too: C dumps the request).
    let expected = if v.dead.is_some() { 17 } else { 16 };
    assert_eq!(ok, expected, "{fabric}: the dumps succeed");
    let docs = json_cases(
        &sim,
        "smpdump",
        &[&["1", "0x11"], &["-D", "0,1", "0x12"]],
        &v,
    );
    let (_, text) = c(&sim, "smpdump", &expand(&["1", "0x11"], &v));
    let hex: String = text.split_whitespace().collect();
    assert_eq!(docs[0]["data"].as_str().unwrap(), hex);
    assert_eq!(docs[1]["status"], 0x8000, "the D bit of a DR response");
    let args = expand(&["-D", "0,1", "0x11"], &v);
    assert_eq!(
        through_link(&sim, "smpdump", &args),
        c(&sim, "smpdump", &args)
    );
}

#[test]
fn smpdump_matches_c_on_example() {
    if !require_ibsim("umad_cli::smpdump_matches_c_on_example") {
        return;
    }
    compare_on("example.net");
}

#[test]
fn smpdump_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::smpdump_matches_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net");
}

#[test]
fn smpdump_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::smpdump_matches_c_on_mixed") {
        return;
    }
    compare_on("mixed.net");
}
