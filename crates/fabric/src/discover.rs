//! Fabric discovery: a directed-route walk from the local port over [`umad::rpc`], sending the
//! SMPs rdma-core's libibnetdisc sends and filling the [`Fabric`] model exactly as it fills its
//! own, so that the `ibnetdiscover` writer prints what C `ibnetdiscover` prints.
//!
//! # What is sent (libibnetdisc, rdma-core 44 `ibnetdisc.c`)
//!
//! * Before the walk, the two self look-ups of `ib_resolve_self_via`: NodeInfo and PortInfo
//!   (port 0) of the local port (empty route). They are not counted in "Total MADs used".
//! * NodeInfo of the start route. For every NodeInfo answer: the node is found by NodeGUID
//!   or created; the port it arrived through (NodeInfo.LocalPortNum) gets the NodeInfo's
//!   PortGUID; the port it was reached from is linked to it. A **new** node gets a
//!   NodeDescription query; a new switch also SwitchInfo and then PortInfo of port 0. A node
//!   that is not a switch gets PortInfo of the port it was reached on (new or not).
//! * PortInfo of a switch's port 0 is followed by PortInfo of ports 1..=NumPorts.
//! * PortInfo answer: the port is recorded (a switch's ports take port 0's LID and LMC). With
//!   the Mellanox extended port info enabled (infiniband-diags' default, `MLX_EPI`), a port of
//!   a device known to have it ([`mlnx_ext_port_info_supported`]) that is LinkUp at QDR with
//!   no extended speed first gets a Mellanox ExtendedPortInfo query (FDR10 shows there); the
//!   walk continues from its answer, or from its failure.
//! * Then, if the port is LinkUp, not port 0, and either a switch port other than the one the
//!   SMP came in through (PortInfo.LocalPortNum) or the start node's start port: NodeInfo
//!   through it (the route extended by that port), unless the maximum hop count was passed.
//!
//! # Order
//!
//! libibnetdisc keeps one FIFO of SMPs, sends from its head while fewer than `max_smps` are
//! on the wire and handles answers as they arrive; the simulator (and a quiet fabric) answers
//! in order, so C handles the SMPs in the order it queued them, whatever `-o` is. Here SMPs
//! are sent ahead from the same logical queue (the window, `outstanding`), answers are
//! buffered as they complete, and handled strictly in queue order. Node creation order (and
//! so [`Fabric::nodes`], newest first, as libibnetdisc's lists) is then the same as C's,
//! independent of the order completions arrive in.
//!
//! At the end nodes are grouped into chassis ([`Fabric::group_chassis`], libibnetdisc's
//! `group_nodes`), and [`Fabric::max_hops_discovered`] / [`Fabric::total_mads_used`] are set
//! as libibnetdisc sets them (`ibnetdiscover -m`).
//!
//! # Failures
//!
//! Timeouts (after the rpc's retries), MAD status errors and malformed answers do not stop
//! the walk: each is listed in [`Discovery::missed`] with the route and the SMP, and the
//! fabric keeps what was learnt ([`crate::Queried`] says what a node lacks). A query that
//! fails is treated as C treats it: its follow-ups are not sent (a switch whose PortInfo of
//! port 0 failed has no ports queried; a NodeInfo that failed leaves the port unlinked).
//! A dead port (not LinkUp) is no failure: it is recorded as it is and not walked through.
//!
//! # Example
//!
//! ```no_run
//! use ibfabric::discover::{discover, DiscoverOptions};
//! use ibfabric::WriteOptions;
//!
//! let port = umad::Port::open_smi(None, 0)?; // or native ibsim with UMAD_IBSIM set
//! let d = discover(port, &DiscoverOptions { outstanding: Some(16), ..Default::default() })?;
//! for m in &d.missed {
//!     eprintln!("not reached: {m}");
//! }
//! print!("{}", d.fabric.to_ibnetdiscover(&WriteOptions::default()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibmad::attr::{cap, id, MlnxExtPortInfo};
use ibmad::{DrPath, Method, NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo};
use ibmad::{Smp, SwitchInfo};
use umad::rpc::{Completion, Outcome, Request, Rpc, Ticket};
use umad::MadAddr;

use crate::model::{Fabric, Node, Origin, Port, PortRef, Progress, Queried, Route};

/// CapabilityMask2 bit: LinkSpeedExtActive2 and friends are valid (IBA 1.7, XDR).
const CAP2_IS_EXT_SPEEDS_2_SUPPORTED: u16 = 1 << 11;

/// PortInfo.LinkSpeedActive code of QDR.
const SPEED_QDR: u8 = 4;

/// A progress callback: called for every NodeInfo answer, in libibnetdisc's order.
pub type ProgressFn = Arc<dyn Fn(&ProgressEvent<'_>) + Send + Sync>;

/// How to discover.
#[derive(Clone)]
pub struct DiscoverOptions {
    /// libibnetdisc's `max_hops` (0 = no limit): no NodeInfo is sent through a port once a
    /// route longer than this has been seen (C's rule, which lets one NodeInfo one hop
    /// further through).
    pub max_hops: u32,
    /// SMPs in flight at most (C `ibnetdiscover -o`); `None`: as many as the rpc's window
    /// takes (everything known is handed to it).
    pub outstanding: Option<usize>,
    /// Time to wait for each answer (per try); `None`: the rpc's default.
    pub timeout: Option<Duration>,
    /// Retries after a timeout; `None`: the rpc's default.
    pub retries: Option<u32>,
    /// Query Mellanox ExtendedPortInfo where libibnetdisc does (its `IBND_CONFIG_MLX_EPI`,
    /// on by default in infiniband-diags).
    pub mlx_epi: bool,
    /// The route to start from (default: the local port).
    pub from: DrPath,
    /// Start LID-routed at this LID instead (0: directed from the local port along
    /// [`from`](Self::from)), as libibnetdisc does from a portid the diags resolved from a
    /// GUID: the start node's SMPs go LID-routed, every route further LID-routed to it then
    /// directed (DrSLID the local LID, DrDLID permissive), and the walk never goes on
    /// through a CA ("we can't proceed through an HCA with DR"). Each node's
    /// [`path`](crate::Node::path) is then the directed part after that LID.
    pub from_lid: u16,
    /// Keep a [`Progress`] record per NodeInfo answer in [`Fabric::progress`] (what
    /// `ibnetdiscover -s` prints).
    pub record_progress: bool,
    /// Called for every NodeInfo answer (for a CLI's progress display).
    pub progress: Option<ProgressFn>,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            max_hops: 0,
            outstanding: None,
            timeout: None,
            retries: None,
            mlx_epi: true,
            from: DrPath::local(),
            from_lid: 0,
            record_progress: false,
            progress: None,
        }
    }
}

impl fmt::Debug for DiscoverOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiscoverOptions")
            .field("max_hops", &self.max_hops)
            .field("outstanding", &self.outstanding)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("mlx_epi", &self.mlx_epi)
            .field("from", &self.from)
            .field("from_lid", &self.from_lid)
            .field("record_progress", &self.record_progress)
            .field("progress", &self.progress.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// What the progress callback sees: one NodeInfo answer, and counters.
#[derive(Debug)]
pub struct ProgressEvent<'a> {
    /// The answer as `ibnetdiscover -s` prints it (node index is in the fabric being built,
    /// in discovery order: 0 is the start node).
    pub record: &'a Progress,
    /// The node's GUID.
    pub guid: u64,
    /// The node's type.
    pub node_type: NodeType,
    /// Nodes found so far.
    pub nodes: usize,
    /// SMPs queued so far (sent or waiting).
    pub smps: usize,
    /// SMPs answered or failed so far.
    pub done: usize,
}

/// One SMP libibnetdisc sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    /// NodeInfo.
    NodeInfo,
    /// NodeDescription.
    NodeDescription,
    /// SwitchInfo.
    SwitchInfo,
    /// PortInfo of a port.
    PortInfo(u8),
    /// Mellanox ExtendedPortInfo of a port.
    MlnxExtPortInfo(u8),
}

impl Query {
    /// Attribute ID and modifier.
    pub fn attribute(self) -> (u16, u32) {
        match self {
            Query::NodeInfo => (id::NODE_INFO, 0),
            Query::NodeDescription => (id::NODE_DESC, 0),
            Query::SwitchInfo => (id::SWITCH_INFO, 0),
            Query::PortInfo(p) => (id::PORT_INFO, u32::from(p)),
            Query::MlnxExtPortInfo(p) => (id::MLNX_EXT_PORT_INFO, u32::from(p)),
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::NodeInfo => f.write_str("NodeInfo"),
            Query::NodeDescription => f.write_str("NodeDescription"),
            Query::SwitchInfo => f.write_str("SwitchInfo"),
            Query::PortInfo(p) => write!(f, "PortInfo port {p}"),
            Query::MlnxExtPortInfo(p) => write!(f, "MlnxExtPortInfo port {p}"),
        }
    }
}

/// Why an SMP got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissReason {
    /// No answer after all retries.
    Timeout,
    /// Answered with a non-zero MAD status (D bit removed).
    MadStatus(u16),
    /// The answer could not be parsed.
    Malformed(String),
    /// The transaction was aborted or failed locally.
    Failed(String),
    /// Not asked, or given up while in flight: the fabric had stopped answering (see
    /// [`DiscoverStats::abandoned`]).
    Silent,
}

impl fmt::Display for MissReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissReason::Timeout => f.write_str("timed out"),
            MissReason::MadStatus(s) => write!(f, "MAD status {s:#06x}"),
            MissReason::Malformed(e) => write!(f, "malformed answer: {e}"),
            MissReason::Failed(e) => write!(f, "failed: {e}"),
            MissReason::Silent => f.write_str("given up: the fabric had stopped answering"),
        }
    }
}

/// An SMP that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    /// The directed route it was sent on.
    pub path: DrPath,
    /// What it asked.
    pub query: Query,
    /// The GUID of the node it asked about (`None` for a NodeInfo: the node is unknown).
    pub node_guid: Option<u64>,
    /// Why it failed.
    pub reason: MissReason,
}

impl fmt::Display for Missed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DR path {}: {} ", self.path, self.query)?;
        if let Some(g) = self.node_guid {
            write!(f, "of node {g:#018x} ")?;
        }
        write!(f, "{}", self.reason)
    }
}

/// Counters of one discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoverStats {
    /// SMPs of the walk (C's "Total MADs used"; retries not counted, self look-ups neither).
    pub smps: usize,
    /// SMPs answered with success.
    pub answered: usize,
    /// SMPs that timed out after their retries.
    pub timeouts: usize,
    /// SMPs answered with an error status, malformed, or failed locally.
    pub errors: usize,
    /// SMPs given up because the fabric stopped answering: once nothing has answered for a
    /// whole budget (timeout × tries) with SMPs in flight, the node that answered last is asked again (a probe);
    /// when the probe gets no answer (it has at most two tries), the walk ends, the SMPs in flight and those it would still have sent are recorded as
    /// [`MissReason::Silent`], and the topology is partial. 0 in a walk that ran to its end.
    pub abandoned: usize,
    /// Probes sent to see whether the fabric was still there (not counted in `smps`).
    pub probes: usize,
    /// Requests the rpc handed to the port during the walk (each once, however often the
    /// transport retried it).
    pub sent: u64,
    /// The most requests the rpc had in flight at once (its maximum since it was made).
    pub max_in_flight: usize,
    /// The most SMPs the walk had handed to the rpc and not yet collected (sent or waiting
    /// in the rpc's queue).
    pub max_submitted: usize,
    /// libibnetdisc's `maxhops_discovered` (printed by `ibnetdiscover -m`).
    pub max_hops_discovered: u32,
    /// Wall-clock time of the walk.
    pub elapsed: Duration,
}

/// The result of a discovery: the fabric, what could not be queried, counters.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The fabric, nodes in libibnetdisc's order (newest first).
    pub fabric: Fabric,
    /// Every SMP that got no usable answer, in the walk's order.
    pub missed: Vec<Missed>,
    /// Counters.
    pub stats: DiscoverStats,
    /// The local port's LID (from the self look-up).
    pub self_lid: u16,
    /// The local node's NodeInfo (from the self look-up).
    pub self_node: NodeInfo,
    /// Every PortInfo answered, whole, by (node GUID, port number): the fields the model
    /// does not keep (supported widths and speeds, HOQ life, VL stall count, ...) for tools
    /// such as iblinkinfo.
    pub port_infos: HashMap<(u64, u8), PortInfo>,
}

impl Discovery {
    /// Whether every SMP was answered.
    pub fn is_complete(&self) -> bool {
        self.missed.is_empty()
    }

    /// Whether the walk was cut short because the fabric stopped answering
    /// ([`DiscoverStats::abandoned`]): the topology is a prefix of the fabric, not the
    /// fabric with some parts unreachable.
    pub fn went_silent(&self) -> bool {
        self.stats.abandoned > 0
    }
}

/// Discovers the fabric through `port` with a new [`Rpc`] (window from
/// [`DiscoverOptions::outstanding`], else the rpc default).
///
/// # Errors
/// Only when the self look-ups fail or the rpc itself fails; unreachable parts of the fabric
/// are reported in [`Discovery::missed`].
pub fn discover(port: umad::Port, opts: &DiscoverOptions) -> umad::Result<Discovery> {
    discover_with(&engine(port, opts), opts)
}

/// The [`Rpc`] [`discover`] makes over `port`: its window is
/// [`DiscoverOptions::outstanding`], else the rpc default. For callers that want to set it
/// up (an observer, a budget) before [`discover_with`].
pub fn engine(port: umad::Port, opts: &DiscoverOptions) -> Rpc {
    match opts.outstanding {
        Some(n) => Rpc::with_window(port, umad::rpc::Window::of(n)),
        None => Rpc::new(port),
    }
}

/// Discovers the fabric with an existing [`Rpc`] (its window and budget). Discovery collects
/// on a [session](Rpc::session) of its own, so other users of the engine keep their
/// completions.
///
/// # Errors
/// As [`discover`].
pub fn discover_with(rpc: &Rpc, opts: &DiscoverOptions) -> umad::Result<Discovery> {
    let started = Instant::now();
    // ib_resolve_self_via: NodeInfo and PortInfo of the local port.
    let self_node = rpc.smp_get::<NodeInfo>(&umad::rpc::Target::Dr(DrPath::local()), 0)?;
    let self_port = rpc.smp_get::<PortInfo>(&umad::rpc::Target::Dr(DrPath::local()), 0)?;
    let before = rpc.stats();
    let mut scan = Scan::new(opts, self_port.lid);
    scan.run(&rpc.session())?;
    let mut d = scan.finish();
    let after = rpc.stats();
    d.stats.sent = after.sent - before.sent;
    d.stats.max_in_flight = after.max_in_flight;
    d.self_lid = self_port.lid;
    d.self_node = self_node;
    d.stats.elapsed = started.elapsed();
    Ok(d)
}

/// Whether an SMP's outcome came from the fabric: an answer, even with an error status or
/// malformed (a timeout or a local failure is not one).
fn answered(result: &Result<Vec<u8>, MissReason>) -> bool {
    !matches!(result, Err(MissReason::Timeout | MissReason::Failed(_)))
}

/// What to do with an answer.
#[derive(Debug, Clone, Copy)]
enum Ctx {
    /// NodeInfo, reached from this port (None: the start).
    NodeInfo(Option<PortRef>),
    /// A per-node query (node index in discovery order).
    Node(usize),
}

struct Entry {
    path: DrPath,
    query: Query,
    ctx: Ctx,
    /// The answer's SMP data, or why there is none; `None` while outstanding.
    result: Option<Result<Vec<u8>, MissReason>>,
}

/// Per-node bookkeeping beside the model.
#[derive(Default)]
struct Book {
    port_info_issued: usize,
    port_info_answered: usize,
}

struct Scan<'o> {
    opts: &'o DiscoverOptions,
    queue: Vec<Entry>,
    /// Nodes in discovery order.
    fabric: Fabric,
    books: Vec<Book>,
    by_guid: HashMap<u64, usize>,
    from: Option<PortRef>,
    max_hops_discovered: u32,
    initial_hops: u32,
    /// The local port's LID (the DrSLID of routes from [`DiscoverOptions::from_lid`]).
    self_lid: u16,
    missed: Vec<Missed>,
    stats: DiscoverStats,
    done: usize,
    /// PortInfo.LocalPortNum of each answered PortInfo (the port the SMP entered by).
    local_port: HashMap<(usize, u8), u8>,
    /// A switch's port 0 CapabilityMask2 (the model keeps only CapabilityMask).
    port0_cap2: HashMap<usize, u16>,
    /// Every PortInfo answered, by (node GUID, port number).
    port_infos: HashMap<(u64, u8), PortInfo>,
}

impl<'o> Scan<'o> {
    fn new(opts: &'o DiscoverOptions, self_lid: u16) -> Scan<'o> {
        let mut s = Scan {
            opts,
            queue: Vec::new(),
            fabric: Fabric::default(),
            books: Vec::new(),
            by_guid: HashMap::new(),
            from: None,
            max_hops_discovered: 0,
            initial_hops: u32::from(opts.from.hop_count()),
            self_lid,
            missed: Vec::new(),
            stats: DiscoverStats::default(),
            done: 0,
            local_port: HashMap::new(),
            port0_cap2: HashMap::new(),
            port_infos: HashMap::new(),
        };
        s.issue(opts.from, Query::NodeInfo, Ctx::NodeInfo(None));
        s
    }

    fn issue(&mut self, path: DrPath, query: Query, ctx: Ctx) {
        if let (Query::PortInfo(_), Ctx::Node(n)) = (query, ctx) {
            self.books[n].port_info_issued += 1;
        }
        self.queue.push(Entry {
            path,
            query,
            ctx,
            result: None,
        });
    }

    fn request(&self, e: &Entry) -> Request {
        let (attr, modifier) = e.query.attribute();
        let lid = self.opts.from_lid;
        let (mad, addr) = if lid == 0 {
            let mad = Smp::dr_request(Method::Get, attr, modifier, 0, &e.path);
            (mad, MadAddr::directed_route())
        } else if e.path.hop_count() == 0 {
            (
                Smp::lid_request(Method::Get, attr, modifier, 0),
                MadAddr::smi(lid),
            )
        } else {
            // Combined routing: LID-routed to `lid`, directed from there.
            let mut mad = Smp::dr_request(Method::Get, attr, modifier, 0, &e.path);
            Smp::new_unchecked(&mut mad[..]).set_dr_slid(self.self_lid);
            (mad, MadAddr::smi(lid))
        };
        let mut req = Request::new(mad.to_vec(), addr);
        if let Some(t) = self.opts.timeout {
            req = req.timeout(t);
        }
        if let Some(r) = self.opts.retries {
            req = req.retries(r);
        }
        req
    }

    /// One SMP's whole budget: timeout × (retries + 1), with the rpc's defaults.
    fn request_budget(&self) -> Duration {
        let per_try = self.opts.timeout.unwrap_or(umad::rpc::DEFAULT_TIMEOUT);
        let tries = self.opts.retries.unwrap_or(umad::rpc::DEFAULT_RETRIES) + 1;
        per_try * tries
    }

    /// The stall guard: how long `next` may stay silent with SMPs in flight before they are
    /// given up (the rpc completes every request itself; this only bounds a broken engine).
    fn stall_limit(&self) -> Duration {
        self.request_budget() * 4 + Duration::from_secs(10)
    }

    fn run(&mut self, rpc: &Rpc) -> umad::Result<()> {
        let window = self.opts.outstanding.map_or(usize::MAX, |n| n.max(1));
        let mut tickets: HashMap<Ticket, usize> = HashMap::new();
        let mut next_send = 0usize;
        let mut next_handle = 0usize;
        let mut last_progress = Instant::now();
        // Has the fabric gone silent? Once nothing has answered for a whole budget (every
        // try of an SMP) while SMPs are in flight, the node that answered last is asked for
        // its NodeInfo again (a probe, not part of the walk). If the probe times out too,
        // every SMP left would only time out as well (a walk of 1,000 SMPs left at 32 in
        // flight would take 1,000 / 32 budgets): the walk ends, about one budget plus two
        // tries after the last answer. If anything answers, the fabric is there and the
        // SMPs timing out are the walk's own dead ends (a switch whose peers do not answer)
        // or lost packets: it goes on, as C's. A whole budget, not one try: on a lossy
        // fabric the walk often waits a try for its lost SMPs' retries with nothing else to
        // send, and a probe after one try of silence ended such walks early (20 % loss).
        let silence = self.request_budget();
        let mut last_answer = Instant::now();
        let mut last_answered = self.opts.from;
        let mut probe: Option<Ticket> = None;
        let mut silent = false;
        while next_handle < self.queue.len() {
            if !silent && probe.is_none() && !tickets.is_empty() && last_answer.elapsed() >= silence
            {
                let e = Entry {
                    path: last_answered,
                    query: Query::NodeInfo,
                    ctx: Ctx::NodeInfo(None),
                    result: None,
                };
                // At most two tries: it usually waits behind the walk's SMPs for room in the
                // window, so a silent fabric ends one budget plus two tries after its last
                // answer (a lossy one still gets a second chance).
                let tries = self
                    .opts
                    .retries
                    .unwrap_or(umad::rpc::DEFAULT_RETRIES)
                    .min(1);
                probe = rpc.submit(self.request(&e).retries(tries)).ok();
                self.stats.probes += usize::from(probe.is_some());
            }
            // While a probe is out the walk sends nothing new: the probe gets the first room
            // in the window, and a dead fabric is not fed another window of SMPs meanwhile.
            while !silent
                && probe.is_none()
                && next_send < self.queue.len()
                && tickets.len() < window
            {
                let req = self.request(&self.queue[next_send]);
                match rpc.submit(req) {
                    Ok(t) => {
                        tickets.insert(t, next_send);
                    }
                    Err(e) => {
                        self.queue[next_send].result = Some(Err(MissReason::Failed(e.to_string())))
                    }
                }
                next_send += 1;
                self.stats.max_submitted = self.stats.max_submitted.max(tickets.len());
            }
            if silent && self.queue[next_handle].result.is_none() {
                // Issued after the silence began (or never sent): not asked.
                self.queue[next_handle].result = Some(Err(MissReason::Silent));
            }
            if let Some(result) = self.queue[next_handle].result.take() {
                self.handle(next_handle, result);
                next_handle += 1;
                self.done += 1;
                continue;
            }
            match rpc.next(Some(Duration::from_millis(100)))? {
                Some(c) => {
                    last_progress = Instant::now();
                    if probe == Some(c.ticket) {
                        probe = None;
                        if answered(&outcome(c)) {
                            last_answer = last_progress;
                        } else {
                            silent = true;
                            for (_, i) in tickets.drain() {
                                self.queue[i].result = Some(Err(MissReason::Silent));
                            }
                        }
                    } else if let Some(i) = tickets.remove(&c.ticket) {
                        let result = outcome(c);
                        if answered(&result) {
                            last_answer = last_progress;
                            last_answered = self.queue[i].path;
                        }
                        self.queue[i].result = Some(result);
                    }
                }
                None => {
                    if !tickets.is_empty() && last_progress.elapsed() > self.stall_limit() {
                        for (_, i) in tickets.drain() {
                            self.queue[i].result =
                                Some(Err(MissReason::Failed("no completion from the rpc".into())));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn handle(&mut self, i: usize, result: Result<Vec<u8>, MissReason>) {
        if result != Err(MissReason::Silent) {
            self.stats.smps += 1;
        }
        let (path, query, ctx) = {
            let e = &self.queue[i];
            (e.path, e.query, e.ctx)
        };
        let data = match result {
            Ok(d) => {
                self.stats.answered += 1;
                d
            }
            Err(reason) => {
                match reason {
                    MissReason::Timeout => self.stats.timeouts += 1,
                    MissReason::Silent => self.stats.abandoned += 1,
                    _ => self.stats.errors += 1,
                }
                self.miss(path, query, ctx, reason);
                // libibnetdisc: a failed Mellanox ExtendedPortInfo still lets the walk go on.
                if let (Query::MlnxExtPortInfo(p), Ctx::Node(n)) = (query, ctx) {
                    self.continue_from_port(n, p, path);
                }
                return;
            }
        };
        let raw = raw_attr(&data);
        let parsed = match (query, ctx) {
            (Query::NodeInfo, Ctx::NodeInfo(from)) => {
                NodeInfo::parse(&data).map(|ni| self.node_info(path, from, &ni, raw))
            }
            (Query::NodeDescription, Ctx::Node(n)) => NodeDescription::parse(&data).map(|d| {
                let node = &mut self.fabric.nodes[n];
                node.description = Node::description_from_bytes(d.as_bytes());
                node.queried.node_description = true;
                node.raw.get_or_insert_with(Default::default).node_desc = raw;
            }),
            (Query::SwitchInfo, Ctx::Node(n)) => SwitchInfo::parse(&data).map(|si| {
                let node = &mut self.fabric.nodes[n];
                node.enhanced_port0 = si.enhanced_port0;
                node.queried.switch_info = true;
                node.raw.get_or_insert_with(Default::default).switch_info = raw;
            }),
            (Query::PortInfo(p), Ctx::Node(n)) => PortInfo::parse(&data).map(|pi| {
                self.port_info(path, n, p, &pi);
                if let Some(port) = self.fabric.nodes[n].port_mut(p) {
                    port.raw_info = Some(Box::new(raw));
                }
            }),
            (Query::MlnxExtPortInfo(p), Ctx::Node(n)) => MlnxExtPortInfo::parse(&data).map(|x| {
                if let Some(port) = self.fabric.nodes[n].port_mut(p) {
                    port.mlnx_speed = x.link_speed_active;
                }
                self.continue_from_port(n, p, path);
            }),
            _ => Ok(()),
        };
        if let Err(e) = parsed {
            self.stats.answered -= 1;
            self.stats.errors += 1;
            self.miss(path, query, ctx, MissReason::Malformed(e.to_string()));
        }
    }

    fn miss(&mut self, path: DrPath, query: Query, ctx: Ctx, reason: MissReason) {
        let node_guid = match ctx {
            Ctx::Node(n) => Some(self.fabric.nodes[n].guid),
            Ctx::NodeInfo(_) => None,
        };
        self.missed.push(Missed {
            path,
            query,
            node_guid,
            reason,
        });
    }

    /// `recv_node_info`.
    fn node_info(&mut self, path: DrPath, from: Option<PortRef>, ni: &NodeInfo, raw: [u8; 64]) {
        let port_num = ni.local_port_num;
        let (n, new) = match self.by_guid.get(&ni.node_guid) {
            Some(&n) => (n, false),
            None => {
                let n = self.create_node(path, ni);
                self.fabric.nodes[n]
                    .raw
                    .get_or_insert_with(Default::default)
                    .node_info = raw;
                (n, true)
            }
        };
        {
            let node = &mut self.fabric.nodes[n];
            match node.port_mut(port_num) {
                Some(p) => p.guid = ni.port_guid,
                None => {
                    let mut p = Port::new(port_num, ni.port_guid);
                    p.has_info = false;
                    node.set_port(p);
                }
            }
        }
        self.progress(path, new, n, port_num);
        let here = PortRef {
            node: n,
            port: port_num,
        };
        match from {
            None => {
                self.from = Some(here);
            }
            Some(remote) => {
                self.fabric.link(here, remote);
            }
        }
        let is_switch = self.fabric.nodes[n].is_switch();
        if new {
            self.issue(path, Query::NodeDescription, Ctx::Node(n));
            if is_switch {
                self.issue(path, Query::SwitchInfo, Ctx::Node(n));
                self.issue(path, Query::PortInfo(0), Ctx::Node(n));
            }
        }
        if !is_switch {
            self.issue(path, Query::PortInfo(port_num), Ctx::Node(n));
        }
    }

    fn create_node(&mut self, path: DrPath, ni: &NodeInfo) -> usize {
        let mut node = Node::from_node_info(
            ni,
            Route {
                slid: 0,
                dlid: 0,
                path,
            },
        );
        if self.opts.from_lid != 0 && path.hop_count() > 0 {
            // libibnetdisc's extend_dpath on a LID-routed portid.
            node.path.slid = self.self_lid;
            node.path.dlid = ibmad::smp::PERMISSIVE_LID;
        }
        let is_switch = ni.node_type == NodeType::Switch;
        node.queried = Queried {
            node_description: false,
            switch_info: !is_switch,
            port_info: false,
        };
        let n = self.fabric.nodes.len();
        self.fabric.nodes.push(node);
        self.books.push(Book::default());
        self.by_guid.insert(ni.node_guid, n);
        n
    }

    fn progress(&mut self, path: DrPath, new: bool, n: usize, port_num: u8) {
        if !self.opts.record_progress && self.opts.progress.is_none() {
            return;
        }
        let node = &self.fabric.nodes[n];
        let (lid, lmc) = node.port(port_num).map_or((0, 0), |p| (p.lid, p.lmc));
        let record = Progress {
            route: Route {
                slid: 0,
                dlid: 0,
                path,
            },
            new,
            node: n,
            port: if node.is_switch() { 0 } else { port_num },
            lid,
            lmc,
            description: node.description.clone(),
        };
        if let Some(cb) = &self.opts.progress {
            cb(&ProgressEvent {
                record: &record,
                guid: node.guid,
                node_type: node.node_type,
                nodes: self.fabric.nodes.len(),
                smps: self.queue.len(),
                done: self.done,
            });
        }
        if self.opts.record_progress {
            self.fabric.progress.push(record);
        }
    }

    /// `recv_port_info` (and `recv_port0_info`).
    fn port_info(&mut self, path: DrPath, n: usize, port_num: u8, pi: &PortInfo) {
        self.books[n].port_info_answered += 1;
        self.local_port.insert((n, port_num), pi.local_port_num);
        let node = &mut self.fabric.nodes[n];
        self.port_infos.insert((node.guid, port_num), *pi);
        let is_switch = node.is_switch();
        node.apply_port_info(port_num, pi);

        let mut mlnx = false;
        if self.opts.mlx_epi
            && mlnx_ext_port_info_supported(node.vendor_id, node.device_id)
            && pi.port_physical_state == PhysPortState::LinkUp
            && pi.link_speed_active == SPEED_QDR
        {
            // The capability mask that counts: a switch's port 0, a CA's own port.
            let cap_info = if is_switch {
                node.port(0).map(|p0| p0.capability_mask)
            } else {
                Some(pi.capability_mask)
            };
            // Port 0's CapabilityMask2 is not kept in the model; C reads it from the same
            // PortInfo it takes CapabilityMask from.
            let cap2 = if is_switch && port_num != 0 {
                self.port0_cap2.get(&n).copied().unwrap_or(0)
            } else {
                pi.capability_mask2
            };
            if agg_link_speed_ext(cap_info.unwrap_or(0), cap2, pi) == 0 {
                mlnx = true;
            }
        }
        if port_num == 0 && is_switch {
            self.port0_cap2.insert(n, pi.capability_mask2);
        }
        if mlnx {
            self.issue(path, Query::MlnxExtPortInfo(port_num), Ctx::Node(n));
        } else {
            self.continue_from_port(n, port_num, path);
        }
        if port_num == 0 && is_switch {
            let num_ports = self.fabric.nodes[n].num_ports;
            for p in 1..=num_ports {
                self.issue(path, Query::PortInfo(p), Ctx::Node(n));
            }
        }
    }

    /// The tail of `recv_port_info`: NodeInfo through the port if the walk goes on there.
    fn continue_from_port(&mut self, n: usize, port_num: u8, path: DrPath) {
        let node = &self.fabric.nodes[n];
        let Some(port) = node.port(port_num) else {
            return;
        };
        if !port.has_info {
            return;
        }
        let local_port = self.local_port.get(&(n, port_num)).copied().unwrap_or(0);
        let is_from = self.from
            == Some(PortRef {
                node: n,
                port: port_num,
            });
        let is_from_node = self.from.is_some_and(|f| f.node == n);
        if port_num == 0
            || port.phys_state != PhysPortState::LinkUp
            || !((node.is_switch() && port_num != local_port) || is_from)
        {
            return;
        }
        let mut next = path;
        let go = if !node.is_switch() && is_from_node && next.hop_count() > 1 {
            self.retract(&mut next)
        } else if self.opts.from_lid == 0 || node.is_switch() {
            // "we can't proceed through an HCA with DR" (from a LID-routed start).
            self.extend(&mut next, port_num)
        } else {
            false
        };
        if go {
            self.issue(
                next,
                Query::NodeInfo,
                Ctx::NodeInfo(Some(PortRef {
                    node: n,
                    port: port_num,
                })),
            );
        }
    }

    /// `retract_dpath`.
    fn retract(&mut self, path: &mut DrPath) -> bool {
        if self.opts.max_hops != 0 && self.max_hops_discovered > self.opts.max_hops {
            return false;
        }
        self.max_hops_discovered += 1;
        path.pop();
        true
    }

    /// `extend_dpath`.
    fn extend(&mut self, path: &mut DrPath, port: u8) -> bool {
        if self.opts.max_hops != 0 && self.max_hops_discovered > self.opts.max_hops {
            return false;
        }
        // libibnetdisc refuses past 62 hops (its path array keeps a spare byte).
        if usize::from(path.hop_count()) >= DrPath::MAX_HOPS - 1 || path.push(port).is_err() {
            return false;
        }
        if u32::from(path.hop_count()).saturating_sub(self.initial_hops) > self.max_hops_discovered
        {
            self.max_hops_discovered += 1;
        }
        true
    }

    fn finish(mut self) -> Discovery {
        for (node, book) in self.fabric.nodes.iter_mut().zip(&self.books) {
            node.queried.port_info =
                book.port_info_issued > 0 && book.port_info_issued == book.port_info_answered;
        }
        self.fabric.from = self.from.map(|f| Origin {
            node: f.node,
            port: f.port,
        });
        self.stats.max_hops_discovered = self.max_hops_discovered + self.initial_hops;
        self.fabric.max_hops_discovered = Some(self.stats.max_hops_discovered);
        self.fabric.total_mads_used = u32::try_from(self.stats.smps).ok();
        self.fabric.reverse_nodes();
        // libibnetdisc's group_nodes, on its node order.
        self.fabric.group_chassis();
        Discovery {
            fabric: self.fabric,
            missed: self.missed,
            stats: self.stats,
            self_lid: 0,
            self_node: NodeInfo::default(),
            port_infos: self.port_infos,
        }
    }
}

/// An rpc completion as SMP data or a reason.
/// The 64-byte SMP data area of an answer, as libibnetdisc copies it (short data padded
/// with zeros).
fn raw_attr(data: &[u8]) -> [u8; 64] {
    let mut raw = [0; 64];
    let n = data.len().min(64);
    raw[..n].copy_from_slice(&data[..n]);
    raw
}

fn outcome(c: Completion) -> Result<Vec<u8>, MissReason> {
    match c.outcome {
        Outcome::Response(r) => {
            let smp =
                Smp::new_checked(&r.mad[..]).map_err(|e| MissReason::Malformed(e.to_string()))?;
            let status = smp.status().without_direction();
            if !status.is_success() {
                return Err(MissReason::MadStatus(status.raw()));
            }
            Ok(smp.data().to_vec())
        }
        Outcome::Timeout => Err(MissReason::Timeout),
        Outcome::Aborted => Err(MissReason::Failed("aborted".into())),
        Outcome::Failed(e) => Err(MissReason::Failed(e.to_string())),
    }
}

/// libibnetdisc's `ibnd_get_agg_linkspeedext`: LinkSpeedExtActive (or, where the capability
/// masks say so, LinkSpeedExtActive2 shifted by 5), judged by the capability masks of
/// `cap_mask`/`cap_mask2` (a switch's port 0, a CA's own port). 0: no extended speed.
pub fn agg_link_speed_ext(cap_mask: u32, cap_mask2: u16, info: &PortInfo) -> u8 {
    if cap_mask & cap::IS_EXTENDED_SPEEDS_SUPPORTED == 0 {
        return 0;
    }
    let espeed = info.link_speed_ext_active;
    let mut e2 = 0u8;
    if cap_mask & cap::IS_CAPABILITY_MASK2_SUPPORTED != 0
        && cap_mask2 & CAP2_IS_EXT_SPEEDS_2_SUPPORTED != 0
    {
        e2 = info.link_speed_ext_active2 << 5;
    }
    if e2 != 0 {
        e2
    } else {
        espeed
    }
}

/// libibnetdisc's `is_mlnx_ext_port_info_supported`: the Mellanox (and Bull) device IDs that
/// answer the Mellanox ExtendedPortInfo attribute.
pub fn mlnx_ext_port_info_supported(vendor_id: u32, device_id: u16) -> bool {
    let bull = vendor_id == 0x119f;
    let d = device_id;
    // Switches: SwitchX, Switch-IB (2), Spectrum, Quantum (1, 2); Bull's SwitchX, Switch-IB
    // (2) and Quantum.
    if (0xc738..=0xc73b).contains(&d)
        || matches!(d, 0xc839 | 0xcb20 | 0xcf08 | 0xcf09 | 0xd2f0)
        || (bull
            && (matches!(d, 0x1b02 | 0x1b50 | 0x1ba0 | 0x1bf0) || (0x1bd0..=0x1bd5).contains(&d)))
    {
        return true;
    }
    // Adapters: ConnectX-3 .. ConnectX-7 family (0x1003..=0x101b), BlueField-2 (0xa2d2); Bull's
    // ConnectX-3, Connect-IB, ConnectX-4 and Sequana HDR/HDR100.
    (0x1003..=0x101b).contains(&d)
        || d == 0xa2d2
        || (bull
            && (matches!(
                d,
                0x1b33
                    | 0x1b73
                    | 0x1b40
                    | 0x1b41
                    | 0x1b60
                    | 0x1b61
                    | 0x1b83
                    | 0x1b93
                    | 0x1b94
                    | 0x1bb4
                    | 0x1bb5
            ) || (0x1bc4..=0x1bc6).contains(&d)))
}
