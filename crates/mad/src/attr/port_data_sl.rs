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
        let mut data_sl = [0u32; 16];
        for (d, chunk) in data_sl.iter_mut().zip(b[field::DATA_SL].chunks_exact(4)) {
            *d = get_u32(chunk);
        }
        Ok(PortDataSl {
            reserved: b[field::RESERVED],
            port_select: b[field::PORT_SELECT],
            counter_select: get_u16(&b[field::COUNTER_SELECT]),
            data_sl,
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
        for (d, chunk) in self
            .data_sl
            .iter()
            .zip(b[field::DATA_SL].chunks_exact_mut(4))
        {
            set_u32(chunk, *d);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::sa::test_support::{check_offsets, check_round_trip, Case};

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
        let mut cases: Vec<Case<'_, PortDataSl>> = vec![
            ("reserved", |c| c.reserved = 0xff, 0, &[0xff]),
            ("PortSelect", |c| c.port_select = 0xff, 1, &[0xff]),
            (
                "CounterSelect",
                |c| c.counter_select = u16::MAX,
                2,
                &[0xff; 2],
            ),
        ];
        // fields.c: DataSL n at bit 32 + 32 n.
        #[rustfmt::skip]
        let sl: [fn(&mut PortDataSl); 16] = [
            |c| c.data_sl[0] = u32::MAX, |c| c.data_sl[1] = u32::MAX,
            |c| c.data_sl[2] = u32::MAX, |c| c.data_sl[3] = u32::MAX,
            |c| c.data_sl[4] = u32::MAX, |c| c.data_sl[5] = u32::MAX,
            |c| c.data_sl[6] = u32::MAX, |c| c.data_sl[7] = u32::MAX,
            |c| c.data_sl[8] = u32::MAX, |c| c.data_sl[9] = u32::MAX,
            |c| c.data_sl[10] = u32::MAX, |c| c.data_sl[11] = u32::MAX,
            |c| c.data_sl[12] = u32::MAX, |c| c.data_sl[13] = u32::MAX,
            |c| c.data_sl[14] = u32::MAX, |c| c.data_sl[15] = u32::MAX,
        ];
        for (n, set) in sl.into_iter().enumerate() {
            cases.push(("DataSL", set, (32 + 32 * n) / 8, &[0xff; 4]));
        }
        check_offsets(PortDataSl::LEN, PortDataSl::parse, PortDataSl::emit, &cases);
    }
}
