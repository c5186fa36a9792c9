//! P_KeyTableRecord (SA attribute 0x33, IBA Vol 1, 15.2.5): 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2..4   BlockNum
//!  4      PortNum
//!  5..8   reserved
//!  8..72  P_KeyTable block: 32 P_Keys (the layout of [`crate::PKeyTable`])
//! ```

use crate::attr::PKeyTable;
use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const BLOCK_NUM: Field = 2..4;
    pub(super) const PORT_NUM: usize = 4;
    pub(super) const RESERVED: Field = 5..8;
    pub(super) const PKEY_TABLE: Field = 8..72;
}

/// P_KeyTableRecord ComponentMask bits, in IBA order (opensm
/// `IB_PKEY_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK_NUM: u64 = 1 << 1;
    /// PortNum.
    pub const PORT_NUM: u64 = 1 << 2;
}

/// P_KeyTableRecord, parsed: one 32-entry block of a port's P_Key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PKeyTableRecord {
    /// LID of the port (for switches: of port 0).
    pub lid: u16,
    /// Block number (P_Keys `32 * block_num ..`).
    pub block_num: u16,
    /// Port number (switches; reserved for channel adapters).
    pub port_num: u8,
    /// Reserved (bytes 5–7), kept so `emit` reproduces the input.
    pub reserved: [u8; 3],
    /// The 32 P_Keys of the block (the P_KeyTable attribute).
    pub pkey_table: PKeyTable,
}

impl PKeyTableRecord {
    /// Size of P_KeyTableRecord in the IBA table.
    pub const LEN: usize = field::PKEY_TABLE.end;

    /// Parses the first [`PKeyTableRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<PKeyTableRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(PKeyTableRecord {
            lid: get_u16(&b[field::LID]),
            block_num: get_u16(&b[field::BLOCK_NUM]),
            port_num: b[field::PORT_NUM],
            reserved: *bytes::array::<3>(&b[field::RESERVED])?,
            pkey_table: PKeyTable::parse(&b[field::PKEY_TABLE])?,
        })
    }

    /// Bytes [`PKeyTableRecord::emit`] writes: [`PKeyTableRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PKeyTableRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PKeyTableRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::BLOCK_NUM], self.block_num);
        b[field::PORT_NUM] = self.port_num;
        b[field::RESERVED].copy_from_slice(&self.reserved);
        self.pkey_table.emit(&mut b[field::PKEY_TABLE]);
    }
}

// The embedded attribute fills its field exactly.
const _: () = assert!(PKeyTable::LEN == field::PKEY_TABLE.end - field::PKEY_TABLE.start);

impl_sa_record!(PKeyTableRecord, super::attr_id::PKEY_TABLE_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// Block 0 of LID 2's table: the default full-member P_Key and a
    /// limited-member 0x0001.
    static RECORD_BYTES: [u8; 72] = {
        let mut b = [0u8; 72];
        b[1] = 2; // LID 2
        b[4] = 1; // PortNum 1
        b[8] = 0xff; // P_Key 0: 0xffff
        b[9] = 0xff;
        b[11] = 0x01; // P_Key 1: 0x0001
        b
    };

    fn expected() -> PKeyTableRecord {
        let mut r = PKeyTableRecord {
            lid: 2,
            port_num: 1,
            ..PKeyTableRecord::default()
        };
        r.pkey_table.pkeys[0] = 0xffff;
        r.pkey_table.pkeys[1] = 0x0001;
        r
    }

    #[test]
    fn test_deconstruct() {
        let r = PKeyTableRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r, expected());
        assert_eq!(
            r.pkey_table.valid().collect::<Vec<_>>(),
            [(0, 0xffff), (1, 0x0001)]
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
        check_round_trip(
            PKeyTableRecord::LEN,
            PKeyTableRecord::parse,
            PKeyTableRecord::emit,
            33,
        );
    }

    #[test]
    fn test_field_offsets() {
        let cases: &[Case<'_, PKeyTableRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("BlockNum", |r| r.block_num = u16::MAX, 2, &[0xff; 2]),
            ("PortNum", |r| r.port_num = 0xff, 4, &[0xff]),
            ("reserved", |r| r.reserved = [0xff; 3], 5, &[0xff; 3]),
            (
                "P_KeyTable",
                |r| r.pkey_table.pkeys = [0xffff; 32],
                8,
                &[0xff; 64],
            ),
        ];
        check_offsets(
            PKeyTableRecord::LEN,
            PKeyTableRecord::parse,
            PKeyTableRecord::emit,
            cases,
        );
        let mut r = PKeyTableRecord::default();
        r.pkey_table.pkeys[31] = 0x8001;
        let mut out = [0u8; 72];
        r.emit(&mut out);
        assert_eq!(out[70..], [0x80, 0x01]);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[
            ("LID", comp::LID),
            ("BlockNum", comp::BLOCK_NUM),
            ("PortNum", comp::PORT_NUM),
        ]);
    }
}
