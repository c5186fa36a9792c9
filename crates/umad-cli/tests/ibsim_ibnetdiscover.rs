//! `umad ibnetdiscover` against C `ibnetdiscover` on live ibsim fabrics: the same stdout byte
//! for byte (only the date line masked) and the same exit code, for every output mode, on
//! `example.net`, `fattree-1008.net` and `mixed.net` after one opensm sweep. C runs under
//! umad2sim, ours natively (`UMAD_IBSIM`); both attach at the netfile's default port.

mod common;

use std::path::Path;

use common::{assert_valid, c_tool, mask_date, native, ours, run, topology_schema, umad};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// A node name map valid on all three fabrics (0x100000, 0x100002 and 0x200000 exist in each),
/// with the reader's quirks: an unquoted name with a trailing space, a duplicate GUID (the
/// first wins), comments, a GUID in decimal.
const NODE_NAME_MAP: &str = "# test map\n\
    0x100000 \"first-hca\" # comment\n\
    0x200000 spine or leaf \n\
    1048578 \"decimal two\"\n\
    0x100000 \"ignored duplicate\"\n";

fn compare_all_modes(fabric: &str) {
    let sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let map = sim.workdir().join("node-name-map");
    std::fs::write(&map, NODE_NAME_MAP).unwrap();
    let map = map.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &[],
        &["-p"],
        &["-s"],
        &["-H"],
        &["-S"],
        &["-R"],
        &["-l"],
        &["-g"],
        &["-f"],
        &["-m"],
        &["--node-name-map", map],
        &["-p", "--node-name-map", map],
        &["-l", "--node-name-map", map],
        &["-o", "1"],
        &["-o", "64", "-f", "-s"],
        &["-S", "-H"],
        &["-o", "0"],
        // An unreadable map: a warning on stderr, output as without one.
        &["--node-name-map", "/nonexistent/map"],
        // Not options of infiniband-diags 44's ibnetdiscover: both exit 2.
        &["-G"],
        &["-u"],
    ];
    for args in cases {
        let (c_code, c_out) = c_tool(&sim, args);
        let (our_code, our_out) = ours(&sim, args);
        assert_eq!(our_code, c_code, "{fabric} {args:?}: exit codes");
        assert_eq!(
            mask_date(&our_out),
            mask_date(&c_out),
            "{fabric} {args:?}: stdout differs"
        );
        // Every mode prints something on these fabrics, except -R (no routers); -G/-u fail.
        let expect_ok = !matches!(args.first(), Some(&"-G" | &"-u"));
        if args.contains(&"/nonexistent/map") {
            assert_eq!(mask_date(&our_out), mask_date(&c_tool(&sim, &[]).1));
        }
        assert_eq!(c_code == 0, expect_ok, "{fabric} {args:?}: C exit {c_code}");
        assert_eq!(
            c_out.is_empty(),
            *args == ["-R"] || !expect_ok,
            "{fabric} {args:?}"
        );
        if c_code == 0 && args.is_empty() {
            assert!(c_out.contains("# Topology file: generated on "));
            assert!(our_out.contains("# Topology file: generated on "));
        }
    }

    // Nothing on stderr when it is not a terminal: no progress line, no warnings.
    let out = run(native(&sim, &umad()).arg("ibnetdiscover"));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The positional output file, and a link named ibnetdiscover.
    let (_, c_out) = c_tool(&sim, &[]);
    let file = sim.workdir().join("ours.topo");
    let (code, stdout) = ours(&sim, &[file.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(
        mask_date(&std::fs::read_to_string(&file).unwrap()),
        mask_date(&c_out)
    );
    // -s with an output file: the records on stdout, the topology in the file; -p always on
    // stdout.
    for args in [&["-s"][..], &["-p"], &["-l", "-s"]] {
        let c_file = sim.workdir().join("c-out.topo");
        let our_file = sim.workdir().join("our-out.topo");
        let _ = std::fs::remove_file(&c_file);
        let mut c_args = args.to_vec();
        c_args.push(c_file.to_str().unwrap());
        let mut our_args = args.to_vec();
        our_args.push(our_file.to_str().unwrap());
        let (c_code, c_stdout) = c_tool(&sim, &c_args);
        let (our_code, our_stdout) = ours(&sim, &our_args);
        assert_eq!((our_code, c_code), (0, 0), "{fabric} {args:?} to a file");
        assert_eq!(our_stdout, c_stdout, "{fabric} {args:?} to a file: stdout");
        assert_eq!(
            mask_date(&std::fs::read_to_string(&our_file).unwrap()),
            mask_date(&std::fs::read_to_string(&c_file).unwrap()),
            "{fabric} {args:?} to a file: the file"
        );
    }
    let link = sim.workdir().join("ibnetdiscover");
    std::os::unix::fs::symlink(umad(), &link).unwrap();
    let out = run(&mut native(&sim, Path::new(&link)));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        mask_date(&String::from_utf8_lossy(&out.stdout)),
        mask_date(&c_out),
        "{fabric}: through the link"
    );

    // --json of the live fabric: valid, and the same topology as C's text.
    let (code, json) = ours(&sim, &["--json"]);
    assert_eq!(code, 0);
    assert_valid(&topology_schema(), &json);
    let from_json = ibfabric::Fabric::from_json(&json).unwrap();
    let from_c = ibfabric::Fabric::parse_ibnetdiscover(&c_out).unwrap();
    let d = ibfabric::diff::diff(&from_c, &from_json, ibfabric::diff::Checks::ALL);
    assert!(d.is_empty(), "{fabric}: JSON vs C text:\n{}", d.to_text());
    // The JSON keeps everything every mode prints: loaded back, each mode matches C again
    // (with -s recorded into it by `--json -s`).
    let saved_json = sim.workdir().join("live.json");
    let (code, _) = ours(&sim, &["--json", "-s", saved_json.to_str().unwrap()]);
    assert_eq!(code, 0);
    let load = saved_json.to_str().unwrap();
    for args in [
        &[][..],
        &["-p"],
        &["-s"],
        &["-l"],
        &["-H"],
        &["-S"],
        &["-g"],
        &["-f"],
        &["-m"],
        &["--node-name-map", map],
    ] {
        let (_, c_mode) = c_tool(&sim, args);
        let mut from_json = vec!["--load-cache", load];
        from_json.extend_from_slice(args);
        let (code, our_mode) = ours(&sim, &from_json);
        assert_eq!(code, 0);
        assert_eq!(
            mask_date(&our_mode),
            mask_date(&c_mode),
            "{fabric} {args:?} from the saved JSON"
        );
    }
    // And a saved C topology diffs clean against the live fabric.
    let saved = sim.workdir().join("c.topo");
    std::fs::write(&saved, &c_out).unwrap();
    let (code, out) = ours(&sim, &["--diff", saved.to_str().unwrap()]);
    assert_eq!(code, 0, "{fabric}: --diff against C's own output:\n{out}");
    assert!(out.is_empty());
}

#[test]
fn ibnetdiscover_matches_c_on_example() {
    if !require_ibsim("umad_cli::ibnetdiscover_matches_c_on_example") {
        return;
    }
    compare_all_modes("example.net");
}

#[test]
fn ibnetdiscover_matches_c_on_fattree() {
    if !require_ibsim("umad_cli::ibnetdiscover_matches_c_on_fattree") {
        return;
    }
    compare_all_modes("fattree-1008.net");
}

#[test]
fn ibnetdiscover_matches_c_on_mixed() {
    if !require_ibsim("umad_cli::ibnetdiscover_matches_c_on_mixed") {
        return;
    }
    compare_all_modes("mixed.net");
}

/// The progress line appears on a terminal only (run under `script`, which gives the tool a
/// pseudo-terminal; bsdutils, essential on Debian), and is erased before the output.
#[test]
fn progress_only_on_a_terminal() {
    if !require_ibsim("umad_cli::progress_only_on_a_terminal") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("example.net")).expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let script = ibsim_harness::find_tool("script").expect("script(1) from bsdutils");
    let cmd = format!("{} ibnetdiscover -S", umad().display());
    let out = run(native(&sim, &script).args(["-qec", &cmd, "/dev/null"]));
    assert_eq!(out.status.code(), Some(0));
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("discovering: "), "{tty:?}");
    assert!(tty.contains("\r\x1b[K"), "{tty:?}");
    // The last thing on the terminal is the switch list, after the line was cleared.
    let (_, listed) = c_tool(&sim, &["-S"]);
    let after = tty.rsplit("\r\x1b[K").next().unwrap().replace("\r\n", "\n");
    assert_eq!(after, listed);
    // Off a terminal: not a byte of it.
    let out = run(native(&sim, &umad()).args(["ibnetdiscover", "-S"]));
    assert!(out.stderr.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stdout), listed);
}

/// The fabric stops answering in the middle of a walk (ibsim stopped with SIGSTOP): the
/// tool ends within about one request budget (`-t 100`, 3 retries: 400 ms) instead of
/// timing out every SMP left one window at a time, prints what it found, says on stderr
/// that the topology is partial, and exits 3, not 0.
#[test]
fn a_fabric_that_stops_answering_ends_fast_with_exit_3() {
    if !require_ibsim("umad_cli::a_fabric_that_stops_answering_ends_fast_with_exit_3") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join("fattree-1008.net")).expect("ibsim starts");
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &sim.pid().to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill {sig}");
    };
    // One SMP in flight makes the walk long enough to be stopped in the middle; the delay
    // shrinks until a stop lands inside it.
    // Not sooner than 8 ms: a stop inside the CONNECT exchange would be another test.
    for delay_ms in [60, 30, 15, 8] {
        let child = native(&sim, &umad())
            .args(["ibnetdiscover", "-o", "1", "-t", "100"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn umad");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        signal("-STOP");
        let stopped = std::time::Instant::now();
        let out = child.wait_with_output().expect("wait");
        let took = stopped.elapsed();
        signal("-CONT");
        let code = out.status.code();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if code == Some(0) {
            eprintln!("finished before the stop at {delay_ms} ms; again sooner");
            continue;
        }
        assert_eq!(code, Some(3), "stderr: {stderr}");
        assert!(
            stderr.contains("the fabric stopped answering") && stderr.contains("partial"),
            "{stderr}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("# Topology file"),
            "the partial topology is printed"
        );
        assert!(
            took < std::time::Duration::from_millis(2_000),
            "ended {took:?} after the stop (budget 400 ms)"
        );
        eprintln!("stopped at {delay_ms} ms: ended {took:?} later, exit 3");
        return;
    }
    panic!("the walk always ended before ibsim was stopped");
}
