//! `-d` and `-dd` of the single-query tools against the C tools on example.net (resident
//! opensm): the same debug lines, and stdout unchanged by `-d`.
//!
//! What is compared:
//!
//! * C's stderr, without what libibumad (`umad_debug`, at `-dd`) and the umad2sim shim print
//!   (lines `ibwarn: [pid] <f>: ...` for `f` = `umad_*`, `resolve_ca_name`,
//!   `resolve_ca_port`, `dev_to_umad_id`, `sim_*`), against our stderr without the lines C
//!   prints on stdout;
//! * the debug lines C prints on stdout (`ibdebug: ...`, saquery's `SA Request:`/`SA
//!   Response:` dumps) against the same lines on our stderr (we keep stdout clean);
//! * our stdout with `-d`/`-dd` against our stdout without, and against C's stdout without
//!   its debug lines.
//!
//! Masked (run-dependent): pids (`^(ibwarn|ibdebug): \[\d+\]`), C's buffer pointer in
//! `mad_rpc_rmpp: rmpp (nil) data 0x[0-9a-f]+`, and in the MAD dumps the TID (MAD bytes
//! 8..16: C draws it at random, its high half is the kernel's/shim's) and, in `rcv buf`
//! dumps, bytes 224..256 (C's receive buffer holds stray bytes there that the simulator
//! never wrote: a LID-routed SMP's reserved area, far past every attribute read here); in
//! the SA's PathRecord answers (`-G`), the bytes past the record, which opensm leaves
//! uninitialised. For perfquery and sminfo, whose values move between runs (traffic counters, the SM's activity
//! count), the data area of received MADs and those values in stdout are masked too.

mod common;

use common::smp::{expand, start, vars};
use common::{native, run, umad};
use ibsim_harness::{require_ibsim, Ibsim};

/// Whether `f` is a function of libibumad or of the umad2sim shim.
fn is_library(f: &str) -> bool {
    f.starts_with("umad_")
        || f.starts_with("sim_")
        || matches!(f, "resolve_ca_name" | "resolve_ca_port" | "dev_to_umad_id")
}

/// `line` with its pid masked, and the function it names (`ibwarn:`/`ibdebug:` lines).
fn unpid(line: &str) -> (String, Option<String>) {
    for kind in ["ibwarn: [", "ibdebug: ["] {
        if let Some(rest) = line.strip_prefix(kind) {
            if let Some((pid, tail)) = rest.split_once("] ") {
                if pid.bytes().all(|b| b.is_ascii_digit()) {
                    let f = tail.split(':').next().unwrap_or_default().to_string();
                    let mut masked = format!("{kind}PID] {tail}");
                    if let Some(i) = masked.find("rmpp (nil) data 0x") {
                        masked.truncate(i + "rmpp (nil) data 0x".len());
                        masked.push_str("PTR");
                    }
                    return (masked, Some(f));
                }
            }
        }
    }
    (line.to_string(), None)
}

/// Where the one record of an SA Get response (a PathRecord, 64 bytes at byte 56) ends:
/// opensm leaves the rest of the MAD uninitialised.
const SA_GET_END: usize = 56 + 64;

fn is_hex_line(l: &str) -> bool {
    !l.is_empty()
        && l.split(' ')
            .all(|g| g.is_empty() || (g.len() <= 4 && g.bytes().all(|b| b.is_ascii_hexdigit())))
}

/// Text split into (debug lines of the kind C prints on stdout, the other lines), masked.
/// `drop_library`: leave libibumad's and umad2sim's lines out.
/// `counters`: also mask the data area of received MADs (perfquery's counters and the SM's
/// activity count move between the runs).
fn classify(text: &str, drop_library: bool, counters: bool) -> (Vec<String>, Vec<String>) {
    let (mut out_kind, mut err_kind) = (Vec::new(), Vec::new());
    // The dump being read: (goes with stdout-kind lines, offset of the MAD, rcv buf), line.
    let mut dump: Option<(bool, usize, bool)> = None;
    let mut line_no = 0usize;
    let mut after_ibdebug = false;
    // The received dump is of an SA response.
    let mut sa = false;
    for l in text.lines() {
        if let Some((to_out, mad_at, rcv)) = dump {
            if is_hex_line(l) {
                let mut groups: Vec<String> = l.split(' ').map(str::to_string).collect();
                if rcv && line_no == 0 {
                    sa = groups[0].ends_with("03");
                }
                for (g, group) in groups.iter_mut().enumerate() {
                    let at = line_no * 16 + g * 2;
                    let tid = at >= mad_at + 8 && at < mad_at + 16;
                    let tail = rcv
                        && (at >= mad_at + 224
                            || counters && at >= mad_at + 64
                            || sa && at >= mad_at + SA_GET_END);
                    if (tid || tail) && !group.is_empty() {
                        *group = "xxxx".into();
                    }
                }
                line_no += 1;
                let masked = groups.join(" ");
                if to_out {
                    out_kind.push(masked);
                } else {
                    err_kind.push(masked);
                }
                continue;
            }
            dump = None;
        }
        let header = match l {
            "send buf" => Some((false, 64, false)),
            "rcv buf" => Some((false, 0, true)),
            "before send:" => Some((false, 0, false)),
            "SA Request:" | "SA Response:" => Some((true, 0, false)),
            _ => None,
        };
        if let Some(h) = header {
            dump = Some(h);
            line_no = 0;
            if h.0 {
                out_kind.push(l.to_string());
            } else {
                err_kind.push(l.to_string());
            }
            continue;
        }
        if l.is_empty() && after_ibdebug {
            // The empty line of a message that ends with its own newline
            // (`Switch top is 0x%x\n`).
            out_kind.push(String::new());
            after_ibdebug = false;
            continue;
        }
        let (masked, f) = unpid(l);
        after_ibdebug = masked.starts_with("ibdebug: ");
        if drop_library && f.as_deref().is_some_and(is_library) {
            continue;
        }
        if masked.starts_with("ibdebug: ") {
            out_kind.push(masked);
        } else {
            err_kind.push(masked);
        }
    }
    (out_kind, err_kind)
}

/// An `IBEXIT` line with `-d` (`<prog>: iberror: [pid <n>] <f>: failed: ...`) with the
/// program named `tool` (C's is the full path) and the pid masked.
fn unpid_iberror(line: &str, tool: &str) -> String {
    let Some((prog, rest)) = line.split_once(": iberror: [pid ") else {
        return line.to_string();
    };
    if prog != tool && !prog.ends_with(&format!("/{tool}")) {
        return line.to_string();
    }
    match rest.split_once("] ") {
        Some((_, tail)) => format!("{tool}: iberror: [pid PID] {tail}"),
        None => line.to_string(),
    }
}

/// Asserts `ours == c`, showing the first difference with a little context.
fn same_lines(ours: &[String], c: &[String], what: &str) {
    if ours == c {
        return;
    }
    let at = ours.iter().zip(c).take_while(|(a, b)| a == b).count();
    let from = at.saturating_sub(3);
    panic!(
        "{what}: differ at line {at} ({} lines ours, {} C)\nours:\n{}\nC:\n{}",
        ours.len(),
        c.len(),
        ours[from..ours.len().min(at + 4)].join("\n"),
        c[from..c.len().min(at + 4)].join("\n")
    );
}

/// (exit code, stdout, stderr) of `cmd`.
fn output(cmd: &mut std::process::Command) -> (i32, String, String) {
    let out = run(cmd);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Compares `tool args` with `flag` (`-d`/`-dd`) between C and ours; returns how many debug
/// lines C printed (so the table is seen to exercise something).
fn compare(sim: &Ibsim, tool: &str, flag: &str, args: &[String]) -> usize {
    let with: Vec<String> = std::iter::once(flag.to_string())
        .chain(args.iter().cloned())
        .collect();
    let (c_code, c_out, c_err) = output(sim.umad2sim_command(tool).args(&with));
    let (code, out, err) = output(native(sim, &umad()).arg(tool).args(&with));
    let (_, plain, _) = output(native(sim, &umad()).arg(tool).args(args));
    let what = format!("{tool} {}", with.join(" "));
    assert_eq!(
        code, c_code,
        "{what}: exit code\nC: {c_out}{c_err}\nours: {out}{err}"
    );
    // Values that move between the runs: perfquery's counters, the SM's activity count.
    let counters = matches!(tool, "perfquery" | "sminfo");
    let (c_out_debug, c_stdout) = classify(&c_out, false, counters);
    let (c_err_other, c_err_debug) = classify(&c_err, true, counters);
    assert!(c_err_other.is_empty(), "{what}: C stderr {c_err_other:?}");
    let (our_out_debug, our_err_debug) = classify(&err, false, counters);
    same_lines(
        &our_err_debug,
        &c_err_debug,
        &format!("{what}: the stderr lines"),
    );
    same_lines(
        &our_out_debug,
        &c_out_debug,
        &format!("{what}: the lines C prints on stdout"),
    );
    let unmove = |t: &str| -> String {
        t.lines()
            .map(|l| match l.split_once(":.") {
                Some((name, _)) if counters && (name.contains("Xmit") || name.contains("Rcv")) => {
                    format!("{name}: N\n")
                }
                _ => match l.split_once(", activity count ") {
                    Some((head, tail)) if counters => {
                        let rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
                        format!("{head}, activity count N{rest}\n")
                    }
                    _ => format!("{l}\n"),
                },
            })
            .collect()
    };
    if code == 0 {
        assert_eq!(
            unmove(&out),
            unmove(&plain),
            "{what}: stdout changed by {flag}"
        );
    }
    let c_rest: String = c_stdout
        .iter()
        .map(|l| format!("{}\n", unpid_iberror(l, tool)))
        .collect();
    let out: String = out
        .lines()
        .map(|l| format!("{}\n", unpid_iberror(l, tool)))
        .collect();
    assert_eq!(unmove(&out), unmove(&c_rest), "{what}: stdout");
    c_err_debug.len() + c_out_debug.len()
}

const CASES: &[(&str, &[&str])] = &[
    ("smpquery", &["nodeinfo", "1"]),
    ("smpquery", &["-D", "nodeinfo", "0,1"]),
    ("smpquery", &["-G", "nodeinfo", "{hg}"]),
    ("smpquery", &["portinfo", "{sw}", "1"]),
    ("smpquery", &["-t", "100", "nodeinfo", "99"]),
    ("smpdump", &["1", "0x11"]),
    ("smpdump", &["-D", "0,1", "0x15", "1"]),
    ("perfquery", &["1", "1"]),
    ("perfquery", &["-x", "{sw}", "1"]),
    ("sminfo", &[]),
    ("ibaddr", &[]),
    ("ibaddr", &["-G", "{hg}"]),
    ("ibportstate", &["1", "1"]),
    ("ibroute", &["{sw}"]),
    ("ibtracert", &["1", "{sw}"]),
];

#[test]
fn debug_lines_as_c() {
    if !require_ibsim("debug_lines_as_c") {
        return;
    }
    let sim = start("example.net");
    let v = vars(&sim);
    for flag in ["-d", "-dd"] {
        let mut printed = 0;
        for (tool, args) in CASES {
            let args = expand(args, &v);
            let n = compare(&sim, tool, flag, &args);
            assert!(n > 0, "{tool} {flag} {args:?}: C printed no debug line");
            printed += n;
        }
        assert!(printed > 50, "{flag}: {printed} debug lines in all");
    }
}

#[test]
fn classify_masks_pids_tids_and_library_lines() {
    let text = "ibwarn: [12] umad_init: umad_init\nibwarn: [12] smp_query_status_via: attr 0x11\n\
                ibwarn: [12] mad_rpc_rmpp: rmpp (nil) data 0x7ffd00\nrcv buf\n\
                0101 0181 0000 0000 0001 0000 492d a363\nibdebug: [3] f: x\n";
    let (out, err) = classify(text, true, false);
    assert_eq!(out, vec!["ibdebug: [PID] f: x"]);
    assert_eq!(
        err,
        vec![
            "ibwarn: [PID] smp_query_status_via: attr 0x11",
            "ibwarn: [PID] mad_rpc_rmpp: rmpp (nil) data 0xPTR",
            "rcv buf",
            "0101 0181 0000 0000 xxxx xxxx xxxx xxxx",
        ]
    );
}

/// The discovery tools pipeline their SMPs, so their debug lines cannot come in C's order:
/// with `-d`/`-dd` their stdout stays the same, every SMP gets its `smp_query_status_via`
/// line, and `-dd` dumps every MAD sent and every answer read.
/// (iblinkinfo's `-d` is its own `--down`, as in C: it has no debug option.)
#[test]
fn discovery_stdout_unchanged_by_debug() {
    if !require_ibsim("discovery_stdout_unchanged_by_debug") {
        return;
    }
    let sim = start("example.net");
    for (tool, args) in [
        ("ibnetdiscover", &[][..]),
        ("ibqueryerrors", &["-s", "XmtWait"][..]),
        ("dump_fts", &[][..]),
    ] {
        let (code, plain, _) = output(native(&sim, &umad()).arg(tool).args(args));
        assert_eq!(code, 0, "{tool}: {plain}");
        for flag in ["-d", "-dd"] {
            let (c, out, err) = output(native(&sim, &umad()).arg(tool).arg(flag).args(args));
            assert_eq!(c, 0, "{tool} {flag}: {err}");
            assert_eq!(
                common::mask_date(&out),
                common::mask_date(&plain),
                "{tool} {flag}: stdout"
            );
            let sent = err.lines().filter(|l| *l == "send buf").count();
            let read = err.lines().filter(|l| *l == "rcv buf").count();
            if flag == "-dd" {
                assert!(sent > 10, "{tool} -dd: {sent} MADs dumped");
                assert!(
                    read > 10 && read <= sent,
                    "{tool} -dd: {read} answers dumped for {sent} MADs"
                );
            } else {
                assert_eq!(sent, 0, "{tool} -d: no dumps");
            }
            let queries = err
                .lines()
                .filter(|l| l.contains("] smp_query_status_via: attr 0x"))
                .count();
            assert!(queries > 10, "{tool} {flag}: {queries} query lines\n{err}");
        }
    }
}
