//! Chassis grouping, as libibnetdisc's `group_nodes` (`libibnetdisc/chassis.c`) does it for
//! nodes that are not Voltaire's: nodes sharing a chassis GUID (their SystemImageGUID, with
//! the Topspin and Xsigo adjustments) form a chassis when there are at least two of them.
//!
//! Not reproduced: Voltaire chassis (vendor 0x8f1: spine/line chips found from the internal
//! wiring) and Mellanox IS4 chassis (device 0xbd36 with an `MF0;…` description): their
//! nodes are left out of the grouping here.

use crate::model::{Chassis, Fabric, Node, NodeChassis};

/// Voltaire (`VTR_VENDOR_ID`).
pub const VENDOR_VOLTAIRE: u32 = 0x8f1;
/// Cisco/Topspin (`TS_VENDOR_ID`).
pub const VENDOR_TOPSPIN: u32 = 0x5ad;
/// InfiniCon (`SS_VENDOR_ID`).
pub const VENDOR_INFINICON: u32 = 0x66a;
/// Xsigo (`XS_VENDOR_ID`).
pub const VENDOR_XSIGO: u32 = 0x1397;

const MASK_BYTE_4: u64 = 0xffff_ffff_00ff_ffff;

fn is_xsigo_guid(guid: u64) -> bool {
    guid & 0xffff_ff00_0000_0000 == 0x0013_9700_0000_0000
}

fn is_xsigo_leaf_one(guid: u64) -> bool {
    guid & 0xffff_ffff_ff00_0000 == 0x0013_9701_0200_0000
}

fn is_xsigo_switch(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9701_0000_0000
}

fn is_xsigo_ca(guid: u64) -> bool {
    let t = guid & 0xffff_ffff_0000_0000;
    t == 0x0013_9702_0000_0000 || t == 0x0013_9703_0000_0000
}

impl Fabric {
    /// The chassis GUID libibnetdisc files `node` under (`get_chassisguid`); 0 = none.
    pub fn chassis_guid(&self, node: &Node) -> u64 {
        let sys = node.system_image_guid;
        if node.vendor_id == VENDOR_TOPSPIN || node.vendor_id == VENDOR_INFINICON {
            return sys & MASK_BYTE_4;
        }
        if !(node.vendor_id == VENDOR_XSIGO || is_xsigo_guid(sys)) {
            return sys;
        }
        if !is_xsigo_ca(sys) {
            return if is_xsigo_switch(sys) {
                sys & MASK_BYTE_4
            } else {
                sys
            };
        }
        let Some(p1) = node.port(1) else {
            return 0;
        };
        let Some(peer) = p1.remote.and_then(|r| self.nodes.get(r.node)) else {
            return sys;
        };
        if is_xsigo_leaf_one(peer.system_image_guid) {
            peer.system_image_guid & MASK_BYTE_4
        } else {
            sys
        }
    }

    /// Recomputes [`Fabric::chassis`] and every [`Node::chassis`] as libibnetdisc's grouping
    /// does for non-Voltaire nodes (see the module docs). Chassis are numbered in node order
    /// (the second pass over the all-nodes list), so the numbers match the C tool's when
    /// [`Fabric::nodes`] is in libibnetdisc's order (a discovery, or text with `-s` progress
    /// records); only numbered chassis (two or more nodes) are kept, in the order their first
    /// node appears, each with its members in libibnetdisc's list order (last added first).
    pub fn group_chassis(&mut self) {
        // First pass: a record per chassis GUID, in node order, with its node count.
        let mut found: Vec<(u64, usize)> = Vec::new();
        // Where each chassis GUID is in `found`: O(1) a node (a scan was O(N²) on fabrics
        // whose every node is its own system image, 16 % of a 10,400-node discovery).
        let mut index: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        let guids: Vec<Option<u64>> = self
            .nodes
            .iter()
            .map(|n| {
                (n.vendor_id != VENDOR_VOLTAIRE && n.system_image_guid != 0)
                    .then(|| self.chassis_guid(n))
            })
            .collect();
        for &g in guids.iter().flatten() {
            match index.entry(g) {
                std::collections::hash_map::Entry::Occupied(k) => found[*k.get()].1 += 1,
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(found.len());
                    found.push((g, 1));
                }
            }
        }
        // Second pass: number the chassis with more than one node, add the nodes.
        let mut numbers: Vec<u8> = vec![0; found.len()];
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); found.len()];
        let mut next: u8 = 0;
        for (i, g) in guids.iter().enumerate() {
            self.nodes[i].chassis = None;
            let Some(g) = g else { continue };
            let Some(&k) = index.get(g) else {
                continue;
            };
            if found[k].1 < 2 {
                continue;
            }
            if numbers[k] == 0 {
                // `++chassisnum` stored in an unsigned char.
                next = next.wrapping_add(1);
                numbers[k] = next;
            }
            members[k].insert(0, i);
            self.nodes[i].chassis = Some(NodeChassis {
                number: numbers[k],
                chassis_type: None,
                slot: None,
            });
        }
        self.chassis = found
            .iter()
            .zip(numbers)
            .zip(members)
            .filter(|((_, n), _)| *n != 0)
            .map(|(((guid, _), number), nodes)| Chassis {
                number,
                guid: *guid,
                nodes,
                spines: Vec::new(),
                lines: Vec::new(),
            })
            .collect();
    }
}
