//! `umad dump_fts`, `dump_lfts`, `dump_mfts`: discover the fabric and dump every switch's
//! unicast (or, with `-M`, multicast) forwarding table, as infiniband-diags' `dump_fts` and
//! its `dump_lfts.sh`/`dump_mfts.sh` wrappers (same options, same text byte for byte; the
//! wrappers' trailing warning included), or `--json` (docs/json/dump_fts-v1.schema.json).
//!
//! `dump_fts [-a] [-n] [-M] [--node-name-map <file>] [<startlid> [<endlid>]]`. The switches
//! come in libibnetdisc's order, each addressed by the directed route discovery found it
//! by; a LID's destination is described from the discovered fabric, not by more SMPs.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgMatches, Command};
use ibfabric::discover::DiscoverOptions;
use ibfabric::{Fabric, NodeNameMap};
use ibmad::{NodeType, SwitchInfo};
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtol, Dest, DrRoute, SmpPort};
use crate::exit;
use crate::ibroute::{LidInfo, OnError, Request, Switch, Tables, MLIDS_PER_BLOCK};

/// The common options dump_fts does not take (C: `"KGDLs"`).
const EXCLUDED_COMMON: &str = "KGDLs";

/// Which wrapper ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// `dump_fts`.
    Fts,
    /// `dump_lfts` (`dump_fts "$@"` and a warning).
    Lfts,
    /// `dump_mfts` (`dump_fts -M "$@"` and a warning).
    Mfts,
}

/// The command line.
fn command(prog: &'static str) -> Command {
    let cmd = Command::new(prog)
        .about("dump the forwarding tables of every switch in the fabric")
        .override_usage(format!(
            "{prog} [options] [<dest dr_path|lid|guid> [<startlid> [<endlid>]]]"
        ))
        .after_help(common::examples(
            prog,
            &[
                " -- Unicast examples:",
                "-a\t# same, but dump all lids, even with invalid out ports",
                "-n\t# simple dump format - no destination resolving",
                "10\t# dump lids starting from 10",
                "0x10 0x20\t# dump lid range",
                " -- Multicast examples:",
                "-M\t# dump all non empty mlids of switch with lid 4",
                "-M 0xc010 0xc020\t# same, but with range",
                "-M -n\t# simple dump format",
            ],
        ));
    let cmd = crate::ibroute::table_args(
        cmd,
        "print the tables as JSON (docs/json/dump_fts-v1.schema.json)",
    );
    common::add_common_args(cmd, EXCLUDED_COMMON)
}

/// Runs `dump_fts`; returns the exit code.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    run_flavor(prog, Flavor::Fts, args)
}

/// Runs `dump_lfts` (`dump_fts` and the wrapper's warning); returns the exit code.
pub fn main_lfts(prog: &'static str, args: Vec<OsString>) -> i32 {
    run_flavor(prog, Flavor::Lfts, args)
}

/// Runs `dump_mfts` (`dump_fts -M` and the wrapper's warning); returns the exit code.
pub fn main_mfts(prog: &'static str, args: Vec<OsString>) -> i32 {
    run_flavor(prog, Flavor::Mfts, args)
}

fn run_flavor(prog: &'static str, flavor: Flavor, mut args: Vec<OsString>) -> i32 {
    if flavor == Flavor::Mfts {
        args.insert(0, OsString::from("-M"));
    }
    let (code, json) = match common::parse_args(prog, command(prog), args) {
        Parsed::Run(m) => (run(&m), m.get_flag("json")),
        Parsed::Exit(code) => (code, false),
    };
    if flavor == Flavor::Fts {
        return code;
    }
    // The shell wrappers: dump_fts's output, a warning, and the exit status of the last
    // echo.
    let replaced = if flavor == Flavor::Lfts {
        "dump_fts"
    } else {
        "dump_fts -M"
    };
    let warning = format!("\n*** WARNING ***: this command has been replaced by {replaced}\n\n\n");
    if json {
        // stdout is one JSON document (docs/json/dump_fts-v1.schema.json): the wrapper's
        // warning goes to stderr then.
        eprint!("{warning}");
    } else {
        print!("{warning}");
    }
    exit::OK
}

fn run(m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report("dump_fts", &e),
    };
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let req = Request {
        dump_all: m.get_count("all") > 0,
        brief: m.get_count("no_dests") > 0,
        start: args.first().map_or(0, |a| c_strtol(a) as u32),
        end: args.get(1).map_or(0, |a| c_strtol(a) as u32),
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    let fabric = match discover(&opts) {
        Some(f) => f,
        None => {
            eprintln!("Failed to discover fabric");
            return exit::FAILURE;
        }
    };
    let Some(port) = SmpPort::open("dump_fts", &opts) else {
        return exit::FAILURE;
    };
    let dumps = dump_all_switches(&fabric, &port, map.as_ref(), &req, m, opts.verbose > 0);
    if m.get_flag("json") {
        let tables: Vec<Value> = dumps.into_iter().map(|d| d.json).collect();
        let doc = json!({ "schema_version": 1, "tables": tables });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        for d in dumps {
            print!("{}", d.text);
        }
    }
    exit::OK
}

/// The fabric, or `None` (after saying why the port did not open, where C's libibumad prints
/// its `ibwarn` lines).
fn discover(opts: &CommonOpts) -> Option<Fabric> {
    let port = opts.open_ibnd_port("dump_fts").ok()?;
    let d_opts = DiscoverOptions {
        timeout: opts
            .timeout_ms
            .map(|ms| std::time::Duration::from_millis(u64::from(ms))),
        mlx_epi: opts.mlx_epi,
        ..DiscoverOptions::default()
    };
    {
        let rpc = ibfabric::discover::engine(port, &d_opts);
        crate::debug::attach_pipelined(&rpc);
        ibfabric::discover::discover_with(&rpc, &d_opts)
    }
    .ok()
    .map(|d| {
        common::note_discovery("dump_fts", &d);
        d.fabric
    })
}

/// Every switch's table, in libibnetdisc's order.
fn dump_all_switches(
    fabric: &Fabric,
    port: &SmpPort,
    map: Option<&NodeNameMap>,
    req: &Request,
    m: &ArgMatches,
    verbose: bool,
) -> Vec<crate::ibroute::Dumped> {
    let tables = Tables { port, map };
    // ibnd_find_port_lid: every queried port under each LID of its range, the first one
    // recorded kept.
    let mut by_lid: HashMap<u16, LidInfo> = HashMap::new();
    for node in fabric.nodes.iter().rev() {
        let name = tables.name_of(node.guid, &node.description);
        for p in &node.ports {
            let (base, lmc) = if node.node_type == NodeType::Switch {
                (node.lid, node.lmc)
            } else {
                (p.lid, p.lmc)
            };
            if base == 0 || base > 0xbfff {
                continue;
            }
            let guid = if node.node_type == NodeType::Switch {
                node.port_guid
            } else {
                p.guid
            };
            for lid in u32::from(base)..=u32::from(base) + (1u32 << lmc) - 1 {
                by_lid
                    .entry(lid as u16)
                    .or_insert_with(|| (node.node_type, guid, node.guid, name.clone(), base, lmc));
            }
        }
    }
    let multicast = m.get_count("Multicast") > 0;
    let mut mft: Vec<[u16; MLIDS_PER_BLOCK as usize]> = Vec::new();
    let mut out = Vec::new();
    for node in fabric
        .nodes
        .iter()
        .filter(|n| n.node_type == NodeType::Switch)
    {
        let elems: Vec<u8> = std::iter::once(0)
            .chain(node.path.path.hops().iter().copied())
            .collect();
        let shown = DrRoute {
            elems: elems.clone(),
            slid: node.path.slid,
            dlid: node.path.dlid,
        };
        let dest = Dest {
            lid: 0,
            dr: Some(DrRoute {
                elems,
                slid: 0xffff,
                dlid: 0xffff,
            }),
        };
        // libibnetdisc keeps the SwitchInfo it read; read it again here.
        let info = port.get_attr::<SwitchInfo>(&dest, 0).unwrap_or_default();
        let sw = Switch {
            address: format!("DR path {}", shown.to_c_string()),
            nports: u32::from(node.num_ports),
            guid: node.guid,
            name: tables.name_of(node.guid, &node.description),
            info,
        };
        let dump = if multicast {
            tables.multicast_of(&dest, &sw, req, verbose, OnError::Continue, &mut mft)
        } else {
            let mut lookup = |lid: u32| {
                by_lid
                    .get(&(lid as u16))
                    .cloned()
                    .ok_or(": (node info not available fabric scan)")
            };
            tables.unicast_of(&dest, &sw, req, OnError::Continue, &mut lookup)
        };
        out.push(dump);
    }
    out
}
