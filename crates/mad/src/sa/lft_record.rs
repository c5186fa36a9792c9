//! LinearForwardingTableRecord (SA attribute 0x15, IBA Vol 1, 15.2.5):
//! 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2..4   BlockNum
//!  4..8   reserved
//!  8..72  LinearForwardingTable block: output port of 64 LIDs (the layout
//!         of [`crate::LinearForwardingTable`])
//! ```

use crate::attr::LinearForwardingTable;
use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const BLOCK_NUM: Field = 2..4;
    pub(super) const RESERVED: Field = 4..8;
    pub(super) const LFT: Field = 8..72;
}

/// LinearForwardingTableRecord ComponentMask bits, in IBA order (opensm
/// `IB_LFTR_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK_NUM: u64 = 1 << 1;
}

/// LinearForwardingTableRecord, parsed: one 64-LID block of a switch's
/// linear forwarding table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LftRecord {
    /// LID of the switch (port 0).
    pub lid: u16,
    /// Block number: `lft.ports[i]` is the output port for LID
    /// `64 * block_num + i`.
    pub block_num: u16,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved: u32,
    /// The block (the LinearForwardingTable attribute); 255: no route.
    pub lft: LinearForwardingTable,
}

impl LftRecord {
    /// Size of LinearForwardingTableRecord in the IBA table.
    pub const LEN: usize = field::LFT.end;

    /// Parses the first [`LftRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<LftRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(LftRecord {
            lid: get_u16(&b[field::LID]),
            block_num: get_u16(&b[field::BLOCK_NUM]),
            reserved: get_u32(&b[field::RESERVED]),
            lft: LinearForwardingTable::parse(&b[field::LFT])?,
        })
    }

    /// Bytes [`LftRecord::emit`] writes: [`LftRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`LftRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`LftRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::BLOCK_NUM], self.block_num);
        set_u32(&mut b[field::RESERVED], self.reserved);
        self.lft.emit(&mut b[field::LFT]);
    }
}

// The embedded attribute fills its field exactly.
const _: () = assert!(LinearForwardingTable::LEN == field::LFT.end - field::LFT.start);

impl_sa_record!(LftRecord, super::attr_id::LFT_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// Block 1 (LIDs 64..128) of switch LID 3: LID 64 out of port 2, LID
    /// 65 out of port 7, the rest unrouted.
    static RECORD_BYTES: [u8; 72] = {
        let mut b = [0xffu8; 72];
        b[0] = 0;
        b[1] = 3; // LID 3
        b[2] = 0;
        b[3] = 1; // block 1
        b[4] = 0;
        b[5] = 0;
        b[6] = 0;
        b[7] = 0; // reserved
        b[8] = 2;
        b[9] = 7;
        b
    };

    fn expected() -> LftRecord {
        let mut lft = LinearForwardingTable::unrouted();
        lft.ports[0] = 2;
        lft.ports[1] = 7;
        LftRecord {
            lid: 3,
            block_num: 1,
            reserved: 0,
            lft,
        }
    }

    #[test]
    fn test_deconstruct() {
        let r = LftRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r, expected());
        assert_eq!(
            r.lft.routes(u32::from(r.block_num)).collect::<Vec<_>>(),
            [(64, 2), (65, 7)]
        );
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
        check_round_trip(LftRecord::LEN, LftRecord::parse, LftRecord::emit, 15);
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, LftRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("BlockNum", |r| r.block_num = u16::MAX, 2, &[0xff; 2]),
            ("reserved", |r| r.reserved = u32::MAX, 4, &[0xff; 4]),
            ("LinearForwardingTable", |r| r.lft = LinearForwardingTable::unrouted(), 8, &[0xff; 64]),
        ];
        check_offsets(LftRecord::LEN, LftRecord::parse, LftRecord::emit, cases);
        // The block sits at byte 8: the port of LID 64n + i is byte 8 + i.
        let mut r = LftRecord::default();
        r.lft.ports[63] = 0xff;
        let mut out = [0u8; 72];
        r.emit(&mut out);
        assert_eq!(out[71], 0xff);
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 1);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[("LID", comp::LID), ("BlockNum", comp::BLOCK_NUM)]);
    }
}
