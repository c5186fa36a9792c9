//! `umad ibportstate` against C `ibportstate` on live ibsim fabrics (example.net,
//! fattree-1008.net, mixed.net, and a small fabric of Mellanox device IDs for the
//! ExtendedPortInfo paths).
//!
//! Queries (CA ports, switch ports with their peer by `-D`, by LID and `-G`, `-K`, and every
//! error: bad operations and values, unknown destinations and ports, bad options) run C and
//! ours on one ibsim with a resident SM: the same stdout byte for byte and the same exit
//! code. Set operations change the fabric, so they run on two ibsims of the same netfile
//! swept once by opensm: C on one, ours on the other, the same sequence; each step's output
//! and exit code must be equal, the port read back afterwards with C `smpquery` must be
//! equal on both fabrics, and it must show the change asked for.

mod common;

use common::smp::{c, compare, expand, json_cases, same, start, through_link, vars};
use common::{native, run, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

const QUERIES: &[&[&str]] = &[
    &["1", "1"],
    &["1", "1", "query"],
    &["-K", "1", "1"],
    &["-D", "0", "1"],
    &["-D", "0,1", "0"],
    &["-D", "0,1", "1"],
    &["-D", "0,1", "2"],
    &["-D", "0,1", "3"],
    // A switch peer on example.net (port 8) and mixed.net (port 12), a CA elsewhere.
    &["-D", "0,1", "8"],
    &["-D", "0,1", "12"],
    &["-t", "200", "-D", "0,1,8", "1"],
    &["{sw}", "0"],
    &["-G", "{hg}", "1"],
    &["-G", "{swg}", "0"],
    &["-D", "-K", "0,1", "0"],
    // A switch port by LID: the peer goes LID-routed then directed, which ibsim does not
    // answer (C's "smp query nodeinfo failed").
    &["-t", "100", "{sw}", "1"],
    // Errors.
    &[],
    &["1"],
    &["1", "1", "bogus"],
    &["1", "1", "Query"],
    &["1", "1", "query", "enable"],
    &["1", "1", "disable", "reset"],
    &["1", "1", "speed"],
    &["1", "1", "speed", "16"],
    &["1", "1", "speed", "-1"],
    &["1", "1", "espeed", "32"],
    &["1", "1", "fdr10", "2"],
    &["1", "1", "width", "32"],
    &["1", "1", "vls", "0"],
    &["1", "1", "vls", "6"],
    &["1", "1", "mtu", "0"],
    &["1", "1", "mtu", "6"],
    &["1", "1", "lid", "0"],
    &["1", "1", "lid", "0xc000"],
    &["1", "1", "smlid", "x"],
    &["1", "1", "lmc", "8"],
    &["1", "1", "mkeylease", "65536"],
    &["1", "1", "mkeyprot", "4"],
    &["{sw}", "1", "mkey", "1"],
    &["-D", "0,1", "2", "mkeyprot", "1"],
    &["0", "1"],
    &["x", "1"],
    &["0xc000", "1"],
    &["-G", "0x999", "1"],
    &["-t", "100", "0xbfff", "1"],
    &["1", "99"],
    &["-D", "0,1", "99"],
    &["-D", "-t", "100", "0,99", "1"],
    &["-C", "nosuch", "1", "1"],
    &["-P", "5", "1", "1"],
    &["--bogus", "1", "1"],
    &["--node-name-map", "/dev/null", "1", "1"],
    &["-t", "0", "1", "1"],
    &["-t", "x", "1", "1"],
    &["-y", "x", "1", "1"],
    &["-e", "-v", "1", "1"],
];

/// With `-d` C's iberror line names its pid and function: the pid masked.
const DEBUG_QUERIES: &[&[&str]] = &[
    &["-d", "1", "1"],
    &["-d", "1", "1", "bogus"],
    &["-d", "0", "1"],
    &["-d", "1", "99"],
    &["-d", "-t", "100", "0xbfff", "1"],
    &["-d", "{sw}", "1", "mkey", "1"],
];

/// `text` with every `[pid N]` as `[pid]`.
fn mask_pid(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("[pid ") {
        out.push_str(&rest[..i + 4]);
        let after = &rest[i + 5..];
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

fn queries_on(fabric: &str) {
    let sim = start(fabric);
    let v = vars(&sim);
    let ok = compare(&sim, fabric, "ibportstate", QUERIES, &v, same);
    assert!(ok >= 10, "{fabric}: only {ok} cases succeeded in C");
    assert_eq!(
        mask_pid("a [pid 123] main: x [pid 9]"),
        "a [pid] main: x [pid]"
    );
    let ok = compare(&sim, fabric, "ibportstate", DEBUG_QUERIES, &v, mask_pid);
    assert_eq!(ok, 1, "{fabric}: -d");

    // --json: valid, and what the text shows.
    let docs = json_cases(
        &sim,
        "ibportstate",
        &[&["1", "1"], &["-D", "0,1", "1"], &["-K", "-D", "0,1", "0"]],
        &v,
    );
    let (_, text) = c(&sim, "ibportstate", &expand(&["1", "1"], &v));
    for f in docs[0]["port_info"]["fields"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let line = format!("{name}:{}{}\n", ".".repeat(32 - name.len()), f["text"]);
        let line = line.replace('"', "");
        assert!(text.contains(&line), "{fabric}: {line} not in\n{text}");
    }
    assert_eq!(docs[0]["node_type"], "CA/RT");
    assert!(docs[0]["peer"].is_null());
    assert_eq!(docs[1]["node_type"], "Switch");
    assert_eq!(docs[1]["peer"]["destination"]["dr_path"], "0,1,1");
    assert!(docs[2]["port_info"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "Mkey" && f["value"].is_string()));

    // Through a link named ibportstate.
    let args = expand(&["-D", "0,1", "1"], &v);
    assert_eq!(
        through_link(&sim, "ibportstate", &args),
        c(&sim, "ibportstate", &args)
    );
}

/// A set step: the arguments, then the `smpquery` that reads the port back and the line it
/// must show afterwards (`None`: ibsim keeps no visible trace, only compared).
struct Step {
    args: &'static [&'static str],
    readback: &'static [&'static str],
    expect: Option<&'static str>,
}

const fn step(
    args: &'static [&'static str],
    readback: &'static [&'static str],
    expect: Option<&'static str>,
) -> Step {
    Step {
        args,
        readback,
        expect,
    }
}

/// CA port: the node at the first switch's port 2 (a CA on every fabric here); switch port:
/// the first switch's port 3.
const CA: &[&str] = &["-D", "portinfo", "0,1,2", "1"];
const SW3: &[&str] = &["-D", "portinfo", "0,1", "3"];
const SW0: &[&str] = &["-D", "portinfo", "0,1", "0"];

const STEPS: &[Step] = &[
    step(
        &["-D", "0,1,2", "1", "speed", "1"],
        CA,
        Some("LinkSpeedEnabled:................2.5 Gbps\n"),
    ),
    step(
        &["-D", "0,1,2", "1", "width", "1"],
        CA,
        Some("LinkWidthEnabled:................1X\n"),
    ),
    step(
        // 255 (all supported) and 15: ibsim keeps the enabled width and speed.
        &["-D", "0,1,2", "1", "width", "255", "speed", "15"],
        CA,
        None,
    ),
    step(&["-D", "0,1,2", "1", "espeed", "1"], CA, None),
    step(
        &["-D", "0,1,2", "1", "vls", "2"],
        CA,
        Some("OperVLs:.........................VL0-1\n"),
    ),
    step(&["-D", "0,1,2", "1", "mtu", "3"], CA, None),
    step(
        &["-D", "0,1,2", "1", "lmc", "1"],
        CA,
        Some("LMC:.............................1\n"),
    ),
    step(
        &["-D", "0,1,2", "1", "smlid", "0x2"],
        CA,
        Some("SMLid:...........................2\n"),
    ),
    step(
        &["-D", "0,1,2", "1", "lid", "0x40"],
        CA,
        Some("Lid:.............................64\n"),
    ),
    step(&["-D", "0,1,2", "1", "fdr10", "1"], CA, None),
    step(
        &[
            "-D",
            "0,1,2",
            "1",
            "mkeylease",
            "10",
            "mkeyprot",
            "0",
            "mkey",
            "0",
        ],
        &["-K", "-D", "portinfo", "0,1,2", "1"],
        None,
    ),
    step(&["-D", "0,1,2", "1", "down"], CA, None),
    step(&["-D", "0,1,2", "1", "arm"], CA, None),
    step(&["-D", "0,1,2", "1", "active"], CA, None),
    step(
        &["-D", "0,1", "3", "disable"],
        SW3,
        Some("PhysLinkState:...................Disabled\n"),
    ),
    step(
        &["-D", "0,1", "3", "on"],
        SW3,
        Some("PhysLinkState:...................Polling\n"),
    ),
    // Already enabled: "Port is already in enable state", nothing set.
    step(
        &["-D", "0,1", "3", "on"],
        SW3,
        Some("PhysLinkState:...................Polling\n"),
    ),
    step(
        &["-D", "0,1", "3", "off"],
        SW3,
        Some("PhysLinkState:...................Disabled\n"),
    ),
    step(
        &["-D", "0,1", "3", "enable"],
        SW3,
        Some("PhysLinkState:...................Polling\n"),
    ),
    step(
        &["-D", "0,1", "3", "reset"],
        SW3,
        Some("PhysLinkState:...................Polling\n"),
    ),
    step(
        &["-D", "0,1", "0", "mkeylease", "7"],
        &["-D", "portinfo", "0,1", "0"],
        None,
    ),
    step(
        &["-D", "0,1", "0", "smlid", "1", "vls", "1"],
        SW0,
        Some("SMLid:...........................1\n"),
    ),
    // By LID: the local port (LID 1 from the SM that ran on it).
    step(
        &["1", "1", "vls", "3"],
        &["portinfo", "1", "1"],
        Some("OperVLs:.........................VL0-3\n"),
    ),
    step(
        &["-t", "100", "1", "9", "speed", "1"],
        &["portinfo", "1", "1"],
        None,
    ),
];

/// Two ibsims of `netfile` swept once by opensm: one for C, one for ours.
fn twin_sims(netfile: &std::path::Path) -> (Ibsim, Ibsim) {
    let a = Ibsim::start(netfile).expect("ibsim starts");
    let b = Ibsim::start(netfile).expect("ibsim starts");
    a.run_sm_once().expect("opensm sweeps");
    b.run_sm_once().expect("opensm sweeps");
    (a, b)
}

/// `umad ibportstate <args>` against `sim`: (exit code, stdout).
fn ours(sim: &Ibsim, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad()).arg("ibportstate").args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn sets_on(fabric: &str, netfile: &std::path::Path, steps: &[Step]) {
    let (c_sim, our_sim) = twin_sims(netfile);
    let mut changed = 0;
    for s in steps {
        let (c_code, c_out) = c(&c_sim, "ibportstate", &strings(s.args));
        let (our_code, our_out) = ours(&our_sim, s.args);
        let c_out = common::smp::unpath(&c_out, "ibportstate");
        assert_eq!(
            our_code, c_code,
            "{fabric}: {:?}: exit codes\nC:\n{c_out}\nours:\n{our_out}",
            s.args
        );
        assert_eq!(our_out, c_out, "{fabric}: {:?}: stdout differs", s.args);
        let (_, c_back) = c(&c_sim, "smpquery", &strings(s.readback));
        let (_, our_back) = c(&our_sim, "smpquery", &strings(s.readback));
        assert_eq!(
            our_back, c_back,
            "{fabric}: {:?}: the port afterwards",
            s.args
        );
        if let Some(line) = s.expect {
            assert_eq!(c_code, 0, "{fabric}: {:?}: {c_out}", s.args);
            assert!(
                our_back.contains(line),
                "{fabric}: {:?}: {line:?} not in\n{our_back}",
                s.args
            );
            changed += 1;
        }
        if c_code == 0 {
            assert!(
                c_out.starts_with("Initial "),
                "{fabric}: {:?}: {c_out}",
                s.args
            );
        }
    }
    assert!(changed >= steps.len() / 2);
    // --json of a set (on our fabric only): valid, with the PortInfo after the set.
    let p = common::repo_root().join("docs/json/ibportstate-v1.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let (code, out) = ours(&our_sim, &["--json", "-D", "0,1", "3", "disable"]);
    assert_eq!(code, 0, "{out}");
    common::assert_valid(&schema, &out);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["operation"], "disable");
    assert_eq!(doc["messages"][0], "Disable may be irreversible");
    assert!(doc["after_set"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "PhysLinkState" && f["text"] == "Disabled"));
}

#[test]
fn ibportstate_queries_match_c_on_example() {
    if !require_ibsim("umad_cli::ibportstate_queries_match_c_on_example") {
        return;
    }
    queries_on("example.net");
}

#[test]
fn ibportstate_queries_match_c_on_fattree() {
    if !require_ibsim("umad_cli::ibportstate_queries_match_c_on_fattree") {
        return;
    }
    queries_on("fattree-1008.net");
}

#[test]
fn ibportstate_queries_match_c_on_mixed() {
    if !require_ibsim("umad_cli::ibportstate_queries_match_c_on_mixed") {
        return;
    }
    queries_on("mixed.net");
}

#[test]
fn ibportstate_sets_match_c_on_example() {
    if !require_ibsim("umad_cli::ibportstate_sets_match_c_on_example") {
        return;
    }
    sets_on("example.net", &fabrics_dir().join("example.net"), STEPS);
}

#[test]
fn ibportstate_sets_match_c_on_mixed() {
    if !require_ibsim("umad_cli::ibportstate_sets_match_c_on_mixed") {
        return;
    }
    sets_on("mixed.net", &fabrics_dir().join("mixed.net"), STEPS);
}

#[test]
fn ibportstate_sets_match_c_on_fattree() {
    if !require_ibsim("umad_cli::ibportstate_sets_match_c_on_fattree") {
        return;
    }
    // A few steps only: two ibsims of 1052 nodes.
    let few: Vec<Step> = STEPS
        .iter()
        .filter(|s| {
            matches!(
                s.args,
                [_, _, "1", "speed", _]
                    | [_, _, "3", "disable"]
                    | [_, _, "3", "enable"]
                    | ["1", "1", "vls", _]
            )
        })
        .map(|s| step(s.args, s.readback, s.expect))
        .collect();
    assert_eq!(few.len(), 4);
    sets_on(
        "fattree-1008.net",
        &fabrics_dir().join("fattree-1008.net"),
        &few,
    );
}

/// Mellanox device IDs (a ConnectX-4 and a SwitchX): the ExtendedPortInfo is shown for the
/// port and its peer, and `fdr10` sets it.
const MLNX_NET: &str = "devid=0x1013\n\
Hca\t1 \"H-a\"\t\t# \"a HCA-1\"\n\
[1]\t\"S-mx\"[1]\t\t# lid 0 lmc 0 \"mx\" lid 0 4xQDR\n\n\
Hca\t1 \"H-b\"\t\t# \"b HCA-1\"\n\
[1]\t\"S-mx\"[2]\t\t# lid 0 lmc 0 \"mx\" lid 0 4xQDR\n\n\
devid=0xc738\n\
Switch\t4 \"S-mx\"\t\t# \"mx\" enhanced port 0 lid 0 lmc 0\n\
[1]\t\"H-a\"[1]\t\t# \"a HCA-1\" lid 0 4xQDR\n\
[2]\t\"H-b\"[1]\t\t# \"b HCA-1\" lid 0 4xQDR\n";

#[test]
fn ibportstate_mellanox_ext_port_info_matches_c() {
    if !require_ibsim("umad_cli::ibportstate_mellanox_ext_port_info_matches_c") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("umad-ibportstate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("mlnx.net");
    std::fs::write(&net, MLNX_NET).unwrap();
    let sim = Ibsim::start(&net).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let v = vars(&sim);
    let queries: &[&[&str]] = &[
        &["1", "1"],
        &["-D", "0,1", "1"],
        &["-D", "0,1", "2"],
        &["-D", "0,1", "0"],
    ];
    assert_eq!(
        compare(&sim, "mlnx.net", "ibportstate", queries, &v, same),
        4
    );
    let (_, text) = c(&sim, "ibportstate", &strings(&["-D", "0,1", "1"]));
    assert_eq!(text.matches("# MLNX ext Port info: ").count(), 2, "{text}");
    let docs = json_cases(&sim, "ibportstate", &[&["-D", "0,1", "1"]], &v);
    assert!(docs[0]["mlnx_ext_port_info"].is_array());
    assert!(docs[0]["peer"]["mlnx_ext_port_info"].is_array());
    drop(sim);
    let steps = [
        step(
            &["-D", "0,1,2", "1", "fdr10", "1"],
            &["-D", "mepi", "0,1,2", "1"],
            Some("LinkSpeedEnabled:................0x01\n"),
        ),
        step(
            &["-D", "0,1", "2", "fdr10", "0"],
            &["-D", "mepi", "0,1", "2"],
            Some("LinkSpeedEnabled:................0x00\n"),
        ),
    ];
    sets_on("mlnx.net", &net, &steps);
    let _ = std::fs::remove_dir_all(&dir);
}
