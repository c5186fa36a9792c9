//! SLtoVLMappingTable (SMP attribute 0x17, IBA Vol 1, 14.2.5.8): 8 bytes
//! holding the VL for each of the 16 service levels, 4 bits each.
//!
//! ```text
//!  byte 0: SL0(7:4) SL1(3:0)   byte 1: SL2(7:4) SL3(3:0)   ...
//!  byte 7: SL14(7:4) SL15(3:0)
//! ```
//!
//! On switches the attribute modifier selects the input port (bits 15:8)
//! and output port (bits 7:0); see [`sl2vl_attr_mod`]. CAs and routers
//! ignore it.

use crate::bytes::{self, bits, place};
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// Two 4-bit entries per byte, even SL in the high nibble.
    pub(super) const ENTRIES: Field = 0..8;
}

/// The SLtoVLMappingTable attribute modifier for the table used from
/// `in_port` to `out_port` on a switch (`in_port << 8 | out_port`).
pub const fn sl2vl_attr_mod(in_port: u8, out_port: u8) -> u32 {
    (in_port as u32) << 8 | out_port as u32
}

/// SLtoVLMappingTable, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlToVlTable {
    /// The VL for each SL (index = SL), 4 bits each; `emit` masks them.
    /// VL 15 means "drop".
    pub vls: [u8; 16],
}

impl SlToVlTable {
    /// Size of SLtoVLMappingTable on the wire (the rest of the 64-byte SMP
    /// data area is reserved).
    pub const LEN: usize = field::ENTRIES.end;

    /// Parses the first [`SlToVlTable::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SlToVlTable> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let mut vls = [0u8; 16];
        for (pair, &byte) in vls.chunks_exact_mut(2).zip(&b[field::ENTRIES]) {
            pair[0] = bits(byte, 4, 4);
            pair[1] = bits(byte, 0, 4);
        }
        Ok(SlToVlTable { vls })
    }

    /// Bytes [`SlToVlTable::emit`] writes: [`SlToVlTable::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`SlToVlTable::LEN`] bytes of `buf`; each VL is
    /// masked to 4 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`SlToVlTable::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        for (byte, pair) in b[field::ENTRIES].iter_mut().zip(self.vls.chunks_exact(2)) {
            *byte = place(pair[0], 4, 4) | place(pair[1], 0, 4);
        }
    }

    /// The mapping SL n → VL `n % num_vls`, spreading the 16 SLs over the
    /// first `num_vls` data VLs (`num_vls` is clamped to 1..=15).
    pub fn modulo(num_vls: u8) -> SlToVlTable {
        let n = num_vls.clamp(1, 15);
        let mut vls = [0u8; 16];
        for (sl, vl) in (0u8..).zip(vls.iter_mut()) {
            *vl = sl % n;
        }
        SlToVlTable { vls }
    }

    /// The VL service level `sl` maps to (`sl` is taken modulo 16).
    pub fn vl(&self, sl: u8) -> u8 {
        self.vls[usize::from(sl & 0x0f)] & 0x0f
    }

    /// Maps service level `sl` (modulo 16) to `vl` (masked to 4 bits).
    pub fn set_vl(&mut self, sl: u8, vl: u8) {
        self.vls[usize::from(sl & 0x0f)] = vl & 0x0f;
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// SL n → VL n % 8, as OpenSM programs a VLCap 4 (VL0–7) port.
    static TABLE_BYTES: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67];

    #[test]
    fn test_deconstruct() {
        let t = SlToVlTable::parse(&TABLE_BYTES).unwrap();
        for sl in 0..16u8 {
            assert_eq!(t.vl(sl), sl % 8, "SL {sl}");
        }
        assert_eq!(t.vl(0x13), 3);
    }

    #[test]
    fn test_construct() {
        let t = SlToVlTable::modulo(8);
        assert_eq!(t.buffer_len(), 8);
        let mut out = [0xa5u8; 10];
        t.emit(&mut out);
        assert_eq!(out[..8], TABLE_BYTES);
        assert_eq!(out[8..], [0xa5, 0xa5]);

        let mut t = SlToVlTable::default();
        t.set_vl(1, 0xf7);
        t.set_vl(14, 15);
        let mut out = [0u8; 8];
        t.emit(&mut out);
        assert_eq!(out, [0x07, 0, 0, 0, 0, 0, 0, 0xf0]);
        assert_eq!(SlToVlTable::modulo(0), SlToVlTable::default());
        assert_eq!(SlToVlTable::modulo(1), SlToVlTable::default());
    }

    #[test]
    #[should_panic(expected = "need 8 bytes, got 7")]
    fn emit_short_buffer_panics() {
        SlToVlTable::default().emit(&mut [0u8; 7]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            SlToVlTable::LEN,
            SlToVlTable::parse,
            SlToVlTable::emit,
            0x5127_0000_0000_0017,
        );
    }

    #[test]
    fn test_field_offsets() {
        // Two SLs per byte: SL 2i in the high nibble, SL 2i + 1 in the low.
        check_table_offsets(
            SlToVlTable::LEN,
            SlToVlTable::parse,
            SlToVlTable::emit,
            &[],
            Table {
                count: 8,
                stride: 1,
                fields: &[
                    ("even SL", |t, i| t.vls[2 * i] = 0xff, 0, &[0xf0]),
                    ("odd SL", |t, i| t.vls[2 * i + 1] = 0xff, 0, &[0x0f]),
                ],
            },
        );
        assert_eq!(sl2vl_attr_mod(1, 2), 0x0102);
        assert_eq!(sl2vl_attr_mod(0xff, 0), 0xff00);
    }
}
