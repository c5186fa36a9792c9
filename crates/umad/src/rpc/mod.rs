//! The transaction engine: many requests in flight on one [`Port`], each ending exactly once.
//!
//! [`Rpc`] takes requests ([`Request`]: a MAD, where to send it, a timeout and retries) and
//! hands back [`Completion`]s in the order they complete. It does what every tool that keeps
//! more than one MAD in flight otherwise writes by hand:
//!
//! * registers one client agent per management class and version, by itself (RMPP for the
//!   RMPP classes, so an SA GetTable answer arrives whole);
//! * allocates the TIDs (the low 32 bits, which the sender owns) and matches responses on
//!   agent and TID;
//! * keeps at most [`Window::total`] requests in flight, and at most
//!   [`Window::per_destination`] to any one destination (a LID, or one directed-route path);
//!   the rest wait, per destination, and go out as answers come back;
//! * enforces every request's budget — `timeout × (retries + 1)` plus the transport's slack —
//!   in user space as well, so a request ends even when a MAD is lost without a trace
//!   (ibsim never times out a request that a peer ignores).
//!
//! [`Rpc`] is a cheap handle (`Clone + Send + Sync`): any number of threads may submit and
//! collect at once. Collecting is shared like the port's receiving: one thread at a time reads
//! for everyone and routes what it read. [`Rpc::call`] waits for its own request only;
//! [`Rpc::next`] returns whatever finished first among the requests that no `call` waits for.
//!
//! # The default window
//!
//! [`Window::DEFAULT`] is 32 in flight, 16 per destination. On ibsim, throughput stops
//! growing past about 8 in flight and ibsim stalls at about 300 unread replies (1,024 in
//! flight hang C and Rust clients alike under umad2sim); on hardware, an SMA or the SA
//! answers a handful of MADs per destination at a time. 16–64 is past the knee everywhere
//! and safe on every transport.
//!
//! # Watching the MADs
//!
//! [`Rpc::set_observer`] installs a callback that sees every MAD the engine hands to the
//! port and every MAD it reads for its agents ([`MadEvent`]), for debug dumps such as
//! libibmad's `_do_madrpc` ones at `ibdebug > 1`. Without one the engine only tests an
//! `Option` per MAD.
//!
//! # Example: pipelined NodeInfo
//!
//! ```no_run
//! use std::time::Duration;
//! use ibmad::{attr, DrPath, Method, NodeInfo, Smp};
//! use umad::rpc::{Outcome, Request, Rpc};
//! use umad::{MadAddr, Port};
//!
//! let rpc = Rpc::new(Port::open_smi(None, 0)?);
//! for hop in 1..=8u8 {
//!     let path = DrPath::from_hops(&[hop])?;
//!     let smp = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 0, &path);
//!     rpc.submit(Request::new(smp, MadAddr::directed_route()).timeout(Duration::from_millis(100)))?;
//! }
//! while let Some(done) = rpc.next(None)? {
//!     if let Outcome::Response(r) = &done.outcome {
//!         let info = NodeInfo::parse(Smp::new_checked(&r.mad[..])?.data())?;
//!         println!("{:#018x}", info.node_guid);
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::hash::{FastMap as HashMap, FastSet as HashSet};
use crate::port::Port;
use crate::transport::{deadline, STATUS_ABORTED, STATUS_TIMEOUT};
use crate::{Error, Result};

#[cfg(feature = "async")]
mod future;
#[cfg(feature = "async")]
pub use future::CallFuture;
#[cfg(all(test, feature = "async"))]
mod block_on;
#[cfg(test)]
mod tests;
mod typed;

pub use typed::Target;

/// How many requests an [`Rpc`] keeps in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// At most this many requests in flight in all (at least 1).
    pub total: usize,
    /// At most this many in flight to one destination: a LID, or one directed-route path
    /// (at least 1).
    pub per_destination: usize,
}

impl Window {
    /// 32 in flight, 16 per destination: past the throughput knee, safe on every transport
    /// (see the [module docs](self)).
    pub const DEFAULT: Window = Window {
        total: 32,
        per_destination: 16,
    };

    /// `n` in flight, also to a single destination (C's `-o n`: one window for all).
    pub fn of(n: usize) -> Window {
        Window {
            total: n.max(1),
            per_destination: n.max(1),
        }
    }
}

impl Default for Window {
    fn default() -> Window {
        Window::DEFAULT
    }
}

/// The timeout of one attempt when a [`Request`] does not say (libibmad's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// The retries when a [`Request`] does not say (libibmad's default).
pub const DEFAULT_RETRIES: u32 = 3;
/// At most this many submitted requests wait for room in the window; [`Rpc::submit`] beyond
/// it first collects answers until there is room again.
pub const MAX_QUEUED: usize = 65536;

/// One request for an [`Rpc`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The MAD (at least the 24-byte header; class and class version are taken from it). The
    /// engine overwrites the low 32 bits of its TID.
    pub mad: Vec<u8>,
    /// Where to send it.
    pub addr: MadAddr,
    /// How long each attempt waits for the response.
    pub timeout: Duration,
    /// How many more attempts after the first.
    pub retries: u32,
}

impl Request {
    /// A request with the default timeout ([`DEFAULT_TIMEOUT`]) and retries
    /// ([`DEFAULT_RETRIES`]).
    pub fn new(mad: impl Into<Vec<u8>>, addr: MadAddr) -> Request {
        Request {
            mad: mad.into(),
            addr,
            timeout: DEFAULT_TIMEOUT,
            retries: DEFAULT_RETRIES,
        }
    }

    /// The same request with another timeout per attempt.
    pub fn timeout(mut self, timeout: Duration) -> Request {
        self.timeout = timeout;
        self
    }

    /// The same request with another number of retries.
    pub fn retries(mut self, retries: u32) -> Request {
        self.retries = retries;
        self
    }

    /// The management class and class version in the MAD header.
    fn class(&self) -> (u8, u8) {
        (self.mad[1], self.mad[2])
    }

    /// The destination the per-destination window counts: the LID, or for a directed-route
    /// SMP its whole initial path (and the LIDs around it).
    fn destination(&self) -> Destination {
        let smp = ibmad::Smp::new_checked(&self.mad[..]).ok();
        match smp.filter(|s| s.is_directed_route()) {
            Some(s) => {
                let hops = usize::from(s.hop_count()).min(63);
                let mut path = [0u8; 64];
                path[..=hops].copy_from_slice(&s.initial_path()[..=hops]);
                Destination::Dr {
                    lid: self.addr.lid,
                    dr: (s.dr_slid(), s.dr_dlid()),
                    path,
                }
            }
            None => Destination::Lid(self.addr.lid),
        }
    }

    /// A short description of the request for error messages: method, attribute, where to.
    pub fn describe(&self) -> String {
        let Ok(m) = ibmad::Mad::new_checked(&self.mad[..]) else {
            return format!("a {}-byte MAD", self.mad.len());
        };
        let class = m.mgmt_class();
        let method = ibmad::method_str(u8::from(class), u8::from(m.method()));
        let attr = ibmad::attribute_str(u8::from(class), m.attr_id());
        let to = match ibmad::Smp::new_checked(&self.mad[..]) {
            Ok(s) if s.is_directed_route() => match s.dr_path() {
                Ok(p) => format!("via DR path {p}"),
                Err(_) => "via a bad DR path".to_string(),
            },
            _ => format!("to LID {}", self.addr.lid),
        };
        format!(
            "{method} {attr} (attribute modifier {:#x}) {to}",
            m.attr_mod()
        )
    }
}

/// What an observer (see [`Rpc::set_observer`]) is shown.
#[derive(Debug, Clone, Copy)]
pub enum MadEvent<'a> {
    /// A request about to be handed to the port (its TID already set). Sent once, however
    /// often the transport then retries it.
    Sending {
        /// The request's MAD.
        mad: &'a [u8],
        /// Where it goes.
        addr: &'a MadAddr,
    },
    /// A MAD read for the engine's agents, before it is matched: a response, a stray, or a
    /// request the transport gave back with a failure `status` (e.g. `ETIMEDOUT`).
    Received {
        /// The MAD (for RMPP: the whole reassembled message).
        mad: &'a [u8],
        /// Where it came from.
        addr: &'a MadAddr,
        /// The transport's status: 0, or an errno.
        status: u32,
    },
}

/// A callback that watches an engine's MADs (see [`Rpc::set_observer`]). It runs with the
/// engine's lock held: it must not call back into the same [`Rpc`].
pub type Observer = Arc<dyn Fn(&MadEvent<'_>) + Send + Sync>;

/// Identifies a submitted request; its [`Completion`] carries the same ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

impl fmt::Display for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The response MAD (for RMPP: the whole reassembled message).
    pub mad: Vec<u8>,
    /// Where it came from.
    pub addr: MadAddr,
}

/// How a request ended.
#[derive(Debug)]
pub enum Outcome {
    /// It got its response (whose MAD status may still be an error: check it).
    Response(Response),
    /// No response within the whole budget (every retry timed out).
    Timeout,
    /// The peer stopped or aborted the RMPP transfer of the response.
    Aborted,
    /// The request could not be sent, or the transport reported another failure.
    Failed(Error),
}

impl Outcome {
    /// The response, if there is one.
    pub fn response(&self) -> Option<&Response> {
        match self {
            Outcome::Response(r) => Some(r),
            _ => None,
        }
    }
}

/// A finished request: what was asked and how it ended.
#[derive(Debug)]
pub struct Completion {
    /// The ticket [`Rpc::submit`] returned for it.
    pub ticket: Ticket,
    /// The request as sent (with the TID the engine gave it).
    pub request: Request,
    /// How it ended.
    pub outcome: Outcome,
}

impl Completion {
    /// The response, or the typed error of a request that got none: [`Error::TimedOut`],
    /// or the failure. The response's MAD status is not looked at.
    pub fn into_response(self, port: &Port) -> Result<Response> {
        match self.outcome {
            Outcome::Response(r) => Ok(r),
            Outcome::Timeout => Err(Error::TimedOut {
                ca: port.ca_name().to_string(),
                port: port.port_num(),
                what: self.request.describe(),
                attempts: self.request.retries.saturating_add(1),
                timeout_ms: self.request.timeout.as_millis() as u64,
            }),
            Outcome::Aborted => Err(Error::BadResponse {
                ca: port.ca_name().to_string(),
                port: port.port_num(),
                what: self.request.describe(),
                reason: "the responder stopped or aborted its RMPP transfer".to_string(),
            }),
            Outcome::Failed(e) => Err(e),
        }
    }
}

/// Counters of an [`Rpc`] since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RpcStats {
    /// Requests handed to the port (each counts once, however often the transport retried).
    pub sent: u64,
    /// Requests that got their response.
    pub responses: u64,
    /// Requests that timed out (the transport's report, or the user-space deadline).
    pub timeouts: u64,
    /// Of those, the ones the user-space deadline ended (the transport never reported).
    pub deadline_expired: u64,
    /// Requests that were aborted or failed.
    pub failures: u64,
    /// MADs read for the engine's agents that answered nothing in flight (late or stray).
    pub strays: u64,
    /// The most requests ever in flight at once.
    pub max_in_flight: usize,
    /// The most requests ever in flight to one destination at once.
    pub max_in_flight_per_destination: usize,
}

/// Where a request goes, for the per-destination window. Held inline (no allocation): it is
/// made, hashed and compared for every request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Destination {
    Lid(u16),
    Dr {
        lid: u16,
        dr: (u16, u16),
        /// The initial path's entries 0..=hop count, zeros after them.
        path: [u8; 64],
    },
}

/// A request in flight.
#[derive(Debug)]
struct Flight {
    ticket: Ticket,
    request: Request,
    destination: Destination,
    deadline: Instant,
}

/// A request waiting for room in the window.
#[derive(Debug)]
struct Queued {
    ticket: Ticket,
    request: Request,
    agent: AgentId,
}

/// Who collects a request's completion.
enum Waiter {
    /// [`Rpc::next`] of the handle whose completion queue has this id.
    Next(u64),
    /// A thread in [`Rpc::call`] or [`Rpc::run_all`].
    Call,
    /// A future of [`Rpc::call_async`].
    #[cfg(feature = "async")]
    Future(Arc<future::Slot>),
}

/// What is matched on: the agent and the TID's low 32 bits.
type Key = (AgentId, u32);

#[derive(Debug, Default)]
struct State {
    /// The agents registered so far, by (class, class version).
    agents: HashMap<(u8, u8), AgentId>,
    next_tid: u32,
    next_ticket: u64,
    flights: HashMap<Key, Flight>,
    /// Deadlines of the flights, earliest first (entries of flights that ended stay until
    /// they come up, and are skipped then).
    deadlines: BinaryHeap<Reverse<(Instant, Key)>>,
    in_flight_to: HashMap<Destination, usize>,
    /// Requests waiting for room, per destination, and the destinations in the order they
    /// will be served (each once).
    queued: HashMap<Destination, VecDeque<Queued>>,
    queued_order: VecDeque<Destination>,
    queued_count: usize,
    /// The completion queues of the handles (see [`Rpc::session`]), by id, and which queue
    /// each submitted request's completion goes to.
    queues: HashMap<u64, CompletionQueue>,
    next_queue: u64,
    queue_of: HashMap<Ticket, u64>,
    /// Tickets a [`Rpc::call`] waits for, and their completions once there.
    claimed: HashSet<Ticket>,
    claimed_done: HashMap<Ticket, Completion>,
    /// A thread is reading from the port for the engine.
    reading: bool,
    /// The reader's batch buffer, kept between reads (taken while it reads): no allocation
    /// per batch.
    inbox: Vec<crate::Received>,
    /// The reader is handling what it read: requests launched meanwhile are sent deferred
    /// and flushed together when it is done.
    corked: bool,
    /// Threads asleep on [`Inner::changed`] (see [`Inner::wake`]).
    sleepers: usize,
    /// Timeout and retries of the requests the typed one-liners make.
    budget: Option<(Duration, u32)>,
    /// See [`Rpc::set_observer`].
    observer: Option<ObserverSlot>,
    stats: RpcStats,
    #[cfg(feature = "async")]
    futures: HashMap<Ticket, Arc<future::Slot>>,
    #[cfg(feature = "async")]
    pumping: bool,
}

/// An [`Observer`] in [`State`] (which derives `Debug`).
#[derive(Clone)]
struct ObserverSlot(Observer);

impl fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}

/// The completions of one handle's [`Rpc::submit`]s, for its [`Rpc::next`].
#[derive(Debug, Default)]
struct CompletionQueue {
    /// Finished, oldest first.
    done: VecDeque<Completion>,
    /// Submitted and not yet returned by `next`.
    outstanding: usize,
}

struct Inner {
    port: Arc<Port>,
    /// The transport's [`transact_slack`](crate::Transport::transact_slack), asked once: the
    /// MAD layer answers it under the lock its progress thread works under.
    slack: Duration,
    /// This engine's id among the owners of a port's agents.
    owner: u64,
    window: Window,
    state: Mutex<State>,
    /// Signalled when a read for the engine ends and when completions arrive.
    changed: Condvar,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for &agent in st.agents.values() {
            let _ = self.port.unregister(agent);
        }
    }
}

/// The transaction engine over one [`Port`] (see the [module docs](self)).
///
/// A handle: clones share the engine and the completion queue that [`Rpc::next`] reads;
/// [`Rpc::session`] makes a handle with a queue of its own. The engine's agents are
/// unregistered when the last handle is dropped.
#[derive(Clone)]
pub struct Rpc {
    inner: Arc<Inner>,
    queue: Arc<QueueHandle>,
}

/// Owns one completion queue of the engine; dropping the last handle on it discards it (and
/// completions that arrive for it later).
struct QueueHandle {
    id: u64,
    inner: Arc<Inner>,
}

impl Drop for QueueHandle {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        st.queues.remove(&self.id);
        st.queue_of.retain(|_, q| *q != self.id);
    }
}

impl fmt::Debug for Rpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("Rpc")
            .field("port", &self.inner.port)
            .field("window", &self.inner.window)
            .field("in_flight", &st.flights.len())
            .field("queued", &st.queued_count)
            .field("stats", &st.stats)
            .finish()
    }
}

/// Gives the reader role back even if the read panics.
struct Reading<'a> {
    inner: &'a Inner,
    armed: bool,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut st = self.inner.lock();
            st.reading = false;
            self.inner.wake(&st);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps on [`Inner::changed`] until woken or `timeout` (`None`: no limit), counted in
    /// [`State::sleepers`] meanwhile.
    fn sleep<'a>(
        &self,
        mut st: MutexGuard<'a, State>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, State> {
        st.sleepers += 1;
        let mut st = match timeout {
            None => self.changed.wait(st).unwrap_or_else(|p| p.into_inner()),
            Some(t) => {
                self.changed
                    .wait_timeout(st, t)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
        st.sleepers -= 1;
        st
    }

    /// Wakes the threads asleep on [`Inner::changed`], if there are any (with the lock held,
    /// after the change, so none is missed). Saves a futex system call per read when one
    /// thread drives the engine.
    fn wake(&self, st: &State) {
        if st.sleepers > 0 {
            self.changed.notify_all();
        }
    }
}

/// A process-wide counter so two engines on one port never hand out the same TIDs.
static TID_SEED: AtomicU64 = AtomicU64::new(1);

impl Rpc {
    /// An engine over `port` with the default window ([`Window::DEFAULT`]).
    pub fn new(port: impl Into<Arc<Port>>) -> Rpc {
        Rpc::with_window(port, Window::DEFAULT)
    }

    /// An engine over `port` keeping at most `window` requests in flight.
    pub fn with_window(port: impl Into<Arc<Port>>, window: Window) -> Rpc {
        let window = Window {
            total: window.total.max(1),
            per_destination: window.per_destination.max(1),
        };
        // Engines on one port draw TIDs from distinct 2^24 blocks.
        let seed = TID_SEED.fetch_add(1, Ordering::Relaxed);
        let mut state = State {
            next_tid: ((seed % 0x80) as u32) << 24 | 1,
            next_queue: 1,
            ..State::default()
        };
        state.queues.insert(0, CompletionQueue::default());
        let port: Arc<Port> = port.into();
        let slack = port.transport().transact_slack();
        let inner = Arc::new(Inner {
            port,
            slack,
            owner: seed,
            window,
            state: Mutex::new(state),
            changed: Condvar::new(),
        });
        Rpc {
            queue: Arc::new(QueueHandle {
                id: 0,
                inner: inner.clone(),
            }),
            inner,
        }
    }

    /// A handle on the same engine (port, agents, window, reader) with a completion queue of
    /// its own: its [`Rpc::next`] returns only the completions of its own
    /// [`Rpc::submit`]s. For independent pipelined users of one engine (a discovery beside
    /// other queries): clones of one handle share its queue and would take each other's
    /// completions.
    pub fn session(&self) -> Rpc {
        let mut st = self.inner.lock();
        let id = st.next_queue;
        st.next_queue += 1;
        st.queues.insert(id, CompletionQueue::default());
        drop(st);
        Rpc {
            inner: self.inner.clone(),
            queue: Arc::new(QueueHandle {
                id,
                inner: self.inner.clone(),
            }),
        }
    }

    /// The port the engine works on.
    pub fn port(&self) -> &Port {
        &self.inner.port
    }

    /// The port, shared.
    pub fn port_arc(&self) -> &Arc<Port> {
        &self.inner.port
    }

    /// The window the engine keeps.
    pub fn window(&self) -> Window {
        self.inner.window
    }

    /// Sets the timeout per attempt and the retries of the requests that the typed
    /// one-liners ([`Rpc::smp_get`], [`Rpc::sa_get_table`], …) make (default:
    /// [`DEFAULT_TIMEOUT`], [`DEFAULT_RETRIES`]).
    pub fn set_budget(&self, timeout: Duration, retries: u32) {
        self.inner.lock().budget = Some((timeout, retries));
    }

    /// A request for `mad` to `addr` with the engine's budget (see [`Rpc::set_budget`]).
    pub fn request(&self, mad: impl Into<Vec<u8>>, addr: MadAddr) -> Request {
        let (timeout, retries) = self
            .inner
            .lock()
            .budget
            .unwrap_or((DEFAULT_TIMEOUT, DEFAULT_RETRIES));
        Request::new(mad, addr).timeout(timeout).retries(retries)
    }

    /// Installs (or with `None` removes) a callback that sees every MAD the engine sends
    /// and reads ([`MadEvent`]), for every handle on the engine. It runs with the engine's
    /// lock held, on whichever thread sends or reads: it must be quick and must not call
    /// back into this engine. Without one, the engine only tests an `Option` per MAD.
    pub fn set_observer(&self, observer: Option<Observer>) {
        self.inner.lock().observer = observer.map(ObserverSlot);
    }

    /// The engine's counters.
    pub fn stats(&self) -> RpcStats {
        self.inner.lock().stats
    }

    /// How many requests are in flight right now.
    pub fn in_flight(&self) -> usize {
        self.inner.lock().flights.len()
    }

    /// Requests submitted with [`Rpc::submit`] whose completion [`Rpc::next`] has not
    /// returned yet.
    pub fn outstanding(&self) -> usize {
        self.inner
            .lock()
            .queues
            .get(&self.queue.id)
            .map_or(0, |q| q.outstanding)
    }

    /// Submits a request: it is sent at once if the window has room, else queued behind the
    /// others for its destination. Its [`Completion`] comes from [`Rpc::next`]. Fails only
    /// for a request that can never be sent (shorter than a MAD header, an agent that cannot
    /// be registered); a send that fails later ends as [`Outcome::Failed`].
    pub fn submit(&self, request: Request) -> Result<Ticket> {
        self.submit_as(request, Waiter::Next(self.queue.id))
    }

    /// Sends a request and waits for its own completion (other threads' requests keep going).
    pub fn call(&self, request: Request) -> Result<Completion> {
        let ticket = self.submit_as(request, Waiter::Call)?;
        let mut st = self.inner.lock();
        loop {
            if let Some(c) = st.claimed_done.remove(&ticket) {
                return Ok(c);
            }
            st = self.pump(st, None)?;
        }
    }

    /// The next finished request among those given to [`Rpc::submit`], waiting up to
    /// `timeout` (`None`: as long as any is outstanding). `Ok(None)`: none finished in time,
    /// or none is outstanding.
    pub fn next(&self, timeout: Option<Duration>) -> Result<Option<Completion>> {
        // The deadline is taken when first needed: a pipelined loop mostly finds a completion
        // waiting and then reads no clock.
        let mut until = None;
        let mut st = self.inner.lock();
        loop {
            let Some(q) = st.queues.get_mut(&self.queue.id) else {
                return Ok(None);
            };
            if let Some(c) = q.done.pop_front() {
                q.outstanding -= 1;
                return Ok(Some(c));
            }
            let outstanding = q.outstanding;
            let until = *until.get_or_insert_with(|| deadline(timeout));
            if outstanding == 0 || until.is_some_and(|u| Instant::now() >= u) {
                return Ok(None);
            }
            st = self.pump(st, until)?;
        }
    }

    /// Runs every request with the window and returns their completions in submission
    /// order.
    pub fn run_all(&self, requests: impl IntoIterator<Item = Request>) -> Result<Vec<Completion>> {
        let tickets = requests
            .into_iter()
            .map(|r| self.submit_as(r, Waiter::Call))
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(tickets.len());
        let mut st = self.inner.lock();
        for t in tickets {
            loop {
                if let Some(c) = st.claimed_done.remove(&t) {
                    out.push(c);
                    break;
                }
                st = self.pump(st, None)?;
            }
        }
        Ok(out)
    }

    fn submit_as(&self, mut request: Request, waiter: Waiter) -> Result<Ticket> {
        if ibmad::Mad::new_checked(&request.mad[..]).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{} port {}: a {}-byte request is shorter than the 24-byte MAD header",
                self.port().ca_name(),
                self.port().port_num(),
                request.mad.len()
            )));
        }
        let agent = self.agent_for(request.class())?;
        request.timeout = request.timeout.max(Duration::from_millis(1));
        let mut st = self.inner.lock();
        while st.queued_count >= MAX_QUEUED {
            st = self.pump(st, None)?;
        }
        let ticket = Ticket(st.next_ticket);
        st.next_ticket += 1;
        match waiter {
            Waiter::Next(queue) => {
                st.queues.entry(queue).or_default().outstanding += 1;
                st.queue_of.insert(ticket, queue);
            }
            Waiter::Call => {
                st.claimed.insert(ticket);
            }
            #[cfg(feature = "async")]
            Waiter::Future(slot) => {
                st.futures.insert(ticket, slot);
            }
        }
        let destination = request.destination();
        let q = Queued {
            ticket,
            request,
            agent,
        };
        if self.has_room(&st, &destination) {
            self.launch(&mut st, q, destination);
        } else {
            if !st.queued.contains_key(&destination) {
                st.queued_order.push_back(destination.clone());
            }
            st.queued.entry(destination).or_default().push_back(q);
            st.queued_count += 1;
        }
        drop(st);
        Ok(ticket)
    }

    /// The engine's agent for a class and version, registered on first use.
    fn agent_for(&self, (class, version): (u8, u8)) -> Result<AgentId> {
        let mut st = self.inner.lock();
        if let Some(&a) = st.agents.get(&(class, version)) {
            return Ok(a);
        }
        let mut spec = AgentSpec::new(class, version);
        if ibmad::is_rmpp_class(class) {
            spec = spec.rmpp_version(1);
        }
        let agent = self.port().register_owned(&spec, self.inner.owner)?;
        st.agents.insert((class, version), agent);
        Ok(agent)
    }

    fn has_room(&self, st: &State, destination: &Destination) -> bool {
        st.flights.len() < self.inner.window.total
            && st.in_flight_to.get(destination).copied().unwrap_or(0)
                < self.inner.window.per_destination
    }

    /// Gives the request a TID and sends it; a send that fails completes it at once.
    fn launch(&self, st: &mut State, q: Queued, destination: Destination) {
        let Queued {
            ticket,
            mut request,
            agent,
        } = q;
        let mut tid = st.next_tid;
        while tid == 0 || st.flights.contains_key(&(agent, tid)) {
            tid = tid.wrapping_add(1);
        }
        st.next_tid = tid.wrapping_add(1);
        request.mad[12..16].copy_from_slice(&tid.to_be_bytes());
        if let Some(ObserverSlot(o)) = &st.observer {
            o(&MadEvent::Sending {
                mad: &request.mad,
                addr: &request.addr,
            });
        }
        let timeout_ms = u32::try_from(request.timeout.as_millis()).unwrap_or(u32::MAX);
        let out = crate::transport::Outgoing {
            agent,
            mad: &request.mad,
            addr: request.addr,
            timeout_ms,
            retries: request.retries,
        };
        let transport = self.port().transport();
        let sent = if st.corked {
            transport.send_deferred(&out)
        } else {
            transport.send(&out)
        };
        st.stats.sent += 1;
        if let Err(e) = sent {
            st.stats.failures += 1;
            self.finish(st, ticket, request, Outcome::Failed(e));
            return;
        }
        let budget = request.timeout * request.retries.saturating_add(1) + self.inner.slack;
        let deadline = Instant::now() + budget;
        let key = (agent, tid);
        st.deadlines.push(Reverse((deadline, key)));
        let per = match st.in_flight_to.get_mut(&destination) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                st.in_flight_to.insert(destination.clone(), 1);
                1
            }
        };
        st.flights.insert(
            key,
            Flight {
                ticket,
                request,
                destination,
                deadline,
            },
        );
        // Entries of landed flights leave the heap only when they come to the top. While an
        // early deadline stays live (a request whose answer was lost, waiting out its budget)
        // every entry behind it stays too: at 100k requests/s, ~100k per second of budget,
        // each push and pop walking a heap far out of cache. When stale entries outnumber the
        // live ones, keep only the live ones (O(n) once per n launches).
        if st.deadlines.len() > 2 * st.flights.len() + 64 {
            let State {
                deadlines, flights, ..
            } = &mut *st;
            deadlines
                .retain(|Reverse((when, k))| flights.get(k).is_some_and(|f| f.deadline == *when));
        }
        st.stats.max_in_flight = st.stats.max_in_flight.max(st.flights.len());
        st.stats.max_in_flight_per_destination = st.stats.max_in_flight_per_destination.max(per);
    }

    /// Hands a finished request to whoever waits for it.
    fn finish(&self, st: &mut State, ticket: Ticket, request: Request, outcome: Outcome) {
        let c = Completion {
            ticket,
            request,
            outcome,
        };
        #[cfg(feature = "async")]
        if let Some(slot) = st.futures.remove(&ticket) {
            slot.fill(c);
            return;
        }
        if st.claimed.remove(&ticket) {
            st.claimed_done.insert(ticket, c);
        } else if let Some(queue) = st.queue_of.remove(&ticket) {
            // A queue whose handles are all gone takes nothing more.
            if let Some(q) = st.queues.get_mut(&queue) {
                q.done.push_back(c);
            }
        }
    }

    /// Ends a flight and lets queued requests take its place in the window.
    fn land(&self, st: &mut State, key: Key, outcome: Outcome) {
        let Some(f) = st.flights.remove(&key) else {
            return;
        };
        if let Some(n) = st.in_flight_to.get_mut(&f.destination) {
            *n -= 1;
            if *n == 0 {
                st.in_flight_to.remove(&f.destination);
            }
        }
        match &outcome {
            Outcome::Response(_) => st.stats.responses += 1,
            Outcome::Timeout => st.stats.timeouts += 1,
            Outcome::Aborted | Outcome::Failed(_) => st.stats.failures += 1,
        }
        self.finish(st, f.ticket, f.request, outcome);
        self.refill(st);
    }

    /// Sends queued requests while the window has room, serving destinations in turn.
    fn refill(&self, st: &mut State) {
        let mut skipped = 0;
        while st.flights.len() < self.inner.window.total && skipped < st.queued_order.len() {
            let Some(dest) = st.queued_order.pop_front() else {
                break;
            };
            if !self.has_room(st, &dest) {
                st.queued_order.push_back(dest);
                skipped += 1;
                continue;
            }
            skipped = 0;
            let (q, more) = match st.queued.get_mut(&dest) {
                Some(list) => (list.pop_front(), !list.is_empty()),
                None => (None, false),
            };
            if more {
                st.queued_order.push_back(dest.clone());
            } else {
                st.queued.remove(&dest);
            }
            if let Some(q) = q {
                st.queued_count -= 1;
                self.launch(st, q, dest);
            }
        }
    }

    /// Delivers one MAD read for the engine's agents.
    fn dispatch(&self, st: &mut State, r: crate::Received) {
        if let Some(ObserverSlot(o)) = &st.observer {
            o(&MadEvent::Received {
                mad: &r.mad,
                addr: &r.addr,
                status: r.status,
            });
        }
        let tid = match ibmad::Mad::new_checked(&r.mad[..]) {
            Ok(m) => m.tid() as u32,
            Err(_) => {
                st.stats.strays += 1;
                return;
            }
        };
        let key = (r.agent, tid);
        if !st.flights.contains_key(&key) {
            st.stats.strays += 1;
            return;
        }
        let outcome = match r.status {
            0 => {
                let is_response = ibmad::Mad::new_checked(&r.mad[..])
                    .map(|m| m.is_response_mad())
                    .unwrap_or(false);
                if !is_response {
                    st.stats.strays += 1;
                    return;
                }
                Outcome::Response(Response {
                    mad: r.mad,
                    addr: r.addr,
                })
            }
            STATUS_TIMEOUT => Outcome::Timeout,
            STATUS_ABORTED => Outcome::Aborted,
            status => Outcome::Failed(Error::Recv {
                ca: self.port().ca_name().to_string(),
                port: self.port().port_num(),
                source: std::io::Error::from_raw_os_error(status as i32),
            }),
        };
        self.land(st, key, outcome);
    }

    /// Ends every flight whose user-space deadline has passed; returns the next deadline.
    fn expire(&self, st: &mut State, now: Instant) -> Option<Instant> {
        while let Some(&Reverse((when, key))) = st.deadlines.peek() {
            let live = st.flights.get(&key).is_some_and(|f| f.deadline == when);
            if !live {
                st.deadlines.pop();
                continue;
            }
            if when > now {
                return Some(when);
            }
            st.deadlines.pop();
            st.stats.deadline_expired += 1;
            self.land(st, key, Outcome::Timeout);
        }
        None
    }

    /// One step of progress for whoever waits: read (or wait for the reader) until something
    /// arrives, a deadline passes, or `until`.
    fn pump<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        until: Option<Instant>,
    ) -> Result<MutexGuard<'a, State>> {
        let next_deadline = self.expire(&mut st, Instant::now());
        let wake = match (until, next_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if st.reading {
            let left = wake.map(|w| w.saturating_duration_since(Instant::now()));
            return Ok(self.inner.sleep(st, left));
        }
        let Some(wake) = wake else {
            // Nothing in flight and no limit: nothing can arrive that anyone waits for.
            return Ok(st);
        };
        st.reading = true;
        // With more than one in flight, whatever else has arrived is read too before the
        // batch is handled, on every transport: one pass of the rpc's lock and wake-ups per
        // batch instead of per MAD pays for the extra look even where sends are not deferred
        // (kernel transport at 64 in flight: 1.65 -> 1.44 µs of CPU per round trip).
        let gather = st.flights.len() > 1;
        let mut all = std::mem::take(&mut st.inbox);
        drop(st);
        let mut reading = Reading {
            inner: &self.inner,
            armed: true,
        };
        let got = self
            .port()
            .recv_owned(self.inner.owner, Some(wake), gather, &mut all);
        let mut st = self.inner.lock();
        reading.armed = false;
        st.reading = false;
        // The requests that the answers make room for leave together, after all are handled.
        st.corked = true;
        for r in all.drain(..) {
            self.dispatch(&mut st, r);
        }
        st.inbox = all;
        let result = got;
        self.expire(&mut st, Instant::now());
        st.corked = false;
        let flushed = self.port().transport().flush();
        self.inner.wake(&st);
        result.and(flushed).map(|()| st)
    }
}
