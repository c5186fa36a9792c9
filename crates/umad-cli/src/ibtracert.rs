//! `umad ibtracert`: trace the unicast route between two ports hop by hop (or, with `-m`,
//! the multicast route of an MLID), as infiniband-diags' `ibtracert` (same options, same
//! text byte for byte, errors included), or `--json` (docs/json/ibtracert-v1.schema.json).
//!
//! `ibtracert [-f] [-n] [-m <mlid>] [--node-name-map <file>] [--ports-file <file>]
//! <src-addr> <dest-addr>`; addresses are LIDs, or port GUIDs with `-G` ([`crate::dest`]).
//! The route is followed with directed-route SMPs from the local port, reading each
//! switch's LFT (or MFT) entry for the destination, as C does.
//!
//! Difference from C, on purpose: C's multicast search frees the nodes it has queued and
//! reads them afterwards (use after free), so in principle its `-m` output past the first
//! switch depends on the allocator (with glibc it comes out as intended: the tests compare
//! multi-switch multicast routes on three fabrics); this one keeps them.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::ibnetdiscover::clean_description;
use ibfabric::NodeNameMap;
use ibmad::attr::id;
use ibmad::attr::{LinearForwardingTable, MulticastForwardingTable};
use ibmad::{NodeDescription, NodeInfo, PortInfo, SwitchInfo};
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{ibexit, ibwarn, Dest, DrRoute, SmpPort};
use crate::exit;
use crate::ibroute::{LIDS_PER_BLOCK, MLIDS_PER_BLOCK};

/// The common options ibtracert does not take (C: `"DK"`).
const EXCLUDED_COMMON: &str = "DK";

/// C's `MAXHOPS`.
const MAX_HOPS: i32 = 63;

/// C's `node_type_str`.
const NODE_TYPE_STR: [&str; 5] = ["???", "ca", "switch", "router", "iwarp rnic"];

/// The command line.
pub fn command() -> Command {
    let cmd = Command::new("ibtracert")
        .about("trace InfiniBand unicast or multicast routes")
        .override_usage("ibtracert [options] <src-addr> <dest-addr>")
        .after_help(common::examples(
            "ibtracert",
            &[
                "- Unicast examples:",
                "4 16\t\t\t# show path between lids 4 and 16",
                "-n 4 16\t\t# same, but using simple output format",
                "-G 0x8f1040396522d 0x002c9000100d051\t# use guid addresses",
                " - Multicast examples:",
                "-m 0xc000 4 16\t# show multicast path of mlid 0xc000 between lids 4 and 16",
            ],
        ))
        .arg(
            Arg::new("force")
                .short('f')
                .long("force")
                .action(ArgAction::Count)
                .help("force"),
        )
        .arg(
            Arg::new("no_info")
                .short('n')
                .long("no_info")
                .action(ArgAction::SetTrue)
                .help("simple format"),
        )
        .arg(
            Arg::new("mlid")
                .short('m')
                .long("mlid")
                .value_name("mlid")
                .num_args(1)
                .help("multicast trace of the mlid"),
        )
        .arg(common::node_name_map_arg())
        .arg(
            Arg::new("ports-file")
                .long("ports-file")
                .value_name("file")
                .value_parser(clap::value_parser!(PathBuf))
                .help("port pairs file"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print the route as JSON (docs/json/ibtracert-v1.schema.json)"),
        )
        .arg(Arg::new("args").num_args(0..));
    common::add_common_args(cmd, EXCLUDED_COMMON)
}

/// Runs `ibtracert`; returns the exit code.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

/// A C `ib_portid_t` as ibtracert uses it: a LID, or a directed route from the local port
/// (`p[0..=cnt]`, extended and shortened in place).
#[derive(Debug, Clone)]
struct PortId {
    lid: u16,
    p: [u8; 64],
    cnt: usize,
}

impl PortId {
    fn local() -> PortId {
        PortId {
            lid: 0,
            p: [0; 64],
            cnt: 0,
        }
    }

    fn of(dest: &Dest) -> PortId {
        let mut p = PortId::local();
        p.lid = dest.lid;
        if let Some(dr) = &dest.dr {
            for (i, e) in dr.elems.iter().enumerate().take(64) {
                p.p[i] = *e;
            }
            p.cnt = dr.elems.len().saturating_sub(1);
        }
        p
    }

    fn dest(&self) -> Dest {
        if self.lid > 0 {
            Dest::lid(self.lid)
        } else {
            Dest {
                lid: 0,
                dr: Some(DrRoute {
                    elems: self.p[..=self.cnt].to_vec(),
                    // C's portid is zeroed: its route reads `slid 0; dlid 0` (libibmad
                    // sends 0 as the permissive LID, see `Dest::smp`).
                    slid: 0,
                    dlid: 0,
                }),
            }
        }
    }

    /// C's `extend_dpath`.
    fn extend(&mut self, port: u32) -> bool {
        if self.cnt + 2 >= self.p.len() {
            return false;
        }
        self.cnt += 1;
        self.p[self.cnt] = port as u8;
        true
    }

    fn describe(&self) -> String {
        self.dest().to_c_string()
    }
}

/// What ibtracert knows of a node.
#[derive(Debug, Clone, Default)]
struct TNode {
    ntype: u8,
    numports: u32,
    guid: u64,
    desc: String,
}

/// What ibtracert knows of a port.
#[derive(Debug, Clone, Default)]
struct TPort {
    portguid: u64,
    portnum: u32,
    lid: u32,
    lmc: u32,
    state: u32,
    physstate: u32,
}

/// C's `Switch` (the parts used).
#[derive(Debug, Clone, Default)]
struct Sw {
    linearcap: u32,
    top: u32,
    enhsp0: bool,
}

/// Runs a trace, writing C's text to `out` and recording hops for `--json`.
struct Tracer<'a> {
    port: &'a SmpPort,
    map: Option<&'a NodeNameMap>,
    force: bool,
    verbose: bool,
    out: String,
    hops: Vec<Value>,
}

fn type_str(t: u8) -> &'static str {
    NODE_TYPE_STR.get(usize::from(t)).copied().unwrap_or("???")
}

impl Tracer<'_> {
    fn name(&self, n: &TNode) -> String {
        NodeNameMap::remap_or_clean(self.map, n.guid, &n.desc).into_owned()
    }

    /// C's `get_node`: NodeInfo, NodeDescription and PortInfo through `portid`.
    fn get_node(&self, portid: &PortId) -> Option<(TNode, TPort)> {
        let d = portid.dest();
        let ni = NodeInfo::parse(&self.port.get(&d, id::NODE_INFO, 0)?).ok()?;
        let nd = NodeDescription::parse(&self.port.get(&d, id::NODE_DESC, 0)?).ok()?;
        let pi = PortInfo::parse(&self.port.get(&d, id::PORT_INFO, 0)?).ok()?;
        // C's get_node cleans the description as soon as it is read, byte by byte (a
        // two-byte UTF-8 character becomes two spaces), before its debug line.
        let desc = clean_description(&nd.as_str()).into_owned();
        crate::debug::ibdebug(
            "get_node",
            format_args!(
                "portid {}: got node {:x} '{desc}'",
                portid.describe(),
                ni.node_guid
            ),
        );
        Some((
            TNode {
                ntype: u8::from(ni.node_type),
                numports: u32::from(ni.num_ports),
                guid: ni.node_guid,
                desc,
            },
            TPort {
                portguid: ni.port_guid,
                portnum: u32::from(ni.local_port_num),
                lid: u32::from(pi.lid),
                lmc: u32::from(pi.lmc),
                state: u32::from(u8::from(pi.port_state)),
                physstate: u32::from(u8::from(pi.port_physical_state)),
            },
        ))
    }

    /// C's `switch_lookup`: the LFT entry for `lid`, or -1.
    fn switch_lookup(&self, sw: &mut Sw, portid: &PortId, lid: u16) -> i32 {
        let d = portid.dest();
        let Some(si) = self.port.get_attr::<SwitchInfo>(&d, 0) else {
            return -1;
        };
        sw.linearcap = u32::from(si.linear_fdb_cap);
        sw.top = u32::from(si.linear_fdb_top);
        sw.enhsp0 = si.enhanced_port0;
        let lid = u32::from(lid);
        if lid >= sw.linearcap && lid > sw.top {
            return -1;
        }
        match self
            .port
            .get_attr::<LinearForwardingTable>(&d, lid / LIDS_PER_BLOCK)
        {
            Some(fdb) => {
                let out = fdb.ports[(lid % LIDS_PER_BLOCK) as usize];
                crate::debug::ibdebug(
                    "switch_lookup",
                    format_args!(
                        "portid {}: forward lid {lid} to port {out}",
                        portid.describe()
                    ),
                );
                i32::from(out)
            }
            None => -1,
        }
    }

    fn sameport(&self, a: &TPort, b: &TPort) -> bool {
        a.portguid == b.portguid || (self.force && a.lid == b.lid)
    }

    fn is_port_inactive(node: &TNode, port: &TPort, sw: &Sw) -> bool {
        port.state != 4 && (node.ntype != 2 || sw.enhsp0)
    }

    /// C's `dump_endnode`.
    fn dump_endnode(&mut self, dump: u8, prompt: &str, node: &TNode, port: &TPort) {
        if dump == 0 {
            return;
        }
        let portnum = if node.ntype == 2 { 0 } else { port.portnum };
        if dump == 1 {
            self.out
                .push_str(&format!("{prompt} {{0x{:016x}}}[{portnum}]\n", node.guid));
            return;
        }
        let name = self.name(node);
        self.out.push_str(&format!(
            "{prompt} {} {{0x{:016x}}} portnum {portnum} lid {}-{} \"{name}\"\n",
            type_str(node.ntype),
            node.guid,
            port.lid,
            port.lid + (1 << port.lmc) - 1,
        ));
    }

    /// C's `dump_route`.
    fn dump_route(&mut self, dump: u8, node: &TNode, outport: i32, port: &TPort) {
        if dump == 0 && !self.verbose {
            return;
        }
        let name = self.name(node);
        if dump == 1 {
            self.out.push_str(&format!(
                "[{outport}] -> {{0x{:016x}}}[{}]\n",
                port.portguid, port.portnum
            ));
        } else {
            self.out.push_str(&format!(
                "[{outport}] -> {} port {{0x{:016x}}}[{}] lid {}-{} \"{name}\"\n",
                type_str(node.ntype),
                port.portguid,
                port.portnum,
                port.lid,
                port.lid + (1 << port.lmc) - 1,
            ));
        }
    }

    fn hop_json(&self, node: &TNode, port: &TPort, outport: Option<i32>) -> Value {
        json!({
            "node_type": type_str(node.ntype),
            "node_guid": format!("0x{:016x}", node.guid),
            "port_guid": format!("0x{:016x}", port.portguid),
            "port": port.portnum,
            "lid": port.lid,
            "lmc": port.lmc,
            "name": self.name(node),
            "out_port": outport,
        })
    }

    /// C's `find_route`: walks from `from` (extending its route) to `to`.
    fn find_route(&mut self, from: &mut PortId, to: &PortId, dump: u8) -> Result<(), ()> {
        let func = "find_route";
        // [0] = the from node/port, [1] = the next one (C's aliased locals).
        let mut nodes = [TNode::default(), TNode::default()];
        let mut ports = [TPort::default(), TPort::default()];
        let mut to_port = TPort::default();
        crate::debug::ibdebug(func, format_args!("from {}", from.describe()));
        match (self.get_node(from), self.get_node(to)) {
            (Some((fnode, fport)), Some((_, tport))) => {
                nodes[0] = fnode;
                ports[0] = fport;
                to_port = tport;
            }
            (f, _) => {
                ibwarn(func, "can't reach to/from ports");
                if !self.force {
                    return Err(());
                }
                if let Some((fnode, fport)) = f {
                    nodes[0] = fnode;
                    ports[0] = fport;
                }
                if to.lid > 0 {
                    to_port.lid = u32::from(to.lid);
                }
                ibwarn(func, &format!("Force: look for lid {}", to.lid));
            }
        }
        let from_port = ports[0].clone();
        let mut cur = 0usize;
        let mut portnum = ports[0].portnum;
        let mut sw = Sw::default();
        let mut outport: i32 = 255;
        let mut next_sw_outport: i32 = 255;
        let (n0, p0) = (nodes[0].clone(), ports[0].clone());
        self.dump_endnode(dump, "From", &n0, &p0);
        if dump > 0 {
            self.hops.push(self.hop_json(&n0, &p0, None));
        }
        let bad_tbl = |t: &Tracer<'_>, node: &TNode, outport: i32, sw: &Sw| {
            let _ = t;
            ibwarn(
                func,
                &format!(
                    "Bad forwarding table entry found at: node \"{}\" lid entry {} is {outport} (top {})",
                    clean_description(&node.desc),
                    to.lid,
                    sw.top
                ),
            );
            Err(())
        };
        if nodes[0].ntype == 2 {
            next_sw_outport = self.switch_lookup(&mut sw, from, to.lid);
            if next_sw_outport < 0 || next_sw_outport > nodes[0].numports as i32 {
                return bad_tbl(self, &nodes[0], next_sw_outport, &sw);
            }
        }
        let mut maxhops = MAX_HOPS;
        loop {
            let go = maxhops != 0;
            maxhops -= 1;
            if !go {
                break;
            }
            if Self::is_port_inactive(&nodes[cur], &ports[cur], &sw) {
                ibwarn(
                    func,
                    &format!(
                        "Bad port state found: node \"{}\" port {portnum} state {}",
                        clean_description(&nodes[cur].desc),
                        ports[cur].state
                    ),
                );
                return Err(());
            }
            if self.sameport(&ports[cur], &to_port) {
                break;
            }
            if nodes[cur].ntype == 2 {
                crate::debug::ibdebug(func, format_args!("switch node"));
                outport = next_sw_outport;
                if !from.extend(outport as u32) {
                    ibwarn(func, "Direct path too long!");
                    return Err(());
                }
                let Some((nn, np)) = self.get_node(from) else {
                    ibwarn(func, &format!("can't reach port at {}", from.describe()));
                    return Err(());
                };
                nodes[1] = nn;
                ports[1] = np;
                if outport == 0 {
                    if !self.sameport(&ports[1], &to_port) {
                        let n = nodes[cur].clone();
                        return bad_tbl(self, &n, outport, &sw);
                    }
                    break;
                }
            } else if nodes[cur].ntype == 1 || nodes[cur].ntype == 3 {
                let mut ca_src = false;
                outport = portnum as i32;
                crate::debug::ibdebug(func, format_args!("ca or router node"));
                if !self.sameport(&ports[cur], &from_port) {
                    ibwarn(
                        func,
                        &format!(
                            "can't continue: reached CA or router port {:x}, lid {}",
                            ports[cur].portguid, ports[cur].lid
                        ),
                    );
                    return Err(());
                }
                if from.cnt > 0 {
                    crate::debug::ibdebug(
                        func,
                        format_args!("ca or router node - return back 1 hop"),
                    );
                    from.cnt -= 1;
                } else {
                    ca_src = true;
                    if portnum != 0 && !from.extend(portnum) {
                        ibwarn(func, "Direct path too long!");
                        return Err(());
                    }
                }
                let Some((nn, np)) = self.get_node(from) else {
                    ibwarn(func, &format!("can't reach port at {}", from.describe()));
                    return Err(());
                };
                nodes[1] = nn;
                ports[1] = np;
                if !ca_src {
                    ports[1].portnum = u32::from(from.p[from.cnt + 1]);
                }
            }
            if nodes[1].ntype == 2 {
                next_sw_outport = self.switch_lookup(&mut sw, from, to.lid);
                if next_sw_outport < 0 || next_sw_outport > nodes[1].numports as i32 {
                    let n = nodes[cur].clone();
                    return bad_tbl(self, &n, next_sw_outport, &sw);
                }
            }
            if Self::is_port_inactive(&nodes[1], &ports[1], &sw) {
                ibwarn(
                    func,
                    &format!(
                        "Bad out port state found: node \"{}\" outport {outport} state {}",
                        clean_description(&nodes[cur].desc),
                        ports[1].state
                    ),
                );
                return Err(());
            }
            cur = 1;
            portnum = ports[1].portnum;
            let (n, p) = (nodes[1].clone(), ports[1].clone());
            self.dump_route(dump, &n, outport, &p);
            if dump > 0 {
                self.hops.push(self.hop_json(&n, &p, Some(outport)));
            }
        }
        if maxhops <= 0 {
            ibwarn(func, &format!("no route found after {MAX_HOPS} hops"));
            return Err(());
        }
        let (n, p) = (nodes[cur].clone(), ports[cur].clone());
        self.dump_endnode(dump, "To", &n, &p);
        if dump > 0 {
            self.hops.push(self.hop_json(&n, &p, None));
        }
        Ok(())
    }
}

/// A node of the multicast search.
struct McNode {
    node: TNode,
    port: TPort,
    path: PortId,
    dist: i32,
    upport: u32,
    upnode: Option<usize>,
    /// The port number on the upstream side of the link it was reached by.
    remote_portnum: u32,
}

impl Tracer<'_> {
    /// C's `switch_mclookup`: which ports the MFT of the switch at `portid` forwards `mlid`
    /// to.
    fn switch_mclookup(&self, numports: u32, portid: &PortId, mlid: u32) -> Option<[bool; 256]> {
        let d = portid.dest();
        let si = self.port.get_attr::<SwitchInfo>(&d, 0)?;
        let m = mlid.wrapping_sub(0xc000) as i32;
        if m >= i32::from(si.multicast_fdb_cap) {
            return None;
        }
        // C divides a negative offset (an MLID below 0xc000) toward zero too.
        let block = (m / MLIDS_PER_BLOCK as i32) as u32;
        let sets = numports.div_ceil(16);
        let mut map = [false; 256];
        for set in 0..sets {
            let mdb: MulticastForwardingTable = self.port.get_attr(&d, block | (set << 28))?;
            // Below 0xc000 C reads before its table (undefined); here: no ports.
            let mask = match usize::try_from(m % MLIDS_PER_BLOCK as i32) {
                Ok(k) => mdb.port_masks[k],
                Err(_) => 0,
            };
            for i in 0..16 {
                if mask & (1 << i) != 0 {
                    map[(set * 16 + i) as usize] = true;
                }
            }
        }
        Some(map)
    }

    /// C's `get_port`: PortInfo of `portnum` through `portid`.
    fn get_port(&self, portnum: u32, portid: &PortId) -> Option<TPort> {
        let pi = PortInfo::parse(&self.port.get(&portid.dest(), id::PORT_INFO, portnum)?).ok()?;
        Some(TPort {
            portnum,
            lid: u32::from(pi.lid),
            lmc: u32::from(pi.lmc),
            state: u32::from(u8::from(pi.port_state)),
            physstate: u32::from(u8::from(pi.port_physical_state)),
            ..TPort::default()
        })
    }

    /// C's `find_mcpath`: a breadth-first search from `from` along the switches' MFT entries
    /// for `mlid` until the port `target` is reached; the arena and the target's index.
    fn find_mcpath(
        &mut self,
        from: &PortId,
        mlid: u32,
        target: u64,
    ) -> Option<(Vec<McNode>, usize)> {
        let func = "find_mcpath";
        let Some((node, port)) = self.get_node(from) else {
            ibwarn(func, &format!("can't reach node {}", from.describe()));
            return None;
        };
        let mut arena: Vec<McNode> = Vec::new();
        let mut by_dist: Vec<Vec<usize>> = vec![Vec::new(); MAX_HOPS as usize + 1];
        let mut known: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let from_port = port.clone();
        if port.portguid == target {
            arena.push(McNode {
                node,
                port,
                path: from.clone(),
                dist: -1,
                upport: 0,
                upnode: None,
                remote_portnum: 0,
            });
            if arena[0].node.ntype != 2 {
                ibwarn(func, "ibtracert from CA to CA is unsupported");
                return None;
            }
            let map = self.switch_mclookup(arena[0].node.numports, from, mlid)?;
            if !map[0] {
                return None;
            }
            return Some((arena, 0));
        }
        known.insert(node.guid);
        arena.push(McNode {
            node,
            port,
            path: from.clone(),
            dist: 0,
            upport: 0,
            upnode: None,
            remote_portnum: 0,
        });
        by_dist[0].push(0);
        let mut leafport = 0u32;
        for dist in 0..MAX_HOPS as usize {
            // C pushes at the head of each distance's list: newest first.
            let list: Vec<usize> = by_dist[dist].iter().rev().copied().collect();
            for idx in list {
                let mut map = [false; 256];
                if arena[idx].node.ntype != 2 {
                    if dist != 0 {
                        continue;
                    }
                    let path = &arena[idx].path;
                    leafport = u32::from(path.p[path.cnt]);
                    map[from_port.portnum as usize & 0xff] = true;
                    arena[idx].upport = 0;
                } else {
                    if dist == 1 && leafport != 0 {
                        arena[idx].upport = leafport;
                    }
                    let path = arena[idx].path.clone();
                    match self.switch_mclookup(arena[idx].node.numports, &path, mlid) {
                        Some(m) => map = m,
                        None => {
                            ibwarn(
                                func,
                                &format!("skipping bad Switch 0x{:x}", arena[idx].node.guid),
                            );
                            continue;
                        }
                    }
                }
                for i in 1..=arena[idx].node.numports.min(255) {
                    if !map[i as usize] || i == arena[idx].upport {
                        continue;
                    }
                    let mut upstream_port = from_port.portnum;
                    if dist == 0 && leafport != 0 {
                        if from.cnt > 0 {
                            arena[idx].path.cnt -= 1;
                        }
                    } else {
                        let path = arena[idx].path.clone();
                        let Some(p) = self.get_port(i, &path) else {
                            ibwarn(
                                func,
                                &format!("can't reach node {} port {i}", path.describe()),
                            );
                            return None;
                        };
                        if p.physstate != 5 {
                            continue;
                        }
                        upstream_port = p.portnum;
                        if !arena[idx].path.extend(i) {
                            return None;
                        }
                    }
                    let path = arena[idx].path.clone();
                    let Some((rnode, rport)) = self.get_node(&path) else {
                        ibwarn(
                            func,
                            &format!(
                                "NodeInfo on {} port {i} failed, skipping port",
                                path.describe()
                            ),
                        );
                        arena[idx].path.cnt = arena[idx].path.cnt.saturating_sub(1);
                        continue;
                    };
                    let found = rport.portguid == target;
                    let upport = rport.portnum;
                    let new = McNode {
                        node: rnode,
                        port: rport,
                        path: path.clone(),
                        dist: if found { -1 } else { dist as i32 + 1 },
                        upport,
                        upnode: Some(idx),
                        remote_portnum: upstream_port,
                    };
                    if found {
                        let (n, p) = (new.node.clone(), new.port.clone());
                        self.dump_endnode(u8::from(self.verbose), "found target", &n, &p);
                        arena.push(new);
                        let last = arena.len() - 1;
                        return Some((arena, last));
                    }
                    if known.insert(new.node.guid) {
                        let (n, p) = (new.node.clone(), new.port.clone());
                        self.dump_endnode(u8::from(self.verbose), "new remote", &n, &p);
                        arena.push(new);
                        by_dist[dist + 1].push(arena.len() - 1);
                    } else if new.node.ntype == 2 {
                        let (n, p) = (new.node.clone(), new.port.clone());
                        self.dump_endnode(2, "ERR: circle discovered at", &n, &p);
                    }
                    arena[idx].path.cnt = arena[idx].path.cnt.saturating_sub(1);
                }
            }
        }
        None
    }

    /// C's `dump_mcpath`.
    fn dump_mcpath(&mut self, arena: &[McNode], idx: usize, dumplevel: u8) {
        if let Some(up) = arena[idx].upnode {
            self.dump_mcpath(arena, up, dumplevel);
        }
        let n = &arena[idx];
        let name = self.name(&n.node);
        let t = type_str(n.node.ntype);
        let span = n.port.lid + (1 << n.port.lmc) - 1;
        if n.dist == 0 {
            self.out.push_str(&format!(
                "From {t} 0x{:x} port {} lid {}-{span} \"{name}\"\n",
                n.node.guid, n.port.portnum, n.port.lid
            ));
            self.hops.push(self.hop_json(&n.node, &n.port, None));
            return;
        }
        if dumplevel == 1 {
            self.out.push_str(&format!(
                "[{}] -> {t} {{0x{:016x}}}[{}]\n",
                n.remote_portnum, n.node.guid, n.upport
            ));
        } else {
            self.out.push_str(&format!(
                "[{}] -> {t} 0x{:x}[{}] lid {} \"{name}\"\n",
                n.remote_portnum, n.node.guid, n.upport, n.port.lid
            ));
        }
        self.hops
            .push(self.hop_json(&n.node, &n.port, Some(n.remote_portnum as i32)));
        if n.dist < 0 {
            self.out.push_str(&format!(
                "To {t} 0x{:x} port {} lid {}-{span} \"{name}\"\n",
                n.node.guid, n.port.portnum, n.port.lid
            ));
        }
    }
}

/// Why a route could not be traced.
enum Failed {
    /// `IBEXIT("Failed to get route information")`.
    Route,
    /// `ibdiag_show_usage()`.
    Usage,
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
    let ports_file = m.get_one::<PathBuf>("ports-file");
    if args.len() < 2 && ports_file.is_none() {
        eprint!("{}", common::c_usage(&command().name(prog)));
        return exit::USAGE;
    }
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    let mut t = Tracer {
        port: &port,
        map: map.as_ref(),
        force: m.get_count("force") > 0,
        verbose: opts.verbose > 0,
        out: String::new(),
        hops: Vec::new(),
    };
    let dumplevel = if m.get_flag("no_info") { 1 } else { 2 };
    let mlid = m
        .get_one::<String>("mlid")
        .map(|s| crate::dest::c_strtoull(s) as u32);
    let json = m.get_flag("json");
    let routes = std::cell::RefCell::new(Vec::new());
    let finish = |t: &mut Tracer<'_>, code: i32| -> i32 {
        let routes = routes.borrow();
        if json {
            if code == exit::OK {
                let doc = json!({
                    "schema_version": 1,
                    "multicast": mlid.is_some(),
                    "mlid": mlid,
                    "routes": *routes,
                });
                println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            }
        } else {
            print!("{}", t.out);
        }
        t.out.clear();
        code
    };
    let trace = |t: &mut Tracer<'_>, src: &str, dst: &str| -> Result<(), Failed> {
        t.hops.clear();
        let r = get_route(t, &opts, src, dst, dumplevel, mlid);
        routes
            .borrow_mut()
            .push(json!({ "source": src, "destination": dst, "hops": t.hops.clone() }));
        r
    };
    match ports_file {
        None => match trace(&mut t, &args[0], &args[1]) {
            Ok(()) => finish(&mut t, exit::OK),
            Err(Failed::Usage) => {
                print!("{}", t.out);
                eprint!("{}", common::c_usage(&command().name(prog)));
                exit::USAGE
            }
            Err(Failed::Route) => {
                print!("{}", std::mem::take(&mut t.out));
                ibexit(prog, "Failed to get route information")
            }
        },
        Some(file) => {
            let Ok(text) = std::fs::read(file) else {
                return ibexit(prog, &format!("cannot open ports-file {}", file.display()));
            };
            let text = String::from_utf8_lossy(&text);
            let mut pairs = 0;
            for (n, line) in text.split_inclusive('\n').enumerate() {
                let line_no = n + 1;
                let content = line.trim_end_matches('\n');
                let trimmed = content.trim_start();
                if trimmed.is_empty() || trimmed.starts_with('#') {
                    continue;
                }
                let mut words = content.split_whitespace().map(|w| &w[..w.len().min(20)]);
                let (Some(src), Some(dst)) = (words.next(), words.next()) else {
                    print!("{}", std::mem::take(&mut t.out));
                    return ibexit(
                        prog,
                        &format!(
                            "ports-file, {}, at line {line_no} contains bad data",
                            file.display()
                        ),
                    );
                };
                pairs += 1;
                if let Err(e) = trace(&mut t, src, dst) {
                    print!("{}", std::mem::take(&mut t.out));
                    return match e {
                        Failed::Usage => {
                            eprint!("{}", common::c_usage(&command().name(prog)));
                            exit::USAGE
                        }
                        Failed::Route => ibexit(
                            prog,
                            &format!("Failed to get route information at line {line_no}"),
                        ),
                    };
                }
            }
            t.out.push_str(&format!(
                "{pairs} lid/guid pairs processed from {}\n",
                file.display()
            ));
            finish(&mut t, exit::OK)
        }
    }
}

/// C's `get_route`.
fn get_route(
    t: &mut Tracer<'_>,
    opts: &CommonOpts,
    srcid: &str,
    dstid: &str,
    dumplevel: u8,
    mlid: Option<u32>,
) -> Result<(), Failed> {
    let func = "get_route";
    let Some(src) = t.port.resolve(srcid, opts.dest) else {
        ibwarn(func, &format!("can't resolve source port {srcid}"));
        return Err(Failed::Route);
    };
    let Some(dst) = t.port.resolve(dstid, opts.dest) else {
        ibwarn(func, &format!("can't resolve destination port {dstid}"));
        return Err(Failed::Route);
    };
    if dst.lid == 0 || src.lid == 0 {
        ibwarn(func, "bad src/dest lid");
        return Err(Failed::Usage);
    }
    let mut my = PortId::local();
    let src_id = PortId::of(&src);
    let dst_id = PortId::of(&dst);
    if t.find_route(&mut my, &src_id, 0).is_err() {
        ibwarn(func, "can't find a route to the src port");
        return Err(Failed::Route);
    }
    let mut src_id = my;
    let Some(mlid) = mlid else {
        if t.find_route(&mut src_id, &dst_id, dumplevel).is_err() {
            ibwarn(func, "can't find a route from src to dest");
            return Err(Failed::Route);
        }
        return Ok(());
    };
    if mlid < 0xc000 {
        ibwarn(func, "invalid MLID; must be 0xc000 or larger");
    }
    let target = match t.get_node(&dst_id) {
        Some((_, p)) => p.portguid,
        None => {
            ibwarn("find_target_portguid", "can't find to port\n");
            u64::MAX
        }
    };
    if target == 0 {
        ibwarn(func, &format!("can't reach target lid {}", dst_id.lid));
        return Err(Failed::Route);
    }
    let Some((arena, end)) = t.find_mcpath(&src_id, mlid, target) else {
        ibwarn(func, "can't find a multicast route from src to dest");
        return Err(Failed::Route);
    };
    t.dump_mcpath(&arena, end, dumplevel);
    Ok(())
}
