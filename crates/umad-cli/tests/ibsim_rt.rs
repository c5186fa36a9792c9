//! A differential sweep on two fabrics no other test uses (fabrics/README.md):
//!
//! * `odd.net`: a router (`Rt`, NodeInfo type 3), a switch with base port 0, a 2-port
//!   switch, a 36-port switch with 30 empty ports and a Mellanox vendor id, a 4-port HCA on
//!   two switches (ports 2 and 4 down), node descriptions that are empty, of exactly 63
//!   characters, of blanks only, with `#`, `,`, `-`, `:`, and with non-ASCII (UTF-8) bytes, non-default
//!   vendor and device ids, and an attach point on the big switch's port 17;
//! * `b2b.net`: two HCAs cabled back to back, no switch.
//!
//! Every tool, C under umad2sim against `umad` natively (resident opensm at the attach
//! point): the same exit code and stdout, run-dependent values masked (the topology date,
//! traffic counters, the SM's activity count); stderr too where a case says so (pids
//! masked, the simulator's own lines dropped). The SA-dependent cases (`iblinkinfo
//! -S`/`-G`, `ibqueryerrors` with its SL PathRecords, `saquery`) run with opensm on the
//! project's drop-in libibumad (`common::sa::DropInSa`; on odd.net the tools at the 4-port
//! HCA, on b2b.net at H-right), so that SA answers arrive whole. `--json` of the main
//! tools is validated against its schema.
//!
//! Known differences left as they are (stderr only, not compared):
//! * C's `_do_madrpc: recv failed: Connection timed out` line: under umad2sim a combined
//!   route to a switch's peer gets no completion at all, which libibmad reports that way;
//!   a kernel always completes a timed-out send with status 110, which C does not report.
//! * C's libibnetdisc prints `Duplicate Port ... already exists in ports DB` when a scan
//!   starts at a CA or router through `-D` (it inserts the start port twice); the scan is
//!   the same.
//! * `ibstat <ca> <bad port>`: C's `ibpanic` ends in `: <strerror(errno)>` of whatever
//!   errno an earlier call left (under umad2sim ENOENT); ours has no such suffix.
//! * `ibqueryerrors` whose PMA queries fail: the same lines, but ours prints the
//!   `_do_madrpc failed` ones of a batch of queries before their `query failed on` lines.
//! * C's `iblinkinfo --diff --diffcheck nodedesc` (or `lid`) dereferences a null pointer
//!   when a description (LID) changed; ours prints the change (iblinkinfo.rs says how).

mod common;

use common::sa::DropInSa;
use common::{assert_valid, json_schema, mask_data, mask_traffic, native, run, umad};
use compat::require_drop_in;
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// How a case's output is compared.
#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    /// stdout and exit code.
    Out,
    /// stdout, exit code and (filtered) stderr.
    All,
}

/// A tool, its arguments (with `{name}` placeholders), and what is compared.
type Case = (&'static str, &'static [&'static str], Cmp);

use Cmp::{All, Out};

/// The values the placeholders stand for.
struct Vars(Vec<(String, String)>);

impl Vars {
    fn expand(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|a| {
                let mut a = a.to_string();
                for (k, v) in &self.0 {
                    a = a.replace(&format!("{{{k}}}"), v);
                }
                assert!(!a.contains('{'), "unknown placeholder in {a}");
                a
            })
            .collect()
    }
}

/// The value of `Name:....value` line `name` in C's text.
fn field<'a>(text: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim_start_matches('.'))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// C `<tool> <args>` under umad2sim: exit code, stdout, stderr.
fn c(sim: &Ibsim, tool: &str, args: &[String]) -> (i32, String, String) {
    c_at(sim, None, tool, args)
}

/// [`c`] attached at `node` (`SIM_HOST`), or at the netfile's default attach point.
fn c_at(sim: &Ibsim, node: Option<&str>, tool: &str, args: &[String]) -> (i32, String, String) {
    let mut cmd = sim.umad2sim_command(tool);
    if let Some(n) = node {
        cmd.env("SIM_HOST", n);
    }
    let out = run(cmd.args(args));
    let unpath = |t: &[u8]| {
        let t = String::from_utf8_lossy(t).into_owned();
        match ibsim_harness::find_tool(tool) {
            Some(p) => t.replace(&format!("{}: ", p.display()), &format!("{tool}: ")),
            None => t,
        }
    };
    (
        out.status.code().unwrap_or(-1),
        unpath(&out.stdout),
        unpath(&out.stderr),
    )
}

/// `umad <tool> <args>` natively: exit code, stdout, stderr.
fn ours(sim: &Ibsim, tool: &str, args: &[String]) -> (i32, String, String) {
    ours_at(sim, None, tool, args)
}

/// [`ours`] attached at `node` (`UMAD_IBSIM_NODE`).
fn ours_at(sim: &Ibsim, node: Option<&str>, tool: &str, args: &[String]) -> (i32, String, String) {
    let mut cmd = native(sim, &umad());
    if let Some(n) = node {
        cmd.env("UMAD_IBSIM_NODE", n);
    }
    let out = run(cmd.arg(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run-dependent values masked: the topology date, traffic counters (`perfquery` lines and
/// `ibqueryerrors --data` items), the SM's activity count.
fn mask(text: &str) -> String {
    let text = common::mask_date(&mask_traffic(&mask_data(text)));
    text.lines()
        .map(
            |l| match (l.find("activity count "), l.find(" priority ")) {
                (Some(a), Some(p)) if a < p => {
                    format!("{}activity count N{}\n", &l[..a], &l[p..])
                }
                _ => format!("{l}\n"),
            },
        )
        .collect()
}

/// stderr without what the simulator and libibumad print (umad2sim's `sim_*`, `umad_*`),
/// pids masked.
fn errors(text: &str) -> String {
    text.lines()
        .filter(|l| {
            let f = l
                .split_once("] ")
                .map_or("", |(_, r)| r.split(':').next().unwrap_or(""));
            !(f.starts_with("sim_") || f.starts_with("umad_"))
        })
        .map(|l| match l.split_once("] ") {
            Some((head, rest)) if head.contains(": [") => {
                format!("{}: [pid] {rest}\n", head.split(':').next().unwrap_or(""))
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

/// Runs every case both ways; returns how many succeeded in C (exit 0 or 1 with output).
fn compare(sim: &Ibsim, fabric: &str, cases: &[Case], v: &Vars) -> usize {
    compare_at(sim, fabric, None, cases, v)
}

/// [`compare`] with both tools attached at `node`.
fn compare_at(sim: &Ibsim, fabric: &str, node: Option<&str>, cases: &[Case], v: &Vars) -> usize {
    let mut answered = 0;
    let fabric = match node {
        Some(n) => format!("{fabric} at {n}"),
        None => fabric.to_string(),
    };
    for (tool, args, how) in cases {
        let args = v.expand(args);
        let (c_code, c_out, c_err) = c_at(sim, node, tool, &args);
        let (o_code, o_out, o_err) = ours_at(sim, node, tool, &args);
        assert_eq!(
            o_code, c_code,
            "{fabric}: {tool} {args:?}: exit codes; C:\n{c_out}{c_err}\nours:\n{o_out}{o_err}"
        );
        assert_eq!(
            mask(&o_out),
            mask(&c_out),
            "{fabric}: {tool} {args:?}: stdout; C stderr:\n{c_err}\nour stderr:\n{o_err}"
        );
        if *how == All {
            assert_eq!(
                errors(&o_err),
                errors(&c_err),
                "{fabric}: {tool} {args:?}: stderr"
            );
        }
        if (c_code == 0 || c_code == 1) && !c_out.is_empty() {
            answered += 1;
        }
    }
    answered
}

/// `umad <tool> --json <args>` succeeds and validates against its schema; returns it.
fn json(sim: &Ibsim, tool: &str, schema: &str, args: &[String]) -> serde_json::Value {
    let mut a = vec!["--json".to_string()];
    a.extend(args.iter().cloned());
    let (code, out, err) = ours(sim, tool, &a);
    assert!(code == 0 || code == 1, "{tool} {a:?}: {code}\n{out}{err}");
    assert_valid(&json_schema(schema), &out);
    serde_json::from_str(&out).unwrap()
}

/// Directed routes from odd.net's attach point (H-attach, on S-big's port 17).
const ODD_ROUTES: &[(&str, &str, &str)] = &[
    // (name, DR path, port to read the LID of)
    ("big", "0,1", "0"),
    ("two", "0,1,36", "0"),
    ("base", "0,1,36,2", "0"),
    ("rt1", "0,1,30", "1"),
    ("rt2", "0,1,36,2,3", "2"),
    ("q1", "0,1,5", "1"),
    ("q3", "0,1,36,2,2", "3"),
    ("utf8", "0,1,1", "1"),
    ("d63", "0,1,36,2,4", "1"),
    ("punct", "0,1,36,2,5", "1"),
    ("blank", "0,1,36,2,8", "1"),
    ("empty", "0,1,2", "1"),
    ("self", "0", "1"),
];

/// The LIDs (and GUIDs) of odd.net's nodes, read with C's smpquery by directed route.
fn odd_vars(sim: &Ibsim) -> Vars {
    let mut v = Vec::new();
    for (name, path, port) in ODD_ROUTES {
        let q = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let (code, out, err) = c(sim, "smpquery", &args);
            assert_eq!(code, 0, "smpquery {args:?}: {out}{err}");
            out
        };
        let pi = q(&["-D", "portinfo", path, port]);
        let ni = q(&["-D", "nodeinfo", path]);
        let lid = field(&pi, "Lid").to_string();
        assert_ne!(lid, "0", "{name}: the SM assigned LIDs");
        v.push((name.to_string(), lid));
        v.push((format!("{name}g"), field(&ni, "PortGuid").to_string()));
        v.push((format!("{name}n"), field(&ni, "Guid").to_string()));
    }
    let map = sim.workdir().join("rt-node-name-map");
    let guid = |n: &str| v.iter().find(|(k, _)| k == n).unwrap().1.clone();
    std::fs::write(
        &map,
        format!(
            "# names with spaces, a '#' (the rest is a comment) and an empty one\n\
             {} \"big switch with spaces\"\n{}\t\"base, #1: sw\"\n{} \"quad host\"\n\
             {} \"the router\"\n{}   spaceless-name\n{} \"\"\n",
            guid("bign"),
            guid("basen"),
            guid("q1n"),
            guid("rt1n"),
            guid("blankn"),
            guid("selfn"),
        ),
    )
    .unwrap();
    v.push(("map".into(), map.to_str().unwrap().to_string()));
    Vars(v)
}

const ODD_CASES: &[Case] = &[
    // Errors first: nothing has sent to a LID nobody has yet (ibsim counts relay errors).
    ("ibqueryerrors", &["--skip-sl"], Out),
    (
        "ibqueryerrors",
        &["--skip-sl", "-s", "SymbolErrorCounter"],
        Out,
    ),
    ("ibqueryerrors", &["--skip-sl", "--data"], Out),
    ("ibqueryerrors", &["--skip-sl", "--details"], Out),
    ("ibqueryerrors", &["--skip-sl", "-r"], Out),
    ("ibqueryerrors", &["--skip-sl", "--router"], Out),
    ("ibqueryerrors", &["--skip-sl", "--switch", "-r"], Out),
    ("ibqueryerrors", &["--skip-sl", "--ca", "--data"], Out),
    (
        "ibqueryerrors",
        &["--skip-sl", "--counters", "--router"],
        Out,
    ),
    (
        "ibqueryerrors",
        &["--skip-sl", "--node-name-map", "{map}"],
        Out,
    ),
    ("ibqueryerrors", &["--skip-sl", "-D", "0,1,30"], Out),
    ("ibqueryerrors", &["--skip-sl", "-D", "0,1,36,2", "-r"], Out),
    ("ibnetdiscover", &[], Out),
    ("ibnetdiscover", &["-l"], Out),
    ("ibnetdiscover", &["-g"], Out),
    ("ibnetdiscover", &["-H"], Out),
    ("ibnetdiscover", &["-S"], Out),
    ("ibnetdiscover", &["-R"], Out),
    ("ibnetdiscover", &["-s"], Out),
    ("ibnetdiscover", &["-p"], Out),
    ("ibnetdiscover", &["-f"], Out),
    ("ibnetdiscover", &["-s", "-g"], Out),
    ("ibnetdiscover", &["-p", "-s"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}", "-l"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}", "-g"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}", "-R"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}", "-p"], Out),
    ("ibnodes", &[], Out),
    ("ibhosts", &[], Out),
    ("ibswitches", &[], Out),
    ("ibrouters", &[], Out),
    ("iblinkinfo", &[], Out),
    ("iblinkinfo", &["-l"], Out),
    ("iblinkinfo", &["-p"], Out),
    ("iblinkinfo", &["-l", "-p"], Out),
    ("iblinkinfo", &["-d"], Out),
    ("iblinkinfo", &["--switches-only"], Out),
    ("iblinkinfo", &["--cas-only", "-l"], Out),
    ("iblinkinfo", &["--node-name-map", "{map}"], Out),
    ("iblinkinfo", &["--node-name-map", "{map}", "-l"], Out),
    ("iblinkinfo", &["-D", "0,1,30"], Out),
    ("iblinkinfo", &["-D", "0,1,36,2,3", "-l"], Out),
    ("iblinkinfo", &["-D", "0,1,36,2"], Out),
    ("iblinkinfo", &["-D", "0,1,5"], Out),
    ("iblinkinfo", &["-D", "0,1,2", "-l"], Out),
    ("smpquery", &["nodeinfo", "{base}"], All),
    ("smpquery", &["nodedesc", "{base}"], All),
    ("smpquery", &["portinfo", "{base}"], All),
    ("smpquery", &["portinfo", "{base}", "3"], All),
    ("smpquery", &["switchinfo", "{base}"], All),
    ("smpquery", &["switchinfo", "{two}"], All),
    ("smpquery", &["switchinfo", "{big}"], All),
    ("smpquery", &["nodeinfo", "{rt1}"], All),
    ("smpquery", &["nodeinfo", "{rt2}"], All),
    ("smpquery", &["nodedesc", "{rt1}"], All),
    ("smpquery", &["portinfo", "{rt1}"], All),
    ("smpquery", &["portinfo", "{rt2}", "2"], All),
    ("smpquery", &["switchinfo", "{rt1}"], All),
    ("smpquery", &["-D", "nodeinfo", "0,1,30"], All),
    ("smpquery", &["-D", "switchinfo", "0,1,36,2"], All),
    ("smpquery", &["nodedesc", "{utf8}"], All),
    ("smpquery", &["nodedesc", "{d63}"], All),
    ("smpquery", &["nodedesc", "{punct}"], All),
    ("smpquery", &["nodedesc", "{blank}"], All),
    ("smpquery", &["nodedesc", "{empty}"], All),
    ("smpquery", &["-D", "nodedesc", "0,1,2"], All),
    ("smpdump", &["{empty}", "0x10"], All),
    ("smpquery", &["nodeinfo", "{q1}"], All),
    ("smpquery", &["portinfo", "{q1}", "2"], All),
    ("smpquery", &["portinfo", "{q3}", "3"], All),
    ("smpquery", &["portinfo", "{q1}", "4"], All),
    ("smpquery", &["portinfo", "{q1}", "5"], Out),
    ("smpquery", &["mlnxextportinfo", "{big}", "5"], All),
    ("smpquery", &["mlnxextportinfo", "{big}", "1"], All),
    ("smpquery", &["-D", "mlnxextportinfo", "0,1,1", "1"], All),
    ("ibportstate", &["-D", "0,1", "1"], All),
    ("smpquery", &["sl2vl", "{base}", "3"], All),
    ("smpquery", &["pkeys", "{rt1}"], All),
    ("smpquery", &["guidinfo", "{rt1}"], All),
    (
        "smpquery",
        &["--node-name-map", "{map}", "nodedesc", "{rt1}"],
        All,
    ),
    ("smpdump", &["{base}", "0x11"], All),
    ("smpdump", &["{rt1}", "0x11"], All),
    ("smpdump", &["{rt1}", "0x12"], All),
    ("smpdump", &["{utf8}", "0x10"], All),
    ("smpdump", &["-D", "0,1,30", "0x11"], All),
    ("smpdump", &["-D", "0,1,36,2", "0x15", "0"], All),
    ("ibaddr", &[], All),
    ("ibaddr", &["{rt1}"], All),
    ("ibaddr", &["{rt2}"], All),
    ("ibaddr", &["{base}"], All),
    ("ibaddr", &["{q3}"], All),
    ("ibaddr", &["-l", "{rt1}"], All),
    ("ibaddr", &["-g", "{rt2}"], All),
    ("ibaddr", &["-D", "0,1,36,2,3"], All),
    ("ibroute", &["{big}"], All),
    ("ibroute", &["{base}"], All),
    ("ibroute", &["{two}"], All),
    ("ibroute", &["-a", "{two}"], All),
    ("ibroute", &["-n", "{big}"], All),
    ("ibroute", &["-M", "{base}"], All),
    ("ibroute", &["-D", "0,1,36,2"], All),
    ("ibroute", &["--node-name-map", "{map}", "{base}"], All),
    ("ibroute", &["{rt1}"], All),
    ("ibroute", &["{q1}"], All),
    ("ibroute", &[], Out),
    ("dump_lfts", &[], Out),
    ("dump_lfts", &["-n"], Out),
    ("dump_mfts", &[], Out),
    // Through the router's switches (the SM routes no LID through a router), and between
    // the 4-port HCA's two cabled ports.
    ("ibtracert", &["{self}", "{rt1}"], All),
    ("ibtracert", &["{self}", "{rt2}"], All),
    ("ibtracert", &["{rt1}", "{rt2}"], All),
    ("ibtracert", &["{q1}", "{q3}"], All),
    ("ibtracert", &["{q3}", "{q1}"], All),
    ("ibtracert", &["{blank}", "{utf8}"], All),
    ("ibtracert", &["-n", "{q1}", "{q3}"], All),
    (
        "ibtracert",
        &["--node-name-map", "{map}", "{q1}", "{rt2}"],
        All,
    ),
    ("ibtracert", &["{punct}", "{d63}"], All),
    ("ibtracert", &["{empty}", "{blank}"], All),
    (
        "ibtracert",
        &["--node-name-map", "{map}", "{empty}", "{rt1}"],
        All,
    ),
    ("ibtracert", &["{base}", "{big}"], All),
    ("ibtracert", &[], Out),
    ("perfquery", &["{rt1}", "1"], Out),
    ("perfquery", &["{rt2}", "2"], Out),
    ("perfquery", &["-x", "{rt2}", "2"], Out),
    ("perfquery", &["-E", "{rt1}", "1"], Out),
    ("perfquery", &["{rt1}", "2"], Out),
    ("perfquery", &["{q1}", "1"], Out),
    ("perfquery", &["{q3}", "3"], Out),
    ("perfquery", &["{q1}", "2"], Out),
    ("perfquery", &["{q3}", "4"], Out),
    ("perfquery", &["-x", "{q3}", "3"], Out),
    ("perfquery", &["{self}", "1"], Out),
    ("perfquery", &["{utf8}", "1"], Out),
    ("perfquery", &["{blank}", "1"], Out),
    ("perfquery", &["{empty}", "1"], Out),
    ("perfquery", &["-a", "{base}"], Out),
    ("perfquery", &["{base}", "3"], Out),
    ("perfquery", &["{two}", "255"], Out),
    ("sminfo", &[], All),
    ("sminfo", &["{self}"], All),
    ("ibstat", &[], All),
    ("ibstat", &["-l"], All),
    ("ibstat", &["-s"], All),
    ("ibstat", &["-p"], All),
    ("ibstat", &["ibsim0", "1"], All),
    ("ibportstate", &["{base}", "0"], All),
    ("ibportstate", &["{rt1}", "1"], All),
    ("ibportstate", &["{rt2}", "2"], All),
    ("ibportstate", &["{q1}", "2"], All),
    ("ibportstate", &["{q3}", "3"], All),
    ("ibportstate", &["-D", "0,1", "30"], All),
    ("ibportstate", &["-D", "0,1,36", "1"], Out),
    // A LID nobody has (last: ibsim counts relay errors for it).
    ("ibroute", &["0x2fff"], All),
    ("smpquery", &["nodeinfo", "0x2fff"], All),
    ("ibtracert", &["{self}", "0x2fff"], All),
    ("perfquery", &["0x2fff", "1"], All),
    ("ibaddr", &["0x2fff"], All),
];

/// Run with the tools attached at the router and at the base-port-0 switch (its port 0).
const AT_CASES: &[Case] = &[
    ("ibqueryerrors", &["--skip-sl"], Out),
    ("ibstat", &[], All),
    ("ibstat", &["-p"], All),
    ("ibstat", &["-s"], All),
    ("ibnetdiscover", &[], Out),
    ("ibnetdiscover", &["-p"], Out),
    ("ibnetdiscover", &["-s", "-g"], Out),
    ("iblinkinfo", &[], Out),
    ("iblinkinfo", &["-l"], Out),
    ("ibnodes", &[], Out),
    ("smpquery", &["-D", "nodeinfo", "0"], All),
    ("smpquery", &["-D", "portinfo", "0"], All),
    ("smpquery", &["-D", "portinfo", "0", "2"], All),
    ("smpquery", &["-D", "switchinfo", "0"], All),
    ("smpquery", &["-D", "nodeinfo", "0,1"], All),
    ("ibaddr", &[], All),
    ("sminfo", &[], All),
    ("perfquery", &[], Out),
    ("perfquery", &["-x"], Out),
    ("ibroute", &["-D", "0"], All),
    ("dump_lfts", &[], Out),
    ("ibportstate", &["-D", "0", "1"], Out),
    ("ibtracert", &["{rt2}", "{q1}"], All),
    ("ibtracert", &["{base}", "{self}"], All),
];

/// b2b.net: the local HCA (`{self}`) and its peer (`{peer}`, DR `0,1`).
const B2B_CASES: &[Case] = &[
    ("ibqueryerrors", &["--skip-sl"], Out),
    ("ibqueryerrors", &["--skip-sl", "--data"], Out),
    ("ibqueryerrors", &["--skip-sl", "--switch"], Out),
    ("ibqueryerrors", &["--skip-sl", "-D", "0,1"], Out),
    ("ibnetdiscover", &[], Out),
    ("ibnetdiscover", &["-l"], Out),
    ("ibnetdiscover", &["-g"], Out),
    ("ibnetdiscover", &["-H"], Out),
    ("ibnetdiscover", &["-S"], Out),
    ("ibnetdiscover", &["-R"], Out),
    ("ibnetdiscover", &["-s"], Out),
    ("ibnetdiscover", &["-p"], Out),
    ("ibnetdiscover", &["-s", "-g"], Out),
    ("ibnetdiscover", &["--node-name-map", "{map}"], Out),
    ("ibnodes", &[], Out),
    ("ibhosts", &[], Out),
    ("ibswitches", &[], Out),
    ("ibrouters", &[], Out),
    ("iblinkinfo", &[], Out),
    ("iblinkinfo", &["-l"], Out),
    ("iblinkinfo", &["-p"], Out),
    ("iblinkinfo", &["-D", "0"], Out),
    ("iblinkinfo", &["-D", "0,1"], Out),
    ("iblinkinfo", &["--switches-only"], Out),
    ("smpquery", &["nodeinfo", "{self}"], All),
    ("smpquery", &["-D", "nodeinfo", "0,1"], All),
    ("smpquery", &["-D", "nodedesc", "0,1"], All),
    ("smpquery", &["-D", "portinfo", "0,1", "1"], All),
    ("smpquery", &["-D", "portinfo", "0,1", "2"], All),
    ("smpquery", &["-D", "switchinfo", "0,1"], All),
    ("smpquery", &["nodeinfo", "{peer}"], All),
    ("smpquery", &["-D", "nodeinfo", "0,1,1"], All),
    ("smpdump", &["-D", "0,1", "0x15", "1"], All),
    ("smpdump", &["{peer}", "0x11"], All),
    ("ibaddr", &[], All),
    ("ibaddr", &["-D", "0,1"], All),
    ("ibaddr", &["{peer}"], All),
    ("ibtracert", &["{self}", "{self}"], All),
    ("ibtracert", &["{self}", "{peer}"], All),
    ("ibroute", &["{self}"], All),
    ("ibroute", &["{peer}"], All),
    ("ibroute", &["-D", "0,1"], All),
    ("dump_lfts", &[], Out),
    ("dump_mfts", &[], Out),
    ("perfquery", &[], Out),
    ("perfquery", &["{self}", "1"], Out),
    ("perfquery", &["-x", "{self}", "1"], Out),
    ("perfquery", &["{peer}", "1"], Out),
    ("sminfo", &[], All),
    ("ibstat", &[], All),
    ("ibstat", &["-p"], All),
    ("ibportstate", &["{self}", "1"], All),
    ("ibportstate", &["-D", "0,1", "1"], All),
    ("ibportstate", &["-D", "0,1", "2"], All),
];

#[test]
fn rt_back_to_back_c_and_umad() {
    if !require_ibsim("umad_cli::rt_back_to_back_c_and_umad") {
        return;
    }
    let mut sim = Ibsim::start(fabrics_dir().join("b2b.net")).expect("ibsim starts");
    assert!(!sim.log().contains("ibwarn"), "ibsim warns:\n{}", sim.log());
    sim.start_sm_daemon()
        .expect("opensm comes up on a switchless fabric");
    let lid = |path: &str, port: &str| {
        let args: Vec<String> = ["-D", "portinfo", path, port]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (code, out, err) = c(&sim, "smpquery", &args);
        assert_eq!(code, 0, "{out}{err}");
        field(&out, "Lid").to_string()
    };
    let me = lid("0", "1");
    let peer = lid("0,1", "1");
    assert!(me != "0" && peer != "0" && me != peer, "{me} {peer}");
    let map = sim.workdir().join("rt-b2b-map");
    std::fs::write(&map, "0x100002 \"the right one\"\n").unwrap();
    let v = Vars(vec![
        ("self".into(), me),
        ("peer".into(), peer),
        ("map".into(), map.to_str().unwrap().to_string()),
    ]);
    let answered = compare(&sim, "b2b.net", B2B_CASES, &v);
    assert!(answered >= 30, "b2b.net: only {answered} cases answered");
    let topo = json(&sim, "ibnetdiscover", "ibnetdiscover-v1.schema.json", &[]);
    let nodes = topo["fabric"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 2, "{topo}");
    assert!(nodes.iter().all(|n| n["node_type"] == "CA"), "{topo}");
    json(&sim, "iblinkinfo", "iblinkinfo-v1.schema.json", &[]);
    drop(sim);

    // The SA cases, on a second simulator with opensm on the drop-in at H-left and the
    // tools at H-right.
    let Some(drop_in) = require_drop_in("umad_cli::rt_back_to_back_c_and_umad") else {
        return;
    };
    let sim = Ibsim::start(fabrics_dir().join("b2b.net")).expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    assert_eq!(
        (f.sm_node.as_str(), f.tool_node.as_str()),
        ("H-left", "H-right")
    );
    let _sm = f.start_sm();
    let cases: &[&[&str]] = &[
        &[],
        &["PIR"],
        &["-s"],
        &["PR"],
        &["LR"],
        &["SWIR"],
        &["-x"],
        &["-g"],
        &["LFTR"],
        &["-L", "left HCA-1"],
        &["-O", "1"],
    ];
    let mut runs: Vec<(&str, Vec<&str>)> = cases.iter().map(|a| ("saquery", a.to_vec())).collect();
    runs.extend([
        ("ibqueryerrors", vec![]),
        ("ibqueryerrors", vec!["--data"]),
        ("ibqueryerrors", vec!["-G", "0x100001"]),
        ("iblinkinfo", vec!["-G", "0x100001"]),
        ("iblinkinfo", vec!["-G", "0x100003", "-l"]),
        ("perfquery", vec!["-G", "0x100001", "1"]),
        ("smpquery", vec!["-G", "nodeinfo", "0x100001"]),
        ("ibaddr", vec!["-G", "0x100001"]),
        ("ibtracert", vec!["-G", "0x100003", "0x100001"]),
        ("sminfo", vec![]),
    ]);
    for (tool, args) in &runs {
        let (cc, co, ce) = f.c(tool, args);
        let (oc, oo, oe) = f.ours(tool, args);
        assert_eq!(
            oc, cc,
            "b2b.net SA: {tool} {args:?}: exit codes\n{co}{ce}\n{oo}{oe}"
        );
        assert_eq!(mask(&oo), mask(&co), "b2b.net SA: {tool} {args:?}");
        assert_eq!(errors(&oe), errors(&ce), "b2b.net SA: {tool} {args:?}");
    }
}

#[test]
fn rt_odd_fabric_c_and_umad() {
    if !require_ibsim("umad_cli::rt_odd_fabric_c_and_umad") {
        return;
    }
    let mut sim = Ibsim::builder(fabrics_dir().join("odd.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    assert!(!sim.log().contains("ibwarn"), "ibsim warns:\n{}", sim.log());
    sim.start_sm_daemon().expect("opensm comes up");
    // An error on the router and on the base-port-0 switch, for ibqueryerrors.
    for cmd in [
        "PerformanceSet \"R-gw\"[2] PortCounters.SymbolErrorCounter=17",
        "PerformanceSet \"S-base\"[3] PortCounters.LinkDownedCounter=4",
    ] {
        sim.console(cmd).expect("PerformanceSet");
    }
    let v = odd_vars(&sim);
    let answered = compare(&sim, "odd.net", ODD_CASES, &v);
    assert!(answered >= 120, "odd.net: only {answered} cases answered");
    for node in ["R-gw", "S-base"] {
        let answered = compare_at(&sim, "odd.net", Some(node), AT_CASES, &v);
        assert!(
            answered >= 18,
            "odd.net at {node}: only {answered} answered"
        );
    }
    // The FDR10 link shows as such from the Mellanox switch's side only.
    let (_, links, _) = c(&sim, "iblinkinfo", &[]);
    assert_eq!(links.matches("(FDR10)").count(), 1, "{links}");
    let (_, stat, _) = c_at(&sim, Some("S-base"), "ibstat", &[]);
    assert!(stat.starts_with("Switch 'ibsim0'"), "{stat}");

    // --cache writes the bytes C writes. rdma-core 44 cleans a description in place when
    // it prints it (remap_node_name without a map entry, the topology's out_node), so what
    // is cached depends on what was printed: H-utf8's UTF-8 bytes are spaces after the
    // topology, -p and -H, raw after -R and when the map names it. Each tool then reads the
    // other's cache the same way.
    let map2 = sim.workdir().join("rt-map-utf8");
    std::fs::write(&map2, "0x100007 \"utf8, mapped\"\n").unwrap();
    let map2 = map2.to_str().unwrap().to_string();
    for (i, mode) in [
        &[][..],
        &["-g"],
        &["-p"],
        &["-H"],
        &["-R"],
        &["-p", "--node-name-map", &map2],
        &["--node-name-map", &map2],
    ]
    .iter()
    .enumerate()
    {
        let c_cache = sim.workdir().join(format!("rt-c-{i}.cache"));
        let o_cache = sim.workdir().join(format!("rt-o-{i}.cache"));
        let with = |path: &std::path::Path| {
            let mut a: Vec<String> = mode.iter().map(|s| s.to_string()).collect();
            a.extend(["--cache".to_string(), path.to_str().unwrap().to_string()]);
            a
        };
        let (code, out, err) = c(&sim, "ibnetdiscover", &with(&c_cache));
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        let (code, out, err) = ours(&sim, "ibnetdiscover", &with(&o_cache));
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        let (cb, ob) = (
            std::fs::read(&c_cache).unwrap(),
            std::fs::read(&o_cache).unwrap(),
        );
        assert!(cb == ob, "{mode:?}: the caches differ");
        for (reader, cache) in [("C", &o_cache), ("ours", &c_cache)] {
            let a = vec![
                "--load-cache".to_string(),
                cache.to_str().unwrap().to_string(),
            ];
            let (cc, co, _) = c(&sim, "ibnetdiscover", &a);
            let (oc, oo, _) = ours(&sim, "ibnetdiscover", &a);
            assert_eq!(
                (oc, mask(&oo)),
                (cc, mask(&co)),
                "{mode:?}: {reader}'s cache"
            );
        }
    }

    // What ibsim simulates: a router is NodeInfo type 3; S-base has base port 0.
    let (_, ni, _) = c(&sim, "smpquery", &v.expand(&["nodeinfo", "{rt1}"]));
    assert_eq!(field(&ni, "NodeType"), "Router");
    let (_, si, _) = c(&sim, "smpquery", &v.expand(&["switchinfo", "{base}"]));
    assert_eq!(field(&si, "EnhancedPort0"), "0");
    let (_, si, _) = c(&sim, "smpquery", &v.expand(&["switchinfo", "{big}"]));
    assert_eq!(field(&si, "EnhancedPort0"), "1");

    // Multicast: the router, the 4-port HCA and the blank-named HCA join the SM's group;
    // once opensm has programmed the MFTs, the multicast traces and tables match.
    let (_, groups, _) = c(&sim, "saquery", &["-g".to_string()]);
    let dotted = |name: &str| {
        groups
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim_start_matches('.').to_string())
            .unwrap_or_else(|| panic!("no {name} in {groups}"))
    };
    let (mgid, mlid) = (dotted("MGID"), dotted("Mlid"));
    let mgid: ibmad::Gid = mgid.parse::<std::net::Ipv6Addr>().unwrap().into();
    for node in ["R-gw", "H-quad", "H-blank"] {
        common::join(&sim, node, mgid);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, t, _) = c(&sim, "dump_mfts", &[]);
        if t.matches(" 0 valid mlids").count() == 0 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let mcast: Vec<(&str, Vec<&str>)> = vec![
        ("ibtracert", vec!["-m", &mlid, "{q1}", "{rt1}"]),
        ("ibtracert", vec!["-m", &mlid, "{blank}", "{q3}"]),
        ("ibtracert", vec!["-m", &mlid, "-n", "{rt2}", "{blank}"]),
        ("ibtracert", vec!["-m", &mlid, "{self}", "{q1}"]),
        ("dump_mfts", vec![]),
        ("dump_mfts", vec!["-n"]),
        ("ibroute", vec!["-M", "{base}"]),
        ("ibroute", vec!["-M", "{big}"]),
        ("ibroute", vec!["-M", "-n", "{two}"]),
    ];
    let mut traced = 0;
    for (tool, args) in &mcast {
        let args = v.expand(args);
        let (cc, co, ce) = c(&sim, tool, &args);
        let (oc, oo, oe) = ours(&sim, tool, &args);
        assert_eq!(
            (oc, &oo),
            (cc, &co),
            "{tool} {args:?}: C stderr {ce}\nours {oe}"
        );
        traced += usize::from(*tool == "ibtracert" && cc == 0);
    }
    assert!(traced >= 2, "only {traced} multicast traces");

    // --json of the main tools validates; the router and the odd names are in it.
    let topo = json(&sim, "ibnetdiscover", "ibnetdiscover-v1.schema.json", &[]);
    let nodes = topo["fabric"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 11, "{topo}");
    assert!(nodes.iter().any(|n| n["description"] == ""), "{topo}");
    let router = nodes
        .iter()
        .find(|n| n["node_type"] == "Router")
        .unwrap_or_else(|| panic!("no router in {topo}"));
    assert_eq!(router["description"], "gw router", "{router}");
    let base = nodes
        .iter()
        .find(|n| n["device_id"] == 0xcafe)
        .unwrap_or_else(|| panic!("no S-base in {topo}"));
    assert_eq!(base["enhanced_port0"], false, "{base}");
    assert!(
        nodes.iter().any(|n| n["description"]
            == "odd-63 HCA: port 1, port 2 # desc is exactly sixty-three chars!"),
        "{topo}"
    );
    json(&sim, "iblinkinfo", "iblinkinfo-v1.schema.json", &[]);
    json(
        &sim,
        "ibqueryerrors",
        "ibqueryerrors-v1.schema.json",
        &["--skip-sl".to_string()],
    );
    json(
        &sim,
        "smpquery",
        "smpquery-v1.schema.json",
        &v.expand(&["nodeinfo", "{rt1}"]),
    );
    json(
        &sim,
        "perfquery",
        "perfquery-v1.schema.json",
        &v.expand(&["{rt2}", "2"]),
    );
    json(
        &sim,
        "ibtracert",
        "ibtracert-v1.schema.json",
        &v.expand(&["{q1}", "{q3}"]),
    );
    json(
        &sim,
        "ibroute",
        "ibroute-v1.schema.json",
        &v.expand(&["{base}"]),
    );
    json(&sim, "ibstat", "ibstat-v1.schema.json", &[]);
    json(&sim, "sminfo", "sminfo-v1.schema.json", &[]);
}

/// Directed routes from the 4-port HCA's port 1 (on S-big's port 5), where the drop-in SA
/// cases run.
const QUAD_ROUTES: &[(&str, &str, &str)] = &[
    ("big", "0,1", "0"),
    ("two", "0,1,36", "0"),
    ("base", "0,1,36,2", "0"),
    ("rt1", "0,1,30", "1"),
    ("rt2", "0,1,36,2,3", "2"),
    ("q3", "0,1,36,2,2", "3"),
    ("self", "0", "1"),
];

/// The cases that need whole SA answers (opensm and both tools on the drop-in).
const SA_CASES: &[Case] = &[
    ("ibqueryerrors", &[], Out),
    ("ibqueryerrors", &["-s", "SymbolErrorCounter"], Out),
    ("ibqueryerrors", &["--data"], Out),
    ("ibqueryerrors", &["--details"], Out),
    ("ibqueryerrors", &["-r"], Out),
    ("ibqueryerrors", &["--router"], Out),
    ("ibqueryerrors", &["-c", "--switch"], Out),
    ("ibqueryerrors", &["-G", "{rt1g}"], Out),
    ("ibqueryerrors", &["-G", "{q3g}", "-r"], Out),
    ("ibqueryerrors", &["-t", "200", "-G", "{basen}"], Out),
    ("iblinkinfo", &["-G", "{rt1g}"], Out),
    ("iblinkinfo", &["-S", "{rt2g}", "-l"], Out),
    ("iblinkinfo", &["-G", "{q3g}"], Out),
    ("iblinkinfo", &["-t", "200", "-S", "{basen}"], Out),
    (
        "iblinkinfo",
        &["-t", "200", "--switch", "{basen}", "-p"],
        Out,
    ),
    ("iblinkinfo", &["-t", "200", "-G", "{twon}", "-l"], Out),
    ("iblinkinfo", &["-G", "0x999"], Out),
    ("saquery", &[], Out),
    ("saquery", &["-s"], Out),
    ("saquery", &["SWIR"], Out),
    ("saquery", &["LR", "{rt1}"], Out),
    (
        "saquery",
        &["PR", "--slid", "{self}", "--dlid", "{rt2}"],
        Out,
    ),
    ("saquery", &["-O", "{rt1}"], Out),
    ("saquery", &["-U", "{rt2g}"], Out),
    ("saquery", &["-L", "gw router"], Out),
    (
        "saquery",
        &[
            "-G",
            "odd-63 HCA: port 1, port 2 # desc is exactly sixty-three chars!",
        ],
        Out,
    ),
    ("saquery", &["-l", "  a, b - c: d #2  "], Out),
    ("saquery", &["NR", "{rt2}"], Out),
    // An empty name or LID (before a '/'): C's get_lid finds no LID in it.
    ("saquery", &[""], All),
    ("saquery", &["PIR", "/1"], All),
    ("saquery", &["LR", ""], All),
    ("saquery", &["-L", ""], All),
    ("saquery", &["-l", "   "], All),
    // opensm's records of unconnected ports have LinkWidthActive 0: C warns for each.
    ("saquery", &["PIR"], All),
    ("saquery", &["PIR", "{rt1}"], All),
    ("smpquery", &["-G", "nodeinfo", "{rt2g}"], Out),
    ("perfquery", &["-G", "{rt1g}", "1"], Out),
    ("ibtracert", &["-G", "{selfg}", "{q3g}"], Out),
];

#[test]
fn rt_odd_fabric_live_sa() {
    if !require_ibsim("umad_cli::rt_odd_fabric_live_sa") {
        return;
    }
    let Some(drop_in) = require_drop_in("umad_cli::rt_odd_fabric_live_sa") else {
        return;
    };
    let sim = Ibsim::builder(fabrics_dir().join("odd.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    assert_eq!(f.tool_node, "H-quad");
    let _sm = f.start_sm();
    let inject = || {
        for cmd in [
            "PerformanceSet \"R-gw\"[1] PortCounters.SymbolErrorCounter=23",
            "PerformanceSet \"H-quad\"[3] PortCounters.PortRcvErrors=5",
            "PerformanceSet \"S-base\"[2] PortCounters.PortXmitDiscards=6",
        ] {
            sim.console(cmd).expect("PerformanceSet");
        }
    };
    inject();
    let mut v = Vec::new();
    for (name, path, port) in QUAD_ROUTES {
        let (code, pi, err) = f.c("smpquery", &["-D", "portinfo", path, port]);
        assert_eq!(code, 0, "{pi}{err}");
        let (code, ni, err) = f.c("smpquery", &["-D", "nodeinfo", path]);
        assert_eq!(code, 0, "{ni}{err}");
        v.push((name.to_string(), field(&pi, "Lid").to_string()));
        v.push((format!("{name}g"), field(&ni, "PortGuid").to_string()));
        v.push((format!("{name}n"), field(&ni, "Guid").to_string()));
    }
    let v = Vars(v);
    let mut answered = 0;
    for (tool, args, how) in SA_CASES {
        let args = v.expand(args);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (c_code, c_out, c_err) = f.c(tool, &a);
        let (o_code, o_out, o_err) = f.ours(tool, &a);
        assert_eq!(
            o_code, c_code,
            "odd.net SA: {tool} {a:?}: exit codes; C:\n{c_out}{c_err}\nours:\n{o_out}{o_err}"
        );
        assert_eq!(
            mask(&o_out),
            mask(&c_out),
            "odd.net SA: {tool} {a:?}: stdout; C stderr:\n{c_err}\nour stderr:\n{o_err}"
        );
        if *how == All {
            assert_eq!(errors(&o_err), errors(&c_err), "odd.net SA: {tool} {a:?}");
        }
        if (c_code == 0 || c_code == 1) && !c_out.is_empty() {
            answered += 1;
        }
    }
    assert!(answered >= 25, "odd.net SA: only {answered} answered");
    // The errors injected on the router and the 4-port HCA's second switch are found.
    let (code, out, err) = f.ours("ibqueryerrors", &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("[SymbolErrorCounter == 23]"), "{out}");
    assert!(out.contains("[PortRcvErrors == 5]"), "{out}");
    assert!(out.contains("Errors for \"gw router\""), "{out}");

    // -k clears the error counters, -K the data counters: C's run and a plain run after it,
    // then the same injection and ours.
    for clear in ["-k", "-K"] {
        let (c_code, c_out, _) = f.c("ibqueryerrors", &[clear]);
        let (_, c_after, _) = f.c("ibqueryerrors", &[]);
        inject();
        let (o_code, o_out, _) = f.ours("ibqueryerrors", &[clear]);
        let (_, o_after, _) = f.ours("ibqueryerrors", &[]);
        assert_eq!(o_code, c_code, "{clear}");
        assert_eq!(mask(&o_out), mask(&c_out), "{clear}");
        assert_eq!(mask(&o_after), mask(&c_after), "{clear} after");
        if clear == "-k" {
            assert!(!o_after.contains("SymbolErrorCounter =="), "{o_after}");
        }
        inject();
    }
    let (code, out, err) = f.ours("ibqueryerrors", &["--json", "--router"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_valid(&json_schema("ibqueryerrors-v1.schema.json"), &out);
    let (code, out, err) = f.ours("saquery", &["--json"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_valid(&json_schema("saquery-v1.schema.json"), &out);
}
