//! Subnet management packets: directed-route forwarding hop by hop (IBA Vol 1, 14.2.2.2,
//! through `ibmad::Smp::advance_hop_pointer`) and the SMA of each node.
//!
//! Sans-IO: [`Fabric::smp`] takes a MAD sent from a port and returns what comes back to that
//! port, if anything; nothing here reads a clock or does I/O.

use ibmad::{
    attr::id, DrAction, Mad, Method, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo,
    PortState, Smp, Status, SwitchInfo, MAD_SIZE,
};

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
    /// Nothing on the destination node answers this class.
    NoAgent,
    /// A hop pointer, hop count or direction that fits no rule (C14-9:5, C14-13:5).
    BadHop,
    /// The route leaves through a port the node does not have, or one without a link.
    NoLink,
    /// A response on its way back; only requests are answered.
    NotARequest,
}

/// An SMA's answer, or why there is none.
pub type Answer = Result<[u8; MAD_SIZE], Dropped>;

/// Most hops a directed route may take (the hop count's limit, 63, both ways).
const MAX_WALK: usize = 2 * 64;

impl Fabric {
    /// Delivers a subnet management request sent from `from` (node, port) and returns the
    /// response that comes back to that port.
    pub fn smp(&mut self, from: (NodeIdx, u8), mad: &[u8]) -> Answer {
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
        // Out: from the sender (no arrival port) to the node the route names.
        let (at, in_port) = self.walk(from, &mut buf)?;
        self.answer(at, in_port, &mut buf);
        // Back along the return path to the sender.
        let (back, _) = self.walk((at, in_port), &mut buf)?;
        if back != from.0 {
            return Err(Dropped::NoLink);
        }
        Ok(buf)
    }

    /// Walks a directed-route SMP from `start` (the node and port it starts on, with no
    /// arrival port) to where it is handed to an SMA or SM; returns that node and the port
    /// it arrived on (the start port if it never left).
    fn walk(
        &self,
        start: (NodeIdx, u8),
        buf: &mut [u8; MAD_SIZE],
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

    /// The SMA of `at` answers the request in `buf` (which arrived on `in_port`) in place.
    pub(crate) fn answer(&mut self, at: NodeIdx, in_port: u8, buf: &mut [u8; MAD_SIZE]) {
        let (method, attr, modifier) = {
            let mad = Mad::new_unchecked(&buf[..]);
            (mad.method(), mad.attr_id(), mad.attr_mod())
        };
        let node = self.node(at);
        let mut data = [0u8; ibmad::SMP_DATA_LEN];
        let status = match (method, attr) {
            (Method::Get, id::NODE_INFO) => {
                node_info(node, in_port).emit(&mut data);
                Status::SUCCESS
            }
            (Method::Get, id::NODE_DESC) => {
                NodeDescription::new(&node.spec.description).emit(&mut data);
                Status::SUCCESS
            }
            (Method::Get, id::PORT_INFO) => {
                // Attribute modifier: the port number (0 on a CA: the port asked through).
                let num = modifier as u8;
                let num = if num == 0 && !node.is_switch() {
                    in_port
                } else {
                    num
                };
                match (modifier <= 0xff, node.port(num)) {
                    (true, Some(_)) => {
                        port_info(self, node, num, in_port).emit(&mut data);
                        Status::SUCCESS
                    }
                    _ => Status(Status::INVALID_ATTR_VALUE),
                }
            }
            (Method::Get, id::MLNX_EXT_PORT_INFO) => {
                let num = modifier as u8;
                let num = if num == 0 && !node.is_switch() {
                    in_port
                } else {
                    num
                };
                match (modifier <= 0xff, node.port(num)) {
                    (true, Some(p)) => {
                        mlnx_ext_port_info(self, p).emit(&mut data);
                        Status::SUCCESS
                    }
                    _ => Status(Status::INVALID_ATTR_VALUE),
                }
            }
            (Method::Get, id::LFT) if node.is_switch() => {
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
                    block.emit(&mut data);
                    Status::SUCCESS
                }
            }
            (Method::Get, id::SWITCH_INFO) if node.is_switch() => {
                switch_info(node).emit(&mut data);
                Status::SUCCESS
            }
            (Method::Get | Method::Set, _) => Status(Status::METHOD_ATTR_NOT_SUPPORTED),
            _ => Status(Status::METHOD_NOT_SUPPORTED),
        };
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.make_response(status);
        smp.data_mut().copy_from_slice(&data);
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
        partition_cap: if s.node_type == NodeType::Switch {
            8
        } else {
            32
        },
        device_id: s.device_id,
        revision: 0,
        local_port_num: in_port,
        vendor_id: s.vendor_id,
    }
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
/// Every extended speed up to NDR (LinkSpeedExtSupported when extended speeds are active).
const SPEEDS_EXT_ALL: u8 = 0x0f;
/// Mellanox FDR10 (ExtPortInfo LinkSpeed bit 0).
const MLNX_FDR10: u8 = 1;

/// PortInfo.CapabilityMask as ibsim's port templates have it: a CA port (linked, and
/// unlinked), a switch's port 0; a switch's external ports have none.
const CAP_CA: u32 = 0x0040_c048;
const CAP_CA_DOWN: u32 = 0x0010_c048;
const CAP_SWITCH_PORT0: u32 = 0x0000_c048;

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
    let capability_mask = match (node.is_switch(), num, linked) {
        (true, 0, _) => CAP_SWITCH_PORT0,
        (true, _, _) => 0,
        (false, _, true) => CAP_CA,
        (false, _, false) => CAP_CA_DOWN,
    };
    let ext = a.speed_ext != 0;
    PortInfo {
        gid_prefix: if switch_port {
            0
        } else {
            0xfe80_0000_0000_0000
        },
        lid: if switch_port { 0 } else { lid },
        lmc: if switch_port { 0 } else { lmc },
        master_sm_lid: if switch_port { 0 } else { p.master_sm_lid },
        capability_mask,
        local_port_num: in_port,
        link_width_enabled: p.width_enabled,
        link_width_supported: 0x1f,
        link_width_active: ibmad::LinkWidth::from(a.width),
        link_speed_supported: 7,
        port_state: if linked || num == 0 {
            p.state
        } else {
            PortState::Down
        },
        port_physical_state: p.phys,
        link_down_default_state: 2,
        link_speed_active: a.speed,
        link_speed_enabled: p.speed_enabled,
        neighbor_mtu: ibmad::Mtu::Mtu2048,
        vl_cap: 4,
        mtu_cap: ibmad::Mtu::Mtu2048,
        operational_vls: 4,
        link_speed_ext_enabled: if ext { p.speed_ext_enabled } else { 0 },
        link_speed_ext_supported: if ext { SPEEDS_EXT_ALL } else { 0 },
        link_speed_ext_active: a.speed_ext,
        ..PortInfo::default()
    }
}

fn mlnx_ext_port_info(f: &Fabric, p: &Port) -> ibmad::attr::MlnxExtPortInfo {
    let mlnx = active(f, p).mlnx;
    let ena = if mlnx != 0 { p.mlnx_speed_enabled } else { 0 };
    ibmad::attr::MlnxExtPortInfo {
        link_speed_supported: ena,
        link_speed_enabled: ena,
        link_speed_active: mlnx,
        ..Default::default()
    }
}

fn switch_info(node: &Node) -> SwitchInfo {
    let sw = node.switch.as_ref();
    SwitchInfo {
        linear_fdb_cap: 0xc000,
        multicast_fdb_cap: 0x400,
        linear_fdb_top: sw.map_or(0, |s| s.linear_fdb_top),
        lids_per_port: 0,
        enhanced_port0: node.spec.enhanced_port0,
        ..SwitchInfo::default()
    }
}
