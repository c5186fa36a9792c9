//! PortSamplesControl (PerfMgt attribute 0x10, IBA Vol 1, 16.1.3): 80 bytes
//! at the start of the PerfMgt data area (MAD offset 64).
//!
//! Offsets match libibmad's `fields.c` (`IB_PSC_*`); bit 7 is the most
//! significant bit of a byte.
//!
//! ```text
//!  0      OpCode
//!  1      PortSelect
//!  2      Tick
//!  3      reserved(7:3) CounterWidth(2:0)
//!  4..8   reserved(31:30) CounterMask0(29:27) CounterMasks1to9(26:0)
//!  8..10  reserved(15) CounterMasks10to14(14:0)
//! 10      SampleMechanisms
//! 11      reserved(7:2) SampleStatus(1:0)
//! 12..20  OptionMask
//! 20..28  VendorMask
//! 28..32  SampleStart
//! 32..36  SampleInterval
//! 36..38  Tag
//! 38..68  CounterSelect0..14 (16 bits each)
//! 68..72  reserved
//! 72..80  SamplesOnlyOptionMask
//! ```

use crate::bytes::{self, bits, get_u16, get_u32, get_u64, place, set_u16, set_u32, set_u64};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const OP_CODE: usize = 0;
    pub(super) const PORT_SELECT: usize = 1;
    pub(super) const TICK: usize = 2;
    /// reserved(7:3), CounterWidth(2:0).
    pub(super) const COUNTER_WIDTH: usize = 3;
    /// reserved(31:30), CounterMask0..9 (3 bits each, 0 first).
    pub(super) const COUNTER_MASKS_0_9: Field = 4..8;
    /// reserved(15), CounterMask10..14 (3 bits each, 10 first).
    pub(super) const COUNTER_MASKS_10_14: Field = 8..10;
    pub(super) const SAMPLE_MECHANISMS: usize = 10;
    /// reserved(7:2), SampleStatus(1:0).
    pub(super) const SAMPLE_STATUS: usize = 11;
    pub(super) const OPTION_MASK: Field = 12..20;
    pub(super) const VENDOR_MASK: Field = 20..28;
    pub(super) const SAMPLE_START: Field = 28..32;
    pub(super) const SAMPLE_INTERVAL: Field = 32..36;
    pub(super) const TAG: Field = 36..38;
    pub(super) const COUNTER_SELECT: Field = 38..68;
    pub(super) const RESERVED_68: Field = 68..72;
    pub(super) const SAMPLES_ONLY_OPTION_MASK: Field = 72..80;
}

/// CounterSelect codes naming what a sample counter counts (opensm
/// `IB_CS_*`).
pub mod samples_counter {
    /// PortXmitData.
    pub const PORT_XMIT_DATA: u16 = 0x0001;
    /// PortRcvData.
    pub const PORT_RCV_DATA: u16 = 0x0002;
    /// PortXmitPkts.
    pub const PORT_XMIT_PKTS: u16 = 0x0003;
    /// PortRcvPkts.
    pub const PORT_RCV_PKTS: u16 = 0x0004;
    /// PortXmitWait.
    pub const PORT_XMIT_WAIT: u16 = 0x0005;
}

/// PortSamplesControl, parsed: the set-up and state of the PMA's sampling
/// counters (results in PortSamplesResult, 0x11).
///
/// Sub-byte fields hold the value right-aligned; `emit` masks each to its
/// width. The `reserved_*` fields keep reserved bits so `emit` reproduces
/// the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortSamplesControl {
    /// OpCode (byte 0).
    pub op_code: u8,
    /// PortSelect (byte 1).
    pub port_select: u8,
    /// Tick (byte 2): code of the sampling tick interval.
    pub tick: u8,
    /// Reserved (byte 3, bits 7:3).
    pub reserved_3: u8,
    /// CounterWidth (byte 3, bits 2:0): code of the sample counter width.
    pub counter_width: u8,
    /// Reserved (byte 4, bits 7:6).
    pub reserved_4: u8,
    /// CounterMask0..14 (3 bits each): which counters are implemented.
    pub counter_masks: [u8; 15],
    /// Reserved (byte 8, bit 7).
    pub reserved_8: u8,
    /// SampleMechanisms (byte 10).
    pub sample_mechanisms: u8,
    /// Reserved (byte 11, bits 7:2).
    pub reserved_11: u8,
    /// SampleStatus (byte 11, bits 1:0).
    pub sample_status: u8,
    /// OptionMask: which optional CounterSelect values are supported.
    pub option_mask: u64,
    /// VendorMask.
    pub vendor_mask: u64,
    /// SampleStart: ticks before sampling starts.
    pub sample_start: u32,
    /// SampleInterval: ticks the sample lasts.
    pub sample_interval: u32,
    /// Tag: copied into PortSamplesResult.
    pub tag: u16,
    /// CounterSelect0..14: what each counter counts (see
    /// [`samples_counter`]).
    pub counter_select: [u16; 15],
    /// Reserved (bytes 68–71).
    pub reserved_68: u32,
    /// SamplesOnlyOptionMask.
    pub samples_only_option_mask: u64,
}

impl PortSamplesControl {
    /// Size of PortSamplesControl on the wire.
    pub const LEN: usize = field::SAMPLES_ONLY_OPTION_MASK.end;

    /// Parses the first [`PortSamplesControl::LEN`] bytes of `buf` (the
    /// PerfMgt data area, see [`crate::perf::data`]).
    pub fn parse(buf: &[u8]) -> Result<PortSamplesControl> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let masks_lo = get_u32(&b[field::COUNTER_MASKS_0_9]);
        let masks_hi = get_u16(&b[field::COUNTER_MASKS_10_14]);
        let mut counter_masks = [0u8; 15];
        for (i, m) in counter_masks.iter_mut().enumerate() {
            // Mask i (0..=9) sits at bit 27 - 3i of the word at byte 4,
            // mask 10 + j at bit 12 - 3j of the halfword at byte 8; each
            // value is masked to 3 bits, so the casts are lossless.
            *m = if i < 10 {
                ((masks_lo >> (27 - 3 * i)) & 0x7) as u8
            } else {
                ((masks_hi >> (12 - 3 * (i - 10))) & 0x7) as u8
            };
        }
        Ok(PortSamplesControl {
            op_code: b[field::OP_CODE],
            port_select: b[field::PORT_SELECT],
            tick: b[field::TICK],
            reserved_3: bits(b[field::COUNTER_WIDTH], 3, 5),
            counter_width: bits(b[field::COUNTER_WIDTH], 0, 3),
            reserved_4: masks_lo.to_be_bytes()[0] >> 6,
            counter_masks,
            reserved_8: masks_hi.to_be_bytes()[0] >> 7,
            sample_mechanisms: b[field::SAMPLE_MECHANISMS],
            reserved_11: bits(b[field::SAMPLE_STATUS], 2, 6),
            sample_status: bits(b[field::SAMPLE_STATUS], 0, 2),
            option_mask: get_u64(&b[field::OPTION_MASK]),
            vendor_mask: get_u64(&b[field::VENDOR_MASK]),
            sample_start: get_u32(&b[field::SAMPLE_START]),
            sample_interval: get_u32(&b[field::SAMPLE_INTERVAL]),
            tag: get_u16(&b[field::TAG]),
            counter_select: bytes::get_array(&b[field::COUNTER_SELECT], get_u16),
            reserved_68: get_u32(&b[field::RESERVED_68]),
            samples_only_option_mask: get_u64(&b[field::SAMPLES_ONLY_OPTION_MASK]),
        })
    }

    /// Bytes [`PortSamplesControl::emit`] writes:
    /// [`PortSamplesControl::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PortSamplesControl::LEN`] bytes of `buf`,
    /// masking each sub-byte field to its width.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortSamplesControl::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::OP_CODE] = self.op_code;
        b[field::PORT_SELECT] = self.port_select;
        b[field::TICK] = self.tick;
        b[field::COUNTER_WIDTH] = place(self.reserved_3, 3, 5) | place(self.counter_width, 0, 3);
        let mut masks_lo = u32::from(self.reserved_4 & 0x3) << 30;
        let mut masks_hi = u16::from(self.reserved_8 & 0x1) << 15;
        for (i, &m) in self.counter_masks.iter().enumerate() {
            if i < 10 {
                masks_lo |= u32::from(m & 0x7) << (27 - 3 * i);
            } else {
                masks_hi |= u16::from(m & 0x7) << (12 - 3 * (i - 10));
            }
        }
        set_u32(&mut b[field::COUNTER_MASKS_0_9], masks_lo);
        set_u16(&mut b[field::COUNTER_MASKS_10_14], masks_hi);
        b[field::SAMPLE_MECHANISMS] = self.sample_mechanisms;
        b[field::SAMPLE_STATUS] = place(self.reserved_11, 2, 6) | place(self.sample_status, 0, 2);
        set_u64(&mut b[field::OPTION_MASK], self.option_mask);
        set_u64(&mut b[field::VENDOR_MASK], self.vendor_mask);
        set_u32(&mut b[field::SAMPLE_START], self.sample_start);
        set_u32(&mut b[field::SAMPLE_INTERVAL], self.sample_interval);
        set_u16(&mut b[field::TAG], self.tag);
        bytes::set_array(&mut b[field::COUNTER_SELECT], &self.counter_select, set_u16);
        set_u32(&mut b[field::RESERVED_68], self.reserved_68);
        set_u64(
            &mut b[field::SAMPLES_ONLY_OPTION_MASK],
            self.samples_only_option_mask,
        );
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// A PMA answering Get(PortSamplesControl) for port 1: tick 0,
    /// counter width code 2, counters 0–3 implemented (mask 1 each),
    /// SampleStatus 0, counter 0 selected to PortXmitData, tag 0x1234.
    static CONTROL_BYTES: [u8; 80] = {
        let mut b = [0u8; 80];
        b[1] = 1; // PortSelect
        b[3] = 0x02; // CounterWidth 2
                     // Masks 0..3 = 1: bits 27, 24, 21, 18 of the word at byte 4.
        b[4] = 0x09; // 0b0000_1001: mask0 bit 27, mask1 bit 24
        b[5] = 0x24; // 0b0010_0100: mask2 bit 21, mask3 bit 18
        b[11] = 0x00; // SampleStatus 0
        b[36] = 0x12; // Tag
        b[37] = 0x34;
        b[39] = 0x01; // CounterSelect0 = PortXmitData
        b
    };

    fn expected() -> PortSamplesControl {
        let mut counter_masks = [0u8; 15];
        counter_masks[..4].fill(1);
        let mut counter_select = [0u16; 15];
        counter_select[0] = samples_counter::PORT_XMIT_DATA;
        PortSamplesControl {
            port_select: 1,
            counter_width: 2,
            counter_masks,
            tag: 0x1234,
            counter_select,
            ..PortSamplesControl::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(PortSamplesControl::parse(&CONTROL_BYTES), Ok(expected()));
        assert!(PortSamplesControl::parse(&[0u8; 192]).is_ok());
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 192];
        expected().emit(&mut out);
        assert_eq!(out[..80], CONTROL_BYTES);
        assert!(out[80..].iter().all(|&b| b == 0xa5));
        assert_eq!(expected().buffer_len(), 80);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PortSamplesControl::LEN,
            PortSamplesControl::parse,
            PortSamplesControl::emit,
            0x10,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PortSamplesControl>] = &[
            ("OpCode", |c| c.op_code = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            ("Tick", |c| c.tick = 0xff, 2, &[0xff]),
            ("reserved_3", |c| c.reserved_3 = 0xff, 3, &[0xf8]),
            ("CounterWidth", |c| c.counter_width = 0xff, 3, &[0x07]),
            ("reserved_4", |c| c.reserved_4 = 0xff, 4, &[0xc0]),
            ("CounterMask0", |c| c.counter_masks[0] = 0xff, 4, &[0x38]),
            ("CounterMask1", |c| c.counter_masks[1] = 0xff, 4, &[0x07]),
            ("CounterMask2", |c| c.counter_masks[2] = 0xff, 5, &[0xe0]),
            ("CounterMask3", |c| c.counter_masks[3] = 0xff, 5, &[0x1c]),
            ("CounterMask4", |c| c.counter_masks[4] = 0xff, 5, &[0x03, 0x80]),
            ("CounterMask5", |c| c.counter_masks[5] = 0xff, 6, &[0x70]),
            ("CounterMask6", |c| c.counter_masks[6] = 0xff, 6, &[0x0e]),
            ("CounterMask7", |c| c.counter_masks[7] = 0xff, 6, &[0x01, 0xc0]),
            ("CounterMask8", |c| c.counter_masks[8] = 0xff, 7, &[0x38]),
            ("CounterMask9", |c| c.counter_masks[9] = 0xff, 7, &[0x07]),
            ("reserved_8", |c| c.reserved_8 = 0xff, 8, &[0x80]),
            ("CounterMask10", |c| c.counter_masks[10] = 0xff, 8, &[0x70]),
            ("CounterMask11", |c| c.counter_masks[11] = 0xff, 8, &[0x0e]),
            ("CounterMask12", |c| c.counter_masks[12] = 0xff, 8, &[0x01, 0xc0]),
            ("CounterMask13", |c| c.counter_masks[13] = 0xff, 9, &[0x38]),
            ("CounterMask14", |c| c.counter_masks[14] = 0xff, 9, &[0x07]),
            ("SampleMechanisms", |c| c.sample_mechanisms = 0xff, 10, &[0xff]),
            ("reserved_11", |c| c.reserved_11 = 0xff, 11, &[0xfc]),
            ("SampleStatus", |c| c.sample_status = 0xff, 11, &[0x03]),
            ("OptionMask", |c| c.option_mask = u64::MAX, 12, &[0xff; 8]),
            ("VendorMask", |c| c.vendor_mask = u64::MAX, 20, &[0xff; 8]),
            ("SampleStart", |c| c.sample_start = u32::MAX, 28, &[0xff; 4]),
            ("SampleInterval", |c| c.sample_interval = u32::MAX, 32, &[0xff; 4]),
            ("Tag", |c| c.tag = u16::MAX, 36, &[0xff; 2]),
            ("CounterSelect0", |c| c.counter_select[0] = u16::MAX, 38, &[0xff; 2]),
            ("CounterSelect1..13", |c| c.counter_select[1..14].fill(u16::MAX), 40, &[0xff; 26]),
            ("CounterSelect14", |c| c.counter_select[14] = u16::MAX, 66, &[0xff; 2]),
            ("reserved_68", |c| c.reserved_68 = u32::MAX, 68, &[0xff; 4]),
            ("SamplesOnlyOptionMask", |c| c.samples_only_option_mask = u64::MAX, 72, &[0xff; 8]),
        ];
        check_offsets(
            PortSamplesControl::LEN,
            PortSamplesControl::parse,
            PortSamplesControl::emit,
            cases,
        );
    }

    #[test]
    fn test_fields_c_bit_offsets() {
        // fields.c: CounterMask0 at BITSOFFS(34, 3), CounterMasks1to9 at
        // BITSOFFS(37, 27), CounterMasks10to14 at BITSOFFS(65, 15): mask 9
        // ends at bit 63, mask 14 at bit 79.
        let mut c = PortSamplesControl::default();
        c.counter_masks[9] = 5;
        c.counter_masks[14] = 3;
        let mut b = [0u8; 80];
        c.emit(&mut b);
        assert_eq!(b[7], 0x05);
        assert_eq!(b[9], 0x03);
        assert_eq!(PortSamplesControl::parse(&b), Ok(c));
    }
}
