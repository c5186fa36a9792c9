//! SMInfoRecord (SA attribute 0x18, IBA Vol 1, 15.2.5): 25 bytes (32
//! with padding in a GetTableResp).
//!
//! ```text
//!  0..2   LID
//!  2..4   reserved
//!  4..25  SMInfo (21 bytes, the layout of [`crate::SmInfo`]): GUID(8)
//!         SM_Key(8) ActCount(4) Priority(7:4) SMState(3:0)
//! ```

use crate::attr::SmInfo;
use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const RESERVED: Field = 2..4;
    pub(super) const SM_INFO: Field = 4..25;
}

/// SMInfoRecord ComponentMask bits, in IBA order (opensm
/// `IB_SMIR_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
    /// SMInfo.GUID.
    pub const GUID: u64 = 1 << 2;
    /// SMInfo.SM_Key.
    pub const SM_KEY: u64 = 1 << 3;
    /// SMInfo.ActCount.
    pub const ACT_COUNT: u64 = 1 << 4;
    /// SMInfo.Priority.
    pub const PRIORITY: u64 = 1 << 5;
    /// SMInfo.SMState.
    pub const SM_STATE: u64 = 1 << 6;
}

/// SMInfoRecord, parsed: the SMInfo of an SM port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SmInfoRecord {
    /// LID of the SM port.
    pub lid: u16,
    /// Reserved (bytes 2–3), kept so `emit` reproduces the input.
    pub reserved: u16,
    /// The SM's SMInfo (the same layout as in the SMP data area).
    pub sm_info: SmInfo,
}

impl SmInfoRecord {
    /// Size of SMInfoRecord in the IBA table.
    pub const LEN: usize = field::SM_INFO.end;

    /// Parses the first [`SmInfoRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SmInfoRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(SmInfoRecord {
            lid: get_u16(&b[field::LID]),
            reserved: get_u16(&b[field::RESERVED]),
            sm_info: SmInfo::parse(&b[field::SM_INFO])?,
        })
    }

    /// Bytes [`SmInfoRecord::emit`] writes: [`SmInfoRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`SmInfoRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`SmInfoRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::RESERVED], self.reserved);
        self.sm_info.emit(&mut b[field::SM_INFO]);
    }
}

// The embedded attribute fills its field exactly.
const _: () = assert!(SmInfo::LEN == field::SM_INFO.end - field::SM_INFO.start);

impl_sa_record!(SmInfoRecord, super::attr_id::SM_INFO_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::attr::SmState;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// The master SM on LID 1: GUID 0x0002c90300000001, ActCount 0x1234,
    /// priority 15, state master.
    static RECORD_BYTES: [u8; 25] = [
        0x00, 0x01, 0x00, 0x00, // LID 1, reserved
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, // GUID
        0, 0, 0, 0, 0, 0, 0, 0, // SM_Key
        0x00, 0x00, 0x12, 0x34, // ActCount
        0xf3, // priority 15, master
    ];

    #[test]
    fn test_deconstruct() {
        let r = SmInfoRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r.lid, 1);
        assert_eq!(r.reserved, 0);
        let si = r.sm_info;
        assert_eq!(si.guid, 0x0002_c903_0000_0001);
        assert_eq!(si.sm_key, 0);
        assert_eq!(si.act_count, 0x1234);
        assert_eq!(si.priority, 15);
        assert_eq!(si.sm_state, SmState::Master);
        assert_eq!(si, SmInfo::parse(&RECORD_BYTES[4..]).unwrap());
    }

    #[test]
    fn test_construct() {
        let r = SmInfoRecord {
            lid: 1,
            reserved: 0,
            sm_info: SmInfo {
                guid: 0x0002_c903_0000_0001,
                sm_key: 0,
                act_count: 0x1234,
                priority: 15,
                sm_state: SmState::Master,
            },
        };
        let mut out = [0xa5u8; 32];
        r.emit(&mut out);
        assert_eq!(out[..25], RECORD_BYTES);
        assert_eq!(out[25..], [0xa5; 7]);
        assert_eq!(r.buffer_len(), 25);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            SmInfoRecord::LEN,
            SmInfoRecord::parse,
            SmInfoRecord::emit,
            18,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, SmInfoRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("reserved", |r| r.reserved = u16::MAX, 2, &[0xff; 2]),
            ("SMInfo", |r| r.sm_info = SmInfo::parse(&[0xff; 21]).unwrap(), 4, &[0xff; 21]),
        ];
        check_offsets(
            SmInfoRecord::LEN,
            SmInfoRecord::parse,
            SmInfoRecord::emit,
            cases,
        );
        // SMInfo sits at byte 4: the state lights the low nibble of byte 24.
        let mut r = SmInfoRecord::default();
        r.sm_info.sm_state = SmState::Unknown(0xff);
        let mut out = [0u8; 25];
        r.emit(&mut out);
        assert_eq!(out[24], 0x0f);
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 1);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[
            ("LID", comp::LID),
            ("Reserved", comp::RESERVED),
            ("GUID", comp::GUID),
            ("SM_Key", comp::SM_KEY),
            ("ActCount", comp::ACT_COUNT),
            ("Priority", comp::PRIORITY),
            ("SMState", comp::SM_STATE),
        ]);
    }
}
