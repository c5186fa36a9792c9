//! `-h`, `--help` and bad options: every tool's usage text and getopt message, byte for
//! byte against the installed infiniband-diags tool (C prints its usage before opening a
//! port, so no ibsim is needed). C runs by its basename through `PATH` so that glibc's
//! `getopt` names it as ours does (`ibstat: ...`, not `/usr/sbin/ibstat: ...`).
//!
//! Our options C does not have (`--json`, ...) are listed per tool: their lines (and their
//! continuation lines) must be in our usage and are taken out before comparing; so are C's
//! options we do not have, from C's usage.

use std::path::Path;
use std::process::{Command, Output};

/// One tool: its name, our options C lacks, C's options we lack, and an option taking a
/// value (short, long).
struct Case {
    tool: &'static str,
    extras: &'static [&'static str],
    c_only: &'static [&'static str],
    value_opt: (&'static str, &'static str),
}

/// Every `umad` tool with a C twin (ibswitches, ibhosts, ibrouters, ibnodes, dump_lfts and
/// dump_mfts are shell scripts in C: they keep their own usage).
const CASES: &[Case] = &[
    Case {
        tool: "ibnetdiscover",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-o", "--outstanding_smps"),
    },
    Case {
        tool: "dump_fts",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "ibroute",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "ibtracert",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "saquery",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-q", "--smkey"),
    },
    Case {
        tool: "smpquery",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "ibstat",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-z", "--config"),
    },
    Case {
        tool: "ibaddr",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "sminfo",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-s", "--state"),
    },
    Case {
        tool: "smpdump",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "ibportstate",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "perfquery",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "iblinkinfo",
        extras: &["json"],
        c_only: &[],
        value_opt: ("-C", "--Ca"),
    },
    Case {
        tool: "ibqueryerrors",
        extras: &["json"],
        c_only: &[""],
        value_opt: ("-C", "--Ca"),
    },
];

fn run(cmd: &mut Command) -> Output {
    cmd.env_remove("UMAD_IBSIM")
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// `text` without the lines of options `extras` (asserting each was there).
fn strip_extras(tool: &str, text: &str, extras: &[&str]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    let mut seen = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(e) = extras.iter().find(|e| {
            line.strip_prefix("  --")
                .and_then(|r| r.strip_prefix(**e))
                .is_some_and(|r| r.starts_with([' ', ',', '\n']))
        }) {
            seen.push(*e);
            skipping = true;
            continue;
        }
        if skipping && line.starts_with(&" ".repeat(26)) {
            continue;
        }
        skipping = false;
        out.push_str(line);
    }
    for e in extras {
        assert!(
            seen.contains(e),
            "{tool}: --{e} missing from our usage:\n{text}"
        );
    }
    out
}

#[test]
fn usage_and_option_errors_match_c() {
    let c_dir = Path::new("/usr/sbin");
    let path = format!(
        "{}:{}",
        c_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    for case in CASES {
        if !c_dir.join(case.tool).exists() {
            panic!(
                "{}: the C tool is not installed in {}",
                case.tool,
                c_dir.display()
            );
        }
        let arg_sets: Vec<Vec<&str>> = vec![
            vec!["-h"],
            vec!["--help"],
            vec!["--bogus"],
            vec!["--bogus=1"],
            vec!["-%"],
            vec![case.value_opt.0],
            vec![case.value_opt.1],
            vec!["-v", "--help", "--bogus"],
            vec!["-v%"],
            vec!["--v"],
            vec!["--help=1"],
            vec!["--verb", "--hel"],
        ];
        for args in arg_sets {
            let c = run(Command::new(case.tool).env("PATH", &path).args(&args));
            let ours = run(Command::new(env!("CARGO_BIN_EXE_umad"))
                .arg(case.tool)
                .args(&args));
            let c_err = strip_extras(case.tool, &String::from_utf8_lossy(&c.stderr), case.c_only);
            let our_err = strip_extras(
                case.tool,
                &String::from_utf8_lossy(&ours.stderr),
                case.extras,
            );
            if c.stdout != ours.stdout || c_err != our_err || c.status.code() != ours.status.code()
            {
                failures.push(format!(
                    "{} {args:?}: exit C {:?} ours {:?}\n--- C stderr\n{c_err}--- our stderr\n{our_err}--- C stdout\n{}--- our stdout\n{}",
                    case.tool,
                    c.status.code(),
                    ours.status.code(),
                    String::from_utf8_lossy(&c.stdout),
                    String::from_utf8_lossy(&ours.stdout),
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Run without the arguments they need (a destination, saquery's name for `-L`/`-l`/`-G`/
/// `-O`/`-U`, a good GID) or with a bad `--diffcheck` key, the tools print C's usage text
/// (`ibdiag_show_usage`, after saquery's `ERROR: ...` line or the `invalid diff check key`
/// one) before opening a port: byte for byte, less our `--json`.
#[test]
fn missing_arguments_print_c_usage() {
    let path = format!("/usr/sbin:{}", std::env::var("PATH").unwrap_or_default());
    let cases: &[(&str, &[&str])] = &[
        ("ibroute", &[]),
        ("ibtracert", &[]),
        ("ibtracert", &["1"]),
        ("smpdump", &[]),
        ("smpdump", &["1"]),
        ("smpquery", &[]),
        ("smpquery", &["nodeinfo"]),
        ("ibportstate", &[]),
        ("ibportstate", &["1"]),
        ("saquery", &["-L"]),
        ("saquery", &["-l"]),
        ("saquery", &["-G"]),
        ("saquery", &["-O"]),
        ("saquery", &["-O", "0"]),
        ("saquery", &["-U"]),
        ("saquery", &["--sgid", "bad"]),
        ("ibnetdiscover", &["--diffcheck", "bogus"]),
        ("ibnetdiscover", &["--diffcheck", "sw,Lid,bogus"]),
        ("iblinkinfo", &["--diffcheck", "bogus"]),
    ];
    let mut failures = Vec::new();
    for (tool, args) in cases {
        let c = run(Command::new(tool).env("PATH", &path).args(*args));
        let ours = run(Command::new(env!("CARGO_BIN_EXE_umad"))
            .arg(tool)
            .args(*args));
        let c_err = String::from_utf8_lossy(&c.stderr).into_owned();
        let our_err = strip_extras(tool, &String::from_utf8_lossy(&ours.stderr), &["json"]);
        assert!(c_err.contains("Usage: "), "{tool} {args:?}: {c_err}");
        if c.stdout != ours.stdout || c_err != our_err || c.status.code() != ours.status.code() {
            failures.push(format!(
                "{tool} {args:?}: exit C {:?} ours {:?}\n--- C stderr\n{c_err}--- our stderr\n{our_err}",
                c.status.code(),
                ours.status.code(),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
