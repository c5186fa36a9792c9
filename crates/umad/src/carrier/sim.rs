//! A fabric simulated in this process ([`ibnetsim`]) as a packet carrier: no daemon, no
//! preload, nothing installed. Selected with `UMAD_SIM=<netfile or built-in name>` (`example`,
//! `fattree:36,8,28`, `ring:8`, ...: `ibnetsim::generate`) (and `UMAD_SIM_NODE=<node
//! id or NodeDescription>`) in [`Port::open`](crate::Port::open), or with
//! [`Port::open_sim`](crate::Port::open_sim).
//!
//! Every port of a process opened on the same netfile attaches to one shared fabric. By
//! default the fabric starts as a subnet manager would leave it (LIDs given, linked ports
//! Active), since no SM runs in process; `UMAD_SIM_UNCONFIGURED=1` starts it as hardware
//! powers on.
//!
//! What it answers: SMPs by directed route and, on a configured fabric, by LID (the SMA's
//! attributes, Get and Set), and PerfMgt (the PMA); see the `ibnetsim` README. A
//! request the fabric's agents do not answer (SA and the other GSI classes; SMInfo and traps
//! at a port holding IsSM, [`Port::issm`](crate::Port::issm)) goes to a port of this process
//! attached where it arrived — the one holding IsSM first — and that port's answers (RMPP
//! segments and ACKs included) come back by LID to the port that asked: an SA, an SM or any
//! GSI server in process serves the other ports; a directed-route request (SMInfo to an SM)
//! arrives with the return path its walk left, and its answer walks back along it. With no
//! such port the request is dropped and times out, as on a fabric where nothing answers it.
//!
//! `UMAD_SIM_FAULTS=<spec>` sets seeded faults (`ibnetsim::faults`: lost packets, dead
//! nodes, late, duplicated and corrupted answers), the same spec giving the same faults in
//! every run. Late answers are handed over by a timer thread of the fabric's, which runs
//! only while answers are on their way.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::os::unix::io::RawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use ibmad::Mad;
use ibnetsim::{Delivery, Fabric, Net, NodeIdx};

use crate::addr::MadAddr;
use crate::device::Ca;
use crate::layer::{Carrier, Packet};
use crate::sys::EventFlag;
use crate::transport::Issm;
use crate::{Error, Result};

/// Environment variable naming the fabric to simulate in process: a netfile, or a built-in
/// name (`example`, `fattree:LEAVES,SPINES,HOSTS_PER_LEAF`, `ring:N`, `mesh:WxH`, ...; a
/// path that exists wins).
pub const ENV_SIM: &str = "UMAD_SIM";
/// Environment variable naming the node (id or NodeDescription) to attach to.
pub const ENV_SIM_NODE: &str = "UMAD_SIM_NODE";
/// Environment variable that, set to `1`, starts the fabric unconfigured (no LIDs, ports
/// Initialize), as hardware powers on.
pub const ENV_SIM_UNCONFIGURED: &str = "UMAD_SIM_UNCONFIGURED";
/// Environment variable holding a fault spec (`ibnetsim::faults`' syntax, e.g.
/// `seed=7,drop=20%`) for the simulated fabric.
pub const ENV_SIM_FAULTS: &str = "UMAD_SIM_FAULTS";
/// The CA name a simulated port reports.
pub const CA_NAME: &str = "sim0";

/// Which simulated fabric to attach to, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimOptions {
    /// The netfile (ibsim's format, or ibnetdiscover output), or a built-in fabric's name
    /// (`ibnetsim::Fabric::load_named`: `example`, `fattree:36,8,28`, ...).
    pub netfile: PathBuf,
    /// Node id or NodeDescription to attach to; `None`: the first node of the file. A CA
    /// attaches at port 1, a switch at port 0 (as ibsim attaches).
    pub node: Option<String>,
    /// Start as a subnet manager would leave the fabric (the default), or as it powers on.
    pub configured: bool,
    /// Seeded faults (`ibnetsim::faults`' spec syntax); `None`: a perfect fabric. Ports
    /// opened with different specs see different fabrics.
    pub faults: Option<String>,
}

impl SimOptions {
    /// Options for the fabric in `netfile`, configured, at its first node.
    pub fn new(netfile: impl Into<PathBuf>) -> SimOptions {
        SimOptions {
            netfile: netfile.into(),
            node: None,
            configured: true,
            faults: None,
        }
    }

    /// The same options with the faults of `spec` (see [`SimOptions::faults`]).
    pub fn faults(mut self, spec: impl Into<String>) -> SimOptions {
        self.faults = Some(spec.into());
        self
    }

    /// The same options attaching to `node`.
    pub fn node(mut self, node: impl Into<String>) -> SimOptions {
        self.node = Some(node.into());
        self
    }

    /// Options from `UMAD_SIM`, `UMAD_SIM_NODE`, `UMAD_SIM_UNCONFIGURED` and
    /// `UMAD_SIM_FAULTS`; `Ok(None)` when `UMAD_SIM` is unset or empty.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `UMAD_SIM_NODE` or `UMAD_SIM_FAULTS` is not UTF-8,
    /// or `UMAD_SIM_UNCONFIGURED` is neither `0` nor `1`.
    pub fn from_env() -> Result<Option<SimOptions>> {
        SimOptions::from_vars(
            std::env::var_os(ENV_SIM).as_deref(),
            std::env::var_os(ENV_SIM_NODE).as_deref(),
            std::env::var_os(ENV_SIM_UNCONFIGURED).as_deref(),
            std::env::var_os(ENV_SIM_FAULTS).as_deref(),
        )
    }

    /// Options from those four variables' values (`None` = unset), as
    /// [`from_env`](Self::from_env) reads them.
    pub fn from_vars(
        sim: Option<&OsStr>,
        node: Option<&OsStr>,
        unconfigured: Option<&OsStr>,
        faults: Option<&OsStr>,
    ) -> Result<Option<SimOptions>> {
        let Some(netfile) = sim.filter(|s| !s.is_empty()) else {
            return Ok(None);
        };
        let mut o = SimOptions::new(netfile);
        o.node = match node.filter(|n| !n.is_empty()) {
            None => None,
            Some(n) => Some(n.to_str().map(str::to_owned).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{ENV_SIM_NODE} is not UTF-8 ({n:?}): it must name a node of the simulated \
                     fabric by its node id or NodeDescription; set it to one, or unset it to \
                     attach at the fabric's first node"
                ))
            })?),
        };
        o.configured = match unconfigured.map(|v| v.to_str()) {
            None | Some(Some("" | "0")) => true,
            Some(Some("1")) => false,
            Some(v) => {
                return Err(Error::InvalidArgument(format!(
                    "{ENV_SIM_UNCONFIGURED} is {v:?}: set it to 1 to start the simulated \
                     fabric unconfigured, or unset it"
                )))
            }
        };
        o.faults = match faults.filter(|f| !f.is_empty()) {
            None => None,
            Some(f) => Some(f.to_str().map(str::to_owned).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{ENV_SIM_FAULTS} is not UTF-8 ({f:?}): write the fault spec in ASCII, \
                     e.g. seed=7,drop=20%"
                ))
            })?),
        };
        Ok(Some(o))
    }
}

/// One simulated fabric, shared by the ports of this process that attach to it, on the
/// monotonic clock (time zero when it was loaded).
#[derive(Debug)]
struct World {
    net: Net<u64>,
    start: Instant,
    /// The ports attached, by the tag their requests carry.
    ports: HashMap<u64, Attached>,
    /// Who gets a forwarded request's answers (and its RMPP ACKs): by the port a packet
    /// arrives at and its TID, the tag of the port of this process that sent or took the
    /// request.
    routes: Routes,
    next_tag: u64,
    /// Whether the timer thread is running (it is while answers are on their way).
    timer: bool,
}

/// A [`World`] and the condition its timer thread waits on.
#[derive(Debug)]
struct Shared {
    world: Mutex<World>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The packet an answer of the fabric arrives as.
fn reply_packet(r: &ibnetsim::Reply) -> Packet {
    Packet {
        mad: r.mad.to_vec(),
        addr: MadAddr::new(r.slid, r.sqp, 0, MadAddr::DEFAULT_QKEY),
        qp: r.sqp,
        status: 0,
    }
}

/// A port of this process attached to the fabric.
#[derive(Debug)]
struct Attached {
    mailbox: Weak<Mailbox>,
    at: (NodeIdx, u8),
    /// Whether it holds IsSM (SMInfo and traps arriving at its port are its own).
    issm: bool,
}

/// Forwarded exchanges remembered (the oldest forgotten first).
const ROUTES_CAP: usize = 4096;

/// The bounded map of [`World::routes`].
#[derive(Debug, Default)]
struct Routes {
    map: HashMap<((NodeIdx, u8), u64), u64>,
    order: VecDeque<((NodeIdx, u8), u64)>,
}

impl Routes {
    fn insert(&mut self, key: ((NodeIdx, u8), u64), tag: u64) {
        if self.map.insert(key, tag).is_none() {
            self.order.push_back(key);
            if self.order.len() > ROUTES_CAP {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

impl World {
    /// Brings the clock to now and hands every answer due to its port.
    fn deliver_due(&mut self) {
        self.net.advance_to(self.start.elapsed());
        while let Some(a) = self.net.poll() {
            if let Some(m) = self.ports.get(&a.tag).and_then(|p| p.mailbox.upgrade()) {
                m.post(reply_packet(&a.reply));
            }
        }
    }

    /// Where ports of this process attach for a packet arriving at `(node, port)`: that CA
    /// port, or a switch's port 0.
    fn landing(&self, (node, port): (NodeIdx, u8)) -> (NodeIdx, u8) {
        let switch = self.net.fabric().node(node).is_switch();
        (node, if switch { 0 } else { port })
    }

    /// Hands the traps the fabric raised (Trap 128 when a Set took a link down or up) to the
    /// SM port of this process where each lands, after the answer to the Set; a trap with
    /// nobody there is lost, as on a fabric.
    fn deliver_traps(&mut self) {
        if !self.net.fabric().has_traps() {
            return;
        }
        for trap in self.net.fabric_mut().take_traps() {
            let Ok((node, port)) = self.net.fabric_mut().route_trap(&trap) else {
                continue;
            };
            let there = (
                node,
                if self.net.fabric().node(node).is_switch() {
                    0
                } else {
                    port
                },
            );
            let tid = Mad::new_unchecked(&trap.mad[..]).tid();
            let to = self.port_at(there, tid, true);
            if let Some(m) = to
                .and_then(|t| self.ports.get(&t))
                .and_then(|p| p.mailbox.upgrade())
            {
                m.post(Packet {
                    mad: trap.mad.to_vec(),
                    addr: MadAddr::new(trap.slid, 0, 0, MadAddr::DEFAULT_QKEY),
                    qp: 0,
                    status: 0,
                });
            }
        }
    }

    /// The port of this process at `at` a packet arriving there goes to: the one whose
    /// exchange it belongs to (`tid`), else the SM's (IsSM) if `sm`, else the first
    /// attached.
    fn port_at(&self, at: (NodeIdx, u8), tid: u64, sm: bool) -> Option<u64> {
        if let Some(&tag) = self.routes.map.get(&(at, tid)) {
            if self.ports.contains_key(&tag) {
                return Some(tag);
            }
        }
        let mut here: Vec<(&u64, &Attached)> =
            self.ports.iter().filter(|(_, p)| p.at == at).collect();
        here.sort_by_key(|(tag, p)| (!(sm && p.issm), **tag));
        here.first().map(|(tag, _)| **tag)
    }

    /// Hands `mad` (sent on QP `qp` from port `from`, tag `from_tag`, as it arrived: from
    /// `slid`) to the port of this process tagged `to`; remembers the exchange both ways.
    fn forward(
        &mut self,
        (from, from_tag): ((NodeIdx, u8), u64),
        to: u64,
        mad: &[u8],
        slid: u16,
        qp: u32,
    ) {
        let Some(dest) = self.ports.get(&to) else {
            return;
        };
        let (at, mailbox) = (dest.at, dest.mailbox.upgrade());
        let tid = Mad::new_unchecked(mad).tid();
        self.routes.insert((from, tid), from_tag);
        self.routes.insert((at, tid), to);
        if let Some(m) = mailbox {
            m.post(Packet {
                mad: mad.to_vec(),
                addr: MadAddr::new(slid, qp, 0, MadAddr::DEFAULT_QKEY),
                qp,
                status: 0,
            });
        }
    }
}

/// The timer thread of `shared`: hands over late answers when they fall due, and ends when
/// none is on its way.
fn timer(shared: Arc<Shared>) {
    let mut w = shared.lock();
    loop {
        w.deliver_due();
        let Some(due) = w.net.next_due() else {
            w.timer = false;
            return;
        };
        let wait = due.saturating_sub(w.start.elapsed());
        w = shared
            .wake
            .wait_timeout(w, wait.max(Duration::from_micros(50)))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

type Worlds = HashMap<(PathBuf, bool, Option<String>), Weak<Shared>>;

/// The fabric of `netfile` in this process, loaded on first use.
fn world(netfile: &Path, configured: bool, faults: Option<&str>) -> Result<Arc<Shared>> {
    static WORLDS: OnceLock<Mutex<Worlds>> = OnceLock::new();
    // By the path as given: the same file named two ways is two fabrics.
    let key = (netfile.to_path_buf(), configured, faults.map(str::to_owned));
    let mut worlds = WORLDS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(w) = worlds.get(&key).and_then(Weak::upgrade) {
        return Ok(w);
    }
    let mut fabric = Fabric::load_named(netfile).map_err(|e| {
        Error::InvalidArgument(format!(
            "{ENV_SIM}: cannot simulate {}: {e}",
            netfile.display()
        ))
    })?;
    if configured && fabric.configure(None).is_none() {
        return Err(Error::InvalidArgument(format!(
            "{ENV_SIM}: {} has more ports than there are unicast LIDs (0xbfff), so it cannot \
             start configured: set {ENV_SIM_UNCONFIGURED}=1",
            netfile.display()
        )));
    }
    if let Some(spec) = faults {
        fabric.apply_faults(spec).map_err(|e| {
            Error::InvalidArgument(format!(
                "{ENV_SIM_FAULTS}: {e}; see the ibnetsim faults syntax (seed=N, drop=R, \
                 drop[NODE]=R, drop[NODE/PORT]=R, dead=NODE, delay=R@D1..D2, dup=R, flip=R)"
            ))
        })?;
    }
    let w = Arc::new(Shared {
        world: Mutex::new(World {
            net: Net::new(fabric),
            start: Instant::now(),
            ports: HashMap::new(),
            routes: Routes::default(),
            next_tag: 0,
            timer: false,
        }),
        wake: Condvar::new(),
    });
    worlds.retain(|_, w| w.strong_count() > 0);
    worlds.insert(key, Arc::downgrade(&w));
    Ok(w)
}

/// A port of a fabric simulated in this process.
pub struct SimCarrier {
    world: Arc<Shared>,
    at: (NodeIdx, u8),
    tag: u64,
    mailbox: Arc<Mailbox>,
}

/// Where a port's answers arrive: the inbox and the descriptor that says it holds some.
#[derive(Debug)]
struct Mailbox {
    inbox: Mutex<Inbox>,
    bell: EventFlag,
}

impl Mailbox {
    fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a packet; the flag is up exactly while the inbox holds something (one
    /// eventfd write per burst, not per packet).
    fn post(&self, p: Packet) {
        let mut inbox = self.inbox();
        inbox.queue.push_back(p);
        if !inbox.flag_up {
            inbox.flag_up = true;
            self.bell.raise();
        }
    }
}

/// The answers waiting for a port, and whether its readable flag is up (raised and lowered
/// only on the edges: the reader's spin looks at an empty inbox without a system call).
#[derive(Debug, Default)]
struct Inbox {
    queue: VecDeque<Packet>,
    flag_up: bool,
}

impl std::fmt::Debug for SimCarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCarrier")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl SimCarrier {
    /// Attaches to the fabric `opts` names (loading it if this process has not yet).
    pub fn attach(opts: &SimOptions) -> Result<SimCarrier> {
        let world = world(&opts.netfile, opts.configured, opts.faults.as_deref())?;
        let at = {
            let w = world.lock();
            let f = w.net.fabric();
            let node = match &opts.node {
                None if f.is_empty() => {
                    return Err(Error::InvalidArgument(format!(
                        "{ENV_SIM}: {} defines no node to attach to",
                        opts.netfile.display()
                    )))
                }
                None => NodeIdx(0),
                Some(n) => f.find(n).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{ENV_SIM_NODE}={n:?}: no node of {} has that id or NodeDescription",
                        opts.netfile.display()
                    ))
                })?,
            };
            (node, u8::from(!f.node(node).is_switch()))
        };
        let bell = EventFlag::new().map_err(|e| Error::Open {
            ca: CA_NAME.to_string(),
            port: u32::from(at.1),
            path: "eventfd (simulated port)".into(),
            source: e,
        })?;
        let mailbox = Arc::new(Mailbox {
            inbox: Mutex::default(),
            bell,
        });
        let tag = {
            let mut w = world.lock();
            let tag = w.next_tag;
            w.next_tag += 1;
            w.ports.insert(
                tag,
                Attached {
                    mailbox: Arc::downgrade(&mailbox),
                    at,
                    issm: false,
                },
            );
            tag
        };
        Ok(SimCarrier {
            world,
            at,
            tag,
            mailbox,
        })
    }

    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock()
    }

    /// This port's own attribute, as its node's SMA holds it (`Fabric::local_get`).
    fn local_get<T>(
        &self,
        attr: u16,
        modifier: u32,
        parse: fn(&[u8]) -> ibmad::Result<T>,
    ) -> Result<T> {
        let data = self
            .world()
            .net
            .fabric()
            .local_get(self.at, attr, modifier)
            .map_err(|status| Error::Failed {
                ca: CA_NAME.to_string(),
                port: u32::from(self.at.1),
                reason: format!(
                    "the simulated node refused its own port attribute {attr:#06x} \
                     (MAD status {:#06x})",
                    status.0
                ),
                errno: libc::EIO,
            })?;
        parse(&data).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
}

impl Carrier for SimCarrier {
    fn name(&self) -> &'static str {
        "in-process simulator"
    }

    fn ca_name(&self) -> &str {
        CA_NAME
    }

    fn port_num(&self) -> u32 {
        u32::from(self.at.1)
    }

    fn ca(&self) -> Result<Ca> {
        use ibmad::attr::id;
        let ni = self.local_get(id::NODE_INFO, 0, ibmad::NodeInfo::parse)?;
        let pi = self.local_get(id::PORT_INFO, u32::from(self.at.1), ibmad::PortInfo::parse)?;
        let pkeys = self.local_get(id::PKEY_TABLE, 0, ibmad::PKeyTable::parse)?;
        Ok(super::simulated_ca(
            CA_NAME,
            u32::from(self.at.1),
            &ni,
            &pi,
            super::SimulatedVersions {
                hw: 0,
                fw: 1,
                port_guid: ni.port_guid,
                // The first block, as ibsim's GET_PKEYS (and so umad2sim) reports it.
                pkeys: pkeys.pkeys.to_vec(),
            },
        ))
    }

    fn issm(&self) -> Result<Issm> {
        let mut w = self.world();
        if let Some(me) = w.ports.get_mut(&self.tag) {
            me.issm = true;
        }
        w.net.fabric_mut().set_is_sm(self.at, true);
        Ok(Issm::new(Box::new(IssmGuard {
            world: Arc::downgrade(&self.world),
            tag: self.tag,
            at: self.at,
        })))
    }

    fn send(&self, p: &Packet) -> Result<()> {
        let mut w = self.world();
        let header = Mad::new_unchecked(&p.mad[..]);
        let (is_response, tid) = (header.is_response(), header.tid());
        if is_response {
            // An answer (or an RMPP ACK) from a port of this process serving requests: to
            // the port it is for, by LID or along its return path.
            if let Ok(there) = w
                .net
                .fabric_mut()
                .route_response(self.at, p.addr.lid, &p.mad)
            {
                let there = w.landing(there);
                if let Some(to) = w.port_at(there, tid, false) {
                    let slid = w.net.fabric().lid_of(self.at.0, self.at.1);
                    w.forward((self.at, self.tag), to, &p.mad, slid, p.qp);
                }
            }
            return Ok(());
        }
        // A request nothing answers (no route, no agent, a fault) is lost, as on a fabric:
        // its sender times out. One that arrives where no agent of the fabric answers (SA
        // and other GSI classes, SMInfo and traps at an IsSM port) goes, as it arrived (a
        // directed-route one with its return path), to a port of this process attached
        // there, if any.
        match w
            .net
            .fabric_mut()
            .deliver_request(self.at, p.addr.lid, p.qp, &p.mad)
        {
            // The common case, without the clock: the answer, at once and once.
            Ok(Delivery::Answered(r)) if r.fate.is_plain() && w.net.in_flight() == 0 => {
                self.mailbox.post(reply_packet(&r));
                w.deliver_traps();
                return Ok(());
            }
            Ok(Delivery::Answered(r)) => {
                let now = w.start.elapsed();
                w.net.advance_to(now);
                w.net.schedule(self.tag, r);
            }
            Ok(Delivery::Unanswered(u)) => {
                let there = w.landing((u.at, u.port));
                if let Some(to) = w.port_at(there, tid, p.qp == 0) {
                    w.forward((self.at, self.tag), to, &u.mad, u.slid, p.qp);
                }
            }
            Err(_) => {}
        }
        w.deliver_traps();
        if w.net.in_flight() == 0 {
            return Ok(());
        }
        w.deliver_due();
        if w.net.in_flight() > 0 {
            // Late answers: the timer thread hands them over when they fall due.
            if w.timer {
                self.world.wake.notify_one();
            } else {
                w.timer = true;
                let shared = Arc::clone(&self.world);
                let spawned = std::thread::Builder::new()
                    .name("umad-sim-timer".into())
                    .spawn(move || timer(shared));
                if let Err(e) = spawned {
                    w.timer = false;
                    return Err(Error::Failed {
                        ca: CA_NAME.to_string(),
                        port: u32::from(self.at.1),
                        reason: format!(
                            "cannot start the simulated fabric's timer thread for late answers \
                             ({e}): drop the delay= fault, or raise the thread limit"
                        ),
                        errno: e.raw_os_error().unwrap_or(libc::EAGAIN),
                    });
                }
            }
        }
        Ok(())
    }

    fn try_recv(&self) -> Result<Option<Packet>> {
        let mut inbox = self.mailbox.inbox();
        let p = inbox.queue.pop_front();
        if inbox.queue.is_empty() && inbox.flag_up {
            inbox.flag_up = false;
            self.mailbox.bell.lower();
        }
        Ok(p)
    }

    fn raw_fd(&self) -> RawFd {
        self.mailbox.bell.raw()
    }
}

/// Keeps IsSM set on a simulated port: cleared when dropped, unless another port of this
/// process at the same place holds it too.
struct IssmGuard {
    world: Weak<Shared>,
    tag: u64,
    at: (NodeIdx, u8),
}

impl Drop for IssmGuard {
    fn drop(&mut self) {
        let Some(shared) = self.world.upgrade() else {
            return;
        };
        let mut w = shared.lock();
        if let Some(me) = w.ports.get_mut(&self.tag) {
            me.issm = false;
        }
        let at = self.at;
        if !w.ports.values().any(|p| p.at == at && p.issm) {
            w.net.fabric_mut().set_is_sm(at, false);
        }
    }
}

impl Drop for SimCarrier {
    fn drop(&mut self) {
        let mut w = self.world();
        w.ports.remove(&self.tag);
        w.net.forget(&self.tag);
    }
}
