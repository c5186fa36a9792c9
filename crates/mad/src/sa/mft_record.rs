//! MulticastForwardingTableRecord (SA attribute 0x17, IBA Vol 1, 15.2.5.8): 72 bytes.
//!
//! ```text
//!  0..2   LID
//!  2..4   Position(15:12) reserved(11:9) BlockNum(8:0)
//!  4..8   reserved
//!  8..72  MulticastForwardingTable block (the layout of
//!         [`crate::MulticastForwardingTable`])
//! ```

use crate::attr::MulticastForwardingTable;
use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    /// Position(15:12), reserved(11:9), BlockNum(8:0).
    pub(super) const POSITION_BLOCK: Field = 2..4;
    pub(super) const RESERVED: Field = 4..8;
    pub(super) const TABLE: Field = 8..72;
}

/// MulticastForwardingTableRecord ComponentMask bits, in IBA order (opensm
/// `IB_MFTR_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Position.
    pub const POSITION: u64 = 1 << 2;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 4;
}

/// MulticastForwardingTableRecord, parsed: one block (32 MLIDs, 16 ports) of a switch's
/// multicast forwarding table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MftRecord {
    /// LID of the switch (port 0).
    pub lid: u16,
    /// Position: which 16 ports (`16 * position ..`) the masks are of (4 bits).
    pub position: u8,
    /// Reserved (bits 11:9 of bytes 2–3).
    pub reserved_2: u8,
    /// Block number: MLIDs `0xc000 + 32 * block_num ..` (9 bits).
    pub block_num: u16,
    /// Reserved (bytes 4–7), kept so `emit` reproduces the input.
    pub reserved: u32,
    /// The block.
    pub mft: MulticastForwardingTable,
}

impl MftRecord {
    /// Size of MulticastForwardingTableRecord in the IBA table.
    pub const LEN: usize = field::TABLE.end;

    /// Parses the first [`MftRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<MftRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let pb = get_u16(&b[field::POSITION_BLOCK]);
        Ok(MftRecord {
            lid: get_u16(&b[field::LID]),
            position: (pb >> 12) as u8,
            reserved_2: ((pb >> 9) & 7) as u8,
            block_num: pb & 0x1ff,
            reserved: get_u32(&b[field::RESERVED]),
            mft: MulticastForwardingTable::parse(&b[field::TABLE])?,
        })
    }

    /// Writes the first [`MftRecord::LEN`] bytes of `buf`; sub-byte fields are masked to
    /// their widths.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`MftRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        let pb = (u16::from(self.position & 0xf) << 12)
            | (u16::from(self.reserved_2 & 7) << 9)
            | (self.block_num & 0x1ff);
        set_u16(&mut b[field::POSITION_BLOCK], pb);
        set_u32(&mut b[field::RESERVED], self.reserved);
        self.mft.emit(&mut b[field::TABLE]);
    }
}

const _: () = assert!(MulticastForwardingTable::LEN == field::TABLE.end - field::TABLE.start);

impl_sa_record!(MftRecord, super::attr_id::MFT_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::check_round_trip;

    #[test]
    fn fields_and_round_trip() {
        let mut b = [0u8; 72];
        b[1] = 2; // LID 2
        b[2] = 0x10; // position 1
        b[3] = 0x03; // block 3
        b[8] = 0x00;
        b[9] = 0x06; // MLID 0xc060: ports 1 and 2 (of this position)
        let r = MftRecord::parse(&b).unwrap();
        assert_eq!((r.lid, r.position, r.block_num), (2, 1, 3));
        assert_eq!(r.mft.port_masks[0], 6);
        let mut out = [0xa5u8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        check_round_trip(MftRecord::LEN, MftRecord::parse, MftRecord::emit, 3);
        // LID, reserved, Position, reserved, BlockNum: components 0, 2 and 4.
        assert_eq!((comp::LID, comp::POSITION, comp::BLOCK), (1, 4, 16));
    }
}
