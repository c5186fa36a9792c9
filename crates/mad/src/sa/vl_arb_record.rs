//! VLArbitrationTableRecord (SA attribute 0x36, IBA Vol 1, 15.2.5.9): 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2      OutputPortNum
//!  3      BlockNum (1 low, 2 high, 3/4 the rest of low/high)
//!  4..8   reserved
//!  8..72  VLArbitrationTable block (the layout of [`crate::attr::VlArbTable`])
//! ```

use crate::attr::VlArbTable;
use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const OUTPUT_PORT: usize = 2;
    pub(super) const BLOCK_NUM: usize = 3;
    pub(super) const RESERVED: Field = 4..8;
    pub(super) const TABLE: Field = 8..72;
}

/// VLArbitrationTableRecord ComponentMask bits, in IBA order (opensm
/// `IB_VLA_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// OutputPortNum.
    pub const OUT_PORT: u64 = 1 << 1;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 2;
}

/// VLArbitrationTableRecord, parsed: one block of a port's VL arbitration table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbRecord {
    /// LID of the port (of port 0 for a switch).
    pub lid: u16,
    /// Output port.
    pub output_port: u8,
    /// Block number.
    pub block_num: u8,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved: u32,
    /// The block.
    pub table: VlArbTable,
}

impl VlArbRecord {
    /// Size of VLArbitrationTableRecord in the IBA table.
    pub const LEN: usize = field::TABLE.end;

    /// Parses the first [`VlArbRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<VlArbRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(VlArbRecord {
            lid: get_u16(&b[field::LID]),
            output_port: b[field::OUTPUT_PORT],
            block_num: b[field::BLOCK_NUM],
            reserved: get_u32(&b[field::RESERVED]),
            table: VlArbTable::parse(&b[field::TABLE])?,
        })
    }

    /// Writes the first [`VlArbRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`VlArbRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        b[field::OUTPUT_PORT] = self.output_port;
        b[field::BLOCK_NUM] = self.block_num;
        set_u32(&mut b[field::RESERVED], self.reserved);
        self.table.emit(&mut b[field::TABLE]);
    }
}

const _: () = assert!(VlArbTable::LEN == field::TABLE.end - field::TABLE.start);

impl_sa_record!(VlArbRecord, super::attr_id::VL_ARB_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_round_trip};

    #[test]
    fn fields_and_round_trip() {
        let mut b = [0u8; 72];
        b[1] = 9; // LID 9
        b[2] = 3; // port 3
        b[3] = 2; // block 2
        b[8] = 0x01; // entry 0: VL 1
        b[9] = 0x20; // weight 32
        let r = VlArbRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.output_port, r.block_num), (9, 3, 2));
        assert_eq!((r.table.entries[0].vl, r.table.entries[0].weight), (1, 32));
        let mut out = [0xa5u8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        check_round_trip(VlArbRecord::LEN, VlArbRecord::parse, VlArbRecord::emit, 3);
        check_comp_mask(&[
            ("LID", comp::LID),
            ("OutputPortNum", comp::OUT_PORT),
            ("BlockNum", comp::BLOCK),
        ]);
    }
}
