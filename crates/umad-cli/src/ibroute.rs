//! `umad ibroute`: dump a switch's unicast (LFT) or, with `-M`, multicast (MFT) forwarding
//! table, as infiniband-diags' `ibroute` (same options, same text byte for byte, errors
//! included), or `--json` (docs/json/ibroute-v1.schema.json).
//!
//! `ibroute [-a] [-n] [-M] [--node-name-map <file>] <dest dr_path|lid|guid> [<startlid>
//! [<endlid>]]`; the destination is read as C does (`-D` a directed route, `-G` a port
//! GUID, else a LID: [`crate::dest`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::NodeNameMap;
use ibmad::attr::id;
use ibmad::attr::{LinearForwardingTable, MulticastForwardingTable};
use ibmad::{NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo};
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtol, ibexit, ibwarn, Dest, SmpPort};
use crate::exit;

/// The common options ibroute does not take (C: `"K"`).
const EXCLUDED_COMMON: &str = "K";

/// LIDs per LFT block.
pub const LIDS_PER_BLOCK: u32 = LinearForwardingTable::LIDS_PER_BLOCK as u32;
/// MLIDs per MFT block.
pub const MLIDS_PER_BLOCK: u32 = MulticastForwardingTable::MLIDS_PER_BLOCK as u32;
/// The unicast and multicast LID ranges (`IB_MAX_UCAST_LID`, `IB_MIN_MCAST_LID`,
/// `IB_MAX_MCAST_LID`).
const MAX_UCAST_LID: u32 = 0xbfff;
const MIN_MCAST_LID: u32 = 0xc000;
const MAX_MCAST_LID: u32 = 0xfffe;

/// The command line.
pub fn command() -> Command {
    let cmd = Command::new("ibroute")
        .about("query InfiniBand switch forwarding tables")
        .override_usage("ibroute [options] [<dest dr_path|lid|guid> [<startlid> [<endlid>]]]")
        .after_help(common::examples(
            "ibroute",
            &[
                " -- Unicast examples:",
                "4\t# dump all lids with valid out ports of switch with lid 4",
                "-a 4\t# same, but dump all lids, even with invalid out ports",
                "-n 4\t# simple dump format - no destination resolving",
                "4 10\t# dump lids starting from 10",
                "4 0x10 0x20\t# dump lid range",
                "-G 0x08f1040023\t# resolve switch by GUID",
                "-D 0,1\t# resolve switch by direct path",
                " -- Multicast examples:",
                "-M 4\t# dump all non empty mlids of switch with lid 4",
                "-M 4 0xc010 0xc020\t# same, but with range",
                "-M -n 4\t# simple dump format",
            ],
        ));
    let cmd = table_args(
        cmd,
        "print the table as JSON (docs/json/ibroute-v1.schema.json)",
    );
    common::add_common_args(cmd, EXCLUDED_COMMON)
}

/// The options ibroute and dump_fts share (dump_fts is a script over ibroute), in C's order,
/// with `--json`'s help naming the tool's schema; then the positional arguments.
pub fn table_args(cmd: Command, json_help: &'static str) -> Command {
    cmd.arg(
        Arg::new("all")
            .short('a')
            .long("all")
            .action(ArgAction::Count)
            .help("show all lids, even invalid entries"),
    )
    .arg(
        Arg::new("no_dests")
            .short('n')
            .long("no_dests")
            .action(ArgAction::Count)
            .help("do not try to resolve destinations"),
    )
    .arg(
        Arg::new("Multicast")
            .short('M')
            .long("Multicast")
            .action(ArgAction::Count)
            .help("show multicast forwarding tables"),
    )
    .arg(common::node_name_map_arg())
    .arg(
        Arg::new("json")
            .long("json")
            .action(ArgAction::SetTrue)
            .help(json_help),
    )
    .arg(Arg::new("args").num_args(0..))
}

/// Runs `ibroute`; returns the exit code.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

/// What to dump.
#[derive(Debug, Clone)]
pub struct Request {
    /// `-a`.
    pub dump_all: bool,
    /// `-n`.
    pub brief: bool,
    /// The first LID (0 = the table's start).
    pub start: u32,
    /// The last LID (0 = the table's end).
    pub end: u32,
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    if args.is_empty() {
        eprint!("{}", common::c_usage(&command().name(prog)));
        return exit::USAGE;
    }
    let req = Request {
        dump_all: m.get_count("all") > 0,
        brief: m.get_count("no_dests") > 0,
        start: args.get(1).map_or(0, |a| c_strtol(a) as u32),
        end: args.get(2).map_or(0, |a| c_strtol(a) as u32),
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let Some(dest) = port.resolve(&args[0], opts.dest) else {
        return ibexit(prog, &format!("can't resolve destination port {}", args[0]));
    };
    let tables = Tables {
        port: &port,
        map: map.as_ref(),
    };
    let result = if m.get_count("Multicast") > 0 {
        tables.multicast(&dest, &req, opts.verbose > 0)
    } else {
        tables.unicast(&dest, &req)
    };
    match result {
        Ok(dump) => {
            if m.get_flag("json") {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&dump.json).expect("JSON")
                );
            } else {
                print!("{}", dump.text);
            }
            exit::OK
        }
        Err(e) => ibexit(prog, &format!("dump tables: {e}")),
    }
}

/// A dumped table: C's text and the JSON document.
pub struct Dumped {
    /// The text, as C prints it.
    pub text: String,
    /// The `--json` document.
    pub json: Value,
}

/// The switch a table belongs to (C's `check_switch`).
pub struct Switch {
    /// How it is addressed, as C prints it (`portid2str`).
    pub address: String,
    /// Its number of ports.
    pub nports: u32,
    /// Its node GUID.
    pub guid: u64,
    /// Its name (node name map, else description).
    pub name: String,
    /// Its SwitchInfo.
    pub info: SwitchInfo,
}

/// What the dump of one switch does when a block cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// `ibroute`: say so and stop (no count line).
    Stop,
    /// `dump_lfts`/`dump_mfts`: say so and go on with the data read before.
    Continue,
}

/// What is known about the port behind a LID: (node type, port GUID, node GUID, name, base
/// LID, LMC).
pub type LidInfo = (NodeType, u64, u64, String, u16, u8);

/// Reading tables over one port.
pub struct Tables<'a> {
    /// The port.
    pub port: &'a SmpPort,
    /// The node name map.
    pub map: Option<&'a NodeNameMap>,
}

impl Tables<'_> {
    fn name(&self, guid: u64, desc: &NodeDescription) -> String {
        self.name_of(guid, &desc.as_str())
    }

    /// C's `remap_node_name`: the map's name for `guid`, else the cleaned description.
    pub fn name_of(&self, guid: u64, desc: &str) -> String {
        NodeNameMap::remap_or_clean(self.map, guid, desc).into_owned()
    }

    /// C's `check_switch`: NodeInfo, NodeDescription, SwitchInfo, or C's reason.
    fn check_switch(&self, dest: &Dest) -> Result<Switch, &'static str> {
        crate::debug::ibdebug("check_switch", format_args!("checking node type"));
        let Some(ni) = self
            .port
            .get(dest, id::NODE_INFO, 0)
            .and_then(|d| NodeInfo::parse(&d).ok())
        else {
            // C dumps its NodeInfo buffer on stderr first: still all zeros, as libibmad
            // copies no data out of a failed query.
            eprint!(
                "{}",
                crate::debug::xdump("nodeinfo\n", &[0; ibmad::SMP_DATA_LEN])
            );
            return Err("node info failed: valid addr?");
        };
        let nd = self
            .port
            .get(dest, id::NODE_DESC, 0)
            .and_then(|d| NodeDescription::parse(&d).ok())
            .ok_or("node desc failed")?;
        if ni.node_type != NodeType::Switch {
            return Err("not a switch");
        }
        crate::debug::ibdebug(
            "check_switch",
            format_args!("Gathering information about switch"),
        );
        let info = self
            .port
            .get_attr::<SwitchInfo>(dest, 0)
            .ok_or("switch info failed: is a switch node?")?;
        Ok(Switch {
            address: dest.to_c_string(),
            nports: u32::from(ni.num_ports),
            guid: ni.node_guid,
            name: self.name(ni.node_guid, &nd),
            info,
        })
    }

    /// The unicast table of the switch at `dest` (ibroute's `dump_unicast_tables`).
    pub fn unicast(&self, dest: &Dest, req: &Request) -> Result<Dumped, &'static str> {
        let sw = self.check_switch(dest)?;
        let mut lookup = |lid: u32| self.lookup_lid(lid);
        Ok(self.unicast_of(dest, &sw, req, OnError::Stop, &mut lookup))
    }

    /// C's `dump_lid` lookup by SMPs: NodeDescription, PortInfo and NodeInfo of `lid`.
    fn lookup_lid(&self, lid: u32) -> Result<LidInfo, &'static str> {
        let d = Dest::lid(lid as u16);
        let nd = self.port.get(&d, id::NODE_DESC, 0);
        let pi = nd
            .as_ref()
            .and_then(|_| self.port.get(&d, id::PORT_INFO, 0));
        let ni = pi
            .as_ref()
            .and_then(|_| self.port.get(&d, id::NODE_INFO, 0));
        let parsed = (|| {
            Some((
                NodeDescription::parse(nd.as_deref()?).ok()?,
                PortInfo::parse(pi.as_deref()?).ok()?,
                NodeInfo::parse(ni.as_deref()?).ok()?,
            ))
        })();
        let (nd, pi, ni) = parsed.ok_or(": (unknown node and type)")?;
        Ok((
            ni.node_type,
            ni.port_guid,
            ni.node_guid,
            self.name(ni.node_guid, &nd),
            pi.lid,
            pi.lmc,
        ))
    }

    /// The unicast table of `sw` at `dest`, LIDs described by `lookup` (C's
    /// `dump_unicast_tables` of ibroute and of dump_fts).
    pub fn unicast_of(
        &self,
        dest: &Dest,
        sw: &Switch,
        req: &Request,
        on_error: OnError,
        lookup: &mut dyn FnMut(u32) -> Result<LidInfo, &'static str>,
    ) -> Dumped {
        let top = u32::from(sw.info.linear_fdb_top);
        let start = req.start;
        let mut end = req.end;
        if end == 0 || end > top {
            end = top;
        }
        if end > MAX_UCAST_LID {
            ibwarn(
                "dump_unicast_tables",
                &format!("illegal lft top {end}, truncate to {MAX_UCAST_LID}"),
            );
            end = MAX_UCAST_LID;
        }
        let mut text = format!(
            "Unicast lids [0x{start:x}-0x{end:x}] of switch {} guid 0x{:016x} ({}):\n",
            sw.address, sw.guid, sw.name
        );
        // C's format ends with its own newline, so the line is followed by an empty one.
        crate::debug::ibdebug(
            "dump_unicast_tables",
            format_args!("Switch top is 0x{top:x}\n"),
        );
        text.push_str("  Lid  Out   Destination\n       Port     Info \n");
        let mut entries = Vec::new();
        let mut lids = LidCache::default();
        let first_block = start / LIDS_PER_BLOCK;
        let end_block = end.div_ceil(LIDS_PER_BLOCK);
        let mut complete = true;
        let mut lft = LinearForwardingTable::default();
        for block in first_block..end_block {
            crate::debug::ibdebug("dump_unicast_tables", format_args!("reading block {block}"));
            match self.port.get_attr(dest, block) {
                Some(table) => lft = table,
                None => {
                    eprintln!("SubnGet() failed; MAD status 0x0 AM 0x{block:x}");
                    if on_error == OnError::Stop {
                        complete = false;
                        break;
                    }
                }
            }
            let lo = (block * LIDS_PER_BLOCK).max(start);
            let hi = (block * LIDS_PER_BLOCK + LIDS_PER_BLOCK).min(end + 1);
            for lid in lo..hi {
                let out = u32::from(lft.ports[(lid % LIDS_PER_BLOCK) as usize]);
                let valid = out <= sw.nports;
                if !valid && !req.dump_all {
                    continue;
                }
                let info = if req.brief {
                    String::new()
                } else {
                    lids.describe(lid, valid, lookup)
                };
                text.push_str(&format!("0x{lid:04x} {out:03} {info}\n"));
                entries.push(json!({ "lid": lid, "port": out, "valid": valid, "info": info }));
            }
        }
        let n = entries.len();
        if complete {
            text.push_str(&format!(
                "{n} {}lids dumped \n",
                if req.dump_all { "" } else { "valid " }
            ));
        }
        Dumped {
            text,
            json: json!({
                "schema_version": 1,
                "kind": "unicast",
                "switch": switch_json(sw),
                "start": start,
                "end": end,
                "entries": entries,
                "complete": complete,
            }),
        }
    }

    /// The multicast table of the switch at `dest` (ibroute's `dump_multicast_tables`).
    pub fn multicast(
        &self,
        dest: &Dest,
        req: &Request,
        verbose: bool,
    ) -> Result<Dumped, &'static str> {
        let sw = self.check_switch(dest)?;
        let mut mft = Vec::new();
        Ok(self.multicast_of(dest, &sw, req, verbose, OnError::Stop, &mut mft))
    }

    /// The multicast table of `sw` at `dest` (C's `dump_multicast_tables` of ibroute and of
    /// dump_fts). `mft` holds the blocks last read, per 16-port chunk: C keeps them from
    /// switch to switch, and a block that cannot be read leaves them as they were.
    pub fn multicast_of(
        &self,
        dest: &Dest,
        sw: &Switch,
        req: &Request,
        verbose: bool,
        on_error: OnError,
        mft: &mut Vec<[u16; MLIDS_PER_BLOCK as usize]>,
    ) -> Dumped {
        let cap = u32::from(sw.info.multicast_fdb_cap);
        let top = u32::from(sw.info.multicast_fdb_top);
        let mut start = req.start;
        let mut end = req.end;
        let func = "dump_multicast_tables";
        if end == 0 || end > (MIN_MCAST_LID + cap).wrapping_sub(1) {
            end = (MIN_MCAST_LID + cap).wrapping_sub(1);
        }
        if !req.dump_all && top != 0 && top < end {
            if top < MIN_MCAST_LID - 1 {
                ibwarn(func, &format!("illegal top mlid {top:x}"));
            } else {
                end = top;
            }
        }
        if start == 0 {
            start = MIN_MCAST_LID;
        } else if start < MIN_MCAST_LID {
            ibwarn(
                func,
                &format!("illegal start mlid {start:x}, set to {MIN_MCAST_LID:x}"),
            );
            start = MIN_MCAST_LID;
        }
        if end > MAX_MCAST_LID {
            ibwarn(
                func,
                &format!("illegal end mlid {end:x}, truncate to {MAX_MCAST_LID:x}"),
            );
            end = MAX_MCAST_LID;
        }
        let nports = sw.nports;
        let mut text = format!(
            "Multicast mlids [0x{start:x}-0x{end:x}] of switch {} guid 0x{:016x} ({}):\n",
            sw.address, sw.guid, sw.name
        );
        if req.brief {
            text.push_str(" MLid       Port Mask\n");
        } else {
            if nports > 9 {
                let tens: String = (0..=nports)
                    .map(|i| {
                        let c = if i % 10 != 0 {
                            ' '
                        } else {
                            char::from(b'0' + (i / 10) as u8)
                        };
                        format!("{c} ")
                    })
                    .collect();
                text.push_str(&format!("            {tens}\n"));
            }
            let ones: String = (0..=nports).map(|i| format!("{} ", i % 10)).collect();
            text.push_str(&format!("     Ports: {ones}\n"));
            text.push_str(" MLid\n");
        }
        if verbose {
            text.push_str(&format!(
                "Switch multicast mlid capability is {cap} top is 0x{top:x}\n"
            ));
        }
        let chunks = (nports + 1).div_ceil(16);
        let mut entries = Vec::new();
        let mut complete = true;
        if mft.len() < chunks as usize {
            mft.resize(chunks as usize, [0u16; MLIDS_PER_BLOCK as usize]);
        }
        'blocks: for block in start / MLIDS_PER_BLOCK..=end / MLIDS_PER_BLOCK {
            for (j, chunk) in mft.iter_mut().take(chunks as usize).enumerate() {
                let attr_mod = (block - MIN_MCAST_LID / MLIDS_PER_BLOCK) | ((j as u32) << 28);
                crate::debug::ibdebug(
                    "dump_multicast_tables",
                    format_args!("reading block {block:x} chunk {j} mod {attr_mod:x}"),
                );
                let Some(table) = self
                    .port
                    .get_attr::<MulticastForwardingTable>(dest, attr_mod)
                else {
                    eprintln!("SubnGet() failed; MAD status 0x0 AM 0x{attr_mod:x}");
                    if on_error == OnError::Stop {
                        complete = false;
                        break 'blocks;
                    }
                    continue;
                };
                *chunk = table.port_masks;
            }
            let lo = (block * MLIDS_PER_BLOCK).max(start);
            let hi = (block * MLIDS_PER_BLOCK + MLIDS_PER_BLOCK).min(end + 1);
            for mlid in lo..hi {
                let idx = (mlid % MLIDS_PER_BLOCK) as usize;
                let masks: Vec<u16> = mft.iter().take(chunks as usize).map(|c| c[idx]).collect();
                let nonzero = masks.iter().any(|&m| m != 0);
                if !nonzero && !req.dump_all {
                    continue;
                }
                let s: String = if req.brief {
                    masks.iter().map(|m| format!("{m:04x}")).collect()
                } else {
                    (0..=nports)
                        .map(|i| {
                            let m = masks[(i / 16) as usize];
                            if m & (1 << (i % 16)) != 0 {
                                "x "
                            } else {
                                "  "
                            }
                        })
                        .collect()
                };
                text.push_str(&format!("0x{mlid:04x}      {s}\n"));
                let ports: Vec<u32> = (0..=nports)
                    .filter(|&i| masks[(i / 16) as usize] & (1 << (i % 16)) != 0)
                    .collect();
                entries.push(json!({ "mlid": mlid, "ports": ports, "masks": masks }));
            }
        }
        if complete {
            text.push_str(&format!(
                "{} {}mlids dumped \n",
                entries.len(),
                if req.dump_all { "" } else { "valid " }
            ));
        }
        Dumped {
            text,
            json: json!({
                "schema_version": 1,
                "kind": "multicast",
                "switch": switch_json(sw),
                "start": start,
                "end": end,
                "entries": entries,
                "complete": complete,
            }),
        }
    }
}

fn switch_json(sw: &Switch) -> Value {
    json!({
        "address": sw.address,
        "guid": format!("0x{:016x}", sw.guid),
        "name": sw.name,
        "num_ports": sw.nports,
    })
}

/// What C's `dump_lid` remembers between LIDs: the LMC range of the last port it
/// queried, for the LIDs after its base LID.
#[derive(Default)]
struct LidCache {
    last_port_lid: u32,
    base_port_lid: u32,
    port_guid: u64,
}

impl LidCache {
    /// C's `dump_lid`: `: (<type> portguid 0x...: '<name>')` for the port behind `lid`.
    fn describe(
        &mut self,
        lid: u32,
        valid: bool,
        lookup: &mut dyn FnMut(u32) -> Result<LidInfo, &'static str>,
    ) -> String {
        if lid <= self.last_port_lid {
            return if !valid {
                format!(
                    ": (path #{} - illegal port)",
                    lid as i64 - i64::from(self.base_port_lid)
                )
            } else if self.port_guid == 0 {
                format!(
                    ": (path #{} out of {})",
                    lid as i64 - i64::from(self.base_port_lid) + 1,
                    self.last_port_lid as i64 - i64::from(self.base_port_lid) + 1
                )
            } else {
                format!(
                    ": (path #{} out of {}: portguid 0x{:016x})",
                    lid as i64 - i64::from(self.base_port_lid) + 1,
                    self.last_port_lid as i64 - i64::from(self.base_port_lid) + 1,
                    self.port_guid
                )
            };
        }
        if !valid {
            return ": (illegal port)".into();
        }
        self.port_guid = 0;
        let (node_type, port_guid, _node_guid, name, base, lmc) = match lookup(lid) {
            Ok(info) => info,
            Err(text) => return text.into(),
        };
        self.port_guid = port_guid;
        if lmc > 0 {
            self.base_port_lid = u32::from(base);
            self.last_port_lid = u32::from(base) + (1 << lmc) - 1;
        }
        format!(": ({node_type} portguid 0x{port_guid:016x}: '{name}')")
    }
}
