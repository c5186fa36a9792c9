//! LinkRecord (SA attribute 0x20, IBA Vol 1, 15.2.5): 6 bytes (8 with
//! padding in a GetTableResp). One record per link, from each port's side.
//!
//! ```text
//!  0..2  FromLID
//!  2     FromPort
//!  3     ToPort
//!  4..6  ToLID
//! ```

use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const FROM_LID: Field = 0..2;
    pub(super) const FROM_PORT: usize = 2;
    pub(super) const TO_PORT: usize = 3;
    pub(super) const TO_LID: Field = 4..6;
}

/// LinkRecord ComponentMask bits, in IBA order (opensm `IB_LR_COMPMASK_*`).
pub mod comp {
    /// FromLID.
    pub const FROM_LID: u64 = 1 << 0;
    /// FromPort.
    pub const FROM_PORT: u64 = 1 << 1;
    /// ToPort.
    pub const TO_PORT: u64 = 1 << 2;
    /// ToLID.
    pub const TO_LID: u64 = 1 << 3;
}

/// LinkRecord, parsed: port `from_port` of the node with LID `from_lid` is
/// cabled to port `to_port` of the node with LID `to_lid` (switches: LID of
/// port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LinkRecord {
    /// LID of the node on this side.
    pub from_lid: u16,
    /// Port number on this side.
    pub from_port: u8,
    /// Port number on the far side.
    pub to_port: u8,
    /// LID of the node on the far side.
    pub to_lid: u16,
}

impl LinkRecord {
    /// Size of LinkRecord in the IBA table.
    pub const LEN: usize = field::TO_LID.end;

    /// Parses the first [`LinkRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<LinkRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(LinkRecord {
            from_lid: get_u16(&b[field::FROM_LID]),
            from_port: b[field::FROM_PORT],
            to_port: b[field::TO_PORT],
            to_lid: get_u16(&b[field::TO_LID]),
        })
    }

    /// Bytes [`LinkRecord::emit`] writes: [`LinkRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`LinkRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`LinkRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::FROM_LID], self.from_lid);
        b[field::FROM_PORT] = self.from_port;
        b[field::TO_PORT] = self.to_port;
        set_u16(&mut b[field::TO_LID], self.to_lid);
    }
}

impl_sa_record!(LinkRecord, super::attr_id::LINK_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// Switch LID 3 port 5 to HCA LID 0x1a port 1.
    static LINK_BYTES: [u8; 6] = [0x00, 0x03, 0x05, 0x01, 0x00, 0x1a];

    fn expected() -> LinkRecord {
        LinkRecord {
            from_lid: 3,
            from_port: 5,
            to_port: 1,
            to_lid: 0x1a,
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(LinkRecord::parse(&LINK_BYTES), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 8];
        expected().emit(&mut out);
        assert_eq!(out[..6], LINK_BYTES);
        assert_eq!(out[6..], [0xa5, 0xa5]);
        assert_eq!(expected().buffer_len(), 6);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(LinkRecord::LEN, LinkRecord::parse, LinkRecord::emit, 20);
    }

    #[test]
    fn test_field_offsets() {
        let cases: &[Case<'_, LinkRecord>] = &[
            ("FromLID", |r| r.from_lid = u16::MAX, 0, &[0xff; 2]),
            ("FromPort", |r| r.from_port = 0xff, 2, &[0xff]),
            ("ToPort", |r| r.to_port = 0xff, 3, &[0xff]),
            ("ToLID", |r| r.to_lid = u16::MAX, 4, &[0xff; 2]),
        ];
        check_offsets(LinkRecord::LEN, LinkRecord::parse, LinkRecord::emit, cases);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[
            ("FromLID", comp::FROM_LID),
            ("FromPort", comp::FROM_PORT),
            ("ToPort", comp::TO_PORT),
            ("ToLID", comp::TO_LID),
        ]);
    }
}
