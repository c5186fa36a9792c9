//! The tools on `fabrics/lmc.net` swept by opensm with LMC 2 (every CA port owns a range of
//! four LIDs; `H-pre` keeps the range its netfile presets, 64..=67), against C: the same exit
//! code, the same stdout byte for byte and the same stderr (process ids masked, and umad2sim's
//! own `sim_connect` lines dropped), with only run-dependent values masked (traffic counters,
//! sminfo's activity count). LIDs are used at their base and at offsets inside (and just past)
//! their ranges: `ibaddr`, `smpquery`, `smpdump`, `ibroute`, `dump_lfts`, `ibtracert`,
//! `perfquery`, `ibportstate`, `ibnetdiscover`, `iblinkinfo`, `ibqueryerrors`, `ibstat` and
//! the `ibnodes` family, attached at four points: the default HCA port (`H-sm`), a 2-port HCA
//! whose port 1 is down and whose port 2 has the link (`H-half`: ibsim attaches a CA at its
//! first port, so the tools sit on the dead port, as on a host whose cable is in the other
//! port), a switch with an enhanced port 0 (`S-top`) and one with a base port 0 (`S-base`).
//! `saquery` (PathRecords between LMC LIDs, PortInfoRecords, LID ranges by name) and the
//! SA-resolved `-G` destinations go through [`DropInSa`] (opensm with LMC 2 on the drop-in,
//! so RMPP tables arrive whole). `sminfo` is compared against a master (priority 5) and a
//! standby SM (priority 1), at their base LIDs and offsets. A last fabric has its SM resident
//! on a switch (`S-top`) sweeping with LMC 3 and `lmc_esp0`, so switches own LID ranges too.
//! The main tools' `--json` validates against docs/json/*.schema.json.
//!
//! Known differences, not compared (see the cases marked [`Check::Stdout`]):
//! * combined-route SMPs (`smpquery -c`, and `ibportstate` asking a switch port's peer): ibsim
//!   drops them without an answer and umad2sim never reports a send timeout, so C's
//!   `umad_recv` times out and C adds `_do_madrpc: recv failed: Connection timed out` on
//!   stderr after one attempt; our MAD layer reports the timeout as the kernel does, after
//!   C's three attempts, which is what C prints on a real kernel;
//! * usage texts: ours lists `--json` as well (those lines are taken out before comparing);
//! * a port that does not open: ours says why first (`<tool>: can't open port ...`, taken out
//!   before comparing), then C's texts;
//! * saquery without an SA (the dead port of `H-half`): C's `ibpanic` ends with the `errno`
//!   its libibumad left, `No such file or directory` under umad2sim (whose sysfs lacks files)
//!   and `Success` otherwise; ours says `Success` (stdout and exit code are compared).

mod common;

use std::collections::BTreeMap;

use common::sa::{ran, DropInSa, Ran};
use common::{assert_valid, json_schema, mask_date, mask_traffic, native, run, umad};
use compat::require_drop_in;
use ibsim_harness::{fabrics_dir, find_tool, require_ibsim, Ibsim};

const FABRIC: &str = "lmc.net";
/// The LMC opensm sweeps with.
const LMC: u8 = 2;

/// What a case compares besides the exit code.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Check {
    /// stdout and stderr.
    Both,
    /// stdout only (a known stderr difference; see the module docs).
    Stdout,
}
use Check::{Both, Stdout};

/// One case: where the tools attach (`""` = the default port), the tool, its arguments
/// (`{key}` / `{key+n}`: a LID of [`Lids`]), what is compared.
type Case = (&'static str, &'static str, &'static [&'static str], Check);

/// LIDs by name, from C's `ibnetdiscover`: switches by description (`top`, `bottom`,
/// `base`), CA ports by the first word of the description and the port number (`sm1`,
/// `dual1`, `dual2`, `one1`, `half2`, `pre1`); with the LMC of each.
#[derive(Debug, Default)]
struct Lids {
    lid: BTreeMap<String, (u16, u8)>,
    /// Port GUIDs of the CA ports, by the same names (`0x...`).
    guid: BTreeMap<String, String>,
}

impl Lids {
    fn parse(topology: &str) -> Lids {
        let mut lids = Lids::default();
        let mut ca: Option<String> = None;
        let quoted = |l: &str| l.split('"').nth(1).map(str::to_string);
        let after = |l: &str, key: &str| -> Option<u16> {
            l.rsplit_once(key)?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        for l in topology.lines() {
            if l.starts_with("Switch") {
                ca = None;
                let desc = l.split_once('#').and_then(|(_, c)| quoted(c)).unwrap();
                let (lid, lmc) = (after(l, " lid ").unwrap(), after(l, " lmc ").unwrap());
                lids.lid.insert(desc, (lid, lmc as u8));
            } else if l.starts_with("Ca") {
                let desc = l.split_once('#').and_then(|(_, c)| quoted(c)).unwrap();
                ca = desc.split_whitespace().next().map(str::to_string);
            } else if let (Some(name), Some(rest)) = (&ca, l.strip_prefix('[')) {
                let (port, rest) = rest.split_once(']').unwrap();
                let guid = rest
                    .strip_prefix('(')
                    .and_then(|g| g.split_once(')'))
                    .map(|(g, _)| format!("0x{g:0>16}"))
                    .unwrap();
                // `# lid <lid> lmc <lmc> "<peer>" lid <peer lid> <width><speed>`
                let comment: Vec<&str> = l.split_once("# ").unwrap().1.split_whitespace().collect();
                let lid = comment[1].parse().unwrap();
                let lmc = comment[3].parse().unwrap();
                lids.lid.insert(format!("{name}{port}"), (lid, lmc));
                lids.guid.insert(format!("{name}{port}"), guid);
            }
        }
        lids
    }

    /// `{key}`, `{key+n}` (a LID) and `{g:key}` (a port GUID) in `arg` replaced.
    fn expand(&self, arg: &str) -> String {
        let mut out = String::new();
        let mut rest = arg;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find('}').map(|e| i + e).unwrap();
            let key = &rest[i + 1..end];
            if let Some(name) = key.strip_prefix("g:") {
                out.push_str(&self.guid[name]);
            } else {
                let (name, off) = match key.split_once('+') {
                    Some((n, o)) => (n, o.parse::<u16>().unwrap()),
                    None => (key, 0),
                };
                let (lid, _) = self
                    .lid
                    .get(name)
                    .unwrap_or_else(|| panic!("no LID {name}"));
                out.push_str(&(lid + off).to_string());
            }
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        args.iter().map(|a| self.expand(a)).collect()
    }
}

/// C `<tool> <args>` under umad2sim, attached at `host` (`SIM_HOST`; `""`: the default).
fn c_at(sim: &Ibsim, host: &str, tool: &str, args: &[String]) -> Ran {
    let mut cmd = sim.umad2sim_command(tool);
    if !host.is_empty() {
        cmd.env("SIM_HOST", host);
    }
    ran(run(cmd.args(args)))
}

/// `umad <tool> <args>` natively, attached at `host` (`UMAD_IBSIM_NODE`).
fn ours_at(sim: &Ibsim, host: &str, tool: &str, args: &[String]) -> Ran {
    let mut cmd = native(sim, &umad());
    if !host.is_empty() {
        cmd.env("UMAD_IBSIM_NODE", host);
    }
    ran(run(cmd.arg(tool).args(args)))
}

/// What may differ between two runs, masked: C's `argv[0]` path where it names itself,
/// process ids in `ibwarn:`/`ibpanic:` lines, umad2sim's own lines, traffic counters,
/// sminfo's activity count, ibnetdiscover's date line and our usage texts' `--json`
/// option.
fn normalize(text: &str, tool: &str) -> String {
    let text = match find_tool(tool) {
        Some(p) => text.replace(&format!("{}", p.display()), tool),
        None => text.to_string(),
    };
    let mut out = String::new();
    let mut in_json_help = false;
    for l in text.lines() {
        if l.contains("] sim_connect: attached as client") || l.contains("sim_client_set_sm") {
            continue;
        }
        // Our reason for a port that did not open, where C's libibumad would print its own
        // diagnostics (C's libibmad and tool lines that follow are compared).
        if l.split_once(": can't open port").is_some_and(|(p, _)| {
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        }) {
            continue;
        }
        if l.starts_with("  --json ") {
            in_json_help = true;
            continue;
        }
        if in_json_help && l.starts_with("                          ") {
            continue;
        }
        in_json_help = false;
        let mut l = l.to_string();
        for p in ["ibwarn: [", "ibpanic: ["] {
            if let Some(rest) = l.strip_prefix(p) {
                if let Some((_, tail)) = rest.split_once(']') {
                    l = format!("{p}PID]{tail}");
                }
            }
        }
        if let Some((head, tail)) = l.split_once(", activity count ") {
            let tail = tail.split_once(' ').map_or("", |(_, t)| t);
            l = format!("{head}, activity count N {tail}");
        }
        out.push_str(&l);
        out.push('\n');
    }
    mask_traffic(&mask_date(&out))
}

/// Compares `c` and `ours` of one case; returns whether C succeeded.
fn same(what: &str, tool: &str, check: Check, c: Ran, ours: Ran) -> bool {
    let (cc, co, ce) = c;
    let (oc, oo, oe) = ours;
    assert_eq!(oc, cc, "{what}: exit codes; C:\n{co}{ce}\nours:\n{oo}{oe}");
    assert_eq!(
        normalize(&oo, tool),
        normalize(&co, tool),
        "{what}: stdout differs; C stderr:\n{ce}\nour stderr:\n{oe}"
    );
    if check == Both {
        assert_eq!(
            normalize(&oe, tool),
            normalize(&ce, tool),
            "{what}: stderr differs"
        );
    }
    cc == 0
}

/// Runs every case both ways; returns how many succeeded in C.
fn compare(sim: &Ibsim, lids: &Lids, cases: &[Case]) -> usize {
    let mut ok = 0;
    for &(host, tool, args, check) in cases {
        let args = lids.args(args);
        let what = format!("[{host}] {tool} {args:?}");
        let c = c_at(sim, host, tool, &args);
        let ours = ours_at(sim, host, tool, &args);
        ok += usize::from(same(&what, tool, check, c, ours));
    }
    ok
}

/// The fabric swept with LMC 2, and its LIDs (checked: ranges of four, aligned, `H-pre`
/// kept its preset range, switches LMC 0).
fn lmc_fabric() -> (Ibsim, Lids) {
    let sim = Ibsim::start(fabrics_dir().join(FABRIC)).expect("ibsim starts");
    let log = sim.log();
    assert!(
        !log.contains("cannot parse") && !log.contains("WARN"),
        "ibsim warns about {FABRIC}:\n{log}"
    );
    sim.opensm().lmc(LMC).run_once().expect("opensm --lmc 2 -o");
    let (code, topo, err) = c_at(&sim, "", "ibnetdiscover", &[]);
    assert_eq!(code, 0, "ibnetdiscover: {err}");
    let lids = Lids::parse(&topo);
    check_ranges(&lids);
    (sim, lids)
}

fn check_ranges(lids: &Lids) {
    let names: Vec<&str> = lids.lid.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["base", "bottom", "dual1", "dual2", "half2", "one1", "pre1", "sm1", "top"],
        "{lids:?}"
    );
    for (name, &(lid, lmc)) in &lids.lid {
        if ["top", "bottom", "base"].contains(&name.as_str()) {
            assert_eq!(lmc, 0, "switch {name}");
        } else {
            assert_eq!(lmc, LMC, "{name}: LMC");
            assert_eq!(lid % (1 << LMC), 0, "{name}: base LID {lid} is aligned");
        }
    }
    assert_eq!(lids.lid["pre1"], (64, LMC), "H-pre keeps its preset range");
}

/// Cases without an SM resident (after one sweep).
const SMP_CASES: &[Case] = &[
    // The local port (H-sm), its LID range and LMC.
    ("", "ibstat", &[], Both),
    ("", "ibstat", &["-s"], Both),
    ("", "ibstat", &["-p"], Both),
    ("", "ibstat", &["ibsim0", "1"], Both),
    ("", "ibstat", &["ibsim0", "2"], Both),
    ("", "ibstat", &["mlx5_0"], Both),
    ("", "ibaddr", &[], Both),
    ("", "ibaddr", &["-l"], Both),
    ("", "ibaddr", &["-g"], Both),
    ("", "ibaddr", &["{sm1}"], Both),
    ("", "ibaddr", &["{sm1+1}"], Both),
    ("", "ibaddr", &["-l", "{sm1+3}"], Both),
    ("", "ibaddr", &["{dual1+2}"], Both),
    ("", "ibaddr", &["-l", "{dual2+3}"], Both),
    ("", "ibaddr", &["-g", "{one1+1}"], Both),
    ("", "ibaddr", &["{half2+3}"], Both),
    ("", "ibaddr", &["-L", "{pre1+1}"], Both),
    ("", "ibaddr", &["{pre1+3}"], Both),
    ("", "ibaddr", &["{pre1+4}"], Both),
    ("", "ibaddr", &["{half2+4}"], Both),
    ("", "ibaddr", &["{top}"], Both),
    ("", "ibaddr", &["-l", "{base}"], Both),
    ("", "ibaddr", &["-D", "0,1,2"], Both),
    ("", "ibaddr", &["-l", "-D", "0,1,8,4"], Both),
    ("", "ibaddr", &["-D", "0,1,7,3"], Both),
    // PortInfo (the LMC field) at offsets.
    ("", "smpquery", &["portinfo", "{sm1+2}"], Both),
    ("", "smpquery", &["pi", "{dual1+1}", "1"], Both),
    ("", "smpquery", &["pi", "{dual2+3}", "2"], Both),
    ("", "smpquery", &["pi", "{half2+2}", "2"], Both),
    ("", "smpquery", &["pi", "{half2}", "1"], Both),
    ("", "smpquery", &["pi", "{pre1+3}"], Both),
    ("", "smpquery", &["pi", "{top}", "0"], Both),
    ("", "smpquery", &["pi", "{top}", "4"], Both),
    ("", "smpquery", &["pi", "{base}", "0"], Both),
    ("", "smpquery", &["nodeinfo", "{one1+3}"], Both),
    ("", "smpquery", &["nd", "{pre1+2}"], Both),
    ("", "smpquery", &["-D", "pi", "0,1,3", "1"], Both),
    ("", "smpquery", &["nodeinfo", "{pre1+4}"], Both),
    ("", "smpquery", &["-c", "nodeinfo", "{top}", "0"], Stdout),
    ("", "smpquery", &["-c", "nodeinfo", "{top} 0,1"], Stdout),
    ("", "smpquery", &["nodeinfo"], Both),
    ("", "smpdump", &["{dual1+1}", "0x15"], Both),
    ("", "smpdump", &["-D", "0,1", "0x11"], Both),
    ("", "smpdump", &["{dual1}"], Both),
    // Forwarding tables: every LID of every range.
    ("", "ibroute", &["{top}"], Both),
    ("", "ibroute", &["{bottom}"], Both),
    ("", "ibroute", &["{base}"], Both),
    ("", "ibroute", &["-a", "{bottom}"], Both),
    ("", "ibroute", &["{top}", "{dual1+1}", "{one1+3}"], Both),
    ("", "ibroute", &["{bottom}", "{pre1+1}", "{pre1+2}"], Both),
    ("", "ibroute", &["-n", "{top}"], Both),
    ("", "ibroute", &["-M", "{top}"], Both),
    ("", "ibroute", &["-D", "0,1"], Both),
    ("", "ibroute", &["{sm1+1}"], Both),
    ("", "ibroute", &[], Both),
    ("", "dump_lfts", &[], Both),
    ("", "dump_lfts", &["-n"], Both),
    ("", "dump_lfts", &["{bottom}", "{dual2}", "{pre1+3}"], Both),
    ("", "dump_mfts", &[], Both),
    // Routes between LMC-offset LIDs.
    ("", "ibtracert", &["{sm1+1}", "{dual1+3}"], Both),
    ("", "ibtracert", &["{dual2+1}", "{pre1+3}"], Both),
    ("", "ibtracert", &["{one1+3}", "{half2+1}"], Both),
    ("", "ibtracert", &["{pre1+2}", "{sm1+3}"], Both),
    ("", "ibtracert", &["{top}", "{pre1+1}"], Both),
    ("", "ibtracert", &["-n", "{sm1}", "{half2+2}"], Both),
    ("", "ibtracert", &["-f", "{sm1+1}", "{dual1+2}"], Both),
    ("", "ibtracert", &["{sm1}", "{half2+4}"], Both),
    ("", "ibtracert", &["{sm1}"], Both),
    // Counters at offsets (traffic masked).
    ("", "perfquery", &[], Both),
    ("", "perfquery", &["{dual1+2}", "1"], Both),
    ("", "perfquery", &["{dual2+3}", "2"], Both),
    ("", "perfquery", &["{dual2}", "1"], Both),
    ("", "perfquery", &["-x", "{pre1+1}", "1"], Both),
    ("", "perfquery", &["{half2+1}", "2"], Both),
    ("", "perfquery", &["{top}"], Both),
    ("", "perfquery", &["{bottom}", "255"], Both),
    // Port states, LMC in the dump.
    ("", "ibportstate", &["{dual1+1}", "1"], Both),
    ("", "ibportstate", &["{dual2+3}", "2"], Both),
    ("", "ibportstate", &["{half2+2}", "2"], Both),
    ("", "ibportstate", &["{half2}", "1"], Both),
    ("", "ibportstate", &["{pre1+3}", "1", "query"], Both),
    ("", "ibportstate", &["-D", "0,1,7", "3"], Both),
    ("", "ibportstate", &["{base}", "0"], Both),
    ("", "ibportstate", &["{top}", "4"], Both),
    ("", "ibportstate", &["{top}", "1"], Stdout),
    ("", "ibportstate", &["{top}"], Both),
    // Discovery: how LID ranges print.
    ("", "ibnetdiscover", &[], Both),
    ("", "ibnetdiscover", &["-l"], Both),
    ("", "ibnetdiscover", &["-p"], Both),
    ("", "ibnetdiscover", &["-s"], Both),
    ("", "ibnetdiscover", &["-g"], Both),
    ("", "ibnetdiscover", &["-H"], Both),
    ("", "ibnetdiscover", &["-S"], Both),
    ("", "iblinkinfo", &[], Both),
    ("", "iblinkinfo", &["-l"], Both),
    ("", "iblinkinfo", &["-p"], Both),
    ("", "iblinkinfo", &["-d"], Both),
    ("", "iblinkinfo", &["-D", "0,1"], Both),
    ("", "iblinkinfo", &["--switches-only"], Both),
    ("", "iblinkinfo", &["--cas-only", "-l"], Both),
    ("", "ibqueryerrors", &[], Both),
    ("", "ibqueryerrors", &["-k"], Both),
    ("", "ibqueryerrors", &["--details"], Both),
    ("", "ibswitches", &[], Both),
    ("", "ibhosts", &[], Both),
    ("", "ibnodes", &[], Both),
    ("", "ibrouters", &[], Both),
    // Attached at H-half: its port 1 (the one ibsim attaches) is down, port 2 is linked.
    ("H-half", "ibstat", &[], Both),
    ("H-half", "ibstat", &["-s"], Both),
    ("H-half", "ibstat", &["ibsim0", "1"], Both),
    ("H-half", "ibstat", &["ibsim0", "2"], Both),
    ("H-half", "ibaddr", &[], Both),
    ("H-half", "ibaddr", &["-l"], Both),
    ("H-half", "ibaddr", &["-P", "1"], Both),
    ("H-half", "ibaddr", &["-P", "2"], Both),
    ("H-half", "ibaddr", &["-C", "mlx4_0"], Both),
    // Ports that do not open: every tool's C texts.
    ("H-half", "smpquery", &["-P", "3", "ni", "{sm1}"], Both),
    ("H-half", "smpdump", &["-P", "3", "{sm1}", "0x11"], Both),
    ("H-half", "perfquery", &["-C", "mlx5_0"], Both),
    ("H-half", "ibroute", &["-P", "3", "{top}"], Both),
    ("H-half", "ibtracert", &["-P", "3", "{sm1}", "{one1}"], Both),
    (
        "H-half",
        "ibportstate",
        &["-C", "mlx5_0", "{sm1}", "1"],
        Both,
    ),
    ("H-half", "ibnetdiscover", &["-P", "3"], Both),
    ("H-half", "iblinkinfo", &["-P", "3"], Both),
    ("H-half", "ibqueryerrors", &["-C", "mlx5_0"], Both),
    ("H-half", "dump_lfts", &["-P", "3"], Both),
    ("H-half", "ibhosts", &["-P", "3"], Both),
    ("H-half", "saquery", &[], Stdout),
    ("H-half", "saquery", &["-P", "3"], Stdout),
    ("H-half", "saquery", &["-C", "mlx5_0", "-p"], Stdout),
    ("H-half", "ibaddr", &["{dual1}"], Both),
    ("H-half", "sminfo", &[], Both),
    ("H-half", "perfquery", &[], Both),
    ("H-half", "smpquery", &["-D", "pi", "0"], Both),
    ("H-half", "smpquery", &["-D", "nodeinfo", "0"], Both),
    ("H-half", "smpquery", &["pi", "{dual1}"], Both),
    ("H-half", "ibnetdiscover", &[], Both),
    ("H-half", "ibnetdiscover", &["-p"], Both),
    ("H-half", "iblinkinfo", &[], Both),
    ("H-half", "ibroute", &["{top}"], Both),
    ("H-half", "ibroute", &["-D", "0,1"], Both),
    ("H-half", "ibtracert", &["{sm1}", "{dual1}"], Both),
    ("H-half", "dump_lfts", &[], Both),
    ("H-half", "ibqueryerrors", &[], Both),
    ("H-half", "ibportstate", &["-D", "0", "1"], Both),
    // Attached at a switch's port 0 (enhanced).
    ("S-top", "ibstat", &[], Both),
    ("S-top", "ibstat", &["-s"], Both),
    ("S-top", "ibstat", &["ibsim0", "0"], Both),
    ("S-top", "ibstat", &["ibsim0", "1"], Both),
    ("S-top", "ibaddr", &[], Both),
    ("S-top", "ibaddr", &["-l"], Both),
    ("S-top", "ibaddr", &["-g"], Both),
    ("S-top", "ibaddr", &["-D", "0"], Both),
    ("S-top", "ibaddr", &["-D", "0,2"], Both),
    ("S-top", "ibaddr", &["{dual1+3}"], Both),
    ("S-top", "ibaddr", &["-P", "0"], Both),
    // A switch opens at port 0 whatever -P says, unless a CA is named too.
    ("S-top", "ibaddr", &["-P", "1"], Both),
    ("S-top", "ibaddr", &["-C", "ibsim0", "-P", "1"], Both),
    ("S-top", "ibaddr", &["-C", "ibsim0"], Both),
    ("S-top", "smpquery", &["-P", "4", "-D", "ni", "0"], Both),
    ("S-top", "perfquery", &["-P", "1"], Both),
    ("S-top", "ibnetdiscover", &["-P", "1", "-l"], Both),
    ("S-top", "ibnetdiscover", &["-C", "ibsim0", "-P", "1"], Both),
    ("S-top", "ibroute", &["-P", "2", "-D", "0"], Both),
    ("S-top", "dump_lfts", &["-C", "ibsim0", "-P", "1"], Both),
    ("S-top", "smpdump", &["-P", "1", "-D", "0", "0x11"], Both),
    ("S-top", "iblinkinfo", &["-C", "ibsim0", "-P", "2"], Both),
    ("S-top", "sminfo", &[], Both),
    ("S-top", "smpquery", &["-D", "pi", "0"], Both),
    ("S-top", "smpquery", &["-D", "pi", "0", "1"], Both),
    ("S-top", "smpquery", &["pi", "{sm1+1}"], Both),
    ("S-top", "perfquery", &[], Both),
    ("S-top", "perfquery", &["-x"], Both),
    ("S-top", "perfquery", &["{top}", "1"], Both),
    ("S-top", "ibnetdiscover", &[], Both),
    ("S-top", "ibnetdiscover", &["-l"], Both),
    ("S-top", "iblinkinfo", &[], Both),
    ("S-top", "ibroute", &["-D", "0"], Both),
    ("S-top", "ibroute", &["{top}", "{half2}", "{half2+3}"], Both),
    ("S-top", "dump_lfts", &[], Both),
    ("S-top", "ibtracert", &["{top}", "{pre1+3}"], Both),
    ("S-top", "ibtracert", &["{sm1+2}", "{half2+1}"], Both),
    ("S-top", "ibportstate", &["-D", "0", "1"], Both),
    ("S-top", "ibqueryerrors", &[], Both),
    ("S-top", "ibswitches", &[], Both),
    // Attached at a switch with a base port 0.
    ("S-base", "ibstat", &[], Both),
    ("S-base", "ibaddr", &["-l"], Both),
    ("S-base", "smpquery", &["-D", "pi", "0"], Both),
    ("S-base", "iblinkinfo", &["-l"], Both),
    ("S-base", "ibtracert", &["{base}", "{one1+1}"], Both),
    ("S-base", "ibroute", &["-D", "0"], Both),
    ("S-base", "ibnetdiscover", &["-s"], Both),
];

/// `umad <tool> --json <args>` (attached at `host`) succeeds and validates against
/// `docs/json/<schema>`; returns the document.
fn json_ok(
    sim: &Ibsim,
    lids: &Lids,
    host: &str,
    tool: &str,
    schema: &str,
    args: &[&str],
) -> serde_json::Value {
    let mut all = vec!["--json".to_string()];
    all.extend(lids.args(args));
    let (code, out, err) = ours_at(sim, host, tool, &all);
    assert_eq!(code, 0, "{tool} {all:?}: {out}{err}");
    assert_valid(&json_schema(schema), &out);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn lmc_smp_tools_match_c() {
    if !require_ibsim("ibsim_lmc::lmc_smp_tools_match_c") {
        return;
    }
    let (sim, lids) = lmc_fabric();
    // The port's PortInfo says LMC 2, in C's words.
    let (_, pi, _) = c_at(&sim, "", "smpquery", &lids.args(&["pi", "{dual2+1}", "2"]));
    assert!(
        pi.lines()
            .any(|l| l == format!("LMC:.............................{LMC}")),
        "{pi}"
    );
    let ok = compare(&sim, &lids, SMP_CASES);
    assert!(ok >= 100, "only {ok} cases succeeded in C");

    // --json of the main tools, valid, with the ranges in it.
    let topo = json_ok(
        &sim,
        &lids,
        "",
        "ibnetdiscover",
        "ibnetdiscover-v1.schema.json",
        &[],
    );
    assert!(topo.to_string().contains("\"lmc\":2"), "{topo}");
    json_ok(
        &sim,
        &lids,
        "S-top",
        "ibnetdiscover",
        "ibnetdiscover-v1.schema.json",
        &[],
    );
    json_ok(&sim, &lids, "", "ibstat", "ibstat-v1.schema.json", &[]);
    json_ok(&sim, &lids, "S-top", "ibstat", "ibstat-v1.schema.json", &[]);
    json_ok(
        &sim,
        &lids,
        "H-half",
        "ibstat",
        "ibstat-v1.schema.json",
        &[],
    );
    json_ok(
        &sim,
        &lids,
        "",
        "ibaddr",
        "ibaddr-v1.schema.json",
        &["{dual2+3}"],
    );
    json_ok(&sim, &lids, "S-top", "ibaddr", "ibaddr-v1.schema.json", &[]);
    json_ok(
        &sim,
        &lids,
        "",
        "smpquery",
        "smpquery-v1.schema.json",
        &["pi", "{pre1+2}"],
    );
    json_ok(
        &sim,
        &lids,
        "",
        "smpdump",
        "smpdump-v1.schema.json",
        &["{one1+1}", "0x15"],
    );
    json_ok(
        &sim,
        &lids,
        "",
        "ibroute",
        "ibroute-v1.schema.json",
        &["{bottom}"],
    );
    json_ok(&sim, &lids, "", "dump_lfts", "dump_fts-v1.schema.json", &[]);
    json_ok(
        &sim,
        &lids,
        "",
        "ibtracert",
        "ibtracert-v1.schema.json",
        &["{sm1+1}", "{pre1+3}"],
    );
    json_ok(
        &sim,
        &lids,
        "",
        "perfquery",
        "perfquery-v1.schema.json",
        &["{dual2+1}", "2"],
    );
    json_ok(
        &sim,
        &lids,
        "",
        "iblinkinfo",
        "iblinkinfo-v1.schema.json",
        &[],
    );
    // No SA after the sweep: without --skip-sl ibqueryerrors ends quietly, as C does. The
    // cases' failed routes count as errors, so exit 1 (errors found) is a success too.
    let (code, out, err) = ours_at(
        &sim,
        "",
        "ibqueryerrors",
        &["--json".into(), "--skip-sl".into()],
    );
    assert!(code == 0 || code == 1, "ibqueryerrors --json: {out}{err}");
    assert_valid(&json_schema("ibqueryerrors-v1.schema.json"), &out);
    json_ok(
        &sim,
        &lids,
        "",
        "ibportstate",
        "ibportstate-v1.schema.json",
        &["{dual1+2}", "1"],
    );
    json_ok(&sim, &lids, "", "ibhosts", "ibnodes-v1.schema.json", &[]);
}

/// SA cases (from the drop-in fabric's tool node, `H-dual`).
const SA_CASES: &[(&str, &[&str])] = &[
    ("saquery", &[]),
    ("saquery", &["NR", "{one1+3}"]),
    ("saquery", &["NR", "{pre1}"]),
    ("saquery", &["-O", "{dual1}"]),
    ("saquery", &["-O", "{dual1+1}"]),
    ("saquery", &["-U", "{dual2}"]),
    ("saquery", &["-L", "dual HCA-1"]),
    ("saquery", &["-l", "dual HCA-1"]),
    ("saquery", &["-G", "pre HCA-1"]),
    ("saquery", &["-L", "pre HCA-1"]),
    ("saquery", &["-D"]),
    ("saquery", &["-s"]),
    ("saquery", &["-c"]),
    ("saquery", &["PIR"]),
    ("saquery", &["PIR", "{dual1+1}"]),
    ("saquery", &["PIR", "{dual2}/2"]),
    ("saquery", &["PIR", "{pre1+2}//1"]),
    ("saquery", &["PIR", "{top}"]),
    ("saquery", &["--src-to-dst", "{sm1+1}:{pre1+3}"]),
    ("saquery", &["--src-to-dst", "{dual1+2}:{dual2+1}"]),
    ("saquery", &["--src-to-dst", "sm HCA-1:pre HCA-1"]),
    (
        "saquery",
        &["PR", "--slid", "{one1+2}", "--dlid", "{dual2+1}"],
    ),
    ("saquery", &["PR", "--dlid", "{half2+3}"]),
    (
        "saquery",
        &["-p", "--sgid-to-dgid", "fe80::{g:sm1}-fe80::{g:pre1}"],
    ),
    ("saquery", &["LR", "{dual2}"]),
    ("saquery", &["LR", "{dual2}/2"]),
    ("saquery", &["-x", "{top}"]),
    ("saquery", &["GIR", "{one1+1}"]),
    ("saquery", &["SMIR"]),
    ("saquery", &["SMIR", "{sm1+2}"]),
    ("saquery", &["LFTR", "{bottom}"]),
    ("saquery", &["SL2VL", "{one1}"]),
    ("saquery", &["-L"]),
    ("saquery", &["--src-to-dst", "{sm1}"]),
    // SA-resolved destinations, LMC ranges through the SA's PathRecords.
    ("ibaddr", &["-G", "{g:pre1}"]),
    ("ibaddr", &["-l", "-G", "{g:dual2}"]),
    ("ibtracert", &["-G", "{g:sm1}", "{g:pre1}"]),
    ("smpquery", &["-G", "pi", "{g:half2}", "2"]),
    ("sminfo", &[]),
    ("sminfo", &["{sm1+3}"]),
];

#[test]
fn lmc_sa_tools_match_c() {
    if !require_ibsim("ibsim_lmc::lmc_sa_tools_match_c") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_lmc::lmc_sa_tools_match_c") else {
        return;
    };
    let sim = Ibsim::start(fabrics_dir().join(FABRIC)).expect("ibsim starts");
    let f = DropInSa::new(&sim, drop_in);
    let lmc = LMC.to_string();
    let _sm = f.start_sm_with(&["--lmc", &lmc]);
    let (code, topo, err) = f.c("ibnetdiscover", &[]);
    assert_eq!(code, 0, "{err}");
    let lids = Lids::parse(&topo);
    check_ranges(&lids);
    let mut ok = 0;
    for &(tool, args) in SA_CASES {
        let args = lids.args(args);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let what = format!("[{}] {tool} {args:?}", f.tool_node);
        ok += usize::from(same(&what, tool, Both, f.c(tool, &a), f.ours(tool, &a)));
    }
    assert!(ok >= 30, "only {ok} cases succeeded in C");

    let schema = json_schema("saquery-v1.schema.json");
    for args in [
        &["--json", "PIR", "{dual1+1}"][..],
        &["--json", "--src-to-dst", "{sm1+1}:{pre1+3}"],
        &["--json", "-O", "{pre1}"],
        &["--json"],
    ] {
        let args = lids.args(args);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = f.ours("saquery", &a);
        assert_eq!(code, 0, "saquery {a:?}: {err}");
        assert_valid(&schema, &out);
    }
    let (code, out, err) = f.ours("sminfo", &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert_valid(&json_schema("sminfo-v1.schema.json"), &out);
}

/// sminfo cases with a master and a standby SM.
const SM_CASES: &[Case] = &[
    ("", "sminfo", &[], Both),
    ("", "sminfo", &["{sm1}"], Both),
    ("", "sminfo", &["{sm1+3}"], Both),
    ("", "sminfo", &["{one1}"], Both),
    ("", "sminfo", &["{one1+2}"], Both),
    ("", "sminfo", &["-D", "0,1,3"], Both),
    ("", "sminfo", &["{dual1}"], Both),
    ("", "sminfo", &["{top}"], Both),
    ("", "sminfo", &["-P", "1", "{one1+1}"], Both),
    ("H-dual", "sminfo", &[], Both),
    ("H-dual", "sminfo", &["{one1+3}"], Both),
    ("S-top", "sminfo", &[], Both),
    ("S-top", "sminfo", &["-D", "0,3"], Both),
    ("S-base", "sminfo", &["{sm1+1}"], Both),
    ("H-half", "sminfo", &[], Both),
    ("", "smpquery", &["pi", "{one1+1}"], Both),
    ("", "ibstat", &["-s"], Both),
];

#[test]
fn lmc_sm_states_match_c() {
    if !require_ibsim("ibsim_lmc::lmc_sm_states_match_c") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join(FABRIC)).expect("ibsim starts");
    let _master = sim
        .opensm()
        .lmc(LMC)
        .args(["-p", "5"])
        .start_daemon()
        .expect("master SM");
    let _standby = sim
        .opensm()
        .host("H-one")
        .lmc(LMC)
        .args(["-p", "1"])
        .start_daemon_until("Entering STANDBY state")
        .expect("standby SM");
    let (code, topo, err) = c_at(&sim, "", "ibnetdiscover", &[]);
    assert_eq!(code, 0, "{err}");
    let lids = Lids::parse(&topo);
    check_ranges(&lids);
    let (_, standby_info, _) = c_at(&sim, "", "sminfo", &lids.args(&["{one1+2}"]));
    assert!(standby_info.contains("SMINFO_STANDBY"), "{standby_info}");
    let ok = compare(&sim, &lids, SM_CASES);
    assert!(ok >= 12, "only {ok} cases succeeded in C");
    json_ok(
        &sim,
        &lids,
        "",
        "sminfo",
        "sminfo-v1.schema.json",
        &["{one1+1}"],
    );
}

/// Cases with a resident SM on a switch (`S-top`) giving every port LMC 3, switches' enhanced
/// port 0 too (`lmc_esp0`).
const ESP0_CASES: &[Case] = &[
    ("", "ibnetdiscover", &[], Both),
    ("", "ibnetdiscover", &["-l"], Both),
    ("", "ibnetdiscover", &["-p"], Both),
    ("", "ibnetdiscover", &["-s"], Both),
    ("", "ibroute", &["{top}"], Both),
    ("", "ibroute", &["{top+5}"], Both),
    ("", "ibroute", &["-a", "{bottom+7}"], Both),
    ("", "ibroute", &["{bottom+3}", "{dual1}", "{dual1+7}"], Both),
    ("", "dump_lfts", &[], Both),
    ("", "dump_lfts", &["{top+2}"], Both),
    ("", "ibtracert", &["{sm1+1}", "{top+5}"], Both),
    ("", "ibtracert", &["{bottom+7}", "{dual2+3}"], Both),
    ("", "ibtracert", &["{one1+6}", "{pre1+3}"], Both),
    ("", "ibtracert", &["{top+3}", "{base}"], Both),
    ("", "ibtracert", &["-G", "{g:sm1}", "{g:half2}"], Both),
    ("", "ibaddr", &["{top+7}"], Both),
    ("", "ibaddr", &["-l", "{bottom+1}"], Both),
    ("", "ibaddr", &["{base}"], Both),
    ("", "ibaddr", &["-G", "{g:pre1}"], Both),
    ("", "smpquery", &["pi", "{top+4}", "0"], Both),
    ("", "smpquery", &["si", "{bottom+6}"], Both),
    ("", "smpquery", &["ni", "{top+1}"], Both),
    ("", "perfquery", &["{top+2}", "1"], Both),
    ("", "perfquery", &["{bottom+3}", "255"], Both),
    ("", "ibportstate", &["{bottom+1}", "0"], Both),
    ("", "ibportstate", &["{top+6}", "4"], Both),
    ("", "iblinkinfo", &[], Both),
    ("", "iblinkinfo", &["-l"], Both),
    ("", "iblinkinfo", &["-p"], Both),
    ("", "sminfo", &[], Both),
    ("", "sminfo", &["{top+3}"], Both),
    ("", "sminfo", &["-D", "0,1"], Both),
    ("", "ibswitches", &[], Both),
    ("", "ibnodes", &[], Both),
    ("S-top", "ibstat", &[], Both),
    ("S-top", "ibaddr", &[], Both),
    ("S-top", "ibaddr", &["-l"], Both),
    ("S-top", "sminfo", &[], Both),
    ("S-top", "smpquery", &["-D", "pi", "0"], Both),
    ("S-top", "ibtracert", &["{top+1}", "{pre1+2}"], Both),
    ("S-bottom", "ibaddr", &["-l"], Both),
    ("S-bottom", "perfquery", &[], Both),
    ("H-dual", "sminfo", &[], Both),
    ("H-dual", "ibaddr", &["-G", "{g:one1}"], Both),
];

#[test]
fn lmc_esp0_switch_sm_match_c() {
    if !require_ibsim("ibsim_lmc::lmc_esp0_switch_sm_match_c") {
        return;
    }
    let sim = Ibsim::start(fabrics_dir().join(FABRIC)).expect("ibsim starts");
    // LMC 3 for switches' enhanced port 0 as well: opensm's lmc_esp0, a config-file option.
    let conf = sim.workdir().join("opensm-esp0.conf");
    std::fs::write(&conf, "lmc 3\nlmc_esp0 TRUE\n").unwrap();
    let _sm = sim
        .opensm()
        .host("S-top")
        .args(["-F".as_ref(), conf.as_os_str()])
        .start_daemon()
        .expect("opensm on a switch");
    let (code, topo, err) = c_at(&sim, "", "ibnetdiscover", &[]);
    assert_eq!(code, 0, "{err}");
    let lids = Lids::parse(&topo);
    for (name, &(lid, lmc)) in &lids.lid {
        // A base port 0 (S-base) has no LID range; H-pre's preset 64 is aligned for LMC 3.
        let want = if name == "base" { 0 } else { 3 };
        assert_eq!(lmc, want, "{name}: LMC in {topo}");
        assert_eq!(lid % (1 << want), 0, "{name}: base LID {lid} aligned");
    }
    assert_eq!(lids.lid["pre1"].0, 64, "H-pre keeps its preset LID");
    let (_, info, _) = c_at(&sim, "", "sminfo", &[]);
    assert!(
        info.contains(&format!("sm lid {} ", lids.lid["top"].0)),
        "the SM is on S-top: {info}"
    );
    let ok = compare(&sim, &lids, ESP0_CASES);
    assert!(ok >= 35, "only {ok} cases succeeded in C");
    json_ok(
        &sim,
        &lids,
        "",
        "ibroute",
        "ibroute-v1.schema.json",
        &["{top+5}"],
    );
    json_ok(&sim, &lids, "", "sminfo", "sminfo-v1.schema.json", &[]);
    json_ok(&sim, &lids, "S-top", "ibstat", "ibstat-v1.schema.json", &[]);
}
