//! LinearForwardingTable (SMP attribute 0x19, IBA Vol 1, 14.2.5.10): one
//! 64-byte block of output ports for 64 consecutive unicast LIDs.
//!
//! The attribute modifier is the block number: block `n` covers LIDs
//! `64n..64n+64`, entry `i` holds the output port for LID `64n + i`.
//! SwitchInfo.LinearFDBTop bounds the valid blocks.

use crate::bytes;
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// One output port per LID, one byte each.
    pub(super) const PORTS: Field = 0..64;
}

/// LinearForwardingTable, parsed: one block of
/// [`LinearForwardingTable::LIDS_PER_BLOCK`] output ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinearForwardingTable {
    /// Output port for each LID of the block (index = LID % 64);
    /// [`LinearForwardingTable::NO_PORT`] (255) means "drop".
    pub ports: [u8; 64],
}

impl LinearForwardingTable {
    /// Size of one LinearForwardingTable block on the wire (the whole SMP
    /// data area).
    pub const LEN: usize = field::PORTS.end;

    /// LIDs per block.
    pub const LIDS_PER_BLOCK: usize = Self::LEN;

    /// The port value for "no route: discard the packet" (also what an
    /// unprogrammed entry holds).
    pub const NO_PORT: u8 = 0xff;

    /// A block with every entry [`LinearForwardingTable::NO_PORT`].
    pub const fn unrouted() -> LinearForwardingTable {
        LinearForwardingTable {
            ports: [Self::NO_PORT; 64],
        }
    }

    /// Parses the first [`LinearForwardingTable::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<LinearForwardingTable> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let mut ports = [0u8; 64];
        ports.copy_from_slice(&b[field::PORTS]);
        Ok(LinearForwardingTable { ports })
    }

    /// Bytes [`LinearForwardingTable::emit`] writes:
    /// [`LinearForwardingTable::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`LinearForwardingTable::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::PORTS].copy_from_slice(&self.ports);
    }

    /// The block number (attribute modifier) holding `lid`.
    pub fn block_for_lid(lid: u16) -> u32 {
        u32::from(lid) / Self::LIDS_PER_BLOCK as u32
    }

    /// The entry index of `lid` within its block.
    pub fn index_for_lid(lid: u16) -> usize {
        usize::from(lid) % Self::LIDS_PER_BLOCK
    }

    /// The first LID covered by block `block`, or `None` past LID 0xffff.
    pub fn first_lid(block: u32) -> Option<u16> {
        block
            .checked_mul(Self::LIDS_PER_BLOCK as u32)
            .and_then(|l| u16::try_from(l).ok())
    }

    /// The output port this block holds for `lid` (only the low 6 bits of
    /// `lid` are used: the caller fetched the block for `lid`).
    pub fn port_for_lid(&self, lid: u16) -> u8 {
        self.ports[Self::index_for_lid(lid)]
    }

    /// `(LID, port)` for every routed entry (port ≠ 255) of block `block`,
    /// taking this table as that block. Blocks past 1023 hold no LID
    /// ([`LinearForwardingTable::first_lid`] is `None`) and yield nothing.
    pub fn routes(&self, block: u32) -> impl Iterator<Item = (u16, u8)> + '_ {
        // The last block ends exactly at LID 0xffff, so the range never
        // runs out before the 64 entries do.
        Self::first_lid(block)
            .into_iter()
            .flat_map(move |first| (first..=u16::MAX).zip(self.ports.iter().copied()))
            .filter(|&(_, p)| p != Self::NO_PORT)
    }
}

impl Default for LinearForwardingTable {
    /// All zeros (port 0 for every LID), like every other Repr's default;
    /// see [`LinearForwardingTable::unrouted`] for an empty table.
    fn default() -> Self {
        LinearForwardingTable { ports: [0; 64] }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// Block 0 of a switch LFT: LID 0 unrouted, LIDs 1–3 out of ports
    /// 0, 1, 2 (LID 1 is the switch itself), the rest unrouted.
    static BLOCK_BYTES: [u8; 64] = {
        let mut b = [0xffu8; 64];
        b[1] = 0;
        b[2] = 1;
        b[3] = 2;
        b
    };

    #[test]
    fn test_deconstruct() {
        let t = LinearForwardingTable::parse(&BLOCK_BYTES).unwrap();
        assert_eq!(t.ports[0], LinearForwardingTable::NO_PORT);
        assert_eq!(t.port_for_lid(1), 0);
        assert_eq!(t.port_for_lid(2), 1);
        assert_eq!(t.port_for_lid(3), 2);
        assert_eq!(t.port_for_lid(4), 255);
        assert_eq!(
            t.routes(0).collect::<Vec<_>>(),
            vec![(1, 0), (2, 1), (3, 2)]
        );
        assert_eq!(
            t.routes(2).collect::<Vec<_>>(),
            vec![(129, 0), (130, 1), (131, 2)]
        );
    }

    #[test]
    fn test_construct() {
        let mut t = LinearForwardingTable::unrouted();
        t.ports[1] = 0;
        t.ports[2] = 1;
        t.ports[3] = 2;
        assert_eq!(t.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        t.emit(&mut out);
        assert_eq!(out, BLOCK_BYTES);
        assert_eq!(LinearForwardingTable::default().ports, [0; 64]);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 32")]
    fn emit_short_buffer_panics() {
        LinearForwardingTable::default().emit(&mut [0u8; 32]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            LinearForwardingTable::LEN,
            LinearForwardingTable::parse,
            LinearForwardingTable::emit,
            0x1f7_0000_0000_0019,
        );
    }

    #[test]
    fn test_field_offsets() {
        check_table_offsets(
            LinearForwardingTable::LEN,
            LinearForwardingTable::parse,
            LinearForwardingTable::emit,
            &[],
            Table {
                count: LinearForwardingTable::LIDS_PER_BLOCK,
                stride: 1,
                fields: &[("port", |t, i| t.ports[i] = 0xff, 0, &[0xff])],
            },
        );
    }

    /// Regression (found by the `lft` fuzz target): `routes` counted LIDs
    /// in a `u32` from `block * 64` (saturating), which overflowed for
    /// blocks near `u32::MAX / 64` and above.
    #[test]
    fn routes_of_every_block_number() {
        let all = LinearForwardingTable { ports: [1; 64] };
        for block in [1024, 0x03ff_ffff, 0x0400_0000, u32::MAX / 64 + 1, u32::MAX] {
            assert_eq!(all.routes(block).count(), 0, "block {block:#x}");
        }
        let last: Vec<_> = all.routes(1023).collect();
        assert_eq!(last.len(), 64);
        assert_eq!(last[0], (0xffc0, 1));
        assert_eq!(last[63], (0xffff, 1));
        assert_eq!(all.routes(0).map(|(lid, _)| lid).max(), Some(63));
    }

    #[test]
    fn lid_helpers() {
        assert_eq!(LinearForwardingTable::block_for_lid(0), 0);
        assert_eq!(LinearForwardingTable::block_for_lid(63), 0);
        assert_eq!(LinearForwardingTable::block_for_lid(64), 1);
        assert_eq!(LinearForwardingTable::block_for_lid(0xbfff), 767);
        assert_eq!(LinearForwardingTable::index_for_lid(65), 1);
        assert_eq!(LinearForwardingTable::first_lid(2), Some(128));
        assert_eq!(LinearForwardingTable::first_lid(1023), Some(0xffc0));
        assert_eq!(LinearForwardingTable::first_lid(1024), None);
        assert_eq!(LinearForwardingTable::first_lid(u32::MAX), None);
    }
}
