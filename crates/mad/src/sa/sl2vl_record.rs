//! SLtoVLMappingTableRecord (SA attribute 0x13, IBA Vol 1, 15.2.5.4): 16 bytes.
//!
//! ```text
//!  0..2   LID
//!  2      InputPortNum
//!  3      OutputPortNum
//!  4..8   reserved
//!  8..16  SLtoVLMappingTable (the layout of [`crate::attr::SlToVlTable`])
//! ```

use crate::attr::SlToVlTable;
use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const INPUT_PORT: usize = 2;
    pub(super) const OUTPUT_PORT: usize = 3;
    pub(super) const RESERVED: Field = 4..8;
    pub(super) const TABLE: Field = 8..16;
}

/// SLtoVLMappingTableRecord ComponentMask bits, in IBA order (opensm
/// `IB_SLVL_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// InputPortNum.
    pub const IN_PORT: u64 = 1 << 1;
    /// OutputPortNum.
    pub const OUT_PORT: u64 = 1 << 2;
}

/// SLtoVLMappingTableRecord, parsed: the SL-to-VL table of one input/output port pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sl2VlRecord {
    /// LID of the port (of port 0 for a switch).
    pub lid: u16,
    /// Input port.
    pub input_port: u8,
    /// Output port.
    pub output_port: u8,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved: u32,
    /// The table.
    pub table: SlToVlTable,
}

impl Sl2VlRecord {
    /// Size of SLtoVLMappingTableRecord in the IBA table.
    pub const LEN: usize = field::TABLE.end;

    /// Parses the first [`Sl2VlRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Sl2VlRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(Sl2VlRecord {
            lid: get_u16(&b[field::LID]),
            input_port: b[field::INPUT_PORT],
            output_port: b[field::OUTPUT_PORT],
            reserved: get_u32(&b[field::RESERVED]),
            table: SlToVlTable::parse(&b[field::TABLE])?,
        })
    }

    /// Writes the first [`Sl2VlRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Sl2VlRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        b[field::INPUT_PORT] = self.input_port;
        b[field::OUTPUT_PORT] = self.output_port;
        set_u32(&mut b[field::RESERVED], self.reserved);
        self.table.emit(&mut b[field::TABLE]);
    }
}

const _: () = assert!(SlToVlTable::LEN == field::TABLE.end - field::TABLE.start);

impl_sa_record!(Sl2VlRecord, super::attr_id::SL2VL_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_round_trip};

    #[test]
    fn fields_and_round_trip() {
        let mut b = [0u8; 16];
        b[1] = 7; // LID 7
        b[2] = 1;
        b[3] = 2;
        b[8] = 0x01; // SL0 -> VL0, SL1 -> VL1
        let r = Sl2VlRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.input_port, r.output_port), (7, 1, 2));
        assert_eq!(&r.table.vls[..2], &[0, 1]);
        let mut out = [0xa5u8; 16];
        r.emit(&mut out);
        assert_eq!(out, b);
        check_round_trip(Sl2VlRecord::LEN, Sl2VlRecord::parse, Sl2VlRecord::emit, 3);
        check_comp_mask(&[
            ("LID", comp::LID),
            ("InputPortNum", comp::IN_PORT),
            ("OutputPortNum", comp::OUT_PORT),
        ]);
    }
}
