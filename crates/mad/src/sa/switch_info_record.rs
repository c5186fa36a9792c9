//! SwitchInfoRecord (SA attribute 0x14, IBA Vol 1, 15.2.5): 24 bytes.
//!
//! ```text
//!  0..2   LID
//!  2..4   reserved
//!  4..24  SwitchInfo (20 bytes, the layout of [`crate::SwitchInfo`])
//! ```

use crate::attr::SwitchInfo;
use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const RESERVED: Field = 2..4;
    pub(super) const SWITCH_INFO: Field = 4..24;
}

/// SwitchInfoRecord ComponentMask bits, in IBA order (opensm
/// `IB_SWIR_COMPMASK_*`). Bits for the SwitchInfo fields follow from bit 2
/// in SwitchInfo order; they are not listed here.
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
}

/// SwitchInfoRecord, parsed: a switch's SwitchInfo keyed by its LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchInfoRecord {
    /// LID of the switch (port 0).
    pub lid: u16,
    /// Reserved (bytes 2–3), kept so `emit` reproduces the input.
    pub reserved: u16,
    /// The switch's SwitchInfo (the same layout as in the SMP data area).
    pub switch_info: SwitchInfo,
}

impl SwitchInfoRecord {
    /// Size of SwitchInfoRecord in the IBA table.
    pub const LEN: usize = field::SWITCH_INFO.end;

    /// Parses the first [`SwitchInfoRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SwitchInfoRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(SwitchInfoRecord {
            lid: get_u16(&b[field::LID]),
            reserved: get_u16(&b[field::RESERVED]),
            switch_info: SwitchInfo::parse(&b[field::SWITCH_INFO])?,
        })
    }

    /// Bytes [`SwitchInfoRecord::emit`] writes: [`SwitchInfoRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`SwitchInfoRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`SwitchInfoRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::RESERVED], self.reserved);
        self.switch_info.emit(&mut b[field::SWITCH_INFO]);
    }
}

// The embedded attribute fills its field exactly.
const _: () = assert!(SwitchInfo::LEN == field::SWITCH_INFO.end - field::SWITCH_INFO.start);

impl_sa_record!(SwitchInfoRecord, super::attr_id::SWITCH_INFO_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// SwitchInfoRecord of LID 3: LinearFDBCap 0xc000, MulticastFDBCap
    /// 0x200, LinearFDBTop 0x1f, no default multicast ports, lifetime 2.
    static RECORD_BYTES: [u8; 24] = [
        0x00, 0x03, 0x00, 0x00, // LID 3, reserved
        0xc0, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x1f, // caps, top
        0x00, 0xff, 0xff, 0x10, 0x00, 0x01, 0x00, 0x20, // ports, life, LIDs, enforce
        0x00, 0x00, 0x00, 0x00, // flags, reserved, MFT top
    ];

    #[test]
    fn test_deconstruct() {
        let r = SwitchInfoRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r.lid, 3);
        assert_eq!(r.reserved, 0);
        let si = r.switch_info;
        assert_eq!(si.linear_fdb_cap, 0xc000);
        assert_eq!(si.random_fdb_cap, 0);
        assert_eq!(si.multicast_fdb_cap, 0x0200);
        assert_eq!(si.linear_fdb_top, 0x1f);
        assert_eq!(si.linear_fdb_blocks(), 1);
        assert_eq!(si.partition_enforcement_cap, 0x20);
        assert_eq!(si.lids_per_port, 1);
        assert_eq!(si.default_port, 0);
        assert_eq!(si.default_multicast_primary_port, 0xff);
        assert_eq!(si.default_multicast_not_primary_port, 0xff);
        assert_eq!(si.life_time_value, 2);
        assert_eq!(si, SwitchInfo::parse(&RECORD_BYTES[4..]).unwrap());
    }

    #[test]
    fn test_construct() {
        let r = SwitchInfoRecord {
            lid: 3,
            reserved: 0,
            switch_info: SwitchInfo::parse(&RECORD_BYTES[4..]).unwrap(),
        };
        let mut out = [0xa5u8; 24];
        r.emit(&mut out);
        assert_eq!(out, RECORD_BYTES);
        assert_eq!(r.buffer_len(), 24);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            SwitchInfoRecord::LEN,
            SwitchInfoRecord::parse,
            SwitchInfoRecord::emit,
            21,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, SwitchInfoRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("reserved", |r| r.reserved = u16::MAX, 2, &[0xff; 2]),
            ("SwitchInfo", |r| r.switch_info = SwitchInfo::parse(&[0xff; 20]).unwrap(), 4, &[0xff; 20]),
        ];
        check_offsets(
            SwitchInfoRecord::LEN,
            SwitchInfoRecord::parse,
            SwitchInfoRecord::emit,
            cases,
        );
        // SwitchInfo sits at byte 4: LinearFDBTop alone lights bytes 10..12.
        let mut r = SwitchInfoRecord::default();
        r.switch_info.linear_fdb_top = u16::MAX;
        let mut out = [0u8; 24];
        r.emit(&mut out);
        assert_eq!(out[10..12], [0xff, 0xff]);
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 2);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[("LID", comp::LID), ("Reserved", comp::RESERVED)]);
    }
}
