//! [`Port`]: an opened InfiniBand port, its agents, and MAD send/receive.
//!
//! # Sharing a port between threads
//!
//! Every method takes `&self`. Receiving is multiplexed in the port so that any number of
//! threads can [`transact`](Port::transact), [`recv`](Port::recv) and [`poll`](Port::poll) on one
//! port at once: at most one thread at a time reads from the transport (whoever needs a MAD
//! and finds nobody reading becomes the reader, for at most [`READ_SLICE`] or its own remaining
//! time), and it routes what it read — a response or timeout report for a waiting `transact`
//! (same agent, same TID low 32 bits) into that transaction's slot, anything else into the
//! port's receive queue — then wakes the others. So a `transact` gets exactly its own
//! response, and `recv` never sees a MAD a `transact` is waiting for.
//!
//! The receive queue holds at most [`RECV_QUEUE_MADS`] MADs and [`RECV_QUEUE_BYTES`] bytes:
//! when a MAD arrives that nobody receives (e.g. threads only `transact` while unsolicited MADs
//! come in), the oldest queued MAD is dropped and [`Port::dropped`] counts it.

use std::collections::VecDeque;
use std::fmt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::carrier::ibsim::{IbsimCarrier, IbsimOptions};
use crate::carrier::sim::{SimCarrier, SimOptions};
use crate::carrier::Simulated;
use crate::device::{Ca, Devices};
use crate::hash::FastMap as HashMap;
use crate::layer::{Carrier, LayerConfig, LayerStats};
use crate::rpc::core::{Core, Outbox, Transmit};
use crate::transport::kernel::KernelTransport;
use crate::transport::{
    deadline, Issm, Outgoing, Received, Transport, TransportKind, STATUS_TIMEOUT,
};

mod layer;
use crate::{Error, Result};
pub use layer::APP_READ_GRACE;
use layer::{LayerState, Link};

/// The longest one reader waits inside the transport before handing the reader role back, so
/// that [`Port::unregister`] (which waits for the read in progress) is never held up longer.
pub const READ_SLICE: Duration = Duration::from_millis(100);

/// At most this many MADs wait in a port's receive queue; a newer one pushes out the oldest.
pub const RECV_QUEUE_MADS: usize = 4096;

/// At most this many MAD bytes wait in a port's receive queue (the newest MAD is always kept,
/// however long); beyond it the oldest are dropped.
pub const RECV_QUEUE_BYTES: usize = 16 << 20;

/// At most this many MADs a reader takes off the transport in one turn (see
/// [`Port::read_batch`]).
const GATHER: usize = 64;

/// How long past a request's own budget a waiter on a [`Transport`] gives the kernel's
/// timeout report to arrive before it ends the request itself.
const TRANSPORT_SLACK: Duration = Duration::from_millis(500);

/// At most this many MAD buffers are kept for reuse, each of at most [`FREE_BUFFER_BYTES`]
/// (an RMPP message's big buffer is let go of).
const FREE_BUFFERS: usize = 64;
const FREE_BUFFER_BYTES: usize = 4096;

/// How many given-up transactions are remembered so that their late response or timeout
/// report is discarded instead of surfacing in [`Port::recv`]; beyond it the oldest is
/// forgotten (its late answer, if any, is then received like any other MAD).
const ABANDONED_KEYS: usize = 1024;

/// What a waiting transaction is matched on: the agent and the TID's lower 32 bits.
type Key = (AgentId, u32);

/// The state of one waiting [`Port::transact`].
#[derive(Debug)]
enum Slot {
    /// Nothing has arrived yet.
    Waiting,
    /// Its response or timeout report.
    Done(Received),
    /// Its agent was unregistered meanwhile.
    Unregistered,
}

/// The receive side that the threads using a port share (behind [`Port::mux`]).
#[derive(Debug, Default)]
struct Mux {
    /// A thread is inside the transport's `recv`; the others wait on [`Port::changed`].
    reading: bool,
    /// Reads finished so far (wrapping), so a waiter can tell that the read it saw has ended.
    reads: u64,
    /// The waiting transactions.
    waiting: HashMap<Key, Slot>,
    /// MADs read that no transaction waits for, oldest first.
    queue: VecDeque<Received>,
    /// The bytes of MAD in `queue`.
    queued_bytes: usize,
    /// Transactions given up by the never-hang backstop, oldest first.
    abandoned: VecDeque<Key>,
    /// MADs read and discarded (queue overflow, late answers of given-up transactions).
    dropped: u64,
    /// A [`Port::poll`] reader saw the transport readable without taking anything.
    transport_ready: bool,
    /// Threads asleep on [`Port::changed`] (see [`Port::wake`]).
    sleepers: usize,
    /// Agents owned by a transaction engine ([`crate::rpc::Rpc`]), and the engine's id:
    /// everything read for one of them goes straight to that engine's state machine.
    owned: HashMap<AgentId, u64>,
    /// The state machines of the transaction engines on this port, by id: they run under
    /// this lock, driven by whichever thread holds it (see [`Port::wait`]).
    cores: HashMap<u64, Core>,
    /// What the engines have launched and nobody has carried yet ([`Port::flush`]).
    outbox: Outbox,
    /// An empty outbox to swap in while one is being carried (kept: no allocation).
    spare: Option<Outbox>,
    /// The reader's batch buffer, kept between reads (taken while it reads).
    batch: Option<Vec<Received>>,
    /// MAD buffers given back by [`Port::recv_into`] and [`Port::transact_into`], for the
    /// reader to read into (at most [`FREE_BUFFERS`]).
    free: Vec<Vec<u8>>,
    /// On a carrier: the MAD layer's engine and its progress thread's state.
    layer: Option<LayerState>,
}

/// How the reader reads when no transaction waits (when one does, it always takes every MAD
/// and routes it): leaving MADs on the transport while nobody else needs them keeps the
/// transport's descriptor ([`Port::as_raw_fd`]) readable exactly while a MAD waits, and lets
/// the transport apply a receive capacity itself.
#[derive(Clone, Copy)]
enum ReadFor {
    /// A transaction: take and route.
    Route,
    /// [`Port::poll`]: only look.
    Peek,
    /// [`Port::recv_fit`]: take one MAD of at most this many bytes.
    Fit(usize),
}

impl Mux {
    /// Whether the MAD layer (on a carrier) holds MADs for the application.
    fn layer_has_ready(&self) -> bool {
        self.layer
            .as_ref()
            .is_some_and(|l| !l.engine.ready().is_empty())
    }

    /// Delivers one MAD the reader took off the transport (at `now`).
    fn route(&mut self, r: Received, now: Instant) {
        if let Some(owner) = self.owned.get(&r.agent) {
            match self.cores.get_mut(owner) {
                Some(core) => core.on_received(now, r, &mut self.outbox),
                // Its engine is being dropped.
                None => self.dropped += 1,
            }
            return;
        }
        if let Some(key) = reply_key(&r) {
            if let Some(slot @ Slot::Waiting) = self.waiting.get_mut(&key) {
                *slot = Slot::Done(r);
                return;
            }
            if let Some(i) = self.abandoned.iter().position(|k| *k == key) {
                self.abandoned.remove(i);
                self.dropped += 1;
                return;
            }
        }
        self.queued_bytes += r.mad.len();
        self.queue.push_back(r);
        while self.queue.len() > RECV_QUEUE_MADS
            || (self.queued_bytes > RECV_QUEUE_BYTES && self.queue.len() > 1)
        {
            if let Some(old) = self.queue.pop_front() {
                self.queued_bytes -= old.mad.len();
                self.dropped += 1;
            }
        }
    }

    /// Keeps a MAD buffer for the reader to read into, if there is room for it.
    fn recycle(&mut self, buf: Vec<u8>) {
        if self.free.len() < FREE_BUFFERS && buf.capacity() <= FREE_BUFFER_BYTES {
            self.free.push(buf);
        }
    }

    /// Takes what waits in the outbox, leaving the spare (empty) one in its place.
    fn take_outbox(&mut self) -> Outbox {
        let mut batch = self.spare.take().unwrap_or_default();
        std::mem::swap(&mut batch, &mut self.outbox);
        batch
    }

    /// Runs the engines' timers: ends every flight whose deadline is not after `now`.
    /// Returns the next deadline and whether any flight ended.
    fn on_timer(&mut self, now: Instant) -> (Option<Instant>, bool) {
        let Mux { cores, outbox, .. } = self;
        let mut next: Option<Instant> = None;
        let mut fired = false;
        for core in cores.values_mut() {
            let before = core.stats.deadline_expired;
            if let Some(d) = core.on_timer(now, outbox) {
                next = Some(next.map_or(d, |n| n.min(d)));
            }
            fired |= core.stats.deadline_expired != before;
        }
        (next, fired)
    }

    /// Requests in flight in all the engines.
    fn in_flight(&self) -> usize {
        self.cores.values().map(Core::in_flight).sum()
    }

    /// The next queued MAD if it fits in `capacity` bytes; a longer one stays queued and
    /// `Err(its length)` says so.
    fn pop_fit(&mut self, capacity: usize) -> Option<std::result::Result<Received, usize>> {
        let len = self.queue.front()?.mad.len();
        if len > capacity {
            return Some(Err(len));
        }
        let r = self.queue.pop_front()?;
        self.queued_bytes -= len;
        Some(Ok(r))
    }

    /// Forgets everything held for `agent` (it was unregistered): its queued MADs, its
    /// given-up transactions; transactions still waiting end with an error.
    fn purge(&mut self, agent: AgentId) {
        self.owned.remove(&agent);
        self.queue.retain(|r| r.agent != agent);
        self.queued_bytes = self.queue.iter().map(|r| r.mad.len()).sum();
        self.abandoned.retain(|k| k.0 != agent);
        for (key, slot) in &mut self.waiting {
            if key.0 == agent && matches!(slot, Slot::Waiting) {
                *slot = Slot::Unregistered;
            }
        }
    }
}

/// The key a MAD answers under, if it is an answer at all: a transport's report (non-zero
/// status, the MAD is the request) or a response (the kernel's rule,
/// [`ibmad::Mad::is_response_mad`]).
fn reply_key(r: &Received) -> Option<Key> {
    let tid = tid_low(&r.mad)?;
    let answer = r.status != 0 || ibmad::Mad::new_checked(&r.mad[..]).ok()?.is_response_mad();
    answer.then_some((r.agent, tid))
}

/// An opened port: register agents on it, send and receive MADs.
///
/// All methods take `&self` and a port can be shared by any number of threads (see the
/// [module docs](self) for how receiving is shared). Dropping the port unregisters its agents
/// and closes it.
pub struct Port {
    shared: Arc<Shared>,
    /// On a carrier: the MAD layer's progress thread.
    progress: Option<JoinHandle<()>>,
}

/// What the port's threads share (the progress thread too, on a carrier).
struct Shared {
    io: Io,
    /// Who is reading, waiting transactions, the receive queue, the engines (the port's one
    /// lock).
    mux: Mutex<Mux>,
    /// Signalled whenever a read ends (with or without a MAD) and on unregister.
    changed: Condvar,
}

/// What carries the port's MADs.
#[derive(Debug)]
enum Io {
    /// A transport (the kernel's device, a test's own) that does agents, timeouts and RMPP.
    Transport(Box<dyn Transport>),
    /// A packet carrier under the MAD layer's engine, which runs under the port's lock.
    Layer(Link),
}

impl Drop for Port {
    fn drop(&mut self) {
        if let Some(t) = self.progress.take() {
            self.shared.layer_stop();
            let _ = t.join();
        }
    }
}

impl fmt::Debug for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mux = self.mux();
        f.debug_struct("Port")
            .field("io", &self.shared.io)
            .field("waiting", &mux.waiting.len())
            .field("queued", &mux.queue.len())
            .field("dropped", &mux.dropped)
            .finish()
    }
}

/// Marks the reader role as taken; if the read panics, gives it back so nobody waits forever.
struct Reading<'a> {
    port: &'a Port,
    armed: bool,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut mux = self.port.mux();
            mux.reading = false;
            mux.reads = mux.reads.wrapping_add(1);
            self.port.wake(&mux);
        }
    }
}

/// A waiting transaction's claim on its key; removes the slot when the transaction ends.
struct Claim<'a> {
    port: &'a Port,
    key: Key,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.port.mux().waiting.remove(&self.key);
    }
}

impl Port {
    /// Opens a port the way libibumad's `umad_open_port` chooses it: `ca` `None` = the
    /// default CA, `port` 0 = its best port (ACTIVE, else LinkUp, else not Disabled;
    /// InfiniBand link layer; switches use port 0).
    ///
    /// If the environment variable `UMAD_IBSIM` names an ibsim socket, the port is instead a
    /// native connection to that simulator (node from `UMAD_IBSIM_NODE`); `ca` and `port` must
    /// then be `None`/0 or name the simulator's port ([`Error::InvalidArgument`] otherwise).
    /// That variable is the only way this function uses ibsim; set to something that is not
    /// UTF-8, it is refused ([`Error::InvalidArgument`], see [`IbsimOptions::from_env`]).
    ///
    /// If `UMAD_SIM` names a netfile, the port is one of a fabric simulated in this process
    /// ([`Port::open_sim`]; node from `UMAD_SIM_NODE`), with the same rule for `ca` and
    /// `port`. Both variables set is refused.
    #[doc(alias = "umad_open_port")]
    pub fn open(ca: Option<&str>, port: u32) -> Result<Port> {
        match Simulated::from_env()? {
            Some(sim) => Port::open_simulated(&sim)?.check_sim_choice(&sim, ca, port),
            None => Port::open_kernel(&Devices::new(), ca, port),
        }
    }

    /// Opens the simulated port `sim` names (ibsim's, or one simulated in process).
    pub fn open_simulated(sim: &Simulated) -> Result<Port> {
        match sim {
            Simulated::Ibsim(o) => Port::open_ibsim(o),
            Simulated::InProcess(o) => Port::open_sim(o),
        }
    }

    /// Attaches to a fabric simulated in this process ([`crate::carrier::sim`]): the
    /// user-space MAD layer over the simulator's port, no daemon, nothing installed.
    pub fn open_sim(opts: &SimOptions) -> Result<Port> {
        let carrier = SimCarrier::attach(opts)?;
        // The simulator answers inside the send: a reader that found nothing has nothing
        // coming that a spin could catch (only other threads' answers, which wake it).
        let cfg = LayerConfig {
            spin: Duration::ZERO,
            ..LayerConfig::default()
        };
        Port::from_carrier(Box::new(carrier), cfg)
    }

    /// Like [`Port::open`], but only ports that have an SMI (QP0) qualify: on planarized HCAs
    /// the GSI-only twin device is skipped.
    #[doc(alias = "umad_open_smi_port")]
    pub fn open_smi(ca: Option<&str>, port: u32) -> Result<Port> {
        match Simulated::from_env()? {
            Some(sim) => Port::open_simulated(&sim)?.check_sim_choice(&sim, ca, port),
            None => Ok(Port::from_transport(Box::new(KernelTransport::open(
                &Devices::new(),
                ca,
                port,
                true,
            )?))),
        }
    }

    /// Under `UMAD_IBSIM` or `UMAD_SIM` the simulator decides the port (`UMAD_IBSIM_NODE`,
    /// `UMAD_SIM_NODE`): a CA or port the caller named that is not the one opened is an error
    /// rather than silently ignored.
    fn check_sim_choice(self, sim: &Simulated, ca: Option<&str>, port: u32) -> Result<Port> {
        let wrong_ca = ca.is_some_and(|c| c != self.ca_name());
        // libibumad's resolve_ca_port, as the kernel path (Devices::resolve, scan_ports): with
        // no CA named, a switch is opened at port 0 whatever port was asked; a CA named with a
        // port is taken as given (and a switch has no umad device for port 1).
        // (Asked only when the port differs: describing the CA costs ibsim round trips.)
        let switch = || {
            self.ca()
                .is_ok_and(|c| c.node_type == crate::device::NodeType::Switch)
        };
        let wrong_port = port != 0 && port != self.port_num() && !(ca.is_none() && switch());
        if wrong_ca || wrong_port {
            let var = sim.variable();
            return Err(Error::InvalidArgument(format!(
                "{var} is set, so the port is the simulator's ({} port {}, node chosen by \
                 {var}_NODE), not CA {} port {port}: name that CA and port (or none), \
                 or unset {var} to use the kernel's devices",
                self.ca_name(),
                self.port_num(),
                ca.unwrap_or("(default)"),
            )));
        }
        Ok(self)
    }

    /// Which kind of transport this port is on (the kernel device or the user-space MAD
    /// layer over ibsim, …).
    pub fn transport_kind(&self) -> TransportKind {
        match &self.shared.io {
            Io::Transport(t) => t.kind(),
            Io::Layer(l) => TransportKind::MadLayer {
                carrier: l.carrier.name(),
            },
        }
    }

    /// Opens a port through the kernel's umad devices found under `devices`' paths.
    pub fn open_kernel(devices: &Devices, ca: Option<&str>, port: u32) -> Result<Port> {
        Ok(Port::from_transport(Box::new(KernelTransport::open(
            devices, ca, port, false,
        )?)))
    }

    /// Connects natively to an ibsim simulator: the user-space MAD layer (agents, TIDs,
    /// timeouts, RMPP) over ibsim's packet sockets.
    pub fn open_ibsim(opts: &IbsimOptions) -> Result<Port> {
        let carrier = IbsimCarrier::connect(opts)?;
        Port::from_carrier(Box::new(carrier), LayerConfig::default())
    }

    /// A port over any transport.
    pub fn from_transport(transport: Box<dyn Transport>) -> Port {
        Port {
            shared: Arc::new(Shared {
                io: Io::Transport(transport),
                mux: Mutex::new(Mux::default()),
                changed: Condvar::new(),
            }),
            progress: None,
        }
    }

    /// A port over a packet carrier: the user-space MAD layer (agents, TIDs, timeouts,
    /// retries, RMPP: what the kernel's MAD layer does) runs under the port's lock, driven
    /// by the threads that use the port and, while none is inside, by a progress thread of
    /// the port's own (timers, ACKs, unsolicited MADs).
    pub fn from_carrier(carrier: Box<dyn Carrier>, cfg: LayerConfig) -> Result<Port> {
        let (link, state) = Link::new(carrier, cfg)?;
        let shared = Arc::new(Shared {
            io: Io::Layer(link),
            mux: Mutex::new(Mux {
                layer: Some(state),
                ..Mux::default()
            }),
            changed: Condvar::new(),
        });
        let s = shared.clone();
        let progress = std::thread::Builder::new()
            .name("umad-mad-layer".into())
            .spawn(move || s.layer_run())
            .map_err(|e| Error::Failed {
                ca: shared.ca_name().to_string(),
                port: shared.port_num(),
                reason: format!("cannot start the MAD layer's thread: {e}"),
                errno: e.raw_os_error().unwrap_or(libc::EAGAIN),
            })?;
        Ok(Port {
            shared,
            progress: Some(progress),
        })
    }

    /// The MAD layer's counters (drops, segments, retransmissions), on a carrier-backed port.
    pub fn layer_stats(&self) -> Option<LayerStats> {
        matches!(self.shared.io, Io::Layer(_)).then(|| self.shared.layer_stats())
    }

    /// How much longer than a request's own `timeout × (retries + 1)` a waiter gives the
    /// transport to answer or report before it gives up by itself (the never-hang backstop).
    pub(crate) fn transact_slack(&self) -> Duration {
        match &self.shared.io {
            // The kernel's own timeout report arrives first.
            Io::Transport(_) => TRANSPORT_SLACK,
            // The engine ends every request itself (reply, report or the reassembly limit),
            // and keeps one alive while its RMPP answer arrives: give it that long.
            Io::Layer(_) => self.shared.layer_slack(),
        }
    }

    /// The CA's name.
    pub fn ca_name(&self) -> &str {
        self.shared.ca_name()
    }

    /// The port number (0 on a switch).
    pub fn port_num(&self) -> u32 {
        self.shared.port_num()
    }

    /// Describes the CA this port belongs to (read now, not cached).
    #[doc(alias = "umad_get_ca")]
    pub fn ca(&self) -> Result<Ca> {
        match &self.shared.io {
            Io::Transport(t) => t.ca(),
            Io::Layer(l) => l.carrier.ca(),
        }
    }

    /// Registers an agent. Fails with [`Error::TooManyAgents`]
    /// when the port already holds 32.
    #[doc(alias = "umad_register")]
    #[doc(alias = "umad_register_oui")]
    #[doc(alias = "umad_register2")]
    pub fn register(&self, spec: &AgentSpec) -> Result<AgentId> {
        match &self.shared.io {
            Io::Transport(t) => t.register(spec),
            Io::Layer(_) => self.shared.layer_register(spec),
        }
    }

    /// Unregisters an agent. MADs queued for it are discarded, and a [`Port::transact`] still
    /// waiting on it ends with [`Error::BadAgent`].
    #[doc(alias = "umad_unregister")]
    pub fn unregister(&self, agent: AgentId) -> Result<()> {
        match &self.shared.io {
            Io::Transport(t) => t.unregister(agent)?,
            Io::Layer(_) => self.shared.layer_unregister(agent)?,
        }
        let mut mux = self.mux();
        // A read in progress may hold one of its MADs: let it be routed first. It ends within
        // READ_SLICE, and the transport delivers nothing for the agent after this (later
        // reads, which may start at once, cannot bring any).
        let read = mux.reads;
        while mux.reading && mux.reads == read {
            mux = self.sleep(mux, None);
        }
        mux.purge(agent);
        self.wake(&mux);
        Ok(())
    }

    /// Sends a MAD. For a request with `timeout_ms` > 0 the response (or, after `retries`
    /// more attempts, a report with status `ETIMEDOUT`) comes back through [`Port::recv`].
    /// The transport owns the upper 32 bits of a request's TID; match responses on the lower 32.
    #[doc(alias = "umad_send")]
    pub fn send(
        &self,
        agent: AgentId,
        mad: &[u8],
        addr: &MadAddr,
        timeout_ms: u32,
        retries: u32,
    ) -> Result<()> {
        let out = Outgoing {
            agent,
            mad,
            addr: *addr,
            timeout_ms,
            retries,
        };
        match &self.shared.io {
            Io::Transport(t) => t.send(&out),
            Io::Layer(_) => {
                let (mut refused, carried) = self.shared.layer_send(std::iter::once(out));
                match refused.pop() {
                    Some((_, e)) => Err(e),
                    None => carried,
                }
            }
        }
    }

    /// Takes the next MAD, waiting up to `timeout` (`None` = forever, zero = don't wait).
    /// `Ok(None)`: nothing arrived in time. A message of any length is returned whole.
    ///
    /// Never returns a MAD that a [`Port::transact`] on another thread is waiting for.
    #[doc(alias = "umad_recv")]
    pub fn recv(&self, timeout: Option<Duration>) -> Result<Option<Received>> {
        self.recv_fit(timeout, usize::MAX)
    }

    /// Like [`Port::recv`], but only takes a MAD of at most `capacity` bytes: when the next one
    /// is longer it stays queued and the call fails with [`Error::TooLong`] naming its length,
    /// so the caller can receive it again with more room (the kernel's `ENOSPC` contract that
    /// `umad_recv` passes on).
    #[doc(alias = "umad_recv")]
    pub fn recv_fit(&self, timeout: Option<Duration>, capacity: usize) -> Result<Option<Received>> {
        self.wait(
            deadline(timeout),
            ReadFor::Fit(capacity),
            |mux, _| match mux.pop_fit(capacity)? {
                Ok(r) => Some(Ok(r)),
                Err(needed) => Some(Err(Error::TooLong {
                    ca: self.ca_name().to_string(),
                    port: self.port_num(),
                    needed,
                    capacity,
                })),
            },
        )
    }

    /// Like [`Port::recv_fit`], but into `into` (`Ok(true)`: a MAD came and `into` holds it;
    /// `Ok(false)`: none came in time, `into` is unchanged). The buffer `into` held before is
    /// kept by the port to read a later MAD into, so a loop that receives into the same
    /// [`Received`] allocates nothing per MAD in steady state.
    #[doc(alias = "umad_recv")]
    pub fn recv_into(
        &self,
        timeout: Option<Duration>,
        capacity: usize,
        into: &mut Received,
    ) -> Result<bool> {
        let got = self.wait(
            deadline(timeout),
            ReadFor::Fit(capacity),
            |mux, _| match mux.pop_fit(capacity)? {
                Ok(r) => {
                    let old = std::mem::replace(into, r);
                    mux.recycle(old.mad);
                    Some(Ok(()))
                }
                Err(needed) => Some(Err(Error::TooLong {
                    ca: self.ca_name().to_string(),
                    port: self.port_num(),
                    needed,
                    capacity,
                })),
            },
        )?;
        Ok(got.is_some())
    }

    /// Waits until a MAD can be received with [`Port::recv`], up to `timeout`. To know, it
    /// reads from the transport on the receivers' behalf: what it reads for a waiting
    /// [`Port::transact`] goes there, the rest into the port's receive queue.
    #[doc(alias = "umad_poll")]
    pub fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        let queued = self.wait(deadline(timeout), ReadFor::Peek, |mux, _| {
            // On a carrier, a MAD the engine holds for the application counts too (the
            // progress thread may hold the reader role and have queued it there).
            let ready = !mux.queue.is_empty()
                || std::mem::take(&mut mux.transport_ready)
                || mux.layer_has_ready();
            ready.then_some(Ok(()))
        })?;
        Ok(queued.is_some())
    }

    /// Gives a MAD buffer back (a [`Response`](crate::rpc::Response)'s or a [`Received`]'s
    /// `mad` that the caller is done with): the port reads a later MAD into it, so a program
    /// that gives back what it takes allocates nothing per MAD in steady state. The port keeps
    /// at most 64 buffers of at most 4 KiB; others are dropped.
    pub fn recycle(&self, buf: Vec<u8>) {
        self.mux().recycle(buf);
    }

    /// How many MADs this port has read and discarded: the oldest of a full receive queue
    /// (see [`RECV_QUEUE_MADS`]), and late answers to transactions that had already given up.
    pub fn dropped(&self) -> u64 {
        self.mux().dropped
    }

    /// Sends a request and waits for its response: the MAD received for `agent` with the same
    /// TID (lower 32 bits) that is a response (or the transport's timeout report). Gives up —
    /// returning a report with status `ETIMEDOUT` holding the request's 24-byte common header, as
    /// the kernel's reports do — if the transport has
    /// not answered within the whole timeout/retry budget plus a margin, so it never hangs even
    /// when a MAD is lost without trace (a late answer is then discarded, see
    /// [`Port::dropped`]). MADs that arrive meanwhile for other agents or TIDs are kept for
    /// [`Port::recv`].
    ///
    /// Any number of threads may transact on one port at once, each with its own agent + TID:
    /// a second concurrent transaction with the same agent and TID low bits fails at once with
    /// [`Error::InvalidArgument`] (nothing is sent).
    pub fn transact(
        &self,
        agent: AgentId,
        mad: &[u8],
        addr: &MadAddr,
        timeout_ms: u32,
        retries: u32,
    ) -> Result<Received> {
        let mut r = Received::default();
        self.transact_into(agent, mad, addr, timeout_ms, retries, &mut r)?;
        Ok(r)
    }

    /// Like [`Port::transact`], but the answer (or the timeout report) is left in `into`, and
    /// the buffer `into` held before is kept by the port to read a later MAD into: a loop of
    /// transactions into the same [`Received`] allocates nothing per MAD in steady state.
    pub fn transact_into(
        &self,
        agent: AgentId,
        mad: &[u8],
        addr: &MadAddr,
        timeout_ms: u32,
        retries: u32,
        into: &mut Received,
    ) -> Result<()> {
        let Some(tid) = tid_low(mad) else {
            return Err(Error::InvalidArgument(format!(
                "{} port {}: transact by agent {agent}: a {}-byte MAD is shorter than the 24-byte MAD header that holds the TID",
                self.ca_name(),
                self.port_num(),
                mad.len()
            )));
        };
        let key = (agent, tid);
        let _claim = self.claim(key)?;
        self.send(agent, mad, addr, timeout_ms.max(1), retries)?;
        let budget = Duration::from_millis(u64::from(timeout_ms.max(1)) * (u64::from(retries) + 1))
            + self.transact_slack();
        let answer = self.wait(deadline(Some(budget)), ReadFor::Route, |mux, _| {
            match mux.waiting.get(&key)? {
                Slot::Waiting => None,
                Slot::Done(_) | Slot::Unregistered => Some(Ok(())),
            }
        })?;
        let mut mux = self.mux();
        match mux.waiting.remove(&key) {
            Some(Slot::Done(r)) => {
                let old = std::mem::replace(into, r);
                mux.recycle(old.mad);
                Ok(())
            }
            Some(Slot::Unregistered) => Err(Error::BadAgent {
                ca: self.ca_name().to_string(),
                port: self.port_num(),
                agent,
            }),
            _ => {
                debug_assert!(answer.is_none());
                if mux.abandoned.len() >= ABANDONED_KEYS {
                    mux.abandoned.pop_front();
                }
                mux.abandoned.push_back(key);
                into.agent = agent;
                into.status = STATUS_TIMEOUT;
                into.addr = *addr;
                // As the kernel's reports: the request's common MAD header.
                into.mad.clear();
                into.mad.extend_from_slice(&mad[..ibmad::HEADER_LEN]);
                Ok(())
            }
        }
    }

    /// Becomes the subnet manager of this port (PortInfo.CapabilityMask.IsSM) until the
    /// returned guard is dropped. On the kernel this opens `/dev/infiniband/issmN`, which
    /// blocks while another process holds it.
    #[doc(alias = "umad_get_issm_path")]
    pub fn issm(&self) -> Result<Issm> {
        match &self.shared.io {
            Io::Transport(t) => t.issm(),
            Io::Layer(l) => l.carrier.issm(),
        }
    }

    /// Registers an agent for the engine `owner`: every MAD read for it goes to that
    /// engine's state machine.
    pub(crate) fn register_owned(&self, spec: &AgentSpec, owner: u64) -> Result<AgentId> {
        let agent = self.register(spec)?;
        self.mux().owned.insert(agent, owner);
        Ok(agent)
    }

    /// Puts a transaction engine's state machine under the port's driver.
    pub(crate) fn attach(&self, core: Core) {
        self.mux().cores.insert(core.owner, core);
    }

    /// Takes an engine's state machine off the port and unregisters its agents.
    pub(crate) fn detach(&self, owner: u64) {
        let core = self.mux().cores.remove(&owner);
        for (_, agent) in core.map(|c| c.agents).into_iter().flatten() {
            let _ = self.unregister(agent);
        }
    }

    /// Runs `f` on engine `owner`'s state under the port's lock (`None`: no such engine).
    pub(crate) fn with_core<T>(&self, owner: u64, f: impl FnOnce(&mut Core) -> T) -> Option<T> {
        self.mux().cores.get_mut(&owner).map(f)
    }

    /// Waits until `take` finds what the caller wants in engine `owner`'s state, or `until`
    /// passes (`Ok(None)`), driving the port meanwhile: reading and routing for everyone,
    /// running the engines' timers, carrying what they launch. `take` also gets the outbox
    /// (to launch requests) and the time.
    pub(crate) fn drive<T>(
        &self,
        owner: u64,
        until: Option<Instant>,
        mut take: impl FnMut(&mut Core, &mut Outbox, Instant) -> Option<T>,
    ) -> Result<Option<T>> {
        self.wait(until, ReadFor::Route, |mux, now| {
            let Mux { cores, outbox, .. } = mux;
            take(cores.get_mut(&owner)?, outbox, now).map(Ok)
        })
    }

    /// Carries what the engines launched, without the lock (taken again after, and
    /// returned); a MAD the transport refuses ends its request with the error. Returns
    /// whether the lock was let go of.
    fn flush<'a>(&'a self, mut mux: MutexGuard<'a, Mux>) -> (MutexGuard<'a, Mux>, bool) {
        let mut released = false;
        while !mux.outbox.is_empty() {
            released = true;
            let batch = mux.take_outbox();
            drop(mux);
            let failed = self.carry(&batch);
            mux = self.mux();
            self.settle(&mut mux, batch, failed);
        }
        (mux, released)
    }

    /// Hands a batch of the outbox to the transport (without the lock), in order. Returns
    /// the MADs the transport refused, with why.
    fn carry(&self, batch: &Outbox) -> Vec<(Transmit, Error)> {
        let mut failed = Vec::new();
        let t = match &self.shared.io {
            Io::Transport(t) => t,
            Io::Layer(_) => {
                // Into the engine in one pass of the lock, then carried by this thread.
                let (mut refused, carried) = self.shared.layer_send(batch.iter().map(|(_, o)| o));
                // Each MAD of the batch fails once: with the engine's refusal, or, when the
                // carrier failed, with that.
                refused.sort_unstable_by_key(|(i, _)| *i);
                let mut refused = refused.into_iter().peekable();
                for (i, (tx, _)) in batch.iter().enumerate() {
                    match refused.next_if(|(r, _)| *r == i) {
                        Some((_, e)) => failed.push((*tx, e)),
                        None => {
                            if let Err(e) = &carried {
                                failed.push((*tx, self.send_failure(e)));
                            }
                        }
                    }
                }
                return failed;
            }
        };
        for (tx, out) in batch.iter() {
            if let Err(e) = t.send(&out) {
                failed.push((*tx, e));
            }
        }
        failed
    }

    /// After [`Port::carry`], under the lock: keeps the batch's buffers and ends each refused
    /// request with its error.
    fn settle(&self, mux: &mut Mux, mut batch: Outbox, failed: Vec<(Transmit, Error)>) {
        batch.clear();
        if mux.spare.is_none() {
            mux.spare = Some(batch);
        }
        if failed.is_empty() {
            return;
        }
        let now = Instant::now();
        let Mux { cores, outbox, .. } = mux;
        for (tx, e) in failed {
            if let Some(core) = cores.get_mut(&tx.owner) {
                core.send_failed(now, tx.key, tx.ticket, e, outbox);
            }
        }
        self.wake(mux);
    }

    /// The error a request gets when the transport failed to carry a batch it was in.
    fn send_failure(&self, e: &Error) -> Error {
        Error::Failed {
            ca: self.ca_name().to_string(),
            port: self.port_num(),
            reason: e.to_string(),
            errno: e.errno(),
        }
    }

    fn mux(&self) -> MutexGuard<'_, Mux> {
        self.shared.lock()
    }

    fn sleep<'a>(
        &self,
        mux: MutexGuard<'a, Mux>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Mux> {
        self.shared.sleep(mux, timeout)
    }

    fn wake(&self, mux: &Mux) {
        self.shared.wake(mux)
    }

    /// Registers a transaction waiting on `key`, refusing a second one on the same key.
    fn claim(&self, key: Key) -> Result<Claim<'_>> {
        let mut mux = self.mux();
        if mux.waiting.contains_key(&key) {
            return Err(Error::InvalidArgument(format!(
                "{} port {}: agent {} already has a transaction waiting for TID {:#010x} (low 32 bits): \
                 concurrent transactions on one agent need distinct TIDs",
                self.ca_name(),
                self.port_num(),
                key.0,
                key.1
            )));
        }
        // A late answer to an earlier, given-up transaction on this key now belongs to this one.
        mux.abandoned.retain(|k| *k != key);
        mux.waiting.insert(key, Slot::Waiting);
        Ok(Claim { port: self, key })
    }

    /// Waits until `take` finds what the caller wants (`Some`), or `until` passes (`Ok(None)`):
    /// the port's driver, the one place where threads read, route, run timers and send.
    ///
    /// While nobody else reads, this thread reads from the transport for at most
    /// [`READ_SLICE`] (and never past `until` or the engines' next deadline), routes what it
    /// got and wakes the others; while another thread reads, it sleeps until that read ends or
    /// `until` passes. After `until` it makes at most one more, non-waiting, read, so a zero
    /// timeout still takes what is there. Whatever the engines launched meanwhile (from `take`,
    /// their timers, or the answers routed) this thread sends itself, without the lock.
    fn wait<T>(
        &self,
        until: Option<Instant>,
        how: ReadFor,
        mut take: impl FnMut(&mut Mux, Instant) -> Option<Result<T>>,
    ) -> Result<Option<T>> {
        let mut mux = self.mux();
        let mut read_late = false;
        loop {
            let now = Instant::now();
            let (timer, fired) = if mux.cores.is_empty() {
                (None, false)
            } else {
                mux.on_timer(now)
            };
            if fired {
                self.wake(&mux);
            }
            if let Some(x) = take(&mut mux, now) {
                drop(self.flush(mux));
                return x.map(Some);
            }
            if mux.reading {
                // Another thread reads: carry what waits now. (With nobody reading, this
                // thread carries it on its way into the read: one pass of the lock for both.)
                let released;
                (mux, released) = self.flush(mux);
                if released {
                    // Things may have changed while the lock was let go of.
                    continue;
                }
            }
            let expired = until.is_some_and(|u| u <= now);
            // On a carrier, MADs the engine already holds for the application need no read:
            // while another thread (the progress thread, say) holds the reader role, this one
            // takes them under the lock itself rather than wait for that read to end — so a
            // zero timeout sees what has arrived, and poll and recv agree.
            if mux.reading && !matches!(how, ReadFor::Peek) && mux.layer_has_ready() {
                let routing = !mux.waiting.is_empty() || !mux.owned.is_empty();
                let how = if routing { ReadFor::Route } else { how };
                let mut batch = mux.batch.take().unwrap_or_default();
                let got = self.shared.layer_take(&mut mux, how, &mut batch);
                for r in batch.drain(..) {
                    mux.route(r, now);
                }
                mux.batch = Some(batch);
                self.wake(&mux);
                match got {
                    Ok(_) => continue,
                    Err(e) => {
                        drop(self.flush(mux));
                        return Err(e);
                    }
                }
            }
            if expired && (read_late || mux.reading) {
                drop(self.flush(mux));
                return Ok(None);
            }
            let wake = match (until, timer) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let left = wake.map(|w| w.saturating_duration_since(now));
            if mux.reading {
                mux = self.sleep(mux, left);
                continue;
            }
            // A transaction engine's agents are always waited on.
            let routing = !mux.waiting.is_empty() || !mux.owned.is_empty();
            let how = if routing { ReadFor::Route } else { how };
            // With more than one request out, whatever else has arrived is read too before
            // the batch is routed: one pass of the lock and wake-ups per batch, not per MAD.
            let gather = mux.in_flight() > 1;
            let mut batch = mux.batch.take().unwrap_or_default();
            // The reader reads into the pool's buffers (taken along, given back after).
            let mut pool = std::mem::take(&mut mux.free);
            let mut rx = Received {
                mad: pool.pop().unwrap_or_default(),
                ..Received::default()
            };
            let carrying = (!mux.outbox.is_empty()).then(|| mux.take_outbox());
            mux.reading = true;
            drop(mux);
            let mut reading = Reading {
                port: self,
                armed: true,
            };
            let failed = carrying.as_ref().map(|b| self.carry(b)).unwrap_or_default();
            let slice = left.map_or(READ_SLICE, |l| l.min(READ_SLICE));
            let mut unused = None;
            let got = match (how, &self.shared.io) {
                // A refused send ended a request: its waiter must see that before any read.
                _ if !failed.is_empty() => {
                    unused = Some(rx.mad);
                    Ok(false)
                }
                (how, Io::Layer(_)) => {
                    let got;
                    let until = now + slice;
                    (unused, got) = self.shared.layer_read(how, until, rx, &mut batch);
                    got
                }
                (ReadFor::Peek, Io::Transport(t)) => {
                    unused = Some(rx.mad);
                    t.poll(Some(slice))
                }
                (ReadFor::Fit(capacity), Io::Transport(t)) => {
                    let got = t.recv_into(Some(slice), capacity, &mut rx);
                    match got {
                        Ok(true) => batch.push(rx),
                        _ => unused = Some(rx.mad),
                    }
                    got.map(|_| false)
                }
                (ReadFor::Route, Io::Transport(t)) => {
                    let got;
                    (unused, got) = read_batch(&**t, slice, gather, rx, &mut pool, &mut batch);
                    got.map(|()| false)
                }
            };
            mux = self.mux();
            reading.armed = false;
            // Buffers given back meanwhile join the pool.
            pool.append(&mut mux.free);
            pool.truncate(FREE_BUFFERS);
            mux.free = pool;
            if let Some(buf) = unused {
                mux.recycle(buf);
            }
            if let Some(batch) = carrying {
                self.settle(&mut mux, batch, failed);
            }
            mux.reading = false;
            mux.reads = mux.reads.wrapping_add(1);
            self.shared.layer_read_ended(&mut mux, !expired);
            read_late |= expired;
            // What it saw may be the answer of a transaction that began meanwhile: then the
            // next pass reads and routes it instead.
            if let Ok(ready) = got {
                mux.transport_ready |= ready && mux.waiting.is_empty() && mux.owned.is_empty();
            }
            // A MAD taken directly still goes through routing: a transaction may have begun
            // waiting for it during the read.
            if !batch.is_empty() {
                let now = Instant::now();
                for r in batch.drain(..) {
                    mux.route(r, now);
                }
            }
            mux.batch = Some(batch);
            self.wake(&mux);
            if let Err(e) = got {
                drop(self.flush(mux));
                return Err(e);
            }
        }
    }
}

/// Reads one MAD (waiting up to `slice`) into `rx` and onto `batch`, and with `gather`
/// whatever else has arrived (without waiting, up to [`GATHER`] MADs), so that it is
/// routed in one pass of the lock and what it frees up is sent together. Gives `rx`'s
/// buffer back when nothing came.
fn read_batch(
    t: &dyn Transport,
    slice: Duration,
    gather: bool,
    mut rx: Received,
    pool: &mut Vec<Vec<u8>>,
    batch: &mut Vec<Received>,
) -> (Option<Vec<u8>>, Result<()>) {
    match t.recv_into(Some(slice), usize::MAX, &mut rx) {
        Ok(true) => batch.push(rx),
        Ok(false) => return (Some(rx.mad), Ok(())),
        Err(e) => return (Some(rx.mad), Err(e)),
    }
    while gather && batch.len() < GATHER {
        let mut rx = Received {
            mad: pool.pop().unwrap_or_default(),
            ..Received::default()
        };
        match t.recv_into(Some(Duration::ZERO), usize::MAX, &mut rx) {
            Ok(true) => batch.push(rx),
            Ok(false) => return (Some(rx.mad), Ok(())),
            Err(e) => return (Some(rx.mad), Err(e)),
        }
    }
    (None, Ok(()))
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Mux> {
        self.mux.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps on [`Port::changed`] until woken or `timeout` (`None`: no limit), counted in
    /// [`Mux::sleepers`] meanwhile.
    fn sleep<'a>(
        &self,
        mut mux: MutexGuard<'a, Mux>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Mux> {
        mux.sleepers += 1;
        let mut mux = match timeout {
            None => self.changed.wait(mux).unwrap_or_else(|p| p.into_inner()),
            Some(t) => {
                self.changed
                    .wait_timeout(mux, t)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
        mux.sleepers -= 1;
        mux
    }

    /// Wakes the threads asleep on [`Port::changed`], if there are any. Called with the lock
    /// held, after the change: a sleeper counted itself under the lock before it slept, so
    /// none is missed. A wake-up is a system call (a futex wake, even with nobody waiting),
    /// and a port used by one thread — the common case — needs none: this saves one per MAD
    /// read.
    fn wake(&self, mux: &Mux) {
        if mux.sleepers > 0 {
            self.changed.notify_all();
        }
    }

    fn ca_name(&self) -> &str {
        match &self.io {
            Io::Transport(t) => t.ca_name(),
            Io::Layer(l) => l.carrier.ca_name(),
        }
    }

    fn port_num(&self) -> u32 {
        match &self.io {
            Io::Transport(t) => t.port_num(),
            Io::Layer(l) => l.carrier.port_num(),
        }
    }
}

impl AsRawFd for Port {
    /// A descriptor that polls readable when MADs arrive (`umad_get_fd`), for event loops.
    ///
    /// While no [`Port::transact`] is waiting, [`Port::poll`] and [`Port::recv_fit`] leave
    /// MADs on the transport until they are taken, so the descriptor is readable exactly while
    /// one waits (the kernel's fd; the MAD layer's eventfd). MADs that a transaction's reader
    /// moved into the port's receive queue no longer make it readable: when transactions run
    /// beside an event loop, call [`Port::recv`] with a zero timeout after a wake-up until it
    /// answers `None`.
    #[doc(alias = "umad_get_fd")]
    fn as_raw_fd(&self) -> RawFd {
        match &self.shared.io {
            Io::Transport(t) => t.raw_fd(),
            Io::Layer(l) => l.readable.raw(),
        }
    }
}

/// The lower 32 bits of a MAD's TID (bytes 12..16), the part the sender owns.
fn tid_low(bytes: &[u8]) -> Option<u32> {
    // The whole 24-byte header is there when the TID is (sends are checked for it anyway).
    let m = ibmad::Mad::new_checked(bytes).ok()?;
    Some(m.tid() as u32)
}

#[cfg(test)]
mod tests;
