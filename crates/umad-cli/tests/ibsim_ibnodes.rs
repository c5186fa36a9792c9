//! `umad ibswitches`, `ibhosts`, `ibrouters`, `ibnodes` against infiniband-diags' scripts of
//! those names (which run C `ibnetdiscover` under umad2sim) on live ibsim fabrics
//! (example.net, fattree-1008.net, mixed.net after one opensm sweep): the same stdout byte
//! for byte and the same exit status for discovery with every option the scripts pass on
//! (`-C`, `-P`, `-t`, `-y` and their long forms), for a saved topology file (C's own
//! `ibnetdiscover` output, and a file of odd lines that shows the awk rules' corners), for
//! missing files and for every usage error. `--json` validates against
//! docs/json/ibnodes-v1.schema.json and lists the nodes the text shows.

mod common;

use std::path::Path;

use common::{assert_valid, native, repo_root, run, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

const TOOLS: &[&str] = &["ibswitches", "ibhosts", "ibrouters", "ibnodes"];

/// Lines that exercise the scripts' awk rules: no `#`, no `port 0`, "port 0" inside a
/// description, a short GUID, a router, backslashes (dash's echo interprets them), lines
/// starting with `ib` and lines holding ibwarn/iberror (printed twice when they hold both).
const ODD_TOPOLOGY: &str = "Switch\n\
Ca 1\n\
Switch 3 \"S-abc\" # port 0 lid 1\n\
Switch\t8 \"S-0000000000200001\"\t\t# \"my port 0 base port 0 x\" base port 0 lid 3 lmc 0\n\
Switch\t8 \"S-0000000000200002\"\t\t# \"plain\" enhanced port 0 lid 4 lmc 1\n\
ibfoo bar\n\
x ibwarn: iberror: y\n\
Ca\t1 \"H-0000000000100007\"\t\t#\t  \"h\\\\tx\"\n\
Ca\t1 \"H-0000000000100008\"\t\t# \"stop\\\\c here\"\n\
Rt 2 \"R-1234567890123456789\" # \"r\"\n\
\n\n";

fn c_tool(sim: &Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(sim.umad2sim_command(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn ours(sim: &Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad()).arg(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn compare_on(fabric: &str) {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let topo = sim.workdir().join("c.topo");
    let (code, text) = c_tool(&sim, "ibnetdiscover", &[]);
    assert_eq!(code, 0);
    std::fs::write(&topo, &text).unwrap();
    let odd = sim.workdir().join("odd.topo");
    std::fs::write(&odd, ODD_TOPOLOGY).unwrap();
    let topo = topo.to_str().unwrap();
    let odd = odd.to_str().unwrap();
    let two = format!("{topo} {odd}");
    let with_missing = format!("{odd} /nonexistent/file");
    // Discoveries.
    let mut cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-C", "ibsim0", "-P", "1", "-t", "1000", "-y", "0"],
        vec![
            "--Ca",
            "ibsim0",
            "--Port",
            "1",
            "--timeout",
            "500",
            "--m_key",
            "0",
        ],
        vec!["-t", "200"],
        // ibnetdiscover's own usage failures: its iberror line on stdout, exit 255.
        vec!["-t", "0"],
        vec!["-t", "x"],
        vec!["-y", "x"],
    ];
    cases.extend([
        vec![topo],
        vec![odd],
        vec![&two],
        vec!["/nonexistent/file"],
        vec![&with_missing],
        vec![odd, "", "-x"],
        // Usage errors: the usage line, exit 255.
        vec!["-h"],
        vec!["--help"],
        vec!["-x"],
        vec!["--json-not"],
        vec!["-P"],
        vec!["-P", "-1"],
        vec!["-C", ""],
        vec!["-y"],
        vec!["-y", "-5"],
        vec![topo, odd],
        vec!["-t", "100", topo, "extra"],
    ]);
    let mut nonempty = 0;
    for tool in TOOLS {
        for args in &cases {
            let (c_code, c_out) = c_tool(&sim, tool, args);
            let (our_code, our_out) = ours(&sim, tool, args);
            assert_eq!(
                our_code, c_code,
                "{fabric}: {tool} {args:?}: exit codes\n{c_out}"
            );
            assert_eq!(our_out, c_out, "{fabric}: {tool} {args:?}: stdout differs");
            if c_code == 0 && !c_out.is_empty() {
                nonempty += 1;
            }
        }
        // A CA or port that does not exist: both fail with ibnetdiscover's status and its
        // iberror line (C's reason is "discover failed", ours says which port).
        for args in [&["-C", "nosuch"][..], &["-P", "9"]] {
            let (c_code, c_out) = c_tool(&sim, tool, args);
            let (our_code, our_out) = ours(&sim, tool, args);
            assert_eq!((our_code, c_code), (255, 255), "{fabric}: {tool} {args:?}");
            let prefix = "/usr/sbin/ibnetdiscover: iberror: failed: ";
            assert_eq!(c_out.lines().count(), our_out.lines().count(), "{our_out}");
            assert!(c_out
                .lines()
                .chain(our_out.lines())
                .all(|l| l.starts_with(prefix)));
        }
    }
    assert!(
        nonempty >= 20,
        "{fabric}: only {nonempty} outputs with nodes"
    );

    // The discovered lists hold every node of the topology.
    let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    let (_, sw) = ours(&sim, "ibswitches", &[]);
    assert_eq!(sw.lines().count(), count("Switch\t"), "{sw}");
    let (_, hosts) = ours(&sim, "ibhosts", &[]);
    assert_eq!(hosts.lines().count(), count("Ca\t"), "{hosts}");
    let (_, all) = ours(&sim, "ibnodes", &[]);
    assert_eq!(all, hosts.clone() + &sw);

    // --json: valid, one node per line of the text.
    let p = repo_root().join("docs/json/ibnodes-v1.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    for (tool, expect) in [("ibswitches", &sw), ("ibhosts", &hosts), ("ibnodes", &all)] {
        let (code, out) = ours(&sim, tool, &["--json"]);
        assert_eq!(code, 0, "{tool} --json: {out}");
        assert_valid(&schema, &out);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let texts: Vec<String> = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| format!("{}\n", n["text"].as_str().unwrap()))
            .collect();
        assert_eq!(&texts.concat(), expect, "{fabric}: {tool} --json");
    }
    let (code, out) = ours(&sim, "ibswitches", &["--json", odd]);
    assert_eq!(code, 0);
    assert_valid(&schema, &out);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!doc["messages"].as_array().unwrap().is_empty());
    let plain = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["description"] == "plain")
        .expect("the switch named plain");
    assert_eq!(plain["port0"], "enhanced");
    assert_eq!(plain["lid"], 4);
    assert_eq!(plain["lmc"], 1);
    assert_eq!(plain["guid"], "0x0000000000200002");

    // Through links named after the tools.
    let dir = sim.new_scratch_dir("links").unwrap();
    for tool in TOOLS {
        let link = dir.join(tool);
        std::os::unix::fs::symlink(umad(), &link).unwrap();
        let out = run(native(&sim, Path::new(&link)).arg(odd));
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            c_tool(&sim, tool, &[odd]).1,
            "{tool} through a link"
        );
    }
}

#[test]
fn node_lists_match_c_on_example() {
    if !require_ibsim("umad_cli::node_lists_match_c_on_example") {
        return;
    }
    compare_on("example.net");
}

#[test]
fn node_lists_match_c_on_fattree() {
    if !require_ibsim("umad_cli::node_lists_match_c_on_fattree") {
        return;
    }
    compare_on("fattree-1008.net");
}

#[test]
fn node_lists_match_c_on_mixed() {
    if !require_ibsim("umad_cli::node_lists_match_c_on_mixed") {
        return;
    }
    compare_on("mixed.net");
}
