//! Differential test of `umad sim serve` against ibsim, on every fabric in `fabrics/` (issue
//! 16): the same netfile served by ibsim and by our daemon, both brought up by the same
//! `opensm -o` under umad2sim (`--lmc 2` on `lmc.net`, the fabric made for it; told to leave
//! the ports' enabled widths and speeds alone, see [`differential`]); then every
//! infiniband-diags tool that works without a resident SM, the C tool under umad2sim and
//! ours natively (`UMAD_IBSIM`), against both. C on the daemon must print what C prints on
//! ibsim, and ours on the daemon what ours prints on ibsim: the same exit code, stdout and
//! stderr bytes, with only these masked:
//!
//! - the date in `ibnetdiscover`'s `# Topology file: generated on` line;
//! - umad2sim's `sim_connect: attached as client N at node ...` line on stderr (the client
//!   slot depends on who else is attached) and the pid in `ibwarn: [pid]` (C's stderr);
//! - traffic counters (PortXmitData, PortRcvData, the packet counts, and
//!   PortRcvSwitchRelayErrors, which ibsim bumps for packets it drops): they count every
//!   packet that crossed the port since the fabric started, opensm's sweep included, and
//!   opensm's number of packets (retries on a loaded machine, its own pace) is not the same
//!   twice. They are compared unmasked right after a reset (`perfquery -r`, then the same
//!   `perfquery`): only the query itself has crossed the port then.
//!
//! The tools: `ibnetdiscover` (default, `-p -s -l -g -H -S -R`), `iblinkinfo` (`-l -p -d`),
//! `ibswitches`, `ibhosts`, `ibnodes`, `ibrouters`, `dump_lfts`, `dump_mfts`,
//! `ibqueryerrors` (also `--data`), `sminfo` (no resident SM: it fails, on both alike),
//! local `perfquery` (the two fat trees: the fabric-wide tools in their default mode only,
//! and no `dump_lfts` on `fattree3-1760.net`); then for each node of a small fabric (a
//! sample of the larger ones) by LID: `smpquery` nodeinfo, nodedesc, portinfo (port 0,
//! linked, unlinked, the last, one past it), switchinfo, pkeys, sl2vl, vlarb, guidinfo;
//! `smpdump` of NodeInfo; `ibroute` (unicast, `-M`); `ibtracert` from the attach point and
//! between successive nodes; `perfquery` (basic, `-x`, `-a`, `-r`); `ibaddr`;
//! `ibportstate` (query); and by directed route: `smpquery` nodeinfo, portinfo,
//! switchinfo, `smpdump` of PortInfo and SwitchInfo, `ibportstate`. Nodes past ibsim's
//! LID-routing reach (`chain.net`) get a few LID-routed tools only ([`Known::IbsimMaxHops`]).
//!
//! Where the daemon is known to answer otherwise than ibsim the test asserts that the
//! difference is exactly the known one (see [`Known`]).
//!
//! Last, [`in_process_matches_the_configured_daemon`]: `UMAD_SIM` in process against
//! `umad sim serve --configured`, the same `umad` tools, no known difference.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{mask_data, mask_date, run, umad, TRAFFIC};
use ibfabric::Fabric;
use ibmad::NodeType;
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim, TempDir};
use serve::Serve;

/// Every fabric of `fabrics/`, each with a test of its own ([`every_fabric_has_a_test`]).
const FABRICS: &[&str] = &[
    "example.net",
    "b2b.net",
    "chain.net",
    "ring.net",
    "odd.net",
    "mixed.net",
    "lmc.net",
    "fattree-1008.net",
    "fattree3-1760.net",
];

/// Fabrics with at most this many nodes have every node queried; larger ones a sample.
const QUERY_ALL_UP_TO: usize = 16;

/// Fabrics with more nodes than this get the fabric-wide tools in their default mode only.
const LARGE: usize = 200;

/// Fabrics with at least this many nodes do without `dump_lfts`.
const HUGE: usize = 1500;

/// ibsim forwards a LID-routed MAD through at most this many switches (`MAXHOPS` in ibsim's
/// `sim.h`, fabrics/README.md); the daemon through up to 64.
const IBSIM_MAX_SWITCHES: usize = 16;

/// What the reference run (C on ibsim) must do, so that both failing alike is not taken for
/// success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    Fails,
    Either,
}

/// A difference the daemon is known to have from ibsim, and checked exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// NodeInfo of a switch by LID: ibsim answers LocalPortNum 0 (it hands a LID-routed SMP
    /// to the switch's port 0); the daemon the port the SMP came in on, as hardware does
    /// (IBA 14.2.5.3: "the link port which received this SMP") and as both do by directed
    /// route. `smpdump`: byte 36 of the NodeInfo. Not (yet) in crates/sim/README.md.
    LidLocalPort { dump: bool, num_ports: u8 },
    /// PortCountersExtended: ibsim never counts PortUnicastXmitPkts/PortUnicastRcvPkts (0),
    /// the daemon counts every packet there as well (all simulated traffic is unicast). Not
    /// (yet) in crates/sim/README.md.
    UnicastPkts,
    /// A LID route through more than [`IBSIM_MAX_SWITCHES`] switches (fabrics/README.md,
    /// `chain.net`): ibsim's `route_MAD` stops after 16 switches and hands the MAD to the
    /// port it has reached, so the tool times out or prints the answer of the wrong node
    /// (`smpdump <chain24> 0x11` prints chain17's NodeInfo); the daemon delivers it, and the
    /// tool must succeed there.
    IbsimMaxHops,
    /// `ibroute` names the node of each LID by a NodeInfo query by LID: past ibsim's
    /// MAXHOPS (see [`Known::IbsimMaxHops`]) ibsim's answer is `(unknown node and type)`,
    /// the daemon's the node.
    IbsimMaxHopsNames,
    /// PortInfo after opensm's sweep, where ibsim's `do_portinfo` does not store what
    /// opensm's Set(PortInfo) asked for and the daemon does, as hardware would: opensm sets
    /// M_KeyLeasePeriod 0 (ibsim never reads the M_Key fields of a Set and keeps its
    /// template's 4089) and a switch port 0's NeighborMTU to its MTUCap, 1024 (ibsim ignores
    /// NeighborMTU and keeps 256). Neither is in crates/sim/README.md's list yet. `dump`:
    /// smpdump's hex.
    SweptPortInfo { dump: bool },
    /// PerfMgt to a CA port other than the one the MAD came in on (`perfquery -a` of a
    /// multi-port CA, whose ClassPortInfo has no AllPortSelect, so the tools ask port by
    /// port): ibsim refuses it (`do_portcounters`: "undef_behav", a bad-parameter status),
    /// the daemon answers that port's counters. Not (yet) in crates/sim/README.md.
    CaOtherPort,
    /// An attribute the fabric does not answer and no SM client takes (SMInfo with no
    /// resident SM): ibsim bounces the MAD (status 110: libibmad's `_do_madrpc failed`
    /// warning), the daemon answers with a MAD status that says "not supported"
    /// (crates/sim/README.md, "Differences from ibsim"); the tools fail alike.
    Unsupported,
}

/// One tool run, in C and in umad.
#[derive(Debug, Clone)]
struct Cmd {
    tool: &'static str,
    args: Vec<String>,
    expect: Expect,
    known: Vec<Known>,
    /// Compare the traffic counters too (right after a reset).
    exact_traffic: bool,
}

impl Cmd {
    fn new(tool: &'static str, args: &[&str]) -> Cmd {
        Cmd {
            tool,
            args: args.iter().map(|a| a.to_string()).collect(),
            expect: Expect::Ok,
            known: Vec::new(),
            exact_traffic: false,
        }
    }

    fn expect(mut self, e: Expect) -> Cmd {
        self.expect = e;
        self
    }

    fn known(mut self, k: Known) -> Cmd {
        self.known.push(k);
        self
    }

    fn line(&self) -> String {
        format!("{} {}", self.tool, self.args.join(" "))
    }
}

/// What one run printed, unmasked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn outcome(cmd: &mut Command) -> Outcome {
    let out = run(cmd);
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The simulator a run goes to.
#[derive(Clone, Copy)]
enum Side<'a> {
    Ibsim(&'a Ibsim),
    Daemon(&'a Ibsim, &'a Serve),
}

impl Side<'_> {
    fn c(&self, cmd: &Cmd) -> Outcome {
        let mut c = match self {
            Side::Ibsim(sim) => sim.umad2sim_command(cmd.tool),
            Side::Daemon(sim, serve) => serve.umad2sim_command(sim, cmd.tool),
        };
        outcome(c.args(&cmd.args))
    }

    fn ours(&self, cmd: &Cmd) -> Outcome {
        let mut c = match self {
            Side::Ibsim(sim) => common::native(sim, &umad()),
            Side::Daemon(sim, serve) => serve.native(sim, &umad()),
        };
        outcome(c.arg(cmd.tool).args(&cmd.args))
    }

    /// Every command in order, C then umad: one client at a time on this simulator. Also
    /// how long each pair took.
    fn run_all(&self, cmds: &[Cmd]) -> (Vec<(Outcome, Outcome)>, Vec<Duration>) {
        cmds.iter()
            .map(|c| {
                let t0 = Instant::now();
                ((self.c(c), self.ours(c)), t0.elapsed())
            })
            .unzip()
    }
}

/// stdout with the date and (unless `exact`) the traffic counters masked.
fn mask_stdout(text: &str, exact: bool) -> String {
    let text = mask_date(text);
    if exact {
        return text;
    }
    // ibqueryerrors --data: `[PortXmitData == 123 (0.480KB)]`.
    let text = mask_data(&text);
    text.lines()
        .map(|l| match TRAFFIC.iter().find(|t| l.starts_with(*t)) {
            Some(t) => format!("{t}<traffic>\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

/// stderr without umad2sim's attach line and with `ibwarn: [pid]` masked.
fn mask_stderr(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("sim_connect: attached as client"))
        .map(|l| {
            let l = match l.split_once("] ") {
                Some((head, rest))
                    if head.starts_with("ibwarn: [")
                        || head.starts_with("ibdebug: [")
                        || head.starts_with("iberror: [") =>
                {
                    let tag = &head[..head.find('[').unwrap()];
                    format!("{tag}[pid] {rest}")
                }
                _ => l.to_string(),
            };
            format!("{l}\n")
        })
        .collect()
}

fn masked(o: &Outcome, exact: bool) -> Outcome {
    Outcome {
        code: o.code,
        stdout: mask_stdout(&o.stdout, exact),
        stderr: mask_stderr(&o.stderr),
    }
}

/// `Name:....value` split into (name, value).
fn split_field(line: &str) -> Option<(&str, &str)> {
    let (name, rest) = line.split_once(':')?;
    let value = rest.strip_prefix('.')?.trim_start_matches('.');
    Some((name, value))
}

/// ibsim's `Name:....value` text with the lines the daemon prints otherwise taken from the
/// daemon's where `allow(name, ibsim's value, the daemon's value, the daemon's block)` says
/// the difference is the known one (`Ok(false)`: keep ibsim's line, so the comparison shows
/// it). A block is what follows a line that is not a field (`# Port info: ...`, `Peer
/// PortInfo:`), so two ports in one output are each judged by their own fields.
fn take_fields(
    ibsim: &str,
    daemon: &str,
    allow: impl Fn(&str, &str, &str, &[&str]) -> Result<bool, String>,
) -> Result<String, String> {
    let (theirs, ours): (Vec<&str>, Vec<&str>) =
        (ibsim.lines().collect(), daemon.lines().collect());
    if theirs.len() != ours.len() {
        return Ok(ibsim.to_string());
    }
    let mut out = String::new();
    let mut block_start = 0;
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let (tf, of) = (split_field(t), split_field(o));
        if of.is_none() {
            block_start = i + 1;
        }
        let take = match (tf, of) {
            (Some((tn, tv)), Some((on, ov))) if t != o && tn == on => {
                let end = ours[i..]
                    .iter()
                    .position(|l| split_field(l).is_none())
                    .map_or(ours.len(), |e| i + e);
                allow(tn, tv, ov, &ours[block_start..end])?
            }
            _ => false,
        };
        out += if take { o } else { t };
        out.push('\n');
    }
    Ok(out)
}

/// The value of field `name` in `block`.
fn block_field<'a>(block: &[&'a str], name: &str) -> Option<&'a str> {
    block
        .iter()
        .filter_map(|l| split_field(l))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// What the daemon must print given what ibsim printed (already changed by the known
/// differences before this one, `want`), for a known difference; `Err` when ibsim's side is
/// not what the known difference says it is.
fn apply_known(
    known: Known,
    want: &mut Outcome,
    ibsim: &Outcome,
    daemon: &Outcome,
) -> Result<(), String> {
    match known {
        Known::LidLocalPort {
            dump: false,
            num_ports,
        } => {
            if ibsim.code != 0 {
                return Ok(());
            }
            want.stdout = take_fields(&want.stdout, &daemon.stdout, |name, t, o, _| {
                if name != "LocalPort" {
                    return Ok(false);
                }
                match o.parse::<u8>() {
                    Ok(p) if t == "0" && (1..=num_ports).contains(&p) => Ok(true),
                    _ => Err(format!("LocalPort: ibsim {t}, the daemon {o}")),
                }
            })?;
        }
        Known::LidLocalPort {
            dump: true,
            num_ports,
        } => {
            // smpdump's hex: line 3 holds bytes 32-47, `0000 00a1 PP00 ...`.
            let line = |t: &str| t.lines().nth(2).map(str::to_string);
            let (Some(theirs), Some(ours)) = (line(&ibsim.stdout), line(&daemon.stdout)) else {
                return Err("no third line".into());
            };
            let byte = |l: &str| u8::from_str_radix(l.get(10..12)?, 16).ok();
            if byte(&theirs) != Some(0) {
                return Err(format!("ibsim's byte 36 is not 0: {theirs}"));
            }
            match byte(&ours) {
                Some(p) if (1..=num_ports).contains(&p) => {
                    let fixed = format!("{}{:02x}{}", &theirs[..10], p, &theirs[12..]);
                    want.stdout = ibsim
                        .stdout
                        .lines()
                        .enumerate()
                        .map(|(i, l)| {
                            if i == 2 {
                                format!("{fixed}\n")
                            } else {
                                format!("{l}\n")
                            }
                        })
                        .collect();
                }
                _ => return Err(format!("the daemon's byte 36: {ours}")),
            }
        }
        Known::UnicastPkts => {
            if ibsim.code != 0 {
                return Ok(());
            }
            want.stdout = take_fields(&want.stdout, &daemon.stdout, |name, t, o, block| {
                let all = match name {
                    "PortUnicastXmitPkts" => "PortXmitPkts",
                    "PortUnicastRcvPkts" => "PortRcvPkts",
                    _ => return Ok(false),
                };
                if t == "0" && block_field(block, all) == Some(o) {
                    Ok(true)
                } else {
                    Err(format!(
                        "{name}: ibsim {t}, the daemon {o} ({all} {:?})",
                        block_field(block, all)
                    ))
                }
            })?;
        }
        Known::SweptPortInfo { dump: false } => {
            want.stdout = take_fields(&want.stdout, &daemon.stdout, |name, t, o, block| {
                let Some((_, rule)) = SWEPT.iter().find(|(n, _)| *n == name) else {
                    return Ok(false);
                };
                match rule {
                    Rule::Values(rt, ro) if (t, o) == (*rt, *ro) => Ok(true),
                    Rule::Equals(other) if block_field(block, other) == Some(o) => Ok(true),
                    _ => Err(format!("{name}: ibsim {t}, the daemon {o}")),
                }
            })?;
        }
        Known::SweptPortInfo { dump: true } => {
            want.stdout = swept_dump(&want.stdout, &daemon.stdout)?;
        }
        Known::Unsupported => {
            let bounced = |l: &str| l.contains("_do_madrpc failed; dport");
            if !ibsim.stderr.lines().any(bounced) {
                return Err("ibsim did not bounce it".into());
            }
            want.stderr = want
                .stderr
                .lines()
                .filter(|l| !bounced(l))
                .map(|l| format!("{l}\n"))
                .collect();
        }
        Known::IbsimMaxHopsNames => {
            // `0x0014 002 : (unknown node and type)` against `0x0014 002 : (Channel ...)`.
            let (theirs, ours): (Vec<&str>, Vec<&str>) = (
                want.stdout.lines().collect(),
                daemon.stdout.lines().collect(),
            );
            if theirs.len() == ours.len() {
                let mut unknown = Vec::new();
                want.stdout = theirs
                    .iter()
                    .zip(&ours)
                    .map(|(t, o)| {
                        let lid = t.split(" : ").next();
                        if lid == o.split(" : ").next() && t.ends_with(" : (unknown node and type)")
                        {
                            let lid = lid.and_then(|l| l.split_whitespace().next());
                            if let Some(l) = lid.and_then(|l| {
                                u16::from_str_radix(l.trim_start_matches("0x"), 16).ok()
                            }) {
                                unknown.push(format!("dport (Lid {l})"));
                            }
                            format!("{o}\n")
                        } else {
                            format!("{t}\n")
                        }
                    })
                    .collect();
                // And the timeouts of those queries.
                want.stderr = want
                    .stderr
                    .lines()
                    .filter(|l| {
                        !(l.contains("_do_madrpc failed")
                            && unknown.iter().any(|u| l.ends_with(u.as_str())))
                    })
                    .map(|l| format!("{l}\n"))
                    .collect();
            }
        }
        Known::IbsimMaxHops => {
            if daemon.code != 0 {
                return Err(format!("the daemon failed (exit {})", daemon.code));
            }
            // Nothing else of the two runs is comparable.
            *want = daemon.clone();
        }
        Known::CaOtherPort => {
            if ibsim.code == 0 {
                return Err("ibsim answered".into());
            }
            if daemon.code != 0 {
                return Err(format!("the daemon failed too (exit {})", daemon.code));
            }
            // Nothing else of the two runs is comparable.
            *want = daemon.clone();
        }
    }
    Ok(())
}

/// How the daemon's value of a PortInfo field opensm's sweep set may differ from ibsim's.
enum Rule {
    /// ibsim shows the first, the daemon the second.
    Values(&'static str, &'static str),
    /// The daemon's value is that of this other field of the same port.
    Equals(&'static str),
}

/// PortInfo fields opensm's sweep sets that ibsim does not store ([`Known::SweptPortInfo`]).
const SWEPT: &[(&str, Rule)] = &[
    ("MkeyLeasePeriod", Rule::Values("4089", "0")),
    ("NeighborMTU", Rule::Equals("MtuCap")),
];

/// The bytes of smpdump's hex lines (`0000 00a1 0800 ...`, 16 bytes a line).
fn dump_bytes(text: &str) -> Vec<u8> {
    text.lines()
        .flat_map(|l| l.split_whitespace())
        .filter(|w| w.len() == 4 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .flat_map(|w| {
            let v = u16::from_str_radix(w, 16).unwrap();
            v.to_be_bytes()
        })
        .collect()
}

/// ibsim's smpdump of a PortInfo as the daemon must print it after the sweep: bytes 26-27
/// (M_KeyLeasePeriod: ibsim's 4089, the daemon's 0) and the high nibble of byte 36
/// (NeighborMTU: the daemon's is the low nibble of byte 37, MTUCap) may be the daemon's.
fn swept_dump(ibsim: &str, daemon: &str) -> Result<String, String> {
    let (theirs, ours) = (dump_bytes(ibsim), dump_bytes(daemon));
    if theirs.len() != 64 || ours.len() != 64 {
        return Ok(ibsim.to_string());
    }
    let mut want = theirs.clone();
    if theirs[26..28] != ours[26..28] {
        if (theirs[26..28] != [0x0f, 0xf9]) || ours[26..28] != [0, 0] {
            return Err(format!(
                "M_KeyLeasePeriod bytes {:02x?} {:02x?}",
                &theirs[26..28],
                &ours[26..28]
            ));
        }
        want[26..28].copy_from_slice(&ours[26..28]);
    }
    if theirs[36] >> 4 != ours[36] >> 4 {
        if ours[36] >> 4 != ours[37] & 0x0f {
            return Err(format!("NeighborMTU byte {:#x}", ours[36]));
        }
        want[36] = (ours[36] & 0xf0) | (theirs[36] & 0x0f);
    }
    Ok(with_dump(ibsim, &want))
}

/// smpdump's text with its hex words replaced by `bytes`, word by word.
fn with_dump(text: &str, bytes: &[u8]) -> String {
    let mut words = bytes.chunks(2).map(|w| format!("{:02x}{:02x}", w[0], w[1]));
    text.lines()
        .map(|l| {
            let line: Vec<String> = l
                .split(' ')
                .map(|w| {
                    if w.len() == 4 && w.chars().all(|c| c.is_ascii_hexdigit()) {
                        words.next().unwrap_or_else(|| w.to_string())
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            format!("{}\n", line.join(" "))
        })
        .collect()
}

/// The first lines where `a` and `b` differ.
fn first_differences(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut out = String::new();
    let mut shown = 0;
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            out += &format!(
                "      line {}:\n        ibsim:  {}\n        daemon: {}\n",
                i + 1,
                x.unwrap_or(&"<none>"),
                y.unwrap_or(&"<none>")
            );
            shown += 1;
            if shown == 4 {
                out += "      ...\n";
                break;
            }
        }
    }
    out
}

/// One comparison: "" when the daemon's run is what it must be.
fn compare(what: &str, cmd: &Cmd, ibsim: &Outcome, daemon: &Outcome) -> String {
    let mut want = ibsim.clone();
    let known = cmd
        .known
        .iter()
        .try_for_each(|k| apply_known(*k, &mut want, ibsim, daemon));
    match known {
        Ok(()) => {}
        Err(e) => {
            return format!(
                "  {what} {}: the known difference {:?} is not there: {e}\n{}",
                cmd.line(),
                cmd.known,
                first_differences(&ibsim.stdout, &daemon.stdout)
            )
        }
    };
    let (want, got) = (
        masked(&want, cmd.exact_traffic),
        masked(daemon, cmd.exact_traffic),
    );
    if want == got {
        return String::new();
    }
    let mut out = format!(
        "  {what} {}: exit {} on ibsim, {} on the daemon\n",
        cmd.line(),
        want.code,
        got.code
    );
    out += &first_differences(&want.stdout, &got.stdout);
    if want.stderr != got.stderr {
        out += "      stderr:\n";
        out += &first_differences(&want.stderr, &got.stderr);
    }
    out
}

// ---- What is asked of each fabric ----

/// A node queried, as discovery found it.
struct Target {
    node: usize,
    /// The LID of its port 0 (a switch) or of its first port with a LID (a CA, a router).
    lid: u16,
    /// That CA's port (0 for a switch).
    port: u8,
    route: String,
    /// Switches on the shortest path from the attach point (itself included).
    switches: usize,
}

/// Switches on the shortest path from node `from` to every node (endpoints included).
fn switch_distances(f: &Fabric, from: usize) -> Vec<usize> {
    let mut dist = vec![usize::MAX; f.nodes.len()];
    let sw = |i: usize| usize::from(f.nodes[i].is_switch());
    dist[from] = sw(from);
    let mut queue = VecDeque::from([from]);
    while let Some(n) = queue.pop_front() {
        // Routes only pass switches.
        if n != from && !f.nodes[n].is_switch() {
            continue;
        }
        for p in &f.nodes[n].ports {
            if let Some(r) = p.remote {
                if dist[r.node] == usize::MAX {
                    dist[r.node] = dist[n] + sw(r.node);
                    queue.push_back(r.node);
                }
            }
        }
    }
    dist
}

/// The targets: every node of a small fabric, else the attach point, the first two nodes
/// out, two in the middle, the last found, the first router, the first switch with an
/// unlinked port and the first CA with several ports.
fn targets(f: &Fabric) -> Vec<Target> {
    let local = f.from.map_or(0, |o| o.node);
    let dist = switch_distances(f, local);
    let all: Vec<usize> = (0..f.nodes.len()).collect();
    let keep: BTreeSet<usize> = if all.len() <= QUERY_ALL_UP_TO {
        all.into_iter().collect()
    } else {
        let n = all.len();
        let mut keep = BTreeSet::from([local, 1, 2, n / 3, 2 * n / 3, n - 1]);
        let first = |p: &dyn Fn(&ibfabric::Node) -> bool| f.nodes.iter().position(p);
        keep.extend(first(&|x| x.node_type == NodeType::Router));
        keep.extend(first(&|x| {
            x.is_switch()
                && (1..=x.num_ports).any(|p| !x.port(p).is_some_and(|p| p.remote.is_some()))
        }));
        keep.extend(first(&|x| !x.is_switch() && x.num_ports > 1));
        keep
    };
    keep.into_iter()
        .filter_map(|i| {
            let n = &f.nodes[i];
            let (lid, port) = if n.is_switch() {
                (n.lid, 0)
            } else {
                let p = n.ports.iter().find(|p| p.lid != 0)?;
                (p.lid, p.number)
            };
            Some(Target {
                node: i,
                lid,
                port,
                route: n.path.path.to_string(),
                switches: dist[i],
            })
        })
        .filter(|t| t.lid != 0)
        .collect()
}

/// The fabric-wide tools.
fn fabric_cmds(f: &Fabric) -> Vec<Cmd> {
    let large = f.nodes.len() > LARGE;
    let mut v = vec![Cmd::new("ibnetdiscover", &[]), Cmd::new("iblinkinfo", &[])];
    if !large {
        for m in ["-p", "-s", "-l", "-g", "-H", "-S", "-R"] {
            v.push(Cmd::new("ibnetdiscover", &[m]));
        }
        for m in ["-l", "-p", "-d"] {
            v.push(Cmd::new("iblinkinfo", &[m]));
        }
        v.push(Cmd::new("ibnodes", &[]));
        v.push(Cmd::new("ibrouters", &[]));
        v.push(Cmd::new("dump_mfts", &[]));
        v.push(Cmd::new("ibqueryerrors", &["--data"]));
    }
    let switches = f.nodes.iter().any(|n| n.is_switch());
    v.push(Cmd::new("ibswitches", &[]));
    v.push(Cmd::new("ibhosts", &[]));
    // fattree3-1760's (224 switches, 395,000 lines) takes 20 s a side on a busy machine;
    // fattree-1008's stands for it.
    if f.nodes.len() < HUGE {
        let e = if switches { Expect::Ok } else { Expect::Either };
        v.push(Cmd::new("dump_lfts", &[]).expect(e));
    }
    v.push(Cmd::new("ibqueryerrors", &[]));
    v.push(
        Cmd::new("sminfo", &[])
            .expect(Expect::Fails)
            .known(Known::Unsupported),
    );
    v.push(Cmd::new("perfquery", &[]));
    v
}

/// The port numbers asked of a node: 0, a linked and an unlinked port, the last and one
/// past it (a CA: all its ports and one past).
fn ports_of(n: &ibfabric::Node) -> Vec<u8> {
    let linked = |p: u8| n.port(p).is_some_and(|p| p.remote.is_some());
    let mut ports = BTreeSet::from([n.num_ports, n.num_ports.saturating_add(1)]);
    if n.is_switch() {
        ports.insert(0);
        ports.extend((1..=n.num_ports).find(|&p| linked(p)));
        ports.extend((1..=n.num_ports).find(|&p| !linked(p)));
    } else {
        ports.extend(1..=n.num_ports);
    }
    ports.into_iter().collect()
}

/// The per-node tools, by LID and by directed route.
fn node_cmds(f: &Fabric, targets: &[Target]) -> Vec<Cmd> {
    let mut v = Vec::new();
    let local_lid = targets
        .iter()
        .find(|t| Some(t.node) == f.from.map(|o| o.node))
        .map(|t| t.lid);
    let any_far = switch_distances(f, f.from.map_or(0, |o| o.node))
        .iter()
        .any(|&d| d != usize::MAX && d > IBSIM_MAX_SWITCHES);
    for (i, t) in targets.iter().enumerate() {
        let n = &f.nodes[t.node];
        let sw = n.is_switch();
        let lid = t.lid.to_string();
        let (lid, r) = (lid.as_str(), t.route.as_str());
        let linked = (1..=n.num_ports)
            .find(|&p| n.port(p).is_some_and(|p| p.remote.is_some()))
            .unwrap_or(1);
        let port = if sw { linked } else { t.port };
        let (ps, lps) = (port.to_string(), linked.to_string());
        let swept = Known::SweptPortInfo { dump: false };

        // By directed route: every node, however far.
        v.push(Cmd::new("smpquery", &["-D", "nodeinfo", r]));
        v.push(Cmd::new("smpquery", &["-D", "portinfo", r, &lps]).known(swept));
        if sw {
            v.push(Cmd::new("smpquery", &["-D", "switchinfo", r]));
            v.push(Cmd::new("smpdump", &["-D", r, "0x12"]));
        }
        v.push(
            Cmd::new("smpdump", &["-D", r, "0x15", &lps])
                .known(Known::SweptPortInfo { dump: true }),
        );
        v.push(Cmd::new("ibportstate", &["-D", r, &lps]).known(swept));

        if t.switches > IBSIM_MAX_SWITCHES {
            // By LID past ibsim's MAXHOPS: a few tools, with a short timeout (ibsim makes
            // them wait for it).
            let far = |tool: &'static str, args: &[&str]| {
                let mut c = Cmd::new(tool, &["-t", "200"]).expect(Expect::Either);
                c.args.extend(args.iter().map(|a| a.to_string()));
                c.known(Known::IbsimMaxHops)
            };
            v.push(far("smpquery", &["nodeinfo", lid]));
            v.push(far("smpquery", &["portinfo", lid, &lps]));
            v.push(far("smpdump", &[lid, "0x11"]));
            v.push(far("perfquery", &[lid, &ps]));
            if let Some(l) = local_lid {
                v.push(far("ibtracert", &[&l.to_string(), lid]));
            }
            continue;
        }

        // By LID.
        // A LID-routed SMP that comes into a switch from another node.
        let lid_at_switch = sw && Some(t.lid) != local_lid;
        let local_port = Known::LidLocalPort {
            dump: false,
            num_ports: n.num_ports,
        };
        let ni = Cmd::new("smpquery", &["nodeinfo", lid]);
        v.push(if lid_at_switch {
            ni.known(local_port)
        } else {
            ni
        });
        v.push(Cmd::new("smpquery", &["nodedesc", lid]));
        for p in ports_of(n) {
            let e = if p <= n.num_ports {
                Expect::Ok
            } else {
                Expect::Fails
            };
            let c = Cmd::new("smpquery", &["portinfo", lid, &p.to_string()])
                .expect(e)
                .known(swept);
            v.push(if lid_at_switch {
                c.known(local_port)
            } else {
                c
            });
        }
        if sw {
            v.push(Cmd::new("smpquery", &["switchinfo", lid]));
        }
        v.push(Cmd::new("smpquery", &["pkeys", lid, &ps]));
        v.push(Cmd::new("smpquery", &["sl2vl", lid, &ps]));
        v.push(Cmd::new("smpquery", &["vlarb", lid, &ps]));
        v.push(Cmd::new("smpquery", &["guidinfo", lid]));
        let dump = Cmd::new("smpdump", &[lid, "0x11"]);
        v.push(if lid_at_switch {
            dump.known(Known::LidLocalPort {
                dump: true,
                num_ports: n.num_ports,
            })
        } else {
            dump
        });
        if sw {
            // ibroute asks every LID's NodeInfo; on ibsim those past MAXHOPS time out.
            let t: &[&str] = if any_far { &["-t", "200"] } else { &[] };
            v.push(Cmd::new("ibroute", &[t, &[lid]].concat()).known(Known::IbsimMaxHopsNames));
            v.push(
                Cmd::new("ibroute", &[t, &["-M", lid]].concat())
                    .expect(Expect::Either)
                    .known(Known::IbsimMaxHopsNames),
            );
        }
        if let Some(l) = local_lid.filter(|&l| l != t.lid) {
            v.push(Cmd::new("ibtracert", &[&l.to_string(), lid]));
        }
        if let Some(next) = targets.get(i + 1) {
            if next.switches <= IBSIM_MAX_SWITCHES {
                v.push(Cmd::new("ibtracert", &[lid, &next.lid.to_string()]));
            }
        }
        v.push(Cmd::new("perfquery", &[lid, &ps]));
        v.push(Cmd::new("perfquery", &["-x", lid, &ps]).known(Known::UnicastPkts));
        let all = Cmd::new("perfquery", &["-a", lid]);
        v.push(if !sw && n.num_ports > 1 {
            all.expect(Expect::Fails).known(Known::CaOtherPort)
        } else {
            all
        });
        v.push(Cmd::new("perfquery", &["-r", lid, &ps]));
        let mut after = Cmd::new("perfquery", &[lid, &ps]);
        after.exact_traffic = true;
        v.push(after);
        v.push(Cmd::new("ibaddr", &[lid]));
        // On a switch's port ibportstate also asks the peer, by LID then directed route,
        // which neither simulator supports (ibsim: "dr[ds]lids are used"): both time out
        // (a short timeout then).
        v.push(if sw {
            Cmd::new("ibportstate", &["-t", "200", lid, &lps])
                .expect(Expect::Either)
                .known(swept)
        } else {
            Cmd::new("ibportstate", &[lid, &lps]).known(swept)
        });
    }
    v
}

// ---- The test ----

/// Starts ibsim and the daemon on `fabric`, sweeps both, runs every command on both (one
/// thread a simulator) and returns what differed.
fn differential(fabric: &str) {
    let netfile = fabrics_dir().join(fabric);
    let (sim, serve) = std::thread::scope(|s| {
        let serve = s.spawn(|| Serve::start(&netfile));
        let sim = Ibsim::start(&netfile).expect("ibsim starts");
        (sim, serve.join().expect("the daemon starts"))
    });
    // opensm's defaults enable every width and speed a port supports (force_link_width
    // 255, force_link_speed 15, force_link_speed_ext 31): the daemon then brings links up
    // at the best of them, ibsim ignores those values (crates/sim/README.md), and every
    // discovery output would differ in the links' widths and speeds (b2b.net's CA-to-CA
    // link comes up 12X on the daemon, 4X on ibsim; every FDR/EDR link of lmc.net, mixed.net
    // and odd.net HDR on the daemon). Told to leave the enabled masks alone, opensm sweeps
    // both into the same links, and everything else is compared byte for byte.
    let conf = TempDir::new("opensm-conf").expect("a directory for opensm's config");
    let conf_file = conf.join("opensm.conf");
    std::fs::write(
        &conf_file,
        "force_link_width 0\nforce_link_speed 0\nforce_link_speed_ext 0\n",
    )
    .unwrap();
    let conf_file = conf_file.to_str().expect("a UTF-8 temp path");
    let mut sm_args = vec!["-F", conf_file];
    if fabric == "lmc.net" {
        sm_args.extend(["--lmc", "2"]);
    }
    let sm_args = &sm_args[..];
    std::thread::scope(|s| {
        let daemon = s.spawn(|| serve.opensm_once(&sim, sm_args));
        sim.opensm()
            .args(sm_args)
            .run_once()
            .unwrap_or_else(|e| panic!("{fabric}: opensm -o on ibsim: {e}"));
        daemon
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{fabric}: opensm -o on the daemon: {e}"));
    });
    // The topology as discovery finds it on ibsim, the reference.
    let json = outcome(common::native(&sim, &umad()).args(["ibnetdiscover", "--json"]));
    assert_eq!(
        json.code, 0,
        "{fabric}: umad ibnetdiscover --json: {json:?}"
    );
    let topo = Fabric::from_json(&json.stdout).expect("the topology parses");
    let targets = targets(&topo);
    assert!(!targets.is_empty(), "{fabric}: nothing to query");
    let mut cmds = fabric_cmds(&topo);
    cmds.extend(node_cmds(&topo, &targets));
    let (on_ibsim, on_daemon) = std::thread::scope(|s| {
        let daemon = s.spawn(|| Side::Daemon(&sim, &serve).run_all(&cmds));
        let ibsim = Side::Ibsim(&sim).run_all(&cmds);
        (ibsim, daemon.join().expect("the daemon's runs"))
    });
    let ((on_ibsim, ibsim_took), (on_daemon, daemon_took)) = (on_ibsim, on_daemon);
    for (cmd, (a, b)) in cmds.iter().zip(ibsim_took.iter().zip(&daemon_took)) {
        if a.max(b) > &Duration::from_secs(2) {
            eprintln!(
                "{fabric}: {}: {a:.1?} on ibsim, {b:.1?} on the daemon",
                cmd.line()
            );
        }
    }
    let mut report = String::new();
    for ((cmd, (c_ib, ours_ib)), (c_d, ours_d)) in cmds.iter().zip(&on_ibsim).zip(&on_daemon) {
        let ok = match cmd.expect {
            Expect::Ok => c_ib.code == 0,
            Expect::Fails => c_ib.code != 0,
            Expect::Either => true,
        };
        if !ok {
            report += &format!(
                "  {fabric}: C {} on ibsim exited {}, expected {:?}\n{}",
                cmd.line(),
                c_ib.code,
                cmd.expect,
                c_ib.stderr
            );
        }
        report += &compare(&format!("{fabric}: C"), cmd, c_ib, c_d);
        report += &compare(&format!("{fabric}: umad"), cmd, ours_ib, ours_d);
    }
    eprintln!(
        "{fabric}: {} commands, {} nodes queried, each in C and umad on both",
        cmds.len(),
        targets.len()
    );
    assert!(
        report.is_empty(),
        "{fabric}: umad sim serve differs from ibsim:\n{report}"
    );
}

#[test]
fn every_fabric_has_a_test() {
    let mut listed: Vec<&str> = FABRICS.to_vec();
    listed.sort_unstable();
    let mut found: Vec<String> = std::fs::read_dir(fabrics_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".net"))
        .collect();
    found.sort_unstable();
    assert_eq!(listed, found);
    let me = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sim_serve_tools.rs"),
    )
    .unwrap();
    for f in FABRICS {
        assert!(
            me.contains(&format!("differential(\"{f}\")")),
            "no test runs differential(\"{f}\")"
        );
    }
}

#[test]
fn the_tools_match_ibsim_on_example() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_example") {
        return;
    }
    differential("example.net");
}

#[test]
fn the_tools_match_ibsim_on_b2b() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_b2b") {
        return;
    }
    differential("b2b.net");
}

#[test]
fn the_tools_match_ibsim_on_chain() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_chain") {
        return;
    }
    differential("chain.net");
}

#[test]
fn the_tools_match_ibsim_on_ring() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_ring") {
        return;
    }
    differential("ring.net");
}

#[test]
fn the_tools_match_ibsim_on_odd() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_odd") {
        return;
    }
    differential("odd.net");
}

#[test]
fn the_tools_match_ibsim_on_mixed() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_mixed") {
        return;
    }
    differential("mixed.net");
}

#[test]
fn the_tools_match_ibsim_on_lmc() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_lmc") {
        return;
    }
    differential("lmc.net");
}

#[test]
fn the_tools_match_ibsim_on_fattree_1008() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_fattree_1008") {
        return;
    }
    differential("fattree-1008.net");
}

#[test]
fn the_tools_match_ibsim_on_fattree3_1760() {
    if !require_ibsim("umad_cli::sim_serve_tools::the_tools_match_ibsim_on_fattree3_1760") {
        return;
    }
    differential("fattree3-1760.net");
}

// ---- The in-process simulator against the daemon ----

/// `umad <tool> <args>` in `dir` with nothing of the simulators' environment but `set`.
fn umad_with(dir: &Path, set: &[(&str, &str)], cmd: &Cmd) -> Outcome {
    let mut c = Command::new(umad());
    c.current_dir(dir)
        .env_remove("UMAD_SIM")
        .env_remove("UMAD_SIM_NODE")
        .env_remove("UMAD_SIM_UNCONFIGURED")
        .env_remove("UMAD_SIM_FAULTS")
        .env_remove("UMAD_IBSIM")
        .env_remove("UMAD_IBSIM_NODE")
        .env_remove("LD_PRELOAD")
        .env_remove("IBSIM_SOCKNAME")
        .stdin(std::process::Stdio::null());
    for (k, v) in set {
        c.env(k, v);
    }
    outcome(c.arg(cmd.tool).args(&cmd.args))
}

/// `umad sim serve --configured <netfile>` (natively, `UMAD_IBSIM`) against
/// `UMAD_SIM=<netfile>` in process: both are ibnetsim configured alike (its LIDs, Active
/// ports, min-hop LFTs), so every `umad` tool must print the same bytes and exit alike,
/// with no known difference at all. Only the traffic counters are masked: in process
/// every run starts a fabric of its own, whose counters start at 0.
fn in_process_matches_daemon(fabric: &str) {
    let netfile = fabrics_dir().join(fabric);
    let net = netfile.to_str().expect("a UTF-8 path");
    let serve = Serve::start_configured(&netfile);
    let dir = TempDir::new("insim-vs-serve").expect("a scratch directory");
    let daemon_env = [("UMAD_IBSIM", serve.socket())];
    let in_process_env = [("UMAD_SIM", net)];
    let json = umad_with(
        &dir,
        &in_process_env,
        &Cmd::new("ibnetdiscover", &["--json"]),
    );
    assert_eq!(json.code, 0, "{fabric}: in process: {json:?}");
    let topo = Fabric::from_json(&json.stdout).expect("the topology parses");
    let targets = targets(&topo);
    let mut cmds = fabric_cmds(&topo);
    cmds.extend(node_cmds(&topo, &targets));
    let (daemon, in_process): (Vec<Outcome>, Vec<Outcome>) = std::thread::scope(|s| {
        let d = s.spawn(|| {
            cmds.iter()
                .map(|c| umad_with(&dir, &daemon_env, c))
                .collect::<Vec<_>>()
        });
        let p = cmds
            .iter()
            .map(|c| umad_with(&dir, &in_process_env, c))
            .collect::<Vec<_>>();
        (d.join().expect("the daemon's runs"), p)
    });
    let mut report = String::new();
    for ((cmd, d), p) in cmds.iter().zip(&daemon).zip(&in_process) {
        let (d, p) = (masked(d, false), masked(p, false));
        if d != p {
            report += &format!(
                "  {fabric}: umad {}: exit {} in process, {} on the daemon\n{}",
                cmd.line(),
                p.code,
                d.code,
                first_differences(&p.stdout, &d.stdout)
            );
            if p.stderr != d.stderr {
                report += &format!("      stderr:\n{}", first_differences(&p.stderr, &d.stderr));
            }
        }
    }
    eprintln!(
        "{fabric}: {} commands in process and on the configured daemon",
        cmds.len()
    );
    assert!(
        report.is_empty(),
        "{fabric}: in process (UMAD_SIM) differs from umad sim serve --configured \
         (the lines say ibsim for in process):\n{report}"
    );
}

#[test]
fn in_process_matches_the_configured_daemon() {
    if !require_ibsim("umad_cli::sim_serve_tools::in_process_matches_the_configured_daemon") {
        return;
    }
    for fabric in ["example.net", "odd.net", "mixed.net", "chain.net"] {
        in_process_matches_daemon(fabric);
    }
}
