//! GUIDInfo (SMP attribute 0x14, IBA Vol 1, 14.2.5.5): one 64-byte block of
//! eight port GUIDs.
//!
//! The attribute modifier is the block number: block `n` holds GUID indices
//! `8n..8n+8` of the port's GUID table (index 0 is the port GUID itself).
//! PortInfo.GUIDCap says how many entries the port has.

use crate::bytes::{self, get_u64, set_u64};
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// The eight GUIDs, 8 bytes each.
    pub(super) const GUIDS: Field = 0..64;
    /// Bytes per GUID.
    pub(super) const GUID_LEN: usize = 8;
}

/// GUIDInfo, parsed: one block of [`GuidInfo::GUIDS_PER_BLOCK`] GUIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuidInfo {
    /// The GUIDs of this block; entry `i` is GUID index
    /// `block * 8 + i`. Unassigned entries are 0.
    pub guids: [u64; 8],
}

impl GuidInfo {
    /// Size of GUIDInfo on the wire (the whole SMP data area).
    pub const LEN: usize = field::GUIDS.end;

    /// GUIDs per block.
    pub const GUIDS_PER_BLOCK: usize = Self::LEN / field::GUID_LEN;

    /// Parses the first [`GuidInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<GuidInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(GuidInfo {
            guids: bytes::get_array(&b[field::GUIDS], get_u64),
        })
    }

    /// Bytes [`GuidInfo::emit`] writes: [`GuidInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`GuidInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        bytes::set_array(&mut b[field::GUIDS], &self.guids, set_u64);
    }

    /// The attribute modifier (block number) and the position within the
    /// block of GUID table index `index`.
    pub fn block_for_index(index: u16) -> (u32, usize) {
        let per = Self::GUIDS_PER_BLOCK as u16;
        (u32::from(index / per), usize::from(index % per))
    }

    /// The non-zero GUIDs of this block with their position in the block.
    pub fn assigned(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.guids
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, g)| g != 0)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// Block 0 of an HCA port's GUID table as ibsim answers it: the port
    /// GUID at index 0, the rest unassigned; plus one alias at index 3.
    static BLOCK_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        // GUID 0: 0x0002c90300a1b2c3
        b[0] = 0x00;
        b[1] = 0x02;
        b[2] = 0xc9;
        b[3] = 0x03;
        b[4] = 0x00;
        b[5] = 0xa1;
        b[6] = 0xb2;
        b[7] = 0xc3;
        // GUID 3: 0x1122334455667788
        b[24] = 0x11;
        b[25] = 0x22;
        b[26] = 0x33;
        b[27] = 0x44;
        b[28] = 0x55;
        b[29] = 0x66;
        b[30] = 0x77;
        b[31] = 0x88;
        b
    };

    #[test]
    fn test_deconstruct() {
        let gi = GuidInfo::parse(&BLOCK_BYTES).unwrap();
        assert_eq!(gi.guids[0], 0x0002_c903_00a1_b2c3);
        assert_eq!(gi.guids[1], 0);
        assert_eq!(gi.guids[3], 0x1122_3344_5566_7788);
        assert_eq!(
            gi.assigned().collect::<Vec<_>>(),
            vec![(0, 0x0002_c903_00a1_b2c3), (3, 0x1122_3344_5566_7788)]
        );
    }

    #[test]
    fn test_construct() {
        let mut gi = GuidInfo::default();
        gi.guids[0] = 0x0002_c903_00a1_b2c3;
        gi.guids[3] = 0x1122_3344_5566_7788;
        assert_eq!(gi.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        gi.emit(&mut out);
        assert_eq!(out, BLOCK_BYTES);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 63")]
    fn emit_short_buffer_panics() {
        GuidInfo::default().emit(&mut [0u8; 63]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            GuidInfo::LEN,
            GuidInfo::parse,
            GuidInfo::emit,
            0x6016_0000_0000_0014,
        );
    }

    #[test]
    fn test_field_offsets() {
        check_table_offsets(
            GuidInfo::LEN,
            GuidInfo::parse,
            GuidInfo::emit,
            &[],
            Table {
                count: GuidInfo::GUIDS_PER_BLOCK,
                stride: 8,
                fields: &[("GUID", |t, i| t.guids[i] = u64::MAX, 0, &[0xff; 8])],
            },
        );
        assert_eq!(GuidInfo::block_for_index(0), (0, 0));
        assert_eq!(GuidInfo::block_for_index(7), (0, 7));
        assert_eq!(GuidInfo::block_for_index(8), (1, 0));
        assert_eq!(GuidInfo::block_for_index(19), (2, 3));
    }
}
