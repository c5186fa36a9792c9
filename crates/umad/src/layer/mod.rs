//! The user-space MAD layer: what the kernel's MAD layer does behind `ib_umad`, for
//! transports that carry bare packets.
//!
//! ```text
//!   Port ── MadLayer (Transport) ── Engine: agents, TIDs, timeouts/retries, RMPP
//!                 │  progress thread: reads packets, fires timers, sends ACKs
//!                 └── Carrier: 256-byte packets (native ibsim client; later the in-process sim)
//! ```
//!
//! A [`Carrier`] moves single 256-byte MADs with an address; [`MadLayer`] puts the kernel's
//! semantics on top (see [`engine`]) and is a [`Transport`], so a [`Port`](crate::Port)
//! over it behaves as one over `/dev/infiniband/umadN`: agents with ids, whole RMPP messages
//! of any length in both directions, requests that end in a response or an `ETIMEDOUT`
//! report. A thread per layer makes progress on its own — it drains the carrier, fires
//! timers, sends ACKs and windows — while the application is not inside `recv`, as the
//! kernel does. Its [`raw_fd`](Transport::raw_fd) is an eventfd that polls readable exactly
//! while a MAD is queued for the application.

use std::fmt;
use std::io;
use std::os::unix::io::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::device::Ca;
use crate::sys::{self, EventFlag};
use crate::transport::{deadline, poll_ms, Issm, Outgoing, Received, Transport, TransportKind};
use crate::{Error, Result};

pub mod engine;
#[cfg(test)]
mod tests;

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

/// What carries single MAD packets for a [`MadLayer`]: implement it to plug in a fabric.
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
    /// after draining `try_recv` (any other error ends the port). The layer calls
    /// `send` and `try_recv` from its progress thread only, so a carrier that must read to
    /// make room may park what it read and hand it out through `try_recv`.
    fn send(&self, pkt: &Packet) -> Result<()>;
    /// Takes one arrived packet without waiting (`Ok(None)`: nothing there).
    fn try_recv(&self) -> Result<Option<Packet>>;
    /// A descriptor that polls readable when [`try_recv`](Carrier::try_recv) may find a packet.
    fn raw_fd(&self) -> RawFd;
    /// What carries the packets, in one word (`"ibsim"`), for [`TransportKind::MadLayer`].
    fn name(&self) -> &'static str {
        "carrier"
    }
}

/// Packets taken from the carrier per pass before the timers get their turn.
const BATCH: usize = 256;

struct State {
    engine: Engine,
    stop: bool,
    /// Why the layer stopped working (carrier gone), reported by every call after it.
    failed: Option<(String, i32)>,
    /// Whether [`Shared::readable`] is raised.
    flag_up: bool,
    /// Whether the progress thread has been nudged since it last took the outbox.
    nudged: bool,
    /// Application threads asleep on [`Shared::changed`]: the progress thread wakes them only
    /// when there are any (a futex wake is a system call even with nobody waiting).
    sleepers: usize,
}

struct Shared {
    carrier: Box<dyn Carrier>,
    state: Mutex<State>,
    /// Signalled whenever the application's queue or the failure state changes.
    changed: Condvar,
    /// Nudges the progress thread (earlier timer, shutdown).
    wake: EventFlag,
    /// Raised while a MAD is queued for the application.
    readable: EventFlag,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Brings the readable flag in line with the queue.
    fn sync_flag(&self, st: &mut State) {
        let want = !st.engine.ready().is_empty() || st.failed.is_some();
        if want != st.flag_up {
            if want {
                self.readable.raise();
            } else {
                self.readable.lower();
            }
            st.flag_up = want;
        }
    }

    fn failure(&self, st: &State) -> Option<Error> {
        st.failed.as_ref().map(|(reason, errno)| Error::Failed {
            ca: self.carrier.ca_name().to_string(),
            port: self.carrier.port_num(),
            reason: reason.clone(),
            errno: *errno,
        })
    }

    /// Sends `out` in order. A carrier with no room (`EAGAIN`: the peer is not reading) is
    /// back-pressure, not a failure: what is left goes back to the front of the outbox for the
    /// next pass, after the carrier has been drained.
    fn carry(&self, out: Vec<Packet>) -> Result<()> {
        let mut out = out.into_iter();
        while let Some(p) = out.next() {
            match self.carrier.send(&p) {
                Ok(()) => {}
                Err(e) if e.errno() == libc::EAGAIN => {
                    let mut left = vec![p];
                    left.extend(out);
                    self.lock().engine.requeue(left);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The progress thread: drain, process, fire timers, carry, sleep until the next event.
    fn run(&self) {
        if let Err(e) = self.run_inner() {
            let mut st = self.lock();
            st.failed = Some((e.to_string(), e.errno()));
            self.sync_flag(&mut st);
            // Always: a failure must reach every waiter, counted or not.
            self.changed.notify_all();
        }
    }

    fn run_inner(&self) -> Result<()> {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            while batch.len() < BATCH {
                match self.carrier.try_recv()? {
                    Some(p) => batch.push(p),
                    None => break,
                }
            }
            let got = !batch.is_empty();
            let (out, next) = {
                let mut st = self.lock();
                if st.stop {
                    return Ok(());
                }
                let now = Instant::now();
                let before = st.engine.ready().len();
                for p in batch.drain(..) {
                    st.engine.on_packet(now, p);
                }
                st.engine.on_timer(now);
                let out = st.engine.take_outbox();
                st.nudged = false;
                let next = st.engine.next_deadline();
                if st.engine.ready().len() != before && st.sleepers > 0 {
                    self.changed.notify_all();
                }
                self.sync_flag(&mut st);
                (out, next)
            };
            let sent = !out.is_empty();
            self.carry(out)?;
            let sent = sent || self.lock().engine.has_outbox();
            if got || sent {
                // Sending may have parked arrived packets in the carrier: look again first.
                continue;
            }
            let (_, nudged) = sys::poll_in2(self.carrier.raw_fd(), self.wake.raw(), poll_ms(next))
                .map_err(|e| self.io_error("waiting for packets", e))?;
            if nudged {
                self.wake.lower();
            }
        }
    }

    fn io_error(&self, what: &str, source: io::Error) -> Error {
        Error::Recv {
            ca: format!("{} ({what})", self.carrier.ca_name()),
            port: self.carrier.port_num(),
            source,
        }
    }
}

/// A [`Transport`] that runs the user-space MAD layer over a [`Carrier`].
pub struct MadLayer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for MadLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MadLayer")
            .field("carrier", &self.shared.carrier)
            .finish_non_exhaustive()
    }
}

impl MadLayer {
    /// Starts the MAD layer (and its progress thread) over `carrier`.
    pub fn new(carrier: Box<dyn Carrier>, cfg: LayerConfig) -> Result<MadLayer> {
        let flag = |what: &str| {
            EventFlag::new().map_err(|e| Error::Open {
                ca: carrier.ca_name().to_string(),
                port: carrier.port_num(),
                path: format!("eventfd ({what})").into(),
                source: e,
            })
        };
        let wake = flag("MAD layer wake-up")?;
        let readable = flag("MAD layer queue")?;
        let engine = Engine::new(cfg, carrier.ca_name(), carrier.port_num());
        let shared = Arc::new(Shared {
            carrier,
            state: Mutex::new(State {
                engine,
                stop: false,
                failed: None,
                flag_up: false,
                nudged: false,
                sleepers: 0,
            }),
            changed: Condvar::new(),
            wake,
            readable,
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("umad-mad-layer".into())
            .spawn(move || s.run())
            .map_err(|e| Error::Failed {
                ca: shared.carrier.ca_name().to_string(),
                port: shared.carrier.port_num(),
                reason: format!("cannot start the MAD layer's thread: {e}"),
                errno: e.raw_os_error().unwrap_or(libc::EAGAIN),
            })?;
        Ok(MadLayer {
            shared,
            thread: Some(thread),
        })
    }

    /// The carrier underneath.
    pub fn carrier(&self) -> &dyn Carrier {
        &*self.shared.carrier
    }

    /// The layer's counters (drops, segments, retransmissions).
    pub fn stats(&self) -> LayerStats {
        self.shared.lock().engine.stats()
    }
}

impl Drop for MadLayer {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.raise();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Transport for MadLayer {
    fn kind(&self) -> TransportKind {
        TransportKind::MadLayer {
            carrier: self.shared.carrier.name(),
        }
    }
    fn ca_name(&self) -> &str {
        self.shared.carrier.ca_name()
    }

    fn port_num(&self) -> u32 {
        self.shared.carrier.port_num()
    }

    fn ca(&self) -> Result<Ca> {
        self.shared.carrier.ca()
    }

    fn register(&self, spec: &AgentSpec) -> Result<AgentId> {
        self.shared.lock().engine.register(spec)
    }

    fn unregister(&self, agent: AgentId) -> Result<()> {
        let mut st = self.shared.lock();
        st.engine.unregister(agent)?;
        self.shared.sync_flag(&mut st);
        Ok(())
    }

    fn send(&self, out: &Outgoing<'_>) -> Result<()> {
        let mut st = self.shared.lock();
        if let Some(e) = self.shared.failure(&st) {
            return Err(e);
        }
        st.engine.send(Instant::now(), out)?;
        // The progress thread does all carrier I/O: hand it the packets (and the new timer).
        if !st.nudged {
            st.nudged = true;
            self.shared.wake.raise();
        }
        Ok(())
    }

    fn recv_fit(&self, timeout: Option<Duration>, capacity: usize) -> Result<Option<Received>> {
        let until = deadline(timeout);
        let mut st = self.shared.lock();
        loop {
            if let Some(front) = st.engine.ready().front() {
                if front.mad.len() > capacity {
                    return Err(Error::TooLong {
                        ca: self.ca_name().to_string(),
                        port: self.port_num(),
                        needed: front.mad.len(),
                        capacity,
                    });
                }
                let r = st.engine.ready().pop_front();
                self.shared.sync_flag(&mut st);
                return Ok(r);
            }
            if let Some(e) = self.shared.failure(&st) {
                return Err(e);
            }
            st = match wait(&self.shared.changed, st, until) {
                Some(st) => st,
                None => return Ok(None),
            };
        }
    }

    fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        let until = deadline(timeout);
        let mut st = self.shared.lock();
        loop {
            if !st.engine.ready().is_empty() {
                return Ok(true);
            }
            if let Some(e) = self.shared.failure(&st) {
                return Err(e);
            }
            st = match wait(&self.shared.changed, st, until) {
                Some(st) => st,
                None => return Ok(false),
            };
        }
    }

    fn raw_fd(&self) -> RawFd {
        self.shared.readable.raw()
    }

    fn transact_slack(&self) -> Duration {
        // The engine ends every request itself (reply, report or the reassembly limit), and
        // keeps one alive while its RMPP answer arrives: give it that long.
        let cfg = *self.shared.lock().engine.config();
        cfg.reassembly_timeout + Duration::from_secs(1)
    }

    fn issm(&self) -> Result<Issm> {
        self.shared.carrier.issm()
    }
}

/// Waits on `cv` until `until` (`None`: forever), counted in [`State::sleepers`]; `None` when
/// the time is up.
fn wait<'a>(
    cv: &Condvar,
    mut st: MutexGuard<'a, State>,
    until: Option<Instant>,
) -> Option<MutexGuard<'a, State>> {
    let left = match until {
        None => None,
        Some(u) => {
            let left = u.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            Some(left)
        }
    };
    st.sleepers += 1;
    let mut st = match left {
        None => cv.wait(st).unwrap_or_else(|p| p.into_inner()),
        Some(l) => cv.wait_timeout(st, l).unwrap_or_else(|p| p.into_inner()).0,
    };
    st.sleepers -= 1;
    Some(st)
}
