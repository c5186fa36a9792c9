//! The `umad` binary without a fabric: dispatch, options, exit codes, the JSON schema, and
//! `--diff` between saved topologies (`--load-cache`).

mod common;

use std::process::Command;

use common::{assert_valid, diff_schema, run, small_fabric, topology_schema, umad};
use ibsim_harness::TempDir;

fn code(out: &std::process::Output) -> i32 {
    out.status.code().expect("exited")
}

#[test]
fn umad_help_lists_the_tools() {
    let out = run(Command::new(umad()).arg("--help"));
    assert_eq!(code(&out), 0);
    let text = String::from_utf8(out.stdout).unwrap();
    for tool in umad_cli::TOOLS {
        assert!(text.contains(tool.name), "{text}");
    }
    // `umad help <tool>` is the tool's -h: usage on stderr, exit 2 as C.
    let out = run(Command::new(umad()).args(["help", "ibnetdiscover"]));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: ibnetdiscover"));
    let out = run(&mut Command::new(umad()));
    assert_eq!(code(&out), 2, "no tool: usage");
    let out = run(Command::new(umad()).arg("nosuchtool"));
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tool"));
}

#[test]
fn exit_codes_as_c() {
    // -h: usage on stderr, exit 2 (ibdiag_show_usage); -V: exit 0.
    let out = run(Command::new(umad()).args(["ibnetdiscover", "-h"]));
    assert_eq!(code(&out), 2);
    let help = String::from_utf8(out.stderr).unwrap();
    for flag in [
        "--full",
        "--show",
        "--list",
        "--grouping",
        "--Hca_list",
        "--Switch_list",
        "--Router_list",
        "--node-name-map",
        "--cache",
        "--load-cache",
        "--diff",
        "--diffcheck",
        "--ports",
        "--max_hops",
        "--outstanding_smps",
        "--config",
        "--Ca",
        "--Port",
        "--timeout",
        "--m_key",
        "--errors",
        "--verbose",
        "--debug",
        "--help",
        "--version",
        "--json",
    ] {
        assert!(help.contains(flag), "{flag} missing from\n{help}");
    }
    assert!(out.stdout.is_empty());
    let out = run(Command::new(umad()).args(["ibnetdiscover", "-V"]));
    assert_eq!(code(&out), 0);
    // Options C's ibnetdiscover does not take: -G, -D, -L, -K, -u, an unknown long one.
    for bad in ["-G", "-D", "-L", "-K", "-u", "--bogus"] {
        let out = run(Command::new(umad()).args(["ibnetdiscover", bad]));
        assert_eq!(code(&out), 2, "{bad}");
    }
    // Malformed values are usage errors, not silently 0.
    for args in [&["-o", "x"][..], &["-P", "1k"], &["--diffcheck", "sw,nope"]] {
        let out = run(Command::new(umad()).arg("ibnetdiscover").args(args));
        assert_eq!(code(&out), 2, "{args:?}");
    }
    // Arguments that are not UTF-8: a usage error, not a panic.
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"\xff\xfe");
        let out = run(Command::new(umad()).arg(bad));
        assert_eq!(code(&out), 2);
        let out = run(Command::new(umad()).args([
            "ibnetdiscover".as_ref(),
            std::ffi::OsStr::new("-C"),
            bad,
        ]));
        assert_eq!(code(&out), 2);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
    // -t must be a positive integer: C's IBEXIT, 255.
    let out = run(Command::new(umad()).args(["ibnetdiscover", "-t", "0"]));
    assert_eq!(code(&out), 255);
    // No such CA (and no ibsim): the port can't be opened, 255 and C's texts (libibmad's
    // and libibnetdisc's warnings on stderr, the IBEXIT on stdout); our reason with -v.
    let out = run(Command::new(umad())
        .args(["ibnetdiscover", "-C", "no-such-ca"])
        .env_remove("UMAD_IBSIM"));
    assert_eq!(code(&out), 255);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("] mad_rpc_open_port: can't open UMAD port (no-such-ca:0)\n"),
        "{err}"
    );
    assert!(
        err.ends_with("./libibnetdisc/ibnetdisc.c:802; can't open MAD port (no-such-ca:0)\n"),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ibnetdiscover: iberror: failed: discover failed\n\n"
    );
    let out = run(Command::new(umad())
        .args(["ibnetdiscover", "-v", "-C", "no-such-ca"])
        .env_remove("UMAD_IBSIM"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("can't open port no-such-ca:0"));
    // A missing saved topology is a failure (255), before any discovery.
    let out = run(Command::new(umad()).args(["ibnetdiscover", "--load-cache", "/nonexistent/x"]));
    assert_eq!(code(&out), 255);
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x"));
    // Neither text nor JSON (say, C's binary cache), or text that is not a topology: 255,
    // with the file named.
    let dir = TempDir::new("umad-cli-bad").unwrap();
    for (name, bytes) in [
        ("binary", &b"\x00\xff\xfe cache"[..]),
        ("garbage", b"Switch\t8 \"S-00\"\n[1] nonsense\n"),
        ("badjson", b"{\"schema_version\": 1, \"fabric\": 3}"),
        ("newer", b"{\"schema_version\": 2, \"fabric\": {}}"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        for opt in ["--load-cache", "--diff"] {
            let out = run(Command::new(umad())
                .args(["ibnetdiscover", opt])
                .arg(&p)
                .env_remove("UMAD_IBSIM"));
            assert_eq!(code(&out), 255, "{name} {opt}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(name), "{name} {opt}: {err}");
            assert!(out.stdout.is_empty());
        }
    }
}

#[test]
fn json_validates_against_the_schema_and_round_trips() {
    let dir = TempDir::new("umad-cli-json").unwrap();
    let f = small_fabric();
    let saved = dir.path().join("fabric.json");
    std::fs::write(&saved, f.to_json()).unwrap();
    let out = run(Command::new(umad())
        .args(["ibnetdiscover", "--json", "--load-cache"])
        .arg(&saved));
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let json = String::from_utf8(out.stdout).unwrap();
    assert_valid(&topology_schema(), &json);
    assert_eq!(ibfabric::Fabric::from_json(&json).unwrap(), f);
    // The positional output file gets the same document; --cache an ibnetdisc cache file
    // that loads back to the same topology.
    let file = dir.path().join("out.json");
    let cache = dir.path().join("fabric.cache");
    let out = run(Command::new(umad())
        .args(["ibnetdiscover", "--json", "--load-cache"])
        .arg(&saved)
        .arg("--cache")
        .arg(&cache)
        .arg(&file));
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), json);
    let bytes = std::fs::read(&cache).unwrap();
    assert!(ibfabric::cache::is_cache(&bytes));
    let loaded = ibfabric::Fabric::from_ibnetdisc_cache(&bytes).unwrap();
    assert_eq!(loaded.links(), f.links());
    let text = |p: &std::path::Path| {
        let out = run(Command::new(umad())
            .args(["ibnetdiscover", "--load-cache"])
            .arg(p));
        assert_eq!(code(&out), 0);
        common::mask_date(&String::from_utf8(out.stdout).unwrap())
    };
    assert_eq!(text(&cache), text(&saved));
}

#[test]
fn schema_rejects_what_the_reader_rejects() {
    let schema = topology_schema();
    let good: serde_json::Value = serde_json::from_str(&small_fabric().to_json()).unwrap();
    assert!(common::schema::validate(&schema, &good).is_empty());
    let mutate = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        f(&mut v);
        common::schema::validate(&schema, &v)
    };
    assert!(!mutate(&|v| v["schema_version"] = 2.into()).is_empty());
    assert!(!mutate(&|v| v["fabric"]["nodes"][0]["guid"] = "0x200".into()).is_empty());
    assert!(!mutate(&|v| v["fabric"]["nodes"][0]["node_type"] = "Hub".into()).is_empty());
    assert!(!mutate(&|v| v["fabric"]["nodes"][0]["bogus"] = 1.into()).is_empty());
    assert!(!mutate(&|v| v["fabric"]["nodes"][1]["ports"][0]["width"] = 256.into()).is_empty());
    assert!(!mutate(&|v| v["fabric"]["nodes"][1]["path"]["path"] = "1,2".into()).is_empty());
    let errs = mutate(&|v| {
        v["fabric"]["nodes"][1]
            .as_object_mut()
            .unwrap()
            .remove("description");
    });
    assert!(errs.iter().any(|e| e.contains("description")), "{errs:?}");
}

#[test]
fn diff_between_saved_topologies() {
    let dir = TempDir::new("umad-cli-diff").unwrap();
    let old = small_fabric();
    let mut new = small_fabric();
    // host1 (0x20) unplugged: its link and node are gone, the switch port is down.
    let sw_port = new.nodes[0].port_mut(2).unwrap();
    sw_port.remote = None;
    sw_port.state = ibmad::PortState::Down;
    new.nodes.remove(2);
    new.validate().unwrap();
    let (a, b) = (dir.path().join("old.json"), dir.path().join("new.json"));
    std::fs::write(&a, old.to_json()).unwrap();
    std::fs::write(&b, new.to_json()).unwrap();
    let diff = |x: &std::path::Path, y: &std::path::Path, extra: &[&str]| {
        run(Command::new(umad())
            .args(["ibnetdiscover", "--diff"])
            .arg(x)
            .arg("--load-cache")
            .arg(y)
            .args(extra))
    };
    let same = diff(&a, &a, &[]);
    assert_eq!(code(&same), 0);
    assert!(same.stdout.is_empty());
    // C's text: the switch's header, its port to host1 from the saved side, host1's
    // section from the saved side; exit 0 as C.
    let out = diff(&a, &b, &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\nswitchguid=0x200("), "{text}");
    assert!(
        text.contains("\n< [2]\t\"H-0000000000000020\"[1]"),
        "{text}"
    );
    assert!(text.contains("\n< caguid=0x20\n< Ca\t"), "{text}");
    assert!(!text.contains("\n> "), "{text}");
    let out = diff(&b, &a, &[]);
    assert_eq!(code(&out), 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\n> [2]\t\"H-0000000000000020\"[1]"),
        "{text}"
    );
    assert!(text.contains("\n> caguid=0x20\n> Ca\t"), "{text}");
    let out = diff(&b, &a, &["--json"]);
    assert_eq!(code(&out), 1);
    let json = String::from_utf8(out.stdout).unwrap();
    assert_valid(&diff_schema(), &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["same"], false);
    assert_eq!(v["nodes_added"][0]["guid"], "0x0000000000000020");
    assert_eq!(v["links_added"].as_array().unwrap().len(), 1);
    let out = diff(&a, &a, &["--json"]);
    assert_eq!(code(&out), 0);
    assert_valid(&diff_schema(), &String::from_utf8(out.stdout).unwrap());
    // With a node name map the text names nodes by it; the JSON keeps descriptions.
    let map = dir.path().join("map");
    std::fs::write(&map, "0x200 \"core-1\"\n").unwrap();
    let out = diff(&a, &b, &["--node-name-map", map.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# \"core-1\" enhanced port 0"), "{text}");
    let out = diff(
        &a,
        &b,
        &["--json", "--node-name-map", map.to_str().unwrap()],
    );
    assert!(!String::from_utf8(out.stdout).unwrap().contains("core-1"));
    // Only switch LIDs: nothing differs.
    let out = diff(&a, &b, &["--diffcheck", "sw,lid"]);
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b""[..]));
    // No node type: nothing is compared (C's reading of the keys); --json compares all.
    let out = diff(&a, &b, &["--diffcheck", "port"]);
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b""[..]));
    assert_eq!(code(&diff(&a, &b, &["--diffcheck", "port", "--json"])), 1);
    // An unknown key is a usage error.
    assert_eq!(code(&diff(&a, &b, &["--diffcheck", "sw,bogus"])), 2);
}

#[test]
fn called_through_a_link_named_ibnetdiscover() {
    let dir = TempDir::new("umad-cli-link").unwrap();
    let link = dir.path().join("ibnetdiscover");
    std::os::unix::fs::symlink(umad(), &link).unwrap();
    let out = run(Command::new(&link).arg("-h"));
    assert_eq!(code(&out), 2);
    let help = String::from_utf8(out.stderr).unwrap();
    assert!(help.contains("Usage: ibnetdiscover"), "{help}");
    let saved = dir.path().join("f.json");
    std::fs::write(&saved, small_fabric().to_json()).unwrap();
    let out = run(Command::new(&link)
        .arg("--json")
        .arg("--load-cache")
        .arg(&saved));
    assert_eq!(code(&out), 0);
    assert_valid(&topology_schema(), &String::from_utf8(out.stdout).unwrap());
}

#[test]
fn text_round_trips_through_the_model_and_json() {
    let dir = TempDir::new("umad-cli-text").unwrap();
    for fabric in ["example", "fattree-1008"] {
        for (case, flag) in [
            ("default", None),
            ("full", Some("-f")),
            ("grouping", Some("-g")),
        ] {
            let fixture = common::c_fixture(&format!("{fabric}.{case}.txt"));
            let c_text = std::fs::read_to_string(&fixture).unwrap();
            // text -> model -> text, through the binary.
            let out = run(Command::new(umad())
                .arg("ibnetdiscover")
                .args(flag)
                .arg("--load-cache")
                .arg(&fixture));
            assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
            let ours = String::from_utf8(out.stdout).unwrap();
            assert_eq!(
                common::mask_date(&ours),
                common::mask_date(&c_text),
                "{fabric} {case}"
            );
            assert!(ours.contains("# Topology file: generated on "));
            // text -> JSON -> model -> text.
            let json = dir.path().join(format!("{fabric}.{case}.json"));
            let out = run(Command::new(umad())
                .args(["ibnetdiscover", "--json", "--load-cache"])
                .arg(&fixture)
                .arg(&json));
            assert_eq!(code(&out), 0);
            assert_valid(&topology_schema(), &std::fs::read_to_string(&json).unwrap());
            let out = run(Command::new(umad())
                .arg("ibnetdiscover")
                .args(flag)
                .arg("--load-cache")
                .arg(&json));
            assert_eq!(code(&out), 0);
            assert_eq!(
                common::mask_date(&String::from_utf8(out.stdout).unwrap()),
                common::mask_date(&c_text),
                "{fabric} {case} via JSON"
            );
            // A topology compared with itself, text against JSON: no differences.
            let out = run(Command::new(umad())
                .arg("ibnetdiscover")
                .arg("--diff")
                .arg(&fixture)
                .arg("--load-cache")
                .arg(&json));
            assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stdout));
        }
    }
}

#[test]
fn schema_checker_patterns() {
    assert!(common::schema::pattern_matches(
        "^0x[0-9a-f]{16}$",
        "0x0000000000200001"
    ));
    assert!(!common::schema::pattern_matches(
        "^0x[0-9a-f]{16}$",
        "0x000000000020000"
    ));
    assert!(!common::schema::pattern_matches(
        "^0x[0-9a-f]{16}$",
        "0x0000000000200001a"
    ));
    assert!(common::schema::pattern_matches("^0(,[0-9]+)*$", "0"));
    assert!(common::schema::pattern_matches("^0(,[0-9]+)*$", "0,1,8,12"));
    assert!(!common::schema::pattern_matches("^0(,[0-9]+)*$", "0,1,"));
    assert!(!common::schema::pattern_matches("^0(,[0-9]+)*$", "1,2"));
    assert!(common::schema::pattern_matches("b+", "abbbc"));
}
