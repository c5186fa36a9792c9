//! Parsing `ibnetdiscover` text back into a [`Fabric`].
//!
//! Accepted: the topology file of the default mode, with the lines `-s` (progress records
//! before it), `-f` (` s= w= v=` suffixes), `-m` (max-hops header) and `-g` on a fabric
//! (`Non-Chassis Nodes`, chassis blocks `Chassis N (guid G)` with their `# Chassis Switches`
//! and `# Chassis CAs` members, `\t\t# Chassis N` after `sysimgguid=`, `\t# …` after
//! `switchguid=`) add. Voltaire chassis (nodes under `# Spine Nodes` / `# Line Nodes`) are
//! rejected: their slots are not in the text; the chassis type and slot text after
//! `switchguid=` is not kept. The ports report and the list modes are not topology files.
//!
//! What the text does not carry is left at defaults: revision, port states, capability
//! masks beyond the extended-speeds bit a shown speed needs, unlinked ports (only port 0 of a
//! switch and the linked ports are created), the routes. The node order is switches, then
//! CAs, then routers, each in the order listed (the C text does not say how the types
//! interleave in libibnetdisc's all-nodes list, which only `-p` shows) — unless `-s`
//! progress records are present: they show the creation order, and the nodes are then in
//! libibnetdisc's own order.

use std::collections::HashMap;
use std::fmt;

use ibmad::{DrPath, NodeType};

use crate::model::{
    Chassis, Fabric, Node, NodeChassis, Origin, Port, PortRef, Progress, Route, CAP_HAS_EXT_SPEEDS,
};

/// A line of `ibnetdiscover` text that does not parse, or a file that does not add up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "ibnetdiscover text: {}", self.message)
        } else {
            write!(f, "ibnetdiscover text line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// The date of the `# Topology file: generated on <date>` line, if there is one.
pub fn generated_date(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("# Topology file: generated on "))
}

/// A port line as written, before the peer is resolved.
struct PortLine {
    line: usize,
    number: u8,
    /// CA port lines: `[p](guid)`.
    guid: Option<u64>,
    /// CA port lines: `# lid L lmc M`.
    lid_lmc: Option<(u16, u8)>,
    remote_type: NodeType,
    remote_guid: u64,
    remote_port: u8,
    remote_port_guid: Option<u64>,
    /// The peer LID the comment states.
    remote_lid: u16,
    width: u8,
    speed: u8,
    speed_ext: u8,
    mlnx: u8,
    vl_cap: u8,
}

/// A node section as written.
struct Section {
    line: usize,
    node: Node,
    ports: Vec<PortLine>,
}

#[derive(Default)]
struct Ids {
    /// `sysimgguid=…\t\t# Chassis N`.
    chassis: Option<u8>,
    vendor_id: Option<u32>,
    device_id: Option<u16>,
    system_image_guid: Option<u64>,
    /// (type tag, node GUID, switch port 0 GUID).
    guid: Option<(NodeType, u64, Option<u64>)>,
}

type Res<T> = Result<T, String>;

fn hex_u64(s: &str) -> Res<u64> {
    let h = s
        .strip_prefix("0x")
        .ok_or_else(|| format!("{s:?}: 0x… expected"))?;
    bare_hex(h)
}

fn bare_hex(h: &str) -> Res<u64> {
    if h.is_empty() || h.len() > 16 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{h:?}: 1 to 16 hex digits expected"));
    }
    u64::from_str_radix(h, 16).map_err(|e| format!("{h:?}: {e}"))
}

fn dec<T: std::str::FromStr>(s: &str, what: &str) -> Res<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} {s:?}: a decimal number expected"));
    }
    s.parse().map_err(|_| format!("{what} {s:?}: out of range"))
}

/// `"S-0000000000200000"` → (type, GUID).
fn node_id(s: &str) -> Res<(NodeType, u64)> {
    let inner = s
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or_else(|| format!("node id {s:?}: \"X-<guid>\" expected"))?;
    let (t, g) = inner
        .split_once('-')
        .ok_or_else(|| format!("node id {s:?}: \"X-<guid>\" expected"))?;
    let t = match t {
        "S" => NodeType::Switch,
        "H" => NodeType::ChannelAdapter,
        "R" => NodeType::Router,
        _ => return Err(format!("node id {s:?}: type S, H or R expected")),
    };
    Ok((t, bare_hex(g)?))
}

fn width_code(s: &str) -> Res<u8> {
    Ok(match s {
        "1x" => 1,
        "4x" => 2,
        "8x" => 4,
        "12x" => 8,
        "2x" => 16,
        "??" => 0,
        _ => return Err(format!("link width {s:?}")),
    })
}

/// (speed, speed_ext, mlnx) codes that print as `s`.
fn speed_codes(s: &str) -> Res<(u8, u8, u8)> {
    Ok(match s {
        "SDR" => (1, 0, 0),
        "DDR" => (2, 0, 0),
        "QDR" => (4, 0, 0),
        "FDR10" => (4, 0, crate::model::MLNX_SPEED_FDR10),
        "FDR" => (4, 1, 0),
        "EDR" => (4, 2, 0),
        "HDR" => (4, 4, 0),
        "NDR" => (4, 8, 0),
        "???" => (0, 0, 0),
        _ => return Err(format!("link speed {s:?}")),
    })
}

/// `4xQDR[ s=4 w=2 v=4]` → (width, speed, speed_ext, mlnx, vl_cap).
fn link_text(s: &str) -> Res<(u8, u8, u8, u8, u8)> {
    let mut words = s.split(' ');
    let ws = words.next().unwrap_or_default();
    let split = ws
        .find('x')
        .map(|i| i + 1)
        .or_else(|| ws.strip_prefix("??").map(|_| 2))
        .ok_or_else(|| format!("link {ws:?}: <width><speed> expected"))?;
    let (w, sp) = ws.split_at(split);
    let width = width_code(w)?;
    let (mut speed, ext, mlnx) = speed_codes(sp)?;
    let mut vl_cap = 0;
    let rest: Vec<&str> = words.collect();
    if !rest.is_empty() {
        let [s, w, v] = rest[..] else {
            return Err(format!("{s:?}: ` s=N w=N v=N` expected after the link"));
        };
        let field = |t: &str, k: &str| -> Res<u8> {
            dec(
                t.strip_prefix(k)
                    .ok_or_else(|| format!("{t:?}: {k}N expected"))?,
                k,
            )
        };
        speed = field(s, "s=")?;
        if field(w, "w=")? != width {
            return Err(format!("{w:?} disagrees with width {ws:?}"));
        }
        vl_cap = field(v, "v=")?;
    }
    Ok((width, speed, ext, mlnx, vl_cap))
}

/// Splits `… "<desc>" <marker>…` at the last `marker`, returning (desc, rest after marker).
fn quoted_then<'a>(s: &'a str, marker: &str) -> Res<(&'a str, &'a str)> {
    let body = s
        .strip_prefix('"')
        .ok_or_else(|| format!("{s:?}: a quoted description expected"))?;
    let at = body
        .rfind(marker)
        .ok_or_else(|| format!("{s:?}: `{marker}` expected after the description"))?;
    Ok((&body[..at], &body[at + marker.len()..]))
}

/// `Switch\t8 "S-…"\t\t# "desc" enhanced port 0 lid 3 lmc 0`
fn switch_header(rest: &str) -> Res<Node> {
    let (count, rest) = rest
        .split_once(' ')
        .ok_or("port count and node id expected")?;
    let (id, comment) = rest
        .split_once("\t\t# ")
        .ok_or("`\\t\\t# \"<description>\"` expected after the node id")?;
    let (t, guid) = node_id(id)?;
    if t != NodeType::Switch {
        return Err(format!("a Switch with id {id}"));
    }
    let mut node = Node::new(t, dec(count, "port count")?, guid);
    let (desc, tail, enhanced) = match quoted_then(comment, "\" enhanced port 0 lid ") {
        Ok((d, t)) => (d, t, true),
        Err(_) => {
            let (d, t) = quoted_then(comment, "\" base port 0 lid ")?;
            (d, t, false)
        }
    };
    let (lid, lmc) = tail.split_once(" lmc ").ok_or("`lid N lmc M` expected")?;
    node.description = desc.to_owned();
    node.enhanced_port0 = enhanced;
    node.lid = dec(lid, "lid")?;
    node.lmc = dec(lmc, "lmc")?;
    Ok(node)
}

/// `Ca\t2 "H-…"\t\t# "desc"`
fn ca_header(t: NodeType, rest: &str) -> Res<Node> {
    let (count, rest) = rest
        .split_once(' ')
        .ok_or("port count and node id expected")?;
    let (id, comment) = rest
        .split_once("\t\t# ")
        .ok_or("`\\t\\t# \"<description>\"` expected after the node id")?;
    let (it, guid) = node_id(id)?;
    if it != t {
        return Err(format!("node id {id} does not match the node type"));
    }
    let desc = comment
        .strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .ok_or("a quoted description expected")?;
    let mut node = Node::new(t, dec(count, "port count")?, guid);
    node.description = desc.to_owned();
    Ok(node)
}

/// `[1]\t"H-…"[1](100006) \t\t# "desc" lid 5 4xQDR` (switch) or
/// `[1](100006) \t"S-…"[2]\t\t# lid 6 lmc 0 "desc" lid 3 4xQDR` (CA).
fn port_line(line: usize, s: &str, in_switch: bool) -> Res<PortLine> {
    let close = s.find(']').ok_or("`[port]` expected")?;
    let number = dec(&s[1..close], "port")?;
    let mut rest = &s[close + 1..];
    let mut guid = None;
    if !in_switch {
        let g = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(") "))
            .ok_or("`(port guid) ` expected after a CA's port number")?;
        guid = Some(bare_hex(g.0)?);
        rest = g.1;
    }
    let rest = rest
        .strip_prefix('\t')
        .ok_or("a tab expected before the peer")?;
    let (peer, comment) = rest
        .split_once("\t\t# ")
        .ok_or("`\\t\\t# ` expected after the peer")?;
    let q = peer
        .strip_prefix('"')
        .and_then(|p| p.find('"'))
        .map(|i| i + 2)
        .ok_or("a quoted peer id expected")?;
    let (remote_type, remote_guid) = node_id(&peer[..q])?;
    let after = &peer[q..];
    let close = after
        .find(']')
        .filter(|_| after.starts_with('['))
        .ok_or("`[peer port]` expected")?;
    let remote_port = dec(&after[1..close], "peer port")?;
    let after = &after[close + 1..];
    let remote_port_guid = if remote_type == NodeType::Switch {
        if !after.is_empty() {
            return Err(format!("{after:?} after a switch peer's port"));
        }
        None
    } else {
        let inner = if in_switch {
            after.strip_prefix('(').and_then(|a| a.strip_suffix(") "))
        } else {
            after.strip_prefix(" (").and_then(|a| a.strip_suffix(") "))
        };
        Some(bare_hex(inner.ok_or("`(peer port guid) ` expected")?)?)
    };
    let (lid_lmc, comment) = if in_switch {
        (None, comment)
    } else {
        let c = comment
            .strip_prefix("lid ")
            .ok_or("`lid N lmc M` expected")?;
        let (lid, c) = c.split_once(" lmc ").ok_or("`lid N lmc M` expected")?;
        let (lmc, c) = c.split_once(' ').ok_or("`lmc M \"<peer>\"` expected")?;
        (Some((dec(lid, "lid")?, dec(lmc, "lmc")?)), c)
    };
    let (_peer_name, tail) = quoted_then(comment, "\" lid ")?;
    let (peer_lid, link) = tail.split_once(' ').ok_or("`lid N <link>` expected")?;
    let remote_lid = dec(peer_lid, "peer lid")?;
    let (width, speed, speed_ext, mlnx, vl_cap) = link_text(link)?;
    Ok(PortLine {
        line,
        number,
        guid,
        lid_lmc,
        remote_type,
        remote_guid,
        remote_port,
        remote_port_guid,
        remote_lid,
        width,
        speed,
        speed_ext,
        mlnx,
        vl_cap,
    })
}

/// `DR path slid 0; dlid 0; 0,1 -> new Switch {0000000000200000} portnum 0 lid 0-0 ""`
/// A progress line as written, before the node is resolved.
struct ProgressLine {
    route: Route,
    new: bool,
    node_type: NodeType,
    guid: u64,
    port: u8,
    lid: u16,
    lmc: u8,
    description: String,
}

fn progress_line(s: &str) -> Res<ProgressLine> {
    let r = s
        .strip_prefix("DR path slid ")
        .ok_or("`DR path slid` expected")?;
    let (slid, r) = r.split_once("; dlid ").ok_or("`; dlid` expected")?;
    let (dlid, r) = r.split_once("; ").ok_or("`; <path>` expected")?;
    let (path, r) = r.split_once(" -> ").ok_or("` -> ` expected")?;
    let path = DrPath::parse(path).map_err(|e| format!("DR path {path:?}: {e}"))?;
    let (new, r) = if let Some(r) = r.strip_prefix("new ") {
        (true, r)
    } else {
        (
            false,
            r.strip_prefix("known ")
                .ok_or("`new` or `known` expected")?,
        )
    };
    let (type_name, r) = r.split_once(" {").ok_or("`<type> {guid}` expected")?;
    let t = match type_name {
        "Channel Adapter" => NodeType::ChannelAdapter,
        "Switch" => NodeType::Switch,
        "Router" => NodeType::Router,
        _ => return Err(format!("node type {type_name:?}")),
    };
    let (guid, r) = r.split_once("} portnum ").ok_or("`} portnum` expected")?;
    let (port, r) = r.split_once(" lid ").ok_or("`lid A-B` expected")?;
    let (first, r) = r.split_once('-').ok_or("`lid A-B` expected")?;
    let (last, desc) = r.split_once(' ').ok_or("a description expected")?;
    let desc = desc
        .strip_prefix('"')
        .and_then(|d| d.strip_suffix('"'))
        .ok_or("a quoted description expected")?;
    let first: u32 = dec(first, "lid")?;
    let last: u32 = dec(last, "lid")?;
    let span = (last + 1)
        .checked_sub(first)
        .filter(|s| s.is_power_of_two() && s.trailing_zeros() <= 7)
        .ok_or("lid range A-B is not 2^lmc LIDs")?;
    Ok(ProgressLine {
        route: Route {
            slid: dec(slid, "slid")?,
            dlid: dec(dlid, "dlid")?,
            path,
        },
        new,
        node_type: t,
        guid: bare_hex(guid)?,
        port: dec(port, "portnum")?,
        lid: u16::try_from(first).map_err(|_| "lid out of range")?,
        lmc: span.trailing_zeros() as u8,
        description: desc.to_owned(),
    })
}

impl Fabric {
    /// Parses `ibnetdiscover` topology text (see the module docs of
    /// [`crate::ibnetdiscover`] for what is accepted and what is left at defaults).
    ///
    /// Every link must be listed from both ends, consistently; every peer must have a
    /// section.
    ///
    /// # Errors
    /// [`ParseError`] with the line number; never panics.
    pub fn parse_ibnetdiscover(text: &str) -> Result<Fabric, ParseError> {
        let err = |line: usize| move |message: String| ParseError { line, message };
        let mut sections: Vec<Section> = Vec::new();
        let mut ids = Ids::default();
        let mut fabric = Fabric::default();
        let mut from: Option<(u64, u64)> = None;
        let mut progress = Vec::new();
        let mut seen_node = false;
        // Chassis blocks of `-g`: (number, GUID, member GUIDs); the block being read and
        // whether its members may be taken (`# Chassis Switches` / `# Chassis CAs`).
        let mut blocks: Vec<(u8, u64, Vec<u64>)> = Vec::new();
        let mut block: Option<(usize, bool)> = None;
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            let n = i + 1;
            let e = err(n);
            let line = raw
                .strip_suffix('\n')
                .ok_or_else(|| e("the last line has no newline".into()))?;
            if line.is_empty() {
                continue;
            }
            if let Some(h) = line.strip_prefix('#') {
                let member = match h {
                    " Spine Nodes" | " Line Nodes" => Some(false),
                    " Chassis Switches" | " Chassis CAs" => Some(true),
                    _ => None,
                };
                if let Some(member) = member {
                    let (b, _) =
                        block.ok_or_else(|| e(format!("{line:?} outside a chassis block")))?;
                    block = Some((b, member));
                    continue;
                }
                if seen_node && !h.is_empty() {
                    return Err(e(format!(
                        "comment line {line:?} between nodes (a chassis section?)"
                    )));
                }
                if let Some(v) = h.strip_prefix(" Reported max hops discovered: ") {
                    fabric.max_hops_discovered = Some(dec(v, "max hops").map_err(e)?);
                } else if let Some(v) = h.strip_prefix(" Total MADs used: ") {
                    fabric.total_mads_used = Some(dec(v, "MADs").map_err(e)?);
                } else if let Some(v) = h.strip_prefix(" Initiated from node ") {
                    let (node, port) = v
                        .split_once(" port ")
                        .ok_or_else(|| e("`node <guid> port <guid>` expected".into()))?;
                    from = Some((bare_hex(node).map_err(e)?, bare_hex(port).map_err(e)?));
                } else if !(h.is_empty() || h.starts_with(" Topology file: generated on ")) {
                    return Err(e(format!("unknown header line {line:?}")));
                }
                continue;
            }
            if line.starts_with("DR path ") {
                if seen_node {
                    return Err(e("a progress line after the topology started".into()));
                }
                progress.push((n, progress_line(line).map_err(e)?));
                continue;
            }
            if line == "Non-Chassis Nodes" {
                block = None;
                continue;
            }
            if let Some(v) = line.strip_prefix("Chassis ") {
                let (num, guid) = match v.split_once(" (guid ") {
                    Some((num, g)) => (
                        num,
                        hex_u64(
                            g.strip_suffix(')')
                                .ok_or_else(|| e("`(guid 0x…)` expected".into()))?,
                        )
                        .map_err(e)?,
                    ),
                    None => (v, 0),
                };
                blocks.push((dec(num, "chassis number").map_err(e)?, guid, Vec::new()));
                block = Some((blocks.len() - 1, false));
                seen_node = true;
                continue;
            }
            if line.starts_with("Hostname: ") && block.is_some() {
                continue;
            }
            seen_node = true;
            if let Some(v) = line.strip_prefix("vendid=") {
                ids.vendor_id = Some(
                    u32::try_from(hex_u64(v).map_err(e)?)
                        .map_err(|_| e("vendid out of range".into()))?,
                );
            } else if let Some(v) = line.strip_prefix("devid=") {
                ids.device_id = Some(
                    u16::try_from(hex_u64(v).map_err(e)?)
                        .map_err(|_| e("devid out of range".into()))?,
                );
            } else if let Some(v) = line.strip_prefix("sysimgguid=") {
                let (v, chassis) = match v.split_once("\t\t# Chassis ") {
                    Some((g, c)) => {
                        let num = c.split(' ').next().unwrap_or_default();
                        (g, Some(dec(num, "chassis number").map_err(e)?))
                    }
                    None => (v, None),
                };
                ids.system_image_guid = Some(hex_u64(v).map_err(e)?);
                ids.chassis = chassis;
            } else if let Some(v) = line.strip_prefix("switchguid=") {
                let v = v.split_once("\t# ").map_or(v, |(g, _)| g);
                let (g, p) = v
                    .strip_suffix(')')
                    .and_then(|v| v.split_once('('))
                    .ok_or_else(|| e("`switchguid=0x<guid>(<port guid>)` expected".into()))?;
                ids.guid = Some((
                    NodeType::Switch,
                    hex_u64(g).map_err(e)?,
                    Some(bare_hex(p).map_err(e)?),
                ));
            } else if let Some(v) = line.strip_prefix("caguid=") {
                ids.guid = Some((NodeType::ChannelAdapter, hex_u64(v).map_err(e)?, None));
            } else if let Some(v) = line.strip_prefix("rtguid=") {
                ids.guid = Some((NodeType::Router, hex_u64(v).map_err(e)?, None));
            } else if let Some(rest) = line.strip_prefix("Switch\t") {
                let node = switch_header(rest).map_err(e)?;
                Self::chassis_member(&mut blocks, block, node.guid).map_err(e)?;
                sections.push(Self::section(n, node, std::mem::take(&mut ids)).map_err(e)?);
            } else if let Some(rest) = line.strip_prefix("Ca\t") {
                let node = ca_header(NodeType::ChannelAdapter, rest).map_err(e)?;
                Self::chassis_member(&mut blocks, block, node.guid).map_err(e)?;
                sections.push(Self::section(n, node, std::mem::take(&mut ids)).map_err(e)?);
            } else if let Some(rest) = line.strip_prefix("Rt\t") {
                let node = ca_header(NodeType::Router, rest).map_err(e)?;
                Self::chassis_member(&mut blocks, block, node.guid).map_err(e)?;
                sections.push(Self::section(n, node, std::mem::take(&mut ids)).map_err(e)?);
            } else if line.starts_with('[') {
                let s = sections
                    .last_mut()
                    .ok_or_else(|| e("a port line before any node".into()))?;
                let p = port_line(n, line, s.node.is_switch()).map_err(e)?;
                if p.number == 0 || p.number > s.node.num_ports {
                    return Err(e(format!(
                        "port {} of a {}-port node",
                        p.number, s.node.num_ports
                    )));
                }
                if s.ports.last().is_some_and(|l| l.number >= p.number) {
                    return Err(e(format!("port {} out of order", p.number)));
                }
                s.ports.push(p);
            } else {
                return Err(e(format!("unrecognised line {line:?}")));
            }
        }
        // Node order: with progress records (`-s`), libibnetdisc's own: the reverse of the
        // order the `new` records created the nodes. Else switches, CAs, routers, each as
        // listed.
        let created: HashMap<u64, usize> = progress
            .iter()
            .filter(|(_, p)| p.new)
            .enumerate()
            .map(|(i, (_, p))| (p.guid, i))
            .collect();
        if !created.is_empty() && sections.iter().all(|s| created.contains_key(&s.node.guid)) {
            sections.sort_by_key(|s| std::cmp::Reverse(created[&s.node.guid]));
        } else {
            sections.sort_by_key(|s| match s.node.node_type {
                NodeType::Switch => 0,
                NodeType::ChannelAdapter => 1,
                _ => 2,
            });
        }
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, s) in sections.iter().enumerate() {
            if index.insert(s.node.guid, i).is_some() {
                return Err(err(s.line)(format!("node {:#x} listed twice", s.node.guid)));
            }
        }
        // Create every port first, then link.
        let mut nodes: Vec<Node> = Vec::with_capacity(sections.len());
        for s in &sections {
            let mut node = s.node.clone();
            for pl in &s.ports {
                let mut p = Port::new(pl.number, pl.guid.unwrap_or(node.port_guid));
                if let Some((lid, lmc)) = pl.lid_lmc {
                    p.lid = lid;
                    p.lmc = lmc;
                } else {
                    p.lid = node.lid;
                    p.lmc = node.lmc;
                }
                p.width = pl.width;
                p.speed = pl.speed;
                p.speed_ext = pl.speed_ext;
                p.mlnx_speed = pl.mlnx;
                p.vl_cap = pl.vl_cap;
                if pl.speed_ext != 0 {
                    if node.is_switch() {
                        if let Some(p0) = node.port_mut(0) {
                            p0.capability_mask |= CAP_HAS_EXT_SPEEDS;
                        }
                    } else {
                        p.capability_mask |= CAP_HAS_EXT_SPEEDS;
                    }
                }
                node.set_port(p);
            }
            nodes.push(node);
        }
        fabric.nodes = nodes;
        fabric.chassis = blocks
            .into_iter()
            .map(|(number, guid, members)| Chassis {
                number,
                guid,
                nodes: members
                    .iter()
                    .filter_map(|g| index.get(g).copied())
                    .collect(),
                spines: Vec::new(),
                lines: Vec::new(),
            })
            .collect();
        for (si, s) in sections.iter().enumerate() {
            for pl in &s.ports {
                let e = err(pl.line);
                let ri = *index
                    .get(&pl.remote_guid)
                    .ok_or_else(|| e(format!("peer {:#x} has no section", pl.remote_guid)))?;
                let rn = &fabric.nodes[ri];
                if rn.node_type != pl.remote_type {
                    return Err(e(format!(
                        "peer {:#x} is a {}, not a {}",
                        rn.guid, rn.node_type, pl.remote_type
                    )));
                }
                let rp = rn.port(pl.remote_port).ok_or_else(|| {
                    e(format!(
                        "link to {:#x} port {} is not listed from the other end",
                        pl.remote_guid, pl.remote_port
                    ))
                })?;
                let here = PortRef {
                    node: si,
                    port: pl.number,
                };
                let back = sections[ri]
                    .ports
                    .iter()
                    .find(|o| o.number == pl.remote_port);
                if !back.is_some_and(|b| b.remote_guid == s.node.guid && b.remote_port == pl.number)
                {
                    return Err(e(format!(
                        "link to {:#x} port {} is listed differently from the other end",
                        pl.remote_guid, pl.remote_port
                    )));
                }
                if pl.remote_lid != rn.shown_lid(pl.remote_port) {
                    return Err(e(format!(
                        "peer lid {} in the comment, but the peer's section says {}",
                        pl.remote_lid,
                        rn.shown_lid(pl.remote_port)
                    )));
                }
                if let Some(g) = pl.remote_port_guid {
                    if g != rp.guid {
                        return Err(e(format!(
                            "peer port GUID {g:#x}, but its section says {:#x}",
                            rp.guid
                        )));
                    }
                }
                fabric.link(
                    here,
                    PortRef {
                        node: ri,
                        port: pl.remote_port,
                    },
                );
            }
        }
        if let Some((node_guid, port_guid)) = from {
            let node = *index
                .get(&node_guid)
                .ok_or_else(|| err(0)(format!("start node {node_guid:#x} has no section")))?;
            let n = &mut fabric.nodes[node];
            if n.is_switch() {
                if n.port_guid != port_guid {
                    return Err(err(0)(format!(
                        "start port {port_guid:#x} is not the switch's port 0"
                    )));
                }
                fabric.from = Some(Origin { node, port: 0 });
            } else {
                n.port_guid = port_guid;
                let port = n
                    .ports
                    .iter()
                    .find(|p| p.guid == port_guid)
                    .map_or(0, |p| p.number);
                n.local_port = port;
                fabric.from = Some(Origin { node, port });
            }
        }
        for (line, p) in progress {
            let guid = p.guid;
            let node = *index
                .get(&guid)
                .ok_or_else(|| err(line)(format!("node {guid:#x} has no section")))?;
            if fabric.nodes[node].node_type != p.node_type {
                return Err(err(line)(format!(
                    "node {guid:#x} is not a {}",
                    p.node_type
                )));
            }
            if p.new {
                fabric.nodes[node].path = p.route;
                if !fabric.nodes[node].is_switch() {
                    fabric.nodes[node].local_port = p.port;
                }
            }
            fabric.progress.push(Progress {
                route: p.route,
                new: p.new,
                node,
                port: p.port,
                lid: p.lid,
                lmc: p.lmc,
                description: p.description,
            });
        }
        fabric.validate().map_err(|m| err(0)(m))?;
        Ok(fabric)
    }

    fn chassis_member(
        blocks: &mut [(u8, u64, Vec<u64>)],
        block: Option<(usize, bool)>,
        guid: u64,
    ) -> Res<()> {
        match block {
            None => Ok(()),
            Some((_, false)) => {
                Err("a node under `# Spine Nodes` / `# Line Nodes` (Voltaire chassis)".into())
            }
            Some((b, true)) => {
                if let Some(blk) = blocks.get_mut(b) {
                    blk.2.push(guid);
                }
                Ok(())
            }
        }
    }

    fn section(line: usize, mut node: Node, ids: Ids) -> Res<Section> {
        let (t, guid, port0) = ids.guid.ok_or("node header without its `…guid=` line")?;
        if t != node.node_type || guid != node.guid {
            return Err(format!(
                "the `…guid=` line says {guid:#x}, the header {:#x}",
                node.guid
            ));
        }
        node.vendor_id = ids.vendor_id.ok_or("node without `vendid=`")?;
        node.device_id = ids.device_id.ok_or("node without `devid=`")?;
        node.system_image_guid = ids.system_image_guid.unwrap_or(0);
        node.chassis = ids.chassis.map(|number| NodeChassis {
            number,
            chassis_type: None,
            slot: None,
        });
        if let Some(p0) = port0 {
            node.port_guid = p0;
            let mut p = Port::new(0, p0);
            p.lid = node.lid;
            p.lmc = node.lmc;
            node.set_port(p);
        }
        Ok(Section {
            line,
            node,
            ports: Vec::new(),
        })
    }
}
