//! `umad iblinkinfo`: discover the fabric and print every port's link as infiniband-diags'
//! `iblinkinfo` (same options, text byte for byte, errors), or `--json`
//! (docs/json/iblinkinfo-v1.schema.json).
//!
//! Options: `-l` one line per link, `-p` HOQ life and VL stall count, `-d` only down ports,
//! `--switches-only`, `--cas-only`, `--node-name-map`, `-o` SMPs in flight, `-n` hops,
//! `-D <dr_path>` / `-G <port_guid>` (`-S`) one node (a partial scan from a directed route,
//! or, as infiniband-diags 44, from the LID an SA PathRecord gives for the GUID: LID-routed,
//! then LID-routed and directed beyond a switch, never on through a CA; ibsim answers no
//! such combined route, so there, as with C, a switch's peers are "Port not available"),
//! `-a` all nodes of a partial scan.
//!
//! Cache files (libibnetdisc's, from C or `umad ibnetdiscover --cache`; our text and JSON
//! are read too): `--load-cache <file>` prints that fabric instead of discovering;
//! `--diff <file>` prints, as C, the ports that differ between the cached fabric (`< `
//! lines) and the current one (`> `), and the nodes only one has, checked by
//! `--diffcheck <port,state,lid,nodedesc>` (default `port,state`); `--filterdownports
//! <file>` leaves out the down ports that are down in that cache too. With `--json` and
//! `--diff` the records are the ports the diff prints.
//!
//! Differences from C: with `--diffcheck lid` or `nodedesc`, a node whose LID or
//! description changed gets both headers (C dereferences a null pointer there outside `-l`
//! mode); the "Could be FDR10"
//! hints need Mellanox ExtendedPortInfo LinkSpeedSupported, which the discovery does not
//! keep (no ibsim device has it).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::discover::{agg_link_speed_ext, DiscoverOptions, Discovery};
use ibfabric::{Fabric, Node, NodeNameMap, Port};
use ibmad::attr::{cap, id};
use ibmad::dump::{format_value, Fmt};
use ibmad::{NodeType, PortInfo, PortState};
use serde_json::{json, Value};
use umad::rpc::Rpc;

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtoull, ibwarn, DrRoute, SmpPort};
use crate::exit;

/// The clap command.
pub fn command() -> Command {
    let value = |id: &'static str, help: &'static str| Arg::new(id).long(id).num_args(1).help(help);
    let flag = |id: &'static str, help: &'static str| {
        Arg::new(id).long(id).action(ArgAction::SetTrue).help(help)
    };
    let cmd = Command::new("iblinkinfo")
        .about("Show every link of the fabric (as infiniband-diags' iblinkinfo)")
        .override_usage("iblinkinfo [options] ")
        .arg(common::node_name_map_arg())
        .arg(
            value(
                "switch",
                "start partial scan at the port specified by <port_guid> (hex format)",
            )
            .short('S')
            .value_name("port_guid"),
        )
        .arg(
            value("port-guid", "(same as -S)")
                .short('G')
                .value_name("port_guid"),
        )
        .arg(
            value(
                "Direct",
                "start partial scan at the port specified by <dr_path>",
            )
            .short('D')
            .value_name("dr_path"),
        )
        .arg(flag("all", "print all nodes found in a partial fabric scan").short('a'))
        .arg(
            value("hops", "Number of hops to include away from specified node")
                .short('n')
                .value_name("hops"),
        )
        .arg(flag("down", "print only down links").short('d'))
        .arg(
            flag(
                "line",
                "(line mode) print all information for each link on a single line",
            )
            .short('l'),
        )
        .arg(
            flag(
                "additional",
                "print additional port settings (PktLifeTime, HoqLife, VLStallCount)",
            )
            .short('p'),
        )
        .arg(value("load-cache", "filename of ibnetdiscover cache to load").value_name("file"))
        .arg(value("diff", "filename of ibnetdiscover cache to diff").value_name("file"))
        .arg(value("diffcheck", "specify checks to execute for --diff").value_name("key(s)"))
        .arg(
            value(
                "filterdownports",
                "filename of ibnetdiscover cache to filter downports",
            )
            .value_name("file"),
        )
        .arg(
            value(
                "outstanding_smps",
                "specify the number of outstanding SMP's which should be issued during the scan",
            )
            .short('o')
            .value_name("val"),
        )
        .arg(flag("switches-only", "Output only switches"))
        .arg(flag("cas-only", "Output only CAs"))
        .arg(common::json_arg("iblinkinfo"));
    common::add_common_args(cmd, "aDdGgKLlnpRS")
}

/// `umad iblinkinfo`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

/// The output settings.
pub struct Show<'a> {
    /// `-l`.
    pub line: bool,
    /// `-p`.
    pub additional: bool,
    /// `-d`.
    pub down_only: bool,
    /// The node name map.
    pub map: Option<&'a NodeNameMap>,
    /// Collect `--json` records (text mode skips building them).
    pub json: bool,
    /// `--filterdownports`: a down port is not printed if it is down in this fabric too.
    pub filter_down: Option<&'a Fabric>,
}

/// Every port's whole PortInfo, decoded from the bytes the fabric keeps ([`Port::raw_info`]:
/// a fabric loaded from an ibnetdisc cache), by (node GUID, port).
pub fn port_infos_from_raw(fabric: &Fabric) -> HashMap<(u64, u8), PortInfo> {
    let mut infos = HashMap::new();
    for n in &fabric.nodes {
        for p in &n.ports {
            if let Some(pi) = p.raw_info.as_deref().and_then(|r| PortInfo::parse(r).ok()) {
                infos.insert((n.guid, p.number), pi);
            }
        }
    }
    infos
}

/// A discovered fabric with every PortInfo whole.
pub struct Links<'a> {
    /// The fabric.
    pub fabric: &'a Fabric,
    /// PortInfo by (node GUID, port).
    pub infos: &'a HashMap<(u64, u8), PortInfo>,
}

impl Links<'_> {
    fn info(&self, node: &Node, port: u8) -> Option<&PortInfo> {
        self.infos.get(&(node.guid, port))
    }

    /// `get_port_info_for_cap_mask`: a switch's port 0 PortInfo, a CA port's own.
    fn cap_info(&self, node: &Node, port: u8) -> Option<&PortInfo> {
        if node.is_switch() {
            self.info(node, 0)
        } else {
            self.info(node, port)
        }
    }

    /// The node's name after the node name map, else its cleaned description (C's
    /// `remap_node_name` cleans even without a map: non-printable bytes become spaces).
    pub fn name(&self, show: &Show, node: &Node) -> String {
        NodeNameMap::remap_or_clean(show.map, node.guid, &node.description).into_owned()
    }

    /// C's `print_node_header` (with its output prefix: `< `/`> ` in a diff).
    pub fn node_header(&self, show: &Show, node: &Node, prefix: &str) -> String {
        if show.line {
            return String::new();
        }
        let name = self.name(show, node);
        match node.node_type {
            NodeType::Switch => {
                let guid = node.port(0).map_or(node.port_guid, |p| p.guid);
                format!("{prefix}Switch: 0x{guid:016x} {name}:\n")
            }
            t => format!("{prefix}{}: {name}:\n", type_str(t)),
        }
    }

    /// C's `print_node`: the header and a line per port (or per down port), each line
    /// after `prefix`.
    pub fn node_text(
        &self,
        show: &Show,
        node: &Node,
        prefix: &str,
        out: &mut String,
        json: &mut Vec<Value>,
    ) {
        let mut header = false;
        for port in node.ports.iter().filter(|p| p.number >= 1) {
            if show.down_only && port.state != PortState::Down {
                continue;
            }
            if !header {
                out.push_str(&self.node_header(show, node, prefix));
                header = true;
            }
            self.port_text(show, node, port, prefix, out, json);
        }
    }

    /// C's link text `( 4X   10.0 Gbps Active/  LinkUp)` (or the Down form) of `port`, and
    /// its width, speed, state and physical state texts.
    pub fn link_str(&self, node: &Node, port: &Port) -> (String, String, String, String, String) {
        let info = self.info(node, port.number);
        let istate = port.state;
        let down = istate == PortState::Down;
        let (mut iwidth, mut ispeed) = (port.width, port.speed);
        let espeed = match (self.cap_info(node, port.number), info) {
            (Some(c), Some(i)) => agg_link_speed_ext(c.capability_mask, c.capability_mask2, i),
            (Some(_), None) => 0,
            (None, _) => {
                iwidth = 0;
                ispeed = 0;
                0
            }
        };
        let state = format_value(Fmt::PortState, 4, u64::from(u8::from(istate)));
        let phys = format_value(Fmt::PhysPortState, 4, u64::from(u8::from(port.phys_state)));
        let width = format_value(Fmt::LinkWidth, 8, u64::from(iwidth));
        let speed = if espeed != 0 {
            ext_speed_text(espeed)
        } else if port.mlnx_speed & 1 != 0 {
            "10.0 Gbps (FDR10)".to_string()
        } else {
            format_value(Fmt::LinkSpeed, 4, u64::from(ispeed))
        };
        let link = if !down {
            // C formats the width (and so may warn about it) only for a port that is up.
            crate::debug::value_warning(Fmt::LinkWidth, u64::from(iwidth));
            format!("({width:>3} {speed:>18} {state:>6}/{phys:>8})")
        } else {
            format!("(              {state:>6}/{phys:>8})")
        };
        (link, width, speed, state, phys)
    }

    /// C's `print_port`.
    fn port_text(
        &self,
        show: &Show,
        node: &Node,
        port: &Port,
        prefix: &str,
        out: &mut String,
        json: &mut Vec<Value>,
    ) {
        let info = self.info(node, port.number);
        let down = port.state == PortState::Down;
        if down && show.filter_down.is_some_and(|f| down_in(f, node, port)) {
            return;
        }
        let (mut link, width, speed, state, phys) = self.link_str(node, port);
        let mut extra = Value::Null;
        if show.additional && !down {
            let (hoq, stall) = info.map_or((0, 0), |i| (i.hoq_life, i.vl_stall_count));
            link.push_str(&format!(" (HOQ:{hoq} VL_Stall:{stall})"));
            extra = json!({"hoq_life": hoq, "vl_stall_count": stall});
        }
        let mut remote_json = Value::Null;
        let remote = match port.remote.map(|r| (r, &self.fabric.nodes[r.node])) {
            Some((r, rnode)) => match rnode.port(r.port) {
                Some(rport) => {
                    let rname = self.name(show, rnode);
                    let ext = ext_str(rport.ext_port);
                    let (wmsg, smsg) = self.max_msg(node, port, rnode, rport);
                    let guid = if show.line {
                        format!("0x{:016x} ", rport.guid)
                    } else {
                        String::new()
                    };
                    let lid = if rport.lid != 0 { rport.lid } else { rnode.lid };
                    if show.json {
                        remote_json = json!({
                        "node_guid": format!("0x{:016x}", rnode.guid),
                        "port_guid": format!("0x{:016x}", rport.guid),
                        "lid": lid,
                        "port": rport.number,
                        "description": rname,
                        "could_be_width": (!wmsg.is_empty()).then(|| wmsg.clone()),
                        "could_be_speed": (!smsg.is_empty()).then(|| smsg.clone()),
                        });
                    }
                    format!(
                        "{guid}{lid:6} {:4}[{ext:>2}] \"{rname}\" ({wmsg} {smsg})\n",
                        rport.number
                    )
                }
                None => "    \"Port not available\"\n".to_string(),
            },
            None if down => "           [  ] \"\" ( )\n".to_string(),
            None => "    \"Port not available\"\n".to_string(),
        };
        let ext = ext_str(port.ext_port);
        if show.line {
            let name = self.name(show, node);
            out.push_str(&format!("{prefix}0x{:016x} \"{name:>30}\" ", port.guid));
        } else {
            out.push_str(prefix);
            out.push_str("      ");
        }
        let lid = if node.is_switch() {
            node.lid
        } else {
            if !show.line {
                out.push_str(&format!("0x{:016x} ", port.guid));
            }
            port.lid
        };
        out.push_str(&format!(
            "{lid:6} {:4}[{ext:>2}] =={link}==>  {remote}",
            port.number
        ));
        if !show.json {
            return;
        }
        let mut j = json!({
            "node_guid": format!("0x{:016x}", node.guid),
            "node_type": type_str(node.node_type),
            "node_description": self.name(show, node),
            "port_guid": format!("0x{:016x}", port.guid),
            "lid": lid,
            "port": port.number,
            "width": if down { Value::Null } else { json!(width) },
            "speed": if down { Value::Null } else { json!(speed) },
            "state": state,
            "phys_state": phys,
            "remote": remote_json,
        });
        if let (Value::Object(o), Value::Object(e)) = (&mut j, extra) {
            o.extend(e);
        }
        json.push(j);
    }

    /// C's `get_max_msg`: "Could be ..." for a link below what both ends support.
    pub fn max_msg(
        &self,
        node: &Node,
        port: &Port,
        rnode: &Node,
        rport: &Port,
    ) -> (String, String) {
        let (Some(li), Some(ri)) = (self.info(node, port.number), self.info(rnode, rport.number))
        else {
            return (String::new(), String::new());
        };
        let mut wmsg = String::new();
        let max_width = max_width(li.link_width_supported & ri.link_width_supported);
        if max_width & u8::from(li.link_width_active) == 0 {
            wmsg = format!(
                "Could be {}",
                format_value(Fmt::LinkWidth, 8, u64::from(max_width))
            );
        }
        let lcap = self.cap_info(node, port.number);
        let rcap = self.cap_info(rnode, rport.number);
        let has_ext = |c: Option<&PortInfo>| {
            c.is_some_and(|c| c.capability_mask & cap::IS_EXTENDED_SPEEDS_SUPPORTED != 0)
        };
        if has_ext(lcap) && has_ext(rcap) {
            let e1 = agg_speed_ext_supported(lcap, li);
            let e2 = agg_speed_ext_supported(rcap, ri);
            if e1 != 0 && e2 != 0 {
                let max = max_bit(e1 & e2);
                let active = lcap.map_or(0, |c| {
                    u32::from(agg_link_speed_ext(
                        c.capability_mask,
                        c.capability_mask2,
                        li,
                    ))
                });
                let smsg = if max & active == 0 {
                    format!("Could be {}", ext_speed_text(max))
                } else {
                    String::new()
                };
                return (wmsg, smsg);
            }
        }
        let max = max_bit(u32::from(li.link_speed_supported & ri.link_speed_supported));
        let smsg = if max & u32::from(li.link_speed_active) == 0 {
            format!(
                "Could be {}",
                format_value(Fmt::LinkSpeed, 4, u64::from(max))
            )
        } else {
            String::new()
        };
        (wmsg, smsg)
    }
}

/// C's `filterdownport_check`: `port` is down in the filter fabric too (same node GUID,
/// same port number).
fn down_in(filter: &Fabric, node: &Node, port: &Port) -> bool {
    let Some(fnode) = filter.node_by_guid(node.guid) else {
        return false;
    };
    if port.number > fnode.num_ports {
        return false;
    }
    fnode
        .port(port.number)
        .is_some_and(|p| p.state == PortState::Down)
}

/// `--diffcheck port`: links (connected or not, to which port GUID).
pub const DIFF_PORT: u8 = 0x01;
/// `--diffcheck state`: port states.
pub const DIFF_STATE: u8 = 0x02;
/// `--diffcheck lid`: switch and remote LIDs.
pub const DIFF_LID: u8 = 0x04;
/// `--diffcheck nodedesc`: node descriptions.
pub const DIFF_NODEDESC: u8 = 0x08;
/// C's default checks: `port,state`.
pub const DIFF_DEFAULT: u8 = DIFF_PORT | DIFF_STATE;

/// Parses `--diffcheck` keys as C does (`strtok` on `,`, case-insensitive).
///
/// # Errors
/// C's message for the first unknown key.
pub fn parse_diffcheck(keys: &str) -> Result<u8, String> {
    let mut flags = 0;
    for k in keys.split(',').filter(|k| !k.is_empty()) {
        flags |= match k.to_ascii_lowercase().as_str() {
            "port" => DIFF_PORT,
            "state" => DIFF_STATE,
            "lid" => DIFF_LID,
            "nodedesc" => DIFF_NODEDESC,
            _ => return Err(format!("invalid diff check key: {k}")),
        };
    }
    Ok(flags)
}

/// The 64 NodeDescription bytes C compares (`memcmp` of `nodedesc`).
fn desc_bytes(n: &Node) -> [u8; 64] {
    if let Some(raw) = &n.raw {
        return raw.node_desc;
    }
    let mut b = [0; 64];
    let d = n.description.as_bytes();
    let len = d.len().min(64);
    b[..len].copy_from_slice(&d[..len]);
    b
}

/// C's `iblinkinfo --diff`: two fabrics and the output settings.
pub struct Diff<'a> {
    /// The cached fabric (`<` lines).
    pub orig: &'a Links<'a>,
    /// The fabric loaded or discovered now (`>` lines).
    pub new: &'a Links<'a>,
    /// The output settings.
    pub show: &'a Show<'a>,
    /// `DIFF_*` checks.
    pub flags: u8,
    /// `--switches-only` / `--cas-only`.
    pub only: Option<NodeType>,
}

/// One direction of C's `diff_node_iter`: `l1` owns `n1`, `l2` is the fabric looked in.
struct Pass<'a> {
    l1: &'a Links<'a>,
    l2: &'a Links<'a>,
    flags: u8,
    p1: &'static str,
    p2: &'static str,
}

impl Diff<'_> {
    /// C's `diff_node`: for `node` (a node of the new fabric) or for every node (of the
    /// type `only`), both directions.
    pub fn run(&self, node: Option<&Node>, out: &mut String, json: &mut Vec<Value>) {
        let first = Pass {
            l1: if node.is_some() { self.new } else { self.orig },
            l2: self.new,
            flags: self.flags,
            p1: "< ",
            p2: "> ",
        };
        self.pass(&first, node, out, json);
        let second = Pass {
            l1: self.new,
            l2: self.orig,
            flags: self.flags & !(DIFF_PORT | DIFF_STATE | DIFF_LID | DIFF_NODEDESC),
            p1: "> ",
            p2: "< ",
        };
        self.pass(&second, node, out, json);
    }

    fn pass(&self, p: &Pass, node: Option<&Node>, out: &mut String, json: &mut Vec<Value>) {
        match node {
            Some(n) => self.node_iter(p, n, out, json),
            None => {
                for n in &p.l1.fabric.nodes {
                    if self.only.map_or(true, |t| n.node_type == t) {
                        self.node_iter(p, n, out, json);
                    }
                }
            }
        }
    }

    /// C's `diff_node_iter`.
    fn node_iter(&self, p: &Pass, n1: &Node, out: &mut String, json: &mut Vec<Value>) {
        let show = self.show;
        let Some(n2) = p.l2.fabric.node_by_guid(n1.guid) else {
            p.l1.node_text(show, n1, p.p1, out, json);
            return;
        };
        if p.flags & (DIFF_PORT | DIFF_STATE | DIFF_LID | DIFF_NODEDESC) == 0 {
            return;
        }
        let mut head = false;
        if (n1.is_switch() && p.flags & DIFF_LID != 0 && n1.lid != n2.lid)
            || (p.flags & DIFF_NODEDESC != 0 && desc_bytes(n1) != desc_bytes(n2))
        {
            // C passes no header flag here (and so crashes outside line mode); both
            // headers are what it means to print.
            out.push_str(&p.l1.node_header(show, n1, p.p1));
            out.push_str(&p.l2.node_header(show, n2, p.p2));
            head = true;
        }
        if n1.num_ports != n2.num_ports {
            if !head {
                out.push_str(&p.l1.node_header(show, n1, ""));
            }
            out.push_str(&format!("{}numports = {}\n", p.p1, n1.num_ports));
            out.push_str(&format!("{}numports = {}\n", p.p2, n2.num_ports));
            return;
        }
        self.node_ports(p, n1, n2, &mut head, out, json);
    }

    /// C's `diff_node_ports`.
    fn node_ports(
        &self,
        p: &Pass,
        n1: &Node,
        n2: &Node,
        head: &mut bool,
        out: &mut String,
        json: &mut Vec<Value>,
    ) {
        let show = self.show;
        fn remote<'f>(l: &Links<'f>, port: &Port) -> Option<(&'f Node, &'f Port)> {
            let r = port.remote?;
            Some((l.fabric.nodes.get(r.node)?, l.fabric.port(r)?))
        }
        for i in 1..=n1.num_ports {
            let (a, b) = (n1.port(i), n2.port(i));
            let mut output = false;
            match (a, b) {
                (None, None) => continue,
                (Some(a), Some(b)) => {
                    let (ra, rb) = (remote(p.l1, a), remote(p.l2, b));
                    if p.flags & DIFF_PORT != 0 {
                        output |= match (ra, rb) {
                            (Some((_, x)), Some((_, y))) => x.guid != y.guid,
                            (None, None) => false,
                            _ => true,
                        };
                    }
                    if p.flags & DIFF_STATE != 0 && a.state != b.state {
                        output = true;
                    }
                    if let (Some((xn, x)), Some((yn, y))) = (ra, rb) {
                        if p.flags & DIFF_PORT != 0 && p.flags & DIFF_LID != 0 && x.lid != y.lid {
                            output = true;
                        }
                        if p.flags & DIFF_PORT != 0
                            && p.flags & DIFF_NODEDESC != 0
                            && desc_bytes(xn) != desc_bytes(yn)
                        {
                            output = true;
                        }
                    }
                }
                _ => output = p.flags & DIFF_PORT != 0,
            }
            if !output {
                continue;
            }
            if let Some(a) = a {
                if !*head {
                    out.push_str(&p.l1.node_header(show, n1, ""));
                    *head = !show.line;
                }
                p.l1.port_text(show, n1, a, p.p1, out, json);
            }
            if let Some(b) = b {
                if !*head {
                    out.push_str(&p.l1.node_header(show, n1, ""));
                    *head = !show.line;
                }
                p.l2.port_text(show, n2, b, p.p2, out, json);
            }
        }
    }
}

/// CapabilityMask2 bit IsExtendedSpeeds2Supported (LinkSpeedExt*2 fields, XDR).
const CAP2_IS_EXT_SPEEDS_2_SUPPORTED: u16 = 1 << 11;

/// libibnetdisc's `ibnd_get_agg_linkspeedextsup`.
fn agg_speed_ext_supported(cap_info: Option<&PortInfo>, info: &PortInfo) -> u32 {
    let Some(c) = cap_info else { return 0 };
    if c.capability_mask & cap::IS_EXTENDED_SPEEDS_SUPPORTED == 0 {
        return 0;
    }
    let mut v = u32::from(info.link_speed_ext_supported);
    if c.capability_mask & cap::IS_CAPABILITY_MASK2_SUPPORTED != 0
        && c.capability_mask2 & CAP2_IS_EXT_SPEEDS_2_SUPPORTED != 0
    {
        v |= u32::from(info.link_speed_ext_supported2) << 5;
    }
    v
}

/// C's `get_max_width`: the widest of a LinkWidthSupported mask.
fn max_width(mask: u8) -> u8 {
    if mask & 8 != 0 {
        8
    } else if mask & 4 != 0 {
        4
    } else if mask & 2 != 0 {
        2
    } else if mask & 0x10 != 0 {
        0x10
    } else {
        1
    }
}

/// C's `get_max`: the highest set bit (1 for 0).
fn max_bit(v: u32) -> u32 {
    if v == 0 {
        1
    } else {
        1 << (31 - v.leading_zeros())
    }
}

/// libibnetdisc's `ibnd_dump_agg_linkspeedext`.
fn ext_speed_text(speed: impl Into<u32>) -> String {
    match speed.into() {
        0 => "No Extended Speed".into(),
        1 => "14.0625 Gbps".into(),
        2 => "25.78125 Gbps".into(),
        4 => "53.125 Gbps".into(),
        8 => "106.25 Gbps".into(),
        32 => "212.5 Gbps".into(),
        n => format!("undefined ({n})"),
    }
}

fn ext_str(ext: u8) -> String {
    if ext != 0 {
        ext.to_string()
    } else {
        String::new()
    }
}

/// `nodetype_str`.
pub fn type_str(t: NodeType) -> &'static str {
    match t {
        NodeType::Switch => "Switch",
        NodeType::ChannelAdapter => "CA",
        NodeType::Router => "Router",
        _ => "??",
    }
}

/// Opens the port the common options name, with an rpc whose window is `-o` (or the
/// default), as the sweeping tools use it. `None` after saying why on stderr (`prog: ...`,
/// where C's libibumad prints its `ibwarn` lines); the caller prints C's own failure.
pub fn open_sweep_port(
    prog: &str,
    opts: &CommonOpts,
    outstanding: Option<usize>,
) -> Option<SmpPort> {
    let port = opts.open_mad_port(prog).ok()?;
    let rpc = match outstanding {
        Some(n) => Rpc::with_window(Arc::new(port), umad::rpc::Window::of(n)),
        None => Rpc::new(Arc::new(port)),
    };
    crate::debug::attach_pipelined(&rpc);
    Some(SmpPort {
        rpc,
        opts: opts.clone(),
        pipelined: true,
    })
}

/// Discovers through `sp` with the common options and `-n`, from `from` (default: the
/// local port).
/// Where a sweep starts: libibnetdisc's `from` portid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The local port.
    Local,
    /// A directed route (`-D`).
    Dr(ibmad::DrPath),
    /// A directed route of this many hops, more than an SMP carries: libibmad's
    /// `mad_encode` refuses C's first SMP, and libibnetdisc then returns an empty fabric
    /// (`query_node_info` fails, so it never waits for answers), not a failure.
    DrTooLong(usize),
    /// A LID (`-G`, resolved through the SA): LID-routed, then directed.
    Lid(u16),
}

/// Discovers through `sp` with the common options and `-n`, from `from`.
pub fn discover(prog: &str, sp: &SmpPort, max_hops: u32, from: Start) -> Result<Discovery, String> {
    if let Start::DrTooLong(hops) = from {
        crate::dest::ibwarn("mad_encode", &format!("dr path with hop count {hops}"));
        eprintln!("./libibnetdisc/query_smp.c:85; mad_build_pkt failed; -1");
        return Ok(Discovery {
            fabric: Fabric::default(),
            missed: Vec::new(),
            stats: ibfabric::discover::DiscoverStats::default(),
            self_lid: 0,
            self_node: ibmad::attr::NodeInfo::default(),
            port_infos: HashMap::new(),
        });
    }
    let opts = &sp.opts;
    let d_opts = DiscoverOptions {
        max_hops,
        timeout: opts
            .timeout_ms
            .map(|ms| Duration::from_millis(u64::from(ms))),
        mlx_epi: opts.mlx_epi,
        from: match from {
            Start::Dr(path) => path,
            _ => ibmad::DrPath::local(),
        },
        from_lid: match from {
            Start::Lid(lid) => lid,
            _ => 0,
        },
        ..DiscoverOptions::default()
    };
    let d = ibfabric::discover::discover_with(&sp.rpc, &d_opts).map_err(|e| e.to_string())?;
    crate::common::note_discovery(prog, &d);
    Ok(d)
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    let s = |id: &str| m.get_one::<String>(id).cloned();
    let guid_str = s("port-guid").or_else(|| s("switch"));
    let dr_path = s("Direct");
    let all = m.get_flag("all");
    let max_hops = s("hops").map_or(0, |h| c_strtoull(&h) as u32);
    let outstanding = s("outstanding_smps")
        .map(|o| c_strtoull(&o) as usize)
        .filter(|&n| n > 0);
    let only = if m.get_flag("cas-only") {
        Some(NodeType::ChannelAdapter)
    } else if m.get_flag("switches-only") {
        Some(NodeType::Switch)
    } else {
        None
    };
    let json_out = m.get_flag("json");
    let file = |id: &str| m.get_one::<String>(id).map(PathBuf::from);
    let (load_cache, diff_cache, filter_cache) =
        (file("load-cache"), file("diff"), file("filterdownports"));
    let diff_flags = match m.get_one::<String>("diffcheck") {
        Some(keys) => match parse_diffcheck(keys) {
            Ok(f) => f,
            Err(msg) => {
                eprint!("{msg}\n{}", common::c_usage(&command().name(prog)));
                return exit::USAGE;
            }
        },
        None => DIFF_DEFAULT,
    };
    let Some(sp) = open_sweep_port(prog, &opts, outstanding) else {
        eprintln!(
            "Failed to open {} port {}",
            opts.ca.as_deref().unwrap_or("(null)"),
            opts.port
        );
        return 1;
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    if dr_path.is_some() && load_cache.is_some() {
        eprintln!("Cannot specify cache and direct route path");
        return 1;
    }
    let mut from = None;
    let mut start = None;
    if let Some(dr) = &dr_path {
        match DrRoute::parse(dr) {
            Some(r) => {
                start = Some(r.path().map_or(Start::DrTooLong(r.hop_count()), Start::Dr));
                from = Some(r);
            }
            None => ibwarn(
                "main",
                &format!("Failed to resolve {dr}; attempting full scan"),
            ),
        }
    } else if let Some(g) = &guid_str {
        let guid = c_strtoull(g);
        match (guid != 0).then(|| sp.resolve_guid(guid)).flatten() {
            Some(lid) => start = Some(Start::Lid(lid)),
            None => ibwarn(
                "main",
                &format!("Failed to resolve {g}; attempting full scan\n"),
            ),
        }
    }
    let mut wanted_guid = guid_str.as_deref().map(c_strtoull);
    if let (false, Some(r)) = (all, &from) {
        let dest = crate::dest::Dest {
            lid: 0,
            dr: Some(r.clone()),
        };
        match sp.get(&dest, id::NODE_INFO, 0) {
            Some(ni) => wanted_guid = Some(ibmad::dump::get_bits(&ni, 160, 64)),
            None => {
                eprintln!("Failed to get local Node Info");
                return 1;
            }
        }
    }
    let load = |p: &PathBuf| {
        crate::ibnetdiscover::load_topology(p)
            .map_err(|e| {
                if opts.verbose > 0 || opts.errors {
                    eprintln!("{prog}: {e}");
                }
            })
            .ok()
    };
    let diff_fabric = match &diff_cache {
        Some(p) => match load(p) {
            Some(f) => Some(f),
            None => return crate::dest::ibexit(prog, "loading cached fabric for diff failed\n"),
        },
        None => None,
    };
    let filter_fabric = match &filter_cache {
        Some(p) => match load(p) {
            Some(f) => Some(f),
            None => {
                return crate::dest::ibexit(
                    prog,
                    "loading cached fabric for filterdownports failed\n",
                )
            }
        },
        None => None,
    };
    let (fabric, infos) = match &load_cache {
        Some(p) => match load(p) {
            Some(f) => {
                let infos = port_infos_from_raw(&f);
                (f, infos)
            }
            None => {
                eprintln!("loading cached fabric failed");
                return 1;
            }
        },
        None => match discover_for_links(prog, &opts, &sp, start, max_hops) {
            Some(d) => (d.fabric, d.port_infos),
            None => return 1,
        },
    };
    let links = Links {
        fabric: &fabric,
        infos: &infos,
    };
    let diff_infos = diff_fabric.as_ref().map(port_infos_from_raw);
    let orig = diff_fabric
        .as_ref()
        .zip(diff_infos.as_ref())
        .map(|(fabric, infos)| Links { fabric, infos });
    let show = Show {
        line: m.get_flag("line"),
        additional: m.get_flag("additional"),
        down_only: m.get_flag("down"),
        map: map.as_ref(),
        json: json_out,
        filter_down: filter_fabric.as_ref(),
    };
    let diff = orig.as_ref().map(|orig| Diff {
        orig,
        new: &links,
        show: &show,
        flags: diff_flags,
        only,
    });
    let mut out = String::new();
    let mut records = Vec::new();
    let partial_one = !all && (guid_str.is_some() || dr_path.is_some());
    if partial_one {
        let want = wanted_guid.unwrap_or(0);
        let node = fabric
            .nodes
            .iter()
            .find(|n| n.ports.iter().any(|p| p.guid == want));
        match node.filter(|n| only.map_or(true, |t| n.node_type == t)) {
            Some(n) => match &diff {
                Some(d) => d.run(Some(n), &mut out, &mut records),
                None => links.node_text(&show, n, "", &mut out, &mut records),
            },
            None => eprintln!(
                "Failed to find port: {}",
                guid_str.as_deref().or(dr_path.as_deref()).unwrap_or("")
            ),
        }
    } else if let Some(d) = &diff {
        d.run(None, &mut out, &mut records);
    } else {
        for n in &fabric.nodes {
            if only.map_or(true, |t| n.node_type == t) {
                links.node_text(&show, n, "", &mut out, &mut records);
            }
        }
    }
    let mut stdout = std::io::stdout().lock();
    if json_out {
        let v = json!({"schema_version": 1, "tool": "iblinkinfo", "ports": records});
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        );
    } else {
        let _ = stdout.write_all(out.as_bytes());
    }
    exit::OK
}

/// The discovery `iblinkinfo` runs without a cache: from `start` with `max_hops` (a partial
/// scan, falling back to the whole fabric), or the whole fabric. `None` after printing C's
/// message.
fn discover_for_links(
    prog: &str,
    opts: &CommonOpts,
    sp: &SmpPort,
    start: Option<Start>,
    mut max_hops: u32,
) -> Option<Discovery> {
    let mut discovery = None;
    if let Some(start) = start {
        if max_hops == 0 {
            max_hops = 1;
        }
        match discover(prog, sp, max_hops, start) {
            Ok(d) => discovery = Some(d),
            Err(_) => ibwarn("main", "Partial fabric scan failed; attempting full scan\n"),
        }
    }
    match discovery {
        Some(d) => Some(d),
        None => match discover(prog, sp, max_hops, Start::Local) {
            Ok(d) => Some(d),
            Err(e) => {
                if opts.errors || opts.verbose > 0 {
                    eprintln!("{prog}: {e}");
                }
                eprintln!("discover failed");
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxima() {
        assert_eq!(max_width(0b1011), 8);
        assert_eq!(max_width(0x13), 2);
        assert_eq!(max_width(0x11), 0x10);
        assert_eq!(max_width(0), 1);
        assert_eq!(max_bit(0), 1);
        assert_eq!(max_bit(7), 4);
        assert_eq!(ext_speed_text(3u32), "undefined (3)");
    }
}
