//! `umad sminfo` against C `sminfo` on live ibsim fabrics with a resident opensm: the SM the
//! port knows, by LID, by `-D` route, with a modifier (a Set: `-s -p -a`), and the errors
//! (no SM there, unreachable, bad options): the same stdout (the activity count masked, as
//! the SM counts on) and exit code. `--json` validates against docs/json/sminfo-v1.schema.json.

mod common;

use common::smp::{c, compare, json_cases, start, through_link, vars};
use ibsim_harness::require_ibsim;

const CASES: &[&[&str]] = &[
    &[],
    &["1"],
    &["1", "0"],
    &["-D", "0"],
    &["-L", "1"],
    &["-s", "3", "-p", "0", "1", "0"],
    // Not the SM / nobody there.
    &["{sw}"],
    &["-D", "0,1"],
    &["-t", "100", "0xbfff"],
    &["0"],
    &["x"],
    // Bad options: -K and -s (sm port) are not sminfo's.
    &["-K"],
    &["--bogus"],
    &["-C", "nosuch"],
    &["-t", "0"],
];

/// The activity count, which the resident SM keeps incrementing, masked.
fn mask(text: &str) -> String {
    text.lines()
        .map(
            |l| match (l.find("activity count "), l.find(" priority ")) {
                (Some(a), Some(p)) if a < p => format!("{}activity count N{}\n", &l[..a], &l[p..]),
                _ => format!("{l}\n"),
            },
        )
        .collect()
}

fn compare_on(fabric: &str) {
    let sim = start(fabric);
    let v = vars(&sim);
    let ok = compare(&sim, fabric, "sminfo", CASES, &v, mask);
    assert_eq!(ok, 6, "{fabric}: the SM queries succeed");
    let (_, text) = c(&sim, "sminfo", &[]);
    assert!(text.contains("state 3 SMINFO_MASTER"), "{fabric}: {text}");
    let docs = json_cases(&sim, "sminfo", &[&[], &["-D", "0"]], &v);
    assert_eq!(docs[0]["state_name"], "SMINFO_MASTER");
    assert_eq!(docs[0]["sm_lid"], 1);
    assert_eq!(docs[1]["sm_lid"], 0);
    assert!(text.contains(&format!(
        "sm guid 0x{:x},",
        u64::from_str_radix(
            docs[0]["sm_guid"]
                .as_str()
                .unwrap()
                .trim_start_matches("0x"),
            16
        )
        .unwrap()
    )));
    let (code, out) = through_link(&sim, "sminfo", &[]);
    assert_eq!(code, 0);
    assert_eq!(mask(&out), mask(&text));
}

#[test]
fn sminfo_matches_c_on_example() {
    if !require_ibsim("umad_cli::sminfo_matches_c_on_example") {
        return;
    }
    compare_on("example.net");
}

#[test]
fn sminfo_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::sminfo_matches_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net");
}

#[test]
fn sminfo_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::sminfo_matches_c_on_mixed") {
        return;
    }
    compare_on("mixed.net");
}
