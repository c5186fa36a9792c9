//! The port's driver over a packet [`Carrier`]: the MAD layer's [`Engine`] runs under the
//! port's one lock, the port's reader role is the only one (application threads and the
//! progress thread take turns in it), and the progress thread works only while no caller
//! is inside.
//!
//! The fast path costs no thread hand-off: a thread that sends carries its packets itself,
//! and a thread waiting for a MAD reads the carrier itself while it holds the reader role,
//! spinning briefly ([`LayerConfig::spin`]) before it sleeps while requests are out, so a
//! pipelined client keeps pace with a fabric that answers one packet at a time. While
//! application threads read, the progress thread watches only its timers and wake-ups; it
//! takes the carrier back [`APP_READ_GRACE`] after the last application read ends, for the
//! engine's timers, ACKs and unsolicited MADs (which it leaves in the engine's queue for the
//! application, the port's descriptor readable meanwhile, as the kernel does).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Mux, ReadFor, Shared, GATHER};
use crate::layer::{Carrier, Engine, LayerConfig, Packet};
use crate::sys::{self, EventFlag};
use crate::transport::{poll_ms, Outgoing, Received};
use crate::{Error, Result};

/// Packets taken from the carrier per pass before the timers get their turn.
const BATCH: usize = 256;

/// How long after an application thread stopped reading the carrier the progress thread
/// leaves the carrier alone (a pipelined client is back within microseconds; waking the
/// progress thread for every packet in between would cost a context switch each).
pub const APP_READ_GRACE: Duration = Duration::from_millis(2);

/// What a carrier-backed port keeps beside the port's lock.
pub(super) struct Link {
    pub(super) carrier: Box<dyn Carrier>,
    /// Held while taking packets from the engine's outbox and carrying them, so they leave
    /// in order.
    carrying: Mutex<()>,
    /// How long a reader spins on the carrier before it sleeps ([`LayerConfig::spin`]).
    spin: Duration,
    /// How long a request may outlive its own budget: while its RMPP answer arrives, up to
    /// the reassembly limit (the configuration does not change).
    slack: Duration,
    /// Nudges the progress thread (earlier timer, shutdown).
    wake: EventFlag,
    /// Raised while a MAD is queued for the application (the port's descriptor).
    pub(super) readable: EventFlag,
}

/// The MAD layer's state in the port's [`Mux`].
pub(super) struct LayerState {
    pub(super) engine: Engine,
    stop: bool,
    /// Why the layer stopped working (carrier gone), reported by every call after it.
    failed: Option<(String, i32)>,
    /// Whether [`Link::readable`] is raised.
    flag_up: bool,
    /// Whether the progress thread has been nudged since it last went to sleep.
    nudged: bool,
    /// The progress thread leaves the carrier to application readers until then.
    app_until: Option<Instant>,
    /// The progress thread sleeps without a look-again time while an application thread
    /// reads: that thread must wake it when it stops reading.
    progress_asleep: bool,
    /// When the progress thread will next wake by itself (`None`: only when nudged or when
    /// the carrier has packets); a send whose timer is earlier nudges it.
    progress_wake: Option<Instant>,
}

impl std::fmt::Debug for LayerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayerState")
            .field("ready", &self.engine.ready().len())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("carrier", &self.carrier)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// The link and the layer's state for `carrier`.
    pub(super) fn new(carrier: Box<dyn Carrier>, cfg: LayerConfig) -> Result<(Link, LayerState)> {
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
        let state = LayerState {
            engine,
            stop: false,
            failed: None,
            flag_up: false,
            nudged: false,
            app_until: None,
            progress_asleep: false,
            progress_wake: None,
        };
        let link = Link {
            carrier,
            carrying: Mutex::new(()),
            spin: cfg.spin,
            slack: cfg.reassembly_timeout + Duration::from_secs(1),
            wake,
            readable,
        };
        Ok((link, state))
    }

    /// Brings the readable flag in line with the engine's queue.
    fn sync_flag(&self, st: &mut LayerState) {
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

    fn failure(&self, st: &LayerState) -> Option<Error> {
        st.failed.as_ref().map(|(reason, errno)| Error::Failed {
            ca: self.carrier.ca_name().to_string(),
            port: self.carrier.port_num(),
            reason: reason.clone(),
            errno: *errno,
        })
    }

    fn io_error(&self, what: &str, source: io::Error) -> Error {
        Error::Recv {
            ca: format!("{} ({what})", self.carrier.ca_name()),
            port: self.carrier.port_num(),
            source,
        }
    }

    /// Hands `outs` to the engine (their packets wait in its outbox), nudging the progress
    /// thread when a send's timer is earlier than its next wake-up. A MAD the engine refuses
    /// goes to `refused` with its index. Called with the port's lock held.
    pub(super) fn queue<'a>(
        &self,
        st: &mut LayerState,
        outs: impl Iterator<Item = Outgoing<'a>>,
        mut refused: impl FnMut(usize, Error),
    ) {
        let now = Instant::now();
        let mut earliest: Option<Instant> = None;
        for (i, out) in outs.enumerate() {
            if let Some(e) = self.failure(st) {
                refused(i, e);
                continue;
            }
            if let Err(e) = st.engine.send(now, &out) {
                refused(i, e);
                continue;
            }
            // The earliest timer this send can have set: the progress thread must wake for
            // it if it sleeps longer (an RMPP send's ACK timer may be shorter than the
            // timeout).
            let timer = if crate::agent::rmpp_active(out.mad) {
                Some(now)
            } else if out.timeout_ms > 0 {
                Some(now + Duration::from_millis(u64::from(out.timeout_ms)))
            } else {
                None
            };
            earliest = match (earliest, timer) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let late = match (earliest, st.progress_wake) {
            (Some(t), Some(w)) => t < w,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if late && !st.nudged {
            st.nudged = true;
            self.wake.raise();
        }
    }
}

impl Shared {
    /// The link of a carrier-backed port (callers only use this on one).
    fn link(&self) -> &Link {
        match &self.io {
            super::Io::Layer(l) => l,
            super::Io::Transport(_) => unreachable!("a carrier-backed port"),
        }
    }

    /// The layer's state, under the lock.
    pub(super) fn layer<'a>(mux: &'a mut MutexGuard<'_, Mux>) -> &'a mut LayerState {
        mux.layer
            .as_mut()
            .expect("a carrier-backed port has the layer's state")
    }

    /// Records that the carrier failed: every call after it reports `e`.
    fn fail(&self, e: &Error) {
        let link = self.link();
        let mut mux = self.lock();
        let st = Shared::layer(&mut mux);
        if st.failed.is_none() {
            st.failed = Some((e.to_string(), e.errno()));
        }
        link.sync_flag(st);
        // Always: a failure must reach every waiter, counted or not.
        self.changed.notify_all();
    }

    /// Carries what the engine's outbox holds, in order, from whichever thread calls it (one
    /// at a time). Returns `true` when the carrier has no room (`EAGAIN`: the peer is not
    /// reading): that is back-pressure, not a failure; what is left goes back to the front of
    /// the outbox, to be carried after the carrier has been drained (the progress thread is
    /// nudged to do it).
    pub(super) fn carry_packets(&self) -> Result<bool> {
        let link = self.link();
        loop {
            let _carrying = match link.carrying.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                // The holder looks at the outbox again after it lets go.
                Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
            };
            loop {
                let out = Shared::layer(&mut self.lock()).engine.take_outbox();
                if out.is_empty() {
                    break;
                }
                let mut out = out.into_iter();
                while let Some(p) = out.next() {
                    match link.carrier.send(&p) {
                        Ok(()) => {}
                        Err(e) if e.errno() == libc::EAGAIN => {
                            let mut left = vec![p];
                            left.extend(out);
                            let mut mux = self.lock();
                            let st = Shared::layer(&mut mux);
                            st.engine.requeue(left);
                            if !st.nudged {
                                st.nudged = true;
                                link.wake.raise();
                            }
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
            if !Shared::layer(&mut self.lock()).engine.has_outbox() {
                return Ok(false);
            }
        }
    }

    /// One pass of the reader: takes what the carrier holds (after `batch`, packets already
    /// taken), processes it, fires due timers and carries the outbox. Returns whether it
    /// found or sent anything (then another pass may find more).
    fn pass(&self, batch: &mut Vec<Packet>) -> Result<bool> {
        let link = self.link();
        while batch.len() < BATCH {
            match link.carrier.try_recv() {
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
            let mut mux = self.lock();
            let sleepers = mux.sleepers;
            let st = Shared::layer(&mut mux);
            let now = Instant::now();
            let before = st.engine.ready().len();
            for p in batch.drain(..) {
                st.engine.on_packet(now, p);
            }
            st.engine.on_timer(now);
            let more = st.engine.ready().len() != before;
            link.sync_flag(st);
            let outbox = st.engine.has_outbox();
            if more && sleepers > 0 {
                self.changed.notify_all();
            }
            if !outbox {
                return Ok(got);
            }
        }
        let blocked = self.carry_packets()?;
        Ok(got || !blocked)
    }

    /// The reader's turn on a carrier-backed port (the caller holds the port's reader role):
    /// passes over the carrier until a MAD is queued for the application, the layer fails,
    /// or `until`; then, under the lock, takes what `how` asks for: every queued MAD onto
    /// `batch` (routing), the first into `rx` if it fits in the capacity, or only whether
    /// one is there. Gives `rx`'s buffer back when it did not use it.
    pub(super) fn layer_read(
        &self,
        how: ReadFor,
        until: Instant,
        rx: Received,
        batch: &mut Vec<Received>,
    ) -> (Option<Vec<u8>>, Result<bool>) {
        if let Err(e) = self.layer_wait(until) {
            return (Some(rx.mad), Err(e));
        }
        let got = self.layer_take(&mut self.lock(), how, batch);
        (Some(rx.mad), got)
    }

    /// Under the lock, takes what `how` asks for from the MADs the engine holds for the
    /// application: every one onto `batch` (routing, at most [`GATHER`]), the first if it
    /// fits in the capacity (else [`Error::TooLong`], the MAD left queued), or only whether
    /// one is there. No I/O: a thread that does not hold the reader role may call it too.
    pub(super) fn layer_take(
        &self,
        mux: &mut Mux,
        how: ReadFor,
        batch: &mut Vec<Received>,
    ) -> Result<bool> {
        let link = self.link();
        let Some(st) = mux.layer.as_mut() else {
            return Ok(false);
        };
        let got = match how {
            ReadFor::Peek => Ok(!st.engine.ready().is_empty()),
            ReadFor::Fit(capacity) => {
                let len = st.engine.ready().front().map(|r| r.mad.len());
                match len {
                    Some(len) if len > capacity => Err(Error::TooLong {
                        ca: link.carrier.ca_name().to_string(),
                        port: link.carrier.port_num(),
                        needed: len,
                        capacity,
                    }),
                    Some(_) => {
                        batch.extend(st.engine.pop_ready());
                        Ok(false)
                    }
                    None => Ok(false),
                }
            }
            ReadFor::Route => {
                while batch.len() < GATHER {
                    match st.engine.pop_ready() {
                        Some(r) => batch.push(r),
                        None => break,
                    }
                }
                Ok(false)
            }
        };
        link.sync_flag(st);
        match (got, link.failure(st)) {
            (Ok(_), Some(e)) if batch.is_empty() => Err(e),
            (got, _) => got,
        }
    }

    /// Passes over the carrier until a MAD is queued for the application, the layer fails,
    /// or `until`.
    fn layer_wait(&self, until: Instant) -> Result<()> {
        let link = self.link();
        let mut batch = Vec::new();
        loop {
            {
                let mut mux = self.lock();
                let st = Shared::layer(&mut mux);
                if !st.engine.ready().is_empty() || st.failed.is_some() {
                    return Ok(());
                }
            }
            if self.pass(&mut batch)? {
                continue;
            }
            let (waiting, next) = {
                let mut mux = self.lock();
                let st = Shared::layer(&mut mux);
                if !st.engine.ready().is_empty() || st.failed.is_some() {
                    return Ok(());
                }
                (st.engine.awaiting(), st.engine.next_deadline())
            };
            let now = Instant::now();
            if until <= now {
                return Ok(());
            }
            // Requests are out: their answers come one by one, microseconds apart. Looking
            // again for a while is cheaper than sleeping and being woken for each.
            if waiting && !link.spin.is_zero() {
                let stop = now + link.spin;
                loop {
                    match link.carrier.try_recv() {
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
            let wake_at = next.map_or(until, |n| n.min(until));
            sys::poll_in(link.carrier.raw_fd(), poll_ms(Some(wake_at)))
                .map_err(|e| link.io_error("waiting for packets", e))?;
        }
    }

    /// After an application thread's turn as the reader, under the lock: the progress thread
    /// leaves the carrier alone for a grace period if the thread waited (it is likely back
    /// soon), and is woken if it sleeps without watching the carrier.
    pub(super) fn layer_read_ended(&self, mux: &mut Mux, waited: bool) {
        let Some(st) = mux.layer.as_mut() else {
            return;
        };
        let link = self.link();
        if waited {
            st.app_until = Some(Instant::now() + APP_READ_GRACE);
        }
        if st.progress_asleep && !st.nudged {
            st.nudged = true;
            link.wake.raise();
        }
    }

    /// Stops the progress thread (it returns at its next look).
    pub(super) fn layer_stop(&self) {
        let mut mux = self.lock();
        Shared::layer(&mut mux).stop = true;
        self.link().wake.raise();
    }

    /// The progress thread: while no application thread reads, drain, process, fire timers,
    /// carry, and sleep until the next event; while one does, watch only the timers and the
    /// wake-up flag.
    pub(super) fn layer_run(self: Arc<Self>) {
        if let Err(e) = self.layer_run_inner() {
            self.fail(&e);
        }
    }

    fn layer_run_inner(&self) -> Result<()> {
        let link = self.link();
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let read = {
                let mut mux = self.lock();
                let reading = mux.reading;
                let st = Shared::layer(&mut mux);
                if st.stop {
                    return Ok(());
                }
                let now = Instant::now();
                let app = st.app_until.is_some_and(|u| u > now);
                // Packets an application thread could not carry (no room) are taken care of
                // even while application threads read.
                let wanted = !app || st.engine.has_outbox();
                if wanted && !reading {
                    st.progress_wake = Some(now);
                    mux.reading = true;
                    true
                } else {
                    false
                }
            };
            if read {
                let busy = self.pass(&mut batch);
                let mut mux = self.lock();
                mux.reading = false;
                mux.reads = mux.reads.wrapping_add(1);
                self.wake(&mux);
                drop(mux);
                if busy? {
                    continue;
                }
            }
            let (watch, wake_at) = {
                let mut mux = self.lock();
                let reading = mux.reading;
                let st = Shared::layer(&mut mux);
                if st.stop {
                    return Ok(());
                }
                let now = Instant::now();
                // Whether to watch the carrier, and when to look again at the latest.
                let (watch, look_again) = if reading {
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
                st.progress_asleep = reading && look_again.is_none();
                let wake_at = match (st.engine.next_deadline(), look_again) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                st.progress_wake = wake_at;
                st.nudged = false;
                (watch, wake_at)
            };
            let nudged = if watch {
                sys::poll_in2(link.carrier.raw_fd(), link.wake.raw(), poll_ms(wake_at))
                    .map_err(|e| link.io_error("waiting for packets", e))?
                    .1
            } else {
                sys::poll_in(link.wake.raw(), poll_ms(wake_at))
                    .map_err(|e| link.io_error("waiting for a wake-up", e))?
            };
            if nudged {
                link.wake.lower();
            }
        }
    }

    /// Registers an agent with the engine.
    pub(super) fn layer_register(&self, spec: &crate::AgentSpec) -> Result<crate::AgentId> {
        Shared::layer(&mut self.lock()).engine.register(spec)
    }

    /// Unregisters an agent from the engine.
    pub(super) fn layer_unregister(&self, agent: crate::AgentId) -> Result<()> {
        let link = self.link();
        let mut mux = self.lock();
        let st = Shared::layer(&mut mux);
        st.engine.unregister(agent)?;
        link.sync_flag(st);
        Ok(())
    }

    /// Sends MADs through the engine and carries their packets (the calling thread does).
    /// Returns the MADs refused, by index.
    pub(super) fn layer_send<'a>(
        &self,
        outs: impl Iterator<Item = Outgoing<'a>>,
    ) -> (Vec<(usize, Error)>, Result<()>) {
        let mut refused = Vec::new();
        {
            let link = self.link();
            let mut mux = self.lock();
            let st = Shared::layer(&mut mux);
            link.queue(st, outs, |i, e| refused.push((i, e)));
        }
        (refused, self.carry_packets().map(|_| ()))
    }

    /// The MAD layer's counters.
    pub(super) fn layer_stats(&self) -> crate::layer::LayerStats {
        Shared::layer(&mut self.lock()).engine.stats()
    }

    /// How long a request may outlive its own budget in the engine: while its RMPP answer
    /// arrives, up to the reassembly limit.
    pub(super) fn layer_slack(&self) -> Duration {
        self.link().slack
    }
}
