//! Subnet management packets: directed-route forwarding hop by hop (IBA Vol 1, 14.2.2.2,
//! through `ibmad::Smp::advance_hop_pointer`) and the SMA of each node.
//!
//! Sans-IO: [`Fabric::smp`] takes a MAD sent from a port and returns what comes back to that
//! port, if anything; nothing here reads a clock or does I/O.

use ibmad::{
    attr::id, DrAction, Mad, Method, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo,
    PortState, Smp, Status, SwitchInfo, MAD_SIZE,
};
use ibmad::{
    attr::{cap, cap2},
    Mtu,
};

use crate::faults::{Leg, Ticket};
use crate::model::{Fabric, Node, NodeIdx, Port};

/// Why an SMP got no answer (the simulator's counters and tests say which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// A directed-route SMP with a LID-routed part (a non-permissive DrSLID or DrDLID),
    /// which this simulator does not route yet.
    NotDirected,
    /// No LID route to the destination, or back to the sender: unrouted, past a switch's
    /// table, or through a port that is not LinkUp and Active.
    NoRoute,
    /// Nothing on the destination node answers this class or attribute (an SM behind the
    /// port might: SA, SMInfo, traps, vendor and CM classes): the request arrived at node
    /// `at` through `port` (a switch's: the external port it came in on, or 0).
    NoAgent {
        /// The node the request reached.
        at: NodeIdx,
        /// The port it arrived on.
        port: u8,
    },
    /// A hop pointer, hop count or direction that fits no rule (C14-9:5, C14-13:5).
    BadHop,
    /// The route leaves through a port the node does not have, or one without a link.
    NoLink,
    /// A response on its way back; only requests are answered.
    NotARequest,
    /// Lost on a link by a seeded fault ([`crate::faults`]).
    Lost {
        /// The link: out of (node, port), into (node, port).
        link: Hop,
    },
    /// Sent to, or through, a node that stopped answering (a `dead=` fault).
    Dead {
        /// The node.
        node: NodeIdx,
    },
    /// Refused by M_Key protection at node `at`, port `port` ([`crate::mkey`]).
    MKey {
        /// The node.
        at: NodeIdx,
        /// The port whose M_Key did not match (a switch's: 0).
        port: u8,
    },
}

/// Where a directed-route request's walk ended.
pub(crate) enum Walked {
    /// The SMA answered; the answer is back at the sender.
    Answered([u8; MAD_SIZE], Option<Ticket>),
    /// At a port whose SM answers it (SMInfo, traps at an IsSM port): the request as it
    /// arrived there.
    Unanswered {
        at: NodeIdx,
        port: u8,
        buf: [u8; MAD_SIZE],
    },
}

/// One link a packet crossed: out of (node, port), into (node, port).
pub type Hop = ((NodeIdx, u8), (NodeIdx, u8));

/// An SMA's answer, or why there is none.
pub type Answer = Result<[u8; MAD_SIZE], Dropped>;

/// Most hops a directed route may take (the hop count's limit, 63, both ways).
const MAX_WALK: usize = 2 * 64;

impl Fabric {
    /// Delivers a subnet management request sent from `from` (node, port) and returns the
    /// response that comes back to that port.
    pub fn smp(&mut self, from: (NodeIdx, u8), mad: &[u8]) -> Answer {
        match self.smp_ticketed(from, mad)? {
            Walked::Answered(buf, _) => Ok(buf),
            Walked::Unanswered { at, port, .. } => Err(Dropped::NoAgent { at, port }),
        }
    }

    /// [`Fabric::smp`], with the ticket its faults were rolled on (for the answer's fate),
    /// or the request as it arrived where the SMA does not answer it.
    pub(crate) fn smp_ticketed(
        &mut self,
        from: (NodeIdx, u8),
        mad: &[u8],
    ) -> Result<Walked, Dropped> {
        if !self.has_port(from) {
            return Err(Dropped::NoLink);
        }
        let mut buf = [0u8; MAD_SIZE];
        let n = mad.len().min(MAD_SIZE);
        buf[..n].copy_from_slice(&mad[..n]);
        let smp = Smp::new_unchecked(&buf[..]);
        if !smp.is_directed_route() {
            return Err(Dropped::NotDirected);
        }
        if smp.direction() || smp.method().is_response() {
            return Err(Dropped::NotARequest);
        }
        let ticket = self.ticket(from, crate::deliver::PERMISSIVE_LID, 0, &buf);
        let mut hops = Vec::new();
        // Out: from the sender (no arrival port) to the node the route names. Every link a
        // packet crossed counts, whether or not it got further; a fault may lose it on one.
        let there = self.walk(from, &mut buf, &mut hops);
        self.cross(&mut hops, ticket, Leg::Request)?;
        let (at, in_port) = there?;
        self.check_alive(at)?;
        if self.sm_answers(at, in_port, &buf) {
            return Ok(Walked::Unanswered {
                at,
                port: in_port,
                buf,
            });
        }
        self.answer(at, in_port, &mut buf)?;
        // Back along the return path to the sender.
        let back = self.walk((at, in_port), &mut buf, &mut hops);
        self.cross(&mut hops, ticket, Leg::Answer)?;
        if back?.0 != from.0 {
            return Err(Dropped::NoLink);
        }
        Ok(Walked::Answered(buf, ticket))
    }

    /// An attribute of the node at `at` as its own port `at.1` reads it locally (what a host
    /// learns from its HCA without a packet on the wire, e.g. sysfs): Get of `attr` with
    /// `modifier` from its SMA, with no M_Key check, fault or count. The status when the
    /// SMA refuses it.
    ///
    /// # Errors
    /// The MAD status of the refusal (an attribute not supported, a port it does not have).
    pub fn local_get(
        &self,
        at: (NodeIdx, u8),
        attr: u16,
        modifier: u32,
    ) -> Result<[u8; ibmad::SMP_DATA_LEN], Status> {
        let mut data = [0u8; ibmad::SMP_DATA_LEN];
        if !self.has_port(at) {
            return Err(Status(Status::INVALID_ATTR_VALUE));
        }
        let st = self.get_attr(at.0, at.1, attr, modifier, &mut data);
        if st.is_success() {
            Ok(data)
        } else {
            Err(st)
        }
    }

    /// Whether the subnet management request in `buf`, arrived at `at` through `in_port`, is
    /// the SM's to answer rather than the SMA's: SMInfo or a Notice (a trap) at a port whose
    /// IsSM is set (on a switch, port 0's).
    pub(crate) fn sm_answers(&self, at: NodeIdx, in_port: u8, buf: &[u8; MAD_SIZE]) -> bool {
        let mad = Mad::new_unchecked(&buf[..]);
        let node = self.node(at);
        let port = if node.is_switch() { 0 } else { in_port };
        matches!(mad.attr_id(), id::SM_INFO | id::NOTICE)
            && node.port(port).is_some_and(|p| p.is_sm)
    }

    /// Marks port `at` (a CA's port, a switch's port 0) as one an SM runs behind, or no
    /// longer: PortInfo.CapabilityMask.IsSM, the only bytes ibsim's SET_ISSM changes, and
    /// SMInfo and traps arriving there are the SM's ([`Dropped::NoAgent`]). False if the
    /// fabric has no such port (or it is a switch's external port).
    pub fn set_is_sm(&mut self, (node, port): (NodeIdx, u8), on: bool) -> bool {
        if (node.0 as usize) >= self.len() {
            return false;
        }
        let switch = self.node(node).is_switch();
        if switch && port != 0 {
            return false;
        }
        match self.node_mut(node).ports.get_mut(usize::from(port)) {
            Some(p) if switch || port != 0 => {
                p.is_sm = on;
                true
            }
            _ => false,
        }
    }

    /// Walks a directed-route SMP from `start` (the node and port it starts on, with no
    /// arrival port) to where it is handed to an SMA or SM; returns that node and the port
    /// it arrived on (the start port if it never left).
    pub(crate) fn walk(
        &self,
        start: (NodeIdx, u8),
        buf: &mut [u8; MAD_SIZE],
        hops: &mut Vec<Hop>,
    ) -> Result<(NodeIdx, u8), Dropped> {
        let (mut at, mut port) = start;
        let mut arrived: Option<u8> = None;
        for _ in 0..MAX_WALK {
            let node = self.node(at);
            let mut smp = Smp::new_unchecked(&mut buf[..]);
            match smp.advance_hop_pointer(arrived, node.is_switch()) {
                DrAction::Local => return Ok((at, arrived.unwrap_or(port))),
                DrAction::Forward(out) => {
                    // A CA's or router's SMP leaves through the port it is sent from.
                    let out = if node.is_switch() || arrived.is_some() {
                        out
                    } else {
                        port
                    };
                    let p = node.port(out).ok_or(Dropped::NoLink)?;
                    let (next, next_port) = p.remote.ok_or(Dropped::NoLink)?;
                    if p.phys != PhysPortState::LinkUp {
                        return Err(Dropped::NoLink);
                    }
                    hops.push(((at, out), (next, next_port)));
                    at = next;
                    port = next_port;
                    arrived = Some(next_port);
                }
                // LID routing comes with the forwarding tables.
                DrAction::LidRoute(_) | DrAction::LeadingLidRoute => {
                    return Err(Dropped::NotDirected)
                }
                DrAction::Discard => return Err(Dropped::BadHop),
            }
        }
        Err(Dropped::BadHop)
    }

    /// The SMA of `at` answers the request in `buf` (which arrived on `in_port`) in place:
    /// a Get with the attribute, a Set (of what the SMA lets an SM set) with the attribute
    /// after it, or the status that says why not.
    pub(crate) fn answer(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        buf: &mut [u8; MAD_SIZE],
    ) -> Result<(), Dropped> {
        let m_key = self.check_m_key(at, in_port, buf)?;
        let (method, attr, modifier) = {
            let mad = Mad::new_unchecked(&buf[..]);
            (mad.method(), mad.attr_id(), mad.attr_mod())
        };
        let mut data = [0u8; ibmad::SMP_DATA_LEN];
        let status = match method {
            Method::Get => self.get_attr(at, in_port, attr, modifier, &mut data),
            Method::Set => {
                let mut req = [0u8; ibmad::SMP_DATA_LEN];
                req.copy_from_slice(Smp::new_unchecked(&buf[..]).data());
                let switch = self.node(at).is_switch();
                let set = match attr {
                    id::PORT_INFO => Some(self.set_port_info(at, in_port, modifier, &req)),
                    id::SWITCH_INFO if switch => Some(self.set_switch_info(at, &req)),
                    id::LFT if switch => Some(self.set_lft(at, modifier, &req)),
                    id::PKEY_TABLE => Some(self.set_pkeys(at, in_port, modifier, &req)),
                    id::GUID_INFO => Some(self.set_guids(at, in_port, modifier, &req)),
                    id::SL2VL => Some(self.set_sl2vl(at, in_port, modifier, &req)),
                    id::VL_ARB => Some(self.set_vlarb(at, in_port, modifier, &req)),
                    id::MFT if switch => Some(self.set_mft(at, modifier, &req)),
                    // NodeInfo, NodeDescription, ExtPortInfo are read-only here; SMInfo
                    // is the SM's, not the SMA's.
                    _ => None,
                };
                match set {
                    // The response carries the attribute as it is after the Set (unchanged
                    // if the Set was refused).
                    Some(st) => {
                        let got = self.get_attr(at, in_port, attr, modifier, &mut data);
                        if st.is_success() {
                            got
                        } else {
                            st
                        }
                    }
                    None => Status(Status::METHOD_ATTR_NOT_SUPPORTED),
                }
            }
            _ => Status(Status::METHOD_NOT_SUPPORTED),
        };
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.make_response(status);
        // A Trap's TrapRepress is not a response: what the SMA does not support is
        // answered with GetResp.
        if !smp.method().is_response() {
            smp.header_mut().set_method(Method::GetResp);
        }
        smp.data_mut().copy_from_slice(&data);
        if m_key == crate::mkey::MKeyCheck::Hidden {
            crate::mkey::hide_m_key(buf);
        }
        Ok(())
    }

    /// Get of `attr` (with `modifier`) from the SMA of `at`, asked through `in_port`, into
    /// `data`; the status to answer.
    fn get_attr(
        &self,
        at: NodeIdx,
        in_port: u8,
        attr: u16,
        modifier: u32,
        data: &mut [u8; ibmad::SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        match attr {
            id::PKEY_TABLE => self.get_pkeys(at, in_port, modifier, data),
            id::GUID_INFO => self.get_guids(at, in_port, modifier, data),
            id::SL2VL => self.get_sl2vl(at, in_port, modifier, data),
            id::VL_ARB => self.get_vlarb(at, in_port, modifier, data),
            id::MFT if node.is_switch() => self.get_mft(at, modifier, data),
            id::NODE_INFO => {
                node_info(node, in_port).emit(data);
                Status::SUCCESS
            }
            id::NODE_DESC => {
                NodeDescription::new(&node.spec.description).emit(data);
                Status::SUCCESS
            }
            // Bit 31 of PortInfo's modifier asks for the extended form where a port supports
            // it (ibsim, like ports without it, ignores the bit); ExtPortInfo has no such bit.
            id::PORT_INFO => match attr_port(node, in_port, modifier & !(1 << 31)) {
                Some(num) => {
                    port_info(self, node, num, in_port).emit(data);
                    Status::SUCCESS
                }
                None => Status(Status::INVALID_ATTR_VALUE),
            },
            id::MLNX_EXT_PORT_INFO => match attr_port(node, in_port, modifier) {
                Some(num) => {
                    mlnx_ext_port_info(self, &node.ports[usize::from(num)]).emit(data);
                    Status::SUCCESS
                }
                None => Status(Status::INVALID_ATTR_VALUE),
            },
            id::LFT if node.is_switch() => {
                // Attribute modifier: the block of 64 LIDs.
                let lft = node.switch.as_ref().map_or(&[][..], |s| &s.lft[..]);
                let start = (modifier as usize).saturating_mul(64);
                if modifier > u32::from(crate::model::MAX_UNICAST_LID) / 64 {
                    Status(Status::INVALID_ATTR_VALUE)
                } else {
                    let mut block = ibmad::LinearForwardingTable::unrouted();
                    for (i, port) in block.ports.iter_mut().enumerate() {
                        if let Some(p) = lft.get(start + i) {
                            *port = *p;
                        }
                    }
                    block.emit(data);
                    Status::SUCCESS
                }
            }
            id::SWITCH_INFO if node.is_switch() => {
                switch_info(node).emit(data);
                Status::SUCCESS
            }
            _ => Status(Status::METHOD_ATTR_NOT_SUPPORTED),
        }
    }
}

/// NodeInfo.PartitionCap, as ibsim's NodeInfo templates have it: 8 P_Keys a switch (its
/// port 0), 64 a CA or router.
pub(crate) fn partition_cap(node_type: NodeType) -> u16 {
    if node_type == NodeType::Switch {
        8
    } else {
        64
    }
}

fn node_info(node: &Node, in_port: u8) -> NodeInfo {
    let s = &node.spec;
    NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: s.node_type,
        num_ports: s.num_ports,
        system_image_guid: s.system_image_guid,
        node_guid: s.guid,
        port_guid: node.port(in_port).map_or(s.guid, |p| p.guid),
        partition_cap: partition_cap(s.node_type),
        device_id: s.device_id,
        // ibsim's value (both templates).
        revision: IBSIM_REVISION,
        local_port_num: in_port,
        vendor_id: s.vendor_id,
    }
}

/// NodeInfo.Revision of every ibsim node.
const IBSIM_REVISION: u32 = 0xa1;

/// The port a per-port attribute's modifier names (PortInfo, ExtPortInfo, IBA 14.2.5.6): the
/// port number, 0 on a CA or router meaning the port the SMP came in on; `None` for a modifier
/// above 0xFF or a port the node does not have.
pub(crate) fn attr_port(node: &Node, in_port: u8, modifier: u32) -> Option<u8> {
    let num = match u8::try_from(modifier).ok()? {
        0 if !node.is_switch() => in_port,
        n => n,
    };
    node.port(num).map(|_| num)
}

/// The highest bit of `order` set in both ends' enabled masks (ibsim's rule), or 0.
fn negotiated(a: u8, b: u8, order: &[u8]) -> u8 {
    order
        .iter()
        .copied()
        .find(|bit| a & b & bit != 0)
        .unwrap_or(0)
}

/// Link widths from widest (LinkWidthEnabled bits: 1x 1, 4x 2, 8x 4, 12x 8, 2x 16).
const WIDTHS: [u8; 5] = [8, 4, 2, 16, 1];
/// Link speeds from fastest (LinkSpeedEnabled bits: SDR 1, DDR 2, QDR 4).
const SPEEDS: [u8; 3] = [4, 2, 1];
/// Extended speeds from fastest (LinkSpeedExtEnabled bits: FDR 1, EDR 2, HDR 4, NDR 8).
const SPEEDS_EXT: [u8; 4] = [8, 4, 2, 1];
/// Mellanox FDR10 (ExtPortInfo LinkSpeed bit 0).
const MLNX_FDR10: u8 = 1;

/// PortInfo.LinkWidthSupported of every ibsim port: 1x, 2x, 4x, 8x and 12x.
pub(crate) const IBSIM_WIDTHS_SUPPORTED: u8 = 0x1f;
/// PortInfo.LinkSpeedSupported of every ibsim port: SDR, DDR and QDR.
pub(crate) const IBSIM_SPEEDS_SUPPORTED: u8 = 7;
/// PortInfo.LinkSpeedExtSupported of an ibsim port with an extended speed active: FDR, EDR
/// and HDR (ibsim 0.10; 0.12 adds NDR).
pub(crate) const IBSIM_SPEEDS_EXT_SUPPORTED: u8 = 7;
/// PortInfo.OperationalVLs of every ibsim port: its VLCap (VL0-7), until an SM sets it.
const IBSIM_OPERATIONAL_VLS: u8 = 4;
/// The subnet prefix an SM programs (the default one, fe80::/64).
pub(crate) const DEFAULT_GID_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// What both ends of a link agreed on (ibsim negotiates at link time; an unlinked port keeps
/// 4x SDR and no extended speed).
struct Active {
    width: u8,
    speed: u8,
    speed_ext: u8,
    mlnx: u8,
}

fn active(f: &Fabric, p: &Port) -> Active {
    match p.remote.map(|(n, r)| &f.node(n).ports[usize::from(r)]) {
        Some(r) => Active {
            width: negotiated(p.width_enabled, r.width_enabled, &WIDTHS),
            speed: negotiated(p.speed_enabled, r.speed_enabled, &SPEEDS),
            speed_ext: negotiated(p.speed_ext_enabled, r.speed_ext_enabled, &SPEEDS_EXT),
            mlnx: p.mlnx_speed_enabled & r.mlnx_speed_enabled & MLNX_FDR10,
        },
        None => Active {
            width: 2,
            speed: 1,
            speed_ext: 0,
            mlnx: 0,
        },
    }
}

/// PortInfo.CapabilityMask bits every ibsim port template with a mask has (a switch's
/// external ports have none): traps, SL-to-VL mapping, extended speeds, CapabilityMask2.
const IBSIM_CAP_BASE: u32 = cap::IS_TRAP_SUPPORTED
    | cap::IS_SL_MAPPING_SUPPORTED
    | cap::IS_EXTENDED_SPEEDS_SUPPORTED
    | cap::IS_CAPABILITY_MASK2_SUPPORTED;
/// PortInfo.CapabilityMask2 of ibsim's CA and switch port 0 templates: 2x width and HDR.
const IBSIM_CAP2: u16 = cap2::IS_LINK_WIDTH_2X_SUPPORTED | cap2::IS_LINK_SPEED_HDR_SUPPORTED;

/// The PortInfo of ibsim's template for a switch's port 0 (`smaport` in ibsim's
/// `sim_net.c`), before the fields each port fills in over it (see [`port_info`]).
fn ibsim_switch_port0() -> PortInfo {
    PortInfo {
        capability_mask: IBSIM_CAP_BASE,
        m_key_lease_period: 4089,
        link_down_default_state: 2,
        neighbor_mtu: Mtu::Mtu256,
        vl_cap: 4,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        mtu_cap: Mtu::Mtu1024,
        guid_cap: 1,
        subnet_timeout: 0x1f,
        resp_time_value: 8,
        capability_mask2: IBSIM_CAP2,
        ..PortInfo::default()
    }
}

/// ibsim's template for a switch's external port, linked (`swport`) or not
/// (`swport_down`, which differs in LocalPhyErrors only among the fields not filled in
/// per port).
fn ibsim_switch_port(linked: bool) -> PortInfo {
    PortInfo {
        link_down_default_state: 2,
        neighbor_mtu: Mtu::Mtu2048,
        vl_cap: 4,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        mtu_cap: Mtu::Mtu2048,
        vl_stall_count: 7,
        local_phy_errors: if linked { 0 } else { 4 },
        ..PortInfo::default()
    }
}

/// ibsim's template for a CA's or router's port, linked (`hcaport`) or not
/// (`hcaport_down`, whose CapabilityMask lacks IsCapabilityMaskNoticeSupported).
fn ibsim_ca_port(linked: bool) -> PortInfo {
    let capability_mask = IBSIM_CAP_BASE | cap::IS_VENDOR_CLASS_SUPPORTED;
    PortInfo {
        capability_mask: if linked {
            capability_mask | cap::IS_CAPABILITY_MASK_NOTICE_SUPPORTED
        } else {
            capability_mask
        },
        m_key_lease_period: 4089,
        link_down_default_state: 2,
        neighbor_mtu: Mtu::Mtu2048,
        vl_cap: 4,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        mtu_cap: Mtu::Mtu2048,
        vl_stall_count: 7,
        guid_cap: 32,
        subnet_timeout: 0x1f,
        capability_mask2: IBSIM_CAP2,
        ..PortInfo::default()
    }
}

/// ibsim's PortInfo template for port `num` of `node` (which it has).
pub(crate) fn port_template(node: &Node, num: u8) -> PortInfo {
    let linked = node.ports[usize::from(num)].remote.is_some();
    match (node.is_switch(), num) {
        (true, 0) => ibsim_switch_port0(),
        (true, _) => ibsim_switch_port(linked),
        (false, _) => ibsim_ca_port(linked),
    }
}

/// PortInfo of port `num` of `node`, asked through `in_port`: ibsim's template for the kind
/// of port, with what ibsim fills in per port over it (`update_portinfo`): LID, LMC, SM
/// LID, states, widths and speeds, OperationalVLs, HOQLife (0 until an SM sets it) and the
/// subnet prefix (0 until an SM sets it).
fn port_info(f: &Fabric, node: &Node, num: u8, in_port: u8) -> PortInfo {
    let p = &node.ports[usize::from(num)];
    let linked = p.remote.is_some();
    let a = active(f, p);
    let switch_port = node.is_switch() && num > 0;
    let (lid, lmc) = if node.is_switch() {
        (node.ports[0].lid, node.ports[0].lmc)
    } else {
        (p.lid, p.lmc)
    };
    let template = port_template(node, num);
    let ext = a.speed_ext != 0;
    // The fields of an end port (a CA's port, a switch's port 0); a switch's external ports
    // show the template's.
    let end_port = !switch_port;
    PortInfo {
        m_key: if end_port { p.m_key } else { template.m_key },
        gid_prefix: if end_port { p.gid_prefix } else { 0 },
        lid: if switch_port { 0 } else { lid },
        lmc: if switch_port { 0 } else { lmc },
        master_sm_lid: if switch_port { 0 } else { p.master_sm_lid },
        master_sm_sl: if end_port { p.master_sm_sl } else { 0 },
        m_key_lease_period: if end_port {
            p.m_key_lease_period
        } else {
            template.m_key_lease_period
        },
        m_key_protect_bits: if end_port { p.m_key_protect_bits } else { 0 },
        m_key_violations: if end_port {
            p.m_key_violations
        } else {
            template.m_key_violations
        },
        local_port_num: in_port,
        link_width_enabled: p.width_enabled,
        link_width_supported: IBSIM_WIDTHS_SUPPORTED,
        link_width_active: ibmad::LinkWidth::from(a.width),
        link_speed_supported: IBSIM_SPEEDS_SUPPORTED,
        port_state: if linked || num == 0 {
            p.state
        } else {
            PortState::Down
        },
        port_physical_state: p.phys,
        link_down_default_state: p.link_down_default,
        link_speed_active: a.speed,
        link_speed_enabled: p.speed_enabled,
        neighbor_mtu: p.neighbor_mtu.unwrap_or(template.neighbor_mtu),
        operational_vls: p.operational_vls.unwrap_or(IBSIM_OPERATIONAL_VLS),
        hoq_life: p.hoq_life,
        link_speed_ext_enabled: if ext { p.speed_ext_enabled } else { 0 },
        link_speed_ext_supported: if ext { IBSIM_SPEEDS_EXT_SUPPORTED } else { 0 },
        link_speed_ext_active: a.speed_ext,
        // IsSM as an SM behind an end port set it (ibsim's SET_ISSM changes only this bit).
        capability_mask: if end_port && p.is_sm {
            template.capability_mask | cap::IS_SM
        } else {
            template.capability_mask
        },
        ..template
    }
}

/// Mellanox ExtPortInfo: ibsim fills in the FDR10 fields only on a link that came up at
/// FDR10 without an extended speed (both ends enable FDR10 and no common extended speed);
/// otherwise it is all zero.
fn mlnx_ext_port_info(f: &Fabric, p: &Port) -> ibmad::attr::MlnxExtPortInfo {
    let a = active(f, p);
    if a.mlnx == 0 || a.speed_ext != 0 {
        return ibmad::attr::MlnxExtPortInfo::default();
    }
    ibmad::attr::MlnxExtPortInfo {
        link_speed_supported: p.mlnx_speed_enabled,
        link_speed_enabled: p.mlnx_speed_enabled,
        link_speed_active: a.mlnx,
        ..Default::default()
    }
}

/// SwitchInfo.LinearFDBCap of an ibsim switch (its `MAXLINEARCAP`, 30 × 1024).
pub(crate) const IBSIM_LINEAR_FDB_CAP: u16 = 30 * 1024;
/// SwitchInfo.MulticastFDBCap of an ibsim switch (`MAXMCASTCAP`).
pub(crate) const IBSIM_MULTICAST_FDB_CAP: u16 = 1024;
/// SwitchInfo.PartitionEnforcementCap of ibsim's switch template.
pub(crate) const IBSIM_PARTITION_ENFORCEMENT_CAP: u16 = 64;

fn switch_info(node: &Node) -> SwitchInfo {
    let sw = node.switch.as_ref();
    SwitchInfo {
        linear_fdb_cap: IBSIM_LINEAR_FDB_CAP,
        multicast_fdb_cap: IBSIM_MULTICAST_FDB_CAP,
        linear_fdb_top: sw.map_or(0, |s| s.linear_fdb_top),
        // ibsim raises PortStateChange when a port links up, as hardware does; an SM clears
        // it (the configured start stands for a sweep that did).
        port_state_change: sw.is_some_and(|s| s.port_state_change),
        life_time_value: sw.map_or(0, |s| s.life_time_value),
        default_port: sw.map_or(0, |s| s.default_port),
        default_multicast_primary_port: sw.map_or(0, |s| s.default_mcast_primary_port),
        default_multicast_not_primary_port: sw.map_or(0, |s| s.default_mcast_not_primary_port),
        partition_enforcement_cap: IBSIM_PARTITION_ENFORCEMENT_CAP,
        // ibsim's template says it filters raw packets both ways.
        filter_raw_inbound_cap: true,
        filter_raw_outbound_cap: true,
        enhanced_port0: node.spec.enhanced_port0,
        ..SwitchInfo::default()
    }
}
