//! The topology model: what libibnetdisc (rdma-core 44, `libibnetdisc/ibnetdisc.c`) records
//! about a fabric, and so everything the C `ibnetdiscover` prints in any of its modes.
//!
//! # Node order
//!
//! libibnetdisc *prepends* every node it creates to its all-nodes list and to the list of its
//! type (`create_node`: `rc->next = fabric->nodes; fabric->nodes = rc;`, `add_to_type_list`
//! likewise). `ibnd_iter_nodes` walks the all-nodes list and `ibnd_iter_nodes_type` one type
//! list, so both yield nodes **newest first**: the reverse of the order in which NodeInfo
//! responses created them. [`Fabric::nodes`] keeps that iteration order: index 0 is the node
//! discovered last, the last index is the start node. Writing nodes in `Vec` order (all, or
//! filtered by type) therefore reproduces the C output. A discoverer that finds nodes in
//! discovery order builds the `Vec` with [`Fabric::add_discovered`], which inserts at the
//! front and fixes up the indices.
//!
//! # What is optional
//!
//! Ports appear in [`Node::ports`] only when libibnetdisc created them: a CA or router port
//! exists only if discovery arrived through it (a CA's other, unlinked, ports are never
//! queried); a switch has port 0 plus every port whose PortInfo answered. A port whose
//! [`Port::remote`] is `None` is unlinked (dead, down, or its peer did not answer). A node
//! whose queries failed part-way is kept, with [`Node::queried`] saying what is missing, so
//! discovery can report partial results.

use std::collections::HashMap;

use ibmad::{DrPath, NodeType, PhysPortState, PortState};
use serde::{Deserialize, Serialize};

/// PortInfo.CapabilityMask bit that says the LinkSpeedExt fields are valid
/// ([`ibmad::attr::cap::IS_EXTENDED_SPEEDS_SUPPORTED`]).
pub use ibmad::attr::cap::IS_EXTENDED_SPEEDS_SUPPORTED as CAP_HAS_EXT_SPEEDS;

/// Bit 0 of the Mellanox ExtendedPortInfo LinkSpeedActive: FDR10 ([`ibmad::attr::MLNX_SPEED_FDR10`]).
pub use ibmad::attr::MLNX_SPEED_FDR10;

/// A whole discovered fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fabric {
    /// Nodes in libibnetdisc's iteration order (newest first; see the module docs).
    pub nodes: Vec<Node>,
    /// Where discovery started: the `# Initiated from node … port …` header.
    pub from: Option<Origin>,
    /// `fabric->maxhops_discovered` (printed by `ibnetdiscover -m`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hops_discovered: Option<u32>,
    /// `fabric->total_mads_used` (printed by `ibnetdiscover -m`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_mads_used: Option<u32>,
    /// Chassis found by libibnetdisc's grouping (`fabric->chassis`, in its list order), used
    /// by `ibnetdiscover -g`. Empty when no node belongs to a numbered chassis.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chassis: Vec<Chassis>,
    /// What `ibnetdiscover -s` prints while discovering: one record per NodeInfo response,
    /// in arrival order. Empty when not recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<Progress>,
}

/// The start of discovery (`fabric->from_node`, `fabric->from_portnum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Index of the start node in [`Fabric::nodes`].
    pub node: usize,
    /// The local port number discovery went out of.
    pub port: u8,
}

/// A reference to one port of one node: (index into [`Fabric::nodes`], port number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortRef {
    /// Index of the node in [`Fabric::nodes`].
    pub node: usize,
    /// Port number on that node.
    pub port: u8,
}

/// One node (`ibnd_node_t`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// NodeInfo.NodeType.
    #[serde(with = "serde_node_type")]
    pub node_type: NodeType,
    /// NodeInfo.NumPorts (physical ports; a switch also has port 0).
    pub num_ports: u8,
    /// NodeInfo.NodeGUID.
    #[serde(with = "serde_guid")]
    pub guid: u64,
    /// NodeInfo.SystemImageGUID (0: none; `ibnetdiscover` then prints no `sysimgguid=` line).
    #[serde(with = "serde_guid")]
    pub system_image_guid: u64,
    /// NodeInfo.PortGUID of the NodeInfo that created the node: a switch's port 0 GUID, or
    /// the GUID of the CA port discovery first reached (printed in `switchguid=0x…(…)` and
    /// in the `Initiated from … port …` header).
    #[serde(with = "serde_guid")]
    pub port_guid: u64,
    /// NodeInfo.LocalPortNum of that NodeInfo (the port it arrived through).
    pub local_port: u8,
    /// NodeInfo.VendorID (24 bits).
    pub vendor_id: u32,
    /// NodeInfo.DeviceID.
    pub device_id: u16,
    /// NodeInfo.Revision.
    pub revision: u32,
    /// NodeDescription: the text up to the first NUL (bytes that are not UTF-8 replaced by
    /// U+FFFD; see [`Node::description_from_bytes`]). Empty if it was never received.
    pub description: String,
    /// A switch's port 0 LID (`node->smalid`; 0 for CAs and routers).
    pub lid: u16,
    /// A switch's port 0 LMC (`node->smalmc`).
    pub lmc: u8,
    /// SwitchInfo.EnhancedPort0 (`node->smaenhsp0`; `enhanced port 0` vs `base port 0`).
    pub enhanced_port0: bool,
    /// The directed route by which the node was first found (`node->path_portid`).
    pub path: Route,
    /// The ports libibnetdisc created, in increasing port number (see the module docs).
    pub ports: Vec<Port>,
    /// Which of the per-node queries were answered.
    #[serde(default, skip_serializing_if = "Queried::is_complete")]
    pub queried: Queried,
    /// Chassis membership (for `ibnetdiscover -g`), if the node is in a numbered chassis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chassis: Option<NodeChassis>,
    /// The attribute data as received, when known (discovery and the ibnetdisc cache fill
    /// it; the text and JSON forms do not carry it). See [`RawNode`].
    #[serde(skip)]
    pub raw: Option<Box<RawNode>>,
}

/// The SMP attribute data libibnetdisc keeps verbatim for a node (`node->info`,
/// `node->switchinfo`, `node->nodedesc`) and its ibnetdisc cache stores
/// ([`crate::cache`]). The model's fields are decoded from these; the cache writer writes
/// them back unchanged, so a fabric read from a cache (or discovered) is cached again with
/// the same bytes. Without it the writer rebuilds the bytes from the model's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawNode {
    /// NodeInfo as received (the one that created the node).
    pub node_info: [u8; 64],
    /// SwitchInfo as received (zeros for CAs and routers, or if it never arrived).
    pub switch_info: [u8; 64],
    /// NodeDescription as received (zeros if it never arrived).
    pub node_desc: [u8; 64],
}

impl Default for RawNode {
    fn default() -> Self {
        RawNode {
            node_info: [0; 64],
            switch_info: [0; 64],
            node_desc: [0; 64],
        }
    }
}

/// The per-node queries after NodeInfo and whether each was answered. A node with a field
/// `false` was seen (its NodeInfo arrived) but not fully queried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queried {
    /// NodeDescription arrived.
    pub node_description: bool,
    /// SwitchInfo arrived (switches only; `true` for other nodes).
    pub switch_info: bool,
    /// PortInfo arrived for every port discovery needed (switch: 0..=N; CA: the port
    /// reached).
    pub port_info: bool,
}

impl Default for Queried {
    fn default() -> Self {
        Queried {
            node_description: true,
            switch_info: true,
            port_info: true,
        }
    }
}

impl Queried {
    /// Every query was answered.
    pub fn is_complete(&self) -> bool {
        self.node_description && self.switch_info && self.port_info
    }
}

/// How a node was reached (`ib_portid_t` of a directed-route SMP, as libmad's `portid2str`
/// prints it: `DR path slid 0; dlid 0; 0,1,8`). Discovery from the local port is purely
/// directed (no LID-routed first part), which is all `ibnetdiscover` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Route {
    /// DrSLID.
    pub slid: u16,
    /// DrDLID.
    pub dlid: u16,
    /// The output port of each hop.
    #[serde(with = "serde_dr_path")]
    pub path: DrPath,
}

/// One port (`ibnd_port_t`), with the PortInfo fields the output needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Port number (0 = a switch's management port).
    pub number: u8,
    /// Port GUID. libibnetdisc gives every switch port the switch's port 0 GUID.
    #[serde(with = "serde_guid")]
    pub guid: u64,
    /// Base LID (a switch port: the switch's port 0 LID).
    pub lid: u16,
    /// LMC (a switch port: port 0's).
    pub lmc: u8,
    /// PortInfo.PortState.
    #[serde(with = "serde_port_state")]
    pub state: PortState,
    /// PortInfo.PortPhysicalState.
    #[serde(with = "serde_phys_state")]
    pub phys_state: PhysPortState,
    /// PortInfo.LinkWidthActive, the raw code (1 1x, 2 4x, 4 8x, 8 12x, 16 2x).
    pub width: u8,
    /// PortInfo.LinkSpeedActive, the raw code (1 SDR, 2 DDR, 4 QDR).
    pub speed: u8,
    /// PortInfo.LinkSpeedExtActive, the raw code (0 none, 1 FDR, 2 EDR, 4 HDR, 8 NDR).
    pub speed_ext: u8,
    /// Mellanox ExtendedPortInfo.LinkSpeedActive (bit 0 = FDR10; 0 if not queried).
    #[serde(default)]
    pub mlnx_speed: u8,
    /// PortInfo.CapabilityMask (a switch's ports other than 0 are judged by port 0's; see
    /// [`Fabric::port_speed_ext`]).
    pub capability_mask: u32,
    /// PortInfo.VLCap.
    pub vl_cap: u8,
    /// Whether PortInfo arrived (`false`: the port was created from a NodeInfo only; the
    /// PortInfo fields are 0).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub has_info: bool,
    /// The external port number in a chassis (`port->ext_portnum`; 0 = none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ext_port: u8,
    /// The port at the other end of the link, if linked.
    pub remote: Option<PortRef>,
    /// PortInfo as received (`port->info`), when known (discovery and the ibnetdisc cache
    /// fill it; see [`RawNode`] for why).
    #[serde(skip)]
    pub raw_info: Option<Box<[u8; 64]>>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// A node's chassis membership, as libibnetdisc's `group_nodes` fills it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChassis {
    /// The chassis number (`node->chassis->chassisnum`, ≥ 1).
    pub number: u8,
    /// `ibnd_get_chassis_type` (e.g. `ISR9288`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chassis_type: Option<String>,
    /// `ibnd_get_chassis_slot_str` (e.g. `Line 3 Chip 1`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
}

/// One chassis (`ibnd_chassis_t`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chassis {
    /// Chassis number (0 = not a real chassis; `ibnetdiscover -g` skips those).
    pub number: u8,
    /// Chassis GUID (`ibnd_get_chassis_guid`; 0 = none).
    #[serde(with = "serde_guid")]
    pub guid: u64,
    /// Member nodes in the chassis's list order (`ch->nodes`), as indices.
    pub nodes: Vec<usize>,
    /// Spine nodes by slot (index 0 unused; Voltaire chassis only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spines: Vec<Option<usize>>,
    /// Line nodes by slot (index 0 unused; Voltaire chassis only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Option<usize>>,
}

/// One `ibnetdiscover -s` progress record (libibnetdisc's `dump_endnode`): a NodeInfo
/// response, printed as `<route> -> new|known <type> {<guid>} portnum <p> lid <a>-<b> "<desc>"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The route the NodeInfo came back on.
    pub route: Route,
    /// The node was new (else already known).
    pub new: bool,
    /// The node (index in [`Fabric::nodes`]).
    pub node: usize,
    /// The port number printed (0 for switches).
    pub port: u8,
    /// The port's base LID at that moment.
    pub lid: u16,
    /// The port's LMC at that moment.
    pub lmc: u8,
    /// The node description at that moment (empty for a new node).
    pub description: String,
}

/// One link: both ends, `a < b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    /// The lower end.
    pub a: PortRef,
    /// The higher end.
    pub b: PortRef,
}

impl Node {
    /// A node with the given identity and everything else empty (no ports, all queries
    /// answered, no route).
    pub fn new(node_type: NodeType, num_ports: u8, guid: u64) -> Node {
        Node {
            node_type,
            num_ports,
            guid,
            system_image_guid: 0,
            port_guid: 0,
            local_port: 0,
            vendor_id: 0,
            device_id: 0,
            revision: 0,
            description: String::new(),
            lid: 0,
            lmc: 0,
            enhanced_port0: false,
            path: Route::default(),
            ports: Vec::new(),
            queried: Queried::default(),
            chassis: None,
            raw: None,
        }
    }

    /// A node from the NodeInfo that found it over `path`, as libibnetdisc's `create_node`
    /// records it (no ports yet; description, LID and SwitchInfo come from later queries).
    pub fn from_node_info(info: &ibmad::NodeInfo, path: Route) -> Node {
        let mut n = Node::new(info.node_type, info.num_ports, info.node_guid);
        n.system_image_guid = info.system_image_guid;
        n.port_guid = info.port_guid;
        n.local_port = info.local_port_num;
        n.vendor_id = info.vendor_id;
        n.device_id = info.device_id;
        n.revision = info.revision;
        n.path = path;
        n
    }

    /// Records PortInfo for port `number` as libibnetdisc's `recv_port_info` does: creates
    /// the port if needed (a new port gets the node's NodeInfo PortGUID), copies the fields,
    /// and for a switch takes port 0's LID/LMC as the node's (`smalid`/`smalmc`) and gives
    /// ports 1..N the node's LID/LMC. Returns the port.
    pub fn apply_port_info(&mut self, number: u8, info: &ibmad::PortInfo) -> &mut Port {
        let (mut lid, mut lmc) = (info.lid, info.lmc);
        if number == 0 {
            self.lid = lid;
            self.lmc = lmc;
        } else if self.is_switch() {
            lid = self.lid;
            lmc = self.lmc;
        }
        let guid = self.port_guid;
        let mut port = self
            .port(number)
            .cloned()
            .unwrap_or_else(|| Port::new(number, guid));
        port.lid = lid;
        port.lmc = lmc;
        port.state = info.port_state;
        port.phys_state = info.port_physical_state;
        port.width = u8::from(info.link_width_active);
        port.speed = info.link_speed_active;
        port.speed_ext = info.link_speed_ext_active;
        port.capability_mask = info.capability_mask;
        port.vl_cap = info.vl_cap;
        port.has_info = true;
        self.set_port(port)
    }

    /// The 64 NodeDescription bytes libibnetdisc keeps (`node->nodedesc`): as received when
    /// known ([`RawNode::node_desc`]), else the description's bytes padded with NULs.
    pub fn description_bytes(&self) -> [u8; 64] {
        if let Some(raw) = &self.raw {
            return raw.node_desc;
        }
        let mut b = [0; 64];
        let d = self.description.as_bytes();
        let len = d.len().min(64);
        b[..len].copy_from_slice(&d[..len]);
        b
    }

    /// Cleans the description in place as C's `clean_nodedesc(node->nodedesc)` does (which
    /// `ibnetdiscover`'s topology output runs on every node it prints, so that its cache
    /// then holds the cleaned bytes): the raw bytes and the text.
    pub fn clean_description(&mut self) {
        if let Some(raw) = &mut self.raw {
            crate::ibnetdiscover::clean_description_bytes(&mut raw.node_desc);
        }
        self.description = crate::ibnetdiscover::clean_description(&self.description).into_owned();
    }

    /// The NodeDescription text from the raw attribute bytes: up to the first NUL, at most
    /// 64 bytes, lossy UTF-8.
    pub fn description_from_bytes(raw: &[u8]) -> String {
        let raw = &raw[..raw.len().min(64)];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }

    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeType::Switch
    }

    /// The port numbered `number`, if libibnetdisc created it.
    pub fn port(&self, number: u8) -> Option<&Port> {
        self.ports
            .binary_search_by_key(&number, |p| p.number)
            .ok()
            .map(|i| &self.ports[i])
    }

    /// The port numbered `number`, mutably.
    pub fn port_mut(&mut self, number: u8) -> Option<&mut Port> {
        self.ports
            .binary_search_by_key(&number, |p| p.number)
            .ok()
            .map(|i| &mut self.ports[i])
    }

    /// Inserts or replaces the port with `port.number`, keeping [`Node::ports`] sorted;
    /// returns it.
    pub fn set_port(&mut self, port: Port) -> &mut Port {
        let i = match self.ports.binary_search_by_key(&port.number, |p| p.number) {
            Ok(i) => {
                self.ports[i] = port;
                i
            }
            Err(i) => {
                self.ports.insert(i, port);
                i
            }
        };
        &mut self.ports[i]
    }

    /// The LID `ibnetdiscover` shows for `port` of this node: a switch's port 0 LID for any
    /// of its ports, else the port's own base LID (0 if the port is unknown).
    pub fn shown_lid(&self, port: u8) -> u16 {
        if self.is_switch() {
            self.lid
        } else {
            self.port(port).map_or(0, |p| p.lid)
        }
    }
}

impl Port {
    /// A port with PortInfo fields 0, unlinked.
    pub fn new(number: u8, guid: u64) -> Port {
        Port {
            number,
            guid,
            lid: 0,
            lmc: 0,
            state: PortState::NoChange,
            phys_state: PhysPortState::NoChange,
            width: 0,
            speed: 0,
            speed_ext: 0,
            mlnx_speed: 0,
            capability_mask: 0,
            vl_cap: 0,
            has_info: true,
            ext_port: 0,
            remote: None,
            raw_info: None,
        }
    }
}

impl Fabric {
    /// The node whose NodeGUID is `guid`.
    pub fn node_by_guid(&self, guid: u64) -> Option<&Node> {
        self.index_of_guid(guid).map(|i| &self.nodes[i])
    }

    /// The index of the node whose NodeGUID is `guid` (a linear scan; see
    /// [`Fabric::guid_index`] for many look-ups).
    pub fn index_of_guid(&self, guid: u64) -> Option<usize> {
        self.nodes.iter().position(|n| n.guid == guid)
    }

    /// NodeGUID → index, for every node.
    pub fn guid_index(&self) -> HashMap<u64, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.guid, i))
            .collect()
    }

    /// The port with GUID `guid` (first match in node order): (node index, port).
    pub fn port_by_guid(&self, guid: u64) -> Option<(usize, &Port)> {
        self.nodes.iter().enumerate().find_map(|(i, n)| {
            n.ports
                .iter()
                .find(|p| p.guid == guid && (p.number == 0 || !n.is_switch()))
                .map(|p| (i, p))
        })
    }

    /// The port `r` refers to, if it exists.
    pub fn port(&self, r: PortRef) -> Option<&Port> {
        self.nodes.get(r.node)?.port(r.port)
    }

    /// The start node, if recorded.
    pub fn from_node(&self) -> Option<&Node> {
        self.from.and_then(|f| self.nodes.get(f.node))
    }

    /// Nodes of one type, in iteration order.
    pub fn nodes_of_type(&self, node_type: NodeType) -> impl Iterator<Item = (usize, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.node_type == node_type)
    }

    /// Every link once (the end with the lower (node, port) first), in that order.
    pub fn links(&self) -> Vec<Link> {
        let mut links: Vec<Link> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.ports.iter().filter_map(move |p| {
                    let here = PortRef {
                        node: i,
                        port: p.number,
                    };
                    p.remote
                        .filter(|r| here < *r)
                        .map(|r| Link { a: here, b: r })
                })
            })
            .collect();
        links.sort();
        links
    }

    /// The LinkSpeedExtActive code `ibnetdiscover` uses for `port` of `node`: the port's
    /// `speed_ext` if the capability mask that counts says extended speeds are supported
    /// (a switch port: port 0's mask, and 0 when the switch has no port 0; a CA port: its
    /// own), else 0.
    pub fn port_speed_ext(node: &Node, port: &Port) -> u8 {
        let mask = if node.is_switch() {
            match node.port(0) {
                Some(p0) => p0.capability_mask,
                None => return 0,
            }
        } else {
            port.capability_mask
        };
        if mask & CAP_HAS_EXT_SPEEDS != 0 {
            port.speed_ext
        } else {
            0
        }
    }

    /// Adds a node found by discovery (in discovery order): it becomes index 0, as
    /// libibnetdisc prepends, and every stored index (remote ports, `from`, chassis,
    /// progress) is shifted by one. Returns the new node's index (0).
    ///
    /// This is O(size of the fabric); a discoverer that finds many nodes can instead push
    /// in discovery order and call [`Fabric::reverse_nodes`] once at the end.
    pub fn add_discovered(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        let n = self.nodes.len();
        // Rotating the new last node to the front maps old i to i + 1.
        self.nodes.rotate_right(1);
        self.remap_indices(|i| if i + 1 == n { 0 } else { i + 1 }, 1..n);
        0
    }

    /// Reverses [`Fabric::nodes`] and every stored index: turns a fabric built in discovery
    /// order (start node first) into libibnetdisc's iteration order (newest first), and back.
    pub fn reverse_nodes(&mut self) {
        let n = self.nodes.len();
        self.nodes.reverse();
        self.remap_indices(|i| n - 1 - i, 0..n);
    }

    /// Applies `map` to every stored node index of the nodes in `which`, and to `from`,
    /// chassis and progress.
    fn remap_indices(&mut self, map: impl Fn(usize) -> usize, which: std::ops::Range<usize>) {
        for node in &mut self.nodes[which] {
            for port in &mut node.ports {
                if let Some(r) = &mut port.remote {
                    r.node = map(r.node);
                }
            }
        }
        if let Some(f) = &mut self.from {
            f.node = map(f.node);
        }
        for ch in &mut self.chassis {
            for i in ch
                .nodes
                .iter_mut()
                .chain(ch.spines.iter_mut().flatten())
                .chain(ch.lines.iter_mut().flatten())
            {
                *i = map(*i);
            }
        }
        for p in &mut self.progress {
            p.node = map(p.node);
        }
    }

    /// Links `a` and `b` (both must exist), unlinking whatever either was linked to before,
    /// as libibnetdisc's `link_ports`. Returns `false` (and changes nothing) if a port is
    /// missing.
    pub fn link(&mut self, a: PortRef, b: PortRef) -> bool {
        if self.port(a).is_none() || self.port(b).is_none() {
            return false;
        }
        for end in [a, b] {
            let old = self.nodes[end.node].port(end.port).and_then(|p| p.remote);
            if let Some(old) = old {
                if let Some(p) = self
                    .nodes
                    .get_mut(old.node)
                    .and_then(|n| n.port_mut(old.port))
                {
                    p.remote = None;
                }
            }
        }
        if let Some(p) = self.nodes[a.node].port_mut(a.port) {
            p.remote = Some(b);
        }
        if let Some(p) = self.nodes[b.node].port_mut(b.port) {
            p.remote = Some(a);
        }
        true
    }

    /// Checks the invariants the writers rely on: indices in range, ports sorted and unique,
    /// links symmetric. The parsers and [`crate::json`] call it; a hand-built model can too.
    ///
    /// # Errors
    /// The first violation found, described.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len();
        if let Some(f) = self.from {
            if f.node >= n {
                return Err(format!("from node {} out of range ({n} nodes)", f.node));
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            for w in node.ports.windows(2) {
                if w[0].number >= w[1].number {
                    return Err(format!(
                        "node {i} ({:#x}): ports not in increasing order ({} then {})",
                        node.guid, w[0].number, w[1].number
                    ));
                }
            }
            for p in &node.ports {
                if let Some(r) = p.remote {
                    let back = self
                        .nodes
                        .get(r.node)
                        .ok_or_else(|| {
                            format!(
                                "node {i} port {}: remote node {} out of range",
                                p.number, r.node
                            )
                        })?
                        .port(r.port)
                        .ok_or_else(|| {
                            format!(
                                "node {i} port {}: remote port {}/{} does not exist",
                                p.number, r.node, r.port
                            )
                        })?;
                    if back.remote
                        != Some(PortRef {
                            node: i,
                            port: p.number,
                        })
                    {
                        return Err(format!(
                            "node {i} port {}: link to {}/{} is not linked back",
                            p.number, r.node, r.port
                        ));
                    }
                }
            }
        }
        for ch in &self.chassis {
            for &i in ch
                .nodes
                .iter()
                .chain(ch.spines.iter().flatten())
                .chain(ch.lines.iter().flatten())
            {
                if i >= n {
                    return Err(format!("chassis {}: node {i} out of range", ch.number));
                }
            }
        }
        for p in &self.progress {
            if p.node >= n {
                return Err(format!("progress record: node {} out of range", p.node));
            }
        }
        Ok(())
    }
}

/// GUIDs in JSON: `"0x%016x"` strings (a bare number is accepted too).
pub(crate) mod serde_guid {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;
    use std::fmt;

    /// Serializes `guid` as `"0x%016x"`.
    pub fn serialize<S: Serializer>(guid: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{guid:#018x}"))
    }

    /// Accepts `"0x…"` (hex) strings and plain integers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = u64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a GUID as a \"0x…\" hex string")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
                Ok(v)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
                let hex = v
                    .strip_prefix("0x")
                    .or_else(|| v.strip_prefix("0X"))
                    .ok_or_else(|| E::custom(format!("GUID {v:?} does not start with 0x")))?;
                if hex.is_empty() || hex.len() > 16 {
                    return Err(E::custom(format!(
                        "GUID {v:?}: 1 to 16 hex digits expected"
                    )));
                }
                u64::from_str_radix(hex, 16)
                    .map_err(|_| E::custom(format!("GUID {v:?} is not hex")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A [`DrPath`] in JSON: its text form, `"0,1,8"`.
mod serde_dr_path {
    use ibmad::DrPath;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &DrPath, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(p)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DrPath, D::Error> {
        let s = String::deserialize(d)?;
        DrPath::parse(&s).map_err(|e| serde::de::Error::custom(format!("DR path {s:?}: {e}")))
    }
}

/// Code enums in JSON: their name (`"Switch"`, `"Active"`, …) or, for a code without a
/// name, the number.
macro_rules! serde_code_enum {
    ($module:ident, $ty:ty, [$($name:literal => $variant:expr),+ $(,)?]) => {
        mod $module {
            use serde::de::{self, Deserializer, Visitor};
            use serde::Serializer;
            use std::fmt;

            type T = $ty;

            pub fn serialize<S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
                $( if *v == $variant { return s.serialize_str($name); } )+
                s.serialize_u8(u8::from(*v))
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = T;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("one of ", $($name, " "),+ , "or a number 0..=255"))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
                        u8::try_from(v).map(T::from).map_err(|_| E::custom(format!("code {v} > 255")))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
                        $( if v == $name { return Ok($variant); } )+
                        Err(E::custom(format!("unknown name {v:?}")))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

serde_code_enum!(serde_node_type, ibmad::NodeType, [
    "CA" => ibmad::NodeType::ChannelAdapter,
    "Switch" => ibmad::NodeType::Switch,
    "Router" => ibmad::NodeType::Router,
]);

serde_code_enum!(serde_port_state, ibmad::PortState, [
    "NoChange" => ibmad::PortState::NoChange,
    "Down" => ibmad::PortState::Down,
    "Initialize" => ibmad::PortState::Initialize,
    "Armed" => ibmad::PortState::Armed,
    "Active" => ibmad::PortState::Active,
]);

serde_code_enum!(serde_phys_state, ibmad::PhysPortState, [
    "NoChange" => ibmad::PhysPortState::NoChange,
    "Sleep" => ibmad::PhysPortState::Sleep,
    "Polling" => ibmad::PhysPortState::Polling,
    "Disabled" => ibmad::PhysPortState::Disabled,
    "PortConfigurationTraining" => ibmad::PhysPortState::PortConfigurationTraining,
    "LinkUp" => ibmad::PhysPortState::LinkUp,
    "LinkErrorRecovery" => ibmad::PhysPortState::LinkErrorRecovery,
    "PhyTest" => ibmad::PhysPortState::PhyTest,
]);

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(guid: u64) -> Node {
        let mut n = Node::new(NodeType::Switch, 4, guid);
        for p in 0..=4 {
            n.set_port(Port::new(p, guid));
        }
        n
    }

    #[test]
    fn add_discovered_prepends_and_keeps_links() {
        let mut f = Fabric::default();
        f.add_discovered(sw(1));
        f.from = Some(Origin { node: 0, port: 0 });
        f.add_discovered(sw(2));
        assert!(f.link(PortRef { node: 1, port: 1 }, PortRef { node: 0, port: 1 }));
        f.add_discovered(sw(3));
        assert_eq!(
            f.nodes.iter().map(|n| n.guid).collect::<Vec<_>>(),
            [3, 2, 1]
        );
        assert_eq!(f.from.unwrap().node, 2);
        assert_eq!(
            f.nodes[1].port(1).unwrap().remote,
            Some(PortRef { node: 2, port: 1 })
        );
        f.validate().unwrap();
        f.reverse_nodes();
        assert_eq!(f.nodes[0].guid, 1);
        assert_eq!(f.from.unwrap().node, 0);
        f.validate().unwrap();
        assert_eq!(f.links().len(), 1);
    }

    #[test]
    fn node_and_port_info_fill_the_model_like_libibnetdisc() {
        let info = ibmad::NodeInfo {
            node_type: NodeType::Switch,
            num_ports: 8,
            node_guid: 0x20,
            port_guid: 0x20,
            system_image_guid: 0x21,
            vendor_id: 0x2c9,
            device_id: 0xc738,
            local_port_num: 3,
            ..Default::default()
        };
        let path = Route {
            path: DrPath::from_hops(&[1, 3]).unwrap(),
            ..Route::default()
        };
        let mut n = Node::from_node_info(&info, path);
        assert_eq!((n.guid, n.port_guid, n.local_port), (0x20, 0x20, 3));
        let p0 = ibmad::PortInfo {
            lid: 7,
            lmc: 1,
            capability_mask: CAP_HAS_EXT_SPEEDS,
            ..Default::default()
        };
        n.apply_port_info(0, &p0);
        let p5 = ibmad::PortInfo {
            lid: 99,
            link_width_active: ibmad::LinkWidth::X4,
            link_speed_active: 4,
            link_speed_ext_active: 2,
            port_state: PortState::Active,
            ..Default::default()
        };
        let p = n.apply_port_info(5, &p5).clone();
        assert_eq!((n.lid, n.lmc), (7, 1));
        assert_eq!((p.lid, p.lmc, p.guid, p.width), (7, 1, 0x20, 2));
        assert_eq!(Fabric::port_speed_ext(&n, &p), 2);
        assert_eq!(n.ports.iter().map(|p| p.number).collect::<Vec<_>>(), [0, 5]);
    }

    #[test]
    fn relinking_unlinks_the_old_peer() {
        let mut f = Fabric {
            nodes: vec![sw(1), sw(2), sw(3)],
            ..Fabric::default()
        };
        let r = |node, port| PortRef { node, port };
        assert!(f.link(r(0, 1), r(1, 1)));
        assert!(f.link(r(0, 1), r(2, 1)));
        assert_eq!(f.nodes[1].port(1).unwrap().remote, None);
        assert!(!f.link(r(0, 9), r(2, 1)));
        f.validate().unwrap();
    }
}
