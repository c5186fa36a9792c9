//! `umad ibnetdiscover --diff --json` (this crate's structured report) against live ibsim
//! fabrics that changed after the topology was saved (C's text form: ibsim_cdiff.rs): a link unlinked with ibsim's console (a host cut off; one of two parallel
//! links), and a node added and a link slowed down (ibsim restarted on an edited netfile).

mod common;

use common::{assert_valid, diff_schema, ours};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// Saves the live topology as ibnetdiscover text and as JSON; returns both paths.
fn save(sim: &Ibsim, dir: &std::path::Path, stem: &str) -> (String, String) {
    let text = dir.join(format!("{stem}.topo"));
    let json = dir.join(format!("{stem}.json"));
    let (code, _) = ours(sim, &[text.to_str().unwrap()]);
    assert_eq!(code, 0);
    let (code, _) = ours(sim, &["--json", json.to_str().unwrap()]);
    assert_eq!(code, 0);
    (
        text.to_str().unwrap().to_string(),
        json.to_str().unwrap().to_string(),
    )
}

fn changes_of(json: &str) -> serde_json::Value {
    assert_valid(&diff_schema(), json);
    serde_json::from_str(json).unwrap()
}

#[test]
fn diff_finds_an_unlinked_host() {
    if !require_ibsim("umad_cli::diff_finds_an_unlinked_host") {
        return;
    }
    let sim = Ibsim::builder(fabrics_dir().join("example.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let dir = ibsim_harness::TempDir::new("umad-cli-diff-unlink").unwrap();
    let (text, json) = save(&sim, dir.path(), "before");
    for saved in [&text, &json] {
        let (code, out) = ours(&sim, &["--diff", saved]);
        assert_eq!((code, out.as_str()), (0, ""), "unchanged fabric vs {saved}");
        let (code, out) = ours(&sim, &["--diff", saved, "--json"]);
        assert_eq!(code, 0, "unchanged fabric vs {saved}: {out}");
        assert_eq!(changes_of(&out)["same"], true);
    }

    sim.console("Unlink \"H-host3\"[1]").expect("unlink");
    for saved in [&text, &json] {
        let (code, out) = ours(&sim, &["--diff", saved, "--json"]);
        assert_eq!(code, 1, "{out}");
        let d = changes_of(&out);
        let removed = d["nodes_removed"].as_array().unwrap();
        assert_eq!(removed.len(), 1, "{out}");
        assert_eq!(removed[0]["guid"], "0x0000000000100005");
        assert_eq!(removed[0]["description"], "host3 HCA-1");
        let links = d["links_removed"].as_array().unwrap();
        assert_eq!(links.len(), 1, "{out}");
        assert_eq!(
            (&links[0]["a"]["guid"], &links[0]["a"]["port"]),
            (&"0x0000000000100005".into(), &1.into())
        );
        assert_eq!(
            (&links[0]["b"]["guid"], &links[0]["b"]["port"]),
            (&"0x0000000000200001".into(), &1.into())
        );
        assert_eq!(
            (&links[0]["width"], &links[0]["speed"]),
            (&"4X".into(), &"QDR".into())
        );
        assert!(d["nodes_added"].as_array().unwrap().is_empty(), "{out}");
        assert!(d["links_added"].as_array().unwrap().is_empty(), "{out}");
    }
    // The JSON topology knows port states: sw2's port 1 went down.
    let (code, out) = ours(&sim, &["--diff", &json, "--json"]);
    assert_eq!(code, 1);
    let d = changes_of(&out);
    assert_eq!(d["same"], false);
    assert_eq!(d["nodes_removed"].as_array().unwrap().len(), 1);
    assert_eq!(d["links_removed"].as_array().unwrap().len(), 1);
    let state = d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "state" && c["port"] == 1)
        .unwrap_or_else(|| panic!("no state change in {out}"));
    assert_eq!(state["node"]["guid"], "0x0000000000200001");
    assert_eq!(
        (&state["old"], &state["new"]),
        (&"Active".into(), &"Down".into())
    );
    // Only switches and links: the vanished CA is not reported, its link is (one end is a
    // switch).
    let (code, out) = ours(&sim, &["--diff", &json, "--diffcheck", "sw,port", "--json"]);
    assert_eq!(code, 1);
    let d = changes_of(&out);
    assert!(d["nodes_removed"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(d["links_removed"].as_array().unwrap().len(), 1, "{out}");
    // Relinked and swept again: the same fabric as saved.
    sim.console("ReLink \"H-host3\"[1]").expect("relink");
    sim.run_sm_once().expect("opensm sweeps");
    let (code, out) = ours(&sim, &["--diff", &json, "--json"]);
    assert_eq!(code, 0, "{out}");
    // A new LID on host3's port (ibsim's Baselid): exactly that change, against text and JSON.
    sim.console("Baselid \"H-host3\"[1] 42").expect("baselid");
    for saved in [&text, &json] {
        let (code, out) = ours(&sim, &["--diff", saved, "--json"]);
        assert_eq!(code, 1, "{out}");
        let d = changes_of(&out);
        let changes = d["changes"].as_array().unwrap();
        assert_eq!(changes.len(), 1, "{out}");
        assert_eq!(changes[0]["node"]["guid"], "0x0000000000100005");
        assert_eq!(changes[0]["port"], 1);
        assert_eq!(changes[0]["field"], "lid");
        assert_eq!(changes[0]["new"], "42");
        assert_ne!(changes[0]["old"], "42");
        // Without the lid check it is the same fabric.
        let (code, out) = ours(
            &sim,
            &[
                "--diff",
                saved,
                "--diffcheck",
                "port,state,width,speed,nodedesc",
                "--json",
            ],
        );
        assert_eq!(code, 0, "against {saved}: {out}");
        assert_eq!(changes_of(&out)["same"], true);
    }
}

#[test]
fn diff_finds_one_of_two_parallel_links_unlinked() {
    if !require_ibsim("umad_cli::diff_finds_one_of_two_parallel_links_unlinked") {
        return;
    }
    let sim = Ibsim::builder(fabrics_dir().join("mixed.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let dir = ibsim_harness::TempDir::new("umad-cli-diff-parallel").unwrap();
    let (_, json) = save(&sim, dir.path(), "before");
    sim.console("Unlink \"S-left\"[10]").expect("unlink");
    let (code, out) = ours(&sim, &["--diff", &json, "--json"]);
    assert_eq!(code, 1, "{out}");
    let d = changes_of(&out);
    assert!(d["nodes_removed"].as_array().unwrap().is_empty(), "{out}");
    assert!(d["nodes_added"].as_array().unwrap().is_empty(), "{out}");
    assert!(d["links_added"].as_array().unwrap().is_empty(), "{out}");
    let removed = d["links_removed"].as_array().unwrap();
    assert_eq!(removed.len(), 1, "{out}");
    assert_eq!(removed[0]["a"]["guid"], "0x0000000000200000");
    assert_eq!(removed[0]["a"]["port"], 10);
    assert_eq!(removed[0]["b"]["guid"], "0x0000000000200001");
    assert_eq!(removed[0]["b"]["port"], 10);
    assert_eq!(removed[0]["width"], "4X");
    assert_eq!(removed[0]["speed"], "EDR");
    // Both ends of the cut link are down now; the parallel 12X link is untouched.
    let changes = d["changes"].as_array().unwrap();
    for guid in ["0x0000000000200000", "0x0000000000200001"] {
        assert!(
            changes.iter().any(|c| c["node"]["guid"] == guid
                && c["port"] == 10
                && c["field"] == "state"
                && c["new"] == "Down"),
            "{guid} port 10 not down in {out}"
        );
    }
    assert!(!changes.iter().any(|c| c["port"] == 11), "{out}");
}

#[test]
fn diff_finds_an_added_node() {
    if !require_ibsim("umad_cli::diff_finds_an_added_node") {
        return;
    }
    let dir = ibsim_harness::TempDir::new("umad-cli-diff-added").unwrap();
    let (text, json) = {
        let sim = Ibsim::start(fabrics_dir().join("example.net")).expect("ibsim starts");
        sim.run_sm_once().expect("opensm sweeps");
        save(&sim, dir.path(), "before")
    };
    // example.net plus H-host5 on S-sw2 port 3, listed from both ends.
    let net = std::fs::read_to_string(fabrics_dir().join("example.net")).unwrap();
    let sw2 = "[2]\t\"H-host4\"[1]\t\t# \"host4 HCA-1\" lid 0 4xQDR\n";
    assert!(net.contains(sw2));
    let grown = net.replace(
        sw2,
        &format!("{sw2}[3]\t\"H-host5\"[1]\t\t# \"host5 HCA-1\" lid 0 4xDDR\n"),
    ) + "\nHca\t1 \"H-host5\"\t\t# \"host5 HCA-1\"\n\
         [1]\t\"S-sw2\"[3]\t\t# lid 0 lmc 0 \"sw2\" lid 0 4xDDR\n";
    // ... and host4's cable (both ends) down to 1X SDR.
    let h4_ca = "[1]\t\"S-sw2\"[2]\t\t# lid 0 lmc 0 \"sw2\" lid 0 4xQDR\n";
    let h4_sw = "[2]\t\"H-host4\"[1]\t\t# \"host4 HCA-1\" lid 0 4xQDR\n";
    assert!(grown.contains(h4_ca) && grown.contains(h4_sw));
    let grown = grown
        .replace(h4_ca, &h4_ca.replace("4xQDR", "1xSDR"))
        .replace(h4_sw, &h4_sw.replace("4xQDR", "1xSDR"));
    let grown_path = dir.path().join("example-plus-one.net");
    std::fs::write(&grown_path, grown).unwrap();
    let sim = Ibsim::start(&grown_path).expect("ibsim starts on the grown netfile");
    sim.run_sm_once().expect("opensm sweeps");
    // CA GUIDs follow file order: host4 took 0x100007/8, so host5 is 0x100009.
    for saved in [&text, &json] {
        let (code, out) = ours(&sim, &["--diff", saved, "--diffcheck", "port", "--json"]);
        assert_eq!(code, 1, "{out}");
        let d = changes_of(&out);
        let added = d["nodes_added"].as_array().unwrap();
        assert_eq!(added.len(), 1, "against {saved}: {out}");
        assert_eq!(
            (
                &added[0]["guid"],
                &added[0]["description"],
                &added[0]["num_ports"]
            ),
            (
                &"0x0000000000100009".into(),
                &"host5 HCA-1".into(),
                &1.into()
            )
        );
        let links = d["links_added"].as_array().unwrap();
        assert_eq!(links.len(), 1, "against {saved}: {out}");
        assert_eq!(
            (&links[0]["a"]["guid"], &links[0]["a"]["port"]),
            (&"0x0000000000100009".into(), &1.into())
        );
        assert_eq!(
            (&links[0]["b"]["guid"], &links[0]["b"]["port"]),
            (&"0x0000000000200001".into(), &3.into())
        );
        assert_eq!(
            (&links[0]["width"], &links[0]["speed"]),
            (&"4X".into(), &"DDR".into())
        );
        assert!(
            d["changes"].as_array().unwrap().is_empty(),
            "port only: {out}"
        );
        assert!(d["nodes_removed"].as_array().unwrap().is_empty(), "{out}");
        assert!(d["links_removed"].as_array().unwrap().is_empty(), "{out}");
    }
    let (code, out) = ours(&sim, &["--diff", &json, "--json"]);
    assert_eq!(code, 1);
    let d = changes_of(&out);
    assert_eq!(d["nodes_added"][0]["guid"], "0x0000000000100009");
    assert!(d["nodes_removed"].as_array().unwrap().is_empty());
    // host4's link is 1X SDR now, seen from both ends.
    let changes = d["changes"].as_array().unwrap();
    for (guid, port) in [("0x0000000000100007", 1), ("0x0000000000200001", 2)] {
        for (field, old, new) in [("width", "4X", "1X"), ("speed", "QDR", "SDR")] {
            assert!(
                changes.iter().any(|c| c["node"]["guid"] == guid
                    && c["port"] == port
                    && c["field"] == field
                    && c["old"] == old
                    && c["new"] == new),
                "{guid} port {port} {field} {old} -> {new} missing in {out}"
            );
        }
    }
    // sw2's port 3 came up.
    assert!(
        d["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["port"] == 3
                && c["field"] == "state"
                && c["old"] == "Down"
                && c["new"] == "Active"),
        "{out}"
    );
}
