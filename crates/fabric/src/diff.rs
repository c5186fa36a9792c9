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
//!
//! [`topology_diff`] is something else: the comparison C `ibnetdiscover --diff` makes
//! (infiniband-diags' `diff_*` functions), item by item in C's order, for
//! [`Fabric::write_ibnetdiscover_diff`](crate::Fabric::write_ibnetdiscover_diff) to print as
//! C's `<`/`>` topology lines. Its keys are read by [`Checks::parse_keys_exact`] (C's
//! reading), [`diff`]'s by [`Checks::parse_keys`].

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

    /// No check and no node type.
    pub const NONE: Checks = Checks {
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

    /// C `ibnetdiscover`'s default (`DIFF_FLAG_DEFAULT`): every node type and `port`.
    pub const C_DEFAULT: Checks = Checks {
        switches: true,
        cas: true,
        routers: true,
        links: true,
        ..Checks::NONE
    };

    /// Reads comma-separated keys (case-insensitive) exactly as C `ibnetdiscover
    /// --diffcheck` does: the given keys replace the default and nothing else is on (so
    /// without `sw`, `ca` or `router` no node type is compared, and an empty list selects
    /// nothing). `sw`, `ca`, `router` choose node types; `port` (nodes and links added or
    /// removed), `lid`, `nodedesc` are C's checks; `state`, `width`, `speed` are this
    /// crate's (only [`diff`] uses them).
    ///
    /// # Errors
    /// An unknown key, named.
    pub fn parse_keys_exact(keys: &str) -> Result<Checks, String> {
        let mut c = Checks::NONE;
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
                // C's text (ibnetdiscover's usage follows it).
                _ => return Err(format!("invalid diff check key: {key}")),
            }
        }
        Ok(c)
    }

    /// This crate's reading of keys given exactly ([`Checks::parse_keys_exact`]): no key at
    /// all means every check ([`Checks::ALL`]), and when no node-type key is given every node
    /// type is compared.
    pub fn or_all_types(self) -> Checks {
        if self == Checks::NONE {
            return Checks::ALL;
        }
        let mut c = self;
        if !(c.switches || c.cas || c.routers) {
            c.switches = true;
            c.cas = true;
            c.routers = true;
        }
        c
    }

    /// Reads comma-separated keys (case-insensitive) for [`diff`]: [`Checks::parse_keys_exact`]
    /// then [`Checks::or_all_types`]. The C tool's keys mean the same; `state`, `width`,
    /// `speed` are this crate's.
    ///
    /// # Errors
    /// An unknown key, named.
    pub fn parse_keys(keys: &str) -> Result<Checks, String> {
        Checks::parse_keys_exact(keys).map(Checks::or_all_types)
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

/// Which fabric a line of C's `--diff` output shows: `<` the saved one (the `--diff` file),
/// `>` the current one (discovered, or `--load-cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The saved fabric (`< `).
    Saved,
    /// The current fabric (`> `).
    Current,
}

impl Side {
    /// The line prefix: `"< "` or `"> "`.
    pub fn prefix(self) -> &'static str {
        match self {
            Side::Saved => "< ",
            Side::Current => "> ",
        }
    }
}

/// One piece of C `ibnetdiscover --diff` output ([`topology_diff`]). Node indices are into
/// the fabric of the side named (a `saved` index into the saved fabric, a `current` one into
/// the current fabric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologyDiffItem {
    /// A node only one side has (`diff_iter_func`, no node with its GUID on the other side):
    /// its header with every line prefixed, then each of its linked ports, prefixed.
    Only {
        /// The side that has it.
        side: Side,
        /// The node.
        node: usize,
    },
    /// A node both have whose LID (`lid`) or description (`nodedesc`) differs: the saved
    /// node's header, its id lines unprefixed and its detail line prefixed `< `, then the
    /// current node's detail line prefixed `> `.
    Changed {
        /// The node in the saved fabric.
        saved: usize,
        /// The node in the current fabric.
        current: usize,
    },
    /// The saved node's header, unprefixed: once, before the first numports or port
    /// difference of a node that is not [`TopologyDiffItem::Changed`].
    Header {
        /// The node in the saved fabric.
        saved: usize,
    },
    /// NumPorts differs: `< numports = N` and `> numports = M` (and no port is compared).
    NumPorts {
        /// The node in the saved fabric.
        saved: usize,
        /// The node in the current fabric.
        current: usize,
    },
    /// One port's line, prefixed (only for a linked port: C prints its peer).
    Port {
        /// The fabric the port is from.
        side: Side,
        /// The node, in that fabric.
        node: usize,
        /// The port number.
        port: u8,
    },
}

/// One [`TopologyDiffItem`] and the node type of the pass that found it: C compares
/// switches, then CAs, then routers, and prints every line of a pass with that type's
/// writer (`out_switch*` for switches, `out_ca*` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyDiffLine {
    /// The pass (`NodeType::Switch`, `ChannelAdapter` or `Router`).
    pub pass: NodeType,
    /// What to print.
    pub item: TopologyDiffItem,
}

/// What C `ibnetdiscover --diff <saved>` reports against `current`, in its order
/// (infiniband-diags `diff`/`diff_common`/`diff_iter_func`/`diff_ports`); the text is
/// [`Fabric::write_ibnetdiscover_diff`](crate::Fabric::write_ibnetdiscover_diff).
///
/// Only C's checks count: the node types (`switches`, `cas`, `routers`, one pass each in
/// that order), `links` (C's `port`), `lids` and `descriptions`; `states`, `widths` and
/// `speeds` are ignored. Each pass walks the saved fabric's nodes of its type (in
/// [`Fabric::nodes`] order), looking each up by NodeGUID in the current fabric:
///
/// * not there: [`TopologyDiffItem::Only`] (whatever the checks);
/// * with `lids` and a different switch port-0 LID (`smalid`; 0 for CAs and routers), or
///   `descriptions` and different NodeDescription bytes: [`TopologyDiffItem::Changed`];
/// * then, with any of `links`, `lids`, `descriptions`: a different NumPorts gives
///   [`TopologyDiffItem::NumPorts`] and ends the node; else, with `links` or `lids`, ports
///   1..NumPorts are compared. A port is printed from the saved side if only the saved
///   side has it or only the saved side's is linked, else from the current side if only
///   the current side has it or only its is linked, else from both sides if the port GUIDs
///   or the peers' port GUIDs differ (all with `links`); from both sides also when, with
///   `lids`, the base LIDs differ, with `links` and `descriptions` the peers' descriptions
///   differ, or with `links` and `lids` the peers' base LIDs differ. A port whose line
///   would have no peer is left out (and so is the header, if nothing else follows it):
///   C dereferences the missing link there and crashes.
///
/// Then it walks the current fabric's nodes of the type and reports those the saved one
/// does not have ([`TopologyDiffItem::Only`] on the current side).
pub fn topology_diff(saved: &Fabric, current: &Fabric, checks: Checks) -> Vec<TopologyDiffLine> {
    let mut out = Vec::new();
    for (on, pass) in [
        (checks.switches, NodeType::Switch),
        (checks.cas, NodeType::ChannelAdapter),
        (checks.routers, NodeType::Router),
    ] {
        if !on {
            continue;
        }
        let mut push = |item| out.push(TopologyDiffLine { pass, item });
        let current_index = current.guid_index();
        for (i, n) in saved.nodes_of_type(pass) {
            match current_index.get(&n.guid) {
                None => push(TopologyDiffItem::Only {
                    side: Side::Saved,
                    node: i,
                }),
                Some(&j) => compare_node(saved, i, current, j, checks, &mut push),
            }
        }
        let saved_index = saved.guid_index();
        for (j, n) in current.nodes_of_type(pass) {
            if !saved_index.contains_key(&n.guid) {
                push(TopologyDiffItem::Only {
                    side: Side::Current,
                    node: j,
                });
            }
        }
    }
    out
}

/// The peer of a port: its node and port, when linked (and the link resolves).
fn peer<'f>(f: &'f Fabric, p: &Port) -> Option<(&'f Node, &'f Port)> {
    let r = p.remote?;
    Some((f.nodes.get(r.node)?, f.port(r)?))
}

/// `diff_iter_func` and `diff_ports` for a node both fabrics have.
fn compare_node(
    saved: &Fabric,
    i: usize,
    current: &Fabric,
    j: usize,
    checks: Checks,
    push: &mut impl FnMut(TopologyDiffItem),
) {
    if !(checks.links || checks.lids || checks.descriptions) {
        return;
    }
    let (a, b) = (&saved.nodes[i], &current.nodes[j]);
    let mut header = false;
    if (checks.lids && a.lid != b.lid)
        || (checks.descriptions && a.description_bytes() != b.description_bytes())
    {
        push(TopologyDiffItem::Changed {
            saved: i,
            current: j,
        });
        header = true;
    }
    let mut need_header = |push: &mut dyn FnMut(TopologyDiffItem)| {
        if !header {
            push(TopologyDiffItem::Header { saved: i });
            header = true;
        }
    };
    if a.num_ports != b.num_ports {
        need_header(push);
        push(TopologyDiffItem::NumPorts {
            saved: i,
            current: j,
        });
        return;
    }
    if !(checks.links || checks.lids) {
        return;
    }
    for number in 1..=a.num_ports {
        let (pa, pb) = (a.port(number), b.port(number));
        let (ra, rb) = (
            pa.and_then(|p| peer(saved, p)),
            pb.and_then(|p| peer(current, p)),
        );
        let (linked_a, linked_b) = (
            pa.is_some_and(|p| p.remote.is_some()),
            pb.is_some_and(|p| p.remote.is_some()),
        );
        let (mut out_a, mut out_b) = (false, false);
        if checks.links {
            match (pa, pb) {
                (Some(_), None) => out_a = true,
                (None, Some(_)) => out_b = true,
                (Some(x), Some(y)) => {
                    if linked_a && !linked_b {
                        out_a = true;
                    } else if !linked_a && linked_b {
                        out_b = true;
                    } else if x.guid != y.guid
                        || matches!((ra, rb), (Some((_, u)), Some((_, v))) if u.guid != v.guid)
                    {
                        out_a = true;
                        out_b = true;
                    }
                }
                (None, None) => {}
            }
        }
        if let (Some(x), Some(y)) = (pa, pb) {
            let mut both = checks.lids && x.lid != y.lid;
            if let (Some((na, qa)), Some((nb, qb))) = (ra, rb) {
                both |= checks.links
                    && checks.descriptions
                    && na.description_bytes() != nb.description_bytes();
                both |= checks.links && checks.lids && qa.lid != qb.lid;
            }
            if both {
                out_a = true;
                out_b = true;
            }
        }
        // A port without a peer has no line (C would dereference the missing link and
        // crash; a topology read from text lacks a switch's unlinked ports, so there it
        // happens without a real difference): no header for it either.
        for (out, side, node) in [
            (out_a && ra.is_some(), Side::Saved, i),
            (out_b && rb.is_some(), Side::Current, j),
        ] {
            if out {
                need_header(push);
                push(TopologyDiffItem::Port {
                    side,
                    node,
                    port: number,
                });
            }
        }
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
    fn diffcheck_keys_as_c_reads_them() {
        let lid = Checks::parse_keys_exact("LID").unwrap();
        assert_eq!(
            lid,
            Checks {
                lids: true,
                ..Checks::NONE
            }
        );
        assert_eq!(Checks::parse_keys_exact("").unwrap(), Checks::NONE);
        assert_eq!(Checks::parse_keys_exact(",,").unwrap(), Checks::NONE);
        assert_eq!(
            Checks::parse_keys_exact("sw,ca,router,port").unwrap(),
            Checks::C_DEFAULT
        );
        assert!(Checks::parse_keys_exact("sw,bogus")
            .unwrap_err()
            .contains("bogus"));
        // This crate's reading: every node type when none is named; nothing given = all.
        let ours = Checks::parse_keys("lid").unwrap();
        assert!(ours.switches && ours.cas && ours.routers && ours.lids && !ours.links);
        assert_eq!(Checks::parse_keys("").unwrap(), Checks::ALL);
        assert_eq!(Checks::NONE.or_all_types(), Checks::ALL);
    }

    fn keys(k: &str) -> Checks {
        Checks::parse_keys_exact(k).unwrap()
    }

    fn items(saved: &Fabric, current: &Fabric, k: &str) -> Vec<(NodeType, TopologyDiffItem)> {
        topology_diff(saved, current, keys(k))
            .into_iter()
            .map(|l| (l.pass, l.item))
            .collect()
    }

    fn c_text(saved: &Fabric, current: &Fabric, k: &str) -> String {
        current.to_ibnetdiscover_diff(saved, keys(k), &crate::WriteOptions::default())
    }

    use TopologyDiffItem::{Changed, Header, NumPorts, Only, Port as PortLine};
    const SW: NodeType = NodeType::Switch;
    const CA: NodeType = NodeType::ChannelAdapter;

    const SW_HEADER: &str = "\nvendid=0x0\ndevid=0x0\nsysimgguid=0x200\nswitchguid=0x200(200)\n\
        Switch\t4 \"S-0000000000000200\"\t\t# \"sw \"one\"\" enhanced port 0 lid 1 lmc 0\n";

    #[test]
    fn topology_diff_same_fabric_is_empty() {
        let f = fabric();
        for k in [
            "sw,ca,router,port",
            "sw,ca,router,port,lid,nodedesc",
            "sw",
            "",
        ] {
            assert!(items(&f, &f, k).is_empty(), "{k}");
        }
    }

    #[test]
    fn topology_diff_node_removed() {
        let old = fabric();
        let mut new = fabric();
        new.nodes[0].port_mut(2).unwrap().remote = None;
        new.nodes.remove(2);
        new.validate().unwrap();
        assert_eq!(
            items(&old, &new, "sw,ca,router,port"),
            [
                (SW, Header { saved: 0 }),
                (
                    SW,
                    PortLine {
                        side: Side::Saved,
                        node: 0,
                        port: 2
                    }
                ),
                (
                    CA,
                    Only {
                        side: Side::Saved,
                        node: 2
                    }
                ),
            ]
        );
        assert_eq!(
            c_text(&old, &new, "sw,ca,router,port"),
            format!(
                "{SW_HEADER}< [2]\t\"H-0000000000000020\"[1](21) \t\t# \"host1 HCA-1\" lid 3 4xQDR\n\
                 \n< vendid=0x0\n< devid=0x0\n< caguid=0x20\n\
                 < Ca\t2 \"H-0000000000000020\"\t\t# \"host1 HCA-1\"\n\
                 < [1](21) \t\"S-0000000000000200\"[2]\t\t# lid 3 lmc 0 \"sw \"one\"\" lid 1 4xQDR\n"
            )
        );
        // Reversed: the same from the current side; the node only in the second pass.
        let rev = items(&new, &old, "sw,ca,router,port");
        assert_eq!(
            rev.last(),
            Some(&(
                CA,
                Only {
                    side: Side::Current,
                    node: 2
                }
            ))
        );
        assert!(c_text(&new, &old, "").is_empty(), "no node type, nothing");
        // Node types alone: the vanished node, not the switch's port.
        assert_eq!(items(&old, &new, "sw,ca").len(), 1);
        assert!(items(&old, &new, "sw").is_empty());
    }

    #[test]
    fn topology_diff_lids() {
        let old = fabric();
        let mut new = fabric();
        new.nodes[1].port_mut(1).unwrap().lid = 42;
        assert!(
            items(&old, &new, "sw,ca,port").is_empty(),
            "LIDs not checked"
        );
        let ca_port = |side| PortLine {
            side,
            node: 1,
            port: 1,
        };
        assert_eq!(
            items(&old, &new, "ca,lid"),
            [
                (CA, Header { saved: 1 }),
                (CA, ca_port(Side::Saved)),
                (CA, ca_port(Side::Current))
            ]
        );
        // port and lid: the switch's port to it too (the peer's LID).
        let sw_port = |side| PortLine {
            side,
            node: 0,
            port: 1,
        };
        assert_eq!(
            items(&old, &new, "sw,port,lid"),
            [
                (SW, Header { saved: 0 }),
                (SW, sw_port(Side::Saved)),
                (SW, sw_port(Side::Current))
            ]
        );
        // The switch's own LID: its header with both detail lines; its unlinked ports 3, 4
        // (whose LID is the switch's) have no line (C crashes there).
        let mut new = fabric();
        new.nodes[0].lid = 7;
        for p in &mut new.nodes[0].ports {
            p.lid = 7;
        }
        let got = items(&old, &new, "sw,lid");
        assert_eq!(
            got[0],
            (
                SW,
                Changed {
                    saved: 0,
                    current: 0
                }
            )
        );
        assert_eq!(got.len(), 5, "{got:?}"); // ports 1 and 2 from both sides
        let text = c_text(&old, &new, "sw,lid");
        assert!(
            text.starts_with(
                "\nvendid=0x0\ndevid=0x0\nsysimgguid=0x200\nswitchguid=0x200(200)\n\
             < Switch\t4 \"S-0000000000000200\"\t\t# \"sw \"one\"\" enhanced port 0 lid 1 lmc 0\n\
             > Switch\t4 \"S-0000000000000200\"\t\t# \"sw \"one\"\" enhanced port 0 lid 7 lmc 0\n\
             < [1]\t"
            ),
            "{text}"
        );
    }

    #[test]
    fn topology_diff_descriptions_and_numports() {
        let old = fabric();
        let mut new = fabric();
        new.nodes[2].description = "renamed".into();
        assert!(items(&old, &new, "sw,ca,port").is_empty());
        assert_eq!(
            items(&old, &new, "ca,nodedesc"),
            [(
                CA,
                Changed {
                    saved: 2,
                    current: 2
                }
            )]
        );
        assert_eq!(
            c_text(&old, &new, "ca,nodedesc"),
            "\nvendid=0x0\ndevid=0x0\ncaguid=0x20\n\
             < Ca\t2 \"H-0000000000000020\"\t\t# \"host1 HCA-1\"\n\
             > Ca\t2 \"H-0000000000000020\"\t\t# \"renamed\"\n"
        );
        // port and nodedesc: the switch's port to it (the peer's description).
        assert_eq!(items(&old, &new, "sw,port,nodedesc").len(), 3);
        let mut new = fabric();
        new.nodes[2].num_ports = 3;
        assert_eq!(
            items(&old, &new, "ca,port"),
            [
                (CA, Header { saved: 2 }),
                (
                    CA,
                    NumPorts {
                        saved: 2,
                        current: 2
                    }
                )
            ]
        );
        assert!(c_text(&old, &new, "ca,port").ends_with("\n< numports = 2\n> numports = 3\n"));
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
