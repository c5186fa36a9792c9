//! PortXmitDataSL (PerfMgt attribute 0x36) and PortRcvDataSL (0x37), IBA
//! Vol 1, 16.1.4: one layout, 68 bytes at the start of the PerfMgt data
//! area (MAD offset 64).
//!
//! ```text
//!  0      reserved
//!  1      PortSelect
//!  2..4   CounterSelect
//!  4..68  DataSL0..15: 16 × 32-bit counters, one per SL (4-byte words)
//! ```
//!
//! Offsets match libibmad's `fields.c` (`XmtDataSL*`, `RcvDataSL*`) and
//! opensm's `ib_port_xmit_data_sl_t`.

use crate::bytes::{self, get_u16, get_u32, set_u16, set_u32};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const RESERVED: usize = 0;
    pub(super) const PORT_SELECT: usize = 1;
    pub(super) const COUNTER_SELECT: Field = 2..4;
    pub(super) const DATA_SL: Field = 4..68;
}

/// PortXmitDataSL or PortRcvDataSL, parsed: data transmitted or received
/// per service level, in 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortDataSl {
    /// Reserved (byte 0), kept so `emit` reproduces the input.
    pub reserved: u8,
    /// PortSelect (byte 1): the port to report.
    pub port_select: u8,
    /// CounterSelect (bytes 2–3): which SL counters a Set resets (bit *n*:
    /// SL *n*).
    pub counter_select: u16,
    /// The counter of each SL 0..15, in 4-byte words.
    pub data_sl: [u32; 16],
}

/// PortXmitDataSL (0x36): [`PortDataSl`] counting transmitted data.
pub type PortXmitDataSl = PortDataSl;

/// PortRcvDataSL (0x37): [`PortDataSl`] counting received data.
pub type PortRcvDataSl = PortDataSl;

impl PortDataSl {
    /// Size of PortXmitDataSL / PortRcvDataSL on the wire (the rest of the
    /// 192-byte data area is reserved).
    pub const LEN: usize = field::DATA_SL.end;

    /// Parses the first [`PortDataSl::LEN`] bytes of `buf` (the PerfMgt
    /// data area, see [`crate::perf::data`]).
    pub fn parse(buf: &[u8]) -> Result<PortDataSl> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(PortDataSl {
            reserved: b[field::RESERVED],
            port_select: b[field::PORT_SELECT],
            counter_select: get_u16(&b[field::COUNTER_SELECT]),
            data_sl: bytes::get_array(&b[field::DATA_SL], get_u32),
        })
    }

    /// Bytes [`PortDataSl::emit`] writes: [`PortDataSl::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PortDataSl::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortDataSl::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::RESERVED] = self.reserved;
        b[field::PORT_SELECT] = self.port_select;
        set_u16(&mut b[field::COUNTER_SELECT], self.counter_select);
        bytes::set_array(&mut b[field::DATA_SL], &self.data_sl, set_u32);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Case, Table};

    /// PortXmitDataSL of port 1: 720 words on SL 0, 18 on SL 15.
    static DATA_BYTES: [u8; 68] = {
        let mut b = [0u8; 68];
        b[1] = 1; // PortSelect
        b[6] = 0x02; // SL 0: 0x2d0
        b[7] = 0xd0;
        b[67] = 18; // SL 15
        b
    };

    fn expected() -> PortXmitDataSl {
        let mut data_sl = [0u32; 16];
        data_sl[0] = 720;
        data_sl[15] = 18;
        PortDataSl {
            port_select: 1,
            data_sl,
            ..PortDataSl::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(PortDataSl::parse(&DATA_BYTES), Ok(expected()));
        assert!(PortRcvDataSl::parse(&[0u8; 192]).is_ok());
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 192];
        expected().emit(&mut out);
        assert_eq!(out[..68], DATA_BYTES);
        assert!(out[68..].iter().all(|&b| b == 0xa5));
        assert_eq!(expected().buffer_len(), 68);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(PortDataSl::LEN, PortDataSl::parse, PortDataSl::emit, 0x36);
    }

    #[test]
    fn test_field_offsets() {
        // fields.c: DataSL n at bit 32 + 32 n.
        #[rustfmt::skip]
        let cases: &[Case<'_, PortDataSl>] = &[
            ("reserved", |c| c.reserved = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            ("CounterSelect", |c| c.counter_select = u16::MAX, 2, &[0xff; 2]),
        ];
        check_table_offsets(
            PortDataSl::LEN,
            PortDataSl::parse,
            PortDataSl::emit,
            cases,
            Table {
                count: 16,
                stride: 4,
                fields: &[("DataSL", |c, n| c.data_sl[n] = u32::MAX, 32 / 8, &[0xff; 4])],
            },
        );
    }
}
