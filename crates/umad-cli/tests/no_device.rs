//! The tools on a machine without InfiniBand (no `ib_umad` kernel module: CI machines, most
//! laptops): each fails as its C twin does — the same exit code, the same stdout, the same
//! stderr — except that where C's libibumad prints its `get_abi_version: ...` trace line,
//! ours prints one line that says why and what to do (`modprobe ib_umad`); libibmad's and
//! libibnetdisc's lines after it are C's.
//!
//! Runs only where there is no umad device (`/sys/class/infiniband_mad/abi_version` absent);
//! with one, the failure cannot be shown and the test says so.

use std::path::Path;
use std::process::Command;

mod common;

/// C's line (libibumad's) that ours replaces with its one reason line.
fn c_trace(line: &str) -> bool {
    let ibwarn = |func: &str| {
        line.strip_prefix("ibwarn: [")
            .and_then(|r| r.split_once("] "))
            .is_some_and(|(_, rest)| rest.starts_with(func))
    };
    ibwarn("get_abi_version:")
}

/// `[1234]` → `[pid]`.
fn mask_pids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(']') {
            out.push_str("pid");
            rest = &rest[digits..];
        }
    }
    out + rest
}

#[test]
fn without_a_device_every_tool_fails_as_c_and_says_why() {
    if Path::new("/sys/class/infiniband_mad/abi_version").exists() {
        eprintln!(
            "no_device: this machine has umad devices; the no-device failures cannot be shown"
        );
        return;
    }
    let cases: &[&[&str]] = &[
        &["ibstat"],
        &["ibstat", "-l"],
        &["ibstat", "-p"],
        &["ibaddr"],
        &["sminfo"],
        &["smpquery", "nodeinfo", "1"],
        &["smpdump", "1", "0x11"],
        &["perfquery"],
        &["ibportstate", "1", "1"],
        &["ibroute", "1"],
        &["ibtracert", "1", "2"],
        &["iblinkinfo"],
        &["ibqueryerrors"],
        &["dump_fts"],
        &["ibnetdiscover"],
        &["ibnetdiscover", "-p"],
        &["ibswitches"],
        &["ibhosts"],
        &["saquery"],
        &["saquery", "-N"],
    ];
    let mut failures = Vec::new();
    for case in cases {
        let (tool, args) = case.split_first().expect("a tool");
        let Some(c_path) = ibsim_harness::find_tool(tool) else {
            assert!(
                !ibsim_harness::ibsim_required(),
                "C {tool} (infiniband-diags) is not installed"
            );
            eprintln!("no_device: C {tool} not installed, not compared");
            continue;
        };
        let c = common::run(
            Command::new(tool)
                .env(
                    "PATH",
                    format!(
                        "{}:/usr/bin:/bin",
                        c_path.parent().expect("a dir").display()
                    ),
                )
                .args(args)
                .env_remove("UMAD_IBSIM"),
        );
        let ours = common::run(
            Command::new(common::umad())
                .arg(tool)
                .args(args)
                .env_remove("UMAD_IBSIM"),
        );
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let (c_err, our_err) = (text(&c.stderr), text(&ours.stderr));
        // `<tool>: can't open port: ...` (ibnetdiscover's, in the ibnodes family).
        let is_reason = |l: &&str| {
            l.split_once(": ").is_some_and(|(who, rest)| {
                !who.contains(' ') && rest.starts_with("can't open port")
            })
        };
        let why: Vec<&str> = our_err.lines().filter(is_reason).collect();
        let c_rest: Vec<&str> = c_err.lines().filter(|l| !c_trace(l)).collect();
        let our_rest: Vec<&str> = our_err.lines().filter(|l| !is_reason(l)).collect();
        let mut problems = Vec::new();
        if c.status.code() != ours.status.code() {
            problems.push(format!(
                "exit {:?} (C {:?})",
                ours.status.code(),
                c.status.code()
            ));
        }
        if c.stdout != ours.stdout {
            problems.push(format!(
                "stdout {:?} (C {:?})",
                text(&ours.stdout),
                text(&c.stdout)
            ));
        }
        if mask_pids(&c_rest.join("\n")) != mask_pids(&our_rest.join("\n")) {
            problems.push(format!("stderr {our_rest:?} (C {c_rest:?})"));
        }
        // Where C traced the failure, ours says why, and what to do (saquery says it too,
        // where C only warns that it found no SM); never twice.
        let c_traced = c_err.lines().any(c_trace);
        let says_why = why.len() == 1 && why[0].contains("modprobe ib_umad");
        if why.len() > 1 || (c_traced && !says_why) {
            problems.push(format!("reason line {why:?} (C traced: {c_traced})"));
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.join(" "), problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
