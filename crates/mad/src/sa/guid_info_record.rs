//! GuidInfoRecord (SA attribute 0x30, IBA Vol 1, 15.2.5): 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2      BlockNum
//!  3      reserved
//!  4..8   reserved
//!  8..72  GUIDInfo block (64 bytes, the layout of [`crate::GuidInfo`])
//! ```

use crate::attr::GuidInfo;
use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const BLOCK_NUM: usize = 2;
    pub(super) const RESERVED_3: usize = 3;
    pub(super) const RESERVED_4: Field = 4..8;
    pub(super) const GUID_INFO: Field = 8..72;
}

/// GuidInfoRecord ComponentMask bits, in IBA order (opensm
/// `IB_GIR_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK_NUM: u64 = 1 << 1;
    /// Reserved (byte 3).
    pub const RESERVED1: u64 = 1 << 2;
    /// Reserved (bytes 4–7).
    pub const RESERVED2: u64 = 1 << 3;
    /// GUID 0 of the block (GUID *i* is `GID0 << i`).
    pub const GID0: u64 = 1 << 4;
    /// GUID 1 of the block.
    pub const GID1: u64 = 1 << 5;
    /// GUID 2 of the block.
    pub const GID2: u64 = 1 << 6;
    /// GUID 3 of the block.
    pub const GID3: u64 = 1 << 7;
    /// GUID 4 of the block.
    pub const GID4: u64 = 1 << 8;
    /// GUID 5 of the block.
    pub const GID5: u64 = 1 << 9;
    /// GUID 6 of the block.
    pub const GID6: u64 = 1 << 10;
    /// GUID 7 of the block.
    pub const GID7: u64 = 1 << 11;
}

/// GuidInfoRecord, parsed: one 8-entry block of a port's GUID table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuidInfoRecord {
    /// LID of the port.
    pub lid: u16,
    /// Block number (GUIDs `8 * block_num ..`).
    pub block_num: u8,
    /// Reserved (byte 3), kept so `emit` reproduces the input.
    pub reserved_3: u8,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved_4: u32,
    /// The 8 GUIDs of the block (the GUIDInfo attribute).
    pub guid_info: GuidInfo,
}

impl GuidInfoRecord {
    /// Size of GuidInfoRecord in the IBA table.
    pub const LEN: usize = field::GUID_INFO.end;

    /// Parses the first [`GuidInfoRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<GuidInfoRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(GuidInfoRecord {
            lid: get_u16(&b[field::LID]),
            block_num: b[field::BLOCK_NUM],
            reserved_3: b[field::RESERVED_3],
            reserved_4: get_u32(&b[field::RESERVED_4]),
            guid_info: GuidInfo::parse(&b[field::GUID_INFO])?,
        })
    }

    /// Bytes [`GuidInfoRecord::emit`] writes: [`GuidInfoRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`GuidInfoRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`GuidInfoRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        b[field::BLOCK_NUM] = self.block_num;
        b[field::RESERVED_3] = self.reserved_3;
        set_u32(&mut b[field::RESERVED_4], self.reserved_4);
        self.guid_info.emit(&mut b[field::GUID_INFO]);
    }
}

// The embedded attribute fills its field exactly.
const _: () = assert!(GuidInfo::LEN == field::GUID_INFO.end - field::GUID_INFO.start);

impl_sa_record!(GuidInfoRecord, super::attr_id::GUID_INFO_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// Block 0 of LID 2's GUID table: the port GUID and one alias GUID.
    static RECORD_BYTES: [u8; 72] = {
        let mut b = [0u8; 72];
        b[1] = 2; // LID 2
        b[9] = 0x02; // GUID 0: 0x0002c90300000001
        b[10] = 0xc9;
        b[11] = 0x03;
        b[15] = 0x01;
        b[17] = 0x02; // GUID 1: 0x0002c90300000101
        b[18] = 0xc9;
        b[19] = 0x03;
        b[22] = 0x01;
        b[23] = 0x01;
        b
    };

    fn expected() -> GuidInfoRecord {
        let mut r = GuidInfoRecord {
            lid: 2,
            ..GuidInfoRecord::default()
        };
        r.guid_info.guids[0] = 0x0002_c903_0000_0001;
        r.guid_info.guids[1] = 0x0002_c903_0000_0101;
        r
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(GuidInfoRecord::parse(&RECORD_BYTES), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 72];
        expected().emit(&mut out);
        assert_eq!(out, RECORD_BYTES);
        assert_eq!(expected().buffer_len(), 72);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            GuidInfoRecord::LEN,
            GuidInfoRecord::parse,
            GuidInfoRecord::emit,
            30,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, GuidInfoRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("BlockNum", |r| r.block_num = 0xff, 2, &[0xff]),
            ("reserved_3", |r| r.reserved_3 = 0xff, 3, &[0xff]),
            ("reserved_4", |r| r.reserved_4 = u32::MAX, 4, &[0xff; 4]),
            ("GUIDInfo", |r| r.guid_info = GuidInfo::parse(&[0xff; 64]).unwrap(), 8, &[0xff; 64]),
        ];
        check_offsets(
            GuidInfoRecord::LEN,
            GuidInfoRecord::parse,
            GuidInfoRecord::emit,
            cases,
        );
        // GUIDInfo sits at byte 8: GUID i lights bytes 8 + 8i .. 16 + 8i.
        for i in 0..GuidInfo::GUIDS_PER_BLOCK {
            let mut r = GuidInfoRecord::default();
            r.guid_info.guids[i] = u64::MAX;
            let mut out = [0u8; 72];
            r.emit(&mut out);
            assert!(out[8 + 8 * i..16 + 8 * i].iter().all(|&b| b == 0xff));
            assert_eq!(out.iter().filter(|&&b| b != 0).count(), 8, "GUID {i}");
        }
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[
            ("LID", comp::LID),
            ("BlockNum", comp::BLOCK_NUM),
            ("Reserved1", comp::RESERVED1),
            ("Reserved2", comp::RESERVED2),
            ("GUID0", comp::GID0),
            ("GUID1", comp::GID1),
            ("GUID2", comp::GID2),
            ("GUID3", comp::GID3),
            ("GUID4", comp::GID4),
            ("GUID5", comp::GID5),
            ("GUID6", comp::GID6),
            ("GUID7", comp::GID7),
        ]);
    }
}
