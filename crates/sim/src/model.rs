//! The fabric: nodes, their ports and the links between them, with the state a subnet
//! manager programs (LIDs, port states). Built by [`Builder`], which checks the IBA limits
//! as it goes; nodes are found by index, GUID or id in O(1).

use std::collections::HashMap;

use ibmad::{NodeType, PhysPortState, PortState};

use crate::{Error, Result};

/// Most physical ports a switch may have (IBA Vol 1, 14.2.5.3: port numbers are 8 bits and
/// 255 is reserved; a 255-port switch hangs opensm).
pub const MAX_SWITCH_PORTS: u8 = 254;
/// Highest unicast LID.
pub const MAX_UNICAST_LID: u16 = 0xbfff;

/// A node's index in its [`Fabric`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeIdx(pub u32);

/// Where a node was defined, for error messages (a netfile and line, or a generator).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The file, if the node came from one.
    pub file: Option<String>,
    /// 1-based line (0: none).
    pub line: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.line) {
            (Some(file), 0) => write!(f, "{file}"),
            (Some(file), line) => write!(f, "{file}:{line}"),
            (None, 0) => f.write_str("(built)"),
            (None, line) => write!(f, "line {line}"),
        }
    }
}

/// What a new node is, before it is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Switch, CA or router.
    pub node_type: NodeType,
    /// The node's id (a netfile's quoted name), unique in the fabric.
    pub id: String,
    /// NodeDescription text (at most 64 bytes on the wire).
    pub description: String,
    /// Number of physical ports.
    pub num_ports: u8,
    /// Node GUID.
    pub guid: u64,
    /// System image GUID.
    pub system_image_guid: u64,
    /// NodeInfo.VendorID (24 bits).
    pub vendor_id: u32,
    /// NodeInfo.DeviceID.
    pub device_id: u16,
    /// A switch's enhanced port 0.
    pub enhanced_port0: bool,
    /// Where it was defined.
    pub origin: Origin,
}

/// One port of a node. Switch port 0 is the management port (no link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// The port number.
    pub num: u8,
    /// Port GUID (a switch's ports share the node GUID).
    pub guid: u64,
    /// The other end of the link, if any.
    pub remote: Option<(NodeIdx, u8)>,
    /// LID (a switch's external ports use port 0's).
    pub lid: u16,
    /// LID mask control.
    pub lmc: u8,
    /// PortInfo.PortState.
    pub state: PortState,
    /// PortInfo.PortPhysicalState.
    pub phys: PhysPortState,
    /// LinkWidthEnabled mask.
    pub width_enabled: u8,
    /// LinkSpeedEnabled mask.
    pub speed_enabled: u8,
    /// LinkSpeedExtEnabled mask.
    pub speed_ext_enabled: u8,
    /// Mellanox ExtPortInfo LinkSpeedEnabled mask (bit 0: FDR10).
    pub mlnx_speed_enabled: u8,
    /// The SM's LID as this port knows it.
    pub master_sm_lid: u16,
    /// PortInfo.MasterSMSL.
    pub master_sm_sl: u8,
    /// PortInfo.GidPrefix (the subnet prefix an SM programs; 0 until then, as ibsim has it).
    pub gid_prefix: u64,
    /// PortInfo.M_Key (stored; not checked: M_Key protection is not simulated).
    pub m_key: u64,
    /// PortInfo.M_KeyLeasePeriod.
    pub m_key_lease_period: u16,
    /// PortInfo.M_KeyProtectBits.
    pub m_key_protect_bits: u8,
    /// PortInfo.NeighborMTU an SM set (`None`: the port template's).
    pub neighbor_mtu: Option<ibmad::Mtu>,
    /// PortInfo.OperationalVLs an SM set (`None`: VLCap, as ibsim starts).
    pub operational_vls: Option<u8>,
    /// PortInfo.HOQLife.
    pub hoq_life: u8,
    /// PortInfo.LinkDownDefaultState: 1 Sleep, 2 Polling (where the port's physical state
    /// goes when its link goes down other than by being disabled).
    pub link_down_default: u8,
    /// What the port has counted (the PMA's PortCounters).
    pub counters: crate::pma::Counters,
    /// PortInfo.CapabilityMask.IsSM: an SM runs behind this port ([`Fabric::set_is_sm`]).
    pub is_sm: bool,
    /// PortInfo.M_KeyViolations: SMPs refused by M_Key protection ([`crate::mkey`]).
    pub m_key_violations: u16,
    /// The P_Key table once an SM has written it (`None`: the default, 0xFFFF then zeros).
    pub pkeys: Option<Box<[u16]>>,
    /// GUIDInfo once an SM has written it: PortInfo.GUIDCap entries, index 0 unused (it is
    /// the port GUID, read-only); `None`: no GUID past index 0.
    pub guids: Option<Box<[u64]>>,
    /// SLtoVLMappingTable once an SM has written it: from this port (a switch's input port)
    /// to each output port by number (a switch's ports 0 to N; one table on a CA); `None`:
    /// ibsim's default.
    pub sl2vl: Option<Box<[ibmad::SlToVlTable]>>,
    /// VLArbitrationTable once an SM has written it, by block (Low 0-31, Low 32-63,
    /// High 0-31, High 32-63); `None`: ibsim's default.
    pub vlarb: Option<Box<[ibmad::VlArbTable; 4]>>,
}

/// A switch's forwarding state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Switch {
    /// The linear forwarding table: output port by LID (0xff: none).
    pub lft: Vec<u8>,
    /// SwitchInfo.LinearFDBTop: packets to a higher DLID are discarded.
    pub linear_fdb_top: u16,
    /// SwitchInfo.PortStateChange: a port of the switch went up or down since an SM last
    /// cleared it.
    pub port_state_change: bool,
    /// SwitchInfo.LifeTimeValue.
    pub life_time_value: u8,
    /// SwitchInfo.DefaultPort.
    pub default_port: u8,
    /// SwitchInfo.DefaultMulticastPrimaryPort.
    pub default_mcast_primary_port: u8,
    /// SwitchInfo.DefaultMulticastNotPrimaryPort.
    pub default_mcast_not_primary_port: u8,
    /// The multicast forwarding table once an SM has written it: port masks by block of 32
    /// MLIDs, then PortMask position, then MLID (`None`: every mask 0).
    pub mft: Option<Box<[u16]>>,
}

impl Switch {
    /// The output port the LFT gives `dlid`: `None` past LinearFDBTop or the table's end
    /// (the switch discards the packet).
    pub fn route(&self, dlid: u16) -> Option<u8> {
        if dlid > self.linear_fdb_top {
            return None;
        }
        self.lft.get(usize::from(dlid)).copied()
    }
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What it is, as added.
    pub spec: NodeSpec,
    /// Ports by number; index 0 is port 0 (a switch's management port, unused on a CA).
    pub ports: Vec<Port>,
    /// A switch's forwarding state.
    pub switch: Option<Switch>,
}

impl Node {
    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.spec.node_type == NodeType::Switch
    }

    /// Port `num`, if the node has it (port 0 only on a switch).
    pub fn port(&self, num: u8) -> Option<&Port> {
        if num == 0 && !self.is_switch() {
            return None;
        }
        self.ports.get(usize::from(num))
    }

    /// The LID a port answers to: a switch's ports all answer to port 0's.
    pub fn lid_of(&self, num: u8) -> u16 {
        let num = if self.is_switch() { 0 } else { num };
        self.ports.get(usize::from(num)).map_or(0, |p| p.lid)
    }
}

/// The simulated fabric.
#[derive(Debug, Clone, Default)]
pub struct Fabric {
    nodes: Vec<Node>,
    by_guid: HashMap<u64, NodeIdx>,
    by_id: HashMap<String, NodeIdx>,
    /// Seeded faults ([`crate::faults`]), when any are set.
    pub(crate) faults: Option<Box<crate::faults::Faults>>,
    /// Traps raised and not yet taken ([`crate::trap`]).
    pub(crate) traps: crate::trap::Traps,
}

impl Fabric {
    /// The nodes, by index.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// One node.
    pub fn node(&self, idx: NodeIdx) -> &Node {
        &self.nodes[idx.0 as usize]
    }

    pub(crate) fn node_mut(&mut self, idx: NodeIdx) -> &mut Node {
        &mut self.nodes[idx.0 as usize]
    }

    /// The node with this node GUID.
    pub fn by_guid(&self, guid: u64) -> Option<NodeIdx> {
        self.by_guid.get(&guid).copied()
    }

    /// The node with this id, or failing that, the first with this NodeDescription (as
    /// ibsim's `SIM_HOST` is matched).
    pub fn find(&self, id_or_description: &str) -> Option<NodeIdx> {
        self.by_id.get(id_or_description).copied().or_else(|| {
            self.nodes
                .iter()
                .position(|n| n.spec.description == id_or_description)
                .map(|i| NodeIdx(i as u32))
        })
    }

    /// The node with this id.
    pub fn find_id(&self, id: &str) -> Option<NodeIdx> {
        self.by_id.get(id).copied()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the fabric has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Builds a [`Fabric`], checking each node and link against the IBA limits as it is added.
#[derive(Debug, Default)]
pub struct Builder {
    fabric: Fabric,
}

impl Builder {
    /// An empty fabric.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Adds a node. Refused: a duplicate id or node GUID, a switch with more than
    /// [`MAX_SWITCH_PORTS`] ports, a node without ports, a GUID of 0.
    pub fn node(&mut self, spec: NodeSpec) -> Result<NodeIdx> {
        let bad = |what: String| Error::Invalid {
            origin: spec.origin.clone(),
            what,
        };
        if spec.num_ports == 0 {
            return Err(bad(format!("node {:?} has no ports", spec.id)));
        }
        if spec.node_type == NodeType::Switch && spec.num_ports > MAX_SWITCH_PORTS {
            return Err(bad(format!(
                "switch {:?} has {} ports; IBA allows at most {MAX_SWITCH_PORTS}",
                spec.id, spec.num_ports
            )));
        }
        if spec.guid == 0 {
            return Err(bad(format!("node {:?} has node GUID 0", spec.id)));
        }
        let f = &mut self.fabric;
        if let Some(other) = f.by_id.get(&spec.id) {
            return Err(bad(format!(
                "node id {:?} is already used (at {})",
                spec.id,
                f.node(*other).spec.origin
            )));
        }
        if let Some(other) = f.by_guid.get(&spec.guid) {
            return Err(bad(format!(
                "node GUID {:#018x} of {:?} is already {:?}'s (at {})",
                spec.guid,
                spec.id,
                f.node(*other).spec.id,
                f.node(*other).spec.origin
            )));
        }
        let idx = NodeIdx(u32::try_from(f.nodes.len()).map_err(|_| bad("too many nodes".into()))?);
        let switch = spec.node_type == NodeType::Switch;
        let ports = (0..=spec.num_ports)
            .map(|num| Port {
                num,
                // ibsim's rule: a switch's ports share the node GUID, a CA's are node GUID +
                // port number (wrapping).
                guid: if switch {
                    spec.guid
                } else {
                    spec.guid.wrapping_add(u64::from(num))
                },
                remote: None,
                lid: 0,
                lmc: 0,
                // Port 0 of a switch is always up (and Active from the start, as ibsim has
                // it); an unlinked port is down.
                state: if switch && num == 0 {
                    PortState::Active
                } else {
                    PortState::Down
                },
                phys: if switch && num == 0 {
                    PhysPortState::LinkUp
                } else {
                    PhysPortState::Polling
                },
                // ibsim's defaults for a port no netfile line sets (its DEFAULT_LINKWIDTH,
                // 4x, and DEFAULT_LINKSPEED, SDR).
                width_enabled: 2,
                speed_enabled: 1,
                speed_ext_enabled: 0,
                mlnx_speed_enabled: 0,
                master_sm_lid: 0,
                master_sm_sl: 0,
                gid_prefix: 0,
                m_key: 0,
                // ibsim's templates' lease period (a switch's external ports show 0: the
                // field is not theirs).
                m_key_lease_period: 4089,
                m_key_protect_bits: 0,
                neighbor_mtu: None,
                operational_vls: None,
                hoq_life: 0,
                // Polling, as ibsim's templates (and hardware) start.
                link_down_default: 2,
                counters: crate::pma::Counters::default(),
                is_sm: false,
                m_key_violations: 0,
                pkeys: None,
                guids: None,
                sl2vl: None,
                vlarb: None,
            })
            .collect();
        f.by_id.insert(spec.id.clone(), idx);
        f.by_guid.insert(spec.guid, idx);
        f.nodes.push(Node {
            spec,
            ports,
            switch: switch.then(Switch::default),
        });
        Ok(idx)
    }

    /// The fabric so far.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Mutable access to a port before the fabric is finished (widths, speeds, preset LIDs).
    pub fn port_mut(&mut self, node: NodeIdx, num: u8) -> Option<&mut Port> {
        let n = self.fabric.node_mut(node);
        if num == 0 && !n.is_switch() {
            return None;
        }
        n.ports.get_mut(usize::from(num))
    }

    /// Links `a`'s port to `b`'s. Refused: a port the node does not have, port 0, a port
    /// already linked to another port, a port linked to itself.
    pub fn link(&mut self, a: (NodeIdx, u8), b: (NodeIdx, u8), origin: &Origin) -> Result<()> {
        let f = &self.fabric;
        let name = |(n, p): (NodeIdx, u8)| format!("{:?} port {p}", f.node(n).spec.id);
        let bad = |what: String| Error::Invalid {
            origin: origin.clone(),
            what,
        };
        if a == b {
            return Err(bad(format!("{} is linked to itself", name(a))));
        }
        for end in [a, b] {
            let node = f.node(end.0);
            if end.1 == 0 || end.1 > node.spec.num_ports {
                return Err(bad(format!(
                    "{} does not exist ({} has ports 1 to {})",
                    name(end),
                    node.spec.id,
                    node.spec.num_ports
                )));
            }
        }
        for (end, other) in [(a, b), (b, a)] {
            match f.node(end.0).ports[usize::from(end.1)].remote {
                Some(r) if r == other => {}
                Some(r) => {
                    return Err(bad(format!(
                        "{} is linked to {}, not to {}",
                        name(end),
                        name(r),
                        name(other)
                    )))
                }
                None => {}
            }
        }
        for (end, other) in [(a, b), (b, a)] {
            let port = &mut self.fabric.node_mut(end.0).ports[usize::from(end.1)];
            port.remote = Some(other);
            // A linked port trains: LinkUp, and Initialize until an SM arms it.
            port.phys = PhysPortState::LinkUp;
            port.state = PortState::Initialize;
            // A switch notes that a port came up (until an SM clears it).
            if let Some(sw) = self.fabric.node_mut(end.0).switch.as_mut() {
                sw.port_state_change = true;
            }
        }
        Ok(())
    }

    /// The finished fabric.
    pub fn build(self) -> Fabric {
        self.fabric
    }
}
