//! `umad ibroute` and `dump_fts`/`dump_lfts`/`dump_mfts` against the C tools on live ibsim
//! fabrics after opensm configured them: the same stdout byte for byte and the same exit
//! code, unicast and `-M` multicast, with `-a`, `-n`, LID ranges, `-D`, `-G`, `-C`/`-P`,
//! `--node-name-map` and the errors (not a switch, a bad LID, an unreachable route, no
//! arguments), also run from a switch (route `0`), on `example.net`, `mixed.net` and
//! `fattree-1008.net`. C runs under umad2sim, ours natively; both at the netfile's default
//! port. Every `--json` validates against docs/json/ibroute-v1.schema.json (dump_fts:
//! dump_fts-v1).

mod common;

use common::{assert_valid, c_run, ca_lids, native, our_run, repo_root, run, switches, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

fn compare(fabric: &str, full: bool) {
    if !require_ibsim(&format!("ibsim_ibroute::{fabric}")) {
        return;
    }
    let mut sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.start_sm_daemon().expect("opensm");
    let (_, topology) = c_run(&sim, "ibnetdiscover", &[]);
    let sws = switches(&topology);
    let cas = ca_lids(&topology);
    assert!(sws.len() >= 2 && !cas.is_empty(), "{topology}");
    let (sw_guid, sw) = sws[0].clone();
    let sw2 = sws[sws.len() - 1].1.clone();
    let ca = cas[0].clone();
    let map = sim.workdir().join("node-name-map");
    std::fs::write(&map, format!("{sw_guid} \"mapped switch\"\n")).unwrap();
    let map = map.to_str().unwrap().to_string();
    let mut cases: Vec<Vec<&str>> = vec![
        vec![&sw],
        vec!["-n", &sw],
        vec!["-M", &sw],
        vec!["-M", "-n", &sw2],
        vec!["-a", "-n", &sw, "0", "100"],
        vec![&sw2, "1", "0x20"],
        vec!["-a", &sw2, "0x10", "0x50"],
        vec!["-a", &sw],
        vec!["-M", "-a", &sw, "0xc000", "0xc01f"],
        vec!["-M", &sw, "0xc000", "0xc010"],
        vec!["-M", "-a", "-n", &sw2, "0xbfff", "0xc003"],
        vec!["-D", "0,1"],
        vec!["-M", "-D", "0,1"],
        vec!["-G", &sw_guid],
        vec!["--node-name-map", &map, &sw],
        vec!["--node-name-map", &map, "-M", &sw],
        vec![&sw, "64", "64"],
        vec![&sw, "0x40"],
        // Errors.
        vec![&ca],
        vec!["-M", &ca],
        vec!["99999"],
        vec!["0"],
        vec![],
        vec!["-D", "0,1,99"],
        vec!["-C", "ibsim0", "-P", "1", &sw],
        vec!["-C", "nosuchca", &sw],
        vec!["-G", "0x1234"],
        vec!["-x"],
    ];
    if !full {
        cases.truncate(5);
        cases.push(vec![&ca]);
    }
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("docs/json/ibroute-v1.schema.json")).unwrap(),
    )
    .unwrap();
    for args in &cases {
        let (c_code, c_out) = c_run(&sim, "ibroute", args);
        let (our_code, our_out) = our_run(&sim, "ibroute", args);
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes\n{c_out}");
        assert_eq!(our_out, c_out, "{fabric} {args:?}: stdout differs");
        if c_code == 0 {
            let mut j = args.clone();
            j.push("--json");
            let (code, json) = our_run(&sim, "ibroute", &j);
            assert_eq!(code, 0, "{fabric} {j:?}");
            assert_valid(&schema, &json);
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let n = v["entries"].as_array().unwrap().len();
            let dumped: usize = c_out
                .lines()
                .last()
                .and_then(|l| l.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .expect("a count line");
            assert_eq!(n, dumped, "{fabric} {j:?}: entries");
        }
    }
    // dump_fts and its wrappers: every switch's table, in libibnetdisc's order.
    let mut fts: Vec<(&str, Vec<&str>)> = vec![
        ("dump_fts", vec![]),
        ("dump_fts", vec!["-n"]),
        ("dump_fts", vec!["-M"]),
        ("dump_lfts", vec![]),
        ("dump_mfts", vec!["-n"]),
    ];
    if full {
        fts.extend([
            ("dump_fts", vec!["-a"]),
            ("dump_fts", vec!["-M", "-n", "-a", "0xc000", "0xc003"]),
            ("dump_fts", vec!["1", "0x10"]),
            ("dump_fts", vec!["--node-name-map", &map]),
            ("dump_lfts", vec!["-n", "0", "4"]),
            ("dump_mfts", vec![]),
            ("dump_fts", vec!["-x"]),
        ]);
    }
    let fts_schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("docs/json/dump_fts-v1.schema.json")).unwrap(),
    )
    .unwrap();
    for (tool, args) in &fts {
        let (c_code, c_out) = c_run(&sim, tool, args);
        let (our_code, our_out) = our_run(&sim, tool, args);
        assert_eq!(
            our_code, c_code,
            "{fabric} {tool} {args:?}: exit codes\n{c_out}"
        );
        assert_eq!(our_out, c_out, "{fabric} {tool} {args:?}: stdout differs");
        if args.is_empty() && *tool != "dump_mfts" {
            assert_eq!(
                c_out.matches("Unicast lids [").count(),
                sws.len(),
                "{c_out}"
            );
        }
        if *tool == "dump_fts" && c_code == 0 {
            let mut j = args.clone();
            j.push("--json");
            let (code, json) = our_run(&sim, tool, &j);
            assert_eq!(code, 0, "{fabric} {j:?}");
            assert_valid(&fts_schema, &json);
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let tables = v["tables"].as_array().unwrap();
            assert_eq!(
                tables.len(),
                sws.len(),
                "{fabric} {j:?}: one table per switch"
            );
            for t in tables {
                assert_valid(&schema, &t.to_string());
            }
        }
    }

    // From a switch (the netfile's first): the switch's own table by `-D 0`, and every table
    // with the local switch's route `0`.
    let net = std::fs::read_to_string(fabrics_dir().join(fabric)).unwrap();
    let local_sw = net
        .lines()
        .find(|l| l.starts_with("Switch"))
        .and_then(|l| l.split('"').nth(1))
        .unwrap()
        .to_string();
    for (tool, args) in [
        ("ibroute", vec!["-D", "0"]),
        ("ibroute", vec!["-M", "-D", "0"]),
        ("dump_fts", vec!["-n"]),
        ("ibtracert", vec![ca.as_str(), sw2.as_str()]),
    ] {
        let c = run(sim
            .umad2sim_command(tool)
            .env("SIM_HOST", &local_sw)
            .args(&args));
        let ours = run(native(&sim, &umad())
            .env("UMAD_IBSIM_NODE", &local_sw)
            .arg(tool)
            .args(&args));
        assert_eq!(
            c.status.code(),
            Some(0),
            "{fabric} {tool} {args:?} from {local_sw}"
        );
        assert_eq!(
            (ours.status.code(), String::from_utf8_lossy(&ours.stdout)),
            (c.status.code(), String::from_utf8_lossy(&c.stdout)),
            "{fabric} {tool} {args:?} from {local_sw}"
        );
    }

    // Through links named after the tools.
    for (tool, args) in [
        ("ibroute", vec![sw.as_str()]),
        ("dump_lfts", vec![]),
        ("dump_mfts", vec![]),
    ] {
        let link = sim.workdir().join(tool);
        if !link.exists() {
            std::os::unix::fs::symlink(umad(), &link).unwrap();
        }
        let out = run(native(&sim, &link).args(&args));
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned()
            ),
            (Some(c_run(&sim, tool, &args).0), c_run(&sim, tool, &args).1),
            "{fabric}: {tool} through a link"
        );
    }

    // A real table: the first switch routes to every CA LID.
    let (_, lft) = our_run(&sim, "ibroute", &[&sw]);
    for l in &cas {
        let hex = format!("0x{:04x} ", l.parse::<u32>().unwrap());
        assert!(lft.contains(&hex), "{fabric}: LID {l} not routed\n{lft}");
    }
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
