//! The SMA's Set side: Set(PortInfo) with the port state machines (IBA Vol 1, 7.2 and
//! 14.2.5.6), Set(SwitchInfo) and Set(LinearForwardingTable), and the link events they
//! cause (a link taken down or brought back up, on both of its ends, and the switches'
//! PortStateChange).
//!
//! A Set is checked whole before anything changes: one field out of range and the SMA
//! answers "invalid attribute value" with nothing changed. Sans-IO and without a clock: a
//! link that can train does so at once, so a Set's response shows the state after it.

use ibmad::{LinearForwardingTable, Mtu, PhysPortState, PortInfo, PortState, Status, SwitchInfo};

use crate::model::{Fabric, NodeIdx, MAX_UNICAST_LID};

/// The status of a Set refused for a value out of range (or a transition not allowed).
const INVALID: Status = Status(Status::INVALID_ATTR_VALUE);

/// LinkWidthEnabled: 0 keeps, 255 enables every supported width.
const WIDTH_NOP: u8 = 0;
const WIDTH_ALL: u8 = 255;
/// LinkSpeedEnabled: 0 keeps, 15 enables every supported speed.
const SPEED_NOP: u8 = 0;
const SPEED_ALL: u8 = 15;
/// LinkSpeedExtEnabled: 0 keeps, 30 disables extended speeds, 31 enables every supported one.
const SPEED_EXT_NOP: u8 = 0;
const SPEED_EXT_DISABLE: u8 = 30;
const SPEED_EXT_ALL: u8 = 31;
/// LinkDownDefaultState codes.
const LDD_NOP: u8 = 0;
const LDD_SLEEP: u8 = 1;
const LDD_POLLING: u8 = 2;

/// An enable mask of a Set: `Ok(None)` keeps, `Ok(Some(mask))` is the new mask (never empty,
/// never beyond `supported`).
fn enable_mask(v: u8, nop: u8, all: u8, supported: u8) -> Result<Option<u8>, Status> {
    if v == nop {
        Ok(None)
    } else if v == all {
        Ok(Some(supported))
    } else if v & !supported == 0 {
        Ok(Some(v))
    } else {
        Err(INVALID)
    }
}

/// Where a port's physical state goes when its link goes down other than by a Disable.
fn down_default(link_down_default: u8) -> PhysPortState {
    if link_down_default == LDD_SLEEP {
        PhysPortState::Sleep
    } else {
        PhysPortState::Polling
    }
}

/// What [`Fabric::set_link`] did: the physical and logical states of the port and of the
/// far end of its link, before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChange {
    /// The port.
    pub port: (NodeIdx, u8),
    /// Its PortPhysicalState and PortState before.
    pub before: (PhysPortState, PortState),
    /// And after.
    pub after: (PhysPortState, PortState),
    /// The far end of its link, if it is linked.
    pub far: Option<(NodeIdx, u8)>,
    /// The far end's states before.
    pub far_before: Option<(PhysPortState, PortState)>,
    /// And after.
    pub far_after: Option<(PhysPortState, PortState)>,
}

/// Why [`Fabric::set_link`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The node has no such port.
    #[error("no such port")]
    NoPort,
    /// A switch's port 0 is the switch's own: it has no link to take down.
    #[error("port 0 of a switch has no physical link")]
    Port0,
}

/// What a valid Set(PortInfo) changes, checked before any of it is applied.
struct PortSet {
    /// LID, LMC, SM LID and SL, GID prefix, M_Key fields: an end port's only.
    end: Option<EndFields>,
    width: Option<u8>,
    speed: Option<u8>,
    speed_ext: Option<u8>,
    mtu: Option<Mtu>,
    operational_vls: Option<u8>,
    hoq_life: u8,
    link_down_default: Option<u8>,
    phys: Option<PhysPortState>,
    state: Option<PortState>,
}

struct EndFields {
    lid: u16,
    lmc: u8,
    master_sm_lid: u16,
    master_sm_sl: u8,
    gid_prefix: u64,
    m_key: u64,
    m_key_lease_period: u16,
    m_key_protect_bits: u8,
}

impl Fabric {
    /// Set(PortInfo) of port `modifier` (bit 31 ignored, 0 on a CA: the port it came in
    /// on) of `at`, from the request's data; SUCCESS or the status to answer.
    pub(crate) fn set_port_info(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        data: &[u8],
    ) -> Status {
        let node = self.node(at);
        let Some(num) = crate::smi::attr_port(node, in_port, modifier & !(1 << 31)) else {
            return INVALID;
        };
        // A CA's or router's SMA sets only the port the SMP came in on (as ibsim).
        if !node.is_switch() && num != in_port {
            return INVALID;
        }
        let Ok(pi) = PortInfo::parse(data) else {
            return INVALID;
        };
        match self.check_port_set(at, num, &pi) {
            Ok(set) => {
                self.apply_port_set(at, num, set);
                Status::SUCCESS
            }
            Err(status) => status,
        }
    }

    fn check_port_set(&self, at: NodeIdx, num: u8, pi: &PortInfo) -> Result<PortSet, Status> {
        let node = self.node(at);
        let p = &node.ports[usize::from(num)];
        let switch = node.is_switch();
        let template = crate::smi::port_template(node, num);
        let end = if !switch || num == 0 {
            let unicast = |lid: u16| (1..=MAX_UNICAST_LID).contains(&lid);
            // A base (not enhanced) switch port 0 has one LID: LMC is not its field.
            let lmc = if switch && !node.spec.enhanced_port0 {
                0
            } else {
                pi.lmc
            };
            let last = u32::from(pi.lid) + (1u32 << lmc) - 1;
            if !unicast(pi.lid) || last > u32::from(MAX_UNICAST_LID) {
                return Err(INVALID);
            }
            if !unicast(pi.master_sm_lid) {
                return Err(INVALID);
            }
            Some(EndFields {
                lid: pi.lid,
                lmc,
                master_sm_lid: pi.master_sm_lid,
                master_sm_sl: pi.master_sm_sl,
                gid_prefix: pi.gid_prefix,
                m_key: pi.m_key,
                m_key_lease_period: pi.m_key_lease_period,
                m_key_protect_bits: pi.m_key_protect_bits,
            })
        } else {
            None
        };
        let width = enable_mask(
            pi.link_width_enabled,
            WIDTH_NOP,
            WIDTH_ALL,
            crate::smi::IBSIM_WIDTHS_SUPPORTED,
        )?;
        let speed = enable_mask(
            pi.link_speed_enabled,
            SPEED_NOP,
            SPEED_ALL,
            crate::smi::IBSIM_SPEEDS_SUPPORTED,
        )?;
        let speed_ext = match pi.link_speed_ext_enabled {
            SPEED_EXT_DISABLE => Some(0),
            v => enable_mask(
                v,
                SPEED_EXT_NOP,
                SPEED_EXT_ALL,
                crate::smi::IBSIM_SPEEDS_EXT_SUPPORTED,
            )?,
        };
        let mtu_code = u8::from(pi.neighbor_mtu);
        if mtu_code == 0 || mtu_code > u8::from(template.mtu_cap) {
            return Err(INVALID);
        }
        let operational_vls = match pi.operational_vls {
            0 => None,
            v if v <= template.vl_cap => Some(v),
            _ => return Err(INVALID),
        };
        let link_down_default = match pi.link_down_default_state {
            LDD_NOP => None,
            v @ (LDD_SLEEP | LDD_POLLING) => Some(v),
            _ => return Err(INVALID),
        };
        // PortPhysicalState: an SM may disable a port or make it poll (which retrains a
        // link that is up); a switch's port 0 has no physical link.
        let phys = match pi.port_physical_state {
            PhysPortState::NoChange => None,
            s @ (PhysPortState::Polling | PhysPortState::Disabled) if !(switch && num == 0) => {
                Some(s)
            }
            _ => return Err(INVALID),
        };
        // PortState (IBA 7.2): Down from any state; Init -> Armed -> Active in order;
        // setting the state a port is in is no change; everything else is refused
        // (Initialize is entered only by training, never set from another state).
        let current = if p.remote.is_some() || num == 0 {
            p.state
        } else {
            PortState::Down
        };
        let state = match (pi.port_state, current) {
            (PortState::NoChange, _) => None,
            // A switch's port 0 is Active while the switch is up.
            (PortState::Down, _) if switch && num == 0 => return Err(INVALID),
            (PortState::Down, PortState::Down) => None,
            (PortState::Down, _) => Some(PortState::Down),
            (PortState::Initialize, PortState::Initialize) => None,
            (PortState::Armed, PortState::Initialize) => Some(PortState::Armed),
            (PortState::Armed, PortState::Armed) => None,
            (PortState::Active, PortState::Armed) => Some(PortState::Active),
            (PortState::Active, PortState::Active) => None,
            _ => return Err(INVALID),
        };
        // A physical change takes the link down: the logical state cannot go up with it.
        if phys.is_some() && matches!(state, Some(PortState::Armed | PortState::Active)) {
            return Err(INVALID);
        }
        Ok(PortSet {
            end,
            width,
            speed,
            speed_ext,
            mtu: Some(pi.neighbor_mtu),
            operational_vls,
            hoq_life: pi.hoq_life,
            link_down_default,
            phys,
            state,
        })
    }

    fn apply_port_set(&mut self, at: NodeIdx, num: u8, set: PortSet) {
        let here = (at, num);
        {
            let p = &mut self.node_mut(at).ports[usize::from(num)];
            if let Some(e) = set.end {
                p.lid = e.lid;
                p.lmc = e.lmc;
                p.master_sm_lid = e.master_sm_lid;
                p.master_sm_sl = e.master_sm_sl;
                p.gid_prefix = e.gid_prefix;
                p.m_key = e.m_key;
                p.m_key_lease_period = e.m_key_lease_period;
                p.m_key_protect_bits = e.m_key_protect_bits;
            }
            if let Some(v) = set.width {
                p.width_enabled = v;
            }
            if let Some(v) = set.speed {
                p.speed_enabled = v;
            }
            if let Some(v) = set.speed_ext {
                p.speed_ext_enabled = v;
            }
            if set.mtu.is_some() {
                p.neighbor_mtu = set.mtu;
            }
            if set.operational_vls.is_some() {
                p.operational_vls = set.operational_vls;
            }
            p.hoq_life = set.hoq_life;
            if let Some(v) = set.link_down_default {
                p.link_down_default = v;
            }
        }
        if let Some(phys) = set.phys {
            self.set_phys(here, phys);
        }
        match set.state {
            Some(PortState::Down) => {
                let d = down_default(self.node(at).ports[usize::from(num)].link_down_default);
                self.link_down(here, d);
            }
            Some(s) => self.node_mut(at).ports[usize::from(num)].state = s,
            None => {}
        }
        self.settle(here);
    }

    /// PortPhysicalState Disabled (the link goes down, the far end to its
    /// LinkDownDefaultState) or Polling (a disabled port is enabled; a link that is up
    /// retrains), as a Set(PortInfo) asks; the caller settles the link.
    fn set_phys(&mut self, here: (NodeIdx, u8), phys: PhysPortState) {
        if phys == PhysPortState::Disabled {
            self.link_down(here, PhysPortState::Disabled);
            return;
        }
        let now = self.node(here.0).ports[usize::from(here.1)].phys;
        if now == PhysPortState::LinkUp {
            self.link_down(here, PhysPortState::Polling);
        } else {
            self.node_mut(here.0).ports[usize::from(here.1)].phys = PhysPortState::Polling;
        }
    }

    /// Takes the link at `port` down or brings it back up from outside the fabric (a
    /// cable pulled and plugged back, a console's command), through the port state machine
    /// as an SM's Set(PortInfo) of PortPhysicalState would: down is Disabled (both ends
    /// Down, the far end to its LinkDownDefaultState), up is Polling (the link trains if
    /// the far end polls too: both ends LinkUp, Initialize; a link already up is left as
    /// it is). The switches at both ends note
    /// PortStateChange and raise Trap 128 ([`crate::trap`]) when their link changes.
    ///
    /// # Errors
    /// A port the node does not have, or a switch's port 0 (it has no physical link).
    pub fn set_link(&mut self, port: (NodeIdx, u8), up: bool) -> Result<LinkChange, LinkError> {
        if !self.has_port(port) {
            return Err(LinkError::NoPort);
        }
        if port.1 == 0 {
            return Err(LinkError::Port0);
        }
        let states = |f: &Fabric, (n, p): (NodeIdx, u8)| {
            let p = &f.node(n).ports[usize::from(p)];
            (p.phys, p.state)
        };
        let far = self.node(port.0).ports[usize::from(port.1)].remote;
        let before = states(self, port);
        let far_before = far.map(|r| states(self, r));
        // A link that is up stays up (a Set of Polling would retrain it).
        if up && before.0 == PhysPortState::LinkUp {
            return Ok(LinkChange {
                port,
                before,
                after: before,
                far,
                far_before,
                far_after: far_before,
            });
        }
        self.set_phys(
            port,
            if up {
                PhysPortState::Polling
            } else {
                PhysPortState::Disabled
            },
        );
        self.settle(port);
        Ok(LinkChange {
            port,
            before,
            after: states(self, port),
            far,
            far_before,
            far_after: far.map(|r| states(self, r)),
        })
    }

    /// Whether the two ends of a link can train: a width and a speed both enable.
    fn trains(&self, a: (NodeIdx, u8), b: (NodeIdx, u8)) -> bool {
        let pa = &self.node(a.0).ports[usize::from(a.1)];
        let pb = &self.node(b.0).ports[usize::from(b.1)];
        pa.width_enabled & pb.width_enabled != 0 && pa.speed_enabled & pb.speed_enabled != 0
    }

    /// Takes `port` down to `phys` (Disabled, Polling or Sleep) and, if its link was up, the
    /// far end to its LinkDownDefaultState: both ends' PortState Down.
    fn link_down(&mut self, port: (NodeIdx, u8), phys: PhysPortState) {
        let p = &self.node(port.0).ports[usize::from(port.1)];
        let far = p.remote;
        self.port_down(port, phys);
        if let Some(r) = far {
            let rp = &self.node(r.0).ports[usize::from(r.1)];
            if rp.phys == PhysPortState::LinkUp {
                let d = down_default(rp.link_down_default);
                self.port_down(r, d);
            }
        }
    }

    fn port_down(&mut self, (n, num): (NodeIdx, u8), phys: PhysPortState) {
        let node = self.node_mut(n);
        let p = &mut node.ports[usize::from(num)];
        let was = p.state;
        p.phys = phys;
        p.state = PortState::Down;
        if was != PortState::Down {
            if let Some(sw) = node.switch.as_mut() {
                sw.port_state_change = true;
            }
            self.raise_link_trap(n);
        }
    }

    /// Brings a link whose ends both poll up (LinkUp, Initialize on both ends) when they
    /// train, and takes a link that is up down when they no longer do.
    fn settle(&mut self, port: (NodeIdx, u8)) {
        let Some(far) = self.node(port.0).ports[usize::from(port.1)].remote else {
            return;
        };
        let phys = |f: &Fabric, (n, p): (NodeIdx, u8)| f.node(n).ports[usize::from(p)].phys;
        let (a, b) = (phys(self, port), phys(self, far));
        let trains = self.trains(port, far);
        if a == PhysPortState::LinkUp && b == PhysPortState::LinkUp && !trains {
            let d = down_default(self.node(port.0).ports[usize::from(port.1)].link_down_default);
            self.link_down(port, d);
        } else if a == PhysPortState::Polling && b == PhysPortState::Polling && trains {
            for (n, num) in [port, far] {
                let node = self.node_mut(n);
                let p = &mut node.ports[usize::from(num)];
                p.phys = PhysPortState::LinkUp;
                p.state = PortState::Initialize;
                if let Some(sw) = node.switch.as_mut() {
                    sw.port_state_change = true;
                }
                self.raise_link_trap(n);
            }
        }
    }

    /// Set(SwitchInfo) of switch `at`: LinearFDBTop (below LinearFDBCap), DefaultPort and the
    /// default multicast ports (ports the switch has), LifeTimeValue, and PortStateChange
    /// cleared by writing 1; the other fields are read-only.
    pub(crate) fn set_switch_info(&mut self, at: NodeIdx, data: &[u8]) -> Status {
        let Ok(si) = SwitchInfo::parse(data) else {
            return INVALID;
        };
        let ports = self.node(at).spec.num_ports;
        let mcast_port = |p: u8| p <= ports || p == LinearForwardingTable::NO_PORT;
        if si.linear_fdb_top >= crate::smi::IBSIM_LINEAR_FDB_CAP
            || si.default_port > ports
            || !mcast_port(si.default_multicast_primary_port)
            || !mcast_port(si.default_multicast_not_primary_port)
        {
            return INVALID;
        }
        let Some(sw) = self.node_mut(at).switch.as_mut() else {
            return Status(Status::METHOD_ATTR_NOT_SUPPORTED);
        };
        sw.linear_fdb_top = si.linear_fdb_top;
        sw.default_port = si.default_port;
        sw.default_mcast_primary_port = si.default_multicast_primary_port;
        sw.default_mcast_not_primary_port = si.default_multicast_not_primary_port;
        sw.life_time_value = si.life_time_value;
        if si.port_state_change {
            sw.port_state_change = false;
        }
        Status::SUCCESS
    }

    /// Set(LinearForwardingTable) of block `block` (64 LIDs) of switch `at`: written into its
    /// table, which grows as far as LinearFDBCap.
    pub(crate) fn set_lft(&mut self, at: NodeIdx, block: u32, data: &[u8]) -> Status {
        let per = LinearForwardingTable::LIDS_PER_BLOCK;
        let cap = usize::from(crate::smi::IBSIM_LINEAR_FDB_CAP);
        let Ok(lft) = LinearForwardingTable::parse(data) else {
            return INVALID;
        };
        let start = match usize::try_from(block) {
            Ok(b) if b < cap / per => b * per,
            _ => return INVALID,
        };
        let Some(sw) = self.node_mut(at).switch.as_mut() else {
            return Status(Status::METHOD_ATTR_NOT_SUPPORTED);
        };
        if sw.lft.len() < start + per {
            sw.lft.resize(start + per, LinearForwardingTable::NO_PORT);
        }
        sw.lft[start..start + per].copy_from_slice(&lft.ports);
        Status::SUCCESS
    }
}
