//! Loops, depth and scale: C tools against ours on fabrics/ring.net (a ring of 6 switches
//! joined to a 4x4 mesh: every node reachable by several routes), fabrics/chain.net (24
//! switches in a line: directed routes of up to 25 hops, LID routes past ibsim's 16-hop
//! forwarding limit, `-D` routes longer than the 63 hops a DR SMP carries) and
//! fabrics/fattree3-1760.net (a three-level fat tree, 1536 HCAs + 224 switches). Every case
//! of the tables runs C under umad2sim and ours natively from the netfile's default port
//! (some from a switch or a dual-homed HCA): the same exit code and the same stdout, with
//! only the date line and traffic counters masked. The main tools' `--json` validates
//! against docs/json/*.schema.json. On the ring, LFT entries written by hand make a LID
//! route loop between two switches (ibtracert's loop handling).

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::mcast::{ca_descriptions, compare_multicast};
use common::{assert_valid, json_schema, mask_data, mask_date, mask_traffic, native, run, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// The counters ibqueryerrors suppresses here: the ones the tools' own traffic moves.
const QUIET: &str = "PortXmitDiscards,PortRcvSwitchRelayErrors,PortRcvErrors";

/// Option values getopt takes whatever they look like, and bad common options (C's IBEXIT
/// on stdout), for every tool.
fn option_cases(cases: &mut Vec<Case>) {
    for (tool, args) in [
        ("iblinkinfo", &["--switch", "-l"][..]),
        ("iblinkinfo", &["-S", "-l"]),
        ("iblinkinfo", &["-G", "-p"]),
        ("iblinkinfo", &["--node-name-map", "-l"]),
        ("iblinkinfo", &["-D", "-l"]),
        ("iblinkinfo", &["-n", "-l"]),
        ("ibnetdiscover", &["--node-name-map", "-l"]),
        ("ibqueryerrors", &["--skip-sl", "-s", "-k"]),
        ("perfquery", &["-C", "-x"]),
        ("smpquery", &["-C", "-x", "nodeinfo", "2"]),
        ("ibtracert", &["-m", "-1", "1", "2"]),
    ] {
        cases.push(case(tool, args));
    }
    for tool in [
        "ibnetdiscover",
        "iblinkinfo",
        "ibqueryerrors",
        "ibroute",
        "ibtracert",
        "smpquery",
        "perfquery",
        "ibaddr",
        "sminfo",
        "saquery",
        "dump_lfts",
    ] {
        cases.push(case(tool, &["-t", "0"]));
        cases.push(case(tool, &["-t", "-x"]));
        cases.push(case(tool, &["-y", "zz"]));
    }
}

/// LID by node description (switches and each CA's first port) in C `ibnetdiscover` text.
fn lids(topology: &str) -> HashMap<String, String> {
    let mut out: HashMap<String, String> = ca_descriptions(topology)
        .into_iter()
        .map(|(lid, desc)| (desc, lid))
        .collect();
    for l in topology.lines().filter(|l| l.starts_with("Switch")) {
        let desc = l.split('"').nth(3);
        let lid = l
            .split(" lid ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next());
        if let (Some(d), Some(lid)) = (desc, lid) {
            out.insert(d.to_string(), lid.to_string());
        }
    }
    out
}

/// Exit code and stdout of `cmd`, C's `argv[0]` in its `iberror` lines shortened to the
/// program's name, and what changes from run to run masked for `tool`.
fn outcome(tool: &str, cmd: &mut Command) -> (i32, String) {
    let out = run(cmd);
    let text: String = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match l.split_once(": iberror: ") {
            // C names itself by its path (the harness's, or a script's /usr/sbin/dump_fts).
            Some((p, rest)) if p.starts_with('/') && !p.contains(' ') => {
                let name = p.rsplit('/').next().unwrap_or(p);
                format!("{name}: iberror: {rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let text = match tool {
        "ibnetdiscover" => mask_date(&text),
        "perfquery" => mask_traffic(&text),
        "ibqueryerrors" => mask_data(&text),
        _ => text,
    };
    (out.status.code().unwrap_or(-1), text)
}

/// A case: the tool, its arguments and, if not the default port, the node to attach to.
struct Case {
    tool: &'static str,
    args: Vec<String>,
    node: Option<&'static str>,
}

fn case(tool: &'static str, args: &[&str]) -> Case {
    Case {
        tool,
        args: args.iter().map(|a| a.to_string()).collect(),
        node: None,
    }
}

fn case_at(node: &'static str, tool: &'static str, args: &[&str]) -> Case {
    Case {
        node: Some(node),
        ..case(tool, args)
    }
}

/// Runs every case both ways; returns C's outputs (exit code, stdout) in order.
fn compare(sim: &Ibsim, fabric: &str, cases: &[Case]) -> Vec<(i32, String)> {
    let mut seen = Vec::new();
    for c in cases {
        let mut c_cmd = sim.umad2sim_command(c.tool);
        c_cmd.args(&c.args);
        let mut ours = native(sim, &umad());
        ours.arg(c.tool).args(&c.args);
        if let Some(node) = c.node {
            c_cmd.env("SIM_HOST", node);
            ours.env("UMAD_IBSIM_NODE", node);
        }
        let (c_code, c_out) = outcome(c.tool, &mut c_cmd);
        let (our_code, our_out) = outcome(c.tool, &mut ours);
        let what = format!("{fabric} {:?} {} {:?}", c.node, c.tool, c.args);
        assert_eq!(our_code, c_code, "{what}: exit codes\nC said:\n{c_out}");
        assert_eq!(our_out, c_out, "{what}: stdout differs");
        seen.push((c_code, c_out));
    }
    seen
}

/// `umad <tool> --json <args>` validates against docs/json/<schema>; returns the document.
fn json_valid(sim: &Ibsim, schema: &str, tool: &str, args: &[&str]) -> serde_json::Value {
    let out = run(native(sim, &umad()).arg(tool).arg("--json").args(args));
    // ibqueryerrors exits 1 when it found errors beyond the thresholds.
    let code = out.status.code();
    assert!(
        code == Some(0) || (tool == "ibqueryerrors" && code == Some(1)),
        "{tool} --json {args:?}: {code:?}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_valid(&json_schema(schema), &text);
    serde_json::from_str(&text).unwrap()
}

/// C's `ibnetdiscover` of the running fabric.
fn topology(sim: &Ibsim) -> String {
    let (code, text) = outcome("ibnetdiscover", &mut sim.umad2sim_command("ibnetdiscover"));
    assert_eq!(code, 0, "{text}");
    text
}

/// `0,1` then `n` times `2`: from the chain's first HCA to switch `chain<n+1>`.
fn down_chain(n: usize) -> String {
    let mut s = String::from("0,1");
    for _ in 0..n {
        s.push_str(",2");
    }
    s
}

/// A route of `hops` hops bouncing between chain01 and chain02 (`0,1,2,1,2,...`).
fn bounce(hops: usize) -> String {
    let mut s = String::from("0,1");
    for i in 1..hops {
        s.push_str(if i % 2 == 1 { ",2" } else { ",1" });
    }
    s
}

#[test]
fn deep_ring() {
    if !require_ibsim("deep_ring") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("ring.net")).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps the loops");
    let topo = topology(&sim);
    let lid = lids(&topo);
    assert_eq!(lid.len(), 22 + 28, "every node discovered once:\n{topo}");
    let l = |d: &str| lid[d].clone();
    let (r1h1, m33, m00, r4h1, m22) = (
        l("r1h1 HCA-1"),
        l("m33 HCA-1"),
        l("m00 HCA-1"),
        l("r4h1 HCA-1"),
        l("m22 HCA-1"),
    );
    let (ring1, ring4, mesh11, mesh33) = (l("ring1"), l("ring4"), l("mesh11"), l("mesh33"));
    // The dual-homed HCA's second port (on mesh11).
    let m00_2 = topo
        .lines()
        .find(|t| t.starts_with("[2](") && t.contains("\"mesh11\""))
        .and_then(|t| t.split("# lid ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .expect("H-m00 port 2")
        .to_string();
    // Around the ring by port 1 (next): 6 hops back to ring1, 63 hops in all.
    let mut around = String::from("0,1");
    for _ in 0..62 {
        around.push_str(",1");
    }
    let mut cases = vec![];
    for args in [
        &[][..],
        &["-l"],
        &["-p"],
        &["-s"],
        &["-H"],
        &["-S"],
        &["-g"],
        &["-f"],
        &["-m"],
        &["-m", "-s"],
        &["-l", "-p"],
        &["-o", "1"],
    ] {
        cases.push(case("ibnetdiscover", args));
    }
    for args in [
        &[][..],
        &["-l"],
        &["-p"],
        &["--switch"],
        &["-S", "0x200000"],
        &["-l", "-p"],
        &["-d"],
        &["--cas-only"],
        &["-D", "0,1", "-n", "3"],
        &["-D", "0,1,5", "-n", "2", "-a"],
        &["-D", "0,1,1,5,3", "-l", "-n", "4"],
        &["-D", "0,1,5,1,1,1,3,3,3"],
        &["-D", "0,1,2,2,2,5,4", "-p", "-n", "1"],
        &["-D", &around],
    ] {
        cases.push(case("iblinkinfo", args));
    }
    for (s, d) in [
        (&r1h1, &m33),
        (&m33, &r1h1),
        (&r4h1, &m22),
        (&m00, &m00_2),
        (&m00_2, &r4h1),
        (&r1h1, &mesh33),
        (&ring4, &mesh11),
    ] {
        cases.push(case("ibtracert", &[s, d]));
    }
    cases.push(case("ibtracert", &["-n", &r4h1, &m33]));
    cases.push(case("ibtracert", &["-v", &r1h1, &m22]));
    cases.push(case("ibtracert", &["-m", "0xc000", &r1h1, &m33]));
    for sw in [&ring1, &ring4, &mesh11, &mesh33] {
        cases.push(case("ibroute", &[sw]));
    }
    cases.push(case("ibroute", &["-a", &mesh11]));
    cases.push(case("ibroute", &["-n", "-D", "0,1,5,3,3"]));
    cases.push(case("ibroute", &["-D", "0,1,1,1,1,1,1,5,1,1,1"]));
    for args in [&[][..], &["-D"], &["-M"]] {
        cases.push(case("dump_lfts", args));
    }
    cases.push(case("dump_mfts", &[]));
    // No SM answers the SL PathRecords (C stops silently): --skip-sl. The discards and
    // relay errors that the tools' own MADs to dead ends cause are suppressed (they move
    // between C's run and ours); -k/-K would clear what the next run reads.
    for args in [
        &[][..],
        &["--details"],
        &["-r"],
        &["-c"],
        &["--data"],
        &["-S", "0x200000"],
        &["-D", "0,1"],
        &["--switch"],
        &["--ca"],
    ] {
        let mut a = vec!["--skip-sl", "-s", QUIET];
        a.extend_from_slice(args);
        cases.push(case("ibqueryerrors", &a));
    }
    for args in [
        vec![m33.as_str()],
        vec![m33.as_str(), "1"],
        vec![&mesh33, "255"],
        vec!["-a", &mesh33],
        vec!["-x", &m22, "1"],
        vec!["-e", &mesh11, "3"],
        vec![&m00_2, "2"],
    ] {
        cases.push(case("perfquery", &args));
    }
    for args in [
        &["-D", "0,1,5,3,3,3,5"][..],
        &["-D", "0,3,5,5"],
        &["-D", &around],
        &[&m33],
    ] {
        cases.push(case("ibaddr", args));
    }
    cases.push(case("smpquery", &["-D", "nodeinfo", &around]));
    cases.push(case("smpquery", &["-D", "portinfo", "0,1,5,3,3,3,5", "1"]));
    cases.push(case("smpquery", &["nodedesc", &mesh33]));
    cases.push(case("smpdump", &["-D", &around, "0x10"]));
    for tool in ["ibnodes", "ibswitches", "ibhosts", "ibrouters"] {
        cases.push(case(tool, &[]));
    }
    // From a ring switch and from the dual-homed HCA: other directed routes, other trees.
    for node in ["S-ring3", "H-m00"] {
        for (tool, args) in [
            ("ibnetdiscover", &["-p"][..]),
            ("ibnetdiscover", &["-s"]),
            ("iblinkinfo", &["-D", "0,1", "-n", "2"]),
            ("ibaddr", &[]),
            ("smpquery", &["-D", "nodeinfo", "0,2,3"]),
            ("ibroute", &["-D", "0"]),
            ("ibtracert", &["-D", "0", "0,3,4"]),
            ("ibqueryerrors", &[]),
        ] {
            cases.push(case_at(node, tool, args));
        }
    }
    option_cases(&mut cases);
    let seen = compare(&sim, "ring.net", &cases);
    assert!(seen.iter().any(|(_, t)| t.contains("\"mesh33\"")));

    json_valid(&sim, "ibnetdiscover-v1.schema.json", "ibnetdiscover", &[]);
    let v = json_valid(&sim, "iblinkinfo-v1.schema.json", "iblinkinfo", &[]);
    assert!(v["ports"].as_array().unwrap().len() > 50);
    json_valid(
        &sim,
        "ibtracert-v1.schema.json",
        "ibtracert",
        &[&r1h1, &m33],
    );
    json_valid(&sim, "ibroute-v1.schema.json", "ibroute", &[&mesh11]);
    json_valid(
        &sim,
        "ibqueryerrors-v1.schema.json",
        "ibqueryerrors",
        &["--skip-sl", "--details"],
    );
    json_valid(
        &sim,
        "smpquery-v1.schema.json",
        "smpquery",
        &["-D", "nodeinfo", &around],
    );
    json_valid(&sim, "perfquery-v1.schema.json", "perfquery", &[&m33, "1"]);
}

#[test]
fn deep_ring_multicast() {
    if !require_ibsim("deep_ring_multicast") {
        return;
    }
    let mut sim = Ibsim::start(fabrics_dir().join("ring.net")).expect("ibsim starts");
    sim.start_sm_daemon().expect("opensm comes up");
    let topo = topology(&sim);
    let lid = lids(&topo);
    // Port GUIDs by LID, from the CA port lines (`[1](100039) ... # lid 51 ...`).
    let guid = |l: &str| {
        topo.lines()
            .filter(|t| t.starts_with('['))
            .find(|t| t.contains(&format!("# lid {l} ")))
            .and_then(|t| t.split('(').nth(1)?.split(')').next())
            .map(|g| format!("0x{g}"))
            .expect("a CA port with that LID")
    };
    let (m33, r1h1) = (guid(&lid["m33 HCA-1"]), guid(&lid["r1h1 HCA-1"]));
    let mesh33 = lid["mesh33"].clone();
    // GUIDs resolved through the SA (a single-MAD PathRecord answer each). Not a switch's
    // GUID for iblinkinfo/ibqueryerrors: libibnetdisc then asks the neighbours by combined
    // routes, which ibsim discards without an answer, and C under umad2sim (no send
    // timeouts) waits forever.
    let mut cases = vec![];
    for (tool, args) in [
        ("ibaddr", vec!["-G", m33.as_str()]),
        ("iblinkinfo", vec!["-G", &m33]),
        ("ibqueryerrors", vec!["--skip-sl", "-s", QUIET, "-G", &m33]),
        ("ibtracert", vec!["-G", &r1h1, &m33]),
        ("ibtracert", vec!["-G", &m33, &r1h1]),
        ("smpquery", vec!["-G", "nodeinfo", &m33]),
        ("perfquery", vec!["-G", &m33, "1"]),
        ("ibportstate", vec!["-G", &m33, "1"]),
        ("ibaddr", vec!["-G", "0x999"]),
        ("ibroute", vec![mesh33.as_str()]),
    ] {
        cases.push(case(tool, &args));
    }
    compare(&sim, "ring.net", &cases);
    let sw = lid["mesh11"].clone();
    compare_multicast(&sim, "ring.net", &topo, &sw);
}

#[test]
fn deep_chain() {
    if !require_ibsim("deep_chain") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("chain.net")).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let topo = topology(&sim);
    let lid = lids(&topo);
    assert_eq!(lid.len(), 24 + 9, "{topo}");
    let l = |d: &str| lid[d].clone();
    let (c01, c12, c16, c20, c24) = (
        l("c01h1 HCA-1"),
        l("c12h1 HCA-1"),
        l("c16h1 HCA-1"),
        l("c20h1 HCA-1"),
        l("c24h2 HCA-1"),
    );
    let (chain01, chain12, chain16, chain24) =
        (l("chain01"), l("chain12"), l("chain16"), l("chain24"));
    let far = down_chain(23); // chain24, 24 hops
    let far_ca = format!("{far},3"); // c24h1, 25 hops
    let mid = down_chain(15); // chain16
    let (b63, b64, b70) = (bounce(63), bounce(64), bounce(70));
    let mut cases = vec![];
    for args in [
        &[][..],
        &["-l"],
        &["-p"],
        &["-s"],
        &["-H"],
        &["-S"],
        &["-g"],
        &["-m"],
        &["-f", "-p"],
    ] {
        cases.push(case("ibnetdiscover", args));
    }
    for args in [
        &[][..],
        &["-l"],
        &["-p"],
        &["--switch"],
        &["-d"],
        &["-D", &far],
        &["-D", &far_ca, "-n", "5"],
        &["-D", &mid, "-n", "30"],
        &["-D", &mid, "-n", "64", "-a"],
        &["-D", "0,1", "-n", "100"],
        &["-D", &b63],
        &["-D", &b64],
        &["-D", &b70],
        &["-D", &b64, "-a"],
        &["-D", &b70, "-a", "-l"],
    ] {
        cases.push(case("iblinkinfo", args));
    }
    // ibsim forwards LID-routed MADs 16 hops at most: past chain16 C and we both fail.
    for (s, d) in [
        (&c01, &c12),
        (&c12, &c01),
        (&c01, &chain16),
        (&c01, &c16),
        (&c01, &c20),
        (&c01, &c24),
        (&c24, &c01),
        (&c12, &c24),
        (&chain12, &c24),
    ] {
        cases.push(case("ibtracert", &[s, d]));
    }
    cases.push(case("ibtracert", &["-f", &c01, &c24]));
    cases.push(case("ibtracert", &["-v", &c01, &c16]));
    cases.push(case("ibtracert", &["-D", &b64, "0"]));
    for args in [
        vec![chain01.as_str()],
        vec![&chain16],
        vec![&chain24],
        vec!["-D", &far],
        vec!["-D", &far, "1", "10"],
        vec!["-n", "-D", &mid],
        vec!["-M", "-D", &far],
        vec!["-D", &b63],
        vec!["-D", &b64],
        vec!["-M", "-D", &b70],
    ] {
        cases.push(case("ibroute", &args));
    }
    for args in [&[][..], &["-D"], &["-n"]] {
        cases.push(case("dump_lfts", args));
    }
    for args in [
        vec!["-D", "nodeinfo", far.as_str()],
        vec!["-D", "nodedesc", &far_ca],
        vec!["-D", "portinfo", &far, "1"],
        vec!["-D", "switchinfo", &far],
        vec!["-D", "pkeys", &far_ca],
        vec!["-D", "sl2vl", &far, "1"],
        vec!["-D", "vlarb", &far, "1"],
        vec!["-D", "nodeinfo", &b63],
        vec!["-D", "nodedesc", &b64],
        vec!["-D", "portinfo", &b70, "1"],
        vec!["-D", "nodeinfo", &format!("{far},9")],
        vec!["nodeinfo", &chain16],
        vec!["nodeinfo", &chain24],
    ] {
        cases.push(case("smpquery", &args));
    }
    // str2drpath's text rules on a long route: a trailing comma adds no hop, an empty
    // element is port 0.
    let trailing = format!("{far_ca},");
    let empty_last = format!("{far_ca},,");
    for (tool, args) in [
        ("smpquery", vec!["-D", "nodedesc", trailing.as_str()]),
        ("smpquery", vec!["-D", "nodedesc", &empty_last]),
        ("ibaddr", vec!["-D", &trailing]),
        ("iblinkinfo", vec!["-D", &trailing]),
        ("ibroute", vec!["-D", "0,1,"]),
        ("ibroute", vec!["-D", "0,1,,2"]),
        ("smpdump", vec!["-D", &trailing, "0x10"]),
        (
            "ibqueryerrors",
            vec!["--skip-sl", "-s", QUIET, "-D", &trailing],
        ),
    ] {
        cases.push(case(tool, &args));
    }
    cases.push(case("smpdump", &["-D", &far, "0x10"]));
    cases.push(case("smpdump", &["-D", &b63, "0x15", "1"]));
    for args in [
        vec!["-D", far.as_str()],
        vec!["-D", &far_ca],
        vec!["-l", "-D", &far_ca],
        vec!["-g", "-D", &far],
        vec!["-D", &format!("{far},2")],
        vec!["-D", &b63],
        vec!["-D", &b64],
        vec!["-D", &b70],
        vec![&chain24],
        vec![&c16],
    ] {
        cases.push(case("ibaddr", &args));
    }
    for tool in ["sminfo", "ibportstate"] {
        let mut args = vec!["-D", b64.as_str()];
        if tool == "ibportstate" {
            args.push("1");
        }
        cases.push(case(tool, &args));
    }
    cases.push(case("ibportstate", &["-D", &far, "1"]));
    for args in [
        vec![chain12.as_str()],
        vec![&chain12, "255"],
        vec!["-x", &chain16, "2"],
        vec!["-a", &chain16],
        vec![&c16, "1"],
        vec![&c20, "1"],
        vec![&chain24, "1"],
        vec!["-D", &b64],
    ] {
        cases.push(case("perfquery", &args));
    }
    // Past ibsim's 16 hops the PMA queries fail: the summary counts them.
    for args in [
        &[][..],
        &["--details"],
        &["-D", &far],
        &["-D", &b64],
        &["-S", "0x200000"],
    ] {
        let mut a = vec!["--skip-sl", "-s", QUIET];
        a.extend_from_slice(args);
        cases.push(case("ibqueryerrors", &a));
    }
    cases.push(case("ibqueryerrors", &["-D", &b64]));
    // From the far end: the whole chain the other way.
    for (tool, args) in [
        ("ibnetdiscover", &["-s"][..]),
        (
            "iblinkinfo",
            &["-D", "0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,4"],
        ),
        ("ibtracert", &[c24.as_str(), c12.as_str()]),
    ] {
        cases.push(case_at("H-c24h2", tool, args));
    }
    let seen = compare(&sim, "chain.net", &cases);
    assert!(seen.iter().any(|(_, t)| t.contains("\"chain24\"")));

    let v = json_valid(
        &sim,
        "iblinkinfo-v1.schema.json",
        "iblinkinfo",
        &["-D", &far],
    );
    assert!(!v["ports"].as_array().unwrap().is_empty());
    json_valid(&sim, "ibnetdiscover-v1.schema.json", "ibnetdiscover", &[]);
    json_valid(
        &sim,
        "smpquery-v1.schema.json",
        "smpquery",
        &["-D", "nodeinfo", &far_ca],
    );
    json_valid(&sim, "ibaddr-v1.schema.json", "ibaddr", &["-D", &far]);
    json_valid(&sim, "ibroute-v1.schema.json", "ibroute", &["-D", &far]);
    json_valid(&sim, "ibtracert-v1.schema.json", "ibtracert", &[&c01, &c16]);
}

#[test]
fn deep_fattree3() {
    if !require_ibsim("deep_fattree3") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("fattree3-1760.net")).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let topo = topology(&sim);
    let lid = lids(&topo);
    assert_eq!(lid.len(), 1760, "every node discovered");
    let l = |d: &str| lid[d].clone();
    let (h1, h1536, core11, agg) = (
        l("host0001 HCA-1"),
        l("host1536 HCA-1"),
        l("core11"),
        l("p12agg8"),
    );
    let mut cases = vec![];
    for args in [&[][..], &["-p"], &["-s"], &["-l"]] {
        cases.push(case("ibnetdiscover", args));
    }
    cases.push(case("iblinkinfo", &[]));
    cases.push(case("iblinkinfo", &["--switch", "-l"]));
    cases.push(case("ibqueryerrors", &["--skip-sl", "-s", QUIET]));
    cases.push(case("ibswitches", &[]));
    cases.push(case("ibtracert", &[&h1, &h1536]));
    cases.push(case("ibtracert", &[&h1536, &core11]));
    cases.push(case("ibroute", &[&core11]));
    cases.push(case("ibroute", &["-a", &agg, "1000", "1100"]));
    compare(&sim, "fattree3-1760.net", &cases);
    let v = json_valid(&sim, "ibnetdiscover-v1.schema.json", "ibnetdiscover", &[]);
    assert_eq!(v["fabric"]["nodes"].as_array().map(Vec::len), Some(1760));
}

/// Writes `port` as the exit for `lid` in the LFT of the switch at directed route `dr`.
fn set_lft_entry(sim: &Ibsim, dr: &[u8], lid: u16, port: u8) {
    use ibmad::attr::LinearForwardingTable;
    use umad::rpc::{Rpc, Target};
    let p = umad::Port::open_ibsim(&umad::IbsimOptions::new(sim.socket_name())).expect("port");
    let rpc = Rpc::new(std::sync::Arc::new(p));
    let target = Target::Dr(ibmad::DrPath::from_hops(dr).unwrap());
    let block = u32::from(lid) / LinearForwardingTable::LIDS_PER_BLOCK as u32;
    let mut lft: LinearForwardingTable = rpc.smp_get(&target, block).expect("LFT block");
    lft.ports[usize::from(lid) % LinearForwardingTable::LIDS_PER_BLOCK] = port;
    rpc.smp_set(&target, block, &lft).expect("LFT set");
}

#[test]
fn deep_ring_routing_loop() {
    if !require_ibsim("deep_ring_routing_loop") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("ring.net")).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let topo = topology(&sim);
    let lid = lids(&topo);
    let (r1h1, m33, ring2) = (&lid["r1h1 HCA-1"], &lid["m33 HCA-1"], &lid["ring2"]);
    // ring1 (DR 1) sends m33's LID to ring2 (its port 1), ring2 (DR 1,1) back (its port 2):
    // the LID route loops between them.
    let target: u16 = m33.parse().unwrap();
    set_lft_entry(&sim, &[1], target, 1);
    set_lft_entry(&sim, &[1, 1], target, 2);
    let mut cases = vec![];
    for args in [
        vec![r1h1.as_str(), m33.as_str()],
        vec!["-v", r1h1, m33],
        vec!["-n", r1h1, m33],
        vec![ring2, m33],
        vec!["-f", r1h1, m33],
    ] {
        cases.push(case("ibtracert", &args));
    }
    cases.push(case("ibroute", &[ring2]));
    let seen = compare(&sim, "ring.net", &cases);
    // C stops where the route comes back to a switch it has seen (ring1), and says "To" it.
    assert!(
        seen[0].1.contains("To switch") && seen[0].1.contains("\"ring1\""),
        "{}",
        seen[0].1
    );
    json_valid(&sim, "ibtracert-v1.schema.json", "ibtracert", &[r1h1, m33]);
}
