//! [`MadLayer`]: the driver of the MAD layer's [`Engine`] over a [`Carrier`] — the lock, the
//! reader role, the progress thread, the outbox carried in order (see the [module docs](super)).

use std::fmt;
use std::io;
use std::os::unix::io::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Carrier, Engine, LayerConfig, LayerStats, Packet};
use crate::agent::{AgentId, AgentSpec};
use crate::device::Ca;
use crate::sys::{self, EventFlag};
use crate::transport::{deadline, poll_ms, Issm, Outgoing, Received, Transport, TransportKind};
use crate::{Error, Result};

/// Packets taken from the carrier per pass before the timers get their turn.
const BATCH: usize = 256;

/// How long after an application thread stopped reading the carrier the progress thread
/// leaves the carrier alone (a pipelined client is back within microseconds; waking the
/// progress thread for every packet in between would cost a context switch each).
pub const APP_READ_GRACE: Duration = Duration::from_millis(2);

struct State {
    engine: Engine,
    stop: bool,
    /// Why the layer stopped working (carrier gone), reported by every call after it.
    failed: Option<(String, i32)>,
    /// Whether [`Shared::readable`] is raised.
    flag_up: bool,
    /// Whether the progress thread has been nudged since it last went to sleep.
    nudged: bool,
    /// Someone (the progress thread or one application thread) is reading the carrier and
    /// processing what it reads; others wait on [`Shared::changed`].
    reading: bool,
    /// The progress thread leaves the carrier to application readers until then.
    app_until: Option<Instant>,
    /// The progress thread sleeps without a look-again time while an application thread
    /// reads: that thread must wake it when it stops reading.
    progress_asleep: bool,
    /// When the progress thread will next wake by itself (`None`: only when nudged or when
    /// the carrier has packets); a send whose timer is earlier nudges it.
    progress_wake: Option<Instant>,
    /// Application threads asleep on [`Shared::changed`]: the progress thread wakes them only
    /// when there are any (a futex wake is a system call even with nobody waiting).
    sleepers: usize,
}

struct Shared {
    carrier: Box<dyn Carrier>,
    state: Mutex<State>,
    /// Held while taking packets from the outbox and carrying them, so they leave in order.
    carrying: Mutex<()>,
    /// How long a reader spins on the carrier before it sleeps ([`LayerConfig::spin`]).
    spin: Duration,
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

    /// Records that the carrier failed: every call after it reports `e`.
    fn fail(&self, e: &Error) {
        let mut st = self.lock();
        if st.failed.is_none() {
            st.failed = Some((e.to_string(), e.errno()));
        }
        self.sync_flag(&mut st);
        // Always: a failure must reach every waiter, counted or not.
        self.changed.notify_all();
    }

    /// Carries what the outbox holds, in order, from whichever thread calls it (one at a
    /// time). Returns `true` when the carrier has no room (`EAGAIN`: the peer is not
    /// reading): that is back-pressure, not a failure; what is left goes back to the front
    /// of the outbox, to be carried after the carrier has been drained.
    fn flush(&self) -> Result<bool> {
        loop {
            let _carrying = match self.carrying.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                // The holder looks at the outbox again after it lets go.
                Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
            };
            loop {
                let out = self.lock().engine.take_outbox();
                if out.is_empty() {
                    break;
                }
                let mut out = out.into_iter();
                while let Some(p) = out.next() {
                    match self.carrier.send(&p) {
                        Ok(()) => {}
                        Err(e) if e.errno() == libc::EAGAIN => {
                            let mut left = vec![p];
                            left.extend(out);
                            self.lock().engine.requeue(left);
                            return Ok(true);
                        }
                        Err(e) => {
                            self.fail(&e);
                            return Err(e);
                        }
                    }
                }
            }
            drop(_carrying);
            // Packets queued while this thread held the lock were left to it.
            if !self.lock().engine.has_outbox() {
                return Ok(false);
            }
        }
    }

    /// One pass of the reader: takes what the carrier holds (after `batch`, packets already
    /// taken), processes it, fires due timers and carries the outbox. Returns whether it
    /// found or sent anything (then another pass may find more).
    fn pass(&self, batch: &mut Vec<Packet>) -> Result<bool> {
        while batch.len() < BATCH {
            match self.carrier.try_recv() {
                Ok(Some(p)) => batch.push(p),
                Ok(None) => break,
                Err(e) => {
                    self.fail(&e);
                    return Err(e);
                }
            }
        }
        let got = !batch.is_empty();
        {
            let mut st = self.lock();
            let now = Instant::now();
            let before = st.engine.ready().len();
            for p in batch.drain(..) {
                st.engine.on_packet(now, p);
            }
            st.engine.on_timer(now);
            if st.engine.ready().len() != before && st.sleepers > 0 {
                self.changed.notify_all();
            }
            self.sync_flag(&mut st);
            if !st.engine.has_outbox() {
                return Ok(got);
            }
        }
        let blocked = self.flush()?;
        Ok(got || !blocked)
    }

    /// Takes the reader's role if nobody has it.
    fn take_reading(&self, st: &mut State) -> bool {
        !std::mem::replace(&mut st.reading, true)
    }

    /// Gives the reader's role back, waking whoever waits for it or for what was read.
    fn end_reading(&self, st: &mut State) {
        st.reading = false;
        if st.progress_asleep && !st.nudged {
            // It sleeps without watching the carrier, until a timer: it must take over.
            st.nudged = true;
            self.wake.raise();
        }
        if st.sleepers > 0 {
            self.changed.notify_all();
        }
    }

    /// The progress thread: while no application thread reads, drain, process, fire timers,
    /// carry, and sleep until the next event; while one does, watch only the timers and the
    /// wake-up flag.
    fn run(&self) {
        if let Err(e) = self.run_inner() {
            self.fail(&e);
        }
    }

    fn run_inner(&self) -> Result<()> {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let read = {
                let mut st = self.lock();
                if st.stop {
                    return Ok(());
                }
                let now = Instant::now();
                let app = st.app_until.is_some_and(|u| u > now);
                // Packets an application thread could not carry (no room) are taken care of
                // even while application threads read.
                let wanted = !app || st.engine.has_outbox();
                if wanted && self.take_reading(&mut st) {
                    st.progress_wake = Some(now);
                    true
                } else {
                    false
                }
            };
            if read {
                let busy = self.pass(&mut batch);
                self.end_reading(&mut self.lock());
                if busy? {
                    continue;
                }
            }
            let (watch, wake_at) = {
                let mut st = self.lock();
                if st.stop {
                    return Ok(());
                }
                let now = Instant::now();
                // Whether to watch the carrier, and when to look again at the latest.
                let (watch, look_again) = if st.reading {
                    // An application thread reads. One that waits for answers comes back for
                    // more soon after it returns: look again a grace period later. One that
                    // waits for whatever comes may not: it wakes this thread when it stops.
                    (false, st.engine.awaiting().then_some(now + APP_READ_GRACE))
                } else {
                    match st.app_until.filter(|u| *u > now) {
                        Some(u) => (false, Some(u)),
                        None => (true, None),
                    }
                };
                st.progress_asleep = st.reading && look_again.is_none();
                let wake_at = match (st.engine.next_deadline(), look_again) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                st.progress_wake = wake_at;
                st.nudged = false;
                (watch, wake_at)
            };
            let nudged = if watch {
                sys::poll_in2(self.carrier.raw_fd(), self.wake.raw(), poll_ms(wake_at))
                    .map_err(|e| self.io_error("waiting for packets", e))?
                    .1
            } else {
                sys::poll_in(self.wake.raw(), poll_ms(wake_at))
                    .map_err(|e| self.io_error("waiting for a wake-up", e))?
            };
            if nudged {
                self.wake.lower();
            }
        }
    }

    /// Waits until a MAD is queued for the application (returning the lock with it at the
    /// front), the layer fails, or `until` (`Ok(None)`), reading the carrier itself when no
    /// other thread does.
    fn await_ready(&self, until: Option<Instant>) -> Result<Option<MutexGuard<'_, State>>> {
        // A zero-timeout look (an event loop's) does not keep the progress thread away from
        // the carrier: only a thread that waits is likely to come back soon.
        let waits = until.map_or(true, |u| u > Instant::now());
        let mut st = self.lock();
        loop {
            if !st.engine.ready().is_empty() {
                return Ok(Some(st));
            }
            if let Some(e) = self.failure(&st) {
                return Err(e);
            }
            if self.take_reading(&mut st) {
                drop(st);
                let read = self.read_for_app(until);
                st = self.lock();
                let now = Instant::now();
                if waits {
                    st.app_until = Some(now + APP_READ_GRACE);
                }
                self.end_reading(&mut st);
                read?;
                if st.engine.ready().is_empty()
                    && st.failed.is_none()
                    && until.is_some_and(|u| u <= now)
                {
                    return Ok(None);
                }
                continue;
            }
            st = match wait(&self.changed, st, until) {
                Some(st) => st,
                None => return Ok(None),
            };
        }
    }

    /// An application thread's reading (it holds the reader's role): passes over the
    /// carrier until a MAD is queued for the application, the layer fails, or `until`.
    fn read_for_app(&self, until: Option<Instant>) -> Result<()> {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            if self.pass(&mut batch)? {
                if !self.lock().engine.ready().is_empty() {
                    return Ok(());
                }
                continue;
            }
            let (waiting, next) = {
                let st = self.lock();
                if !st.engine.ready().is_empty() || st.failed.is_some() {
                    return Ok(());
                }
                (st.engine.awaiting(), st.engine.next_deadline())
            };
            let now = Instant::now();
            if until.is_some_and(|u| u <= now) {
                return Ok(());
            }
            // Requests are out: their answers come one by one, microseconds apart. Looking
            // again for a while is cheaper than sleeping and being woken for each.
            if waiting && !self.spin.is_zero() {
                let stop = now + self.spin;
                loop {
                    match self.carrier.try_recv() {
                        Ok(Some(p)) => {
                            batch.push(p);
                            break;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            self.fail(&e);
                            return Err(e);
                        }
                    }
                    if Instant::now() >= stop {
                        break;
                    }
                    std::hint::spin_loop();
                }
                if !batch.is_empty() {
                    continue;
                }
            }
            let wake_at = match (until, next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            sys::poll_in(self.carrier.raw_fd(), poll_ms(wake_at))
                .map_err(|e| self.io_error("waiting for packets", e))?;
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
                reading: false,
                app_until: None,
                progress_asleep: false,
                progress_wake: None,
                sleepers: 0,
            }),
            carrying: Mutex::new(()),
            spin: cfg.spin,
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
        self.queue(out)?;
        self.flush()
    }

    fn send_deferred(&self, out: &Outgoing<'_>) -> Result<()> {
        // Carried by the caller's flush, or by the progress thread when it next wakes (at
        // most APP_READ_GRACE later while application threads read, else now).
        self.queue(out)
    }

    fn flush(&self) -> Result<()> {
        // The calling thread carries the packets itself. Without room, the progress thread
        // drains the carrier and carries them when it can.
        if self.shared.flush()? {
            let mut st = self.shared.lock();
            if !st.nudged {
                st.nudged = true;
                self.shared.wake.raise();
            }
        }
        Ok(())
    }

    fn recv_into(
        &self,
        timeout: Option<Duration>,
        capacity: usize,
        into: &mut Received,
    ) -> Result<bool> {
        let Some(mut st) = self.shared.await_ready(deadline(timeout))? else {
            return Ok(false);
        };
        let len = st.engine.ready().front().map_or(0, |f| f.mad.len());
        if len > capacity {
            return Err(Error::TooLong {
                ca: self.ca_name().to_string(),
                port: self.port_num(),
                needed: len,
                capacity,
            });
        }
        let r = st.engine.pop_ready();
        self.shared.sync_flag(&mut st);
        Ok(crate::transport::fill(into, r))
    }

    fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        Ok(self.shared.await_ready(deadline(timeout))?.is_some())
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

impl MadLayer {
    /// Hands `out` to the engine (its packets wait in the outbox), nudging the progress
    /// thread when the send's timer is earlier than its next wake-up.
    fn queue(&self, out: &Outgoing<'_>) -> Result<()> {
        let nudge = {
            let mut st = self.shared.lock();
            if let Some(e) = self.shared.failure(&st) {
                return Err(e);
            }
            let now = Instant::now();
            st.engine.send(now, out)?;
            // The earliest timer this send can have set: the progress thread must wake for it
            // if it sleeps longer (an RMPP send's ACK timer may be shorter than the timeout).
            let timer = if crate::agent::rmpp_active(out.mad) {
                Some(now)
            } else if out.timeout_ms > 0 {
                Some(now + Duration::from_millis(u64::from(out.timeout_ms)))
            } else {
                None
            };
            let late = match (timer, st.progress_wake) {
                (Some(t), Some(w)) => t < w,
                (Some(_), None) => true,
                (None, _) => false,
            };
            let nudge = late && !st.nudged;
            st.nudged |= nudge;
            nudge
        };
        if nudge {
            self.shared.wake.raise();
        }
        Ok(())
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
