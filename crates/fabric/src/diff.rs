//! Comparing two fabrics: nodes and links added and removed, and what changed on the nodes
//! and ports both have (node description, LID, port state, link width and speed, ...).
//!
//! Nodes are matched by NodeGUID, ports by (NodeGUID, port number), links by their two ends
//! (so two parallel links between the same switches are two links, and a cable moved from
//! one port to another is one link removed and one added). Which checks run is a [`Checks`];
//! [`Checks::parse_keys`] reads `ibnetdiscover --diffcheck` keys.
//!
//! ```
//! use ibfabric::diff::{diff, Checks};
//! use ibfabric::Fabric;
//! let (old, new) = (Fabric::default(), Fabric::default());
//! let d = diff(&old, &new, Checks::ALL);
//! assert!(d.is_empty());
//! ```
//!
//! [`FabricDiff::write_text`] prints one line per difference (`-` removed, `+` added, `~`
//! changed); [`FabricDiff::to_json`] writes the JSON form described by
//! `docs/json/ibnetdiscover-diff-v1.schema.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ibmad::{LinkSpeed, LinkWidth, NodeType, PhysPortState, PortState};
use serde::{Serialize, Serializer};

use crate::ibnetdiscover::NodeNameMap;
use crate::model::{Fabric, Node, Port};

/// The version of the diff's JSON layout.
pub const DIFF_SCHEMA_VERSION: u32 = 1;

/// Which differences [`diff`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    /// Compare switches (`sw`).
    pub switches: bool,
    /// Compare CAs (`ca`).
    pub cas: bool,
    /// Compare routers (`router`).
    pub routers: bool,
    /// Nodes and links added or removed (`port`).
    pub links: bool,
    /// LIDs and LMCs (`lid`).
    pub lids: bool,
    /// Node descriptions (`nodedesc`).
    pub descriptions: bool,
    /// Port state and physical state (`state`).
    pub states: bool,
    /// Active link width of linked ports (`width`).
    pub widths: bool,
    /// Active link speed of linked ports (`speed`).
    pub speeds: bool,
}

impl Checks {
    /// Every check, on every node type.
    pub const ALL: Checks = Checks {
        switches: true,
        cas: true,
        routers: true,
        links: true,
        lids: true,
        descriptions: true,
        states: true,
        widths: true,
        speeds: true,
    };

    /// The `--diffcheck` keys, in help order.
    pub const KEYS: [&'static str; 9] = [
        "sw", "ca", "router", "port", "lid", "nodedesc", "state", "width", "speed",
    ];

    /// Reads comma-separated keys (case-insensitive): `sw`, `ca`, `router` choose node types,
    /// `port` (nodes and links added or removed), `lid`, `nodedesc`, `state`, `width`,
    /// `speed` choose checks. The C tool's keys mean the same; `state`, `width`, `speed` are
    /// this crate's. Given keys replace the default (all); when no node-type key is given,
    /// every node type is compared.
    ///
    /// # Errors
    /// An unknown key, named.
    pub fn parse_keys(keys: &str) -> Result<Checks, String> {
        if keys.split(',').all(str::is_empty) {
            return Ok(Checks::ALL);
        }
        let mut c = Checks {
            switches: false,
            cas: false,
            routers: false,
            links: false,
            lids: false,
            descriptions: false,
            states: false,
            widths: false,
            speeds: false,
        };
        for key in keys.split(',').filter(|k| !k.is_empty()) {
            match key.to_ascii_lowercase().as_str() {
                "sw" => c.switches = true,
                "ca" => c.cas = true,
                "router" => c.routers = true,
                "port" => c.links = true,
                "lid" => c.lids = true,
                "nodedesc" => c.descriptions = true,
                "state" => c.states = true,
                "width" => c.widths = true,
                "speed" => c.speeds = true,
                _ => {
                    return Err(format!(
                        "invalid diff check key: {key} (known: {})",
                        Checks::KEYS.join(", ")
                    ))
                }
            }
        }
        if !(c.switches || c.cas || c.routers) {
            c.switches = true;
            c.cas = true;
            c.routers = true;
        }
        Ok(c)
    }

    fn covers(&self, t: NodeType) -> bool {
        match t {
            NodeType::Switch => self.switches,
            NodeType::ChannelAdapter => self.cas,
            NodeType::Router => self.routers,
            _ => true,
        }
    }
}

impl Default for Checks {
    fn default() -> Self {
        Checks::ALL
    }
}

/// A node, as a difference names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct NodeRef {
    /// NodeGUID.
    #[serde(serialize_with = "guid")]
    pub guid: u64,
    /// `CA`, `Switch`, `Router`, or the type code.
    pub node_type: String,
    /// NodeDescription.
    pub description: String,
    /// NodeInfo.NumPorts.
    pub num_ports: u8,
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LinkEnd {
    /// NodeGUID.
    #[serde(serialize_with = "guid")]
    pub guid: u64,
    /// Port number.
    pub port: u8,
    /// `CA`, `Switch`, `Router`, or the type code.
    pub node_type: String,
    /// NodeDescription.
    pub description: String,
}

/// A link added or removed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LinkRef {
    /// The end with the lower (GUID, port).
    pub a: LinkEnd,
    /// The other end.
    pub b: LinkEnd,
    /// Active width at end `a` (`4X`), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<String>,
    /// Active speed at end `a` (`QDR`), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// NodeInfo.NodeType.
    NodeType,
    /// NodeInfo.NumPorts.
    NumPorts,
    /// NodeDescription.
    Description,
    /// A switch's port 0 LID, or a CA/router port's base LID.
    Lid,
    /// The LMC next to that LID.
    Lmc,
    /// PortInfo.PortState.
    State,
    /// PortInfo.PortPhysicalState.
    PhysState,
    /// Active link width.
    Width,
    /// Active link speed.
    Speed,
}

impl Field {
    /// The name used in text and JSON (`description`, `phys_state`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Field::NodeType => "node_type",
            Field::NumPorts => "num_ports",
            Field::Description => "description",
            Field::Lid => "lid",
            Field::Lmc => "lmc",
            Field::State => "state",
            Field::PhysState => "phys_state",
            Field::Width => "width",
            Field::Speed => "speed",
        }
    }
}

/// A value that differs between the fabrics on a node both have.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Change {
    /// The node (as in the new fabric).
    pub node: NodeRef,
    /// The port, for port fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u8>,
    /// What changed.
    pub field: Field,
    /// The old value, as text.
    pub old: String,
    /// The new value, as text.
    pub new: String,
}

/// Everything [`diff`] found. Each list is sorted (by GUID, then port).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FabricDiff {
    /// Nodes only in the new fabric.
    pub nodes_added: Vec<NodeRef>,
    /// Nodes only in the old fabric.
    pub nodes_removed: Vec<NodeRef>,
    /// Links only in the new fabric.
    pub links_added: Vec<LinkRef>,
    /// Links only in the old fabric.
    pub links_removed: Vec<LinkRef>,
    /// Values that differ on nodes and ports both fabrics have.
    pub changes: Vec<Change>,
}

fn guid<S: Serializer>(g: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{g:#018x}"))
}

/// The name the JSON and text use for a node type.
pub fn node_type_name(t: NodeType) -> String {
    match t {
        NodeType::ChannelAdapter => "CA".to_string(),
        NodeType::Switch => "Switch".to_string(),
        NodeType::Router => "Router".to_string(),
        other => u8::from(other).to_string(),
    }
}

fn node_ref(n: &Node) -> NodeRef {
    NodeRef {
        guid: n.guid,
        node_type: node_type_name(n.node_type),
        description: n.description.clone(),
        num_ports: n.num_ports,
    }
}

fn link_end(n: &Node, port: u8) -> LinkEnd {
    LinkEnd {
        guid: n.guid,
        port,
        node_type: node_type_name(n.node_type),
        description: n.description.clone(),
    }
}

/// The active width of a port as text (`4X`), or `None` without PortInfo.
pub fn width_text(port: &Port) -> Option<String> {
    port.has_info
        .then(|| LinkWidth::from(port.width).to_string())
}

/// The active speed of a port of `node` as text (`QDR`, `FDR10`, `EDR`), judged as
/// `ibnetdiscover` does ([`Fabric::port_speed_ext`], the Mellanox FDR10 bit), or `None`
/// without PortInfo or for a code with no name.
pub fn speed_text(node: &Node, port: &Port) -> Option<String> {
    if !port.has_info {
        return None;
    }
    let ext = Fabric::port_speed_ext(node, port);
    LinkSpeed::from_codes_mlnx(port.speed, ext, 0, port.mlnx_speed).map(|s| s.to_string())
}

type LinkKey = ((u64, u8), (u64, u8));

/// Every link of `f` whose ends both exist, keyed by its (GUID, port) ends, lower first.
fn link_map(f: &Fabric, checks: &Checks) -> BTreeMap<LinkKey, LinkRef> {
    let mut out = BTreeMap::new();
    for n in &f.nodes {
        for p in &n.ports {
            let Some(r) = p.remote else { continue };
            let Some(rn) = f.nodes.get(r.node) else {
                continue;
            };
            if !checks.covers(n.node_type) && !checks.covers(rn.node_type) {
                continue;
            }
            let here = (n.guid, p.number);
            let there = (rn.guid, r.port);
            if here > there {
                continue; // listed from the other end
            }
            out.insert(
                (here, there),
                LinkRef {
                    a: link_end(n, p.number),
                    b: link_end(rn, r.port),
                    width: width_text(p),
                    speed: speed_text(n, p),
                },
            );
        }
    }
    out
}

/// Compares `old` with `new`.
pub fn diff(old: &Fabric, new: &Fabric, checks: Checks) -> FabricDiff {
    let mut d = FabricDiff::default();
    let old_by_guid: BTreeMap<u64, &Node> = old.nodes.iter().map(|n| (n.guid, n)).collect();
    let new_by_guid: BTreeMap<u64, &Node> = new.nodes.iter().map(|n| (n.guid, n)).collect();

    if checks.links {
        for (g, n) in &old_by_guid {
            if !new_by_guid.contains_key(g) && checks.covers(n.node_type) {
                d.nodes_removed.push(node_ref(n));
            }
        }
        for (g, n) in &new_by_guid {
            if !old_by_guid.contains_key(g) && checks.covers(n.node_type) {
                d.nodes_added.push(node_ref(n));
            }
        }
        let old_links = link_map(old, &checks);
        let new_links = link_map(new, &checks);
        let old_keys: BTreeSet<_> = old_links.keys().collect();
        let new_keys: BTreeSet<_> = new_links.keys().collect();
        d.links_removed = old_keys
            .difference(&new_keys)
            .map(|k| old_links[*k].clone())
            .collect();
        d.links_added = new_keys
            .difference(&old_keys)
            .map(|k| new_links[*k].clone())
            .collect();
    }

    for (g, n_new) in &new_by_guid {
        let Some(n_old) = old_by_guid.get(g) else {
            continue;
        };
        if !checks.covers(n_new.node_type) && !checks.covers(n_old.node_type) {
            continue;
        }
        compare_nodes(n_old, n_new, &checks, &mut d.changes);
    }
    d.changes.sort();
    d
}

fn compare_nodes(old: &Node, new: &Node, checks: &Checks, out: &mut Vec<Change>) {
    let node = node_ref(new);
    let mut push = |port: Option<u8>, field: Field, a: String, b: String| {
        if a != b {
            out.push(Change {
                node: node.clone(),
                port,
                field,
                old: a,
                new: b,
            });
        }
    };
    push(
        None,
        Field::NodeType,
        node_type_name(old.node_type),
        node_type_name(new.node_type),
    );
    push(
        None,
        Field::NumPorts,
        old.num_ports.to_string(),
        new.num_ports.to_string(),
    );
    if checks.descriptions {
        push(
            None,
            Field::Description,
            old.description.clone(),
            new.description.clone(),
        );
    }
    let switch = new.is_switch() && old.is_switch();
    if checks.lids && switch {
        push(None, Field::Lid, old.lid.to_string(), new.lid.to_string());
        push(None, Field::Lmc, old.lmc.to_string(), new.lmc.to_string());
    }
    for p_new in &new.ports {
        let Some(p_old) = old.port(p_new.number) else {
            continue;
        };
        if !(p_old.has_info && p_new.has_info) {
            continue;
        }
        let port = Some(p_new.number);
        if checks.lids && !switch {
            push(
                port,
                Field::Lid,
                p_old.lid.to_string(),
                p_new.lid.to_string(),
            );
            push(
                port,
                Field::Lmc,
                p_old.lmc.to_string(),
                p_new.lmc.to_string(),
            );
        }
        // A switch's port 0 has no link: its state says nothing about cabling.
        if switch && p_new.number == 0 {
            continue;
        }
        // NoChange (0) is never a port's real state: it is what a topology read from
        // ibnetdiscover text, which has no states, holds. Unknown on either side: skip.
        if checks.states && p_old.state != PortState::NoChange && p_new.state != PortState::NoChange
        {
            push(
                port,
                Field::State,
                p_old.state.to_string(),
                p_new.state.to_string(),
            );
        }
        if checks.states
            && p_old.phys_state != PhysPortState::NoChange
            && p_new.phys_state != PhysPortState::NoChange
        {
            push(
                port,
                Field::PhysState,
                p_old.phys_state.to_string(),
                p_new.phys_state.to_string(),
            );
        }
        // Width and speed mean something only on a link that is up at both times.
        if p_old.remote.is_none() || p_new.remote.is_none() {
            continue;
        }
        if checks.widths {
            push(
                port,
                Field::Width,
                width_text(p_old).unwrap_or_default(),
                width_text(p_new).unwrap_or_default(),
            );
        }
        if checks.speeds {
            push(
                port,
                Field::Speed,
                speed_text(old, p_old).unwrap_or_else(|| "?".into()),
                speed_text(new, p_new).unwrap_or_else(|| "?".into()),
            );
        }
    }
}

impl FabricDiff {
    /// No difference at all.
    pub fn is_empty(&self) -> bool {
        self.nodes_added.is_empty()
            && self.nodes_removed.is_empty()
            && self.links_added.is_empty()
            && self.links_removed.is_empty()
            && self.changes.is_empty()
    }

    /// How many differences there are.
    pub fn len(&self) -> usize {
        self.nodes_added.len()
            + self.nodes_removed.len()
            + self.links_added.len()
            + self.links_removed.len()
            + self.changes.len()
    }

    /// The text form: one line per difference, removed (`-`) before added (`+`), nodes
    /// before links, then changes (`~`); nothing at all when the fabrics are the same.
    ///
    /// ```text
    /// - CA 0x0000000000100005 "host3 HCA-1" (1 port)
    /// - link 0x0000000000100005[1] "host3 HCA-1" -- 0x0000000000200001[1] "sw2" (4X QDR)
    /// ~ Switch 0x0000000000200001 "sw2" port 1: state Active -> Down
    /// ```
    pub fn write_text(&self, out: &mut impl fmt::Write) -> fmt::Result {
        for (sign, nodes) in [('-', &self.nodes_removed), ('+', &self.nodes_added)] {
            for n in nodes {
                writeln!(
                    out,
                    "{sign} {} {:#018x} \"{}\" ({} port{})",
                    n.node_type,
                    n.guid,
                    n.description,
                    n.num_ports,
                    if n.num_ports == 1 { "" } else { "s" }
                )?;
            }
        }
        for (sign, links) in [('-', &self.links_removed), ('+', &self.links_added)] {
            for l in links {
                write!(
                    out,
                    "{sign} link {:#018x}[{}] \"{}\" -- {:#018x}[{}] \"{}\"",
                    l.a.guid, l.a.port, l.a.description, l.b.guid, l.b.port, l.b.description
                )?;
                match (&l.width, &l.speed) {
                    (Some(w), Some(s)) => writeln!(out, " ({w} {s})")?,
                    (Some(w), None) => writeln!(out, " ({w})")?,
                    _ => writeln!(out)?,
                }
            }
        }
        for c in &self.changes {
            write!(
                out,
                "~ {} {:#018x} \"{}\"",
                c.node.node_type, c.node.guid, c.node.description
            )?;
            if let Some(p) = c.port {
                write!(out, " port {p}")?;
            }
            if c.field == Field::Description {
                writeln!(out, ": {} \"{}\" -> \"{}\"", c.field.name(), c.old, c.new)?;
            } else {
                writeln!(out, ": {} {} -> {}", c.field.name(), c.old, c.new)?;
            }
        }
        Ok(())
    }

    /// Replaces every node description with its name from `map` (`--node-name-map`;
    /// [`NodeNameMap::remap`]: the mapped name, else the cleaned description), as the C
    /// tools show nodes.
    pub fn rename(&mut self, map: &NodeNameMap) {
        let fix = |guid: u64, d: &mut String| *d = map.remap(guid, d).into_owned();
        for n in self.nodes_added.iter_mut().chain(&mut self.nodes_removed) {
            fix(n.guid, &mut n.description);
        }
        for l in self.links_added.iter_mut().chain(&mut self.links_removed) {
            fix(l.a.guid, &mut l.a.description);
            fix(l.b.guid, &mut l.b.description);
        }
        for c in &mut self.changes {
            fix(c.node.guid, &mut c.node.description);
        }
    }

    /// [`FabricDiff::write_text`] into a `String`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_text(&mut s);
        s
    }

    /// The JSON form: `{"schema_version": 1, "same": …, "nodes_added": […], …}`, GUIDs as
    /// `"0x%016x"` strings, pretty-printed.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            same: bool,
            #[serde(flatten)]
            diff: &'a FabricDiff,
        }
        let doc = Doc {
            schema_version: DIFF_SCHEMA_VERSION,
            same: self.is_empty(),
            diff: self,
        };
        // Plain structs and strings: serializing cannot fail.
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PortRef;

    /// The shared small fabric: switch 0x200 with CAs 0x10 and 0x20 on ports 1 and 2.
    fn fabric() -> Fabric {
        crate::test_fabrics::small()
    }

    #[test]
    fn same_fabric_no_differences() {
        let f = fabric();
        let d = diff(&f, &f, Checks::ALL);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(d.to_text(), "");
        assert!(d.to_json().contains("\"same\": true"));
        // States unknown on one side (a topology read from text): not compared.
        let mut unknown = fabric();
        for n in &mut unknown.nodes {
            for p in &mut n.ports {
                p.state = PortState::NoChange;
                p.phys_state = PhysPortState::NoChange;
            }
        }
        assert!(diff(&unknown, &f, Checks::ALL).is_empty());
        assert!(diff(&f, &unknown, Checks::ALL).is_empty());
    }

    #[test]
    fn node_and_link_removed_and_port_state() {
        let old = fabric();
        let mut new = fabric();
        // CA 0x20 gone: unlink sw port 2, drop the node, port goes Down.
        new.nodes[0].port_mut(2).unwrap().remote = None;
        new.nodes[0].port_mut(2).unwrap().state = PortState::Down;
        new.nodes.remove(2);
        new.validate().unwrap();
        let d = diff(&old, &new, Checks::ALL);
        assert_eq!(d.nodes_removed.len(), 1);
        assert_eq!(d.nodes_removed[0].guid, 0x20);
        assert_eq!(d.links_removed.len(), 1);
        assert_eq!(
            (d.links_removed[0].a.guid, d.links_removed[0].a.port),
            (0x20, 1)
        );
        assert_eq!(
            (d.links_removed[0].b.guid, d.links_removed[0].b.port),
            (0x200, 2)
        );
        assert_eq!(d.changes.len(), 1, "{:?}", d.changes);
        assert_eq!(d.changes[0].field, Field::State);
        assert_eq!(
            (d.changes[0].old.as_str(), d.changes[0].new.as_str()),
            ("Active", "Down")
        );
        let text = d.to_text();
        assert_eq!(
            text,
            "- CA 0x0000000000000020 \"host1 HCA-1\" (2 ports)\n\
             - link 0x0000000000000020[1] \"host1 HCA-1\" -- 0x0000000000000200[2] \"sw \"one\"\" (4X QDR)\n\
             ~ Switch 0x0000000000000200 \"sw \"one\"\" port 2: state Active -> Down\n"
        );
        // Backwards: added.
        let mut named = d.clone();
        named.rename(&NodeNameMap::parse("0x200 \"big switch\"\n").unwrap());
        assert!(named
            .to_text()
            .contains("0x0000000000000200[2] \"big switch\""));
        assert!(named.to_text().contains("\"host1 HCA-1\""));
        let back = diff(&new, &old, Checks::ALL);
        assert_eq!(back.nodes_added.len(), 1);
        assert_eq!(back.links_added.len(), 1);
        assert!(back.nodes_removed.is_empty() && back.links_removed.is_empty());
    }

    #[test]
    fn moved_cable_width_speed_lid_description() {
        let old = fabric();
        let mut new = fabric();
        // CA 0x10 moves from sw port 1 to sw port 3, at 1X SDR.
        new.nodes[0].port_mut(1).unwrap().remote = None;
        assert!(new.link(PortRef { node: 0, port: 3 }, PortRef { node: 1, port: 1 }));
        new.nodes[0].port_mut(1).unwrap().state = PortState::Down;
        new.nodes[0].port_mut(3).unwrap().state = PortState::Active;
        // CA 0x20: new LID, new description, width 1X on both ends.
        new.nodes[2].description = "renamed".into();
        new.nodes[2].port_mut(1).unwrap().lid = 9;
        new.nodes[2].port_mut(1).unwrap().width = 1;
        new.nodes[0].port_mut(2).unwrap().width = 1;
        new.validate().unwrap();
        let d = diff(&old, &new, Checks::ALL);
        assert!(d.nodes_added.is_empty() && d.nodes_removed.is_empty());
        assert_eq!(d.links_removed.len(), 1);
        assert_eq!(d.links_added.len(), 1);
        assert_eq!(d.links_added[0].b.port, 3);
        let fields: Vec<_> = d
            .changes
            .iter()
            .map(|c| (c.node.guid, c.port, c.field))
            .collect();
        assert!(
            fields.contains(&(0x20, None, Field::Description)),
            "{fields:?}"
        );
        assert!(fields.contains(&(0x20, Some(1), Field::Lid)));
        assert!(fields.contains(&(0x20, Some(1), Field::Width)));
        assert!(fields.contains(&(0x200, Some(2), Field::Width)));
        assert!(fields.contains(&(0x200, Some(3), Field::State)));
        assert!(fields.contains(&(0x200, Some(1), Field::State)));

        // Only LIDs on CAs: the description, links and widths are not looked at.
        let only = diff(&old, &new, Checks::parse_keys("lid,CA").unwrap());
        assert!(only.links_added.is_empty() && only.links_removed.is_empty());
        assert_eq!(only.changes.len(), 1);
        assert_eq!(only.changes[0].field, Field::Lid);
    }

    #[test]
    fn diffcheck_keys() {
        assert_eq!(Checks::parse_keys("").unwrap(), Checks::ALL);
        let c = Checks::parse_keys("sw,port").unwrap();
        assert!(c.switches && !c.cas && c.links && !c.lids);
        let e = Checks::parse_keys("sw,bogus").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }
}
