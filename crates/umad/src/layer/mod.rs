//! The user-space MAD layer: what the kernel's MAD layer does behind `ib_umad`, for
//! transports that carry bare packets.
//!
//! ```text
//!   Port (the driver: one lock, one reader role, the progress thread)
//!     ├── rpc::core::Core: flights, windows, TIDs, deadlines
//!     ├── routing: transactions, receive queue
//!     └── layer::Engine: agents, TIDs, timeouts/retries, RMPP
//!           └── Carrier: 256-byte packets (the native ibsim client; the in-process simulator)
//! ```
//!
//! A [`Carrier`] moves single 256-byte MADs with an address; the [`Engine`] puts the kernel's
//! semantics on top, as a sans-IO state machine (every call takes `now`; packets pile up in
//! its outbox). [`Port::from_carrier`](crate::Port::from_carrier) runs it under the port's
//! lock, so a port over a carrier behaves as one over `/dev/infiniband/umadN`: agents with
//! ids, whole RMPP messages of any length in both directions, requests that end in a response
//! or an `ETIMEDOUT` report. The port's progress thread makes progress on its own — it drains
//! the carrier, fires timers, sends ACKs and windows — while no thread is inside the port, as
//! the kernel does; the port's descriptor is an eventfd that polls readable exactly while a
//! MAD is queued for the application. The threads that use the port do the I/O otherwise
//! (see `port/layer.rs`): no thread hand-off on the fast path; the progress thread takes the
//! carrier back [`APP_READ_GRACE`] after the last application read ends.

use std::fmt;
use std::os::unix::io::RawFd;

use crate::addr::MadAddr;
use crate::device::Ca;
use crate::transport::Issm;
use crate::Result;

pub mod engine;
#[cfg(test)]
mod tests;

pub use crate::port::APP_READ_GRACE;
pub use engine::{Engine, LayerConfig, LayerStats};

/// One MAD on the wire, as a [`Carrier`] moves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The MAD (at most 256 bytes; carriers pad shorter ones).
    pub mad: Vec<u8>,
    /// The remote end: destination when sending, source when received.
    pub addr: MadAddr,
    /// The local QP: 0 (SMI) or 1 (GSI); the sending QP, or the one it arrived on.
    pub qp: u32,
    /// On receive: 0, or non-zero when the carrier hands back a packet of ours that it
    /// could not deliver (ibsim does so at once, with 110, for a dead route or an injected
    /// error).
    pub status: u32,
}

/// What carries single MAD packets for a port over the MAD layer ([`Port::from_carrier`](crate::Port::from_carrier)): implement it to plug in a fabric.
pub trait Carrier: Send + Sync + fmt::Debug {
    /// Name of the CA this carrier is attached to.
    fn ca_name(&self) -> &str;
    /// Port number on that CA.
    fn port_num(&self) -> u32;
    /// Describes the CA and the attached port.
    fn ca(&self) -> Result<Ca>;
    /// Becomes the port's subnet manager until the guard is dropped.
    fn issm(&self) -> Result<Issm>;
    /// Sends one packet. May wait briefly for room, never for an answer; when there is still
    /// no room, an error with errno `EAGAIN` makes the layer keep the packet and try again
    /// after draining `try_recv` (any other error ends the port). The layer calls `send`
    /// from one thread at a time and `try_recv` from one thread at a time (the two may run
    /// at once, on different threads), so a carrier that must read to make room may park
    /// what it read and hand it out through `try_recv`.
    fn send(&self, pkt: &Packet) -> Result<()>;
    /// Takes one arrived packet without waiting (`Ok(None)`: nothing there).
    fn try_recv(&self) -> Result<Option<Packet>>;
    /// A descriptor that polls readable when [`try_recv`](Carrier::try_recv) may find a packet.
    fn raw_fd(&self) -> RawFd;
    /// What carries the packets, in one word (`"ibsim"`), for [`TransportKind::MadLayer`](crate::transport::TransportKind::MadLayer).
    fn name(&self) -> &'static str {
        "carrier"
    }
}
