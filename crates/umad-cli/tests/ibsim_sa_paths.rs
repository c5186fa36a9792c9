//! The diags' SA-dependent paths against a live SA that answers whole RMPP tables (opensm on
//! the drop-in libibumad, the C tools on the drop-in too: `common::sa`), on `example.net`,
//! `mixed.net` and `fattree-1008.net`, errors injected with ibsim's `PerformanceSet`: the
//! same stdout (traffic counters masked) and exit code from C and ours for `ibqueryerrors`
//! with its SL PathRecord table (default, `-r`, `-G`/`-S`/`-D`), `iblinkinfo -G`/`-S`,
//! `-G` GUID resolution in `perfquery`, `smpquery`, `ibaddr`, `ibroute`, `ibtracert` and
//! `ibportstate`, and SA record queries of `saquery`.
//!
//! And when the SA's answer is cut (opensm under umad2sim sends one MAD of an RMPP table)
//! or never comes (ibsim drops everything at the SM's port): C's error line on stderr, the
//! same stdout and exit status, within C's time (no hang).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::sa::{hca_names, DropInSa, Ran};
use common::{assert_valid, json_schema, mask_data, mask_traffic, native, umad};
use compat::require_drop_in;
use ibsim_harness::{fabrics_dir, netfile_switches, require_ibsim, Ibsim};

/// GUIDs and LIDs the cases use, from C `ibnetdiscover -p`.
struct Vars {
    /// A CA port: the highest-numbered port of the CAs (a second port where there is one).
    ca: String,
    /// Its port number.
    ca_port: String,
    /// Its LID.
    ca_lid: String,
    /// The first switch listed, and the last.
    sw: String,
    sw2: String,
    /// The first switch's LID.
    sw_lid: String,
    /// The SM's LID and port GUID.
    sm_lid: String,
    sm_guid: String,
}

/// A `0x...` number.
fn hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).unwrap_or(0)
}

/// [`Vars`] from C `ibnetdiscover -p`; the CA port is none of `not` (the SM's and the
/// tools' own ports).
fn vars(ports: &str, not: &[u64]) -> Vars {
    let rows: Vec<Vec<&str>> = ports
        .lines()
        .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>())
        .filter(|w| w.len() == 4)
        .collect();
    let ca = rows
        .iter()
        .filter(|w| w[0] == "CA" && !not.contains(&hex(w[3])))
        .max_by_key(|w| {
            let n = |i: usize| w[i].parse::<u16>().unwrap_or(0);
            (n(2), n(1))
        })
        .expect("a CA");
    let sws: Vec<&Vec<&str>> = rows.iter().filter(|w| w[0] == "SW").collect();
    assert!(!sws.is_empty(), "{ports}");
    Vars {
        ca: ca[3].to_string(),
        ca_port: ca[2].to_string(),
        ca_lid: ca[1].to_string(),
        sw: sws[0][3].to_string(),
        sw2: sws[sws.len() - 1][3].to_string(),
        sw_lid: sws[0][1].to_string(),
        sm_lid: String::new(),
        sm_guid: String::new(),
    }
}

/// The port GUIDs of the SM (`sminfo`) and of the tools' port (`smpquery nodeinfo`), by
/// C, and the SM's LID.
fn own_ports(f: &DropInSa) -> (Vec<u64>, String) {
    let (_, sm, _) = f.c("sminfo", &[]);
    let sm_lid = sm
        .split("sm lid ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or("")
        .to_string();
    let sm = sm
        .split("sm guid ")
        .nth(1)
        .and_then(|r| r.split(',').next());
    let (_, ni, _) = f.c("smpquery", &["-D", "nodeinfo", "0"]);
    let me = ni
        .lines()
        .find_map(|l| l.strip_prefix("PortGuid:"))
        .map(|v| v.trim_start_matches('.'));
    let own: Vec<u64> = [sm, me].into_iter().flatten().map(hex).collect();
    assert_eq!(own.len(), 2, "{sm:?} {ni}");
    (own, sm_lid)
}

fn expand(args: &[&str], v: &Vars) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{ca}", &v.ca)
                .replace("{caport}", &v.ca_port)
                .replace("{calid}", &v.ca_lid)
                .replace("{sw2}", &v.sw2)
                .replace("{swlid}", &v.sw_lid)
                .replace("{smlid}", &v.sm_lid)
                .replace("{smguid}", &v.sm_guid)
                .replace("{sw}", &v.sw)
        })
        .collect()
}

/// The tool's text with the traffic counters masked (ibsim counts the tools' own MADs), and
/// sminfo's activity count (the SM's, counting on).
fn mask(text: &str) -> String {
    let text = mask_traffic(&mask_data(text));
    match text.split_once("activity count ") {
        Some((head, tail)) => {
            let rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{head}activity count N{rest}")
        }
        None => text,
    }
}

/// The SA failure lines of a run's stderr (`Query SA failed: ...`, `ERROR: ...`, and the
/// `ibwarn` lines of the GUID resolution and the tools' `main`, their pid masked).
fn sa_errors(stderr: &str) -> Vec<String> {
    const WARNS: &[&str] = &[
        "mad_rpc_rmpp: ",
        "ib_path_query_via: ",
        "main: ",
        "sa_get_handle: ",
    ];
    stderr
        .lines()
        .filter_map(|l| {
            if l.starts_with("Query SA failed") || l.starts_with("ERROR: ") {
                return Some(l.to_string());
            }
            if let Some((_, what)) = l
                .strip_prefix("ibpanic: [")
                .and_then(|r| r.split_once("] "))
            {
                return Some(format!("ibpanic: [pid] {what}"));
            }
            let rest = l.strip_prefix("ibwarn: [")?;
            let (_, what) = rest.split_once("] ")?;
            WARNS
                .iter()
                .any(|w| what.starts_with(w))
                .then(|| format!("ibwarn: [pid] {what}"))
        })
        .collect()
}

/// Runs a case both ways: the same exit code, masked stdout and SA error lines; returns C's.
fn same(f: &DropInSa, fabric: &str, tool: &str, args: &[String]) -> Ran {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let t = Instant::now();
    let c = f.c(tool, &a);
    let ct = t.elapsed();
    let o = f.ours(tool, &a);
    eprintln!(
        "{fabric}: {tool} {a:?}: C {ct:?}, ours {:?}",
        t.elapsed() - ct
    );
    assert_eq!(
        o.0, c.0,
        "{fabric}: {tool} {a:?}: exit codes; C:\n{}{}\nours:\n{}{}",
        c.1, c.2, o.1, o.2
    );
    assert_eq!(
        mask(&o.1),
        mask(&c.1),
        "{fabric}: {tool} {a:?}: stdout; C stderr:\n{}\nours:\n{}",
        c.2,
        o.2
    );
    assert_eq!(sa_errors(&o.2), sa_errors(&c.2), "{fabric}: {tool} {a:?}");
    c
}

type Case = (&'static str, &'static [&'static str]);

// `-G <switch>`: the combined routes past it fail in ibsim and are waited out (C: 4 tries of
// `-t` each); 200 ms keeps that short and the answered SMPs safe on a loaded machine.

const CASES: &[Case] = &[
    ("ibqueryerrors", &[]),
    ("ibqueryerrors", &["-r"]),
    ("ibqueryerrors", &["-c", "--details"]),
    ("ibqueryerrors", &["--data", "-r"]),
    ("ibqueryerrors", &["--counters", "--ca"]),
    ("ibqueryerrors", &["--switch", "-r"]),
    ("ibqueryerrors", &["-G", "{ca}"]),
    ("ibqueryerrors", &["-S", "{ca}", "-r"]),
    ("ibqueryerrors", &["-t", "200", "-G", "{sw}", "-r"]),
    ("ibqueryerrors", &["-D", "0,1"]),
    ("ibqueryerrors", &["-D", "0,1", "-r"]),
    ("ibqueryerrors", &["-D", "0"]),
    ("ibqueryerrors", &["-G", "0x999"]),
    ("ibqueryerrors", &["-s", "{smlid}", "-G", "{ca}"]),
    ("iblinkinfo", &["-G", "{ca}"]),
    ("iblinkinfo", &["-t", "200", "-G", "{sw}"]),
    ("iblinkinfo", &["-t", "200", "-S", "{sw}", "-l"]),
    ("iblinkinfo", &["--switches-only", "-G", "{ca}"]),
    ("iblinkinfo", &["-a", "-t", "200", "-G", "{sw}"]),
    ("iblinkinfo", &["-G", "0x999"]),
    ("perfquery", &["-G", "{ca}", "{caport}"]),
    ("perfquery", &["-x", "-G", "{sw}", "1"]),
    ("smpquery", &["-G", "nodeinfo", "{ca}"]),
    ("smpquery", &["-G", "portinfo", "{sw}", "1"]),
    ("smpquery", &["-G", "nodeinfo", "0x999"]),
    ("smpquery", &["-s", "{smlid}", "-G", "nodeinfo", "{ca}"]),
    // An SA LID that answers nothing: C's libibmad warnings too.
    ("smpquery", &["-s", "{swlid}", "-G", "nodeinfo", "{ca}"]),
    ("perfquery", &["-G", "0x999", "1"]),
    ("ibportstate", &["-G", "0x999", "1"]),
    ("ibtracert", &["-G", "{ca}", "0x999"]),
    ("ibaddr", &["-G", "{ca}"]),
    ("sminfo", &["-G", "{smguid}"]),
    ("sminfo", &["-G", "{ca}"]),
    ("ibaddr", &["-s", "{swlid}", "-G", "{ca}"]),
    ("ibroute", &["-G", "{sw}"]),
    ("ibtracert", &["-G", "{ca}", "{sw2}"]),
    ("ibportstate", &["-G", "{ca}", "{caport}"]),
    ("saquery", &["-s"]),
    ("saquery", &["SR"]),
    ("saquery", &["IIR"]),
    ("saquery", &["-g"]),
    ("saquery", &["PR", "--slid", "{swlid}", "--dlid", "{calid}"]),
    ("saquery", &["--src-to-dst", "{swlid}:{calid}"]),
];

/// The cases run on the 1052-node fabric.
const BIG: &[&str] = &[
    "",
    "-r",
    "-G {ca}",
    "-t 100 -G {sw} -r",
    "-D 0,1",
    "-t 100 -G {sw}",
];

fn inject(sim: &Ibsim) {
    let net = sim.netfile();
    let ca = hca_names(net).last().cloned().unwrap();
    let sw = netfile_switches(net).unwrap()[0].clone();
    for cmd in [
        format!("PerformanceSet \"{ca}\"[1] PortCounters.SymbolErrorCounter=42"),
        format!("PerformanceSet \"{sw}\"[1] PortCounters.PortRcvErrors=3"),
        format!("PerformanceSet \"{sw}\"[1] PortCounters.LinkDownedCounter=9"),
    ] {
        sim.console(&cmd).expect("PerformanceSet");
    }
}

fn live_sa(fabric: &str) {
    let test = format!("ibsim_sa_paths::{fabric}");
    if !require_ibsim(&test) {
        return;
    }
    let Some(drop_in) = require_drop_in(&test) else {
        return;
    };
    let sim = Ibsim::builder(fabrics_dir().join(fabric))
        .console(true)
        .start()
        .expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    let _sm = f.start_sm();
    inject(&sim);
    let (code, ports, _) = f.c("ibnetdiscover", &["-p"]);
    assert_eq!(code, 0);
    let (own, sm_lid) = own_ports(&f);
    let mut v = vars(&ports, &own);
    v.sm_lid = sm_lid;
    v.sm_guid = format!("{:#x}", own[0]);
    let big = fabric.starts_with("fattree");
    let mut answered = 0;
    for (tool, args) in CASES {
        // On the big fabric a switch's combined routes (36 ports, each timed out) cost C
        // 15 s a case: the small fabrics cover those.
        let joined = args.join(" ");
        let slow = joined.contains("-t 200");
        if big && ((*tool == "ibqueryerrors" && !BIG.contains(&joined.as_str())) || slow) {
            continue;
        }
        let (code, out, _) = same(&f, fabric, tool, &expand(args, &v));
        if (code == 0 || code == 1) && !out.is_empty() {
            answered += 1;
        }
    }
    assert!(
        answered >= if big { 5 } else { 25 },
        "{fabric}: {answered} answered"
    );

    // --json of the partial scans (peers unknown) validates.
    for (tool, args) in [
        (
            "ibqueryerrors",
            &["--json", "-t", "200", "-G", "{sw}", "-r"][..],
        ),
        ("ibqueryerrors", &["--json", "-G", "{ca}"]),
        ("iblinkinfo", &["--json", "-G", "{ca}"]),
        ("iblinkinfo", &["--json", "-t", "200", "-G", "{sw}"]),
    ] {
        let args = expand(args, &v);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = f.ours(tool, &a);
        assert!(code == 0 || code == 1, "{fabric}: {tool} {a:?}: {err}");
        assert_valid(&json_schema(&format!("{tool}-v1.schema.json")), &out);
    }

    // The SL table came whole (else ibqueryerrors stops before the sweep, printing nothing):
    // the injected errors are reported, with no SA failure.
    let (code, out, err) = f.ours("ibqueryerrors", &[]);
    assert_eq!(code, 1, "{fabric}: {out}{err}");
    assert!(
        out.contains("[SymbolErrorCounter == 42]"),
        "{fabric}: {out}"
    );
    assert!(out.contains("[PortRcvErrors == 3]"), "{fabric}: {out}");
    assert!(sa_errors(&err).is_empty(), "{fabric}: {err}");
}

#[test]
fn live_sa_example() {
    live_sa("example.net");
}

#[test]
fn live_sa_mixed() {
    live_sa("mixed.net");
}

#[test]
fn live_sa_fattree_1008() {
    live_sa("fattree-1008.net");
}

/// Runs the failure cases: the same stdout, exit code and SA error line, each within
/// `limit`; returns our stderr of each.
fn failures(f: &DropInSa, what: &str, cases: &[&[&str]], limit: Duration) -> Vec<String> {
    let mut errs = Vec::new();
    for args in cases {
        let (tool, rest) = args.split_first().unwrap();
        let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
        let started = Instant::now();
        let c = same(f, what, tool, &rest);
        let a: Vec<&str> = rest.iter().map(String::as_str).collect();
        let t = Instant::now();
        let o = f.ours(tool, &a);
        let ours = t.elapsed();
        assert!(
            ours < limit,
            "{what}: {args:?} took {ours:?} (C and ours: {:?})",
            started.elapsed()
        );
        assert!(
            !sa_errors(&c.2).is_empty() || c.1.contains("can't resolve"),
            "{what}: {args:?}: {}",
            c.2
        );
        errs.push(o.2);
    }
    errs
}

/// opensm under umad2sim: its RMPP tables reach the drop-in clients as their first MAD
/// only, so the answer never completes. C (on the drop-in) and ours give up after the query's
/// timeout with the same message and exit status.
#[test]
fn truncated_sa_answers() {
    if !require_ibsim("ibsim_sa_paths::truncated_sa_answers") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_sa_paths::truncated_sa_answers") else {
        return;
    };
    let net = fabrics_dir().join("example.net");
    let mut sim = Ibsim::start(&net).expect("ibsim starts");
    sim.start_sm_daemon_on(&hca_names(&net)[0])
        .expect("opensm under umad2sim");
    let f = DropInSa::new(&sim, drop_in);
    let errs = failures(
        &f,
        "truncated",
        &[
            &["ibqueryerrors"],
            &["ibqueryerrors", "-D", "0,1"],
            &["saquery"],
            &["saquery", "PR"],
        ],
        Duration::from_secs(8),
    );
    assert_eq!(
        sa_errors(&errs[0]),
        ["Query SA failed: Connection timed out; sa call path_query failed"]
    );
    assert_eq!(
        sa_errors(&errs[2]),
        ["Query SA failed: Connection timed out"]
    );
}

/// ibsim drops every packet into the SM's port: the SA requests come back at once, failed.
#[test]
fn dropped_sa_requests() {
    if !require_ibsim("ibsim_sa_paths::dropped_sa_requests") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_sa_paths::dropped_sa_requests") else {
        return;
    };
    let sim = Ibsim::builder(fabrics_dir().join("example.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    let _sm = f.start_sm();
    sim.console(&format!("Error \"{}\"[1] 100", f.sm_node))
        .expect("Error");
    let errs = failures(
        &f,
        "dropped",
        &[
            &["ibqueryerrors"],
            &["ibqueryerrors", "-r"],
            &["saquery"],
            &["saquery", "PR"],
            &["saquery", "-s"],
            &["smpquery", "-G", "nodeinfo", "0x100006"],
        ],
        Duration::from_secs(8),
    );
    assert_eq!(
        sa_errors(&errs[0]),
        ["Query SA failed: Connection timed out; sa call path_query failed"]
    );
}

/// No SM ever ran (no LIDs, no SM LID): C's and our warnings, nothing swept by LID.
#[test]
fn no_subnet_manager() {
    if !require_ibsim("ibsim_sa_paths::no_subnet_manager") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_sa_paths::no_subnet_manager") else {
        return;
    };
    let sim = Ibsim::start(fabrics_dir().join("example.net")).expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    let (code, ports, _) = f.c("ibnetdiscover", &["-p"]);
    assert_eq!(code, 0);
    let v = vars(&ports, &[]);
    let errs = failures(
        &f,
        "no SM",
        &[
            &["ibqueryerrors"],
            &["ibqueryerrors", "-C", "ibsim0"],
            &["ibqueryerrors", "-r", "-D", "0,1"],
            &["saquery"],
            &["saquery", "-C", "ibsim0", "-P", "1"],
            &["saquery", "-N"],
        ],
        Duration::from_secs(8),
    );
    for (i, ca) in [(3, "(null):0"), (4, ":1"), (5, "(null):0")] {
        assert_eq!(
            sa_errors(&errs[i]),
            [
                format!("ibwarn: [pid] sa_get_handle: No SM/SA found on port {ca}"),
                "ibpanic: [pid] main: Failed to bind to the SA: Success".into()
            ],
            "saquery without an SM"
        );
    }
    assert_eq!(
        sa_errors(&errs[0]),
        ["ibwarn: [pid] sa_get_handle: No SM/SA found on port (null):0"]
    );
    for (tool, args) in [
        ("ibqueryerrors", &["-G", "{ca}"][..]),
        ("iblinkinfo", &["-G", "{ca}"]),
        ("smpquery", &["-G", "nodeinfo", "{ca}"]),
    ] {
        let (_, _, err) = same(&f, "no SM", tool, &expand(args, &v));
        assert!(
            err.contains("sa_rpc_call: only lid routes are supported"),
            "{tool}: {err}"
        );
    }
}

/// The SM stops (SIGSTOP) while `umad saquery SL2VL` is being answered (a table of about
/// 4,900 segments on the 1,052-node fabric): the query ends with C's `Query SA failed`
/// line within about its own timeout of silence (`-t 200`), not after the 40 s an RMPP
/// reassembly may take.
#[test]
fn an_sm_stopped_in_the_middle_of_a_table() {
    if !require_ibsim("ibsim_sa_paths::an_sm_stopped_in_the_middle_of_a_table") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_sa_paths::an_sm_stopped_in_the_middle_of_a_table")
    else {
        return;
    };
    let sim = Ibsim::start(fabrics_dir().join("fattree-1008.net")).expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    let sm = f.start_sm();
    let pid = sm.pid().expect("opensm's pid").to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill {sig} {pid}");
    };
    let mut failed = 0;
    // Not sooner than 6 ms: a stop inside the CONNECT exchange would be another test.
    for delay_ms in [40, 25, 15, 10, 6] {
        let mut cmd = native(&sim, &umad());
        cmd.env("UMAD_IBSIM_NODE", &f.tool_node)
            .args(["saquery", "-t", "200", "SL2VL"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("spawn umad saquery");
        std::thread::sleep(Duration::from_millis(delay_ms));
        signal("-STOP");
        let stopped = Instant::now();
        let out = child.wait_with_output().expect("wait");
        let took = stopped.elapsed();
        signal("-CONT");
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "stopped {delay_ms} ms in: exit {:?} {took:?} after the stop, {} bytes out",
            out.status.code(),
            out.stdout.len()
        );
        if out.status.success() {
            continue; // the table was across before the stop
        }
        failed += 1;
        assert!(
            stderr.contains("Query SA failed"),
            "stopped {delay_ms} ms in: {stderr}"
        );
        assert!(
            took < Duration::from_millis(1_500),
            "stopped {delay_ms} ms in: the query ended {took:?} after the stop (timeout 200 ms)"
        );
        // The SM catches up on what it missed before the next round.
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(failed > 0, "every table was across before the SM stopped");
}
