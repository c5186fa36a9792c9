//! The drop-in over the native ibsim transport: C programs run unchanged on our
//! `libibumad.so.3` with `UMAD_IBSIM=<socket>` (and `UMAD_IBSIM_NODE=<node>`) in their
//! environment and **no LD_PRELOAD** — no umad2sim, no fake sysfs, every port a native ibsim
//! connection (see COMPATIBILITY.md, "Over the MAD layer").
//!
//! * Enumeration and `ibstat` print what the system library prints under umad2sim on the
//!   same fabric (CA `ibsim0`, the attach port, `umad0`), on an HCA and on a switch.
//! * opensm on the drop-in, attached natively to one node, brings `fabrics/example.net` up:
//!   every port ACTIVE as `ibstat`, `sminfo` and `ibnetdiscover` on the drop-in see it from the
//!   other nodes; its SA answers `saquery`; it exits by itself on SIGTERM, gives up being the SM
//!   and frees its ibsim slots. Then the 1052-node `fabrics/fattree-1008.net`.
//! * Its SA answers whole tables through RMPP, which the user-space MAD layer brings on both
//!   ends (ibsim carries only 256-byte packets): `saquery`'s NodeRecords, LinkRecords,
//!   SwitchInfoRecords and PortInfoRecords are exactly the tables the topology `ibnetdiscover`
//!   reports implies (the rules: `compat::fabric`), on both fabrics, while the system library
//!   under umad2sim gets only what fits in one MAD; under 5 % packet loss every `saquery` is
//!   whole or fails with an error, never partial; and a Rust `umad::Port` GetTable gets every
//!   NodeRecord.
//! * Programs that serve requests (`ibping -S`, `ibsysstat -S`) answer their clients from
//!   other nodes, and opensm's own SA test client `osmtest` passes its inventory, validation
//!   and QoS flows against opensm on the drop-in. A second opensm of higher priority takes
//!   mastership over by handover, the first stands by and takes over when the master stops.
//!   A switch's link-state trap makes opensm on the drop-in sweep.
//!
//! Every run proves through the loader's `LD_DEBUG=libs` output that it initialised our
//! library and nothing of umad2sim. ibsim has 10 client slots per instance: every client here
//! exits normally, and each test owns its instances.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use compat::drop_in::{
    check_loaded, lids_by_description, loaded_libibumad, mask_number_after, mask_run_to_run,
    run_opensm_once, start_opensm_daemon,
};
use compat::fabric::{
    dumps_of, parse_dumps, saquery_link_records, saquery_node_records, saquery_port_info_records,
    saquery_switch_lids, table_diff, Dump, LinkKey, NodeRecordKey, PortKey, Topology,
};
use compat::{compile_c, line_diff, require_drop_in, run_program, Library, Transcript};
use ibmad::sa::{
    LinkRecord, NodeRecord, PortInfoRecord, SaMad, SaRecord, SaStatus, SwitchInfoRecord,
    SA_CLASS_VERSION, SA_DATA_LEN,
};
use ibsim_harness::{
    example_fabric, fabrics_dir, find_tool, netfile_switches, require_ibsim, run_with_timeout,
    Ibsim,
};

/// The drop-in's directory when test `name` can run: ibsim installed (required under CI)
/// and the drop-in built.
fn can_run(name: &str) -> Option<PathBuf> {
    if !require_ibsim(&format!("compat::ibsim_native::{name}")) {
        return None;
    }
    require_drop_in(name)
}

/// The variables that select ibsim for the drop-in.
const ENV_SOCKET: &str = "UMAD_IBSIM";
const ENV_NODE: &str = "UMAD_IBSIM_NODE";
/// Where the SM sits on the example fabric (its default attach point).
const SM_NODE: &str = "H-host1";
/// Another node, from which the tools look at the fabric.
const TOOL_NODE: &str = "H-host3";
/// Time limit of one tool run.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Time a resident opensm gets to log `SUBNET UP`.
const SM_TIMEOUT: Duration = Duration::from_secs(120);
/// Prefix of the `LD_DEBUG_OUTPUT` files in a client's scratch directory.
const LD_DEBUG_FILE: &str = "ld-debug";

fn fattree() -> PathBuf {
    fabrics_dir().join("fattree-1008.net")
}

/// `program` as a native client of `sim` on the drop-in in `dir`, attached to `node`: a fresh
/// scratch cwd, `UMAD_IBSIM`/`UMAD_IBSIM_NODE` set, LD_PRELOAD (and umad2sim's own variables)
/// removed, `LD_LIBRARY_PATH=<dir>`, `LD_DEBUG=libs` into the scratch directory.
fn native_command(sim: &Ibsim, dir: &Path, program: &str, node: &str) -> (Command, PathBuf) {
    let scratch = sim.new_scratch_dir("native").expect("scratch directory");
    let path = find_tool(program).unwrap_or_else(|| PathBuf::from(program));
    let mut cmd = Command::new(path);
    cmd.current_dir(&scratch)
        .env(ENV_SOCKET, sim.socket_name())
        .env(ENV_NODE, node)
        .env_remove("LD_PRELOAD")
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .env("LD_DEBUG", "libs")
        .env("LD_DEBUG_OUTPUT", scratch.join(LD_DEBUG_FILE))
        .stdin(Stdio::null());
    Library::DropIn(dir.to_path_buf()).apply(&mut cmd);
    (cmd, scratch)
}

/// Whether any process that ran in `scratch` loaded something of umad2sim (from its
/// `LD_DEBUG=libs` output).
fn loaded_umad2sim(scratch: &Path) -> bool {
    std::fs::read_dir(scratch)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(LD_DEBUG_FILE))
        .any(|e| {
            String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default())
                .contains("umad2sim")
        })
}

/// One finished native run.
#[derive(Debug)]
struct Run {
    command: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(&self) -> bool {
        self.status.success()
    }

    fn describe(&self) -> String {
        format!(
            "[ours, native] `{}` exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.status.code(),
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

/// Checks that the processes that ran in `scratch` loaded our library and no umad2sim.
fn check_native_libraries(dir: &Path, scratch: &Path, what: &str) {
    let ours = Library::DropIn(dir.to_path_buf());
    if let Err(e) = check_loaded(&ours, &loaded_libibumad(scratch)) {
        panic!("{what}: {e}");
    }
    assert!(
        !loaded_umad2sim(scratch),
        "{what}: umad2sim was loaded (LD_PRELOAD must not be set)"
    );
}

/// Runs `program args…` natively on the drop-in at `node` and checks which libraries it
/// loaded. A non-zero exit is not an error.
fn run_native<S: AsRef<OsStr>>(
    sim: &Ibsim,
    dir: &Path,
    node: &str,
    program: &str,
    args: &[S],
) -> Run {
    let (mut cmd, scratch) = native_command(sim, dir, program, node);
    cmd.args(args);
    let command = std::iter::once(program.to_owned())
        .chain(
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT)
        .unwrap_or_else(|e| panic!("`{command}` natively at {node}: {e}"));
    check_native_libraries(dir, &scratch, &command);
    Run {
        command,
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Like [`run_native`], and the run must succeed.
fn run_native_ok(sim: &Ibsim, dir: &Path, node: &str, program: &str, args: &[&str]) -> Run {
    let run = run_native(sim, dir, node, program, args);
    assert!(run.ok(), "{}", run.describe());
    run
}

/// The same program on the system library under umad2sim (`SIM_HOST=node`), for reference.
fn umad2sim_command(sim: &Ibsim, program: &OsStr, node: &str) -> Command {
    let mut cmd = sim.umad2sim_command(program);
    cmd.env("SIM_HOST", node)
        .env_remove(ENV_SOCKET)
        .env_remove(ENV_NODE);
    cmd
}

/// A resident opensm on the drop-in, attached natively to a node (`-d2`: the log is flushed
/// after every message). Stopped with SIGTERM by [`stop`](Self::stop) or on drop, always
/// before the [`Ibsim`] it borrows.
struct NativeOpensm<'a> {
    child: Option<Child>,
    scratch: PathBuf,
    dir: PathBuf,
    _sim: &'a Ibsim,
}

impl<'a> NativeOpensm<'a> {
    /// Starts opensm at `node` and waits for `SUBNET UP`.
    fn start(sim: &'a Ibsim, dir: &Path, node: &str) -> NativeOpensm<'a> {
        Self::start_with(sim, dir, node, &[])
    }

    /// Like [`start`](Self::start), with extra opensm arguments (e.g. `-s 0`: no resweeps).
    fn start_with(sim: &'a Ibsim, dir: &Path, node: &str, args: &[&str]) -> NativeOpensm<'a> {
        let (mut cmd, scratch) = native_command(sim, dir, "opensm", node);
        let out = std::fs::File::create(scratch.join("opensm.out")).expect("opensm.out");
        cmd.env("OSM_TMP_DIR", &scratch)
            .env("OSM_CACHE_DIR", &scratch)
            .args(args)
            .arg("-d2")
            .arg("-f")
            .arg(scratch.join("opensm.log"))
            .stdout(Stdio::from(out.try_clone().expect("opensm.out")))
            .stderr(Stdio::from(out));
        let mut sm = NativeOpensm {
            child: Some(cmd.spawn().expect("spawn opensm")),
            scratch,
            dir: dir.to_path_buf(),
            _sim: sim,
        };
        let deadline = Instant::now() + SM_TIMEOUT;
        while !sm.log().contains("SUBNET UP") {
            let exited = sm.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                panic!(
                    "opensm on the drop-in exited ({status}) before SUBNET UP\n{}",
                    sm.diagnostics()
                );
            }
            if Instant::now() >= deadline {
                let diag = sm.diagnostics();
                let _ = sm.stop();
                panic!("opensm on the drop-in: no SUBNET UP within {SM_TIMEOUT:?}\n{diag}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        check_native_libraries(&sm.dir, &sm.scratch, "resident opensm");
        sm
    }

    fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(self.scratch.join("opensm.log")).unwrap_or_default())
            .into_owned()
    }

    fn diagnostics(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- opensm output ---\n{}\n--- opensm.log (tail) ---\n{}",
            String::from_utf8_lossy(
                &std::fs::read(self.scratch.join("opensm.out")).unwrap_or_default()
            )
            .trim_end(),
            lines[lines.len().saturating_sub(30)..].join("\n")
        )
    }

    /// SIGTERM, then SIGKILL after 10 s; the exit status (`None` if already stopped).
    fn stop(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.take().map(terminate).transpose()
    }
}

/// Ends `child`: SIGTERM, then SIGKILL after 10 s; its exit status.
fn terminate(mut child: Child) -> io::Result<ExitStatus> {
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    // By pid, our own unreaped child: it cannot have been recycled.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait()
}

impl Drop for NativeOpensm<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("ibsim_native: stopping opensm: {e}");
        }
    }
}

/// The fabric as a native `ibnetdiscover` at `node` reports it.
fn topology(sim: &Ibsim, dir: &Path, node: &str) -> Topology {
    let run = run_native_ok(sim, dir, node, "ibnetdiscover", &[]);
    Topology::parse(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.describe()))
}

/// LIDs by node description, from a native `ibnetdiscover` at `node`.
fn discover(sim: &Ibsim, dir: &Path, node: &str) -> BTreeMap<String, u16> {
    topology(sim, dir, node).lids_by_description()
}

/// Normalises what legitimately differs between a umad2sim run of the system library and a
/// native run of ours: umad2sim's own `sim_connect` line; port ids (umad2sim's fake
/// descriptors from 1024, real descriptors natively); and the `errno` left after successful
/// enumeration calls (C's failing read of umad2sim's missing `link_layer` file leaves
/// `ENOENT`; natively nothing is read, so it stays `0` or untouched). Every other `errno` is
/// compared.
fn normalise(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("sim_connect: attached as client"))
        .map(|l| {
            let l = mask_number_after(&mask_number_after(l, " fd ", "<fd>"), "fd(fd) = ", "<fd>");
            let l = if l.starts_with("umad_open_port(") {
                mask_number_after(&l, ") = ", "<fd>")
            } else {
                l
            };
            l.replace(" errno=2(ENOENT)", " errno=<sysfs>")
                .replace(" errno=0", " errno=<sysfs>")
                .replace(" errno=untouched", " errno=<sysfs>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Enumeration of the simulated CA (names, port GUIDs, the full `umad_ca_t`/`umad_port_t`,
/// port resolution with its `mthca0` fallback, the device list and its sort), function by
/// function: the system library under umad2sim and ours natively print the same, attached to
/// an HCA and to a switch. `umad_get_issm_path` is the documented exception (`/dev/null`).
#[test]
fn enumeration_matches_umad2sim() {
    const NAME: &str = "enumeration_matches_umad2sim";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let bin = compile_c("umad_calls.c", env!("CARGO_TARGET_TMPDIR")).expect("umad_calls");
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    sim.run_sm_once().expect("opensm -o");
    let sections = [
        "init",
        "cas",
        "portguids",
        "ca",
        "port",
        "devlist",
        "sort",
        "debug",
    ];
    let mut report = String::new();
    for node in [SM_NODE, TOOL_NODE, "S-sw1"] {
        let mut sys_cmd = umad2sim_command(&sim, bin.as_os_str(), node);
        sys_cmd.args(sections);
        let system: Transcript = run_program(sys_cmd, &Library::System).expect("system run");
        let (mut ours_cmd, scratch) = native_command(&sim, &dir, &bin.to_string_lossy(), node);
        ours_cmd.args(sections);
        let ours = run_program(ours_cmd, &Library::DropIn(dir.clone())).expect("native run");
        check_native_libraries(&dir, &scratch, "umad_calls");
        for t in [&system, &ours] {
            if let Err(e) = t.verify() {
                report += &format!("{node}: {e}\n");
            }
        }
        if let Some(d) = line_diff(
            &normalise(&system.text),
            &normalise(&ours.text),
            "system under umad2sim",
            "ours natively",
        ) {
            report += &format!("attached to {node}:\n{d}\n");
        }
        // The expected values, so that equal transcripts are not equally wrong.
        let want = if node == "S-sw1" {
            "node_type=2 numports=0"
        } else {
            "node_type=1 numports=1"
        };
        if !ours.text.contains(want) || !ours.text.contains("name=\"ibsim0\"") {
            report += &format!("{node}: ours lacks {want:?} / ibsim0\n{}\n", ours.text);
        }
    }
    // The issm path: a path whose open succeeds (IsSM follows the server agents instead).
    let (mut cmd, _) = native_command(&sim, &dir, &bin.to_string_lossy(), SM_NODE);
    cmd.arg("issm");
    let ours = run_program(cmd, &Library::DropIn(dir.clone())).expect("native run");
    for want in [
        "umad_get_issm_path(NULL, 0, path, 64) = 0",
        "path=\"/dev/null\\x00",
        "umad_get_issm_path(NULL, 2, path, 64) = -22",
    ] {
        if !ours.text.contains(want) {
            report += &format!("issm section lacks {want:?}:\n{}\n", ours.text);
        }
    }
    assert!(report.is_empty(), "{NAME}:\n{report}");
}

/// `ibstat` (also `-l`, `-p`, `-s`, `ibsim0 1`) on ours natively prints exactly what it prints
/// on the system library under umad2sim, at an HCA and at a switch.
#[test]
fn ibstat_matches_umad2sim() {
    const NAME: &str = "ibstat_matches_umad2sim";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    sim.run_sm_once().expect("opensm -o");
    let ibstat = find_tool("ibstat").expect("ibstat (infiniband-diags)");
    let mut report = String::new();
    for node in [SM_NODE, TOOL_NODE, "S-sw2"] {
        for args in [
            &[][..],
            &["-l"],
            &["-p"],
            &["-s"],
            &["ibsim0"],
            &["nosuchca"],
        ] {
            let mut sys_cmd = umad2sim_command(&sim, ibstat.as_os_str(), node);
            sys_cmd.args(args);
            let sys = run_with_timeout(&mut sys_cmd, TOOL_TIMEOUT).expect("ibstat on system");
            let ours = run_native(&sim, &dir, node, "ibstat", args);
            let sys_out = mask_run_to_run(&String::from_utf8_lossy(&sys.stdout));
            let sys_err = normalise(&mask_run_to_run(&String::from_utf8_lossy(&sys.stderr)));
            let what = format!("`ibstat {}` at {node}", args.join(" "));
            if sys.status.code() != ours.status.code() {
                report += &format!(
                    "{what}: exit system {:?}, ours {:?}\n",
                    sys.status.code(),
                    ours.status.code()
                );
            }
            if let Some(d) = line_diff(&sys_out, &mask_run_to_run(&ours.stdout), "system", "ours") {
                report += &format!("{what} stdout:\n{d}\n");
            }
            if let Some(d) = line_diff(
                &sys_err,
                &normalise(&mask_run_to_run(&ours.stderr)),
                "system",
                "ours",
            ) {
                report += &format!("{what} stderr:\n{d}\n");
            }
        }
    }
    assert!(report.is_empty(), "{NAME}:\n{report}");
}

/// opensm on the drop-in at `H-host1` brings the example fabric up, seen natively from the
/// other nodes: every linked port Active with a LID, the SM's LID everywhere, `sminfo`
/// MASTER, `ibnetdiscover` all 6 nodes, `saquery <lid>` the NodeRecord of every node. On
/// SIGTERM it exits by itself (its receiver thread is cancelled in `umad_recv`), the port
/// stops being the SM port and its ibsim slot is free again.
#[test]
fn opensm_on_the_drop_in_serves_the_example_fabric() {
    const NAME: &str = "opensm_on_the_drop_in_serves_the_example_fabric";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let mut sm = NativeOpensm::start(&sim, &dir, SM_NODE);
    let lids = discover(&sim, &dir, TOOL_NODE);
    assert_eq!(lids.len(), 6, "ibnetdiscover from {TOOL_NODE}: {lids:?}");
    assert!(lids.values().all(|&l| l != 0), "{lids:?}");
    let sm_lid = lids["host1 HCA-1"];
    // Every node with a link, as its own port sees it (the dead port of H-host2 is port 2).
    for node in ["H-host1", "H-host2", "H-host3", "H-host4", "S-sw1", "S-sw2"] {
        let run = run_native_ok(&sim, &dir, node, "ibstat", &[]);
        assert!(
            run.stdout.contains("State: Active")
                && run.stdout.contains(&format!("SM lid: {sm_lid}\n")),
            "{node}: {}",
            run.describe()
        );
    }
    let run = run_native_ok(&sim, &dir, TOOL_NODE, "sminfo", &[]);
    assert!(
        run.stdout.contains(&format!("sm lid {sm_lid} ")) && run.stdout.contains("SMINFO_MASTER"),
        "{}",
        run.describe()
    );
    // Every link Active/LinkUp from the far side of the fabric.
    // (5 links, each listed from both ends; unconnected switch ports show an empty peer.)
    let run = run_native_ok(&sim, &dir, "H-host4", "iblinkinfo", &[]);
    let linked: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("==(") && !l.contains("[  ] \"\""))
        .collect();
    assert!(
        linked.len() == 10 && linked.iter().all(|l| l.contains("Active/  LinkUp")),
        "{}",
        run.describe()
    );
    // The SA answers single-record queries for every node.
    for (desc, lid) in &lids {
        let run = run_native_ok(&sim, &dir, TOOL_NODE, "saquery", &[&lid.to_string()]);
        assert!(
            run.stdout
                .contains(&format!("NodeDescription.........{desc}")),
            "{}",
            run.describe()
        );
    }
    let log = sm.log();
    assert!(
        !log.contains("ERR 5431"),
        "opensm could not open the issm path:\n{log}"
    );
    let status = sm.stop().expect("stop opensm");
    assert!(
        status.is_some_and(|s| s.code().is_some()),
        "opensm on the drop-in did not exit by itself on SIGTERM: {status:?}"
    );
    // Not the SM any more: nobody answers SMInfo.
    let run = run_native(&sim, &dir, TOOL_NODE, "sminfo", &[] as &[&str]);
    assert!(!run.stdout.contains("SMINFO_MASTER"), "{}", run.describe());
    // Every client disconnected (ibsim has 10 slots): twelve more clients in a row attach.
    for i in 0..12 {
        let run = run_native(&sim, &dir, SM_NODE, "ibstat", &[] as &[&str]);
        assert!(run.ok(), "client {i} after opensm: {}", run.describe());
    }
    assert!(sim.is_running(), "ibsim died");
}

/// opensm on the drop-in brings up the 1052-node fat tree: from the far end (`H-host1008`)
/// `ibnetdiscover` finds all 1008 HCAs and 44 switches with LIDs, the port is Active with the
/// SM's LID, and `sminfo` finds the MASTER.
#[test]
fn opensm_on_the_drop_in_brings_up_fattree_1008() {
    const NAME: &str = "opensm_on_the_drop_in_brings_up_fattree_1008";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(fattree()).expect("ibsim");
    let mut sm = NativeOpensm::start(&sim, &dir, "H-host0001");
    let lids = discover(&sim, &dir, "H-host1008");
    assert_eq!(lids.len(), 1052, "nodes with a LID");
    assert!(lids.values().all(|&l| l != 0));
    let sm_lid = lids["host0001 HCA-1"];
    let run = run_native_ok(&sim, &dir, "H-host1008", "ibstat", &[]);
    assert!(
        run.stdout.contains("State: Active") && run.stdout.contains(&format!("SM lid: {sm_lid}\n")),
        "{}",
        run.describe()
    );
    let run = run_native_ok(&sim, &dir, "H-host0500", "sminfo", &[]);
    assert!(run.stdout.contains("SMINFO_MASTER"), "{}", run.describe());
    // The same fabric as opensm -o on the system library under umad2sim configures it.
    let reference = Ibsim::start(fattree()).expect("reference ibsim");
    let once = run_opensm_once(&reference, &Library::System).expect("opensm -o on the system");
    assert!(once.stdout.contains("SUBNET UP"), "{}", once.describe());
    let mut cmd = umad2sim_command(&reference, OsStr::new("ibnetdiscover"), "H-host1008");
    Library::System.apply(&mut cmd);
    let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT).expect("reference ibnetdiscover");
    let reference_lids = lids_by_description(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        lids, reference_lids,
        "LIDs by node: opensm on ours natively vs opensm -o on the system library under umad2sim"
    );
    let status = sm.stop().expect("stop opensm");
    assert!(
        status.is_some_and(|s| s.code().is_some()),
        "opensm did not exit by itself: {status:?}"
    );
}

/// A fabric of the SA tests: its netfile, where the SM and the tools attach, and the size of
/// each SA table ([`Table::ALL`] order) its netfile implies, so that a topology that lost
/// nodes cannot make the comparison vacuous.
struct Fabric {
    net: PathBuf,
    sm_node: &'static str,
    tool_node: &'static str,
    table_sizes: [usize; 4],
}

impl Fabric {
    /// 4 HCAs + 2 switches; 5 links; 2 × 9 switch ports + 4 linked HCA ports (H-host2's
    /// port 2 is dead).
    fn example() -> Fabric {
        Fabric {
            net: example_fabric(),
            sm_node: SM_NODE,
            tool_node: TOOL_NODE,
            table_sizes: [6, 10, 2, 22],
        }
    }

    /// 1008 HCAs + 36 leaves + 8 spines; 1008 host links + 36 × 8 leaf–spine links;
    /// 44 × 37 switch ports + 1008 HCA ports. The tools run at the far end from the SM.
    fn fattree() -> Fabric {
        Fabric {
            net: fattree(),
            sm_node: "H-host0001",
            tool_node: "H-host1008",
            table_sizes: [1052, 2 * (1008 + 36 * 8), 44, 44 * 37 + 1008],
        }
    }

    fn name(&self) -> String {
        self.net
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// The SA tables these tests query with `saquery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Node,
    Link,
    SwitchInfo,
    PortInfo,
}

impl Table {
    const ALL: [Table; 4] = [Table::Node, Table::Link, Table::SwitchInfo, Table::PortInfo];

    /// The `saquery` arguments that dump the whole table.
    fn args(self) -> &'static [&'static str] {
        match self {
            Table::Node => &[],
            Table::Link => &["-x"],
            Table::SwitchInfo => &["SWIR"],
            Table::PortInfo => &["PIR"],
        }
    }

    /// The `<kind> dump:` of its records.
    fn kind(self) -> &'static str {
        match self {
            Table::Node => "NodeRecord",
            Table::Link => "LinkRecord",
            Table::SwitchInfo => "SwitchInfoRecord",
            Table::PortInfo => "PortInfoRecord",
        }
    }

    /// How many of its records one MAD carries (200 bytes of SA data, each record padded to
    /// 8 bytes): all a client gets when nothing reassembles RMPP.
    fn per_mad(self) -> usize {
        let offset = match self {
            Table::Node => NodeRecord::ATTR_OFFSET,
            Table::Link => LinkRecord::ATTR_OFFSET,
            Table::SwitchInfo => SwitchInfoRecord::ATTR_OFFSET,
            Table::PortInfo => PortInfoRecord::ATTR_OFFSET,
        };
        SA_DATA_LEN / (8 * usize::from(offset))
    }

    fn command(self) -> String {
        std::iter::once("saquery")
            .chain(self.args().iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The SA tables the topology implies.
struct Expected {
    nodes: BTreeSet<NodeRecordKey>,
    links: BTreeSet<LinkKey>,
    switches: BTreeSet<u16>,
    ports: BTreeSet<PortKey>,
}

impl Expected {
    /// The tables of `topology`, whose sizes must be `fabric`'s.
    fn of(topology: &Topology, fabric: &Fabric) -> Expected {
        fn ok<T>(fabric: &Fabric, r: Result<T, String>) -> T {
            r.unwrap_or_else(|e| panic!("{}: {e}", fabric.name()))
        }
        let expected = Expected {
            nodes: ok(fabric, topology.node_records()),
            links: ok(fabric, topology.link_records()),
            switches: ok(fabric, topology.switch_lids()),
            ports: ok(fabric, topology.port_info_records()),
        };
        let sizes = Table::ALL.map(|t| expected.len(t));
        assert_eq!(
            sizes,
            fabric.table_sizes,
            "{}: table sizes from ibnetdiscover vs the netfile",
            fabric.name()
        );
        expected
    }

    fn len(&self, table: Table) -> usize {
        match table {
            Table::Node => self.nodes.len(),
            Table::Link => self.links.len(),
            Table::SwitchInfo => self.switches.len(),
            Table::PortInfo => self.ports.len(),
        }
    }

    /// Whether the records of `table` in `dumps` are exactly the expected ones.
    fn check(&self, table: Table, dumps: &[Dump]) -> Result<(), String> {
        let diff = match table {
            Table::Node => table_diff(&self.nodes, &saquery_node_records(dumps)?),
            Table::Link => table_diff(&self.links, &saquery_link_records(dumps)?),
            Table::SwitchInfo => table_diff(&self.switches, &saquery_switch_lids(dumps)?),
            Table::PortInfo => table_diff(&self.ports, &saquery_port_info_records(dumps)?),
        };
        diff.map_or(Ok(()), Err)
    }
}

/// opensm on the drop-in at `fabric.sm_node` (with `sm_args`) and the tables the topology
/// implies, from `ibnetdiscover` at the tool node.
fn serve_fabric<'a>(
    sim: &'a Ibsim,
    dir: &Path,
    fabric: &Fabric,
    sm_args: &[&str],
) -> (NativeOpensm<'a>, Expected) {
    let sm = NativeOpensm::start_with(sim, dir, fabric.sm_node, sm_args);
    let topology = topology(sim, dir, fabric.tool_node);
    let expected = Expected::of(&topology, fabric);
    (sm, expected)
}

/// `saquery` of every table on the drop-in, from the far side of opensm on the drop-in: each
/// exactly the table the topology implies. Then, as the reason this exists, the same
/// queries on the system library under umad2sim against opensm on the system library: each
/// table cut to what one 256-byte MAD carries (ibsim's packet size; see rmpp.md).
fn check_saquery_tables(name: &str, fabric: &Fabric) {
    let Some(dir) = can_run(name) else {
        return;
    };
    let mut report = String::new();
    let mut counts = Vec::new();
    let expected = {
        let sim = Ibsim::start(&fabric.net).expect("ibsim");
        let (_sm, expected) = serve_fabric(&sim, &dir, fabric, &[]);
        for table in Table::ALL {
            let started = Instant::now();
            let run = run_native(&sim, &dir, fabric.tool_node, "saquery", table.args());
            let elapsed = started.elapsed();
            let dumps = parse_dumps(&run.stdout);
            if !run.ok() {
                let _ = writeln!(report, "{} failed\n{}", table.command(), run.describe());
            } else if let Err(e) = expected.check(table, &dumps) {
                let _ = writeln!(report, "{}: {e}", table.command());
            }
            counts.push(format!(
                "{} {} in {elapsed:.2?}",
                dumps_of(&dumps, table.kind()).count(),
                table.kind()
            ));
        }
        expected
    };
    eprintln!("{name}: ours natively: {}", counts.join(", "));
    // The system library under umad2sim: nothing segments opensm's answer, the client gets
    // its first MAD. (opensm attaches at the netfile's first port, `fabric.sm_node` here.)
    let reference = Ibsim::start(&fabric.net).expect("reference ibsim");
    let sm = start_opensm_daemon(&reference, &Library::System).expect("opensm on the system");
    check_loaded(&Library::System, &loaded_libibumad(sm.scratch())).expect("system opensm");
    let saquery = find_tool("saquery").expect("saquery (infiniband-diags)");
    let mut truncated = Vec::new();
    for table in Table::ALL {
        let mut cmd = umad2sim_command(&reference, saquery.as_os_str(), fabric.tool_node);
        Library::System.apply(&mut cmd);
        cmd.args(table.args());
        let out = run_with_timeout(&mut cmd, TOOL_TIMEOUT).expect("saquery on the system");
        let got = dumps_of(
            &parse_dumps(&String::from_utf8_lossy(&out.stdout)),
            table.kind(),
        )
        .count();
        let whole = expected.len(table);
        let want = whole.min(table.per_mad());
        if !out.status.success() || got != want {
            let _ = writeln!(
                report,
                "system `{}` under umad2sim: exit {:?}, {got} {} (expected {want} of {whole}: \
                 one MAD's worth)\n{}",
                table.command(),
                out.status.code(),
                table.kind(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        truncated.push(format!("{got} of {whole} {}", table.kind()));
    }
    eprintln!("{name}: system under umad2sim: {}", truncated.join(", "));
    assert!(
        Table::ALL.iter().any(|&t| expected.len(t) > t.per_mad()),
        "{name}: no table of this fabric needs more than one MAD"
    );
    assert!(report.is_empty(), "{name}:\n{report}");
}

/// On `fabrics/example.net` (see [`check_saquery_tables`]): 6 NodeRecords, 10 LinkRecords,
/// 2 SwitchInfoRecords, 22 PortInfoRecords; the system library under umad2sim gets 1
/// NodeRecord and 2 PortInfoRecords (the other two tables fit in one MAD).
#[test]
fn saquery_tables_match_the_topology_on_example_net() {
    check_saquery_tables(
        "saquery_tables_match_the_topology_on_example_net",
        &Fabric::example(),
    );
}

/// On the 1052-node `fabrics/fattree-1008.net` (see [`check_saquery_tables`]): 1052
/// NodeRecords, 2592 LinkRecords, 44 SwitchInfoRecords, 2636 PortInfoRecords; the system
/// library under umad2sim gets 1, 25, 8 and 2 of them.
#[test]
fn saquery_tables_match_the_topology_on_fattree_1008() {
    check_saquery_tables(
        "saquery_tables_match_the_topology_on_fattree_1008",
        &Fabric::fattree(),
    );
}

/// Packet loss injected by ibsim on every port of every switch (a dropped packet goes back
/// to its sender with status 110).
const LOSS_PERCENT: u32 = 5;
/// `saquery -t`: the time one query may take (its default, 1 s, is too short for a table of
/// hundreds of segments with losses to recover from).
const LOSSY_SA_TIMEOUT_MS: &str = "20000";

/// How one `saquery` under loss ended.
#[derive(Debug)]
enum LossyRun {
    Whole(Duration),
    Failed(Duration, String),
}

/// `saquery` of every table, `runs` times each (the four tables side by side), with
/// [`LOSS_PERCENT`] loss on every switch after opensm on the drop-in has brought the fabric
/// up: each run prints the whole table (exactly the topology's) or fails — non-zero exit, an
/// error on stderr and no records; never a partial table, never a hang (every run is under
/// [`TOOL_TIMEOUT`]). opensm runs with `-s 0`: no resweeps, so its tables stay what the
/// topology implies (a sweep under loss could drop nodes whose SMPs are lost). Without loss
/// again, every table is whole at once. Prints how many came whole.
fn check_saquery_under_loss(name: &str, fabric: &Fabric, runs: usize, min_whole: usize) {
    let Some(dir) = can_run(name) else {
        return;
    };
    let sim = Ibsim::builder(&fabric.net)
        .console(true)
        .start()
        .expect("ibsim");
    let (_sm, expected) = serve_fabric(&sim, &dir, fabric, &["-s", "0"]);
    let switches = netfile_switches(&fabric.net).expect("netfile");
    let set_loss = |percent: u32| {
        for s in &switches {
            sim.console(&format!("Error \"{s}\" {percent}"))
                .expect("console");
        }
    };
    set_loss(LOSS_PERCENT);
    let query = |table: Table| -> Result<LossyRun, String> {
        let mut args = vec!["-t", LOSSY_SA_TIMEOUT_MS];
        args.extend(table.args());
        let started = Instant::now();
        let run = run_native(&sim, &dir, fabric.tool_node, "saquery", &args);
        let elapsed = started.elapsed();
        let dumps = parse_dumps(&run.stdout);
        let records = dumps_of(&dumps, table.kind()).count();
        if run.ok() {
            expected
                .check(table, &dumps)
                .map(|()| LossyRun::Whole(elapsed))
                .map_err(|e| format!("exit 0 with a wrong table: {e}\n{}", run.describe()))
        } else if records == 0 && run.stderr.to_lowercase().contains("fail") {
            let error = run.stderr.lines().last().unwrap_or_default().to_owned();
            Ok(LossyRun::Failed(elapsed, error))
        } else {
            Err(format!(
                "failed with {records} records or no error message\n{}",
                run.describe()
            ))
        }
    };
    let outcomes: Vec<(Table, Vec<Result<LossyRun, String>>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = Table::ALL
            .map(|table| scope.spawn(move || (table, (0..runs).map(|_| query(table)).collect())))
            .into_iter()
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("query thread"))
            .collect()
    });
    let mut report = String::new();
    let mut whole = 0;
    for (table, results) in &outcomes {
        let mut line = format!("{}:", table.command());
        for r in results {
            match r {
                Ok(LossyRun::Whole(t)) => {
                    whole += 1;
                    let _ = write!(line, " whole in {t:.1?};");
                }
                Ok(LossyRun::Failed(t, e)) => {
                    let _ = write!(line, " failed in {t:.1?} ({e});");
                }
                Err(e) => {
                    let _ = write!(line, " PARTIAL;");
                    let _ = writeln!(report, "{} under loss: {e}", table.command());
                }
            }
        }
        eprintln!("{name}: {line}");
    }
    eprintln!(
        "{name}: {whole} of {} queries came whole under {LOSS_PERCENT} % loss",
        runs * Table::ALL.len()
    );
    set_loss(0);
    for table in Table::ALL {
        let run = run_native(&sim, &dir, fabric.tool_node, "saquery", table.args());
        if let Err(e) = expected.check(table, &parse_dumps(&run.stdout)) {
            let _ = writeln!(
                report,
                "{} after the loss: {e}\n{}",
                table.command(),
                run.describe()
            );
        }
    }
    assert!(report.is_empty(), "{name}:\n{report}");
    assert!(
        whole >= min_whole,
        "{name}: only {whole} queries came whole under {LOSS_PERCENT} % loss (want {min_whole})"
    );
}

/// On `fabrics/example.net` (see [`check_saquery_under_loss`]): 5 runs of each table.
#[test]
fn saquery_under_loss_is_whole_or_fails_on_example_net() {
    check_saquery_under_loss(
        "saquery_under_loss_is_whole_or_fails_on_example_net",
        &Fabric::example(),
        5,
        10,
    );
}

/// On the 1052-node fat tree (see [`check_saquery_under_loss`]): 2 runs of each table, from
/// the far end (3 lossy switches on the way: ~14 % loss per packet).
#[test]
fn saquery_under_loss_is_whole_or_fails_on_fattree_1008() {
    check_saquery_under_loss(
        "saquery_under_loss_is_whole_or_fails_on_fattree_1008",
        &Fabric::fattree(),
        2,
        1,
    );
}

/// A Rust SA client, `umad::Port` on the native transport at the tool node: GetTable of all
/// NodeRecords (component mask 0) to the SM's LID, QP1, GSI Q_Key, against opensm on the
/// drop-in; the answer is one reassembled GetTableResp whose records all parse and are
/// exactly the topology's, on both fabrics.
#[test]
fn rust_get_table_returns_every_node_record() {
    const NAME: &str = "rust_get_table_returns_every_node_record";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let mut report = String::new();
    for fabric in [Fabric::example(), Fabric::fattree()] {
        let sim = Ibsim::start(&fabric.net).expect("ibsim");
        let (_sm, expected) = serve_fabric(&sim, &dir, &fabric, &[]);
        let opts = umad::IbsimOptions::new(sim.socket_name()).node(fabric.tool_node);
        let port = umad::Port::open_ibsim(&opts).expect("native port");
        let sm_lid = u16::try_from(port.ca().expect("ca").ports[0].sm_lid).expect("sm lid");
        let agent = port
            .register(
                &umad::AgentSpec::new(u8::from(ibmad::MgmtClass::SubnAdm), SA_CLASS_VERSION)
                    .rmpp_version(1),
            )
            .expect("SA agent");
        let request = SaMad::get_table_request(&NodeRecord::default(), 0, 0x5a17);
        let addr = umad::MadAddr::gsi(sm_lid);
        let started = Instant::now();
        let reply = port
            .transact(agent, &request, &addr, 1000, 3)
            .expect("transact");
        let elapsed = started.elapsed();
        let what = format!("{}: GetTable(NodeRecord) to LID {sm_lid}", fabric.name());
        if reply.status != 0 {
            let _ = writeln!(report, "{what}: status {}", reply.status);
            continue;
        }
        let sa = SaMad::new_checked(&reply.mad[..]).expect("SA header");
        let records: Result<Vec<NodeRecord>, _> = sa.parse_records::<NodeRecord>().collect();
        let records = match records {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(report, "{what}: a record does not parse: {e}");
                continue;
            }
        };
        let keys: Vec<NodeRecordKey> = records.iter().map(NodeRecordKey::from).collect();
        eprintln!(
            "{NAME}: {what}: {} records, {} bytes, in {elapsed:.2?}",
            keys.len(),
            reply.mad.len()
        );
        if sa.method() != ibmad::Method::GetTableResp || sa.sa_status() != SaStatus::Success {
            let _ = writeln!(
                report,
                "{what}: {:?} with SA status {}",
                sa.method(),
                sa.sa_status()
            );
        }
        let record_bytes = 8 * usize::from(NodeRecord::ATTR_OFFSET);
        if sa.attr_offset() != NodeRecord::ATTR_OFFSET
            || sa.data().len() != keys.len() * record_bytes
        {
            let _ = writeln!(
                report,
                "{what}: AttributeOffset {}, {} data bytes for {} records",
                sa.attr_offset(),
                sa.data().len(),
                keys.len()
            );
        }
        if let Some(d) = table_diff(&expected.nodes, &keys) {
            let _ = writeln!(report, "{what}: {d}");
        }
        // The same table through the transaction engine's typed one-liner.
        let rpc = umad::rpc::Rpc::new(port);
        match rpc.sa_get_table(&NodeRecord::default(), 0) {
            Ok(typed) => {
                let typed_keys: Vec<NodeRecordKey> =
                    typed.iter().map(NodeRecordKey::from).collect();
                if let Some(d) = table_diff(&expected.nodes, &typed_keys) {
                    let _ = writeln!(report, "{what} via Rpc::sa_get_table: {d}");
                }
            }
            Err(e) => {
                let _ = writeln!(report, "{what} via Rpc::sa_get_table: {e}");
            }
        }
    }
    assert!(report.is_empty(), "{NAME}:\n{report}");
}

/// A program serving requests natively on the drop-in (`ibping -S`, `ibsysstat -S`), ended
/// when dropped.
struct NativeServer {
    child: Option<Child>,
    what: String,
}

impl NativeServer {
    fn start(sim: &Ibsim, dir: &Path, node: &str, program: &str, args: &[&str]) -> NativeServer {
        let (mut cmd, _scratch) = native_command(sim, dir, program, node);
        cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
        let what = format!("`{program} {}` at {node}", args.join(" "));
        let child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
        NativeServer {
            child: Some(child),
            what,
        }
    }

    /// Panics if the server is no longer running.
    fn check_running(&mut self) {
        let child = self.child.as_mut().expect("running");
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("{} exited ({status})", self.what);
        }
    }
}

impl Drop for NativeServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = terminate(child);
        }
    }
}

/// `host.domain` as `ibping`'s and `ibsysstat`'s servers answer it (`gethostname`,
/// `getdomainname`).
fn host_and_domain() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .expect("kernel host and domain name")
            .trim_end()
            .to_owned()
    };
    format!("{}.{}", read("hostname"), read("domainname"))
}

/// Programs that *serve* requests, not only ask, run unchanged on the drop-in: `ibping -S` at
/// one node answers `ibping` (by LID, by port GUID through the SA, and flooded) from another,
/// and `ibsysstat -S` answers `ibsysstat`'s ping, host and cpu queries. Their agents receive
/// requests (vendor classes 0x32 and 0x33 with the OpenIB OUI), so the drop-in makes their
/// ports the nodes' ibsim SM clients, the only ones ibsim hands requests to; under umad2sim
/// the system library's servers never see one.
#[test]
fn ibping_and_ibsysstat_servers_answer_on_the_drop_in() {
    const NAME: &str = "ibping_and_ibsysstat_servers_answer_on_the_drop_in";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let _sm = NativeOpensm::start(&sim, &dir, SM_NODE);
    let lids = discover(&sim, &dir, TOOL_NODE);
    let (ping_lid, stat_lid) = (lids["host3 HCA-1"], lids["host4 HCA-1"]);
    let mut ping = NativeServer::start(&sim, &dir, "H-host3", "ibping", &["-S"]);
    let mut stat = NativeServer::start(&sim, &dir, "H-host4", "ibsysstat", &["-S"]);
    let me = host_and_domain();
    // The servers register their agents after they start: wait for the first answer.
    let deadline = Instant::now() + Duration::from_secs(20);
    let answered = |args: &[&str], want: &str| {
        let run = run_native(&sim, &dir, SM_NODE, args[0], &args[1..]);
        run.ok() && run.stdout.contains(want)
    };
    let lid = ping_lid.to_string();
    while !answered(&["ibping", "-c", "1", "-t", "200", &lid], "1 received") {
        ping.check_running();
        assert!(Instant::now() < deadline, "ibping -S never answered");
    }
    let stat_lid_s = stat_lid.to_string();
    while !answered(
        &["ibsysstat", "-t", "200", &stat_lid_s],
        "sysstat ping succeeded",
    ) {
        stat.check_running();
        assert!(Instant::now() < deadline, "ibsysstat -S never answered");
    }

    let pong = format!("Pong from {me} (Lid {ping_lid}): time ");
    let run = run_native_ok(&sim, &dir, SM_NODE, "ibping", &["-c", "3", &lid]);
    let pongs = run.stdout.lines().filter(|l| l.starts_with(&pong)).count();
    assert!(
        pongs == 3
            && run
                .stdout
                .contains(&format!("--- {me} (Lid {ping_lid}) ibping statistics ---"))
            && run
                .stdout
                .contains("3 packets transmitted, 3 received, 0% packet loss"),
        "{}",
        run.describe()
    );
    // By port GUID (resolved through the SA), from the far side of the fabric.
    // (ibsim numbers a CA's port GUIDs from its node GUID: port 1 is node GUID + 1.)
    let guid = format!("{:#x}", ibsim_harness::example_net::HOST3_NODE_GUID + 1);
    let run = run_native_ok(&sim, &dir, "H-host2", "ibping", &["-c", "2", "-G", &guid]);
    assert!(
        run.stdout
            .contains("2 packets transmitted, 2 received, 0% packet loss"),
        "{}",
        run.describe()
    );
    // Flooded (no line per pong then): every one of 500 pings back.
    let run = run_native_ok(&sim, &dir, "H-host4", "ibping", &["-f", "-c", "500", &lid]);
    assert!(
        run.stdout.lines().all(|l| !l.starts_with(&pong))
            && run
                .stdout
                .contains("500 packets transmitted, 500 received, 0% packet loss"),
        "{}",
        run.describe()
    );

    let run = run_native_ok(&sim, &dir, SM_NODE, "ibsysstat", &[&stat_lid_s, "host"]);
    assert_eq!(run.stdout.trim_end(), me, "{}", run.describe());
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .expect("/proc/cpuinfo")
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let run = run_native_ok(&sim, &dir, SM_NODE, "ibsysstat", &[&stat_lid_s, "cpu"]);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("cpu "))
        .collect();
    assert!(
        lines.len() == cpus
            && lines
                .iter()
                .enumerate()
                .all(|(i, l)| l.starts_with(&format!("cpu {i}: model "))),
        "{cpus} CPUs\n{}",
        run.describe()
    );
    // A node without a server: every ping lost, as ibping reports it.
    let nobody = lids["host2 HCA-1"].to_string();
    let run = run_native_ok(
        &sim,
        &dir,
        SM_NODE,
        "ibping",
        &["-c", "1", "-t", "200", &nobody],
    );
    assert!(
        run.stdout
            .contains("1 packets transmitted, 0 received, 100% packet loss"),
        "{}",
        run.describe()
    );
    ping.check_running();
    stat.check_running();
}

/// opensm's own SA test client, `osmtest`, passes against opensm on the drop-in: it builds
/// the inventory from the SA (every node, port, link and path record: GetTable answers in
/// RMPP) and then runs all its validation flows (inventory, multipath, services with leases,
/// event forwarding, multicast) and the QoS flow, each `PASS`.
#[test]
fn osmtest_passes_against_opensm_on_the_drop_in() {
    const NAME: &str = "osmtest_passes_against_opensm_on_the_drop_in";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    let _sm = NativeOpensm::start(&sim, &dir, SM_NODE);
    let lids = discover(&sim, &dir, TOOL_NODE);
    let inventory = sim
        .new_scratch_dir("osmtest")
        .expect("scratch")
        .join("inventory");
    let inv = inventory.to_string_lossy().into_owned();
    for (flow, test) in [
        ("c", "Create Inventory"),
        ("a", "All Validations"),
        ("q", "QoS: VLArb and SLtoVL"),
    ] {
        let run = run_native_ok(&sim, &dir, TOOL_NODE, "osmtest", &["-f", flow, "-i", &inv]);
        assert!(
            run.stdout
                .contains(&format!("OSMTEST: TEST \"{test}\" PASS")),
            "{}",
            run.describe()
        );
        if flow == "c" {
            // The inventory is the fabric: each node, and a path between every two LIDs.
            let text = std::fs::read_to_string(&inventory).expect("inventory");
            let count = |what: &str| text.lines().filter(|l| l.trim() == what).count();
            assert_eq!(count("DEFINE_NODE"), lids.len(), "{text}");
            assert_eq!(count("DEFINE_PATH"), lids.len() * lids.len(), "{text}");
        }
    }
}

/// A standby SM on the drop-in: opensm at `SM_NODE` (priority 1) masters the fabric, a second
/// opensm at `TOOL_NODE` (priority 10) takes mastership over by handover and the first goes
/// STANDBY (SMInfo queries and the handover run between the two SMs' agents); when the
/// master stops, the standby notices by its SMInfo polling and becomes MASTER again.
#[test]
fn a_standby_sm_takes_over_on_the_drop_in() {
    const NAME: &str = "a_standby_sm_takes_over_on_the_drop_in";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    // Poll the master every 500 ms, give up on it after 2 missed polls.
    let conf = sim
        .new_scratch_dir("sm-conf")
        .expect("scratch")
        .join("opensm.conf");
    std::fs::write(
        &conf,
        "sminfo_polling_timeout 500\npolling_retry_number 2\n",
    )
    .expect("conf");
    let conf = conf.to_string_lossy().into_owned();
    let _low = NativeOpensm::start_with(&sim, &dir, SM_NODE, &["-F", &conf, "-p", "1"]);
    let lids = discover(&sim, &dir, "H-host4");
    let (low_lid, high_lid) = (lids["host1 HCA-1"], lids["host3 HCA-1"]);
    let mut high = NativeOpensm::start_with(&sim, &dir, TOOL_NODE, &["-F", &conf, "-p", "10"]);
    // "sm lid L sm guid G, activity count N priority P state S SMINFO_<STATE>"
    let sminfo = |args: &[&str]| {
        let run = run_native(&sim, &dir, "H-host4", "sminfo", args);
        let line = run.stdout.lines().next().unwrap_or_default().to_owned();
        let field = |name: &str| {
            line.split(", ")
                .flat_map(|part| part.split(' '))
                .skip_while(|w| *w != name)
                .nth(1)
                .unwrap_or_default()
                .to_owned()
        };
        let state = line.rsplit(' ').next().unwrap_or_default().to_owned();
        (field("lid"), field("priority"), state, run.describe())
    };
    let wait_for_master = |lid: u16, within: Duration| {
        let deadline = Instant::now() + within;
        loop {
            let (l, _, state, describe) = sminfo(&[]);
            if l == lid.to_string() && state == "SMINFO_MASTER" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no master at LID {lid} within {within:?}: {describe}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for_master(high_lid, Duration::from_secs(30));
    let (_, priority, _, describe) = sminfo(&[]);
    assert_eq!(priority, "10", "{describe}");
    let (l, priority, state, describe) = sminfo(&[&low_lid.to_string()]);
    assert_eq!(
        (l.as_str(), priority.as_str(), state.as_str()),
        (low_lid.to_string().as_str(), "1", "SMINFO_STANDBY"),
        "{describe}"
    );
    high.stop().expect("stop the master");
    wait_for_master(low_lid, Duration::from_secs(30));
    // The old standby brings the fabric up again as master: every port still Active.
    let run = run_native_ok(&sim, &dir, "H-host4", "ibstat", &[]);
    assert!(
        run.stdout.contains("State: Active")
            && run.stdout.contains(&format!("SM lid: {low_lid}\n")),
        "{}",
        run.describe()
    );
}

/// Traps reach opensm on the drop-in: with periodic sweeps off (`-s 0`), a link that comes
/// back (`ReLink`) stays in Init until the SM sweeps (observed without an SM: `Initializing`),
/// and only the switch's trap 128 (link state change) can make it sweep. opensm logs the
/// notice and brings the port to Active.
#[test]
fn opensm_on_the_drop_in_sweeps_on_a_link_trap() {
    const NAME: &str = "opensm_on_the_drop_in_sweeps_on_a_link_trap";
    let Some(dir) = can_run(NAME) else {
        return;
    };
    let sim = Ibsim::builder(example_fabric())
        .console(true)
        .start()
        .expect("ibsim");
    let sm = NativeOpensm::start_with(&sim, &dir, SM_NODE, &["-s", "0"]);
    let state = || {
        let run = run_native(&sim, &dir, TOOL_NODE, "ibstat", &[] as &[&str]);
        run.stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("State: ").map(str::to_owned))
            .unwrap_or_else(|| panic!("no port state\n{}", run.describe()))
    };
    assert_eq!(state(), "Active");
    let traps_before = sm.log().matches("num:128").count();
    sim.console(&format!("Unlink \"{TOOL_NODE}\"[1]"))
        .expect("console");
    sim.console(&format!("ReLink \"{TOOL_NODE}\"[1]"))
        .expect("console");
    let deadline = Instant::now() + Duration::from_secs(30);
    while state() != "Active" {
        assert!(
            Instant::now() < deadline,
            "{TOOL_NODE}[1] not Active again within 30 s (state {}): no sweep after the trap\n{}",
            state(),
            sm.diagnostics()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = sm.log();
    assert!(
        log.matches("num:128").count() > traps_before,
        "opensm logged no trap 128\n{}",
        sm.diagnostics()
    );
}
