//! SMInfo (SMP attribute 0x20, IBA Vol 1, 14.2.5.13): 21 bytes; the rest of
//! the 64-byte SMP data area is reserved.
//!
//! ```text
//!  0..8   GUID       (of the SM's port)
//!  8..16  SM_Key
//! 16..20  ActCount   (SM activity counter)
//! 20      Priority(7:4) SMState(3:0)
//! ```
//!
//! In a `Set(SMInfo)` the attribute modifier is an [`SmControl`] code.
//! Offsets match libibmad's `fields.c` (`IB_SMINFO_*_F`).

use core::fmt;

use crate::bytes::{self, bits, get_u32, get_u64, place, set_u32, set_u64};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const GUID: Field = 0..8;
    pub(super) const SM_KEY: Field = 8..16;
    pub(super) const ACT_COUNT: Field = 16..20;
    /// Priority(7:4), SMState(3:0).
    pub(super) const PRIORITY_STATE: usize = 20;
}

enum_with_unknown! {
    /// SMInfo.SMState.
    #[derive(Default)]
    pub enum SmState(u8) {
        /// Not active (no SM, or the SM is disabled).
        #[default]
        NotActive = 0,
        /// Discovering the subnet.
        Discovering = 1,
        /// Standby: another SM is master.
        Standby = 2,
        /// Master.
        Master = 3,
    }
}

impl SmState {
    /// The name infiniband-diags' `sminfo` prints (`SMINFO_NOTACT`,
    /// `SMINFO_DISCOVER`, `SMINFO_STANDBY`, `SMINFO_MASTER`, or `???`).
    pub fn diag_name(self) -> &'static str {
        match self {
            SmState::NotActive => "SMINFO_NOTACT",
            SmState::Discovering => "SMINFO_DISCOVER",
            SmState::Standby => "SMINFO_STANDBY",
            SmState::Master => "SMINFO_MASTER",
            SmState::Unknown(_) => "???",
        }
    }
}

impl fmt::Display for SmState {
    /// `NotActive`, `Discovering`, `Standby`, `Master`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmState::NotActive => f.write_str("NotActive"),
            SmState::Discovering => f.write_str("Discovering"),
            SmState::Standby => f.write_str("Standby"),
            SmState::Master => f.write_str("Master"),
            SmState::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

enum_with_unknown! {
    /// The attribute modifier of `Set(SMInfo)`: what the receiving SM is
    /// asked to do (IBA 14.2.5.13; names as OpenSM uses them).
    pub enum SmControl(u32) {
        /// Hand over mastership to the receiving SM.
        Handover = 1,
        /// Acknowledge a handover.
        Acknowledge = 2,
        /// Stop being an SM.
        Disable = 3,
        /// Go to standby.
        Standby = 4,
        /// Start discovering.
        Discover = 5,
    }
}

impl fmt::Display for SmControl {
    /// `HANDOVER`, `ACKNOWLEDGE`, `DISABLE`, `STANDBY`, `DISCOVER`, or
    /// `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmControl::Handover => f.write_str("HANDOVER"),
            SmControl::Acknowledge => f.write_str("ACKNOWLEDGE"),
            SmControl::Disable => f.write_str("DISABLE"),
            SmControl::Standby => f.write_str("STANDBY"),
            SmControl::Discover => f.write_str("DISCOVER"),
            SmControl::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

/// SMInfo, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SmInfo {
    /// GUID of the port the SM runs on (bytes 0–7).
    pub guid: u64,
    /// SM_Key (bytes 8–15); reads as 0 unless the requester proved it
    /// knows the key.
    pub sm_key: u64,
    /// ActCount (bytes 16–19): increments while the SM is active.
    pub act_count: u32,
    /// Priority (byte 20, bits 7:4): higher wins the master election.
    pub priority: u8,
    /// SMState (byte 20, bits 3:0).
    pub sm_state: SmState,
}

impl SmInfo {
    /// Size of SMInfo on the wire (the rest of the 64-byte SMP data area is
    /// reserved).
    pub const LEN: usize = field::PRIORITY_STATE + 1;

    /// Parses the first [`SmInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SmInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let ps = b[field::PRIORITY_STATE];
        Ok(SmInfo {
            guid: get_u64(&b[field::GUID]),
            sm_key: get_u64(&b[field::SM_KEY]),
            act_count: get_u32(&b[field::ACT_COUNT]),
            priority: bits(ps, 4, 4),
            sm_state: SmState::from(bits(ps, 0, 4)),
        })
    }

    /// Bytes [`SmInfo::emit`] writes: [`SmInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`SmInfo::LEN`] bytes of `buf`; `priority` and
    /// `sm_state` are masked to 4 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`SmInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u64(&mut b[field::GUID], self.guid);
        set_u64(&mut b[field::SM_KEY], self.sm_key);
        set_u32(&mut b[field::ACT_COUNT], self.act_count);
        b[field::PRIORITY_STATE] = place(self.priority, 4, 4) | place(self.sm_state.into(), 0, 4);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// OpenSM as master: port GUID 0x0002c90300001234, SM_Key 0 (not
    /// shown), ActCount 0x1f2e, priority 15.
    static SMINFO_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[1] = 0x02;
        b[2] = 0xc9;
        b[3] = 0x03;
        b[6] = 0x12;
        b[7] = 0x34;
        b[18] = 0x1f;
        b[19] = 0x2e;
        b[20] = 0xf3;
        b
    };

    #[test]
    fn test_deconstruct() {
        let si = SmInfo::parse(&SMINFO_BYTES).unwrap();
        assert_eq!(si.guid, 0x0002_c903_0000_1234);
        assert_eq!(si.sm_key, 0);
        assert_eq!(si.act_count, 0x1f2e);
        assert_eq!(si.priority, 15);
        assert_eq!(si.sm_state, SmState::Master);
    }

    #[test]
    fn test_construct() {
        let si = SmInfo {
            guid: 0x0002_c903_0000_1234,
            sm_key: 0,
            act_count: 0x1f2e,
            priority: 15,
            sm_state: SmState::Master,
        };
        assert_eq!(si.buffer_len(), 21);
        let mut out = [0u8; 64];
        si.emit(&mut out);
        assert_eq!(out, SMINFO_BYTES);
        let mut out = [0xa5u8; 64];
        si.emit(&mut out);
        assert_eq!(out[..21], SMINFO_BYTES[..21]);
        assert!(out[21..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    #[should_panic(expected = "need 21 bytes, got 20")]
    fn emit_short_buffer_panics() {
        SmInfo::default().emit(&mut [0u8; 20]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            SmInfo::LEN,
            SmInfo::parse,
            SmInfo::emit,
            0x5310_0000_0000_0020,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, SmInfo>] = &[
            ("GUID", |s| s.guid = u64::MAX, 0, &[0xff; 8]),
            ("SM_Key", |s| s.sm_key = u64::MAX, 8, &[0xff; 8]),
            ("ActCount", |s| s.act_count = u32::MAX, 16, &[0xff; 4]),
            ("Priority", |s| s.priority = 0xff, 20, &[0xf0]),
            ("SMState", |s| s.sm_state = SmState::Unknown(0xff), 20, &[0x0f]),
        ];
        check_offsets(SmInfo::LEN, SmInfo::parse, SmInfo::emit, cases);
    }

    #[test]
    fn enums() {
        assert_eq!(SmState::NotActive.to_string(), "NotActive");
        assert_eq!(SmState::Discovering.to_string(), "Discovering");
        assert_eq!(SmState::Standby.to_string(), "Standby");
        assert_eq!(SmState::Master.to_string(), "Master");
        assert_eq!(SmState::from(7).to_string(), "?(7)");
        assert_eq!(SmState::Master.diag_name(), "SMINFO_MASTER");
        assert_eq!(SmState::NotActive.diag_name(), "SMINFO_NOTACT");
        assert_eq!(SmState::from(4).diag_name(), "???");
        assert_eq!(SmState::default(), SmState::NotActive);
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(SmState::from(v)), v);
        }
        assert_eq!(SmControl::from(1), SmControl::Handover);
        assert_eq!(u32::from(SmControl::Discover), 5);
        assert_eq!(SmControl::Acknowledge.to_string(), "ACKNOWLEDGE");
        assert_eq!(SmControl::from(0).to_string(), "?(0)");
    }
}
