//! The state a subnet manager leaves behind, for a fabric that starts configured (the
//! default in process, where no SM runs): a LID for every CA port and every switch, and
//! every linked port Active.

use ibmad::PortState;

use crate::model::{Fabric, NodeIdx, MAX_UNICAST_LID};

impl Fabric {
    /// Assigns LIDs (LIDs already set are kept; the others are given in node order from the
    /// lowest free one, one per switch and per CA port, each 2^LMC-aligned with LMC 0) and
    /// makes every linked port Active and writes min-hop LFTs ([`Fabric::route_min_hop`]), as
    /// a sweep would. Returns the highest LID given, or
    /// `None` when the unicast LID space ran out (the ports left have LID 0).
    pub fn configure(&mut self, sm_lid: Option<u16>) -> Option<u16> {
        let mut used = vec![false; usize::from(MAX_UNICAST_LID) + 1];
        used[0] = true;
        // A LID already set holds its whole 2^LMC range (a builder may have set any value:
        // what lies past the unicast range is not marked, and not given).
        for n in self.nodes() {
            for p in &n.ports {
                if p.lid != 0 {
                    let end = (usize::from(p.lid) + (1usize << p.lmc.min(7))).min(used.len());
                    let start = usize::from(p.lid).min(end);
                    used[start..end].iter_mut().for_each(|u| *u = true);
                }
            }
        }
        let mut next = 1usize;
        let mut top = 0u16;
        let mut full = false;
        for i in 0..self.len() {
            let idx = NodeIdx(i as u32);
            let switch = self.node(idx).is_switch();
            let nums: Vec<u8> = if switch {
                vec![0]
            } else {
                (1..=self.node(idx).spec.num_ports).collect()
            };
            for num in nums {
                let port = &mut self.node_mut(idx).ports[usize::from(num)];
                if port.lid == 0 {
                    while next < used.len() && used[next] {
                        next += 1;
                    }
                    if next >= used.len() {
                        full = true;
                        continue;
                    }
                    used[next] = true;
                    port.lid = next as u16;
                }
                top = top.max(port.lid);
            }
        }
        let sm = sm_lid.unwrap_or(1);
        for i in 0..self.len() {
            let node = self.node_mut(NodeIdx(i as u32));
            let switch = node.is_switch();
            for p in &mut node.ports {
                if p.remote.is_some() || (switch && p.num == 0) {
                    p.state = PortState::Active;
                    p.master_sm_lid = sm;
                    // The ports the SM programs (CA ports and switch port 0) get the
                    // default subnet prefix.
                    if sm != 0 && !(switch && p.num > 0) {
                        p.gid_prefix = crate::smi::DEFAULT_GID_PREFIX;
                    }
                }
            }
            // The sweep cleared PortStateChange.
            if let Some(sw) = node.switch.as_mut().filter(|_| sm != 0) {
                sw.port_state_change = false;
            }
        }
        self.route_min_hop();
        (!full).then_some(top)
    }
}
