//! PortCountersExtended (PerfMgt attribute 0x1D, IBA Vol 1, 16.1.4): 184
//! bytes at the start of the PerfMgt data area (MAD offset 64).
//!
//! ```text
//!   0      reserved                 72..80   SymbolErrorCounter
//!   1      PortSelect               80..88   LinkErrorRecoveryCounter
//!   2..4   CounterSelect            88..96   LinkDownedCounter
//!   4..8   CounterSelect2           96..104  PortRcvErrors
//!   8..16  PortXmitData            104..112  PortRcvRemotePhysicalErrors
//!  16..24  PortRcvData             112..120  PortRcvSwitchRelayErrors
//!  24..32  PortXmitPkts            120..128  PortXmitDiscards
//!  32..40  PortRcvPkts             128..136  PortXmitConstraintErrors
//!  40..48  PortUnicastXmitPkts     136..144  PortRcvConstraintErrors
//!  48..56  PortUnicastRcvPkts      144..152  LocalLinkIntegrityErrors
//!  56..64  PortMulticastXmitPkts   152..160  ExcessiveBufferOverrunErrors
//!  64..72  PortMulticastRcvPkts    160..168  VL15Dropped
//!                                  168..176  PortXmitWait
//!                                  176..184  QP1Dropped
//! ```
//!
//! The counters from byte 72 on (and CounterSelect2) are valid only when
//! the PMA's ClassPortInfo.CapabilityMask2 has
//! [`crate::perf::cap2::IS_ADDL_PORT_CTRS_EXT_SUPPORTED`]; before IBA 1.3
//! those bytes are reserved and devices return zeros. Offsets match
//! libibmad's `fields.c` (`IB_PC_EXT_*`).

use crate::bytes::{self, get_u16, get_u32, get_u64, set_u16, set_u32, set_u64};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const RESERVED: usize = 0;
    pub(super) const PORT_SELECT: usize = 1;
    pub(super) const COUNTER_SELECT: Field = 2..4;
    pub(super) const COUNTER_SELECT2: Field = 4..8;
    pub(super) const XMIT_DATA: Field = 8..16;
    pub(super) const RCV_DATA: Field = 16..24;
    pub(super) const XMIT_PKTS: Field = 24..32;
    pub(super) const RCV_PKTS: Field = 32..40;
    pub(super) const UNICAST_XMIT_PKTS: Field = 40..48;
    pub(super) const UNICAST_RCV_PKTS: Field = 48..56;
    pub(super) const MULTICAST_XMIT_PKTS: Field = 56..64;
    pub(super) const MULTICAST_RCV_PKTS: Field = 64..72;
    pub(super) const SYMBOL_ERROR: Field = 72..80;
    pub(super) const LINK_ERROR_RECOVERY: Field = 80..88;
    pub(super) const LINK_DOWNED: Field = 88..96;
    pub(super) const RCV_ERRORS: Field = 96..104;
    pub(super) const RCV_REMOTE_PHYS_ERRORS: Field = 104..112;
    pub(super) const RCV_SWITCH_RELAY_ERRORS: Field = 112..120;
    pub(super) const XMIT_DISCARDS: Field = 120..128;
    pub(super) const XMIT_CONSTRAINT_ERRORS: Field = 128..136;
    pub(super) const RCV_CONSTRAINT_ERRORS: Field = 136..144;
    pub(super) const LOCAL_LINK_INTEGRITY_ERRORS: Field = 144..152;
    pub(super) const EXCESSIVE_BUFFER_OVERRUN_ERRORS: Field = 152..160;
    pub(super) const VL15_DROPPED: Field = 160..168;
    pub(super) const XMIT_WAIT: Field = 168..176;
    pub(super) const QP1_DROPPED: Field = 176..184;
}

/// PortCountersExtended, parsed: 64-bit counters that do not saturate in
/// practice. `port_xmit_data`/`port_rcv_data` count 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortCountersExt {
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    pub reserved: u8,
    /// PortSelect (byte 1): the port to report; 0xff = all ports of a
    /// switch that supports AllPortSelect.
    pub port_select: u8,
    /// CounterSelect (bytes 2–3): which of the first eight counters a Set
    /// resets.
    pub counter_select: u16,
    /// CounterSelect2 (bytes 4–7): which of the additional counters a Set
    /// resets (reserved before IBA 1.3).
    pub counter_select2: u32,
    /// PortXmitData, in 4-byte words.
    pub port_xmit_data: u64,
    /// PortRcvData, in 4-byte words.
    pub port_rcv_data: u64,
    /// PortXmitPkts.
    pub port_xmit_pkts: u64,
    /// PortRcvPkts.
    pub port_rcv_pkts: u64,
    /// PortUnicastXmitPkts.
    pub port_unicast_xmit_pkts: u64,
    /// PortUnicastRcvPkts.
    pub port_unicast_rcv_pkts: u64,
    /// PortMulticastXmitPkts.
    pub port_multicast_xmit_pkts: u64,
    /// PortMulticastRcvPkts.
    pub port_multicast_rcv_pkts: u64,
    /// SymbolErrorCounter (additional counter).
    pub symbol_error_counter: u64,
    /// LinkErrorRecoveryCounter (additional counter).
    pub link_error_recovery_counter: u64,
    /// LinkDownedCounter (additional counter).
    pub link_downed_counter: u64,
    /// PortRcvErrors (additional counter).
    pub port_rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors (additional counter).
    pub port_rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors (additional counter).
    pub port_rcv_switch_relay_errors: u64,
    /// PortXmitDiscards (additional counter).
    pub port_xmit_discards: u64,
    /// PortXmitConstraintErrors (additional counter).
    pub port_xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors (additional counter).
    pub port_rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors (additional counter).
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors (additional counter).
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped (additional counter).
    pub vl15_dropped: u64,
    /// PortXmitWait (additional counter).
    pub port_xmit_wait: u64,
    /// QP1Dropped (additional counter).
    pub qp1_dropped: u64,
}

impl PortCountersExt {
    /// Size of PortCountersExtended on the wire, additional counters
    /// included (the PerfMgt data area is 192 bytes).
    pub const LEN: usize = field::QP1_DROPPED.end;

    /// Size of the part defined before IBA 1.3 (through
    /// PortMulticastRcvPkts).
    pub const BASE_LEN: usize = field::MULTICAST_RCV_PKTS.end;

    /// Parses the first [`PortCountersExt::LEN`] bytes of `buf` (the
    /// PerfMgt data area, see [`crate::perf::data`]).
    pub fn parse(buf: &[u8]) -> Result<PortCountersExt> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(PortCountersExt {
            reserved: b[field::RESERVED],
            port_select: b[field::PORT_SELECT],
            counter_select: get_u16(&b[field::COUNTER_SELECT]),
            counter_select2: get_u32(&b[field::COUNTER_SELECT2]),
            port_xmit_data: get_u64(&b[field::XMIT_DATA]),
            port_rcv_data: get_u64(&b[field::RCV_DATA]),
            port_xmit_pkts: get_u64(&b[field::XMIT_PKTS]),
            port_rcv_pkts: get_u64(&b[field::RCV_PKTS]),
            port_unicast_xmit_pkts: get_u64(&b[field::UNICAST_XMIT_PKTS]),
            port_unicast_rcv_pkts: get_u64(&b[field::UNICAST_RCV_PKTS]),
            port_multicast_xmit_pkts: get_u64(&b[field::MULTICAST_XMIT_PKTS]),
            port_multicast_rcv_pkts: get_u64(&b[field::MULTICAST_RCV_PKTS]),
            symbol_error_counter: get_u64(&b[field::SYMBOL_ERROR]),
            link_error_recovery_counter: get_u64(&b[field::LINK_ERROR_RECOVERY]),
            link_downed_counter: get_u64(&b[field::LINK_DOWNED]),
            port_rcv_errors: get_u64(&b[field::RCV_ERRORS]),
            port_rcv_remote_physical_errors: get_u64(&b[field::RCV_REMOTE_PHYS_ERRORS]),
            port_rcv_switch_relay_errors: get_u64(&b[field::RCV_SWITCH_RELAY_ERRORS]),
            port_xmit_discards: get_u64(&b[field::XMIT_DISCARDS]),
            port_xmit_constraint_errors: get_u64(&b[field::XMIT_CONSTRAINT_ERRORS]),
            port_rcv_constraint_errors: get_u64(&b[field::RCV_CONSTRAINT_ERRORS]),
            local_link_integrity_errors: get_u64(&b[field::LOCAL_LINK_INTEGRITY_ERRORS]),
            excessive_buffer_overrun_errors: get_u64(&b[field::EXCESSIVE_BUFFER_OVERRUN_ERRORS]),
            vl15_dropped: get_u64(&b[field::VL15_DROPPED]),
            port_xmit_wait: get_u64(&b[field::XMIT_WAIT]),
            qp1_dropped: get_u64(&b[field::QP1_DROPPED]),
        })
    }

    /// Bytes [`PortCountersExt::emit`] writes: [`PortCountersExt::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PortCountersExt::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortCountersExt::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::RESERVED] = self.reserved;
        b[field::PORT_SELECT] = self.port_select;
        set_u16(&mut b[field::COUNTER_SELECT], self.counter_select);
        set_u32(&mut b[field::COUNTER_SELECT2], self.counter_select2);
        let counters: [(bytes::Field, u64); 22] = [
            (field::XMIT_DATA, self.port_xmit_data),
            (field::RCV_DATA, self.port_rcv_data),
            (field::XMIT_PKTS, self.port_xmit_pkts),
            (field::RCV_PKTS, self.port_rcv_pkts),
            (field::UNICAST_XMIT_PKTS, self.port_unicast_xmit_pkts),
            (field::UNICAST_RCV_PKTS, self.port_unicast_rcv_pkts),
            (field::MULTICAST_XMIT_PKTS, self.port_multicast_xmit_pkts),
            (field::MULTICAST_RCV_PKTS, self.port_multicast_rcv_pkts),
            (field::SYMBOL_ERROR, self.symbol_error_counter),
            (field::LINK_ERROR_RECOVERY, self.link_error_recovery_counter),
            (field::LINK_DOWNED, self.link_downed_counter),
            (field::RCV_ERRORS, self.port_rcv_errors),
            (
                field::RCV_REMOTE_PHYS_ERRORS,
                self.port_rcv_remote_physical_errors,
            ),
            (
                field::RCV_SWITCH_RELAY_ERRORS,
                self.port_rcv_switch_relay_errors,
            ),
            (field::XMIT_DISCARDS, self.port_xmit_discards),
            (
                field::XMIT_CONSTRAINT_ERRORS,
                self.port_xmit_constraint_errors,
            ),
            (
                field::RCV_CONSTRAINT_ERRORS,
                self.port_rcv_constraint_errors,
            ),
            (
                field::LOCAL_LINK_INTEGRITY_ERRORS,
                self.local_link_integrity_errors,
            ),
            (
                field::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
                self.excessive_buffer_overrun_errors,
            ),
            (field::VL15_DROPPED, self.vl15_dropped),
            (field::XMIT_WAIT, self.port_xmit_wait),
            (field::QP1_DROPPED, self.qp1_dropped),
        ];
        for (range, value) in counters {
            set_u64(&mut b[range], value);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// PortCountersExtended of port 1 after 10 packets (72 words each)
    /// each way, all unicast, two symbol errors, one link-downed event.
    static COUNTERS_BYTES: [u8; 184] = {
        let mut b = [0u8; 184];
        b[1] = 1; // PortSelect
        b[15] = 0xd0; // XmitData 720 words
        b[14] = 0x02;
        b[23] = 0xd0; // RcvData 720 words
        b[22] = 0x02;
        b[31] = 10; // XmitPkts
        b[39] = 10; // RcvPkts
        b[47] = 10; // UnicastXmitPkts
        b[55] = 10; // UnicastRcvPkts
        b[79] = 2; // SymbolErrorCounter
        b[95] = 1; // LinkDownedCounter
        b
    };

    fn expected() -> PortCountersExt {
        PortCountersExt {
            port_select: 1,
            port_xmit_data: 720,
            port_rcv_data: 720,
            port_xmit_pkts: 10,
            port_rcv_pkts: 10,
            port_unicast_xmit_pkts: 10,
            port_unicast_rcv_pkts: 10,
            symbol_error_counter: 2,
            link_downed_counter: 1,
            ..PortCountersExt::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(PortCountersExt::parse(&COUNTERS_BYTES), Ok(expected()));
        // The whole 192-byte data area is fine.
        let mut area = [0u8; 192];
        area[..184].copy_from_slice(&COUNTERS_BYTES);
        assert_eq!(PortCountersExt::parse(&area), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 192];
        expected().emit(&mut out);
        assert_eq!(out[..184], COUNTERS_BYTES);
        assert_eq!(out[184..], [0xa5; 8]);
        assert_eq!(expected().buffer_len(), 184);
        assert_eq!(PortCountersExt::BASE_LEN, 72);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PortCountersExt::LEN,
            PortCountersExt::parse,
            PortCountersExt::emit,
            0x1d,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortCountersExt>] = &[
            ("reserved", |c| c.reserved = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            ("CounterSelect", |c| c.counter_select = u16::MAX, 2, &[0xff; 2]),
            ("CounterSelect2", |c| c.counter_select2 = u32::MAX, 4, &[0xff; 4]),
            ("PortXmitData", |c| c.port_xmit_data = u64::MAX, 8, &[0xff; 8]),
            ("PortRcvData", |c| c.port_rcv_data = u64::MAX, 16, &[0xff; 8]),
            ("PortXmitPkts", |c| c.port_xmit_pkts = u64::MAX, 24, &[0xff; 8]),
            ("PortRcvPkts", |c| c.port_rcv_pkts = u64::MAX, 32, &[0xff; 8]),
            ("PortUnicastXmitPkts", |c| c.port_unicast_xmit_pkts = u64::MAX, 40, &[0xff; 8]),
            ("PortUnicastRcvPkts", |c| c.port_unicast_rcv_pkts = u64::MAX, 48, &[0xff; 8]),
            ("PortMulticastXmitPkts", |c| c.port_multicast_xmit_pkts = u64::MAX, 56, &[0xff; 8]),
            ("PortMulticastRcvPkts", |c| c.port_multicast_rcv_pkts = u64::MAX, 64, &[0xff; 8]),
            ("SymbolErrorCounter", |c| c.symbol_error_counter = u64::MAX, 72, &[0xff; 8]),
            ("LinkErrorRecoveryCounter", |c| c.link_error_recovery_counter = u64::MAX, 80, &[0xff; 8]),
            ("LinkDownedCounter", |c| c.link_downed_counter = u64::MAX, 88, &[0xff; 8]),
            ("PortRcvErrors", |c| c.port_rcv_errors = u64::MAX, 96, &[0xff; 8]),
            ("PortRcvRemotePhysicalErrors", |c| c.port_rcv_remote_physical_errors = u64::MAX, 104, &[0xff; 8]),
            ("PortRcvSwitchRelayErrors", |c| c.port_rcv_switch_relay_errors = u64::MAX, 112, &[0xff; 8]),
            ("PortXmitDiscards", |c| c.port_xmit_discards = u64::MAX, 120, &[0xff; 8]),
            ("PortXmitConstraintErrors", |c| c.port_xmit_constraint_errors = u64::MAX, 128, &[0xff; 8]),
            ("PortRcvConstraintErrors", |c| c.port_rcv_constraint_errors = u64::MAX, 136, &[0xff; 8]),
            ("LocalLinkIntegrityErrors", |c| c.local_link_integrity_errors = u64::MAX, 144, &[0xff; 8]),
            ("ExcessiveBufferOverrunErrors", |c| c.excessive_buffer_overrun_errors = u64::MAX, 152, &[0xff; 8]),
            ("VL15Dropped", |c| c.vl15_dropped = u64::MAX, 160, &[0xff; 8]),
            ("PortXmitWait", |c| c.port_xmit_wait = u64::MAX, 168, &[0xff; 8]),
            ("QP1Dropped", |c| c.qp1_dropped = u64::MAX, 176, &[0xff; 8]),
        ];
        check_offsets(
            PortCountersExt::LEN,
            PortCountersExt::parse,
            PortCountersExt::emit,
            cases,
        );
    }

    #[test]
    fn test_fields_c_bit_offsets() {
        // libibmad fields.c bit offsets (IB_PC_EXT_*): 64-bit fields at
        // bit 64 + 64 * i for the first eight, 576 + 64 * i for the rest.
        let mut c = PortCountersExt {
            port_multicast_rcv_pkts: 0x0102_0304_0506_0708,
            ..PortCountersExt::default()
        };
        let mut b = [0u8; 184];
        c.emit(&mut b);
        assert_eq!(b[512 / 8..576 / 8], [1, 2, 3, 4, 5, 6, 7, 8]);
        c = PortCountersExt {
            qp1_dropped: 0x1122_3344_5566_7788,
            ..PortCountersExt::default()
        };
        c.emit(&mut b);
        assert_eq!(
            b[1408 / 8..1472 / 8],
            [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
    }
}
