//! The seam between [`Port`](crate::Port) and what carries the MADs.
//!
//! Two transports are built in: [`kernel`] (the `ib_umad` character devices, also what ibsim's
//! `libumad2sim.so` shim intercepts) and the user-space MAD layer
//! (the [`Engine`](crate::layer::Engine) under [`Port::from_carrier`](crate::Port::from_carrier)) over a packet carrier such as [`ibsim`](crate::carrier::ibsim) (a native
//! client of the ibsim simulator's socket protocol, no LD_PRELOAD). Both give the kernel's
//! semantics: agents with ids, the TID's upper 32 bits owned by the transport, send timeouts
//! and retries that end in a receive with status `ETIMEDOUT`, RMPP for RMPP agents.

use std::fmt;
use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::device::Ca;
use crate::Result;

pub mod kernel;

/// `ETIMEDOUT`: the status of a received MAD that reports a send which got no response.
pub const STATUS_TIMEOUT: u32 = libc::ETIMEDOUT as u32;
/// `ECONNABORTED`: the status of a received MAD that reports a request whose RMPP transfer the
/// peer stopped or aborted (only the user-space MAD layer reports this; the kernel reports
/// nothing for such a send).
pub const STATUS_ABORTED: u32 = libc::ECONNABORTED as u32;

/// Which kind of transport a [`Port`](crate::Port) is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// The kernel's `ib_umad` device (`/dev/infiniband/umadN`; also what ibsim's umad2sim
    /// shim intercepts): the kernel does timeouts, retries and RMPP.
    Kernel,
    /// The user-space MAD layer over a packet carrier (e.g. `"ibsim"`: a native client of the
    /// simulator, chosen by `UMAD_IBSIM`).
    MadLayer {
        /// What carries the packets.
        carrier: &'static str,
    },
    /// Another transport (a test double, an application's own).
    Other,
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportKind::Kernel => f.write_str("kernel umad device"),
            TransportKind::MadLayer { carrier } => write!(f, "user-space MAD layer over {carrier}"),
            TransportKind::Other => f.write_str("custom transport"),
        }
    }
}

/// A MAD taken off a port. `Received::default()` is an empty one to receive into
/// ([`Port::recv_into`](crate::Port::recv_into)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Received {
    /// The agent it was delivered to.
    pub agent: AgentId,
    /// 0, or [`STATUS_TIMEOUT`] when this reports a request that got no response (or
    /// [`STATUS_ABORTED`] when its RMPP transfer was stopped or aborted by the peer); the MAD is
    /// then the request's common header.
    #[doc(alias = "umad_status")]
    pub status: u32,
    /// Where it came from.
    #[doc(alias = "umad_get_mad_addr")]
    pub addr: MadAddr,
    /// The MAD (for RMPP: the whole reassembled message).
    #[doc(alias = "umad_get_mad")]
    pub mad: Vec<u8>,
}

impl Received {
    /// Whether this reports a send that timed out.
    pub fn is_timeout(&self) -> bool {
        self.status == STATUS_TIMEOUT
    }
}

/// A MAD to send.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The sending agent.
    pub agent: AgentId,
    /// The MAD bytes (36 to 256 bytes, or longer for an RMPP agent's RMPP-ACTIVE message;
    /// see [`AgentSpec::check_send`](crate::AgentSpec::check_send)).
    pub mad: &'a [u8],
    /// Destination.
    pub addr: MadAddr,
    /// Milliseconds to wait for the response to a request; 0 = no response expected.
    pub timeout_ms: u32,
    /// How many times to resend a request that got no response in time.
    pub retries: u32,
}

/// What carries MADs for a [`Port`](crate::Port). Implement it to plug in another fabric
/// (an in-process simulator, a recorder, a fault injector).
pub trait Transport: Send + Sync + fmt::Debug {
    /// Which kind of transport this is.
    fn kind(&self) -> TransportKind {
        TransportKind::Other
    }
    /// Name of the CA this transport is attached to.
    fn ca_name(&self) -> &str;
    /// Port number on that CA.
    fn port_num(&self) -> u32;
    /// Describes the CA and the attached port.
    fn ca(&self) -> Result<Ca>;
    /// Registers an agent.
    fn register(&self, spec: &AgentSpec) -> Result<AgentId>;
    /// Unregisters an agent.
    fn unregister(&self, agent: AgentId) -> Result<()>;
    /// Sends one MAD.
    fn send(&self, out: &Outgoing<'_>) -> Result<()>;
    /// Takes the next MAD, waiting up to `timeout` (`None`: forever). `Ok(None)` when none came.
    fn recv(&self, timeout: Option<Duration>) -> Result<Option<Received>> {
        self.recv_fit(timeout, usize::MAX)
    }
    /// Like [`recv`](Transport::recv), but a MAD longer than `capacity` bytes is not taken:
    /// it stays queued and the call fails with [`Error::TooLong`](crate::Error::TooLong)
    /// naming its length (the kernel's `ENOSPC` contract that `umad_recv` passes on).
    fn recv_fit(&self, timeout: Option<Duration>, capacity: usize) -> Result<Option<Received>> {
        let mut r = Received::default();
        Ok(self.recv_into(timeout, capacity, &mut r)?.then_some(r))
    }
    /// The one receive a transport implements: like [`recv_fit`](Transport::recv_fit), but
    /// into `into`, whose MAD buffer is reused (`Ok(true)`: a MAD came and `into` holds it;
    /// `Ok(false)`: none came, and `into`'s contents are unspecified). A transport that reads
    /// into the buffer allocates nothing per MAD once it has room; one that hands out owned
    /// MADs stores its own (see [`fill`]).
    fn recv_into(
        &self,
        timeout: Option<Duration>,
        capacity: usize,
        into: &mut Received,
    ) -> Result<bool>;
    /// Waits until a MAD can be received, up to `timeout` (`None`: forever).
    fn poll(&self, timeout: Option<Duration>) -> Result<bool>;
    /// A descriptor that becomes readable when MADs arrive, for event loops.
    fn raw_fd(&self) -> RawFd;
    /// Becomes the port's subnet manager (sets PortInfo.CapabilityMask.IsSM) until the guard
    /// is dropped.
    fn issm(&self) -> Result<Issm>;
}

/// Puts what an owned-MAD receive got into `into`: whether there was one (for transports
/// whose queue holds [`Received`]s, in their [`Transport::recv_into`]).
pub fn fill(into: &mut Received, got: Option<Received>) -> bool {
    match got {
        Some(r) => {
            *into = r;
            true
        }
        None => false,
    }
}

/// While alive, the port advertises IsSM; dropping it clears the bit.
#[doc(alias = "umad_get_issm_path")]
pub struct Issm {
    _held: Box<dyn Send + Sync>,
}

impl Issm {
    /// Wraps whatever keeps IsSM set (an open `issmN` fd, an ibsim flag reset on drop).
    pub fn new(held: Box<dyn Send + Sync>) -> Issm {
        Issm { _held: held }
    }
}

impl fmt::Debug for Issm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Issm")
    }
}

/// A deadline for `timeout` from now (`None` = never).
pub(crate) fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// A timeout in milliseconds, rounded up, for `poll` (-1 = forever): what [`poll_ms`] gives
/// for the deadline `timeout` from now, without reading the clock.
pub(crate) fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => t.as_micros().div_ceil(1000).min(libc::c_int::MAX as u128) as libc::c_int,
    }
}

/// Milliseconds left until `deadline`, rounded up, for `poll` (-1 = forever).
pub(crate) fn poll_ms(deadline: Option<Instant>) -> libc::c_int {
    match deadline {
        None => -1,
        Some(d) => timeout_ms(Some(d.saturating_duration_since(Instant::now()))),
    }
}
