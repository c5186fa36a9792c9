//! ibsim netfiles (the topology files of `fabrics/*.net`): the [`ibnetfile`] crate's parser
//! and writer, re-exported here, and their conversions to and from the [`Fabric`] model
//! ([`NetfileExt`]).
//!
//! # Model
//!
//! [`NetfileExt::to_fabric`] gives each node the GUIDs ibsim assigns, each port the width and
//! speed ibsim makes active on its link (the best both ends enable), state Initialize on
//! linked ports (Down on the others; a switch's port 0 Active) and the LIDs the file
//! presets (0 elsewhere: LIDs come from the SM). PortInfo fields a netfile does not give
//! (capability mask, VL cap) are 0, except that a port with an extended speed gets the
//! extended-speeds capability bit so [`Fabric::port_speed_ext`] sees it.
//!
//! ```
//! use ibfabric::netfile::{Netfile, NetfileExt};
//!
//! let net = Netfile::parse("Switch 2 \"s\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n[1] \"s\"[1]\n")?;
//! let fabric = net.to_fabric();
//! assert_eq!(fabric.links().len(), 1);
//! assert_eq!(Netfile::from_fabric(&fabric).nodes.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use ibmad::attr::cap;
use ibmad::{NodeType, PhysPortState, PortState};
pub use ibnetfile::*;

use crate::model::{Fabric, Node, Port, PortRef};

/// The conversions between a [`Netfile`] and the [`Fabric`] model (a trait because
/// [`Netfile`] is [`ibnetfile`]'s type): `net.to_fabric()`, `Netfile::from_fabric(&fabric)`.
pub trait NetfileExt {
    /// The fabric ibsim builds from this file, before an SM ran (see the module docs). Nodes
    /// in file order; no origin, no routes.
    fn to_fabric(&self) -> Fabric;

    /// A netfile for `fabric`: nodes in discovery order (the reverse of [`Fabric::nodes`], so
    /// the start node, if any, comes first and is ibsim's default attach point), ids
    /// `S-`/`H-`/`R-` + the 16-digit GUID, a GUID directive before each node so ibsim gives
    /// the same GUIDs, the links with the enabled width/speed that make ibsim activate
    /// what is active now. Unlinked ports are not listed (ibsim has no syntax for them).
    fn from_fabric(fabric: &Fabric) -> Netfile;
}

impl NetfileExt for Netfile {
    fn to_fabric(&self) -> Fabric {
        let index: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let mut fabric = Fabric::default();
        for n in &self.nodes {
            let is_switch = n.node_type == NodeType::Switch;
            let mut node = Node::new(n.node_type, n.num_ports, n.guid);
            node.system_image_guid = n.system_image_guid;
            // GUID arithmetic wraps, as in ibsim's C (a CA with GUID 2^64-1 is legal input).
            node.port_guid = if is_switch {
                n.guid
            } else {
                n.guid.wrapping_add(1)
            };
            node.local_port = if is_switch { 0 } else { 1 };
            node.vendor_id = n.vendor_id;
            node.device_id = n.device_id;
            node.revision = 0xa1;
            node.description = n.description.clone();
            node.lid = n.lid;
            node.lmc = n.lmc;
            node.enhanced_port0 = n.enhanced_port0 == Some(true);
            let first = if is_switch { 0 } else { 1 };
            for number in first..=n.num_ports {
                let guid = if is_switch {
                    n.guid
                } else {
                    n.guid.wrapping_add(u64::from(number))
                };
                let mut port = Port::new(number, guid);
                port.width = DEFAULT_WIDTH;
                port.speed = DEFAULT_SPEED;
                if is_switch && number == 0 {
                    port.state = PortState::Active;
                    port.phys_state = PhysPortState::LinkUp;
                    port.lid = n.lid;
                    port.lmc = n.lmc;
                } else if let Some(np) = n.port(number) {
                    port.state = PortState::Initialize;
                    port.phys_state = PhysPortState::LinkUp;
                    let far = index
                        .get(np.remote.node.as_str())
                        .and_then(|&i| self.nodes[i].port(np.remote.port).map(|fp| (i, fp)));
                    if let Some((i, fp)) = far {
                        let active = np.active_with(fp);
                        port.width = active.0;
                        port.speed = active.1;
                        port.speed_ext = active.2;
                        port.mlnx_speed = active.3;
                        if port.speed_ext != 0 {
                            port.capability_mask = cap::IS_EXTENDED_SPEEDS_SUPPORTED;
                        }
                        port.remote = Some(PortRef {
                            node: i,
                            port: np.remote.port,
                        });
                    }
                    if is_switch {
                        port.lid = n.lid;
                        port.lmc = n.lmc;
                    } else {
                        port.lid = np.lid;
                        port.lmc = np.lmc;
                    }
                } else {
                    port.state = PortState::Down;
                    port.phys_state = PhysPortState::Polling;
                    if is_switch {
                        port.lid = n.lid;
                        port.lmc = n.lmc;
                    }
                }
                node.set_port(port);
            }
            fabric.nodes.push(node);
        }
        fabric
    }

    fn from_fabric(fabric: &Fabric) -> Netfile {
        let ids: Vec<String> = fabric.nodes.iter().map(node_id).collect();
        let mut out = Netfile::default();
        for (i, n) in fabric.nodes.iter().enumerate().rev() {
            let mut ports = Vec::new();
            for p in &n.ports {
                let Some(r) = p.remote else { continue };
                if p.number == 0 || fabric.port(r).is_none() {
                    continue;
                }
                let (width, speed, speed_ext, mlnx_speed) =
                    enabled_for_active(p, Fabric::port_speed_ext(n, p));
                ports.push(NetPort {
                    number: p.number,
                    remote: NetRemote {
                        node: ids[r.node].clone(),
                        port: r.port,
                    },
                    width,
                    speed,
                    speed_ext,
                    mlnx_speed,
                    lid: if n.is_switch() { 0 } else { p.lid },
                    lmc: if n.is_switch() { 0 } else { p.lmc },
                });
            }
            out.nodes.push(NetNode {
                node_type: n.node_type,
                id: ids[i].clone(),
                description: n.description.clone(),
                num_ports: n.num_ports,
                guid: n.guid,
                system_image_guid: if n.system_image_guid == 0 {
                    n.guid
                } else {
                    n.system_image_guid
                },
                vendor_id: n.vendor_id,
                device_id: n.device_id,
                enhanced_port0: n.is_switch().then_some(n.enhanced_port0),
                lid: n.lid,
                lmc: n.lmc,
                ports,
                line: 0,
            });
        }
        out
    }
}

/// `S-`, `H-` or `R-` and the GUID: the node ids [`NetfileExt::from_fabric`] writes.
fn node_id(n: &Node) -> String {
    let t = match n.node_type {
        NodeType::Switch => "S",
        NodeType::Router => "R",
        _ => "H",
    };
    format!("{t}-{:016x}", n.guid)
}

/// Enabled masks from which ibsim activates what `p` has active.
fn enabled_for_active(p: &Port, speed_ext: u8) -> (u8, u8, u8, u8) {
    let width = match p.width {
        1 => 1,
        4 => 4,
        8 => 11,
        16 => 16,
        _ => 3,
    };
    match speed_ext {
        1 => (width, 7, 1, 1),
        2 => (width, 7, 3, 1),
        4 => (width, 7, 7, 1),
        8 => (width, 7, 15, 1),
        _ => match p.speed {
            1 => (width, 1, 0, 0),
            2 => (width, 3, 0, 0),
            _ if p.mlnx_speed & 1 != 0 => (width, 7, 0, 1),
            _ => (width, 7, 0, 0),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../fabrics/example.net");

    #[test]
    fn example_net() {
        let f = Netfile::parse(EXAMPLE).unwrap().to_fabric();
        f.validate().unwrap();
        assert_eq!(f.links().len(), 5);
        let h2 = f.node_by_guid(0x10_0002).unwrap();
        assert_eq!(h2.port(2).unwrap().phys_state, PhysPortState::Polling);
        assert_eq!(h2.port(1).unwrap().width, 2);
        assert_eq!(h2.port(1).unwrap().speed, 4);
    }

    #[test]
    fn fattree_1008() {
        let text = include_str!("../../../fabrics/fattree-1008.net");
        let f = Netfile::parse(text).unwrap().to_fabric();
        assert_eq!(f.links().len(), 1008 + 36 * 8);
        let back = Netfile::parse(&Netfile::from_fabric(&f).write())
            .unwrap()
            .to_fabric();
        assert_eq!(back.links().len(), f.links().len());
    }

    #[test]
    fn round_trip_through_the_model() {
        // From the model and back: same links, GUIDs, descriptions.
        let f = Netfile::parse(EXAMPLE).unwrap().to_fabric();
        let again = Netfile::from_fabric(&f).to_fabric();
        assert_eq!(again.links().len(), f.links().len());
        for node in &f.nodes {
            let o = again.node_by_guid(node.guid).expect("same GUIDs");
            assert_eq!(o.description, node.description);
        }
    }

    #[test]
    fn active_width_and_speed() {
        let text = "switchguid=0x500\ncaguid=0x900\n\
                    Switch 4 \"s\"\n[1] \"h\"[1] w=1 s=3\n[2] \"h\"[2] # \"x\" lid 3 12xFDR\n\n\
                    Ca 2 \"h\"\n[1] \"s\"[1] w=1\n[2] \"s\"[2] # lid 5 lmc 2 \"sw\" lid 7 12xFDR\n";
        let f = Netfile::parse(text).unwrap().to_fabric();
        let h = f.node_by_guid(0x900).unwrap();
        let hp1 = h.port(1).unwrap();
        assert_eq!((hp1.width, hp1.speed), (1, 1), "1x SDR: both ends' best");
        let hp2 = h.port(2).unwrap();
        assert_eq!((hp2.width, hp2.speed_ext, hp2.lid, hp2.lmc), (8, 1, 5, 2));
        assert_eq!(hp2.capability_mask, cap::IS_EXTENDED_SPEEDS_SUPPORTED);
    }

    /// The fuzzer's find: port GUIDs are the node GUID plus the port number, wrapping as in
    /// ibsim's C rather than overflowing.
    #[test]
    fn port_guids_wrap_at_the_top() {
        let n = Netfile::parse("caguid=0xffffffffffffffff\nCa 2 \"h\"\n").unwrap();
        let f = n.to_fabric();
        let h = f.node_by_guid(u64::MAX).unwrap();
        assert_eq!(h.port_guid, 0);
        assert_eq!(h.port(2).unwrap().guid, 1);
    }
}
