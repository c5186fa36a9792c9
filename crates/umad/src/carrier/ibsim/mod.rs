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
//! ibsim has ten client slots and frees one only when its client sends DISCONNECT: dropping
//! an [`IbsimCarrier`] does that, and so does [`crate::disconnect_on_signals`] for every
//! connection still open when the process is killed by SIGHUP, SIGINT or SIGTERM.
//!
//! [`Port::open_ibsim`]: crate::Port::open_ibsim

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io;
use std::net::Shutdown;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::device::Ca;
use crate::layer::{Carrier, Packet};
use crate::transport::Issm;
use crate::{Error, Result};

/// Environment variable naming the ibsim socket to use (same value as ibsim's `IBSIM_SOCKNAME`).
pub const ENV_SOCKET: &str = "UMAD_IBSIM";
/// Environment variable naming the node (id or description) to attach to.
pub const ENV_NODE: &str = "UMAD_IBSIM_NODE";
/// The CA name a native ibsim connection reports, the one umad2sim's fake sysfs uses too.
pub const CA_NAME: &str = "ibsim0";

pub mod wire;

/// Longest MAD ibsim carries.
pub use wire::MAX_MAD;
use wire::{abstract_addr, ctl, CTL_LEN, PACKET_LEN};

/// How long a control request after the attach (NodeInfo, PortInfo, IsSM, ...) waits for
/// ibsim's answer.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// How long to wait for ibsim to answer the attach request (CONNECT); default 5 s, at
    /// least 1 ms. An ibsim that is stopped (SIGSTOP) or too busy to answer in time is
    /// reported as such when it runs out. A socket name no ibsim is bound to (ibsim not
    /// started yet, or dead) is reported at once, without waiting: start ibsim first (ibsim
    /// binds its socket only once its fabric is built, so from then on it answers).
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

    /// Options from the environment variables `UMAD_IBSIM` / `UMAD_IBSIM_NODE`
    /// ([`from_vars`](Self::from_vars) on their values): `Ok(None)` when `UMAD_IBSIM` is
    /// unset or empty.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `UMAD_IBSIM` is set, or both are, to something that is
    /// not UTF-8 (which would name neither a socket nor a node ibsim knows), saying which
    /// variable and what to do.
    pub fn from_env() -> Result<Option<IbsimOptions>> {
        IbsimOptions::from_vars(
            std::env::var_os(ENV_SOCKET).as_deref(),
            std::env::var_os(ENV_NODE).as_deref(),
        )
    }

    /// Options from the values of `UMAD_IBSIM` (`socket`) and `UMAD_IBSIM_NODE` (`node`), as
    /// [`from_env`](Self::from_env) reads them (`None` = unset): `Ok(None)` when `socket` is
    /// unset or empty (the kernel's devices are meant; `node` is then not looked at); an
    /// empty `node` is ibsim's default node.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a value that is looked at is not UTF-8.
    pub fn from_vars(socket: Option<&OsStr>, node: Option<&OsStr>) -> Result<Option<IbsimOptions>> {
        let Some(socket) = env_text(
            ENV_SOCKET,
            socket,
            "it must be the socket name of a running ibsim (its IBSIM_SOCKNAME, text): set it \
             to that name, or unset it to use the kernel's InfiniBand devices",
        )?
        else {
            return Ok(None);
        };
        let mut o = IbsimOptions::new(socket);
        o.node = env_text(
            ENV_NODE,
            node,
            "it must name a node of ibsim's fabric by its node id or NodeDescription (text): \
             set it to one, or unset it to attach at ibsim's default port",
        )?;
        Ok(Some(o))
    }
}

/// The text of environment variable `name` holding `value`; `None` when unset or empty.
fn env_text(name: &str, value: Option<&OsStr>, what: &str) -> Result<Option<String>> {
    match value.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => match v.to_str() {
            Some(s) => Ok(Some(s.to_owned())),
            None => Err(Error::InvalidArgument(format!(
                "the environment variable {name} holds {v:?}, which is not UTF-8: {what}"
            ))),
        },
    }
}

/// `d` as a person reads it: `5 s`, `1.5 s`, `300 ms`.
fn human(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else if d >= Duration::from_secs(1) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis().max(1))
    }
}

/// The sockets of one connection: the control channel (80-byte `struct sim_ctl` requests
/// and replies) and the data socket (288-byte `struct sim_request` packets).
#[derive(Debug)]
struct Ctl {
    base: String,
    chan: Mutex<Chan>,
    data: UnixDatagram,
}

/// The control socket and the slot it speaks for, under one lock: the slot is set by the
/// CONNECT's answer and cleared by the DISCONNECT before anyone else can use the socket, so
/// no request ever goes out with a slot that is not (or no longer) ours.
#[derive(Debug)]
struct Chan {
    sock: UnixDatagram,
    /// The client slot ibsim gave us; `None` before the CONNECT and after the DISCONNECT.
    slot: Option<u32>,
}

/// How a control request failed.
#[derive(Debug)]
enum CallFailure {
    /// It could not be sent (nothing bound at ibsim's control socket any more).
    Send(io::Error),
    /// No answer within the socket's read timeout, or reading failed.
    NoAnswer(io::Error),
    /// ibsim answered `SIM_ctl::ERROR` (or something that is not a `struct sim_ctl`).
    Refused,
}

impl Chan {
    /// One request/reply with the current slot; `data` is sent and overwritten with the
    /// reply's data.
    fn exchange(&self, typ: u32, data: &mut [u8]) -> std::result::Result<(), CallFailure> {
        let m = wire::Ctl::request(self.slot.unwrap_or(0), typ, data).encode();
        self.sock.send(&m).map_err(CallFailure::Send)?;
        let mut r = [0u8; CTL_LEN];
        let n = loop {
            match self.sock.recv(&mut r) {
                // A signal handler ran (e.g. disconnect_on_signals'): keep waiting.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other.map_err(CallFailure::NoAnswer)?,
            }
        };
        let reply = match wire::Ctl::decode(&r[..n]) {
            Some(c) if c.typ != ctl::ERROR => c,
            _ => return Err(CallFailure::Refused),
        };
        data.copy_from_slice(&reply.data[..data.len()]);
        Ok(())
    }
}

/// Whether `e` is a read that ran into the socket's timeout.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The connections of this process that may hold an ibsim slot, for [`disconnect_all`].
static LIVE: Mutex<Vec<Weak<Ctl>>> = Mutex::new(Vec::new());

/// Set by [`disconnect_all`]: the process is going away, no new slot may be taken.
static TERMINATING: AtomicBool = AtomicBool::new(false);

fn live() -> MutexGuard<'static, Vec<Weak<Ctl>>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Disconnects every native ibsim connection of this process (the DISCONNECT that dropping
/// the carrier sends, after which its sockets send nothing more) and makes every later
/// connect fail: what [`crate::disconnect_on_signals`] runs before the process dies of its
/// signal, so that its ibsim slots are free again.
pub(crate) fn disconnect_all() {
    // Before the sweep: a connect that takes its control socket after the sweep has passed
    // it (or that was not listed yet) sees the flag and takes no slot.
    TERMINATING.store(true, Ordering::SeqCst);
    let conns: Vec<Arc<Ctl>> = live().iter().filter_map(Weak::upgrade).collect();
    for c in conns {
        c.disconnect();
    }
}

impl Ctl {
    fn err(&self, reason: impl Into<String>, source: Option<io::Error>) -> Error {
        Error::Ibsim {
            socket: self.base.clone(),
            reason: reason.into(),
            source,
        }
    }

    fn chan(&self) -> MutexGuard<'_, Chan> {
        self.chan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One request/reply on the attached slot; `data` is sent and overwritten with the
    /// reply's data.
    fn call(&self, typ: u32, data: &mut [u8]) -> Result<()> {
        let chan = self.chan();
        if chan.slot.is_none() {
            return Err(self.err(
                format!(
                    "control request {typ} on a connection that is closed (disconnected from \
                     ibsim when it was dropped, or when the process got SIGHUP/SIGINT/SIGTERM)"
                ),
                None,
            ));
        }
        chan.exchange(typ, data).map_err(|f| match f {
            CallFailure::Send(e) => {
                self.err("control request failed: is ibsim still running?", Some(e))
            }
            CallFailure::NoAnswer(e) if is_timeout(&e) => self.err(
                format!(
                    "no answer to control request {typ} within {}: is ibsim stopped \
                     (SIGSTOP), overloaded or gone?",
                    human(CONTROL_TIMEOUT)
                ),
                Some(e),
            ),
            CallFailure::NoAnswer(e) => self.err(
                format!("reading the answer to control request {typ} failed"),
                Some(e),
            ),
            CallFailure::Refused => self.err(format!("ibsim refused control request {typ}"), None),
        })
    }

    /// Attaches: the CONNECT with `info` (44 bytes of `struct sim_client_info`, updated from
    /// the answer), waiting at most `timeout` for it; the slot is ours from then on.
    fn attach(
        &self,
        info: &mut [u8; wire::CLIENT_INFO_LEN],
        timeout: Duration,
        node: &str,
    ) -> Result<u32> {
        let mut chan = self.chan();
        if TERMINATING.load(Ordering::SeqCst) {
            return Err(self.err(
                "not attaching: the process is ending on SIGHUP/SIGINT/SIGTERM and has disconnected \
                 from ibsim",
                None,
            ));
        }
        let timeout = timeout.max(Duration::from_millis(1));
        let answered = chan
            .sock
            .set_read_timeout(Some(timeout))
            .map_err(|e| self.err("cannot set a timeout on the control socket", Some(e)))
            .and_then(|()| {
                let base = &self.base;
                chan.exchange(ctl::CONNECT, info).map_err(|f| match f {
                    CallFailure::Send(e) => self.err(
                        format!(
                            "ibsim's control socket @{base}:ctl went away (ibsim ended?): start \
                             ibsim with IBSIM_SOCKNAME={base}"
                        ),
                        Some(e),
                    ),
                    CallFailure::NoAnswer(e) if is_timeout(&e) => self.err(
                        format!(
                            "ibsim at @{base}:ctl did not answer the connect within {}: is it \
                             stopped (SIGSTOP) or overloaded?",
                            human(timeout)
                        ),
                        Some(io::Error::from_raw_os_error(libc::ETIMEDOUT)),
                    ),
                    CallFailure::NoAnswer(e) => self.err(
                        format!("reading ibsim's answer to the connect from @{base}:ctl failed"),
                        Some(e),
                    ),
                    CallFailure::Refused => self.err(
                        format!(
                            "ibsim refused to attach to {}: unknown node, all 10 client slots \
                             taken, or an SM already attached there",
                            if node.is_empty() {
                                "the default node"
                            } else {
                                node
                            }
                        ),
                        None,
                    ),
                })
            });
        // Later requests get the usual wait (a failed restore shows in their errors).
        let _ = chan.sock.set_read_timeout(Some(CONTROL_TIMEOUT));
        answered?;
        let slot = wire::ClientInfo::decode(info).id;
        chan.slot = Some(slot);
        Ok(slot)
    }

    /// Gives the slot back (DISCONNECT) if it is still ours, and stops sending packets;
    /// every later request fails. Idempotent.
    fn disconnect(&self) {
        let mut chan = self.chan();
        if chan.slot.is_none() {
            return;
        }
        // Nothing more for ibsim to queue on the slot: it would be handed to the slot's
        // next client.
        let _ = self.data.shutdown(Shutdown::Write);
        // ibsim frees a client slot only on DISCONNECT (it has ten). A live ibsim answers
        // within microseconds; a stopped or dying one must not hold the closing process for
        // the control socket's 5 s.
        let _ = chan.sock.set_read_timeout(Some(DISCONNECT_WAIT));
        let _ = chan.exchange(ctl::DISCONNECT, &mut []);
        chan.slot = None;
    }

    fn set_issm(&self, on: bool) -> Result<()> {
        let mut d = (on as i32).to_ne_bytes();
        self.call(ctl::SET_ISSM, &mut d)
    }
}

/// A port of a simulated node, reached through ibsim's sockets: a packet [`Carrier`].
#[derive(Debug)]
pub struct IbsimCarrier {
    ctl: Arc<Ctl>,
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
    ///
    /// # Errors
    /// [`Error::Ibsim`] saying what happened: no ibsim at the socket (at once, without
    /// waiting), ibsim did not answer within [`IbsimOptions::connect_timeout`], it refused
    /// (unknown node, no free slot, an SM already there), or a socket call failed.
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
                &abstract_addr(&wire::client_ctl(&base, id))
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
                &abstract_addr(&wire::client_in(&base, id))
                    .map_err(|e| fail("bad socket name".into(), Some(e)))?,
            ) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(fail("cannot bind the client data socket".into(), Some(e))),
            };
            break (ctl, data, id);
        };
        let server = abstract_addr(&wire::server_ctl(&base))
            .map_err(|e| fail("bad socket name".into(), Some(e)))?;
        // One try: ibsim binds its control socket only once its fabric is built, and a
        // datagram socket takes requests as soon as it is bound, so a refusal means that no
        // ibsim has this name (not started, or gone); waiting would not change that.
        if let Err(e) = ctl_sock.connect_addr(&server) {
            let reason = if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) {
                format!(
                    "no ibsim is listening at @{base}:ctl: start ibsim with \
                     IBSIM_SOCKNAME={base}, or name the socket of the one running \
                     ({ENV_SOCKET}, IbsimOptions::socket)"
                )
            } else {
                format!("cannot reach ibsim's control socket @{base}:ctl")
            };
            return Err(fail(reason, Some(e)));
        }
        let ctl = Arc::new(Ctl {
            base: base.clone(),
            chan: Mutex::new(Chan {
                sock: ctl_sock,
                slot: None,
            }),
            data,
        });
        // Listed before it takes a slot, so that disconnect_all never misses one.
        {
            let mut live = live();
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&ctl));
        }

        let mut info = [0u8; wire::CLIENT_INFO_LEN];
        wire::ClientInfo::new(id, opts.issm, &node).encode_into(&mut info);
        let slot = ctl.attach(&mut info, opts.connect_timeout, &node)?;
        let node_id = wire::ClientInfo::decode(&info).node();
        let connected = abstract_addr(&wire::server_out(&base, slot))
            .and_then(|a| ctl.data.connect_addr(&a))
            .and_then(|()| ctl.data.set_nonblocking(true));
        // From here on, dropping `t` gives the slot back.
        let mut t = IbsimCarrier {
            ctl,
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
        self.ctl.call(ctl::GET_NODEINFO, &mut d)?;
        ibmad::attr::NodeInfo::parse(&d)
            .map_err(|e| self.ctl.err(format!("bad NodeInfo from ibsim: {e}"), None))
    }

    /// PortInfo of `port` (0 = the attached port), fresh from ibsim (not a snapshot).
    pub fn port_info(&self, port: u8) -> Result<ibmad::attr::PortInfo> {
        let mut d = [0u8; 64];
        d[0] = port;
        self.ctl.call(ctl::GET_PORTINFO, &mut d)?;
        ibmad::attr::PortInfo::parse(&d)
            .map_err(|e| self.ctl.err(format!("bad PortInfo from ibsim: {e}"), None))
    }

    /// The attached port's first 32 P_Keys.
    pub fn pkeys(&self) -> Result<Vec<u16>> {
        let mut d = [0u8; 64];
        self.ctl.call(ctl::GET_PKEYS, &mut d)?;
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
            match self.ctl.data.recv(&mut pkt) {
                Ok(n) => {
                    // Anything but a sim_request is ignored, as ibsim ignores it.
                    if let Some(r) = wire::Request::decode(&pkt[..n]) {
                        return Ok(Some(decode(r)));
                    }
                }
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
fn decode(r: wire::Request) -> Packet {
    Packet {
        mad: r.mad.to_vec(),
        addr: MadAddr::new(r.slid, r.sqp, 0, MadAddr::DEFAULT_QKEY),
        qp: r.dqp,
        status: r.status,
    }
}

/// A packet as a `struct sim_request`: dlid from the address (the permissive LID makes it
/// directed route, with slid 0xffff; otherwise slid 0 lets ibsim fill in the port's LID).
fn encode(p: &Packet) -> [u8; PACKET_LEN] {
    let dlid = p.addr.lid;
    let mut mad = [0u8; MAX_MAD];
    let n = p.mad.len().min(MAX_MAD);
    mad[..n].copy_from_slice(&p.mad[..n]);
    wire::Request {
        dlid,
        slid: if dlid == MadAddr::PERMISSIVE_LID {
            0xffff
        } else {
            0
        },
        dqp: p.addr.qpn,
        sqp: p.qp,
        status: 0,
        length: MAX_MAD as u64,
        mad,
    }
    .encode()
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
        let mut v = [0u8; wire::VENDOR_LEN];
        self.ctl.call(ctl::GET_VENDOR, &mut v)?;
        let wire::Vendor { hw_ver, fw_ver, .. } = wire::Vendor::decode(&v);
        // As umad2sim derives the port GUID: ibsim's NodeInfo carries no per-port GUID here.
        let port_guid = ni.node_guid + u64::from(pi.local_port_num);
        Ok(super::simulated_ca(
            CA_NAME,
            self.port,
            &ni,
            &pi,
            super::SimulatedVersions {
                hw: hw_ver,
                fw: fw_ver,
                port_guid,
                pkeys: self.pkeys()?,
            },
        ))
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
            match self.ctl.data.send(&pkt) {
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
        self.ctl.data.as_raw_fd()
    }

    fn issm(&self) -> Result<Issm> {
        self.ctl.set_issm(true)?;
        Ok(Issm::new(Box::new(IbsimIssm(self.ctl.clone()))))
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
        self.ctl.disconnect();
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    /// A socket base name no other test (or ibsim) uses.
    fn unique(what: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        format!(
            "umadrs-test-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// A stand-in for ibsim's control socket `<base>:ctl`.
    fn fake_ibsim(base: &str) -> UnixDatagram {
        UnixDatagram::bind_addr(&abstract_addr(&wire::server_ctl(base)).unwrap()).unwrap()
    }

    fn reason(e: &Error) -> String {
        match e {
            Error::Ibsim { reason, .. } => reason.clone(),
            other => panic!("not an ibsim error: {other:?}"),
        }
    }

    #[test]
    fn environment_values_that_are_not_utf8_are_refused() {
        let bad = OsStr::from_bytes(b"sim\xff");
        let e = IbsimOptions::from_vars(Some(bad), None).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains(r#"UMAD_IBSIM holds "sim\xFF", which is not UTF-8"#)
                && text.contains("unset it to use the kernel's InfiniBand devices"),
            "{text}"
        );
        let e = IbsimOptions::from_vars(Some(OsStr::new("sim")), Some(OsStr::from_bytes(b"\xfe")))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(r#"UMAD_IBSIM_NODE holds "\xFE", which is not UTF-8"#)
                && text.contains("unset it to attach at ibsim's default port"),
            "{text}"
        );
        // Without a socket the node is not looked at; empty values are unset ones.
        assert_eq!(
            IbsimOptions::from_vars(None, Some(OsStr::from_bytes(b"\xfe"))).unwrap(),
            None
        );
        assert_eq!(
            IbsimOptions::from_vars(Some(OsStr::new("")), None).unwrap(),
            None
        );
        assert_eq!(
            IbsimOptions::from_vars(Some(OsStr::new("sim")), Some(OsStr::new(""))).unwrap(),
            Some(IbsimOptions::new("sim"))
        );
        assert_eq!(
            IbsimOptions::from_vars(Some(OsStr::new("sim")), Some(OsStr::new("H-host3"))).unwrap(),
            Some(IbsimOptions::new("sim").node("H-host3"))
        );
    }

    /// Nothing bound at the socket (no ibsim, or one that just died): the error comes at
    /// once, not after the connect timeout (it came after 5 s of retrying).
    #[test]
    fn no_ibsim_at_the_socket_fails_at_once() {
        let never = unique("none");
        let died = unique("died");
        drop(fake_ibsim(&died));
        for base in [never, died] {
            let mut opts = IbsimOptions::new(base.clone());
            opts.connect_timeout = Duration::from_secs(30);
            let t0 = Instant::now();
            let e = IbsimCarrier::connect(&opts).unwrap_err();
            let took = t0.elapsed();
            assert!(took < Duration::from_millis(500), "{took:?}: {e}");
            let text = reason(&e);
            assert!(
                text.contains(&format!("no ibsim is listening at @{base}:ctl"))
                    && text.contains(&format!("IBSIM_SOCKNAME={base}")),
                "{text}"
            );
            assert_eq!(e.errno(), libc::ECONNREFUSED, "{e}");
        }
    }

    /// A process bound to the control socket that never answers (a stopped ibsim): after
    /// the connect timeout, an error that says so (it said "refused to attach").
    #[test]
    fn an_ibsim_that_does_not_answer_is_a_timeout_not_a_refusal() {
        let base = unique("stalled");
        let stalled = fake_ibsim(&base);
        let mut opts = IbsimOptions::new(base.clone()).node("H-host3");
        opts.connect_timeout = Duration::from_millis(300);
        let t0 = Instant::now();
        let e = IbsimCarrier::connect(&opts).unwrap_err();
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
            "{took:?}"
        );
        assert_eq!(
            reason(&e),
            format!(
                "ibsim at @{base}:ctl did not answer the connect within 300 ms: is it stopped \
                 (SIGSTOP) or overloaded?"
            )
        );
        assert_eq!(e.errno(), libc::ETIMEDOUT);
        // It did wait for an answer to a CONNECT naming the node.
        stalled.set_nonblocking(true).unwrap();
        let mut m = [0u8; 128];
        let n = stalled.recv(&mut m).expect("the CONNECT request");
        assert_eq!(n, CTL_LEN);
        assert_eq!(&m[8..12], &ctl::CONNECT.to_ne_bytes());
        assert_eq!(&m[wire::CTL_DATA + 12..wire::CTL_DATA + 19], b"H-host3");
        assert!(stalled.recv(&mut m).is_err(), "one request only");
    }

    /// ibsim answering SIM_ctl::ERROR is a refusal, reported at once.
    #[test]
    fn a_refusal_is_reported_as_one() {
        let base = unique("refusing");
        let server = fake_ibsim(&base);
        let answer = std::thread::spawn(move || {
            let mut m = [0u8; CTL_LEN];
            let (n, from) = server.recv_from(&mut m).unwrap();
            assert_eq!(n, CTL_LEN);
            m[8..12].copy_from_slice(&ctl::ERROR.to_ne_bytes());
            server.send_to_addr(&m, &from).unwrap();
        });
        let t0 = Instant::now();
        let e = IbsimCarrier::connect(&IbsimOptions::new(base).node("no-such-node")).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        answer.join().unwrap();
        assert_eq!(
            reason(&e),
            "ibsim refused to attach to no-such-node: unknown node, all 10 client slots taken, \
             or an SM already attached there"
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(Duration::from_secs(5)), "5 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_millis(300)), "300 ms");
        assert_eq!(human(Duration::from_micros(10)), "1 ms");
    }
}
