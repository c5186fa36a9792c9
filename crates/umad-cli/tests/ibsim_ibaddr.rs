//! `umad ibaddr` against C `ibaddr` on live ibsim fabrics with a resident opensm: the local
//! port, LIDs, `-D` routes and `-G` GUIDs, each with `-g`, `-l`, `-L` and a port argument,
//! and the errors: the same stdout and exit code. `--json` validates against
//! docs/json/ibaddr-v1.schema.json and holds the same GID and LIDs.

mod common;

use common::smp::{c, compare, expand, json_cases, same, start, through_link, vars};
use ibsim_harness::require_ibsim;

const CASES: &[&[&str]] = &[
    &[],
    &["-g"],
    &["-l"],
    &["-L"],
    &["1"],
    &["{sw}"],
    &["-l", "{sw}"],
    &["-L", "{sw}"],
    &["-g", "{sw}"],
    &["-g", "-l", "{sw}"],
    &["-l", "-l", "1"],
    &["{sw}", "1"],
    &["{sw}", "2"],
    &["-D", "0"],
    &["-D", "0,1"],
    &["-D", "0,1,2"],
    &["-D", "-L", "0,1", "1"],
    &["-G", "{hg}"],
    &["-G", "{swg}"],
    &["-G", "-g", "{swg}"],
    &["-s", "1", "-G", "{swg}"],
    // Errors.
    &["-s", "0"],
    &["-s", "{sw}", "-t", "100", "-G", "{swg}"],
    &["-G", "0x999"],
    &["-G", "0"],
    &["-t", "100", "0xbfff"],
    &["0"],
    &["x"],
    &["-D", "-t", "100", "{dead}"],
    &["-K"],
    &["--bogus"],
    &["-P", "5"],
];

fn compare_on(fabric: &str) {
    let sim = start(fabric);
    let v = vars(&sim);
    let ok = compare(&sim, fabric, "ibaddr", CASES, &v, same);
    assert_eq!(ok, 21, "{fabric}: the address queries succeed");
    let docs = json_cases(&sim, "ibaddr", &[&["{sw}"], &["-D", "0"]], &v);
    let (_, text) = c(&sim, "ibaddr", &expand(&["{sw}"], &v));
    assert_eq!(
        text,
        format!(
            "GID {} LID start 0x{:x} end 0x{:x}\n",
            docs[0]["gid"].as_str().unwrap(),
            docs[0]["lid_start"].as_u64().unwrap(),
            docs[0]["lid_end"].as_u64().unwrap()
        )
    );
    assert_eq!(docs[0]["lid_start"], v.sw_lid);
    assert_eq!(through_link(&sim, "ibaddr", &[]), c(&sim, "ibaddr", &[]));
}

#[test]
fn ibaddr_matches_c_on_example() {
    if !require_ibsim("umad_cli::ibaddr_matches_c_on_example") {
        return;
    }
    compare_on("example.net");
}

#[test]
fn ibaddr_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::ibaddr_matches_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net");
}

#[test]
fn ibaddr_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::ibaddr_matches_c_on_mixed") {
        return;
    }
    compare_on("mixed.net");
}
