//! Fabrics for tests, here and in the crates that use this one (not part of the API).

use ibmad::{NodeType, PhysPortState, PortState};

use crate::{Fabric, Node, Origin, Port, PortRef};

/// A small fabric built by hand: a switch `0x200` (`sw "one"`, LID 1, 4 ports: 1 and 2
/// active, 3 and 4 down) with CAs `0x10` and `0x20` (`host0 HCA-1`, `host1 HCA-1`, LIDs 2
/// and 3) on its ports 1 and 2, discovered from CA 0x10.
pub fn small() -> Fabric {
    let mut f = Fabric::default();
    let mut sw = Node::new(NodeType::Switch, 4, 0x200);
    sw.description = "sw \"one\"".into();
    sw.lid = 1;
    sw.port_guid = 0x200;
    sw.enhanced_port0 = true;
    sw.system_image_guid = 0x200;
    for p in 0..=4 {
        let mut port = Port::new(p, 0x200);
        port.lid = 1;
        port.state = if p <= 2 {
            PortState::Active
        } else {
            PortState::Down
        };
        port.phys_state = if p <= 2 {
            PhysPortState::LinkUp
        } else {
            PhysPortState::Polling
        };
        port.width = 2;
        port.speed = 4;
        port.vl_cap = 4;
        sw.set_port(port);
    }
    f.nodes.push(sw);
    for (i, g) in [0x10u64, 0x20].into_iter().enumerate() {
        let mut ca = Node::new(NodeType::ChannelAdapter, 2, g);
        ca.description = format!("host{i} HCA-1");
        ca.port_guid = g + 1;
        ca.local_port = 1;
        let mut port = Port::new(1, g + 1);
        port.state = PortState::Active;
        port.phys_state = PhysPortState::LinkUp;
        port.width = 2;
        port.speed = 4;
        port.lid = 2 + i as u16;
        ca.set_port(port);
        f.nodes.push(ca);
        assert!(f.link(
            PortRef {
                node: 0,
                port: 1 + i as u8
            },
            PortRef {
                node: 1 + i,
                port: 1
            }
        ));
    }
    f.from = Some(Origin { node: 1, port: 1 });
    f.validate().unwrap();
    f
}
