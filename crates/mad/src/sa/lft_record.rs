//! LinearForwardingTableRecord (SA attribute 0x15, IBA Vol 1, 15.2.5):
//! 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2..4   BlockNum
//!  4..8   reserved
//!  8..72  LinearForwardingTable block: output port of 64 LIDs
//! ```

use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const BLOCK_NUM: Field = 2..4;
    pub(super) const RESERVED: Field = 4..8;
    pub(super) const PORTS: Field = 8..72;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LftRecord {
    /// LID of the switch (port 0).
    pub lid: u16,
    /// Block number: `ports[i]` is the output port for LID
    /// `64 * block_num + i`.
    pub block_num: u16,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved: u32,
    /// Output port per LID (255: no route).
    pub ports: [u8; 64],
}

impl Default for LftRecord {
    fn default() -> Self {
        LftRecord {
            lid: 0,
            block_num: 0,
            reserved: 0,
            ports: [0; 64],
        }
    }
}

impl LftRecord {
    /// Size of LinearForwardingTableRecord in the IBA table.
    pub const LEN: usize = field::PORTS.end;

    /// Parses the first [`LftRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<LftRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(LftRecord {
            lid: get_u16(&b[field::LID]),
            block_num: get_u16(&b[field::BLOCK_NUM]),
            reserved: get_u32(&b[field::RESERVED]),
            ports: *bytes::array::<64>(&b[field::PORTS])?,
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
        b[field::PORTS].copy_from_slice(&self.ports);
    }
}

impl_sa_record!(LftRecord, super::attr_id::LFT_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::sa::test_support::{check_comp_mask, check_offsets, check_round_trip, Case};

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
        let mut ports = [0xffu8; 64];
        ports[0] = 2;
        ports[1] = 7;
        LftRecord {
            lid: 3,
            block_num: 1,
            reserved: 0,
            ports,
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(LftRecord::parse(&RECORD_BYTES), Ok(expected()));
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
        let cases: &[Case<'_, LftRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("BlockNum", |r| r.block_num = u16::MAX, 2, &[0xff; 2]),
            ("reserved", |r| r.reserved = u32::MAX, 4, &[0xff; 4]),
            ("ports", |r| r.ports = [0xff; 64], 8, &[0xff; 64]),
        ];
        check_offsets(LftRecord::LEN, LftRecord::parse, LftRecord::emit, cases);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[("LID", comp::LID), ("BlockNum", comp::BLOCK_NUM)]);
    }
}
