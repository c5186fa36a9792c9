//! PortCounters (PerfMgt attribute 0x12, IBA Vol 1, 16.1.3.5): 44 bytes at
//! the start of the PerfMgt data area (MAD offset 64).
//!
//! ```text
//!  0      reserved                  16  PortXmitConstraintErrors
//!  1      PortSelect                17  PortRcvConstraintErrors
//!  2..4   CounterSelect             18  CounterSelect2
//!  4..6   SymbolErrorCounter        19  LocalLinkIntegrityErrors(7:4)
//!  6      LinkErrorRecoveryCounter      ExcessiveBufferOverrunErrors(3:0)
//!  7      LinkDownedCounter         20..22 QP1Dropped
//!  8..10  PortRcvErrors             22..24 VL15Dropped
//! 10..12  PortRcvRemotePhysicalErrors  24..28 PortXmitData
//! 12..14  PortRcvSwitchRelayErrors  28..32 PortRcvData
//! 14..16  PortXmitDiscards          32..36 PortXmitPkts
//!                                   36..40 PortRcvPkts
//!                                   40..44 PortXmitWait
//! ```

use crate::bytes::{self, bits, get_u16, get_u32, place, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const RESERVED: usize = 0;
    pub(super) const PORT_SELECT: usize = 1;
    pub(super) const COUNTER_SELECT: Field = 2..4;
    pub(super) const SYMBOL_ERROR: Field = 4..6;
    pub(super) const LINK_ERROR_RECOVERY: usize = 6;
    pub(super) const LINK_DOWNED: usize = 7;
    pub(super) const RCV_ERRORS: Field = 8..10;
    pub(super) const RCV_REMOTE_PHYS_ERRORS: Field = 10..12;
    pub(super) const RCV_SWITCH_RELAY_ERRORS: Field = 12..14;
    pub(super) const XMIT_DISCARDS: Field = 14..16;
    pub(super) const XMIT_CONSTRAINT_ERRORS: usize = 16;
    pub(super) const RCV_CONSTRAINT_ERRORS: usize = 17;
    pub(super) const COUNTER_SELECT2: usize = 18;
    /// LocalLinkIntegrityErrors(7:4), ExcessiveBufferOverrunErrors(3:0).
    pub(super) const LLI_EBO: usize = 19;
    pub(super) const QP1_DROPPED: Field = 20..22;
    pub(super) const VL15_DROPPED: Field = 22..24;
    pub(super) const XMIT_DATA: Field = 24..28;
    pub(super) const RCV_DATA: Field = 28..32;
    pub(super) const XMIT_PKTS: Field = 32..36;
    pub(super) const RCV_PKTS: Field = 36..40;
    pub(super) const XMIT_WAIT: Field = 40..44;
}

/// PortCounters, parsed. Counters saturate at their maximum on the device;
/// `port_xmit_data`/`port_rcv_data` count 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortCounters {
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    pub reserved: u8,
    /// PortSelect (byte 1): the port to report; 0xff = all ports of a
    /// switch that supports AllPortSelect.
    pub port_select: u8,
    /// CounterSelect (bytes 2–3): which counters a Set resets.
    pub counter_select: u16,
    /// SymbolErrorCounter.
    pub symbol_error_counter: u16,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery_counter: u8,
    /// LinkDownedCounter.
    pub link_downed_counter: u8,
    /// PortRcvErrors.
    pub port_rcv_errors: u16,
    /// PortRcvRemotePhysicalErrors.
    pub port_rcv_remote_physical_errors: u16,
    /// PortRcvSwitchRelayErrors.
    pub port_rcv_switch_relay_errors: u16,
    /// PortXmitDiscards.
    pub port_xmit_discards: u16,
    /// PortXmitConstraintErrors.
    pub port_xmit_constraint_errors: u8,
    /// PortRcvConstraintErrors.
    pub port_rcv_constraint_errors: u8,
    /// CounterSelect2 (byte 18).
    pub counter_select2: u8,
    /// LocalLinkIntegrityErrors (byte 19, bits 7:4).
    pub local_link_integrity_errors: u8,
    /// ExcessiveBufferOverrunErrors (byte 19, bits 3:0).
    pub excessive_buffer_overrun_errors: u8,
    /// QP1Dropped (bytes 20–21; reserved before IBA 1.3).
    pub qp1_dropped: u16,
    /// VL15Dropped.
    pub vl15_dropped: u16,
    /// PortXmitData, in 4-byte words.
    pub port_xmit_data: u32,
    /// PortRcvData, in 4-byte words.
    pub port_rcv_data: u32,
    /// PortXmitPkts.
    pub port_xmit_pkts: u32,
    /// PortRcvPkts.
    pub port_rcv_pkts: u32,
    /// PortXmitWait.
    pub port_xmit_wait: u32,
}

impl PortCounters {
    /// Size of PortCounters on the wire.
    pub const LEN: usize = 44;

    /// Parses the first [`PortCounters::LEN`] bytes of `buf` (the PerfMgt
    /// data area, see [`crate::perf::data`]).
    pub fn parse(buf: &[u8]) -> Result<PortCounters> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let lli = b[field::LLI_EBO];
        Ok(PortCounters {
            reserved: b[field::RESERVED],
            port_select: b[field::PORT_SELECT],
            counter_select: get_u16(&b[field::COUNTER_SELECT]),
            symbol_error_counter: get_u16(&b[field::SYMBOL_ERROR]),
            link_error_recovery_counter: b[field::LINK_ERROR_RECOVERY],
            link_downed_counter: b[field::LINK_DOWNED],
            port_rcv_errors: get_u16(&b[field::RCV_ERRORS]),
            port_rcv_remote_physical_errors: get_u16(&b[field::RCV_REMOTE_PHYS_ERRORS]),
            port_rcv_switch_relay_errors: get_u16(&b[field::RCV_SWITCH_RELAY_ERRORS]),
            port_xmit_discards: get_u16(&b[field::XMIT_DISCARDS]),
            port_xmit_constraint_errors: b[field::XMIT_CONSTRAINT_ERRORS],
            port_rcv_constraint_errors: b[field::RCV_CONSTRAINT_ERRORS],
            counter_select2: b[field::COUNTER_SELECT2],
            local_link_integrity_errors: bits(lli, 4, 4),
            excessive_buffer_overrun_errors: bits(lli, 0, 4),
            qp1_dropped: get_u16(&b[field::QP1_DROPPED]),
            vl15_dropped: get_u16(&b[field::VL15_DROPPED]),
            port_xmit_data: get_u32(&b[field::XMIT_DATA]),
            port_rcv_data: get_u32(&b[field::RCV_DATA]),
            port_xmit_pkts: get_u32(&b[field::XMIT_PKTS]),
            port_rcv_pkts: get_u32(&b[field::RCV_PKTS]),
            port_xmit_wait: get_u32(&b[field::XMIT_WAIT]),
        })
    }

    /// Bytes [`PortCounters::emit`] writes: [`PortCounters::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PortCounters::LEN`] bytes of `buf`; the two 4-bit
    /// counters are masked to 4 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortCounters::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::RESERVED] = self.reserved;
        b[field::PORT_SELECT] = self.port_select;
        set_u16(&mut b[field::COUNTER_SELECT], self.counter_select);
        set_u16(&mut b[field::SYMBOL_ERROR], self.symbol_error_counter);
        b[field::LINK_ERROR_RECOVERY] = self.link_error_recovery_counter;
        b[field::LINK_DOWNED] = self.link_downed_counter;
        set_u16(&mut b[field::RCV_ERRORS], self.port_rcv_errors);
        set_u16(
            &mut b[field::RCV_REMOTE_PHYS_ERRORS],
            self.port_rcv_remote_physical_errors,
        );
        set_u16(
            &mut b[field::RCV_SWITCH_RELAY_ERRORS],
            self.port_rcv_switch_relay_errors,
        );
        set_u16(&mut b[field::XMIT_DISCARDS], self.port_xmit_discards);
        b[field::XMIT_CONSTRAINT_ERRORS] = self.port_xmit_constraint_errors;
        b[field::RCV_CONSTRAINT_ERRORS] = self.port_rcv_constraint_errors;
        b[field::COUNTER_SELECT2] = self.counter_select2;
        b[field::LLI_EBO] = place(self.local_link_integrity_errors, 4, 4)
            | place(self.excessive_buffer_overrun_errors, 0, 4);
        set_u16(&mut b[field::QP1_DROPPED], self.qp1_dropped);
        set_u16(&mut b[field::VL15_DROPPED], self.vl15_dropped);
        set_u32(&mut b[field::XMIT_DATA], self.port_xmit_data);
        set_u32(&mut b[field::RCV_DATA], self.port_rcv_data);
        set_u32(&mut b[field::XMIT_PKTS], self.port_xmit_pkts);
        set_u32(&mut b[field::RCV_PKTS], self.port_rcv_pkts);
        set_u32(&mut b[field::XMIT_WAIT], self.port_xmit_wait);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// PortCounters of port 1 after some traffic: 10 packets (72 words each)
    /// each way, one link-downed event, 3 xmit discards.
    static COUNTERS_BYTES: [u8; 44] = [
        0x00, 0x01, 0x00, 0x00, // reserved, PortSelect 1, CounterSelect 0
        0x00, 0x02, 0x00, 0x01, // SymbolErrors 2, LinkErrorRecovery 0, LinkDowned 1
        0x00, 0x00, 0x00, 0x00, // RcvErrors, RcvRemotePhysicalErrors
        0x00, 0x00, 0x00, 0x03, // RcvSwitchRelayErrors, XmitDiscards 3
        0x00, 0x00, 0x00, 0x21, // constraint errors, CounterSelect2, LLI 2 / EBO 1
        0x00, 0x00, 0x00, 0x05, // QP1Dropped 0, VL15Dropped 5
        0x00, 0x00, 0x02, 0xd0, // XmitData 720 words
        0x00, 0x00, 0x02, 0xd0, // RcvData 720 words
        0x00, 0x00, 0x00, 0x0a, // XmitPkts 10
        0x00, 0x00, 0x00, 0x0a, // RcvPkts 10
        0x00, 0x00, 0x01, 0x00, // XmitWait 256
    ];

    fn expected() -> PortCounters {
        PortCounters {
            port_select: 1,
            symbol_error_counter: 2,
            link_downed_counter: 1,
            port_xmit_discards: 3,
            local_link_integrity_errors: 2,
            excessive_buffer_overrun_errors: 1,
            vl15_dropped: 5,
            port_xmit_data: 720,
            port_rcv_data: 720,
            port_xmit_pkts: 10,
            port_rcv_pkts: 10,
            port_xmit_wait: 256,
            ..PortCounters::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(PortCounters::parse(&COUNTERS_BYTES), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 44];
        expected().emit(&mut out);
        assert_eq!(out, COUNTERS_BYTES);
        assert_eq!(expected().buffer_len(), 44);
    }

    #[test]
    fn test_data_area() {
        // The full 192-byte PerfMgt data area is fine.
        let mut area = [0u8; 192];
        area[..44].copy_from_slice(&COUNTERS_BYTES);
        assert_eq!(PortCounters::parse(&area), Ok(expected()));
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortCounters>] = &[
            ("reserved", |c| c.reserved = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            ("CounterSelect", |c| c.counter_select = u16::MAX, 2, &[0xff; 2]),
            ("SymbolErrorCounter", |c| c.symbol_error_counter = u16::MAX, 4, &[0xff; 2]),
            ("LinkErrorRecoveryCounter", |c| c.link_error_recovery_counter = 0xff, 6, &[0xff]),
            ("LinkDownedCounter", |c| c.link_downed_counter = 0xff, 7, &[0xff]),
            ("PortRcvErrors", |c| c.port_rcv_errors = u16::MAX, 8, &[0xff; 2]),
            ("PortRcvRemotePhysicalErrors", |c| c.port_rcv_remote_physical_errors = u16::MAX, 10, &[0xff; 2]),
            ("PortRcvSwitchRelayErrors", |c| c.port_rcv_switch_relay_errors = u16::MAX, 12, &[0xff; 2]),
            ("PortXmitDiscards", |c| c.port_xmit_discards = u16::MAX, 14, &[0xff; 2]),
            ("PortXmitConstraintErrors", |c| c.port_xmit_constraint_errors = 0xff, 16, &[0xff]),
            ("PortRcvConstraintErrors", |c| c.port_rcv_constraint_errors = 0xff, 17, &[0xff]),
            ("CounterSelect2", |c| c.counter_select2 = 0xff, 18, &[0xff]),
            ("LocalLinkIntegrityErrors", |c| c.local_link_integrity_errors = 0xff, 19, &[0xf0]),
            ("ExcessiveBufferOverrunErrors", |c| c.excessive_buffer_overrun_errors = 0xff, 19, &[0x0f]),
            ("QP1Dropped", |c| c.qp1_dropped = u16::MAX, 20, &[0xff; 2]),
            ("VL15Dropped", |c| c.vl15_dropped = u16::MAX, 22, &[0xff; 2]),
            ("PortXmitData", |c| c.port_xmit_data = u32::MAX, 24, &[0xff; 4]),
            ("PortRcvData", |c| c.port_rcv_data = u32::MAX, 28, &[0xff; 4]),
            ("PortXmitPkts", |c| c.port_xmit_pkts = u32::MAX, 32, &[0xff; 4]),
            ("PortRcvPkts", |c| c.port_rcv_pkts = u32::MAX, 36, &[0xff; 4]),
            ("PortXmitWait", |c| c.port_xmit_wait = u32::MAX, 40, &[0xff; 4]),
        ];
        check_offsets(
            PortCounters::LEN,
            PortCounters::parse,
            PortCounters::emit,
            cases,
        );
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PortCounters::LEN,
            PortCounters::parse,
            PortCounters::emit,
            4242,
        );
    }
}
