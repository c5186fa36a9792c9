//! Codes shared by the SA records and the attributes: GIDs, MTU and rate
//! codes, and the 2-bit selectors of PathRecord and MCMemberRecord (IBA
//! Vol 1, 14.2.5 and 15.2.5).
//!
//! The enums keep codes they have no name for (`Unknown(_)`), so a record
//! with a code from a newer spec survives a parse/emit round trip.

use core::fmt;
use std::net::Ipv6Addr;

use crate::bytes;
use crate::Result;

/// A 128-bit InfiniBand GID (subnet prefix + interface ID), in wire order.
///
/// `Display` prints it in IPv6 text form, as infiniband-diags does with
/// `inet_ntop(AF_INET6, …)` (e.g. `fe80::2:c903:0:1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// Size of a GID on the wire.
    pub const LEN: usize = 16;

    /// A GID from its subnet prefix (upper 64 bits) and interface ID / port
    /// GUID (lower 64 bits).
    pub const fn new(prefix: u64, guid: u64) -> Gid {
        let p = prefix.to_be_bytes();
        let g = guid.to_be_bytes();
        let mut raw = [0u8; 16];
        let mut i = 0;
        while i < 8 {
            raw[i] = p[i];
            raw[i + 8] = g[i];
            i += 1;
        }
        Gid(raw)
    }

    /// The subnet prefix (bytes 0–7).
    pub fn prefix(&self) -> u64 {
        bytes::get_u64(&self.0[..8])
    }

    /// The interface ID (bytes 8–15): the port GUID for unicast GIDs.
    pub fn guid(&self) -> u64 {
        bytes::get_u64(&self.0[8..])
    }

    /// Whether this is a multicast GID (first byte 0xff).
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff
    }

    /// The raw 16 bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses the first [`Gid::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Gid> {
        Ok(Gid(*bytes::array::<16>(buf)?))
    }

    /// Bytes [`Gid::emit`] writes: [`Gid::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the 16 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Gid::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        *bytes::array_mut::<16>(buf) = self.0;
    }
}

impl From<[u8; 16]> for Gid {
    fn from(raw: [u8; 16]) -> Self {
        Gid(raw)
    }
}

impl From<Gid> for [u8; 16] {
    fn from(gid: Gid) -> Self {
        gid.0
    }
}

impl From<Ipv6Addr> for Gid {
    fn from(addr: Ipv6Addr) -> Self {
        Gid(addr.octets())
    }
}

impl From<Gid> for Ipv6Addr {
    fn from(gid: Gid) -> Self {
        Ipv6Addr::from(gid.0)
    }
}

impl fmt::Display for Gid {
    /// IPv6 text form (`fe80::2:c903:0:1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv6Addr::from(self.0), f)
    }
}

enum_with_unknown! {
    /// An IBA MTU code (PathRecord/MCMemberRecord `MTU`, PortInfo
    /// `NeighborMTU`/`MTUCap`): 1 → 256 bytes … 5 → 4096.
    pub enum Mtu(u8) {
        /// 256 bytes.
        Mtu256 = 1,
        /// 512 bytes.
        Mtu512 = 2,
        /// 1024 bytes.
        Mtu1024 = 3,
        /// 2048 bytes.
        Mtu2048 = 4,
        /// 4096 bytes.
        Mtu4096 = 5,
    }
}

impl Mtu {
    /// The MTU in bytes, or `None` for an unknown code.
    pub fn bytes(self) -> Option<u16> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }

    /// The code for an MTU of exactly `bytes` (256, 512, 1024, 2048, 4096).
    pub fn from_bytes(bytes: u16) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }
}

impl Default for Mtu {
    fn default() -> Self {
        Mtu::Unknown(0)
    }
}

impl fmt::Display for Mtu {
    /// As libibmad's `mad_dump_mtu` prints it: `256` … `4096`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes() {
            Some(b) => write!(f, "{b}"),
            None => write!(f, "?({})", u8::from(*self)),
        }
    }
}

enum_with_unknown! {
    /// An IBA static rate code (PathRecord/MCMemberRecord `Rate`; the same
    /// numbering as libibverbs' `enum ibv_rate`). Codes are not in speed
    /// order: 5 (5 Gb/s) was added after 4 (30 Gb/s), and so on.
    pub enum Rate(u8) {
        /// 2.5 Gb/s (1X SDR).
        Gbps2_5 = 2,
        /// 10 Gb/s (4X SDR, 1X QDR).
        Gbps10 = 3,
        /// 30 Gb/s (12X SDR).
        Gbps30 = 4,
        /// 5 Gb/s (1X DDR).
        Gbps5 = 5,
        /// 20 Gb/s (4X DDR).
        Gbps20 = 6,
        /// 40 Gb/s (4X QDR).
        Gbps40 = 7,
        /// 60 Gb/s (12X DDR).
        Gbps60 = 8,
        /// 80 Gb/s (8X QDR).
        Gbps80 = 9,
        /// 120 Gb/s (12X QDR).
        Gbps120 = 10,
        /// 14 Gb/s (1X FDR).
        Gbps14 = 11,
        /// 56 Gb/s (4X FDR).
        Gbps56 = 12,
        /// 112 Gb/s (8X FDR).
        Gbps112 = 13,
        /// 168 Gb/s (12X FDR).
        Gbps168 = 14,
        /// 25 Gb/s (1X EDR).
        Gbps25 = 15,
        /// 100 Gb/s (4X EDR).
        Gbps100 = 16,
        /// 200 Gb/s (8X EDR, 4X HDR).
        Gbps200 = 17,
        /// 300 Gb/s (12X EDR).
        Gbps300 = 18,
        /// 28 Gb/s.
        Gbps28 = 19,
        /// 50 Gb/s (1X HDR).
        Gbps50 = 20,
        /// 400 Gb/s (8X HDR, 4X NDR).
        Gbps400 = 21,
        /// 600 Gb/s (12X HDR).
        Gbps600 = 22,
        /// 800 Gb/s (8X NDR, 4X XDR).
        Gbps800 = 23,
        /// 1200 Gb/s (12X NDR).
        Gbps1200 = 24,
    }
}

impl Rate {
    /// The rate in Mb/s (2500, 10000, …), or `None` for an unknown code.
    pub fn mbps(self) -> Option<u32> {
        Some(match self {
            Rate::Gbps2_5 => 2_500,
            Rate::Gbps10 => 10_000,
            Rate::Gbps30 => 30_000,
            Rate::Gbps5 => 5_000,
            Rate::Gbps20 => 20_000,
            Rate::Gbps40 => 40_000,
            Rate::Gbps60 => 60_000,
            Rate::Gbps80 => 80_000,
            Rate::Gbps120 => 120_000,
            Rate::Gbps14 => 14_000,
            Rate::Gbps56 => 56_000,
            Rate::Gbps112 => 112_000,
            Rate::Gbps168 => 168_000,
            Rate::Gbps25 => 25_000,
            Rate::Gbps100 => 100_000,
            Rate::Gbps200 => 200_000,
            Rate::Gbps300 => 300_000,
            Rate::Gbps28 => 28_000,
            Rate::Gbps50 => 50_000,
            Rate::Gbps400 => 400_000,
            Rate::Gbps600 => 600_000,
            Rate::Gbps800 => 800_000,
            Rate::Gbps1200 => 1_200_000,
            Rate::Unknown(_) => return None,
        })
    }

    /// The rate in Gb/s (2.5, 10.0, …), or `None` for an unknown code.
    pub fn gbps(self) -> Option<f64> {
        self.mbps().map(|m| f64::from(m) / 1000.0)
    }

    /// The code for a rate of exactly `mbps` Mb/s, if there is one.
    pub fn from_mbps(mbps: u32) -> Option<Rate> {
        (2..=24).map(Rate::from).find(|r| r.mbps() == Some(mbps))
    }
}

impl Default for Rate {
    fn default() -> Self {
        Rate::Unknown(0)
    }
}

impl fmt::Display for Rate {
    /// `2.5 Gbps`, `10 Gbps`, … `1200 Gbps` (the "Gbps" spelling of
    /// libibmad's speed dumpers); unknown codes as `?(n)` like
    /// `mad_dump_mtu`. (infiniband-diags itself prints PathRecord rates as
    /// raw hex codes.)
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mbps() {
            Some(m) if m % 1000 == 0 => write!(f, "{} Gbps", m / 1000),
            Some(m) => write!(f, "{}.{} Gbps", m / 1000, (m % 1000) / 100),
            None => write!(f, "?({})", u8::from(*self)),
        }
    }
}

enum_with_unknown! {
    /// A 2-bit selector of PathRecord and MCMemberRecord (`MTUSelector`,
    /// `RateSelector`, `PacketLifeTimeSelector`): how the SA compares the
    /// value that follows it. `Unknown(_)` only arises from `From<u8>` with
    /// a value above 3.
    #[derive(Default)]
    pub enum Selector(u8) {
        /// Greater than the value.
        #[default]
        GreaterThan = 0,
        /// Less than the value.
        LessThan = 1,
        /// Exactly the value.
        Exactly = 2,
        /// The largest available (for PacketLifeTime: the smallest).
        Largest = 3,
    }
}

impl fmt::Display for Selector {
    /// `greater than`, `less than`, `exactly`, `largest`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Selector::GreaterThan => "greater than",
            Selector::LessThan => "less than",
            Selector::Exactly => "exactly",
            Selector::Largest => "largest",
            Selector::Unknown(n) => return write!(f, "?({n})"),
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::Error;

    #[test]
    fn gid_parts_and_text() {
        let gid = Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001);
        assert_eq!(
            gid.0,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 1]
        );
        assert_eq!(gid.prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(gid.guid(), 0x0002_c903_0000_0001);
        assert!(!gid.is_multicast());
        assert_eq!(gid.to_string(), "fe80::2:c903:0:1");
        let mgid = Gid::from([
            0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ]);
        assert!(mgid.is_multicast());
        assert_eq!(mgid.to_string(), "ff12:401b:ffff::ffff:ffff");
        assert_eq!(Gid::from(Ipv6Addr::from(gid)), gid);
        assert_eq!(<[u8; 16]>::from(gid), *gid.as_bytes());
    }

    #[test]
    fn gid_parse_emit() {
        let mut buf = [0u8; 20];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8;
        }
        let gid = Gid::parse(&buf).unwrap();
        assert_eq!(gid.0[15], 15);
        let mut out = [0xa5u8; 17];
        gid.emit(&mut out);
        assert_eq!(out[..16], buf[..16]);
        assert_eq!(out[16], 0xa5);
        assert_eq!(
            Gid::parse(&buf[..15]),
            Err(Error::Truncated {
                needed: 16,
                got: 15
            })
        );
    }

    #[test]
    fn mtu_codes() {
        assert_eq!(Mtu::from(1), Mtu::Mtu256);
        assert_eq!(Mtu::from(5).bytes(), Some(4096));
        assert_eq!(Mtu::from(3).to_string(), "1024");
        assert_eq!(Mtu::from(0).to_string(), "?(0)");
        assert_eq!(Mtu::from(6).to_string(), "?(6)");
        assert_eq!(Mtu::from_bytes(2048), Some(Mtu::Mtu2048));
        assert_eq!(Mtu::from_bytes(1500), None);
        for code in 1..=5u8 {
            let mtu = Mtu::from(code);
            assert_eq!(Mtu::from_bytes(mtu.bytes().unwrap()), Some(mtu));
            assert_eq!(mtu.bytes(), Some(128 << code));
        }
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Mtu::from(v)), v);
        }
    }

    #[test]
    fn rate_codes() {
        // IBA rate code table (libibverbs `enum ibv_rate` numbering).
        let table: [(u8, &str, f64); 23] = [
            (2, "2.5 Gbps", 2.5),
            (3, "10 Gbps", 10.0),
            (4, "30 Gbps", 30.0),
            (5, "5 Gbps", 5.0),
            (6, "20 Gbps", 20.0),
            (7, "40 Gbps", 40.0),
            (8, "60 Gbps", 60.0),
            (9, "80 Gbps", 80.0),
            (10, "120 Gbps", 120.0),
            (11, "14 Gbps", 14.0),
            (12, "56 Gbps", 56.0),
            (13, "112 Gbps", 112.0),
            (14, "168 Gbps", 168.0),
            (15, "25 Gbps", 25.0),
            (16, "100 Gbps", 100.0),
            (17, "200 Gbps", 200.0),
            (18, "300 Gbps", 300.0),
            (19, "28 Gbps", 28.0),
            (20, "50 Gbps", 50.0),
            (21, "400 Gbps", 400.0),
            (22, "600 Gbps", 600.0),
            (23, "800 Gbps", 800.0),
            (24, "1200 Gbps", 1200.0),
        ];
        for (code, text, gbps) in table {
            let r = Rate::from(code);
            assert!(!matches!(r, Rate::Unknown(_)), "code {code}");
            assert_eq!(r.to_string(), text);
            assert_eq!(r.gbps(), Some(gbps));
            assert_eq!(Rate::from_mbps(r.mbps().unwrap()), Some(r));
        }
        assert_eq!(Rate::from(0).to_string(), "?(0)");
        assert_eq!(Rate::from(25).gbps(), None);
        assert_eq!(Rate::from_mbps(1), None);
        assert_eq!(Rate::default(), Rate::Unknown(0));
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Rate::from(v)), v);
        }
    }

    #[test]
    fn selector_codes() {
        assert_eq!(Selector::from(0), Selector::GreaterThan);
        assert_eq!(Selector::from(1), Selector::LessThan);
        assert_eq!(Selector::from(2), Selector::Exactly);
        assert_eq!(Selector::from(3), Selector::Largest);
        assert_eq!(Selector::from(4), Selector::Unknown(4));
        assert_eq!(Selector::Exactly.to_string(), "exactly");
        assert_eq!(Selector::Unknown(9).to_string(), "?(9)");
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Selector::from(v)), v);
        }
    }
}
