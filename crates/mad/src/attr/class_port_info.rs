//! ClassPortInfo (attribute 0x01, common to all GS classes, IBA Vol 1,
//! 13.4.8.1): 72 bytes describing a class agent's capabilities, where to
//! redirect requests and where to send traps.
//!
//! ```text
//!  0      BaseVersion             24..28 RedirectTC(31:24) RedirectSL(23:20) RedirectFL(19:0)
//!  1      ClassVersion            28..30 RedirectLID
//!  2..4   CapabilityMask          30..32 RedirectP_Key
//!  4..8   CapabilityMask2(31:5)   32     reserved
//!         RespTimeValue(4:0)      33..36 RedirectQP (24 bits)
//!  8..24  RedirectGID             36..40 RedirectQ_Key
//! 40..56  TrapGID                 60..62 TrapLID
//! 56..60  TrapTC(31:24) TrapSL(23:20) TrapFL(19:0)
//! 62..64  TrapP_Key               64     TrapHL
//! 65..68  TrapQP (24 bits)        68..72 TrapQ_Key
//! ```
//!
//! Layout as rdma-core's `struct umad_class_port_info` (72 bytes, RedirectGID
//! at 8, TrapGID at 40) and libibmad's `IB_CPI_*_F` fields. It sits in the
//! class's data area: offset 64 for PerfMgt, 56 for SA.

use crate::bytes::{self, get_u16, get_u24, get_u32, set_u16, set_u24, set_u32};
use crate::types::Gid;
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const BASE_VERSION: usize = 0;
    pub(super) const CLASS_VERSION: usize = 1;
    pub(super) const CAPABILITY_MASK: Field = 2..4;
    /// CapabilityMask2(31:5), RespTimeValue(4:0).
    pub(super) const CAP_MASK2_RESP_TIME: Field = 4..8;
    pub(super) const REDIRECT_GID: Field = 8..24;
    /// RedirectTC(31:24), RedirectSL(23:20), RedirectFL(19:0).
    pub(super) const REDIRECT_TC_SL_FL: Field = 24..28;
    pub(super) const REDIRECT_LID: Field = 28..30;
    pub(super) const REDIRECT_PKEY: Field = 30..32;
    pub(super) const RESERVED_32: usize = 32;
    pub(super) const REDIRECT_QP: Field = 33..36;
    pub(super) const REDIRECT_QKEY: Field = 36..40;
    pub(super) const TRAP_GID: Field = 40..56;
    /// TrapTC(31:24), TrapSL(23:20), TrapFL(19:0).
    pub(super) const TRAP_TC_SL_FL: Field = 56..60;
    pub(super) const TRAP_LID: Field = 60..62;
    pub(super) const TRAP_PKEY: Field = 62..64;
    pub(super) const TRAP_HL: usize = 64;
    pub(super) const TRAP_QP: Field = 65..68;
    pub(super) const TRAP_QKEY: Field = 68..72;
}

/// ClassPortInfo.CapabilityMask bits common to all classes (IBA 13.4.8.1);
/// bits 8–15 are class specific (e.g. [`crate::perf::cap`]).
pub mod cap {
    /// The class agent can send `Trap()` MADs.
    pub const IS_TRAP_SUPPORTED: u16 = 1 << 0;
    /// The class agent supports `Get(Notice)` and `Set(Notice)`.
    pub const IS_NOTICE_GET_SET_SUPPORTED: u16 = 1 << 1;
    /// CapabilityMask2 is valid.
    pub const IS_CAPABILITY_MASK2_SUPPORTED: u16 = 1 << 2;
}

/// Splits a TC/SL/FL word into (traffic class, service level, flow label).
fn split_tc_sl_fl(word: u32) -> (u8, u8, u32) {
    let [tc, sl_fl, ..] = word.to_be_bytes();
    (tc, sl_fl >> 4, word & 0x000f_ffff)
}

/// Joins (traffic class, service level, flow label) into one word; SL is
/// masked to 4 bits, FL to 20.
fn join_tc_sl_fl(tc: u8, sl: u8, fl: u32) -> u32 {
    u32::from(tc) << 24 | u32::from(sl & 0x0f) << 20 | (fl & 0x000f_ffff)
}

/// ClassPortInfo, parsed: every field of the 72-byte attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClassPortInfo {
    /// BaseVersion (byte 0): MAD base version supported (1).
    pub base_version: u8,
    /// ClassVersion (byte 1): highest class version supported.
    pub class_version: u8,
    /// CapabilityMask (bytes 2–3); common bits in [`cap`], bits 8–15
    /// class specific.
    pub capability_mask: u16,
    /// CapabilityMask2 (bytes 4–7, bits 31:5; 27 bits).
    pub capability_mask2: u32,
    /// RespTimeValue (byte 7, bits 4:0): the agent answers within
    /// 4.096 µs × 2^value.
    pub resp_time_value: u8,
    /// RedirectGID (bytes 8–23).
    pub redirect_gid: Gid,
    /// RedirectTC (byte 24): traffic class.
    pub redirect_tc: u8,
    /// RedirectSL (byte 25, bits 7:4): service level.
    pub redirect_sl: u8,
    /// RedirectFL (bytes 25–27, 20 bits): flow label.
    pub redirect_fl: u32,
    /// RedirectLID (bytes 28–29); 0 means "no redirection".
    pub redirect_lid: u16,
    /// RedirectP_Key (bytes 30–31).
    pub redirect_pkey: u16,
    /// Reserved (byte 32).
    pub reserved_32: u8,
    /// RedirectQP (bytes 33–35, 24 bits).
    pub redirect_qp: u32,
    /// RedirectQ_Key (bytes 36–39).
    pub redirect_qkey: u32,
    /// TrapGID (bytes 40–55): where traps go.
    pub trap_gid: Gid,
    /// TrapTC (byte 56).
    pub trap_tc: u8,
    /// TrapSL (byte 57, bits 7:4).
    pub trap_sl: u8,
    /// TrapFL (bytes 57–59, 20 bits).
    pub trap_fl: u32,
    /// TrapLID (bytes 60–61).
    pub trap_lid: u16,
    /// TrapP_Key (bytes 62–63).
    pub trap_pkey: u16,
    /// TrapHL (byte 64): hop limit.
    pub trap_hl: u8,
    /// TrapQP (bytes 65–67, 24 bits).
    pub trap_qp: u32,
    /// TrapQ_Key (bytes 68–71).
    pub trap_qkey: u32,
}

impl ClassPortInfo {
    /// Size of ClassPortInfo on the wire.
    pub const LEN: usize = field::TRAP_QKEY.end;

    /// Parses the first [`ClassPortInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<ClassPortInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let cm2 = get_u32(&b[field::CAP_MASK2_RESP_TIME]);
        let (redirect_tc, redirect_sl, redirect_fl) =
            split_tc_sl_fl(get_u32(&b[field::REDIRECT_TC_SL_FL]));
        let (trap_tc, trap_sl, trap_fl) = split_tc_sl_fl(get_u32(&b[field::TRAP_TC_SL_FL]));
        Ok(ClassPortInfo {
            base_version: b[field::BASE_VERSION],
            class_version: b[field::CLASS_VERSION],
            capability_mask: get_u16(&b[field::CAPABILITY_MASK]),
            capability_mask2: cm2 >> 5,
            // The mask keeps 5 bits, so the cast is lossless.
            resp_time_value: (cm2 & 0x1f) as u8,
            redirect_gid: Gid::parse(&b[field::REDIRECT_GID])?,
            redirect_tc,
            redirect_sl,
            redirect_fl,
            redirect_lid: get_u16(&b[field::REDIRECT_LID]),
            redirect_pkey: get_u16(&b[field::REDIRECT_PKEY]),
            reserved_32: b[field::RESERVED_32],
            redirect_qp: get_u24(&b[field::REDIRECT_QP]),
            redirect_qkey: get_u32(&b[field::REDIRECT_QKEY]),
            trap_gid: Gid::parse(&b[field::TRAP_GID])?,
            trap_tc,
            trap_sl,
            trap_fl,
            trap_lid: get_u16(&b[field::TRAP_LID]),
            trap_pkey: get_u16(&b[field::TRAP_PKEY]),
            trap_hl: b[field::TRAP_HL],
            trap_qp: get_u24(&b[field::TRAP_QP]),
            trap_qkey: get_u32(&b[field::TRAP_QKEY]),
        })
    }

    /// Bytes [`ClassPortInfo::emit`] writes: [`ClassPortInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 72 bytes into the start of `buf`. Fields narrower than
    /// their type are masked: CapabilityMask2 to 27 bits, RespTimeValue to
    /// 5, SLs to 4, FLs to 20, QPs to 24.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`ClassPortInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::BASE_VERSION] = self.base_version;
        b[field::CLASS_VERSION] = self.class_version;
        set_u16(&mut b[field::CAPABILITY_MASK], self.capability_mask);
        set_u32(
            &mut b[field::CAP_MASK2_RESP_TIME],
            self.capability_mask2 << 5 | u32::from(self.resp_time_value & 0x1f),
        );
        self.redirect_gid.emit(&mut b[field::REDIRECT_GID]);
        set_u32(
            &mut b[field::REDIRECT_TC_SL_FL],
            join_tc_sl_fl(self.redirect_tc, self.redirect_sl, self.redirect_fl),
        );
        set_u16(&mut b[field::REDIRECT_LID], self.redirect_lid);
        set_u16(&mut b[field::REDIRECT_PKEY], self.redirect_pkey);
        b[field::RESERVED_32] = self.reserved_32;
        set_u24(&mut b[field::REDIRECT_QP], self.redirect_qp);
        set_u32(&mut b[field::REDIRECT_QKEY], self.redirect_qkey);
        self.trap_gid.emit(&mut b[field::TRAP_GID]);
        set_u32(
            &mut b[field::TRAP_TC_SL_FL],
            join_tc_sl_fl(self.trap_tc, self.trap_sl, self.trap_fl),
        );
        set_u16(&mut b[field::TRAP_LID], self.trap_lid);
        set_u16(&mut b[field::TRAP_PKEY], self.trap_pkey);
        b[field::TRAP_HL] = self.trap_hl;
        set_u24(&mut b[field::TRAP_QP], self.trap_qp);
        set_u32(&mut b[field::TRAP_QKEY], self.trap_qkey);
    }

    /// Whether every bit of `mask` is set in the CapabilityMask.
    pub fn has_capability(&self, mask: u16) -> bool {
        self.capability_mask & mask == mask
    }

    /// Whether the agent asks for redirection (a non-zero RedirectLID or
    /// RedirectGID).
    pub fn is_redirected(&self) -> bool {
        self.redirect_lid != 0 || self.redirect_gid != Gid::default()
    }

    /// The agent's response timeout in microseconds:
    /// 4.096 µs × 2^RespTimeValue, rounded down (RespTimeValue above 31 is
    /// masked to 5 bits).
    pub fn resp_time_us(&self) -> u64 {
        (4096u64 << (self.resp_time_value & 0x1f)) / 1000
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// PerfMgt ClassPortInfo of an HCA (as ibsim/OpenSM's PerfMgr see it):
    /// class version 1, AllPortSelect | PortCountersXmitWait, RespTimeValue
    /// 18, no redirection, traps to LID 1 QP 1 Q_Key 0x80010000.
    fn pma_bytes() -> [u8; 72] {
        let mut b = [0u8; 72];
        b[0] = 1;
        b[1] = 1;
        b[2] = 0x11; // cap mask 0x1100
        b[7] = 18; // resp time 18, capmask2 0
        b[60] = 0x00;
        b[61] = 0x01; // trap LID 1
        b[62] = 0xff;
        b[63] = 0xff; // trap P_Key
        b[64] = 0xff; // trap HL
        b[67] = 0x01; // trap QP 1
        b[68..72].copy_from_slice(&[0x80, 0x01, 0x00, 0x00]);
        b
    }

    #[test]
    fn test_deconstruct() {
        let cpi = ClassPortInfo::parse(&pma_bytes()).unwrap();
        assert_eq!(cpi.base_version, 1);
        assert_eq!(cpi.class_version, 1);
        assert_eq!(cpi.capability_mask, 0x1100);
        assert!(cpi.has_capability(crate::perf::cap::ALL_PORT_SELECT));
        assert!(!cpi.has_capability(cap::IS_TRAP_SUPPORTED));
        assert_eq!(cpi.capability_mask2, 0);
        assert_eq!(cpi.resp_time_value, 18);
        assert_eq!(cpi.resp_time_us(), 1_073_741);
        assert!(!cpi.is_redirected());
        assert_eq!(cpi.trap_lid, 1);
        assert_eq!(cpi.trap_pkey, 0xffff);
        assert_eq!(cpi.trap_hl, 0xff);
        assert_eq!(cpi.trap_qp, 1);
        assert_eq!(cpi.trap_qkey, 0x8001_0000);
    }

    #[test]
    fn test_construct() {
        let cpi = ClassPortInfo {
            base_version: 1,
            class_version: 1,
            capability_mask: 0x1100,
            resp_time_value: 18,
            trap_lid: 1,
            trap_pkey: 0xffff,
            trap_hl: 0xff,
            trap_qp: 1,
            trap_qkey: 0x8001_0000,
            ..ClassPortInfo::default()
        };
        assert_eq!(cpi.buffer_len(), 72);
        let mut out = [0xa5u8; 80];
        cpi.emit(&mut out);
        assert_eq!(out[..72], pma_bytes());
        assert!(out[72..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    #[should_panic(expected = "need 72 bytes, got 64")]
    fn emit_short_buffer_panics() {
        // An SMP data area is too small for ClassPortInfo.
        ClassPortInfo::default().emit(&mut [0u8; 64]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            ClassPortInfo::LEN,
            ClassPortInfo::parse,
            ClassPortInfo::emit,
            0xc1a5_5000_0000_0001,
        );
    }

    /// One field at a time to all ones, against the IBA table, rdma-core's
    /// `umad_class_port_info` and libibmad's `IB_CPI_*_F` bit offsets.
    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, ClassPortInfo>] = &[
            ("BaseVersion", |c| c.base_version = 0xff, 0, &[0xff]),
            ("ClassVersion", |c| c.class_version = 0xff, 1, &[0xff]),
            ("CapabilityMask", |c| c.capability_mask = u16::MAX, 2, &[0xff; 2]),
            ("CapabilityMask2", |c| c.capability_mask2 = u32::MAX, 4, &[0xff, 0xff, 0xff, 0xe0]),
            ("RespTimeValue", |c| c.resp_time_value = 0xff, 7, &[0x1f]),
            ("RedirectGID", |c| c.redirect_gid = Gid([0xff; 16]), 8, &[0xff; 16]),
            ("RedirectTC", |c| c.redirect_tc = 0xff, 24, &[0xff]),
            ("RedirectSL", |c| c.redirect_sl = 0xff, 25, &[0xf0]),
            ("RedirectFL", |c| c.redirect_fl = u32::MAX, 25, &[0x0f, 0xff, 0xff]),
            ("RedirectLID", |c| c.redirect_lid = u16::MAX, 28, &[0xff; 2]),
            ("RedirectP_Key", |c| c.redirect_pkey = u16::MAX, 30, &[0xff; 2]),
            ("reserved_32", |c| c.reserved_32 = 0xff, 32, &[0xff]),
            ("RedirectQP", |c| c.redirect_qp = u32::MAX, 33, &[0xff; 3]),
            ("RedirectQ_Key", |c| c.redirect_qkey = u32::MAX, 36, &[0xff; 4]),
            ("TrapGID", |c| c.trap_gid = Gid([0xff; 16]), 40, &[0xff; 16]),
            ("TrapTC", |c| c.trap_tc = 0xff, 56, &[0xff]),
            ("TrapSL", |c| c.trap_sl = 0xff, 57, &[0xf0]),
            ("TrapFL", |c| c.trap_fl = u32::MAX, 57, &[0x0f, 0xff, 0xff]),
            ("TrapLID", |c| c.trap_lid = u16::MAX, 60, &[0xff; 2]),
            ("TrapP_Key", |c| c.trap_pkey = u16::MAX, 62, &[0xff; 2]),
            ("TrapHL", |c| c.trap_hl = 0xff, 64, &[0xff]),
            ("TrapQP", |c| c.trap_qp = u32::MAX, 65, &[0xff; 3]),
            ("TrapQ_Key", |c| c.trap_qkey = u32::MAX, 68, &[0xff; 4]),
        ];
        check_offsets(
            ClassPortInfo::LEN,
            ClassPortInfo::parse,
            ClassPortInfo::emit,
            cases,
        );
    }

    #[test]
    fn redirection() {
        let mut c = ClassPortInfo::default();
        assert!(!c.is_redirected());
        c.redirect_lid = 7;
        assert!(c.is_redirected());
        c.redirect_lid = 0;
        c.redirect_gid.0[15] = 1;
        assert!(c.is_redirected());
        c.resp_time_value = 0;
        assert_eq!(c.resp_time_us(), 4);
        c.resp_time_value = 31;
        assert_eq!(c.resp_time_us(), 8_796_093_022);
    }
}
