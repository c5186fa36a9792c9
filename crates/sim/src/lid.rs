//! LID routing: min-hop linear forwarding tables (what a subnet manager's default routing
//! writes) and packets walked switch by switch through them.

use std::collections::VecDeque;

use ibmad::{PhysPortState, PortState};

use crate::model::{Fabric, NodeIdx};

/// An LFT entry that routes nowhere.
pub const NO_PORT: u8 = 0xff;

impl Fabric {
    /// Writes min-hop LFTs into every switch for every LID the fabric's ports have (ties
    /// broken towards the lowest port number, so the tables are the same every run), and
    /// sets each switch's LinearFDBTop to the highest LID. O(S·(S + L)) for S switches and L
    /// links between them.
    pub fn route_min_hop(&mut self) {
        let n = self.len();
        // Switches by index, and for each, its switch neighbours by port (lowest port first).
        let switches: Vec<NodeIdx> = (0..n as u32)
            .map(NodeIdx)
            .filter(|&i| self.node(i).is_switch())
            .collect();
        let mut top = 0u16;
        // Where each LID lives: the switch it hangs off and the port of that switch.
        let mut owners: Vec<(u16, u16, NodeIdx, u8)> = Vec::new(); // (first lid, count, switch, out port)
        for i in 0..n as u32 {
            let idx = NodeIdx(i);
            let node = self.node(idx);
            if node.is_switch() {
                let p0 = &node.ports[0];
                if p0.lid != 0 {
                    owners.push((p0.lid, 1u16 << p0.lmc.min(7), idx, 0));
                }
                continue;
            }
            for p in node.ports.iter().skip(1) {
                if p.lid == 0 {
                    continue;
                }
                // A CA port reached through the switch it is cabled to.
                if let Some((sw, sw_port)) = p.remote.filter(|(r, _)| self.node(*r).is_switch()) {
                    owners.push((p.lid, 1u16 << p.lmc.min(7), sw, sw_port));
                }
            }
        }
        for &(lid, count, _, _) in &owners {
            top = top.max(lid.saturating_add(count - 1));
        }
        // BFS from every switch over switch-to-switch links: the first port out of it
        // towards every other switch.
        let mut first_hop = vec![NO_PORT; n];
        let mut queue = VecDeque::new();
        for &s in &switches {
            first_hop.iter_mut().for_each(|h| *h = NO_PORT);
            first_hop[s.0 as usize] = 0;
            queue.clear();
            let node = self.node(s);
            for p in node.ports.iter().skip(1) {
                if let Some((r, _)) = p.remote {
                    if self.node(r).is_switch() && first_hop[r.0 as usize] == NO_PORT {
                        first_hop[r.0 as usize] = p.num;
                        queue.push_back(r);
                    }
                }
            }
            while let Some(u) = queue.pop_front() {
                let via = first_hop[u.0 as usize];
                for p in self.node(u).ports.iter().skip(1) {
                    if let Some((r, _)) = p.remote {
                        if self.node(r).is_switch() && first_hop[r.0 as usize] == NO_PORT {
                            first_hop[r.0 as usize] = via;
                            queue.push_back(r);
                        }
                    }
                }
            }
            let mut lft = vec![NO_PORT; usize::from(top) + 1];
            for &(lid, count, owner, port) in &owners {
                let out = if owner == s {
                    port
                } else {
                    first_hop[owner.0 as usize]
                };
                for l in lid..lid.saturating_add(count) {
                    lft[usize::from(l)] = out;
                }
            }
            let sw = self
                .node_mut(s)
                .switch
                .as_mut()
                .expect("a switch has forwarding state");
            sw.lft = lft;
            sw.linear_fdb_top = top;
        }
    }

    /// Whether `lid` is one of the node's LIDs on `port` (a switch's: port 0's range).
    fn owns_lid(&self, node: NodeIdx, port: u8, lid: u16) -> bool {
        let n = self.node(node);
        let p = if n.is_switch() {
            &n.ports[0]
        } else {
            &n.ports[usize::from(port)]
        };
        p.lid != 0 && lid >= p.lid && u32::from(lid) < u32::from(p.lid) + (1u32 << p.lmc.min(7))
    }

    /// Where a packet sent from `from` to `dlid` arrives (node and the port it came in on),
    /// walking the links and the switches' LFTs; `None` when it is dropped: no route, a LID
    /// past a switch's table, or a port on the way that is not LinkUp and Active.
    pub fn lid_route(&self, from: (NodeIdx, u8), dlid: u16) -> Option<(NodeIdx, u8)> {
        self.lid_path(from, dlid, &mut Vec::new())
    }

    /// [`Fabric::lid_route`], recording every link crossed in `hops` (also those of a
    /// packet dropped on the way).
    pub(crate) fn lid_path(
        &self,
        from: (NodeIdx, u8),
        dlid: u16,
        hops: &mut Vec<crate::smi::Hop>,
    ) -> Option<(NodeIdx, u8)> {
        if self.owns_lid(from.0, from.1, dlid) {
            return Some(from);
        }
        let usable = |node: NodeIdx, port: u8| {
            let p = &self.node(node).ports[usize::from(port)];
            p.phys == PhysPortState::LinkUp && p.state == PortState::Active
        };
        let (mut at, mut out) = from;
        if self.node(at).is_switch() {
            // From a switch's port 0: its own table picks the first port.
            out = self.node(at).switch.as_ref()?.route(dlid)?;
            if out == NO_PORT || out == 0 {
                return None;
            }
        }
        // Any number of switches (ibsim stops at 16): a path without a loop crosses each
        // node at most once, so one more hop than there are nodes is a loop in the tables.
        for _ in 0..=self.len() {
            let port = self.node(at).port(out)?;
            let (next, in_port) = port.remote?;
            if !usable(at, out) || !usable(next, in_port) {
                return None;
            }
            hops.push(((at, out), (next, in_port)));
            let node = self.node(next);
            if !node.is_switch() {
                return self
                    .owns_lid(next, in_port, dlid)
                    .then_some((next, in_port));
            }
            if self.owns_lid(next, 0, dlid) {
                return Some((next, in_port));
            }
            out = node.switch.as_ref()?.route(dlid)?;
            if out == NO_PORT || out == 0 {
                return None;
            }
            at = next;
        }
        None
    }

    /// The LID a reply to a packet from `port` of `node` is sent to.
    pub fn lid_of(&self, node: NodeIdx, port: u8) -> u16 {
        self.node(node).lid_of(port)
    }
}
