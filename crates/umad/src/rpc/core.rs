//! The transaction engine's state machine: flights, windows, TIDs, deadlines, completion
//! queues. No I/O, no clock, no lock: every call that can start a request takes `now`, and
//! what is to be sent is appended to an [`Outbox`] that the port's driver carries after it lets
//! go of its lock (see [`Port`](crate::Port)'s driver). The same calls with the same `now`s
//! give the same outbox, byte for byte (the replay test in `rpc/tests.rs`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

use super::{
    Completion, MadEvent, Observer, Outcome, Request, Response, RpcStats, Ticket, Waiter, Window,
};
use crate::addr::MadAddr;
use crate::agent::AgentId;
use crate::hash::{FastMap as HashMap, FastSet as HashSet};
use crate::transport::{Outgoing, Received, STATUS_ABORTED, STATUS_TIMEOUT};
use crate::Error;

/// What is matched on: the agent and the TID's low 32 bits.
pub(crate) type Key = (AgentId, u32);

/// Where a request goes, for the per-destination window. Held inline (no allocation): it is
/// made, hashed and compared for every request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Destination {
    Lid(u16),
    Dr {
        lid: u16,
        dr: (u16, u16),
        /// The initial path's entries 0..=hop count, zeros after them.
        path: [u8; 64],
    },
}

impl Destination {
    /// The destination the per-destination window counts for `request`: the LID, or for a
    /// directed-route SMP its whole initial path (and the LIDs around it).
    pub(crate) fn of(request: &Request) -> Destination {
        let smp = ibmad::Smp::new_checked(&request.mad[..]).ok();
        match smp.filter(|s| s.is_directed_route()) {
            Some(s) => {
                let hops = usize::from(s.hop_count()).min(63);
                let mut path = [0u8; 64];
                path[..=hops].copy_from_slice(&s.initial_path()[..=hops]);
                Destination::Dr {
                    lid: request.addr.lid,
                    dr: (s.dr_slid(), s.dr_dlid()),
                    path,
                }
            }
            None => Destination::Lid(request.addr.lid),
        }
    }
}

/// MADs to send, in order: their bytes in one buffer and what goes with each. Kept and reused
/// by the driver, so that sending allocates nothing in steady state.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    bytes: Vec<u8>,
    items: Vec<Transmit>,
}

/// One MAD of an [`Outbox`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transmit {
    /// The engine whose flight this is (see [`Core::owner`]).
    pub owner: u64,
    /// The flight it belongs to.
    pub key: Key,
    pub ticket: Ticket,
    pub addr: MadAddr,
    pub timeout_ms: u32,
    pub retries: u32,
    range: (usize, usize),
}

impl Outbox {
    /// Whether nothing waits to be sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn push(&mut self, tx: Transmit, mad: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(mad);
        self.items.push(Transmit {
            range: (start, self.bytes.len()),
            ..tx
        });
    }

    /// Each MAD with what goes with it, as the transport takes it.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Transmit, Outgoing<'_>)> {
        self.items.iter().map(|tx| {
            let (start, end) = tx.range;
            let out = Outgoing {
                agent: tx.key.0,
                mad: &self.bytes[Range { start, end }],
                addr: tx.addr,
                timeout_ms: tx.timeout_ms,
                retries: tx.retries,
            };
            (tx, out)
        })
    }

    /// Empties it, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
    }
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

/// The completions of one handle's [`Rpc::submit`](super::Rpc::submit)s, for its
/// [`Rpc::next`](super::Rpc::next).
#[derive(Debug, Default)]
pub(crate) struct CompletionQueue {
    /// Finished, oldest first.
    pub done: VecDeque<Completion>,
    /// Submitted and not yet returned by `next`.
    pub outstanding: usize,
}

/// An [`Observer`] in [`Core`] (which derives `Debug`).
#[derive(Clone)]
pub(crate) struct ObserverSlot(pub Observer);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// One transaction engine's state (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Core {
    /// This engine's id among the owners of a port's agents.
    pub owner: u64,
    pub window: Window,
    /// What a request's budget adds to `timeout × (retries + 1)`: the transport's slack.
    slack: Duration,
    /// For error messages: the port's CA and number.
    ca: String,
    port: u32,
    /// The agents registered so far, by (class, class version).
    pub agents: HashMap<(u8, u8), AgentId>,
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
    pub queued_count: usize,
    /// The completion queues of the handles (see [`Rpc::session`](super::Rpc::session)), by
    /// id, and which queue each submitted request's completion goes to.
    pub queues: HashMap<u64, CompletionQueue>,
    pub next_queue: u64,
    pub queue_of: HashMap<Ticket, u64>,
    /// Tickets a [`Rpc::call`](super::Rpc::call) waits for, and their completions once there.
    claimed: HashSet<Ticket>,
    pub claimed_done: HashMap<Ticket, Completion>,
    /// Timeout and retries of the requests the typed one-liners make.
    pub budget: Option<(Duration, u32)>,
    /// See [`Rpc::set_observer`](super::Rpc::set_observer).
    pub observer: Option<ObserverSlot>,
    pub stats: RpcStats,
    #[cfg(feature = "async")]
    pub futures: HashMap<Ticket, std::sync::Arc<super::future::Slot>>,
    #[cfg(feature = "async")]
    pub pumping: bool,
}

impl Core {
    /// An engine with no agents yet: `owner` is its id on the port (it also picks the
    /// 2^24-TID block the engine starts in), `slack` the transport's.
    pub(crate) fn new(owner: u64, window: Window, slack: Duration, ca: &str, port: u32) -> Core {
        let mut queues = HashMap::default();
        queues.insert(0, CompletionQueue::default());
        Core {
            owner,
            window,
            slack,
            ca: ca.to_string(),
            port,
            agents: HashMap::default(),
            next_tid: ((owner % 0x80) as u32) << 24 | 1,
            next_ticket: 0,
            flights: HashMap::default(),
            deadlines: BinaryHeap::new(),
            in_flight_to: HashMap::default(),
            queued: HashMap::default(),
            queued_order: VecDeque::new(),
            queued_count: 0,
            queues,
            next_queue: 1,
            queue_of: HashMap::default(),
            claimed: HashSet::default(),
            claimed_done: HashMap::default(),
            budget: None,
            observer: None,
            stats: RpcStats::default(),
            #[cfg(feature = "async")]
            futures: HashMap::default(),
            #[cfg(feature = "async")]
            pumping: false,
        }
    }

    /// How many requests are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// Takes a request (its agent already registered): sends it (into `out`) if the window
    /// has room, else queues it behind the others for its destination.
    pub(crate) fn submit(
        &mut self,
        now: Instant,
        request: Request,
        agent: AgentId,
        waiter: Waiter,
        out: &mut Outbox,
    ) -> Ticket {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        match waiter {
            Waiter::Next(queue) => {
                self.queues.entry(queue).or_default().outstanding += 1;
                self.queue_of.insert(ticket, queue);
            }
            Waiter::Call => {
                self.claimed.insert(ticket);
            }
            #[cfg(feature = "async")]
            Waiter::Future(slot) => {
                self.futures.insert(ticket, slot);
            }
        }
        let destination = Destination::of(&request);
        let q = Queued {
            ticket,
            request,
            agent,
        };
        if self.has_room(&destination) {
            self.launch(now, q, destination, out);
        } else {
            if !self.queued.contains_key(&destination) {
                self.queued_order.push_back(destination.clone());
            }
            self.queued.entry(destination).or_default().push_back(q);
            self.queued_count += 1;
        }
        ticket
    }

    fn has_room(&self, destination: &Destination) -> bool {
        self.flights.len() < self.window.total
            && self.in_flight_to.get(destination).copied().unwrap_or(0)
                < self.window.per_destination
    }

    /// Gives the request a TID and puts it in flight and in `out`.
    fn launch(&mut self, now: Instant, q: Queued, destination: Destination, out: &mut Outbox) {
        let Queued {
            ticket,
            mut request,
            agent,
        } = q;
        let mut tid = self.next_tid;
        while tid == 0 || self.flights.contains_key(&(agent, tid)) {
            tid = tid.wrapping_add(1);
        }
        self.next_tid = tid.wrapping_add(1);
        request.mad[12..16].copy_from_slice(&tid.to_be_bytes());
        if let Some(ObserverSlot(o)) = &self.observer {
            o(&MadEvent::Sending {
                mad: &request.mad,
                addr: &request.addr,
            });
        }
        let key = (agent, tid);
        out.push(
            Transmit {
                owner: self.owner,
                key,
                ticket,
                addr: request.addr,
                timeout_ms: u32::try_from(request.timeout.as_millis()).unwrap_or(u32::MAX),
                retries: request.retries,
                range: (0, 0),
            },
            &request.mad,
        );
        self.stats.sent += 1;
        let budget = request.timeout * request.retries.saturating_add(1) + self.slack;
        let deadline = now + budget;
        self.deadlines.push(Reverse((deadline, key)));
        let per = match self.in_flight_to.get_mut(&destination) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.in_flight_to.insert(destination.clone(), 1);
                1
            }
        };
        self.flights.insert(
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
        if self.deadlines.len() > 2 * self.flights.len() + 64 {
            let flights = &self.flights;
            self.deadlines
                .retain(|Reverse((when, k))| flights.get(k).is_some_and(|f| f.deadline == *when));
        }
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.flights.len());
        self.stats.max_in_flight_per_destination =
            self.stats.max_in_flight_per_destination.max(per);
    }

    /// Hands a finished request to whoever waits for it.
    fn finish(&mut self, ticket: Ticket, request: Request, outcome: Outcome) {
        let c = Completion {
            ticket,
            request,
            outcome,
        };
        #[cfg(feature = "async")]
        if let Some(slot) = self.futures.remove(&ticket) {
            slot.fill(c);
            return;
        }
        if self.claimed.remove(&ticket) {
            self.claimed_done.insert(ticket, c);
        } else if let Some(queue) = self.queue_of.remove(&ticket) {
            // A queue whose handles are all gone takes nothing more.
            if let Some(q) = self.queues.get_mut(&queue) {
                q.done.push_back(c);
            }
        }
    }

    /// Ends a flight and lets queued requests take its place in the window.
    fn land(&mut self, now: Instant, key: Key, outcome: Outcome, out: &mut Outbox) {
        let Some(f) = self.flights.remove(&key) else {
            return;
        };
        if let Some(n) = self.in_flight_to.get_mut(&f.destination) {
            *n -= 1;
            if *n == 0 {
                self.in_flight_to.remove(&f.destination);
            }
        }
        match &outcome {
            Outcome::Response(_) => self.stats.responses += 1,
            Outcome::Timeout => self.stats.timeouts += 1,
            Outcome::Aborted | Outcome::Failed(_) => self.stats.failures += 1,
        }
        self.finish(f.ticket, f.request, outcome);
        self.refill(now, out);
    }

    /// Sends queued requests while the window has room, serving destinations in turn.
    fn refill(&mut self, now: Instant, out: &mut Outbox) {
        let mut skipped = 0;
        while self.flights.len() < self.window.total && skipped < self.queued_order.len() {
            let Some(dest) = self.queued_order.pop_front() else {
                break;
            };
            if !self.has_room(&dest) {
                self.queued_order.push_back(dest);
                skipped += 1;
                continue;
            }
            skipped = 0;
            let (q, more) = match self.queued.get_mut(&dest) {
                Some(list) => (list.pop_front(), !list.is_empty()),
                None => (None, false),
            };
            if more {
                self.queued_order.push_back(dest.clone());
            } else {
                self.queued.remove(&dest);
            }
            if let Some(q) = q {
                self.queued_count -= 1;
                self.launch(now, q, dest, out);
            }
        }
    }

    /// A MAD of `out` for flight `key` could not be handed to the transport: the request
    /// ends with that error (unless it already ended).
    pub(crate) fn send_failed(
        &mut self,
        now: Instant,
        key: Key,
        ticket: Ticket,
        e: Error,
        out: &mut Outbox,
    ) {
        if self.flights.get(&key).is_some_and(|f| f.ticket == ticket) {
            self.land(now, key, Outcome::Failed(e), out);
        }
    }

    /// Takes one MAD read for the engine's agents: the response or report of a flight ends
    /// it; anything else is counted as a stray.
    pub(crate) fn on_received(&mut self, now: Instant, r: Received, out: &mut Outbox) {
        if let Some(ObserverSlot(o)) = &self.observer {
            o(&MadEvent::Received {
                mad: &r.mad,
                addr: &r.addr,
                status: r.status,
            });
        }
        let Ok(m) = ibmad::Mad::new_checked(&r.mad[..]) else {
            self.stats.strays += 1;
            return;
        };
        let key = (r.agent, m.tid() as u32);
        if !self.flights.contains_key(&key) {
            self.stats.strays += 1;
            return;
        }
        let outcome = match r.status {
            0 if !m.is_response_mad() => {
                self.stats.strays += 1;
                return;
            }
            0 => Outcome::Response(Response {
                mad: r.mad,
                addr: r.addr,
            }),
            STATUS_TIMEOUT => Outcome::Timeout,
            STATUS_ABORTED => Outcome::Aborted,
            status => Outcome::Failed(Error::Recv {
                ca: self.ca.clone(),
                port: self.port,
                source: std::io::Error::from_raw_os_error(status as i32),
            }),
        };
        self.land(now, key, outcome, out);
    }

    /// Ends every flight whose deadline is not after `now` (the user-space backstop: the
    /// transport never reported); returns the next deadline.
    pub(crate) fn on_timer(&mut self, now: Instant, out: &mut Outbox) -> Option<Instant> {
        while let Some(&Reverse((when, key))) = self.deadlines.peek() {
            let live = self.flights.get(&key).is_some_and(|f| f.deadline == when);
            if !live {
                self.deadlines.pop();
                continue;
            }
            if when > now {
                return Some(when);
            }
            self.deadlines.pop();
            self.stats.deadline_expired += 1;
            self.land(now, key, Outcome::Timeout, out);
        }
        None
    }

    /// How many deadline entries are kept (live and stale), for the test that they do not
    /// pile up.
    #[cfg(test)]
    pub(crate) fn deadline_entries(&self) -> usize {
        self.deadlines.len()
    }
}
