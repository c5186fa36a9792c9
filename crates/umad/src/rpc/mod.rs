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

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::port::Port;
use crate::transport::deadline;
use crate::{Error, Result};

pub(crate) mod core;
use self::core::{CompletionQueue, Core, ObserverSlot};

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

/// Who collects a request's completion.
pub(crate) enum Waiter {
    /// [`Rpc::next`] of the handle whose completion queue has this id.
    Next(u64),
    /// A thread in [`Rpc::call`] or [`Rpc::run_all`].
    Call,
    /// A future of [`Rpc::call_async`].
    #[cfg(feature = "async")]
    Future(Arc<future::Slot>),
}

/// What the handles of one engine share: the port, whose driver keeps the engine's state
/// ([`Core`]) under its one lock, and the engine's id there.
struct Inner {
    port: Arc<Port>,
    /// This engine's id among the owners of the port's agents and engines.
    owner: u64,
    window: Window,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.port.detach(self.owner);
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
        let id = self.id;
        self.inner.port.with_core(self.inner.owner, |c| {
            c.queues.remove(&id);
            c.queue_of.retain(|_, q| *q != id);
        });
    }
}

impl fmt::Debug for Rpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (in_flight, queued, stats) = self
            .core(|c| (c.in_flight(), c.queued_count, c.stats))
            .unwrap_or_default();
        f.debug_struct("Rpc")
            .field("port", &self.inner.port)
            .field("window", &self.inner.window)
            .field("in_flight", &in_flight)
            .field("queued", &queued)
            .field("stats", &stats)
            .finish()
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
        let owner = TID_SEED.fetch_add(1, Ordering::Relaxed);
        let port: Arc<Port> = port.into();
        let core = Core::new(
            owner,
            window,
            port.transact_slack(),
            port.ca_name(),
            port.port_num(),
        );
        port.attach(core);
        let inner = Arc::new(Inner {
            port,
            owner,
            window,
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
        let id = self
            .core(|c| {
                let id = c.next_queue;
                c.next_queue += 1;
                c.queues.insert(id, CompletionQueue::default());
                id
            })
            .unwrap_or(u64::MAX);
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

    /// Runs `f` on the engine's state, under the port's lock.
    fn core<T>(&self, f: impl FnOnce(&mut Core) -> T) -> Option<T> {
        self.inner.port.with_core(self.inner.owner, f)
    }

    /// Sets the timeout per attempt and the retries of the requests that the typed
    /// one-liners ([`Rpc::smp_get`], [`Rpc::sa_get_table`], …) make (default:
    /// [`DEFAULT_TIMEOUT`], [`DEFAULT_RETRIES`]).
    pub fn set_budget(&self, timeout: Duration, retries: u32) {
        self.core(|c| c.budget = Some((timeout, retries)));
    }

    /// A request for `mad` to `addr` with the engine's budget (see [`Rpc::set_budget`]).
    pub fn request(&self, mad: impl Into<Vec<u8>>, addr: MadAddr) -> Request {
        let (timeout, retries) = self
            .core(|c| c.budget)
            .flatten()
            .unwrap_or((DEFAULT_TIMEOUT, DEFAULT_RETRIES));
        Request::new(mad, addr).timeout(timeout).retries(retries)
    }

    /// Installs (or with `None` removes) a callback that sees every MAD the engine sends
    /// and reads ([`MadEvent`]), for every handle on the engine. It runs with the port's
    /// lock held, on whichever thread sends or reads: it must be quick and must not call
    /// back into this engine or its port. Without one, the engine only tests an `Option`
    /// per MAD.
    pub fn set_observer(&self, observer: Option<Observer>) {
        self.core(|c| c.observer = observer.map(ObserverSlot));
    }

    /// The engine's counters.
    pub fn stats(&self) -> RpcStats {
        self.core(|c| c.stats).unwrap_or_default()
    }

    /// How many requests are in flight right now.
    pub fn in_flight(&self) -> usize {
        self.core(|c| c.in_flight()).unwrap_or(0)
    }

    /// Requests submitted with [`Rpc::submit`] whose completion [`Rpc::next`] has not
    /// returned yet.
    pub fn outstanding(&self) -> usize {
        let id = self.queue.id;
        self.core(|c| c.queues.get(&id).map_or(0, |q| q.outstanding))
            .unwrap_or(0)
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
        // Submitted and collected in one pass of the port's driver: one lock until the read.
        self.submit_and(request, Waiter::Call, |core, ticket| {
            core.claimed_done.remove(&ticket)
        })
    }

    /// The next finished request among those given to [`Rpc::submit`], waiting up to
    /// `timeout` (`None`: as long as any is outstanding). `Ok(None)`: none finished in time,
    /// or none is outstanding.
    pub fn next(&self, timeout: Option<Duration>) -> Result<Option<Completion>> {
        let id = self.queue.id;
        let got = self
            .inner
            .port
            .drive(self.inner.owner, deadline(timeout), |core, _, _| {
                let Some(q) = core.queues.get_mut(&id) else {
                    return Some(None);
                };
                if let Some(c) = q.done.pop_front() {
                    q.outstanding -= 1;
                    return Some(Some(c));
                }
                (q.outstanding == 0).then_some(None)
            })?;
        Ok(got.flatten())
    }

    /// Runs every request with the window and returns their completions in submission
    /// order.
    pub fn run_all(&self, requests: impl IntoIterator<Item = Request>) -> Result<Vec<Completion>> {
        let tickets = requests
            .into_iter()
            .map(|r| self.submit_as(r, Waiter::Call))
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(tickets.len());
        for t in tickets {
            let c = self
                .inner
                .port
                .drive(self.inner.owner, None, |core, _, _| {
                    core.claimed_done.remove(&t)
                })?;
            out.extend(c);
        }
        Ok(out)
    }

    fn submit_as(&self, request: Request, waiter: Waiter) -> Result<Ticket> {
        self.submit_and(request, waiter, |_, ticket| Some(ticket))
    }

    /// Submits `request` for `waiter`, then waits (reading for everyone meanwhile) until
    /// `then` finds what the caller wants for its ticket. The request waits for room while
    /// [`MAX_QUEUED`] requests are queued; its class's agent is registered first if needed.
    fn submit_and<T>(
        &self,
        mut request: Request,
        waiter: Waiter,
        mut then: impl FnMut(&mut Core, Ticket) -> Option<T>,
    ) -> Result<T> {
        if ibmad::Mad::new_checked(&request.mad[..]).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{} port {}: a {}-byte request is shorter than the 24-byte MAD header",
                self.port().ca_name(),
                self.port().port_num(),
                request.mad.len()
            )));
        }
        request.timeout = request.timeout.max(Duration::from_millis(1));
        let class = request.class();
        let mut request = Some((request, waiter));
        let mut ticket = None;
        loop {
            let got = self
                .inner
                .port
                .drive(self.inner.owner, None, |core, out, now| {
                    let t = match ticket {
                        Some(t) => t,
                        None => {
                            let Some(&agent) = core.agents.get(&class) else {
                                return Some(None);
                            };
                            if core.queued_count >= MAX_QUEUED {
                                return None;
                            }
                            let (r, w) = request.take()?;
                            let t = core.submit(now, r, agent, w, out);
                            ticket = Some(t);
                            t
                        }
                    };
                    then(core, t).map(Some)
                })?;
            match got {
                Some(Some(x)) => return Ok(x),
                _ => self.register_agent(class)?,
            }
        }
    }

    /// Registers the engine's agent for a class and version (RMPP for the RMPP classes),
    /// unless another thread just did.
    fn register_agent(&self, (class, version): (u8, u8)) -> Result<()> {
        let mut spec = AgentSpec::new(class, version);
        if ibmad::is_rmpp_class(class) {
            spec = spec.rmpp_version(1);
        }
        let agent: AgentId = self.port().register_owned(&spec, self.inner.owner)?;
        let raced = self
            .core(|c| match c.agents.get(&(class, version)) {
                Some(_) => true,
                None => {
                    c.agents.insert((class, version), agent);
                    false
                }
            })
            .unwrap_or(true);
        if raced {
            self.port().unregister(agent)?;
        }
        Ok(())
    }
}
