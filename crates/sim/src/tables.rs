//! The SMA's remaining tables, Get and Set: GUIDInfo (IBA Vol 1, 14.2.5.5), SLtoVLMappingTable
//! (14.2.5.8), VLArbitrationTable (14.2.5.9) and MulticastForwardingTable (14.2.5.12).
//!
//! Every table starts as ibsim 0.10's (`sim_net.c`): GUID index 0 is the port GUID and the
//! rest 0; SL n to VL n, SL 15 to VL 7; VL arbitration Low `{VL0 0, VL1-14 4}`, High
//! `{VL0 4, VL1-14 0}`; every multicast mask 0. A table is stored only once an SM writes it,
//! so that an untouched fabric of 40,000 nodes costs nothing. The wire formats are ibmad's
//! (`GuidInfo`, `SlToVlTable`, `VlArbTable`, `MulticastForwardingTable`).
//!
//! Where ibsim answers wrongly this follows hardware: a block, port or position a node does
//! not have is "invalid attribute value" (ibsim answers zeros, or reads past its tables), and
//! GUIDInfo takes a Set (ibsim refuses it).

use ibmad::{GuidInfo, MulticastForwardingTable, SlToVlTable, Status, VlArbTable, SMP_DATA_LEN};

use crate::model::{Fabric, Node, NodeIdx};
use crate::smi::{port_template, IBSIM_MULTICAST_FDB_CAP};

const INVALID: Status = Status(Status::INVALID_ATTR_VALUE);

/// The SL-to-VL table every ibsim port starts with: SL n to VL n, SL 15 to VL 7
/// (`default_sl2vl`).
const IBSIM_SL2VL: SlToVlTable = SlToVlTable {
    vls: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7],
};

/// Entries of ibsim's default VL arbitration tables (`default_vlarb_low`, `_high`): VL n for
/// entry n below this; the rest are 0.
const IBSIM_VLARB_ENTRIES: u8 = 15;
/// The weight of ibsim's default arbitration entries that have one: Low entries 1-14, High
/// entry 0.
const IBSIM_VLARB_WEIGHT: u8 = 4;

/// VLArbitrationTable blocks (the attribute modifier's upper 16 bits, 1-4).
const VLARB_BLOCKS: usize = 4;

/// The port whose GUID table a GUIDInfo names: a switch's port 0 (its only port with
/// GUIDs), a CA's or router's port the SMP came in on.
fn guid_port(node: &Node, in_port: u8) -> u8 {
    if node.is_switch() {
        0
    } else {
        in_port
    }
}

/// ibsim's VL arbitration table block `block` (0-3: Low 0-31, Low 32-63, High 0-31,
/// High 32-63) as every port starts.
fn ibsim_vlarb(block: usize) -> VlArbTable {
    let mut t = VlArbTable::default();
    if block % 2 == 0 {
        let high = block >= 2;
        for (vl, e) in (0..IBSIM_VLARB_ENTRIES).zip(t.entries.iter_mut()) {
            e.vl = vl;
            // Low: every VL but VL0; High: VL0 only.
            if (vl == 0) == high {
                e.weight = IBSIM_VLARB_WEIGHT;
            }
        }
    }
    t
}

/// Where a VLArbitrationTable modifier points: the port, the block (0-3) and how many of
/// its entries the port has (by PortInfo.VLArbitrationLowCap/HighCap).
struct VlArbAt {
    port: u8,
    block: usize,
    entries: usize,
}

impl Fabric {
    /// Get(GUIDInfo) of block `modifier` (8 GUIDs) into `data`: refused past GUIDCap.
    pub(crate) fn get_guids(
        &self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        data: &mut [u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let num = guid_port(node, in_port);
        let Some((first, _)) = Self::guid_block(node, num, modifier) else {
            return INVALID;
        };
        let p = &node.ports[usize::from(num)];
        let mut out = GuidInfo::default();
        for (index, g) in (first..).zip(out.guids.iter_mut()) {
            // The stored table has GUIDCap entries: past it, 0.
            *g = match index {
                0 => p.guid,
                i => p.guids.as_ref().and_then(|t| t.get(i)).map_or(0, |g| *g),
            };
        }
        out.emit(data);
        Status::SUCCESS
    }

    /// Set(GUIDInfo) of block `modifier` from `req`: every entry of the port's table but
    /// index 0 (the port GUID, which an SM cannot change).
    pub(crate) fn set_guids(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        req: &[u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let num = guid_port(node, in_port);
        let Some((first, cap)) = Self::guid_block(node, num, modifier) else {
            return INVALID;
        };
        let Ok(block) = GuidInfo::parse(req) else {
            return INVALID;
        };
        let p = &mut self.node_mut(at).ports[usize::from(num)];
        let table = p
            .guids
            .get_or_insert_with(|| vec![0; cap].into_boxed_slice());
        for (index, g) in (first..).zip(block.guids) {
            match table.get_mut(index) {
                Some(slot) if index > 0 => *slot = g,
                _ => {}
            }
        }
        Status::SUCCESS
    }

    /// The first GUID index of GUIDInfo block `modifier` of port `num` and the port's
    /// GUIDCap (PortInfo's), if the block is within it.
    fn guid_block(node: &Node, num: u8, modifier: u32) -> Option<(usize, usize)> {
        node.port(num)?;
        let cap = usize::from(port_template(node, num).guid_cap);
        let first = usize::try_from(modifier)
            .ok()?
            .checked_mul(GuidInfo::GUIDS_PER_BLOCK)?;
        (first < cap).then_some((first, cap))
    }

    /// The table an SLtoVLMappingTable modifier names: on a switch, input port bits 8-15
    /// and output port bits 0-7 (both ports the switch has; bits 16 and up, the optional
    /// all-ports forms, refused); on a CA or router the port the SMP came in on (the
    /// modifier is ignored). The port holding the table and the table's index there.
    fn sl2vl_at(node: &Node, in_port: u8, modifier: u32) -> Option<(u8, usize)> {
        if !node.is_switch() {
            return Some((in_port, 0));
        }
        if modifier > 0xffff {
            return None;
        }
        let (input, output) = ((modifier >> 8) as u8, modifier as u8);
        node.port(input)?;
        node.port(output)?;
        Some((input, usize::from(output)))
    }

    /// Get(SLtoVLMappingTable) into `data`.
    pub(crate) fn get_sl2vl(
        &self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        data: &mut [u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let Some((port, index)) = Self::sl2vl_at(node, in_port, modifier) else {
            return INVALID;
        };
        let p = &node.ports[usize::from(port)];
        let table = p
            .sl2vl
            .as_ref()
            .and_then(|t| t.get(index))
            .map_or(IBSIM_SL2VL, |t| *t);
        data.fill(0);
        table.emit(data);
        Status::SUCCESS
    }

    /// Set(SLtoVLMappingTable) from `req`: any VL (15 drops) for each SL.
    pub(crate) fn set_sl2vl(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        req: &[u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let Some((port, index)) = Self::sl2vl_at(node, in_port, modifier) else {
            return INVALID;
        };
        let Ok(table) = SlToVlTable::parse(req) else {
            return INVALID;
        };
        // A switch's input port has a table to every port, 0 included; a CA's port one.
        let tables = if node.is_switch() {
            usize::from(node.spec.num_ports) + 1
        } else {
            1
        };
        let p = &mut self.node_mut(at).ports[usize::from(port)];
        let stored = p
            .sl2vl
            .get_or_insert_with(|| vec![IBSIM_SL2VL; tables].into_boxed_slice());
        if let Some(slot) = stored.get_mut(index) {
            *slot = table;
        }
        Status::SUCCESS
    }

    /// Where a VLArbitrationTable modifier points: block bits 16-31 (1-4), and on a switch
    /// the port in bits 0-15 (any port the switch has); a CA or router's table is the port
    /// the SMP came in on. A block past the port's Low/HighCap is refused.
    fn vlarb_at(node: &Node, in_port: u8, modifier: u32) -> Option<VlArbAt> {
        let port = if node.is_switch() {
            u8::try_from(modifier & 0xffff).ok()?
        } else {
            in_port
        };
        node.port(port)?;
        let block = usize::try_from(modifier >> 16).ok()?.checked_sub(1)?;
        if block >= VLARB_BLOCKS {
            return None;
        }
        let pi = port_template(node, port);
        let cap = usize::from(if block >= 2 {
            pi.vl_arbitration_high_cap
        } else {
            pi.vl_arbitration_low_cap
        });
        let per = VlArbTable::ENTRIES_PER_BLOCK;
        let skip = (block % 2) * per;
        (cap > skip).then(|| VlArbAt {
            port,
            block,
            entries: (cap - skip).min(per),
        })
    }

    /// Get(VLArbitrationTable) of one block into `data`: the entries the port has, the rest
    /// of the block 0.
    pub(crate) fn get_vlarb(
        &self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        data: &mut [u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let Some(a) = Self::vlarb_at(node, in_port, modifier) else {
            return INVALID;
        };
        let p = &node.ports[usize::from(a.port)];
        let stored = p
            .vlarb
            .as_ref()
            .map_or_else(|| ibsim_vlarb(a.block), |t| t[a.block]);
        let mut out = VlArbTable::default();
        out.entries[..a.entries].copy_from_slice(&stored.entries[..a.entries]);
        out.emit(data);
        Status::SUCCESS
    }

    /// Set(VLArbitrationTable) of one block from `req`: the entries the port has (the
    /// reserved bits beside each VL are not kept), the rest of the block ignored.
    pub(crate) fn set_vlarb(
        &mut self,
        at: NodeIdx,
        in_port: u8,
        modifier: u32,
        req: &[u8; SMP_DATA_LEN],
    ) -> Status {
        let Some(a) = Self::vlarb_at(self.node(at), in_port, modifier) else {
            return INVALID;
        };
        let Ok(block) = VlArbTable::parse(req) else {
            return INVALID;
        };
        let p = &mut self.node_mut(at).ports[usize::from(a.port)];
        let stored = p
            .vlarb
            .get_or_insert_with(|| Box::new(std::array::from_fn(ibsim_vlarb)));
        for (slot, e) in stored[a.block].entries[..a.entries]
            .iter_mut()
            .zip(block.entries)
        {
            *slot = ibmad::attr::VlArbEntry { reserved: 0, ..e };
        }
        Status::SUCCESS
    }

    /// Where a MulticastForwardingTable modifier points in switch `node`'s table (laid out
    /// by block, then PortMask position, then MLID): block bits 0-8, below
    /// MulticastFDBCap / 32; PortMask position bits 28-31, one of those covering ports 0
    /// to N; the bits between reserved (refused when set). The index of the block's first
    /// mask, and the table's length.
    fn mft_at(node: &Node, modifier: u32) -> Option<(usize, usize)> {
        let per = MulticastForwardingTable::MLIDS_PER_BLOCK;
        let positions = Self::mft_positions(node);
        let block = (modifier & 0x1ff) as usize;
        let position = (modifier >> 28) as usize;
        let reserved = modifier & 0x0fff_fe00;
        let blocks = usize::from(IBSIM_MULTICAST_FDB_CAP) / per;
        if reserved != 0 || block >= blocks || position >= positions {
            return None;
        }
        Some((
            (block * positions + position) * per,
            blocks * positions * per,
        ))
    }

    /// PortMask positions of switch `node`: 16 ports each, from port 0 to its last.
    fn mft_positions(node: &Node) -> usize {
        (usize::from(node.spec.num_ports) + 1).div_ceil(MulticastForwardingTable::PORTS_PER_MASK)
    }

    /// Get(MulticastForwardingTable) of one block and position of switch `at` into `data`.
    pub(crate) fn get_mft(
        &self,
        at: NodeIdx,
        modifier: u32,
        data: &mut [u8; SMP_DATA_LEN],
    ) -> Status {
        let node = self.node(at);
        let Some((first, _)) = Self::mft_at(node, modifier) else {
            return INVALID;
        };
        let mut out = MulticastForwardingTable::default();
        if let Some(t) = node.switch.as_ref().and_then(|s| s.mft.as_ref()) {
            out.port_masks
                .copy_from_slice(&t[first..first + MulticastForwardingTable::MLIDS_PER_BLOCK]);
        }
        out.emit(data);
        Status::SUCCESS
    }

    /// Set(MulticastForwardingTable) of one block and position of switch `at` from `req`.
    pub(crate) fn set_mft(
        &mut self,
        at: NodeIdx,
        modifier: u32,
        req: &[u8; SMP_DATA_LEN],
    ) -> Status {
        let Some((first, len)) = Self::mft_at(self.node(at), modifier) else {
            return INVALID;
        };
        let Ok(block) = MulticastForwardingTable::parse(req) else {
            return INVALID;
        };
        let Some(sw) = self.node_mut(at).switch.as_mut() else {
            return Status(Status::METHOD_ATTR_NOT_SUPPORTED);
        };
        let t = sw
            .mft
            .get_or_insert_with(|| vec![0; len].into_boxed_slice());
        t[first..first + MulticastForwardingTable::MLIDS_PER_BLOCK]
            .copy_from_slice(&block.port_masks);
        Status::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use ibmad::{attr::id, DrPath, Method, Smp};

    use super::*;
    use crate::{Builder, NodeSpec, Origin};

    fn spec(node_type: ibmad::NodeType, id: &str, ports: u8, guid: u64) -> NodeSpec {
        NodeSpec {
            node_type,
            id: id.into(),
            description: id.into(),
            num_ports: ports,
            guid,
            system_image_guid: guid,
            vendor_id: 0x2c9,
            device_id: 0xb924,
            enhanced_port0: false,
            origin: Origin::default(),
        }
    }

    /// h1 (2 ports) port 1 ─ port 1 of sw (18 ports) ─ port 2: h2; h1 port 2 unlinked.
    fn fabric() -> (Fabric, NodeIdx, NodeIdx, NodeIdx) {
        let mut b = Builder::new();
        let ca = ibmad::NodeType::ChannelAdapter;
        let h1 = b.node(spec(ca, "h1", 2, 0x100)).unwrap();
        let sw = b
            .node(spec(ibmad::NodeType::Switch, "sw", 18, 0x200))
            .unwrap();
        let h2 = b.node(spec(ca, "h2", 1, 0x300)).unwrap();
        let o = Origin::default();
        b.link((h1, 1), (sw, 1), &o).unwrap();
        b.link((sw, 2), (h2, 1), &o).unwrap();
        (b.build(), h1, sw, h2)
    }

    /// `method`(`attr`, `modifier`) from h1 port 1 along `hops` with `data`: the status and
    /// the answer's data.
    fn call(
        f: &mut Fabric,
        from: (NodeIdx, u8),
        method: Method,
        attr: u16,
        modifier: u32,
        hops: &[u8],
        data: &[u8],
    ) -> (Status, [u8; 64]) {
        let path = DrPath::from_hops(hops).unwrap();
        let mut req = Smp::dr_request(method, attr, modifier, 0x55, &path);
        req[64..64 + data.len()].copy_from_slice(data);
        let r = f.smp(from, &req).unwrap();
        let smp = Smp::new_checked(&r[..]).unwrap();
        assert_eq!(smp.method(), Method::GetResp);
        let mut out = [0u8; 64];
        out.copy_from_slice(smp.data());
        (smp.status().without_direction(), out)
    }

    fn emitted(f: impl FnOnce(&mut [u8])) -> [u8; 64] {
        let mut b = [0u8; 64];
        f(&mut b);
        b
    }

    #[test]
    fn guid_info_starts_with_the_port_guid_and_takes_aliases() {
        let (mut f, h1, _, _) = fabric();
        let from = (h1, 1);
        let get = |f: &mut Fabric, m: u32, hops: &[u8]| {
            let (st, d) = call(f, from, Method::Get, id::GUID_INFO, m, hops, &[]);
            (st, GuidInfo::parse(&d).unwrap().guids)
        };
        // A CA port: GUIDCap 32 (4 blocks), index 0 its port GUID.
        let (st, g) = get(&mut f, 0, &[]);
        assert!(st.is_success());
        assert_eq!(g, [0x101, 0, 0, 0, 0, 0, 0, 0]);
        assert!(get(&mut f, 3, &[]).0.is_success());
        assert_eq!(get(&mut f, 4, &[]).0, INVALID);
        assert_eq!(get(&mut f, u32::MAX, &[]).0, INVALID);
        // A switch: port 0's table, GUIDCap 1.
        let (st, g) = get(&mut f, 0, &[1]);
        assert!(st.is_success());
        assert_eq!(g[0], 0x200);
        assert_eq!(get(&mut f, 1, &[1]).0, INVALID);
        // A Set writes every entry but index 0 and answers with the block after it.
        let mut block = GuidInfo {
            guids: [0xdead, 0xa1, 0, 0, 0, 0, 0, 0xa7],
        };
        let req = emitted(|b| block.emit(b));
        let (st, d) = call(&mut f, from, Method::Set, id::GUID_INFO, 0, &[], &req);
        assert!(st.is_success());
        assert_eq!(
            GuidInfo::parse(&d).unwrap().guids,
            [0x101, 0xa1, 0, 0, 0, 0, 0, 0xa7]
        );
        block.guids = [0xb8; 8];
        let req = emitted(|b| block.emit(b));
        assert!(call(&mut f, from, Method::Set, id::GUID_INFO, 3, &[], &req)
            .0
            .is_success());
        assert_eq!(get(&mut f, 3, &[]).1, [0xb8; 8]);
        assert_eq!(get(&mut f, 0, &[]).1[1], 0xa1);
        // Refused past GUIDCap, and nothing changes; a switch's one entry is its GUID.
        let before = f.node(h1).ports[1].guids.clone();
        assert_eq!(
            call(&mut f, from, Method::Set, id::GUID_INFO, 4, &[], &req).0,
            INVALID
        );
        assert_eq!(f.node(h1).ports[1].guids, before);
        let (st, d) = call(&mut f, from, Method::Set, id::GUID_INFO, 0, &[1], &req);
        assert!(st.is_success());
        assert_eq!(
            GuidInfo::parse(&d).unwrap().guids,
            [0x200, 0, 0, 0, 0, 0, 0, 0]
        );
        // The CA's other port keeps its own table.
        assert_eq!(f.node(h1).ports[2].guids, None);
    }

    #[test]
    fn sl2vl_tables_start_as_ibsim_and_are_addressed_by_port_pairs() {
        let (mut f, h1, sw, _) = fabric();
        let from = (h1, 1);
        let ibsim = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7];
        let get = |f: &mut Fabric, m: u32, hops: &[u8]| {
            call(f, from, Method::Get, id::SL2VL, m, hops, &[])
        };
        let (st, d) = get(&mut f, 0, &[]);
        assert!(st.is_success());
        assert_eq!(d[..8], ibsim);
        assert!(d[8..].iter().all(|&b| b == 0));
        // A CA ignores the modifier; a switch takes input port 8-15, output port 0-7.
        assert_eq!(get(&mut f, 0x1234_5678, &[]).1[..8], ibsim);
        assert!(get(&mut f, 0x1200, &[1]).0.is_success());
        assert!(get(&mut f, 0x0012, &[1]).0.is_success());
        for bad in [0x1300, 0x0013, 0xff00, 0x1_0000, u32::MAX] {
            assert_eq!(get(&mut f, bad, &[1]).0, INVALID, "{bad:#x}");
        }
        // A Set writes one (input, output) table only.
        let t = SlToVlTable::modulo(4);
        let req = emitted(|b| t.emit(b));
        let (st, d) = call(&mut f, from, Method::Set, id::SL2VL, 0x0305, &[1], &req);
        assert!(st.is_success());
        assert_eq!(SlToVlTable::parse(&d).unwrap(), t);
        assert_eq!(SlToVlTable::parse(&get(&mut f, 0x0305, &[1]).1).unwrap(), t);
        assert_eq!(get(&mut f, 0x0306, &[1]).1[..8], ibsim);
        assert_eq!(get(&mut f, 0x0503, &[1]).1[..8], ibsim);
        assert_eq!(f.node(sw).ports[3].sl2vl.as_ref().unwrap().len(), 19);
        // A CA's port: its own table.
        assert!(call(&mut f, from, Method::Set, id::SL2VL, 0, &[], &req)
            .0
            .is_success());
        assert_eq!(SlToVlTable::parse(&get(&mut f, 0, &[]).1).unwrap(), t);
        assert_eq!(f.node(h1).ports[2].sl2vl, None);
        assert_eq!(
            call(&mut f, from, Method::Set, id::SL2VL, 0x1300, &[1], &req).0,
            INVALID
        );
    }

    #[test]
    fn vl_arbitration_blocks_follow_the_caps() {
        let (mut f, h1, sw, _) = fabric();
        let from = (h1, 1);
        let get = |f: &mut Fabric, m: u32, hops: &[u8]| {
            let (st, d) = call(f, from, Method::Get, id::VL_ARB, m, hops, &[]);
            (st, VlArbTable::parse(&d).unwrap())
        };
        // ibsim's start, 8 entries (the caps) of each: Low VL0 0, VL1-7 4; High VL0 4.
        let (st, low) = get(&mut f, 1 << 16, &[]);
        assert!(st.is_success());
        let pairs = |t: &VlArbTable| t.entries.map(|e| (e.vl, e.weight));
        let mut want = [(0, 0); 32];
        for (i, w) in want.iter_mut().enumerate().take(8) {
            *w = (i as u8, if i == 0 { 0 } else { 4 });
        }
        assert_eq!(pairs(&low), want);
        let (st, high) = get(&mut f, 3 << 16, &[]);
        assert!(st.is_success());
        for (i, w) in want.iter_mut().enumerate().take(8) {
            *w = (i as u8, if i == 0 { 4 } else { 0 });
        }
        assert_eq!(pairs(&high), want);
        // Blocks 2 and 4 are past the caps (8); 0 and 5 are no block.
        for bad in [0, 2 << 16, 4 << 16, 5 << 16, u32::MAX] {
            assert_eq!(get(&mut f, bad, &[]).0, INVALID, "{bad:#x}");
        }
        // A switch: the port in bits 0-15, 0 to 18.
        assert!(get(&mut f, 1 << 16 | 18, &[1]).0.is_success());
        assert!(get(&mut f, 3 << 16, &[1]).0.is_success());
        assert_eq!(get(&mut f, 1 << 16 | 19, &[1]).0, INVALID);
        assert_eq!(get(&mut f, 1 << 16 | 0x100, &[1]).0, INVALID);
        // A Set keeps the entries the port has, without the reserved bits.
        let mut t = VlArbTable::default();
        for (i, e) in t.entries.iter_mut().enumerate() {
            *e = ibmad::attr::VlArbEntry {
                reserved: 0xf,
                vl: (i % 4) as u8,
                weight: 0x40 + i as u8,
            };
        }
        let req = emitted(|b| t.emit(b));
        let (st, d) = call(
            &mut f,
            from,
            Method::Set,
            id::VL_ARB,
            1 << 16 | 5,
            &[1],
            &req,
        );
        assert!(st.is_success());
        let back = VlArbTable::parse(&d).unwrap();
        for (i, e) in back.entries.iter().enumerate() {
            let want = if i < 8 {
                ibmad::attr::VlArbEntry {
                    reserved: 0,
                    vl: (i % 4) as u8,
                    weight: 0x40 + i as u8,
                }
            } else {
                ibmad::attr::VlArbEntry::default()
            };
            assert_eq!(*e, want, "entry {i}");
        }
        assert_eq!(pairs(&get(&mut f, 3 << 16 | 5, &[1]).1)[0], (0, 4));
        assert_eq!(pairs(&get(&mut f, 1 << 16 | 6, &[1]).1)[1], (1, 4));
        assert!(f.node(sw).ports[5].vlarb.is_some());
        assert_eq!(
            call(
                &mut f,
                from,
                Method::Set,
                id::VL_ARB,
                2 << 16 | 5,
                &[1],
                &req
            )
            .0,
            INVALID
        );
    }

    #[test]
    fn multicast_tables_are_switch_blocks_by_position() {
        let (mut f, h1, sw, _) = fabric();
        let from = (h1, 1);
        let get = |f: &mut Fabric, m: u32, hops: &[u8]| {
            let (st, d) = call(f, from, Method::Get, id::MFT, m, hops, &[]);
            (st, MulticastForwardingTable::parse(&d).unwrap().port_masks)
        };
        let mft_mod = ibmad::attr::mft_attr_mod;
        // 18 ports: positions 0 and 1 (ports 0-15, 16-31); 1024 MLIDs: blocks 0-31.
        assert_eq!(get(&mut f, 0, &[1]), (Status::SUCCESS, [0; 32]));
        assert!(get(&mut f, mft_mod(31, 1), &[1]).0.is_success());
        for bad in [mft_mod(32, 0), mft_mod(0, 2), 1 << 9, 0x0800_0000, u32::MAX] {
            assert_eq!(get(&mut f, bad, &[1]).0, INVALID, "{bad:#x}");
        }
        // Not a CA's.
        assert_eq!(
            get(&mut f, 0, &[]).0,
            Status(Status::METHOD_ATTR_NOT_SUPPORTED)
        );
        let mut t = MulticastForwardingTable::default();
        t.port_masks[0] = 0x0007;
        t.port_masks[31] = 0x8001;
        let req = emitted(|b| t.emit(b));
        let (st, d) = call(
            &mut f,
            from,
            Method::Set,
            id::MFT,
            mft_mod(5, 1),
            &[1],
            &req,
        );
        assert!(st.is_success());
        assert_eq!(MulticastForwardingTable::parse(&d).unwrap(), t);
        assert_eq!(get(&mut f, mft_mod(5, 1), &[1]).1, t.port_masks);
        assert_eq!(get(&mut f, mft_mod(5, 0), &[1]).1, [0; 32]);
        assert_eq!(get(&mut f, mft_mod(6, 1), &[1]).1, [0; 32]);
        assert_eq!(get(&mut f, mft_mod(4, 1), &[1]).1, [0; 32]);
        assert_eq!(
            f.node(sw)
                .switch
                .as_ref()
                .unwrap()
                .mft
                .as_ref()
                .unwrap()
                .len(),
            1024 * 2
        );
        let before = f.node(sw).switch.clone();
        assert_eq!(
            call(
                &mut f,
                from,
                Method::Set,
                id::MFT,
                mft_mod(0, 2),
                &[1],
                &req
            )
            .0,
            INVALID
        );
        assert_eq!(
            call(&mut f, from, Method::Set, id::MFT, 0, &[], &req).0,
            Status(Status::METHOD_ATTR_NOT_SUPPORTED)
        );
        assert_eq!(f.node(sw).switch, before);
    }

    #[test]
    fn any_modifier_and_data_is_answered_without_panic() {
        let (mut f, h1, _, _) = fabric();
        let mut mods = vec![
            0, 1, 2, 3, 4, 5, 8, 18, 19, 31, 32, 0xff, 0x100, 0x1ff, 0x200,
        ];
        mods.extend([
            0x1212, 0x1300, 0xffff, 0x1_0000, 0x1_0012, 0x3_0000, 0x4_0013,
        ]);
        mods.extend([
            0x5_0000,
            0xffff_0000,
            0x0800_0000,
            0x1000_001f,
            0x2000_0000,
            u32::MAX,
        ]);
        let data: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        for attr in [id::GUID_INFO, id::SL2VL, id::VL_ARB, id::MFT] {
            for hops in [&[][..], &[1], &[1, 2]] {
                for &m in &mods {
                    for method in [Method::Get, Method::Set] {
                        let (st, _) = call(&mut f, (h1, 1), method, attr, m, hops, &data);
                        assert!(
                            st.is_success()
                                || st == INVALID
                                || st == Status(Status::METHOD_ATTR_NOT_SUPPORTED),
                            "{attr:#x} {m:#x} {hops:?}: {st:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn untouched_tables_take_no_memory() {
        let (mut f, h1, sw, _) = fabric();
        for (attr, m, hops) in [
            (id::GUID_INFO, 0, &[][..]),
            (id::SL2VL, 0x0102, &[1]),
            (id::VL_ARB, 1 << 16 | 1, &[1]),
            (id::MFT, 0, &[1]),
        ] {
            assert!(call(&mut f, (h1, 1), Method::Get, attr, m, hops, &[])
                .0
                .is_success());
        }
        let p = &f.node(sw).ports[1];
        assert!(p.sl2vl.is_none() && p.vlarb.is_none() && p.guids.is_none());
        assert!(f.node(sw).switch.as_ref().unwrap().mft.is_none());
        assert!(f.node(h1).ports[1].guids.is_none());
    }
}
