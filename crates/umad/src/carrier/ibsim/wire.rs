//! ibsim's socket protocol, written once for both ends: the client ([`super::IbsimCarrier`])
//! and the server (`umad sim serve`, in umad-cli). No I/O here: the layouts of `struct
//! sim_ctl` (80 bytes) and `struct sim_request` (288 bytes) with their encode and decode,
//! the control message types and the payloads they carry, and the sockets' names.
//!
//! Facts from ibsim's `include/ibsim.h` (the same in 0.10, Debian 12's, and 0.12):
//!
//! - AF_UNIX datagram sockets with **abstract** names whose trailing NUL is part of the
//!   address ([`abstract_addr`]): the server binds `<base>:ctl` ([`server_ctl`]) and one
//!   `<base>:out<slot>` per client slot ([`server_out`]); a client binds `<base>:ctl<id>`
//!   ([`client_ctl`]) and `<base>:in<id>` ([`client_in`]), `<base>` being ibsim's
//!   `IBSIM_SOCKNAME` (default [`DEFAULT_BASE`]).
//! - `struct sim_ctl` is host-order `magic, clientid, type, len` and 64 bytes of data
//!   ([`Ctl`]); every request is answered with the same struct, its type set to
//!   [`ctl::ERROR`] on failure.
//! - `struct sim_request` holds `dlid` and `slid` as `htons()` values in 32-bit fields,
//!   `dqp`, `sqp` and `status` big-endian, 4 bytes of padding, a 64-bit length and the MAD
//!   ([`Request`]).
//! - The server stamps a request's TID bits 48-63 with the client's slot ([`stamp_tid`]) and
//!   answers a request that gets no answer at once, unchanged but for
//!   `status = `[`STATUS_DROPPED`].

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;

/// `struct sim_ctl`'s magic number.
pub const MAGIC: u32 = 0xdead_beef;
/// Size of `struct sim_ctl`.
pub const CTL_LEN: usize = 80;
/// Where `struct sim_ctl`'s data starts.
pub const CTL_DATA: usize = 16;
/// Size of `struct sim_ctl`'s data (`SIM_CTL_MAX_DATA`).
pub const CTL_DATA_LEN: usize = CTL_LEN - CTL_DATA;
/// Size of `struct sim_request`.
pub const PACKET_LEN: usize = 288;
/// Where `struct sim_request`'s MAD starts.
pub const PACKET_MAD: usize = 32;
/// Longest MAD ibsim carries.
pub const MAX_MAD: usize = 256;
/// ibsim's default socket base name (`SIM_BASENAME`).
pub const DEFAULT_BASE: &str = "sim";
/// The status a server puts on a request nothing answered (ibsim's `_dropped`: `ETIMEDOUT`).
pub const STATUS_DROPPED: u32 = 110;
/// The TID bit where the server's client slot starts.
pub const SLOT_SHIFT: u32 = 48;
/// How many slots fit the TID's 16 bits.
pub const MAX_SLOTS: usize = 1 << 16;

/// The control message types (`enum SIM_CTL_TYPES`).
pub mod ctl {
    /// A reply's type when the request failed.
    pub const ERROR: u32 = 0;
    /// Attach ([`super::ClientInfo`] in, the slot and node id out).
    pub const CONNECT: u32 = 1;
    /// Give the slot back.
    pub const DISCONNECT: u32 = 2;
    /// The attached port's LID and state ([`super::SimPort`]).
    pub const GET_PORT: u32 = 3;
    /// Vendor, part, hardware and firmware version ([`super::Vendor`]).
    pub const GET_VENDOR: u32 = 4;
    /// GID prefix (wire order) and node GUID (host order).
    pub const GET_GID: u32 = 5;
    /// The node GUID, host order.
    pub const GET_GUID: u32 = 6;
    /// The node's NodeInfo, 64 wire bytes.
    pub const GET_NODEINFO: u32 = 7;
    /// PortInfo of the port named in data byte 0 (0: the attached port), 64 wire bytes.
    pub const GET_PORTINFO: u32 = 8;
    /// Set or clear the client's IsSM (a host-order `int` in the data).
    pub const SET_ISSM: u32 = 9;
    /// The attached port's first 32 P_Keys (host-order `u16`s).
    pub const GET_PKEYS: u32 = 10;
}

/// A `struct sim_ctl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ctl {
    /// [`MAGIC`] in a valid message.
    pub magic: u32,
    /// The client's slot (0 before the CONNECT).
    pub client: u32,
    /// One of [`ctl`].
    pub typ: u32,
    /// How many data bytes the request means (servers ignore it and echo it).
    pub len: u32,
    /// The payload.
    pub data: [u8; CTL_DATA_LEN],
}

impl Ctl {
    /// A request of type `typ` from `client` carrying `data` (at most 64 bytes).
    pub fn request(client: u32, typ: u32, data: &[u8]) -> Ctl {
        let mut d = [0u8; CTL_DATA_LEN];
        let n = data.len().min(CTL_DATA_LEN);
        d[..n].copy_from_slice(&data[..n]);
        Ctl {
            magic: MAGIC,
            client,
            typ,
            len: n as u32,
            data: d,
        }
    }

    /// The 80 bytes on the wire.
    pub fn encode(&self) -> [u8; CTL_LEN] {
        let mut m = [0u8; CTL_LEN];
        m[0..4].copy_from_slice(&self.magic.to_ne_bytes());
        m[4..8].copy_from_slice(&self.client.to_ne_bytes());
        m[8..12].copy_from_slice(&self.typ.to_ne_bytes());
        m[12..16].copy_from_slice(&self.len.to_ne_bytes());
        m[CTL_DATA..].copy_from_slice(&self.data);
        m
    }

    /// A received datagram as a `struct sim_ctl`; `None` unless it is exactly 80 bytes (ibsim
    /// ignores other sizes). The magic is not checked.
    pub fn decode(m: &[u8]) -> Option<Ctl> {
        if m.len() != CTL_LEN {
            return None;
        }
        let mut data = [0u8; CTL_DATA_LEN];
        data.copy_from_slice(&m[CTL_DATA..]);
        Some(Ctl {
            magic: ne32(m, 0),
            client: ne32(m, 4),
            typ: ne32(m, 8),
            len: ne32(m, 12),
            data,
        })
    }
}

/// Size of `struct sim_client_info` (CONNECT's payload).
pub const CLIENT_INFO_LEN: usize = 44;

/// `struct sim_client_info`: CONNECT's payload, both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// In the request, the client's id (its socket names' number, printed with `%d`); in the
    /// reply, the slot.
    pub id: u32,
    /// The client's QP (0).
    pub qp: u32,
    /// Attach as the node's SM client.
    pub issm: u32,
    /// The node id or NodeDescription to attach to (empty: the default); in the reply, the
    /// id of the node attached to. NUL-padded.
    pub nodeid: [u8; 32],
}

impl ClientInfo {
    /// A CONNECT request's payload.
    pub fn new(id: u32, issm: bool, node: &str) -> ClientInfo {
        let mut nodeid = [0u8; 32];
        let n = node.len().min(31);
        nodeid[..n].copy_from_slice(&node.as_bytes()[..n]);
        ClientInfo {
            id,
            qp: 0,
            issm: u32::from(issm),
            nodeid,
        }
    }

    /// The node named, up to its first NUL.
    pub fn node(&self) -> String {
        let end = self.nodeid.iter().position(|&b| b == 0).unwrap_or(32);
        String::from_utf8_lossy(&self.nodeid[..end]).into_owned()
    }

    /// Into a control message's data.
    pub fn encode_into(&self, data: &mut [u8]) {
        data[0..4].copy_from_slice(&self.id.to_ne_bytes());
        data[4..8].copy_from_slice(&self.qp.to_ne_bytes());
        data[8..12].copy_from_slice(&self.issm.to_ne_bytes());
        data[12..CLIENT_INFO_LEN].copy_from_slice(&self.nodeid);
    }

    /// From a control message's data (at least 44 bytes).
    pub fn decode(data: &[u8]) -> ClientInfo {
        let mut nodeid = [0u8; 32];
        nodeid.copy_from_slice(&data[12..CLIENT_INFO_LEN]);
        ClientInfo {
            id: ne32(data, 0),
            qp: ne32(data, 4),
            issm: ne32(data, 8),
            nodeid,
        }
    }
}

/// Size of `struct sim_vendor` (GET_VENDOR's payload).
pub const VENDOR_LEN: usize = 24;

/// `struct sim_vendor`: GET_VENDOR's answer, host order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vendor {
    /// NodeInfo.VendorID.
    pub vendor_id: u32,
    /// NodeInfo.DeviceID.
    pub vendor_part_id: u32,
    /// NodeInfo.Revision.
    pub hw_ver: u32,
    /// Firmware version (ibsim: 1).
    pub fw_ver: u64,
}

impl Vendor {
    /// Into a control message's data.
    pub fn encode_into(&self, data: &mut [u8]) {
        data[0..4].copy_from_slice(&self.vendor_id.to_ne_bytes());
        data[4..8].copy_from_slice(&self.vendor_part_id.to_ne_bytes());
        data[8..12].copy_from_slice(&self.hw_ver.to_ne_bytes());
        data[12..16].fill(0);
        data[16..24].copy_from_slice(&self.fw_ver.to_ne_bytes());
    }

    /// From a control message's data (at least 24 bytes).
    pub fn decode(data: &[u8]) -> Vendor {
        let mut fw = [0u8; 8];
        fw.copy_from_slice(&data[16..24]);
        Vendor {
            vendor_id: ne32(data, 0),
            vendor_part_id: ne32(data, 4),
            hw_ver: ne32(data, 8),
            fw_ver: u64::from_ne_bytes(fw),
        }
    }
}

/// `struct sim_port`: GET_PORT's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimPort {
    /// The port's LID (host order).
    pub lid: u16,
    /// PortInfo.PortState.
    pub state: u8,
}

impl SimPort {
    /// Into a control message's data.
    pub fn encode_into(&self, data: &mut [u8]) {
        data[0..2].copy_from_slice(&self.lid.to_ne_bytes());
        data[2] = self.state;
    }
}

/// A `struct sim_request`: one MAD and its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Destination LID (0xffff: directed route).
    pub dlid: u16,
    /// Source LID (a client sends 0 for the server to fill in; 0xffff on directed route).
    pub slid: u16,
    /// Destination QP.
    pub dqp: u32,
    /// Source QP.
    pub sqp: u32,
    /// 0, or [`STATUS_DROPPED`] on a request the server returns unanswered.
    pub status: u32,
    /// The length field (clients send the MAD's size; servers echo it).
    pub length: u64,
    /// The MAD.
    pub mad: [u8; MAX_MAD],
}

impl Request {
    /// The 288 bytes on the wire.
    pub fn encode(&self) -> [u8; PACKET_LEN] {
        let mut pkt = [0u8; PACKET_LEN];
        pkt[0..4].copy_from_slice(&u32::from(self.dlid.to_be()).to_ne_bytes());
        pkt[4..8].copy_from_slice(&u32::from(self.slid.to_be()).to_ne_bytes());
        pkt[8..12].copy_from_slice(&self.dqp.to_be_bytes());
        pkt[12..16].copy_from_slice(&self.sqp.to_be_bytes());
        pkt[16..20].copy_from_slice(&self.status.to_be_bytes());
        pkt[24..32].copy_from_slice(&self.length.to_be_bytes());
        pkt[PACKET_MAD..].copy_from_slice(&self.mad);
        pkt
    }

    /// A received datagram as a `struct sim_request`; `None` unless it is exactly 288 bytes
    /// (ibsim discards other sizes).
    pub fn decode(pkt: &[u8]) -> Option<Request> {
        if pkt.len() != PACKET_LEN {
            return None;
        }
        let be32 = |o: usize| u32::from_be_bytes([pkt[o], pkt[o + 1], pkt[o + 2], pkt[o + 3]]);
        let lid = |o: usize| u16::from_be(ne32(pkt, o) as u16);
        let mut len = [0u8; 8];
        len.copy_from_slice(&pkt[24..32]);
        let mut mad = [0u8; MAX_MAD];
        mad.copy_from_slice(&pkt[PACKET_MAD..]);
        Some(Request {
            dlid: lid(0),
            slid: lid(4),
            dqp: be32(8),
            sqp: be32(12),
            status: be32(16),
            length: u64::from_be_bytes(len),
            mad,
        })
    }
}

/// Puts `slot` into TID bits 48-63 of `mad` (its bytes 8..16), as the server does to every
/// request before it goes on.
pub fn stamp_tid(mad: &mut [u8], slot: u16) {
    mad[8..10].copy_from_slice(&slot.to_be_bytes());
}

/// The slot a server stamped into `mad`'s TID.
pub fn tid_slot(mad: &[u8]) -> u16 {
    u16::from_be_bytes([mad[8], mad[9]])
}

/// The server's control socket name, `<base>:ctl`.
pub fn server_ctl(base: &str) -> String {
    format!("{base}:ctl")
}

/// The server's data socket of `slot`, `<base>:out<slot>`.
pub fn server_out(base: &str, slot: u32) -> String {
    format!("{base}:out{slot}")
}

/// A client's control socket name, `<base>:ctl<id>` (the id printed as C's `%d`).
pub fn client_ctl(base: &str, id: u32) -> String {
    format!("{base}:ctl{}", id as i32)
}

/// A client's data socket name, `<base>:in<id>` (the id printed as C's `%d`).
pub fn client_in(base: &str, id: u32) -> String {
    format!("{base}:in{}", id as i32)
}

/// The abstract socket address of `name`, with the trailing NUL ibsim counts in it.
///
/// # Errors
/// `name` is too long for an abstract address.
pub fn abstract_addr(name: &str) -> io::Result<SocketAddr> {
    let mut v = name.as_bytes().to_vec();
    v.push(0);
    SocketAddr::from_abstract_name(&v)
}

/// Whether `addr` is the abstract address of `name` (as [`abstract_addr`] makes it).
pub fn is_addr_of(addr: &SocketAddr, name: &str) -> bool {
    addr.as_abstract_name().is_some_and(|a| {
        a.len() == name.len() + 1 && a.starts_with(name.as_bytes()) && a[name.len()] == 0
    })
}

fn ne32(m: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([m[o], m[o + 1], m[o + 2], m[o + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structs_keep_ibsims_layout() {
        let c = Ctl::request(3, ctl::GET_PORTINFO, &[5]);
        let m = c.encode();
        assert_eq!(&m[0..4], &MAGIC.to_ne_bytes());
        assert_eq!(&m[4..8], &3u32.to_ne_bytes());
        assert_eq!(&m[8..12], &8u32.to_ne_bytes());
        assert_eq!(&m[12..16], &1u32.to_ne_bytes());
        assert_eq!(m[16], 5);
        assert_eq!(Ctl::decode(&m), Some(c));
        assert_eq!(Ctl::decode(&m[..79]), None);

        let mut r = Request {
            dlid: 0x1234,
            slid: 0xffff,
            dqp: 1,
            sqp: 0x10,
            status: STATUS_DROPPED,
            length: 256,
            mad: [0; MAX_MAD],
        };
        stamp_tid(&mut r.mad, 0xbeef);
        assert_eq!(tid_slot(&r.mad), 0xbeef);
        let p = r.encode();
        // htons() in a host-order u32: the LID's two bytes in wire order first.
        assert_eq!(&p[0..4], &u32::from(0x1234u16.to_be()).to_ne_bytes());
        assert_eq!(&p[8..12], &[0, 0, 0, 1]);
        assert_eq!(&p[16..20], &[0, 0, 0, 110]);
        assert_eq!(&p[24..32], &256u64.to_be_bytes());
        assert_eq!(&p[40..42], &[0xbe, 0xef]);
        assert_eq!(Request::decode(&p), Some(r));

        let mut d = [0u8; CTL_DATA_LEN];
        let info = ClientInfo::new(42, true, "H-host1");
        info.encode_into(&mut d);
        assert_eq!(ClientInfo::decode(&d), info);
        assert_eq!(info.node(), "H-host1");
        let v = Vendor {
            vendor_id: 0x2c9,
            vendor_part_id: 0x1003,
            hw_ver: 0xa1,
            fw_ver: 1,
        };
        v.encode_into(&mut d);
        assert_eq!(Vendor::decode(&d), v);
    }

    #[test]
    fn names_are_ibsims() {
        assert_eq!(server_out("sim", 12), "sim:out12");
        assert_eq!(client_in("sim", 0x8000_0001), "sim:in-2147483647");
        let a = abstract_addr(&server_ctl("x")).unwrap();
        assert_eq!(a.as_abstract_name(), Some(&b"x:ctl\0"[..]));
        assert!(is_addr_of(&a, "x:ctl"));
        assert!(!is_addr_of(&a, "x:ct"));
    }
}
