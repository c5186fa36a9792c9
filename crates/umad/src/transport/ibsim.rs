//! A native client of the ibsim simulator: MADs over ibsim's abstract unix datagram sockets,
//! without LD_PRELOAD.
//!
//! Choosing ibsim is always explicit: [`IbsimOptions::new`] with a socket name, or
//! [`IbsimOptions::from_env`] reading `UMAD_IBSIM` (the socket base name, what ibsim reads from
//! `IBSIM_SOCKNAME`) and `UMAD_IBSIM_NODE` (node id or description to attach to).
//!
//! This module is a packet [`Carrier`]: it moves single 256-byte MADs to and from ibsim.
//! The kernel's semantics — agents, TIDs, timeouts and retries, RMPP — come from the
//! user-space MAD layer ([`crate::layer`]) on top, which is what [`Port::open_ibsim`]
//! builds, so MADs of any length travel as RMPP segments (ibsim itself carries at most 256
//! bytes and does no RMPP).
//!
//! [`Port::open_ibsim`]: crate::Port::open_ibsim

use std::collections::VecDeque;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Issm;
use crate::addr::MadAddr;
use crate::device::{Ca, NodeType, PortAttrs};
use crate::layer::{Carrier, Packet};
use crate::{Error, Result};

/// Environment variable naming the ibsim socket to use (same value as ibsim's `IBSIM_SOCKNAME`).
pub const ENV_SOCKET: &str = "UMAD_IBSIM";
/// Environment variable naming the node (id or description) to attach to.
pub const ENV_NODE: &str = "UMAD_IBSIM_NODE";
/// The CA name a native ibsim connection reports, the one umad2sim's fake sysfs uses too.
pub const CA_NAME: &str = "ibsim0";

const MAGIC: u32 = 0xdead_beef;
const CTL_LEN: usize = 80;
const CTL_DATA: usize = 16;
const PACKET_LEN: usize = 288;
const PACKET_MAD: usize = 32;
/// Longest MAD ibsim carries.
pub const MAX_MAD: usize = 256;

const CTL_ERROR: u32 = 0;
const CTL_CONNECT: u32 = 1;
const CTL_DISCONNECT: u32 = 2;
const CTL_GET_VENDOR: u32 = 4;
const CTL_GET_NODEINFO: u32 = 7;
const CTL_GET_PORTINFO: u32 = 8;
const CTL_SET_ISSM: u32 = 9;
const CTL_GET_PKEYS: u32 = 10;

/// How to reach an ibsim instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbsimOptions {
    /// Socket base name (ibsim's `IBSIM_SOCKNAME`; ibsim's default is `sim`).
    pub socket: String,
    /// Node id or NodeDescription to attach to; `None` = ibsim's default (first port of the
    /// first node in the netfile). A CA attaches at its first port, a switch at port 0.
    pub node: Option<String>,
    /// Attach as the node's SM client from the start (receives the requests ibsim forwards).
    pub issm: bool,
    /// How long to keep retrying while ibsim's socket does not exist yet.
    pub connect_timeout: Duration,
}

impl IbsimOptions {
    /// Options for the ibsim whose socket base name is `socket`.
    pub fn new(socket: impl Into<String>) -> IbsimOptions {
        IbsimOptions {
            socket: socket.into(),
            node: None,
            issm: false,
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// The same options attaching to `node`.
    pub fn node(mut self, node: impl Into<String>) -> IbsimOptions {
        self.node = Some(node.into());
        self
    }

    /// Options from `UMAD_IBSIM` / `UMAD_IBSIM_NODE`, or `None` when `UMAD_IBSIM` is unset or
    /// empty.
    pub fn from_env() -> Option<IbsimOptions> {
        let socket = std::env::var(ENV_SOCKET).ok().filter(|s| !s.is_empty())?;
        let mut o = IbsimOptions::new(socket);
        o.node = std::env::var(ENV_NODE).ok().filter(|s| !s.is_empty());
        Some(o)
    }
}

fn abstract_addr(name: &str) -> io::Result<SocketAddr> {
    // ibsim's names include the trailing NUL in the abstract address.
    let mut v = name.as_bytes().to_vec();
    v.push(0);
    SocketAddr::from_abstract_name(&v)
}

/// The control channel (80-byte `struct sim_ctl` requests and replies).
#[derive(Debug)]
struct Ctl {
    base: String,
    sock: Mutex<UnixDatagram>,
    slot: AtomicU32,
}

impl Ctl {
    fn err(&self, reason: impl Into<String>, source: Option<io::Error>) -> Error {
        Error::Ibsim {
            socket: self.base.clone(),
            reason: reason.into(),
            source,
        }
    }

    /// One request/reply; `data` is sent and overwritten with the reply's data.
    fn call(&self, typ: u32, data: &mut [u8]) -> Result<()> {
        let mut m = [0u8; CTL_LEN];
        m[0..4].copy_from_slice(&MAGIC.to_ne_bytes());
        m[4..8].copy_from_slice(&self.slot.load(Ordering::Relaxed).to_ne_bytes());
        m[8..12].copy_from_slice(&typ.to_ne_bytes());
        m[12..16].copy_from_slice(&(data.len() as u32).to_ne_bytes());
        m[CTL_DATA..CTL_DATA + data.len()].copy_from_slice(data);
        let sock = self.sock.lock().unwrap_or_else(|p| p.into_inner());
        sock.send(&m)
            .map_err(|e| self.err("control request failed: is ibsim still running?", Some(e)))?;
        let mut r = [0u8; CTL_LEN];
        let n = sock.recv(&mut r).map_err(|e| {
            self.err(
                format!("no answer to control request {typ} (ibsim busy or gone)"),
                Some(e),
            )
        })?;
        if n != CTL_LEN || u32::from_ne_bytes([r[8], r[9], r[10], r[11]]) == CTL_ERROR {
            return Err(self.err(format!("ibsim refused control request {typ}"), None));
        }
        data.copy_from_slice(&r[CTL_DATA..CTL_DATA + data.len()]);
        Ok(())
    }

    fn set_issm(&self, on: bool) -> Result<()> {
        let mut d = (on as i32).to_ne_bytes();
        self.call(CTL_SET_ISSM, &mut d)
    }
}

/// A port of a simulated node, reached through ibsim's sockets: a packet [`Carrier`].
#[derive(Debug)]
pub struct IbsimCarrier {
    ctl: Arc<Ctl>,
    data: UnixDatagram,
    port: u32,
    node_id: String,
    /// Packets read while waiting for room to send (ibsim stalls when a client leaves its
    /// packets unread), handed out before the socket's.
    inbox: Mutex<VecDeque<Packet>>,
}

static NEXT_CLIENT: AtomicU32 = AtomicU32::new(0);

/// How long closing a connection waits for ibsim to confirm the DISCONNECT.
const DISCONNECT_WAIT: Duration = Duration::from_millis(100);

/// Client socket names tried before giving up: names of closed clients are free again, so
/// the counter wraps and only names in use by live clients are skipped.
const CLIENT_NAMES: u32 = 4096;

impl IbsimCarrier {
    /// Connects to ibsim and attaches to a node's port.
    pub fn connect(opts: &IbsimOptions) -> Result<IbsimCarrier> {
        let base = opts.socket.clone();
        let fail = |reason: String, source: Option<io::Error>| Error::Ibsim {
            socket: base.clone(),
            reason,
            source,
        };
        if base.is_empty() || base.contains('\0') {
            return Err(fail(
                "the socket name is empty or contains NUL".into(),
                None,
            ));
        }
        let node = opts.node.clone().unwrap_or_default();
        if node.len() >= 32 || node.contains('\0') {
            return Err(fail(
                format!("node name {node:?} is longer than ibsim's 31 characters"),
                None,
            ));
        }
        // Client ids must be unique per ibsim: derive them from the pid and a counter and
        // move on while a name is taken.
        let pid = std::process::id();
        let mut tries = 0;
        let (ctl_sock, data, id) = loop {
            tries += 1;
            if tries > CLIENT_NAMES {
                return Err(fail(
                    format!("all {CLIENT_NAMES} client socket names of this process are in use: close some ports"),
                    None,
                ));
            }
            let k = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed) % CLIENT_NAMES;
            // ibsim prints the id with %d into the socket name it connects to, so it must stay
            // below 2^31; bit 30 keeps it apart from umad2sim's ids (plain pids).
            let id = 0x4000_0000 | ((pid & 0x3_ffff) << 12) | k;
            let ctl = match UnixDatagram::bind_addr(
                &abstract_addr(&format!("{base}:ctl{id}"))
                    .map_err(|e| fail("bad socket name".into(), Some(e)))?,
            ) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => {
                    return Err(fail(
                        "cannot bind the client control socket".into(),
                        Some(e),
                    ))
                }
            };
            let data = match UnixDatagram::bind_addr(
                &abstract_addr(&format!("{base}:in{id}"))
                    .map_err(|e| fail("bad socket name".into(), Some(e)))?,
            ) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(fail("cannot bind the client data socket".into(), Some(e))),
            };
            break (ctl, data, id);
        };
        let server = abstract_addr(&format!("{base}:ctl"))
            .map_err(|e| fail("bad socket name".into(), Some(e)))?;
        let until = Instant::now() + opts.connect_timeout;
        loop {
            match ctl_sock.connect_addr(&server) {
                Ok(()) => break,
                Err(e) if Instant::now() < until && matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(fail(
                        format!("cannot reach ibsim's control socket @{base}:ctl: start ibsim with IBSIM_SOCKNAME={base}"),
                        Some(e),
                    ))
                }
            }
        }
        ctl_sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| fail("cannot set a timeout on the control socket".into(), Some(e)))?;
        let ctl = Arc::new(Ctl {
            base: base.clone(),
            sock: Mutex::new(ctl_sock),
            slot: AtomicU32::new(0),
        });

        let mut info = [0u8; 44];
        info[0..4].copy_from_slice(&id.to_ne_bytes());
        info[8..12].copy_from_slice(&u32::from(opts.issm).to_ne_bytes());
        info[12..12 + node.len()].copy_from_slice(node.as_bytes());
        ctl.call(CTL_CONNECT, &mut info).map_err(|_| {
            fail(
                format!(
                    "ibsim refused to attach to {}: unknown node, all 10 client slots taken, or an SM already attached there",
                    if node.is_empty() { "the default node" } else { &node }
                ),
                None,
            )
        })?;
        let slot = u32::from_ne_bytes([info[0], info[1], info[2], info[3]]);
        ctl.slot.store(slot, Ordering::Relaxed);
        let node_id = String::from_utf8_lossy(&info[12..44])
            .trim_end_matches('\0')
            .to_string();
        let connected = abstract_addr(&format!("{base}:out{slot}"))
            .and_then(|a| data.connect_addr(&a))
            .and_then(|()| data.set_nonblocking(true));
        let mut t = IbsimCarrier {
            ctl,
            data,
            port: 0,
            node_id,
            inbox: Mutex::new(VecDeque::new()),
        };
        connected.map_err(|e| {
            fail(
                format!("cannot connect to ibsim's data socket for slot {slot}"),
                Some(e),
            )
        })?;
        t.port = u32::from(t.port_info(0)?.local_port_num);
        Ok(t)
    }

    /// The node id ibsim attached this client to (e.g. `Hca1`).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The attached node's NodeInfo, from ibsim's control channel.
    pub fn node_info(&self) -> Result<ibmad::attr::NodeInfo> {
        let mut d = [0u8; 64];
        self.ctl.call(CTL_GET_NODEINFO, &mut d)?;
        ibmad::attr::NodeInfo::parse(&d)
            .map_err(|e| self.ctl.err(format!("bad NodeInfo from ibsim: {e}"), None))
    }

    /// PortInfo of `port` (0 = the attached port), fresh from ibsim (not a snapshot).
    pub fn port_info(&self, port: u8) -> Result<ibmad::attr::PortInfo> {
        let mut d = [0u8; 64];
        d[0] = port;
        self.ctl.call(CTL_GET_PORTINFO, &mut d)?;
        ibmad::attr::PortInfo::parse(&d)
            .map_err(|e| self.ctl.err(format!("bad PortInfo from ibsim: {e}"), None))
    }

    /// The attached port's first 32 P_Keys.
    pub fn pkeys(&self) -> Result<Vec<u16>> {
        let mut d = [0u8; 64];
        self.ctl.call(CTL_GET_PKEYS, &mut d)?;
        Ok(d.chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect())
    }

    fn io_err(&self, what: &str, e: io::Error) -> Error {
        self.ctl
            .err(format!("{what} failed: is ibsim still running?"), Some(e))
    }

    /// One datagram off the socket without waiting.
    fn read_socket(&self) -> Result<Option<Packet>> {
        let mut pkt = [0u8; PACKET_LEN];
        loop {
            match self.data.recv(&mut pkt) {
                Ok(PACKET_LEN) => return Ok(Some(decode(&pkt))),
                Ok(_) => {} // not a sim_request: ibsim ignores those too
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_err("receiving a MAD", e)),
            }
        }
    }

    fn inbox(&self) -> MutexGuard<'_, VecDeque<Packet>> {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A `struct sim_request` as a packet.
fn decode(pkt: &[u8; PACKET_LEN]) -> Packet {
    let be32 = |o: usize| u32::from_be_bytes([pkt[o], pkt[o + 1], pkt[o + 2], pkt[o + 3]]);
    let slid = u16::from_be(u32::from_ne_bytes([pkt[4], pkt[5], pkt[6], pkt[7]]) as u16);
    Packet {
        mad: pkt[PACKET_MAD..].to_vec(),
        addr: MadAddr::new(slid, be32(12), 0, MadAddr::DEFAULT_QKEY),
        qp: be32(8),
        status: be32(16),
    }
}

/// A packet as a `struct sim_request`: dlid from the address (the permissive LID makes it
/// directed route, with slid 0xffff; otherwise slid 0 lets ibsim fill in the port's LID).
fn encode(p: &Packet) -> [u8; PACKET_LEN] {
    let mut pkt = [0u8; PACKET_LEN];
    let dlid = p.addr.lid;
    let slid: u16 = if dlid == MadAddr::PERMISSIVE_LID {
        0xffff
    } else {
        0
    };
    pkt[0..4].copy_from_slice(&u32::from(dlid.to_be()).to_ne_bytes());
    pkt[4..8].copy_from_slice(&u32::from(slid.to_be()).to_ne_bytes());
    pkt[8..12].copy_from_slice(&p.addr.qpn.to_be_bytes());
    pkt[12..16].copy_from_slice(&p.qp.to_be_bytes());
    pkt[24..32].copy_from_slice(&(MAX_MAD as u64).to_be_bytes());
    let n = p.mad.len().min(MAX_MAD);
    pkt[PACKET_MAD..PACKET_MAD + n].copy_from_slice(&p.mad[..n]);
    pkt
}

impl Carrier for IbsimCarrier {
    fn name(&self) -> &'static str {
        "ibsim"
    }

    fn ca_name(&self) -> &str {
        CA_NAME
    }

    fn port_num(&self) -> u32 {
        self.port
    }

    fn ca(&self) -> Result<Ca> {
        let ni = self.node_info()?;
        let pi = self.port_info(0)?;
        let mut v = [0u8; 24];
        self.ctl.call(CTL_GET_VENDOR, &mut v)?;
        let hw_ver = u32::from_ne_bytes([v[8], v[9], v[10], v[11]]);
        let fw_ver = u64::from_ne_bytes([v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23]]);
        let port = PortAttrs {
            ca_name: CA_NAME.to_string(),
            port_num: self.port,
            base_lid: u32::from(pi.lid),
            lmc: u32::from(pi.lmc),
            sm_lid: u32::from(pi.master_sm_lid),
            sm_sl: u32::from(pi.master_sm_sl),
            state: u32::from(u8::from(pi.port_state)),
            phys_state: u32::from(u8::from(pi.port_physical_state)),
            rate: umad2sim_rate(&pi),
            cap_mask: pi.capability_mask,
            gid_prefix: pi.gid_prefix,
            // As umad2sim derives it: ibsim's NodeInfo carries no per-port GUID here.
            port_guid: ni.node_guid + u64::from(pi.local_port_num),
            pkeys: self.pkeys()?,
            link_layer: "IB".to_string(),
        };
        Ok(Ca {
            name: CA_NAME.to_string(),
            node_type: NodeType::from(u32::from(u8::from(ni.node_type))),
            fw_ver: format!("{fw_ver:x}"),
            hw_ver: format!("{hw_ver:x}"),
            ca_type: "simulator".to_string(),
            node_guid: ni.node_guid,
            system_guid: ni.system_image_guid,
            ports: vec![port],
            unreadable: Vec::new(),
        })
    }

    fn send(&self, p: &Packet) -> Result<()> {
        if p.mad.len() > MAX_MAD {
            return Err(Error::InvalidArgument(format!(
                "ibsim carries packets of at most {MAX_MAD} bytes; this one has {}",
                p.mad.len()
            )));
        }
        let pkt = encode(p);
        // Then EAGAIN: the layer keeps the packet and drains us before it tries again.
        let mut give_up = None;
        loop {
            match self.data.send(&pkt) {
                Ok(_) => return Ok(()),
                // ibsim's queue to us is full of packets we have not read: read them, retry.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let now = Instant::now();
                    if now >= *give_up.get_or_insert(now + Duration::from_millis(200)) {
                        return Err(self.io_err("sending a MAD", e));
                    }
                    while let Some(p) = self.read_socket()? {
                        self.inbox().push_back(p);
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
                Err(e) => return Err(self.io_err("sending a MAD", e)),
            }
        }
    }

    fn try_recv(&self) -> Result<Option<Packet>> {
        if let Some(p) = self.inbox().pop_front() {
            return Ok(Some(p));
        }
        self.read_socket()
    }

    fn raw_fd(&self) -> RawFd {
        self.data.as_raw_fd()
    }

    fn issm(&self) -> Result<Issm> {
        self.ctl.set_issm(true)?;
        Ok(Issm::new(Box::new(IbsimIssm(self.ctl.clone()))))
    }
}

/// The integer Gb/s rate of a port as umad2sim writes it into its fake sysfs `rate` file
/// (and so as libibumad and `ibstat` report it under the shim): width × 2.5/5/10 for
/// SDR/DDR/QDR, 14 × width for FDR and 26 × width for any faster extended speed.
fn umad2sim_rate(pi: &ibmad::PortInfo) -> u32 {
    let width = match u8::from(pi.link_width_active) {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        _ => 0,
    };
    let ext = if pi.capability_mask & ibmad::attr::cap::IS_EXTENDED_SPEEDS_SUPPORTED != 0 {
        pi.link_speed_ext_active
    } else {
        0
    };
    match ext {
        0 => width * u32::from(pi.link_speed_active) * 25 / 10,
        1 => 14 * width,
        _ => 26 * width,
    }
}

/// Clears the IsSM flag of an ibsim client when dropped.
struct IbsimIssm(Arc<Ctl>);

impl Drop for IbsimIssm {
    fn drop(&mut self) {
        let _ = self.0.set_issm(false);
    }
}

impl Drop for IbsimCarrier {
    fn drop(&mut self) {
        // ibsim frees a client slot only on DISCONNECT (it has ten). A live ibsim answers
        // within microseconds; a stopped or dying one must not hold the closing process for
        // the control socket's 5 s.
        if let Ok(sock) = self.ctl.sock.lock() {
            let _ = sock.set_read_timeout(Some(DISCONNECT_WAIT));
        }
        let _ = self.ctl.call(CTL_DISCONNECT, &mut []);
    }
}
