//! `umad ibtracert` against C `ibtracert` on live ibsim fabrics after opensm configured them:
//! the same stdout byte for byte and the same exit code for routes between CAs, from and to
//! switches, with `-n`, `-G`, `--node-name-map`, `--ports-file`, `-f`, `-m` (without group
//! members: no multicast route; after two CAs joined the group: the route through the MFTs,
//! and `ibroute -M`/`dump_fts -M` of the programmed tables) and the errors (unknown and unreachable LIDs, no
//! arguments), on `example.net`, `mixed.net` and `fattree-1008.net`. C runs under umad2sim,
//! ours natively; both at the netfile's default port. Every `--json` validates against
//! docs/json/ibtracert-v1.schema.json.

mod common;

use common::mcast::compare_multicast;
use common::{assert_valid, c_run, ca_lids, native, our_run, repo_root, run, switches, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// The port GUID of the CA port with `lid` in C `ibnetdiscover` output (`[1](100001) ...
/// # lid 1 ...`).
fn ca_port_guid(text: &str, lid: &str) -> Option<String> {
    text.lines()
        .filter(|l| l.starts_with('['))
        .find(|l| l.contains(&format!("# lid {lid} ")))
        .and_then(|l| {
            l.split('(')
                .nth(1)?
                .split(')')
                .next()
                .map(|g| format!("0x{g}"))
        })
}

fn compare(fabric: &str, full: bool) {
    if !require_ibsim(&format!("ibsim_ibtracert::{fabric}")) {
        return;
    }
    let mut sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.start_sm_daemon().expect("opensm");
    let (_, topology) = c_run(&sim, "ibnetdiscover", &[]);
    let sws = switches(&topology);
    let cas = ca_lids(&topology);
    assert!(sws.len() >= 2 && cas.len() >= 3, "{topology}");
    let (sw_guid, sw) = sws[0].clone();
    let sw2 = sws[sws.len() - 1].1.clone();
    let (a, b, c) = (
        cas[0].clone(),
        cas[cas.len() - 1].clone(),
        cas[cas.len() / 2].clone(),
    );
    let guid_a = ca_port_guid(&topology, &a).expect("a CA port GUID");
    let guid_b = ca_port_guid(&topology, &b).expect("a CA port GUID");
    let dir = sim.workdir().to_path_buf();
    let map = dir.join("node-name-map");
    std::fs::write(&map, format!("{sw_guid} \"mapped switch\"\n")).unwrap();
    let map = map.to_str().unwrap().to_string();
    let pairs = dir.join("pairs");
    std::fs::write(
        &pairs,
        format!("# pairs\n\n{a} {b}\n   \n{b} {c}\n{sw} {a} trailing words\n"),
    )
    .unwrap();
    let pairs = pairs.to_str().unwrap().to_string();
    let bad_pairs = dir.join("bad-pairs");
    std::fs::write(&bad_pairs, format!("{a} {b}\nlonely\n")).unwrap();
    let bad_pairs = bad_pairs.to_str().unwrap().to_string();

    let mut cases: Vec<Vec<&str>> = vec![
        vec![&a, &b],
        vec![&b, &a],
        vec!["-n", &a, &b],
        vec![&c, &b],
        vec![&sw, &b],
        vec![&a, &sw2],
        vec![&sw, &sw2],
        vec![&a, &a],
        vec!["-G", &guid_a, &guid_b],
        vec!["--node-name-map", &map, &a, &b],
        vec!["--ports-file", &pairs],
        vec!["-n", "--ports-file", &pairs],
        vec!["-f", &a, &b],
        vec!["-v", &b, &a],
        vec!["-v", "-n", &sw, &a],
        // Errors.
        vec!["--ports-file", &bad_pairs],
        vec!["--ports-file", "/nonexistent/pairs"],
        vec!["-m", "0xc000", &a, &b],
        vec!["-m", "0x10", &a, &b],
        vec![&a, "99999"],
        vec!["0", &b],
        vec![&a, "700"],
        vec![&a],
        vec![],
        vec!["-x"],
    ];
    if !full {
        cases.truncate(5);
        cases.push(vec![&a, "99999"]);
    }
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("docs/json/ibtracert-v1.schema.json")).unwrap(),
    )
    .unwrap();
    for args in &cases {
        let (c_code, c_out) = c_run(&sim, "ibtracert", args);
        let (our_code, our_out) = our_run(&sim, "ibtracert", args);
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes\n{c_out}");
        assert_eq!(our_out, c_out, "{fabric} {args:?}: stdout differs");
        if c_code == 0 {
            let mut j = args.clone();
            j.push("--json");
            let (code, json) = our_run(&sim, "ibtracert", &j);
            assert_eq!(code, 0, "{fabric} {j:?}");
            assert_valid(&schema, &json);
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let hops: usize = v["routes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["hops"].as_array().unwrap().len())
                .sum();
            // One hop per From/->/To line.
            let lines = c_out
                .lines()
                .filter(|l| l.starts_with("From") || l.starts_with('[') || l.starts_with("To"))
                .count();
            // (-v also prints the route to the source, which is no hop of the trace.)
            if !args.contains(&"-v") {
                assert_eq!(hops, lines, "{fabric} {j:?}: hops");
            }
        }
    }
    // A real route: from a CA, through at least one switch, to another.
    let (_, route) = our_run(&sim, "ibtracert", &[&a, &b]);
    assert!(
        route.starts_with("From ca ") && route.contains("-> switch port"),
        "{route}"
    );
    let link = sim.workdir().join("ibtracert");
    std::os::unix::fs::symlink(umad(), &link).unwrap();
    let out = run(native(&sim, &link).args([&a, &b]));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        c_run(&sim, "ibtracert", &[&a, &b]).1
    );
    compare_multicast(&sim, fabric, &topology, &sw);
}

#[test]
fn example_fabric() {
    compare("example.net", true);
}

#[test]
fn mixed_fabric() {
    compare("mixed.net", true);
}

#[test]
fn fattree_fabric() {
    compare("fattree-1008.net", false);
}
