//! The PerfMgt attributes that are a row of counters after the usual selects (IBA Vol 1,
//! 16.1.4): PortRcvErrorDetails (0x15), PortXmitDiscardDetails (0x16), PortOpRcvCounters
//! (0x17), PortFlowCtlCounters (0x18), PortVLOpPackets (0x19), PortVLOpData (0x1a),
//! PortVLXmitFlowCtlUpdateErrors (0x1b) and PortVLXmitWaitCounters (0x1c); and
//! PortSamplesResult (0x11), the results of PortSamplesControl. All at the start of the
//! PerfMgt data area (MAD offset 64).
//!
//! ```text
//!  0      OpCode (PortOpRcvCounters, PortVLOpPackets, PortVLOpData) or reserved
//!  1      PortSelect
//!  2..4   CounterSelect: bit n selects counter n (for a Set: reset it)
//!  4..    the counters, big-endian, in order (16 or 32 bits each;
//!         PortVLXmitFlowCtlUpdateErrors: 2 bits each, VL0 in the top bits of byte 4)
//! ```
//!
//! PortSamplesResult:
//!
//! ```text
//!  0..2   Tag
//!  2..4   reserved(15:2) SampleStatus(1:0)
//!  4..64  Counter0..14 (32 bits each)
//! ```
//!
//! Offsets match libibmad's `fields.c` (`IB_PC_RCV_LOCAL_PHY_ERR_F` ...,
//! `IB_PC_PORT_VL_XMIT_WAIT0_F` ..., `IB_PSR_*`) and ibsim's `sim_mad.c`, which resets
//! counter n for CounterSelect bit n in every one of these attributes.

use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::{Field, Rest};

    /// OpCode or reserved.
    pub(super) const BYTE0: usize = 0;
    pub(super) const PORT_SELECT: usize = 1;
    pub(super) const COUNTER_SELECT: Field = 2..4;
    /// The counters, to the end of the attribute.
    pub(super) const COUNTERS: Rest = 4..;

    /// PortSamplesResult's Tag.
    pub(super) const TAG: Field = 0..2;
    /// PortSamplesResult's reserved(15:2), SampleStatus(1:0).
    pub(super) const STATUS: Field = 2..4;
    /// PortSamplesResult's Counter0..14.
    pub(super) const SAMPLE_COUNTERS: Field = 4..64;
}

/// Declares one of the counter-row attributes: byte 0 (named `$byte0`), PortSelect,
/// CounterSelect, then `$n` counters of `$ty` read with `$get` and written with `$set`.
macro_rules! counter_set {
    (
        $(#[$doc:meta])*
        $name:ident, $(#[$b0doc:meta])* $byte0:ident, [$ty:ty; $n:literal], $get:path, $set:path,
        $( $(#[$idoc:meta])* $cname:ident = $cidx:literal ),* $(,)?
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name {
            $(#[$b0doc])*
            pub $byte0: u8,
            /// PortSelect (byte 1): the port counted (0xFF: all ports, where the PMA has
            /// AllPortSelect).
            pub port_select: u8,
            /// CounterSelect (bytes 2–3): bit *n* selects counter *n* (a Set resets the
            /// selected counters).
            pub counter_select: u16,
            /// The counters, in wire order (index *n* is CounterSelect bit *n*).
            pub counters: [$ty; $n],
        }

        impl $name {
            $( $(#[$idoc])* pub const $cname: usize = $cidx; )*

            /// Size on the wire (the rest of the 192-byte data area is reserved).
            pub const LEN: usize = field::COUNTERS.start + $n * core::mem::size_of::<$ty>();

            /// Parses the first `LEN` bytes of `buf` (the PerfMgt data area, see
            /// [`crate::perf::data`]).
            pub fn parse(buf: &[u8]) -> Result<$name> {
                let b = bytes::array::<{ Self::LEN }>(buf)?;
                Ok($name {
                    $byte0: b[field::BYTE0],
                    port_select: b[field::PORT_SELECT],
                    counter_select: get_u16(&b[field::COUNTER_SELECT]),
                    counters: bytes::get_array(&b[field::COUNTERS], $get),
                })
            }

            /// Bytes `emit` writes: `LEN`.
            pub const fn buffer_len(&self) -> usize {
                Self::LEN
            }

            /// Writes the first `LEN` bytes of `buf`.
            ///
            /// # Panics
            ///
            /// If `buf` is shorter than `LEN`.
            pub fn emit(&self, buf: &mut [u8]) {
                let b = bytes::array_mut::<{ Self::LEN }>(buf);
                b[field::BYTE0] = self.$byte0;
                b[field::PORT_SELECT] = self.port_select;
                set_u16(&mut b[field::COUNTER_SELECT], self.counter_select);
                bytes::set_array(&mut b[field::COUNTERS], &self.counters, $set);
            }
        }
    };
}

counter_set!(
    /// PortRcvErrorDetails (0x15): why received packets were counted in PortRcvErrors.
    PortRcvErrorDetails,
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    reserved,
    [u16; 6], get_u16, set_u16,
    /// Index of PortLocalPhysicalErrors.
    LOCAL_PHYSICAL_ERRORS = 0,
    /// Index of PortMalformedPacketErrors.
    MALFORMED_PACKET_ERRORS = 1,
    /// Index of PortBufferOverrunErrors.
    BUFFER_OVERRUN_ERRORS = 2,
    /// Index of PortDLIDMappingErrors.
    DLID_MAPPING_ERRORS = 3,
    /// Index of PortVLMappingErrors.
    VL_MAPPING_ERRORS = 4,
    /// Index of PortLoopingErrors.
    LOOPING_ERRORS = 5,
);

counter_set!(
    /// PortXmitDiscardDetails (0x16): why packets were counted in PortXmitDiscards.
    PortXmitDiscardDetails,
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    reserved,
    [u16; 4], get_u16, set_u16,
    /// Index of PortInactiveDiscards.
    INACTIVE_DISCARDS = 0,
    /// Index of PortNeighborMTUDiscards.
    NEIGHBOR_MTU_DISCARDS = 1,
    /// Index of PortSwLifetimeLimitDiscards.
    SW_LIFETIME_LIMIT_DISCARDS = 2,
    /// Index of PortSwHOQLifetimeLimitDiscards.
    SW_HOQ_LIFETIME_LIMIT_DISCARDS = 3,
);

counter_set!(
    /// PortOpRcvCounters (0x17): packets and data received with the OpCode of byte 0.
    PortOpRcvCounters,
    /// OpCode (byte 0): the packet opcode counted.
    op_code,
    [u32; 2], get_u32, set_u32,
    /// Index of PortOpRcvPkts.
    PKTS = 0,
    /// Index of PortOpRcvData.
    DATA = 1,
);

counter_set!(
    /// PortFlowCtlCounters (0x18): flow-control packets sent and received.
    PortFlowCtlCounters,
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    reserved,
    [u32; 2], get_u32, set_u32,
    /// Index of PortXmitFlowPkts.
    XMIT_FLOW_PKTS = 0,
    /// Index of PortRcvFlowPkts.
    RCV_FLOW_PKTS = 1,
);

counter_set!(
    /// PortVLOpPackets (0x19): packets received per VL (0..15) with the OpCode of byte 0.
    PortVlOpPackets,
    /// OpCode (byte 0): the packet opcode counted.
    op_code,
    [u16; 16], get_u16, set_u16,
);

counter_set!(
    /// PortVLOpData (0x1a): data (4-byte words) received per VL (0..15) with the OpCode of
    /// byte 0.
    PortVlOpData,
    /// OpCode (byte 0): the packet opcode counted.
    op_code,
    [u32; 16], get_u32, set_u32,
);

counter_set!(
    /// PortVLXmitWaitCounters (0x1c): ticks each VL (0..15) had data to send but could not.
    PortVlXmitWaitCounters,
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    reserved,
    [u16; 16], get_u16, set_u16,
);

/// PortVLXmitFlowCtlUpdateErrors (0x1b): flow-control update errors per VL (0..15), 2-bit
/// counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortVlXmitFlowCtlUpdateErrors {
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    pub reserved: u8,
    /// PortSelect (byte 1): the port counted (0xFF: all ports, where the PMA has
    /// AllPortSelect).
    pub port_select: u8,
    /// CounterSelect (bytes 2–3): bit *n* selects VL *n*'s counter (a Set resets it).
    pub counter_select: u16,
    /// The 2-bit counter of each VL (right-aligned; `emit` masks each to 2 bits).
    pub counters: [u8; 16],
}

impl PortVlXmitFlowCtlUpdateErrors {
    /// Size on the wire: the selects and 16 × 2 bits.
    pub const LEN: usize = field::COUNTERS.start + 4;

    /// Parses the first [`Self::LEN`] bytes of `buf` (the PerfMgt data area).
    pub fn parse(buf: &[u8]) -> Result<PortVlXmitFlowCtlUpdateErrors> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let word = get_u32(&b[field::COUNTERS]);
        let mut counters = [0u8; 16];
        for (vl, c) in counters.iter_mut().enumerate() {
            // VL n at bits 31 - 2n .. 30 - 2n of the word; masked to 2 bits.
            *c = ((word >> (30 - 2 * vl)) & 0x3) as u8;
        }
        Ok(PortVlXmitFlowCtlUpdateErrors {
            reserved: b[field::BYTE0],
            port_select: b[field::PORT_SELECT],
            counter_select: get_u16(&b[field::COUNTER_SELECT]),
            counters,
        })
    }

    /// Bytes [`Self::emit`] writes: [`Self::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`Self::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Self::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::BYTE0] = self.reserved;
        b[field::PORT_SELECT] = self.port_select;
        set_u16(&mut b[field::COUNTER_SELECT], self.counter_select);
        let word = self
            .counters
            .iter()
            .enumerate()
            .fold(0u32, |w, (vl, &c)| w | u32::from(c & 0x3) << (30 - 2 * vl));
        set_u32(&mut b[field::COUNTERS], word);
    }
}

/// PortSamplesResult (0x11): the sample counters PortSamplesControl set up, with the
/// control's Tag and the sampling status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortSamplesResult {
    /// Tag (bytes 0–1): PortSamplesControl's Tag when the sample was set up.
    pub tag: u16,
    /// Reserved (bytes 2–3, bits 15:2), kept so `emit` reproduces the input.
    pub reserved: u16,
    /// SampleStatus (byte 3, bits 1:0), as in PortSamplesControl.
    pub sample_status: u8,
    /// Counter0..14: what each CounterSelect of PortSamplesControl counted.
    pub counters: [u32; 15],
}

impl PortSamplesResult {
    /// Size on the wire.
    pub const LEN: usize = field::SAMPLE_COUNTERS.end;

    /// Parses the first [`Self::LEN`] bytes of `buf` (the PerfMgt data area).
    pub fn parse(buf: &[u8]) -> Result<PortSamplesResult> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let status = get_u16(&b[field::STATUS]);
        Ok(PortSamplesResult {
            tag: get_u16(&b[field::TAG]),
            reserved: status >> 2,
            sample_status: (status & 0x3) as u8,
            counters: bytes::get_array(&b[field::SAMPLE_COUNTERS], get_u32),
        })
    }

    /// Bytes [`Self::emit`] writes: [`Self::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`Self::LEN`] bytes of `buf` (the reserved bits masked to 14, the
    /// status to 2).
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Self::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::TAG], self.tag);
        set_u16(
            &mut b[field::STATUS],
            (self.reserved & 0x3fff) << 2 | u16::from(self.sample_status & 0x3),
        );
        bytes::set_array(&mut b[field::SAMPLE_COUNTERS], &self.counters, set_u32);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Case, Table};

    #[test]
    fn test_lengths_match_libibmad() {
        // fields.c: the last counter of each ends at these bits (from the data area).
        assert_eq!(PortRcvErrorDetails::LEN, (112 + 16) / 8);
        assert_eq!(PortXmitDiscardDetails::LEN, (80 + 16) / 8);
        assert_eq!(PortOpRcvCounters::LEN, (64 + 32) / 8);
        assert_eq!(PortFlowCtlCounters::LEN, (64 + 32) / 8);
        assert_eq!(PortVlOpPackets::LEN, (272 + 16) / 8);
        assert_eq!(PortVlOpData::LEN, (512 + 32) / 8);
        assert_eq!(PortVlXmitFlowCtlUpdateErrors::LEN, (62 + 2) / 8);
        assert_eq!(PortVlXmitWaitCounters::LEN, (272 + 16) / 8);
        assert_eq!(PortSamplesResult::LEN, 64);
    }

    #[test]
    fn test_deconstruct_and_construct() {
        // PortRcvErrorDetails of port 3, CounterSelect 0x0021, LoopingErrors 0x0102.
        let mut raw = [0u8; 16];
        raw[1] = 3;
        raw[3] = 0x21;
        raw[14] = 1;
        raw[15] = 2;
        let v = PortRcvErrorDetails::parse(&raw).unwrap();
        assert_eq!(v.port_select, 3);
        assert_eq!(v.counter_select, 0x21);
        assert_eq!(v.counters[PortRcvErrorDetails::LOOPING_ERRORS], 0x0102);
        let mut out = [0xa5u8; 20];
        v.emit(&mut out);
        assert_eq!(out[..16], raw);
        assert_eq!(out[16..], [0xa5; 4]);
        assert!(PortRcvErrorDetails::parse(&raw[..15]).is_err());

        // PortVLXmitFlowCtlUpdateErrors: VL0 = 3 (top bits of byte 4), VL15 = 1.
        let mut raw = [0u8; 8];
        raw[4] = 0xc0;
        raw[7] = 0x01;
        let v = PortVlXmitFlowCtlUpdateErrors::parse(&raw).unwrap();
        assert_eq!((v.counters[0], v.counters[15]), (3, 1));
        assert!(v.counters[1..15].iter().all(|&c| c == 0));
        let mut out = [0u8; 8];
        v.emit(&mut out);
        assert_eq!(out, raw);

        // PortSamplesResult: Tag 0xbeef, SampleStatus 2, Counter14 7.
        let mut raw = [0u8; 64];
        raw[0] = 0xbe;
        raw[1] = 0xef;
        raw[3] = 2;
        raw[63] = 7;
        let v = PortSamplesResult::parse(&raw).unwrap();
        assert_eq!((v.tag, v.sample_status, v.counters[14]), (0xbeef, 2, 7));
        let mut out = [0u8; 64];
        v.emit(&mut out);
        assert_eq!(out, raw);
    }

    #[test]
    fn test_round_trips() {
        check_round_trip(
            PortRcvErrorDetails::LEN,
            PortRcvErrorDetails::parse,
            PortRcvErrorDetails::emit,
            0x15,
        );
        check_round_trip(
            PortXmitDiscardDetails::LEN,
            PortXmitDiscardDetails::parse,
            PortXmitDiscardDetails::emit,
            0x16,
        );
        check_round_trip(
            PortOpRcvCounters::LEN,
            PortOpRcvCounters::parse,
            PortOpRcvCounters::emit,
            0x17,
        );
        check_round_trip(
            PortFlowCtlCounters::LEN,
            PortFlowCtlCounters::parse,
            PortFlowCtlCounters::emit,
            0x18,
        );
        check_round_trip(
            PortVlOpPackets::LEN,
            PortVlOpPackets::parse,
            PortVlOpPackets::emit,
            0x19,
        );
        check_round_trip(
            PortVlOpData::LEN,
            PortVlOpData::parse,
            PortVlOpData::emit,
            0x1a,
        );
        check_round_trip(
            PortVlXmitFlowCtlUpdateErrors::LEN,
            PortVlXmitFlowCtlUpdateErrors::parse,
            PortVlXmitFlowCtlUpdateErrors::emit,
            0x1b,
        );
        check_round_trip(
            PortVlXmitWaitCounters::LEN,
            PortVlXmitWaitCounters::parse,
            PortVlXmitWaitCounters::emit,
            0x1c,
        );
        check_round_trip(
            PortSamplesResult::LEN,
            PortSamplesResult::parse,
            PortSamplesResult::emit,
            0x11,
        );
    }

    /// The selects' offsets, then every counter's, for one counter-row attribute.
    macro_rules! offsets {
        ($t:ty, $byte0:ident, $stride:literal, $n:literal) => {{
            #[rustfmt::skip]
            let cases: &[Case<'_, $t>] = &[
                ("byte 0", |c| c.$byte0 = 0xff, 0, &[0xff]),
                ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
                ("CounterSelect", |c| c.counter_select = u16::MAX, 2, &[0xff; 2]),
                                                                                            ];
            check_table_offsets(
                <$t>::LEN,
                <$t>::parse,
                <$t>::emit,
                cases,
                Table {
                    count: $n,
                    stride: $stride,
                    fields: &[("counter", |c, n| c.counters[n] = !0, 4, &[0xff; $stride])],
                },
            );
        }};
    }

    #[test]
    fn test_field_offsets() {
        offsets!(PortRcvErrorDetails, reserved, 2, 6);
        offsets!(PortXmitDiscardDetails, reserved, 2, 4);
        offsets!(PortOpRcvCounters, op_code, 4, 2);
        offsets!(PortFlowCtlCounters, reserved, 4, 2);
        offsets!(PortVlOpPackets, op_code, 2, 16);
        offsets!(PortVlOpData, op_code, 4, 16);
        offsets!(PortVlXmitWaitCounters, reserved, 2, 16);
    }

    #[test]
    fn test_flow_ctl_update_errors_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortVlXmitFlowCtlUpdateErrors>] = &[
            ("reserved", |c| c.reserved = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            ("CounterSelect", |c| c.counter_select = u16::MAX, 2, &[0xff; 2]),
            ("VL0", |c| c.counters[0] = 0xff, 4, &[0xc0]),
            ("VL1", |c| c.counters[1] = 0xff, 4, &[0x30]),
            ("VL2", |c| c.counters[2] = 0xff, 4, &[0x0c]),
            ("VL3", |c| c.counters[3] = 0xff, 4, &[0x03]),
            ("VL4", |c| c.counters[4] = 0xff, 5, &[0xc0]),
            ("VL5", |c| c.counters[5] = 0xff, 5, &[0x30]),
            ("VL6", |c| c.counters[6] = 0xff, 5, &[0x0c]),
            ("VL7", |c| c.counters[7] = 0xff, 5, &[0x03]),
            ("VL8", |c| c.counters[8] = 0xff, 6, &[0xc0]),
            ("VL9", |c| c.counters[9] = 0xff, 6, &[0x30]),
            ("VL10", |c| c.counters[10] = 0xff, 6, &[0x0c]),
            ("VL11", |c| c.counters[11] = 0xff, 6, &[0x03]),
            ("VL12", |c| c.counters[12] = 0xff, 7, &[0xc0]),
            ("VL13", |c| c.counters[13] = 0xff, 7, &[0x30]),
            ("VL14", |c| c.counters[14] = 0xff, 7, &[0x0c]),
            ("VL15", |c| c.counters[15] = 0xff, 7, &[0x03]),
        ];
        crate::test_util::check_offsets(
            PortVlXmitFlowCtlUpdateErrors::LEN,
            PortVlXmitFlowCtlUpdateErrors::parse,
            PortVlXmitFlowCtlUpdateErrors::emit,
            cases,
        );
    }

    #[test]
    fn test_samples_result_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortSamplesResult>] = &[
            ("Tag", |c| c.tag = u16::MAX, 0, &[0xff; 2]),
            ("reserved", |c| c.reserved = u16::MAX, 2, &[0xff, 0xfc]),
            ("SampleStatus", |c| c.sample_status = 0xff, 3, &[0x03]),
        ];
        check_table_offsets(
            PortSamplesResult::LEN,
            PortSamplesResult::parse,
            PortSamplesResult::emit,
            cases,
            Table {
                count: 15,
                stride: 4,
                fields: &[("Counter", |c, n| c.counters[n] = u32::MAX, 4, &[0xff; 4])],
            },
        );
    }
}
