//! MulticastForwardingTable (SMP attribute 0x1b, IBA Vol 1, 14.2.5.12):
//! one 64-byte block of 32 16-bit port masks, one per multicast LID.
//!
//! Attribute modifier (see [`mft_attr_mod`]):
//!
//! ```text
//!  bits 31:28  PortMask position: which 16 ports the masks cover
//!              (position p: ports 16p..16p+15)
//!  bits 27:9   reserved
//!  bits  8:0   block: MLIDs 0xc000 + 32·block .. + 31
//! ```
//!
//! Bit `b` of a mask (bit 0 = least significant) stands for port
//! `16·position + b`. This is how `ibroute` and ibsim address the table.

use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// The 32 port masks, 2 bytes each.
    pub(super) const MASKS: Field = 0..64;
    /// Bytes per mask.
    pub(super) const MASK_LEN: usize = 2;
}

/// The first multicast LID (0xc000).
pub const MULTICAST_LID_BASE: u16 = 0xc000;

/// The MulticastForwardingTable attribute modifier for MLID block `block`
/// (9 bits) and port-mask position `position` (4 bits): `position << 28 |
/// block`. Out-of-range bits are masked off.
pub const fn mft_attr_mod(block: u16, position: u8) -> u32 {
    ((position as u32) & 0xf) << 28 | (block as u32 & 0x1ff)
}

/// MulticastForwardingTable, parsed: one block of
/// [`MulticastForwardingTable::MLIDS_PER_BLOCK`] port masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MulticastForwardingTable {
    /// One port mask per MLID of the block (index = (MLID − 0xc000) % 32).
    pub port_masks: [u16; 32],
}

impl MulticastForwardingTable {
    /// Size of one MulticastForwardingTable block on the wire (the whole
    /// SMP data area).
    pub const LEN: usize = field::MASKS.end;

    /// MLIDs per block.
    pub const MLIDS_PER_BLOCK: usize = Self::LEN / field::MASK_LEN;

    /// Ports per mask (one position of the attribute modifier).
    pub const PORTS_PER_MASK: usize = 16;

    /// Parses the first [`MulticastForwardingTable::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<MulticastForwardingTable> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(MulticastForwardingTable {
            port_masks: bytes::get_array(&b[field::MASKS], get_u16),
        })
    }

    /// Bytes [`MulticastForwardingTable::emit`] writes:
    /// [`MulticastForwardingTable::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`MulticastForwardingTable::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        bytes::set_array(&mut b[field::MASKS], &self.port_masks, set_u16);
    }

    /// The block number and entry index of multicast LID `mlid`, or `None`
    /// if `mlid` is below [`MULTICAST_LID_BASE`].
    pub fn block_for_mlid(mlid: u16) -> Option<(u16, usize)> {
        let offset = mlid.checked_sub(MULTICAST_LID_BASE)?;
        let per = Self::MLIDS_PER_BLOCK as u16;
        Some((offset / per, usize::from(offset % per)))
    }

    /// The port-mask position and bit of port `port`.
    pub fn position_for_port(port: u8) -> (u8, u16) {
        let per = Self::PORTS_PER_MASK as u8;
        (port / per, 1 << (port % per))
    }

    /// The ports entry `index` forwards to, given the block was read at
    /// port-mask `position` (ports `16·position + bit`; `position` is
    /// masked to 4 bits like the attribute modifier field). Yields nothing
    /// for an `index` outside the block.
    pub fn ports(&self, index: usize, position: u8) -> impl Iterator<Item = u8> {
        let mask = self.port_masks.get(index).copied().unwrap_or(0);
        let base = (position & 0x0f) * Self::PORTS_PER_MASK as u8;
        (0..16u8)
            .filter(move |b| mask & (1 << b) != 0)
            .map(move |b| base + b)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// Block 0, position 0: MLID 0xc000 (the IPoIB broadcast group)
    /// forwarded to ports 0, 1 and 3; MLID 0xc001 to port 15.
    static BLOCK_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0x00;
        b[1] = 0x0b;
        b[2] = 0x80;
        b[3] = 0x00;
        b
    };

    #[test]
    fn test_deconstruct() {
        let t = MulticastForwardingTable::parse(&BLOCK_BYTES).unwrap();
        assert_eq!(t.port_masks[0], 0x000b);
        assert_eq!(t.port_masks[1], 0x8000);
        assert_eq!(t.port_masks[2], 0);
        assert_eq!(t.ports(0, 0).collect::<Vec<_>>(), vec![0, 1, 3]);
        assert_eq!(t.ports(1, 0).collect::<Vec<_>>(), vec![15]);
        assert_eq!(t.ports(1, 2).collect::<Vec<_>>(), vec![47]);
        assert_eq!(t.ports(2, 0).count(), 0);
        assert_eq!(t.ports(99, 0).count(), 0);
        assert_eq!(t.ports(1, 15).collect::<Vec<_>>(), vec![255]);
        assert_eq!(t.ports(1, 0x12).collect::<Vec<_>>(), vec![47]);
    }

    #[test]
    fn test_construct() {
        let mut t = MulticastForwardingTable::default();
        for port in [0u8, 1, 3] {
            let (pos, bit) = MulticastForwardingTable::position_for_port(port);
            assert_eq!(pos, 0);
            t.port_masks[0] |= bit;
        }
        t.port_masks[1] = MulticastForwardingTable::position_for_port(15).1;
        assert_eq!(t.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        t.emit(&mut out);
        assert_eq!(out, BLOCK_BYTES);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 63")]
    fn emit_short_buffer_panics() {
        MulticastForwardingTable::default().emit(&mut [0u8; 63]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            MulticastForwardingTable::LEN,
            MulticastForwardingTable::parse,
            MulticastForwardingTable::emit,
            0x3f7_0000_0000_001b,
        );
    }

    #[test]
    fn test_field_offsets() {
        check_table_offsets(
            MulticastForwardingTable::LEN,
            MulticastForwardingTable::parse,
            MulticastForwardingTable::emit,
            &[],
            Table {
                count: MulticastForwardingTable::MLIDS_PER_BLOCK,
                stride: 2,
                fields: &[("PortMask", |t, i| t.port_masks[i] = u16::MAX, 0, &[0xff; 2])],
            },
        );
    }

    #[test]
    fn addressing_helpers() {
        assert_eq!(mft_attr_mod(0, 0), 0);
        assert_eq!(mft_attr_mod(3, 2), 0x2000_0003);
        assert_eq!(mft_attr_mod(0x1ff, 0xf), 0xf000_01ff);
        assert_eq!(mft_attr_mod(0xffff, 0xff), 0xf000_01ff);
        assert_eq!(MulticastForwardingTable::block_for_mlid(0xbfff), None);
        assert_eq!(
            MulticastForwardingTable::block_for_mlid(0xc000),
            Some((0, 0))
        );
        assert_eq!(
            MulticastForwardingTable::block_for_mlid(0xc021),
            Some((1, 1))
        );
        assert_eq!(
            MulticastForwardingTable::block_for_mlid(0xffff),
            Some((511, 31))
        );
        assert_eq!(MulticastForwardingTable::position_for_port(0), (0, 1));
        assert_eq!(MulticastForwardingTable::position_for_port(17), (1, 0x0002));
        assert_eq!(
            MulticastForwardingTable::position_for_port(255),
            (15, 0x8000)
        );
    }
}
