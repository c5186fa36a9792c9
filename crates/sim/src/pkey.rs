//! P_KeyTable (IBA Vol 1, 14.2.5.7): Get and Set by block of 32 keys. Every port starts as
//! ibsim's do, with the default full-membership key 0xFFFF at index 0 and the rest 0.

use ibmad::{PKeyTable, Status, SMP_DATA_LEN};

use crate::model::{Fabric, NodeIdx};

/// Keys per block.
const PER_BLOCK: usize = 32;
/// The default partition key, full member.
const DEFAULT_PKEY: u16 = 0xffff;

impl Fabric {
    /// Table size of a port: NodeInfo.PartitionCap on end ports and a switch's port 0 (ibsim:
    /// 64 on CAs and routers, 8 on a switch), SwitchInfo.PartitionEnforcementCap (64) on a
    /// switch's external ports.
    fn pkey_cap(&self, node: NodeIdx, port: u8) -> usize {
        let n = self.node(node);
        usize::from(if n.is_switch() && port != 0 {
            crate::smi::IBSIM_PARTITION_ENFORCEMENT_CAP
        } else {
            crate::smi::partition_cap(n.spec.node_type)
        })
    }

    /// The port a P_KeyTable modifier names (bits 16–23 on a switch; a CA's own port) and the
    /// block (bits 0–15), if the port has that block.
    fn pkey_block(&self, at: NodeIdx, in_port: u8, modifier: u32) -> Option<(u8, usize)> {
        let node = self.node(at);
        let port = if node.is_switch() {
            ((modifier >> 16) & 0xff) as u8
        } else {
            in_port
        };
        node.port(port)?;
        let block = (modifier & 0xffff) as usize;
        (block * PER_BLOCK < self.pkey_cap(at, port)).then_some((port, block))
    }

    /// Get(P_KeyTable) into `data`.
    pub(crate) fn get_pkeys(
        &self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        data: &mut [u8; SMP_DATA_LEN],
    ) -> Status {
        let Some((port, block)) = self.pkey_block(at, in_port, modifier) else {
            return Status(Status::INVALID_ATTR_VALUE);
        };
        let p = &self.node(at).ports[usize::from(port)];
        let mut out = PKeyTable { pkeys: [0; 32] };
        for (i, k) in out.pkeys.iter_mut().enumerate() {
            let index = block * PER_BLOCK + i;
            *k = match &p.pkeys {
                Some(t) => t.get(index).copied().unwrap_or(0),
                None if index == 0 => DEFAULT_PKEY,
                None => 0,
            };
        }
        out.emit(data);
        Status::SUCCESS
    }

    /// Set(P_KeyTable) of one block from `req`.
    pub(crate) fn set_pkeys(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        req: &[u8; SMP_DATA_LEN],
    ) -> Status {
        let Some((port, block)) = self.pkey_block(at, in_port, modifier) else {
            return Status(Status::INVALID_ATTR_VALUE);
        };
        let Ok(keys) = PKeyTable::parse(req) else {
            return Status(Status::INVALID_ATTR_VALUE);
        };
        let cap = self.pkey_cap(at, port);
        let p = &mut self.node_mut(at).ports[usize::from(port)];
        let table = p.pkeys.get_or_insert_with(|| {
            let mut t = vec![0u16; cap].into_boxed_slice();
            t[0] = DEFAULT_PKEY;
            t
        });
        for (i, k) in keys.pkeys.iter().enumerate() {
            if let Some(slot) = table.get_mut(block * PER_BLOCK + i) {
                *slot = *k;
            }
        }
        Status::SUCCESS
    }
}
