//! The MAD layer's state machine: what the kernel's `ib_mad` and `mad_rmpp.c` do behind
//! `ib_umad`, as a deterministic value driven by packets, sends and the clock.
//!
//! [`Engine`] holds the agents, the requests waiting for responses, the RMPP transfers in
//! both directions and the queue of MADs for the application. It does no I/O and reads no
//! clock: every call takes `now`, packets to send pile up in an outbox, and the caller
//! (the port's driver, [`Port::from_carrier`](crate::Port::from_carrier), or a scripted test peer) carries them.
//!
//! The rules, from Linux (`drivers/infiniband/core/mad.c`, `mad_rmpp.c`):
//! * requests get the agent id in TID bits 32..47; responses (and RMPP segments of
//!   responses) go to the agent named there, requests to the agent registered for their
//!   class, version and method (and OUI in vendor range 2), on the QP they arrived on;
//! * a request sent with a timeout waits for its response; after the timeout it is resent
//!   `retries` times, then reported with status `ETIMEDOUT`;
//! * agents registered with an RMPP version on an RMPP class get RMPP: an RMPP-ACTIVE DATA
//!   send of any length is cut into segments (the class header repeated in each), sent
//!   inside the window the receiver grants (first window: 1 segment), resent from the last
//!   ACK when no ACK comes within `min(timeout, 2 s)`; received segments are ACKed, placed
//!   (out of order within the window, duplicates re-ACKed), and the whole message is
//!   delivered once the LAST segment is in; a reassembly that does not finish within 40 s is
//!   aborted (T2L), and a finished one is remembered for 10 s to re-ACK late duplicates;
//! * a response that stops arriving ends its request after the request's own budget of
//!   silence (`timeout × (retries + 1)` with no new segment: the transfer is aborted with
//!   T2L and the request reported with `ETIMEDOUT`), not after the 40 s;
//! * packets the carrier bounces are resent at once only within a small budget per transfer
//!   (renewed whenever the peer shows life), then the ACK timers take over.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use ibmad::{Mad, Rmpp, RmppHeader, RmppStatus, RmppType};

use super::Packet;
use crate::abi::MAX_AGENTS;
use crate::addr::MadAddr;
use crate::agent::{rmpp_active, AgentId, AgentSpec};
use crate::transport::{Outgoing, Received, STATUS_ABORTED, STATUS_TIMEOUT};
use crate::{Error, Result};

/// Tunables of the MAD layer. The defaults are the kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerConfig {
    /// Segments granted per ACK to an RMPP sender (the kernel: receive queue size / 8 = 64).
    pub window: u32,
    /// Longest wait for an RMPP ACK (the kernel caps the send timeout at 2 s).
    pub ack_timeout_cap: Duration,
    /// Time a reassembly may take before it is aborted with T2L (the kernel: 40 s).
    pub reassembly_timeout: Duration,
    /// How long a finished reassembly is remembered to re-ACK duplicates (the kernel: 10 s).
    pub linger: Duration,
    /// Longest RMPP message accepted; a longer one is stopped with RESX (resources exhausted).
    pub max_message: usize,
    /// Most reassemblies held at once (in progress, or finished and kept for duplicates);
    /// finished ones make room for new ones, and beyond that new ones are stopped with RESX.
    pub max_reassemblies: usize,
    /// Most MADs queued for the application; beyond that arriving MADs are dropped (and
    /// counted), as a full receive queue drops them on an HCA.
    pub max_queued: usize,
    /// Most bytes the layer holds at once in MADs queued for the application and RMPP
    /// messages being reassembled (default 256 MiB). A segment that would pass it stops its
    /// transfer with RESX, as [`max_message`](Self::max_message) does; a MAD that would take
    /// the queue past it is dropped, as [`max_queued`](Self::max_queued) says. With the
    /// counts alone the layer could hold `max_reassemblies` × `max_message` (64 GiB).
    pub max_held: usize,
    /// Immediate resends of RMPP packets the carrier bounced (ibsim hands back every packet
    /// it loses or cannot deliver, at once), per transfer and renewed by each sign of life
    /// from the peer (an ACK that moves a send forward, a new segment of a reassembly);
    /// beyond it bounced packets are dropped and the ACK timer resends, as the kernel does.
    /// So a lossy path recovers at once while a vanished peer draws at most this many
    /// resends before the timers take over. (A bounced single request uses up one of its
    /// retries at once.)
    pub bounce_budget: u32,
    /// How long a thread waiting for answers keeps looking at the carrier before it sleeps
    /// (default 50 µs on a machine with more than one CPU, 0 on one): the peer answers
    /// pipelined requests microseconds apart, and a sleep costs two context switches.
    pub spin: Duration,
}

impl Default for LayerConfig {
    fn default() -> LayerConfig {
        LayerConfig {
            window: 64,
            ack_timeout_cap: Duration::from_millis(2000),
            reassembly_timeout: Duration::from_secs(40),
            linger: Duration::from_secs(10),
            max_message: 64 << 20,
            max_reassemblies: 1024,
            max_queued: 16_384,
            max_held: 256 << 20,
            bounce_budget: 16,
            spin: if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
                Duration::from_micros(50)
            } else {
                Duration::ZERO
            },
        }
    }
}

/// What the engine has counted since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayerStats {
    /// MADs dropped because the application's queue was full.
    pub dropped_queue_full: u64,
    /// MADs dropped because no agent (or no waiting request) wanted them.
    pub dropped_unmatched: u64,
    /// MADs dropped because they were malformed (shorter than a MAD header, bad RMPP).
    pub dropped_malformed: u64,
    /// RMPP segments sent (first transmissions and resends).
    pub segments_sent: u64,
    /// RMPP segments received (including duplicates).
    pub segments_received: u64,
    /// Requests and RMPP windows resent after a timeout.
    pub retransmissions: u64,
}

/// The TID bits a request's sender owns; bits 32..47 carry the agent id (the kernel's
/// `hi_tid`), bits 48..63 belong to the carrier (ibsim puts its client slot there).
const TID_MATCH: u64 = 0x0000_ffff_ffff_ffff;
const TID_AGENT_SHIFT: u32 = 32;

fn tid_agent(tid: u64) -> AgentId {
    ((tid >> TID_AGENT_SHIFT) & 0xffff) as AgentId
}

/// A request waiting for its response.
#[derive(Debug)]
struct Pending {
    /// The request as sent (TID rewritten), for resends and the timeout report.
    mad: Vec<u8>,
    addr: MadAddr,
    qp: u32,
    timeout: Duration,
    deadline: Instant,
    retries_left: u32,
}

/// (agent, class, TID bits 0..47): how a response finds its request.
type PendingKey = (AgentId, u8, u64);

/// An RMPP message being sent.
#[derive(Debug)]
struct SendXfer {
    agent: AgentId,
    class: u8,
    /// The TID as sent (matched on bits 0..47).
    tid: u64,
    addr: MadAddr,
    qp: u32,
    /// The class header repeated in every segment (`data_offset(class)` bytes).
    hdr: Vec<u8>,
    data: Vec<u8>,
    /// Data bytes per segment.
    seg_size: usize,
    count: u32,
    pad: usize,
    /// Last segment sent.
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    max_retries: u32,
    retries_left: u32,
    bounces_left: u32,
    ack_timeout: Duration,
    deadline: Instant,
    /// The send's response timeout (0: no response expected); its retries are used up by
    /// the segments.
    timeout_ms: u32,
    is_request: bool,
}

impl SendXfer {
    /// Segment `n` (1-based) as a whole MAD.
    fn segment(&self, n: u32) -> Vec<u8> {
        let mut m = Vec::with_capacity(ibmad::MAD_SIZE);
        m.extend_from_slice(&self.hdr);
        let start = (n as usize - 1) * self.seg_size;
        let end = (start + self.seg_size).min(self.data.len());
        if start < end {
            m.extend_from_slice(&self.data[start..end]);
        }
        m.resize(ibmad::MAD_SIZE, 0);
        let rmpp_size = ibmad::rmpp::RMPP_SEGMENT_DATA_LEN;
        let first = n == 1;
        let last = n == self.count;
        let paylen = if last {
            rmpp_size - self.pad
        } else if first {
            self.count as usize * rmpp_size - self.pad
        } else {
            0
        };
        let mut r = Rmpp::new_unchecked(&mut m[..]);
        let resp_time = r.resp_time();
        let mut h = RmppHeader::data(n, first, last, paylen as u32);
        h.resp_time = resp_time;
        h.emit(&mut r);
        m
    }

    /// Whether a packet about class `class` and TID `tid` is about this send: a request of
    /// ours on TID bits 0..47 (the carrier may own 48..63), a response on the whole TID (it
    /// is the requester's, and two requesters may share the low bits).
    fn matches(&self, class: u8, tid: u64) -> bool {
        let mask = if self.is_request { TID_MATCH } else { u64::MAX };
        self.class == class && self.tid & mask == tid & mask
    }

    /// [`matches`](Self::matches), from the peer the send goes to.
    fn matches_from(&self, class: u8, tid: u64, peer: &MadAddr) -> bool {
        self.matches(class, tid) && self.addr.lid == peer.lid && self.addr.qpn == peer.qpn
    }

    /// What a report of this send carries: its common MAD header, as the kernel's.
    fn report_mad(&self) -> Vec<u8> {
        self.hdr[..ibmad::HEADER_LEN].to_vec()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecvState {
    Active,
    Complete,
}

/// An RMPP message being received (or just received, kept to re-ACK duplicates).
#[derive(Debug)]
struct RecvXfer {
    agent: AgentId,
    tid: u64,
    class: u8,
    class_version: u8,
    method: u8,
    /// The sender: where the ACKs go.
    addr: MadAddr,
    qp: u32,
    /// Segment 1's class header: the start of the delivered message.
    hdr: Vec<u8>,
    /// Data of the contiguous segments 1..=seg_num.
    data: Vec<u8>,
    /// Data of segments received out of order, inside the window.
    later: BTreeMap<u32, (Vec<u8>, bool, u32)>,
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    state: RecvState,
    deadline: Instant,
    bounces_left: u32,
}

impl RecvXfer {
    fn matches(&self, agent: AgentId, m: &Mad<&[u8]>, addr: &MadAddr) -> bool {
        self.agent == agent
            && self.tid == m.tid()
            && self.class == u8::from(m.mgmt_class())
            && self.class_version == m.class_version()
            && self.method == u8::from(m.method())
            && self.addr.lid == addr.lid
            && self.addr.qpn == addr.qpn
    }

    /// The ACK of what has arrived so far: the segment's header, method flipped, type ACK.
    fn ack(&mut self) -> Vec<u8> {
        self.last_ack = self.seg_num;
        // The kernel's format_ack keeps the segment's version and status.
        let seg = Rmpp::new_unchecked(&self.hdr[..]);
        let mut h = RmppHeader::ack(self.seg_num, self.newwin);
        h.version = seg.version();
        h.status = seg.status();
        control(&self.hdr, h)
    }
}

/// The MAD layer's state (see the module docs).
#[derive(Debug)]
pub struct Engine {
    cfg: LayerConfig,
    agents: Vec<Option<AgentSpec>>,
    pending: HashMap<PendingKey, Pending>,
    sends: Vec<SendXfer>,
    recvs: Vec<RecvXfer>,
    ready: VecDeque<Received>,
    /// Bytes of MAD in `ready`.
    ready_bytes: usize,
    outbox: Vec<Packet>,
    stats: LayerStats,
    /// Port identity for error messages.
    ca: String,
    port: u32,
}

impl Engine {
    /// An engine with no agents, for the port `ca`/`port` (used in error messages).
    pub fn new(cfg: LayerConfig, ca: &str, port: u32) -> Engine {
        Engine {
            cfg,
            agents: vec![None; MAX_AGENTS],
            pending: HashMap::new(),
            sends: Vec::new(),
            recvs: Vec::new(),
            ready: VecDeque::new(),
            ready_bytes: 0,
            outbox: Vec::new(),
            stats: LayerStats::default(),
            ca: ca.to_string(),
            port,
        }
    }

    /// The counters.
    pub fn stats(&self) -> LayerStats {
        self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &LayerConfig {
        &self.cfg
    }

    fn bad_agent(&self, agent: AgentId) -> Error {
        Error::BadAgent {
            ca: self.ca.clone(),
            port: self.port,
            agent,
        }
    }

    /// Registers an agent; ids are the lowest free slot, as the kernel hands them out.
    pub fn register(&mut self, spec: &AgentSpec) -> Result<AgentId> {
        spec.validate()?;
        if spec.rmpp_version != 0 {
            if !ibmad::is_rmpp_class(spec.class) {
                return Err(Error::InvalidArgument(format!(
                    "class {:#04x} does not use RMPP: register it with rmpp_version 0 (RMPP classes: SA 0x03, 0x06, 0x10, 0x12, vendor 0x30-0x4f)",
                    spec.class
                )));
            }
            if spec.rmpp_version != ibmad::rmpp::RMPP_VERSION {
                return Err(Error::InvalidArgument(format!(
                    "RMPP version {} is not supported: the only RMPP version is 1",
                    spec.rmpp_version
                )));
            }
        }
        if spec.flags & !crate::abi::USER_RMPP != 0 {
            return Err(Error::InvalidArgument(format!(
                "registration flags {:#x} are not known: the only flag is IB_USER_MAD_USER_RMPP (1)",
                spec.flags
            )));
        }
        // As the kernel: one agent per class, version (and OUI) receives each method.
        if let Some(taken) = self.agents.iter().position(|a| {
            a.is_some_and(|a| {
                a.class == spec.class
                    && a.class_version == spec.class_version
                    && (!a.is_vendor_oui_class() || a.oui == spec.oui)
                    && a.methods.overlaps(&spec.methods)
            })
        }) {
            return Err(Error::InvalidArgument(format!(
                "agent {taken} already receives some of these methods of class {:#04x} version {}: register disjoint method masks",
                spec.class, spec.class_version
            )));
        }
        let free = self
            .agents
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| Error::TooManyAgents {
                ca: self.ca.clone(),
                port: self.port,
                max: MAX_AGENTS,
            })?;
        self.agents[free] = Some(*spec);
        Ok(free as AgentId)
    }

    /// Unregisters an agent and forgets everything of it: waiting requests, transfers and
    /// queued MADs.
    pub fn unregister(&mut self, agent: AgentId) -> Result<()> {
        match self.agents.get_mut(agent as usize) {
            Some(slot @ Some(_)) => *slot = None,
            _ => return Err(self.bad_agent(agent)),
        }
        self.pending.retain(|k, _| k.0 != agent);
        self.sends.retain(|s| s.agent != agent);
        self.recvs.retain(|r| r.agent != agent);
        self.ready.retain(|r| r.agent != agent);
        self.ready_bytes = self.ready.iter().map(|r| r.mad.len()).sum();
        Ok(())
    }

    /// The agent registered as `agent`.
    pub fn agent(&self, agent: AgentId) -> Option<&AgentSpec> {
        self.agents.get(agent as usize).and_then(Option::as_ref)
    }

    /// Sends a MAD: checks it, gives requests their TID bits, cuts RMPP messages into
    /// segments, and arms the response and ACK timers.
    pub fn send(&mut self, now: Instant, out: &Outgoing<'_>) -> Result<()> {
        let spec = *self
            .agent(out.agent)
            .ok_or_else(|| self.bad_agent(out.agent))?;
        spec.check_send(out.mad)?;
        let mut m = out.mad.to_vec();
        let request = !Mad::new_unchecked(&m[..]).is_response_mad();
        if request {
            let low = Mad::new_unchecked(&m[..]).tid() & 0xffff_ffff;
            Mad::new_unchecked(&mut m[..]).set_tid((u64::from(out.agent) << TID_AGENT_SHIFT) | low);
        }
        let class = u8::from(Mad::new_unchecked(&m[..]).mgmt_class());
        let qp = spec.qpn();
        // As the kernel's ib_umad: an ACTIVE send of a transport-RMPP agent is a DATA
        // transfer whatever its RMPP type says (the kernel writes version and type itself;
        // opensm sends its GetTableResp with only the ACTIVE flag).
        let rmpp = spec.kernel_rmpp() && rmpp_active(&m);
        if rmpp {
            self.start_rmpp_send(now, out, spec, m, request);
            return Ok(());
        }
        if request && out.timeout_ms > 0 {
            let tid = Mad::new_unchecked(&m[..]).tid();
            let timeout = Duration::from_millis(u64::from(out.timeout_ms));
            self.pending.insert(
                (out.agent, class, tid & TID_MATCH),
                Pending {
                    mad: m.clone(),
                    addr: out.addr,
                    qp,
                    timeout,
                    deadline: now + timeout,
                    retries_left: out.retries,
                },
            );
        }
        self.emit(m, out.addr, qp);
        Ok(())
    }

    fn start_rmpp_send(
        &mut self,
        now: Instant,
        out: &Outgoing<'_>,
        spec: AgentSpec,
        m: Vec<u8>,
        request: bool,
    ) {
        let class = u8::from(Mad::new_unchecked(&m[..]).mgmt_class());
        let hdr_len = ibmad::rmpp::data_offset(class);
        let seg_size = ibmad::MAD_SIZE - hdr_len;
        let (hdr, data) = m.split_at(hdr_len.min(m.len()));
        let count = data.len().div_ceil(seg_size).max(1);
        let pad = count * seg_size - data.len();
        let ack_timeout = match out.timeout_ms {
            0 => self.cfg.ack_timeout_cap,
            t => Duration::from_millis(u64::from(t)).min(self.cfg.ack_timeout_cap),
        };
        let mut hdr = hdr.to_vec();
        hdr.resize(hdr_len, 0);
        let x = SendXfer {
            agent: out.agent,
            class,
            tid: Mad::new_unchecked(&m[..]).tid(),
            addr: out.addr,
            qp: spec.qpn(),
            hdr,
            data: data.to_vec(),
            seg_size,
            count: count as u32,
            pad,
            seg_num: 0,
            last_ack: 0,
            newwin: 1,
            max_retries: out.retries,
            retries_left: out.retries,
            bounces_left: self.cfg.bounce_budget,
            ack_timeout,
            deadline: now + ack_timeout,
            timeout_ms: out.timeout_ms,
            is_request: request,
        };
        // A new message with the same TID replaces an older one (the application resent it).
        self.sends
            .retain(|s| !(s.agent == x.agent && s.matches_from(x.class, x.tid, &x.addr)));
        self.sends.push(x);
        let i = self.sends.len() - 1;
        self.send_window(now, i);
    }

    /// Sends the segments after `seg_num` up to the window (and the message) end.
    fn send_window(&mut self, now: Instant, i: usize) {
        let x = &mut self.sends[i];
        let end = x.newwin.min(x.count);
        let mut segs = Vec::new();
        while x.seg_num < end {
            x.seg_num += 1;
            segs.push(x.segment(x.seg_num));
        }
        if !segs.is_empty() {
            x.deadline = now + x.ack_timeout;
        }
        let (addr, qp) = (x.addr, x.qp);
        self.stats.segments_sent += segs.len() as u64;
        for s in segs {
            self.emit(s, addr, qp);
        }
    }

    fn emit(&mut self, mad: Vec<u8>, addr: MadAddr, qp: u32) {
        self.outbox.push(Packet {
            mad,
            addr,
            qp,
            status: 0,
        });
    }

    /// Queues a MAD for the application, unless the queue is full. Reports (a non-zero
    /// status) are always queued: they end a request the application waits for, and there is
    /// at most one per request it sent.
    fn deliver(&mut self, r: Received) {
        let full = self.ready.len() >= self.cfg.max_queued
            || self.ready_bytes + r.mad.len() > self.cfg.max_held;
        if full && r.status == 0 {
            self.stats.dropped_queue_full += 1;
        } else {
            self.ready_bytes += r.mad.len();
            self.ready.push_back(r);
        }
    }

    /// Bytes held in reassemblies and for the application (see [`LayerConfig::max_held`]).
    fn held(&self) -> usize {
        let reassembling: usize = self
            .recvs
            .iter()
            .map(|r| r.data.len() + r.later.values().map(|(d, ..)| d.len()).sum::<usize>())
            .sum();
        self.ready_bytes + reassembling
    }

    /// The packets to carry, in order.
    pub fn take_outbox(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.outbox)
    }

    /// Puts packets the carrier had no room for back in front of the outbox.
    pub fn requeue(&mut self, mut packets: Vec<Packet>) {
        packets.append(&mut self.outbox);
        self.outbox = packets;
    }

    /// Whether packets wait to be carried.
    pub fn has_outbox(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// The MADs queued for the application, oldest first.
    pub fn ready(&self) -> &VecDeque<Received> {
        &self.ready
    }

    /// Takes the oldest MAD queued for the application.
    pub fn pop_ready(&mut self) -> Option<Received> {
        let r = self.ready.pop_front()?;
        self.ready_bytes -= r.mad.len();
        Some(r)
    }

    /// Whether a request waits for its response or an RMPP send for its ACKs.
    pub fn awaiting(&self) -> bool {
        !self.pending.is_empty() || !self.sends.is_empty()
    }

    /// The earliest timer, if any runs.
    pub fn next_deadline(&self) -> Option<Instant> {
        let p = self.pending.values().map(|p| p.deadline);
        let s = self.sends.iter().map(|s| s.deadline);
        let r = self.recvs.iter().map(|r| r.deadline);
        p.chain(s).chain(r).min()
    }

    /// How many RMPP reassemblies (active or lingering) and sends are held.
    pub fn transfers(&self) -> (usize, usize) {
        (self.recvs.len(), self.sends.len())
    }

    /// Fires every timer due at `now`: resends requests and RMPP windows, reports requests
    /// that ran out of retries, aborts stale reassemblies, forgets finished ones.
    pub fn on_timer(&mut self, now: Instant) {
        // In deadline order, ties by key: the same script gives the same outbox whatever
        // the map's iteration order.
        let mut due: Vec<(Instant, PendingKey)> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(k, p)| (p.deadline, *k))
            .collect();
        due.sort_unstable();
        for (_, k) in due {
            self.retry_or_fail(now, k);
        }
        let mut i = 0;
        while i < self.sends.len() {
            if self.sends[i].deadline > now {
                i += 1;
                continue;
            }
            let x = &mut self.sends[i];
            if x.retries_left > 0 {
                x.retries_left -= 1;
                x.seg_num = x.last_ack;
                // As the kernel's ib_retry_rmpp: the segment after the last ACK goes out even
                // when the window is closed (a probe), then whatever the window allows.
                let probe = x.segment(x.last_ack + 1);
                x.seg_num += 1;
                x.deadline = now + x.ack_timeout;
                let (addr, qp) = (x.addr, x.qp);
                self.stats.retransmissions += 1;
                self.stats.segments_sent += 1;
                self.emit(probe, addr, qp);
                self.send_window(now, i);
                i += 1;
            } else {
                let x = self.sends.swap_remove(i);
                self.end_send(x, STATUS_TIMEOUT);
            }
        }
        let mut i = 0;
        while i < self.recvs.len() {
            if self.recvs[i].deadline > now {
                i += 1;
                continue;
            }
            let r = self.recvs.swap_remove(i);
            if r.state == RecvState::Active {
                let abort = nack(&r.hdr, RmppStatus::TotalTimeTooLong);
                self.emit(abort, r.addr, r.qp);
            }
        }
    }

    fn retry_or_fail(&mut self, now: Instant, k: PendingKey) {
        let Some(p) = self.pending.get_mut(&k) else {
            return;
        };
        let answering = self.recvs.iter().position(|r| {
            r.state == RecvState::Active
                && r.agent == k.0
                && r.class == k.1
                && r.tid & TID_MATCH == k.2
        });
        if let Some(i) = answering {
            // Its RMPP response started and then went silent for a whole timeout (every
            // segment pushes the deadline on). A resent request would only make the
            // responder start over, so a retry just waits one more timeout (for the
            // sender's own resend after a lost segment or ACK); once the retries are spent
            // the transfer is aborted and the request ends as any unanswered one: after its
            // own budget of silence, not the reassembly's 40 s.
            if p.retries_left > 0 {
                p.retries_left -= 1;
                p.deadline = now + p.timeout;
                return;
            }
            let r = self.recvs.swap_remove(i);
            self.emit(nack(&r.hdr, RmppStatus::TotalTimeTooLong), r.addr, r.qp);
            self.end_pending(k.0, k.1, k.2, STATUS_TIMEOUT);
            return;
        }
        if p.retries_left > 0 {
            p.retries_left -= 1;
            p.deadline = now + p.timeout;
            let (m, addr, qp) = (p.mad.clone(), p.addr, p.qp);
            self.stats.retransmissions += 1;
            self.emit(m, addr, qp);
        } else if let Some(p) = self.pending.remove(&k) {
            self.deliver(Received {
                agent: k.0,
                status: STATUS_TIMEOUT,
                addr: p.addr,
                mad: report(p.mad),
            });
        }
    }

    /// Ends an RMPP send that did not complete: a request is reported with `status` (the
    /// kernel reports ACK timeouts of every send; an abort only matters to a request).
    fn end_send(&mut self, x: SendXfer, status: u32) {
        if status == STATUS_TIMEOUT || x.is_request {
            self.deliver(Received {
                agent: x.agent,
                status,
                addr: x.addr,
                mad: x.report_mad(),
            });
        }
    }

    /// Takes in one packet from the carrier.
    pub fn on_packet(&mut self, now: Instant, mut pkt: Packet) {
        let Ok(m) = Mad::new_checked(&pkt.mad[..]) else {
            self.stats.dropped_malformed += 1;
            return;
        };
        if pkt.status != 0 {
            self.on_bounce(now, pkt);
            return;
        }
        let (class, response, tid) = (u8::from(m.mgmt_class()), m.is_response_mad(), m.tid());
        let rmpp = if ibmad::is_rmpp_class(class) && rmpp_active(&pkt.mad) {
            match RmppHeader::parse(&Rmpp::new_unchecked(&pkt.mad[..])) {
                Ok(h) => Some(h),
                Err(_) => {
                    self.stats.dropped_malformed += 1;
                    return;
                }
            }
        } else {
            None
        };
        if rmpp.is_some() {
            // An RMPP segment is one whole MAD on the wire, as an HCA delivers it.
            pkt.mad.resize(ibmad::MAD_SIZE, 0);
        }
        // RMPP ACK/STOP/ABORT for one of our sends: found by TID whatever its method says
        // (the ACK of a GetTableResp travels as a GetTable).
        if let Some(h) = rmpp {
            if h.rmpp_type != RmppType::Data {
                if let Some(i) = self
                    .sends
                    .iter()
                    .position(|s| s.matches_from(class, tid, &pkt.addr))
                {
                    let agent = self.sends[i].agent;
                    if self.agent(agent).is_some_and(AgentSpec::kernel_rmpp) {
                        self.on_rmpp_control(now, i, pkt, h);
                        return;
                    }
                }
            }
        }
        let agent = if response {
            let a = tid_agent(tid);
            // By the TID's agent bits alone, as the kernel (a class-0 client agent gets the
            // responses to its requests); the waiting request checks the class.
            self.agent(a).filter(|s| s.qpn() == pkt.qp).map(|_| a)
        } else {
            self.find_request_agent(&pkt.mad, pkt.qp)
        };
        let Some(agent) = agent else {
            self.stats.dropped_unmatched += 1;
            return;
        };
        let spec = *self.agent(agent).expect("agent found above");
        if let Some(h) = rmpp.filter(|_| spec.kernel_rmpp()) {
            self.on_rmpp(now, agent, response, pkt, h);
            return;
        }
        if response {
            let key = (agent, class, tid & TID_MATCH);
            // With user-space RMPP every segment of a response goes to the agent.
            let user_rmpp = rmpp.is_some() && !spec.kernel_rmpp();
            if !self.take_waiting(key, &pkt.addr) && !user_rmpp {
                self.stats.dropped_unmatched += 1;
                return;
            }
        }
        self.deliver(Received {
            agent,
            status: 0,
            addr: pkt.addr,
            mad: pkt.mad,
        });
    }

    /// Ends the request a response answers: one waiting for its response, or an RMPP
    /// request still being sent (the answer may overtake the last ACK, as the kernel's
    /// `ib_find_send_mad` allows). Whether there was one.
    fn take_waiting(&mut self, key: PendingKey, from: &MadAddr) -> bool {
        if self.pending.remove(&key).is_some() {
            return true;
        }
        let (agent, class, tid) = key;
        let sending = self.sends.iter().position(|s| {
            s.agent == agent && s.is_request && s.timeout_ms > 0 && s.matches_from(class, tid, from)
        });
        if let Some(i) = sending {
            self.sends.swap_remove(i);
        }
        sending.is_some()
    }

    /// The agent registered for this request's class, version and method (and OUI).
    fn find_request_agent(&self, bytes: &[u8], qp: u32) -> Option<AgentId> {
        let m = Mad::new_unchecked(bytes);
        let class = u8::from(m.mgmt_class());
        let method = u8::from(m.method());
        let oui = ibmad::vendor::VendorMad::new_checked(bytes)
            .map(|v| v.oui())
            .unwrap_or(0);
        self.agents
            .iter()
            .position(|a| {
                a.is_some_and(|a| {
                    a.class == class
                        && a.class_version == m.class_version()
                        && a.methods.contains(method)
                        && a.qpn() == qp
                        && (!a.is_vendor_oui_class() || a.oui == oui)
                })
            })
            .map(|i| i as AgentId)
    }

    /// A packet of ours the carrier could not deliver: resend it at once (within the bounce
    /// budget); a request without budget left counts as timed out.
    fn on_bounce(&mut self, now: Instant, mut pkt: Packet) {
        pkt.status = 0;
        let (class, tid) = {
            let m = Mad::new_unchecked(&pkt.mad[..]);
            (u8::from(m.mgmt_class()), m.tid())
        };
        let rmpp = ibmad::is_rmpp_class(class) && rmpp_active(&pkt.mad);
        if rmpp {
            // The bounced copy's address is where it came back from (ibsim fills in our own
            // LID as its source): resend it to the transfer's peer.
            let found = match Rmpp::new_unchecked(&pkt.mad[..]).rmpp_type() {
                RmppType::Data => self
                    .sends
                    .iter_mut()
                    .find(|s| s.matches(class, tid))
                    .map(|s| (&mut s.bounces_left, s.addr, s.qp)),
                RmppType::Ack => self
                    .recvs
                    .iter_mut()
                    .find(|r| r.tid & TID_MATCH == tid & TID_MATCH && r.class == class)
                    .map(|r| (&mut r.bounces_left, r.addr, r.qp)),
                _ => None,
            };
            if let Some((budget, addr, qp)) = found.filter(|f| *f.0 > 0) {
                *budget -= 1;
                self.emit(pkt.mad, addr, qp);
            }
            return;
        }
        let key = (tid_agent(tid), class, tid & TID_MATCH);
        if self.pending.contains_key(&key) {
            self.retry_or_fail(now, key);
        }
    }

    /// ACK, STOP or ABORT for the send `i`.
    fn on_rmpp_control(&mut self, now: Instant, i: usize, pkt: Packet, h: RmppHeader) {
        if h.version != ibmad::rmpp::RMPP_VERSION {
            self.abort_send(i, &pkt, RmppStatus::UnsupportedVersion);
            return;
        }
        match h.rmpp_type {
            RmppType::Ack => self.on_ack(now, i, &pkt, h),
            RmppType::Stop => {
                let x = self.sends.swap_remove(i);
                if h.status != RmppStatus::ResourcesExhausted {
                    self.emit(nack(&pkt.mad, RmppStatus::IllegalStatus), pkt.addr, pkt.qp);
                }
                self.end_send(x, STATUS_ABORTED);
            }
            RmppType::Abort => {
                let x = self.sends.swap_remove(i);
                if !h.status.is_abort() {
                    self.emit(nack(&pkt.mad, RmppStatus::IllegalStatus), pkt.addr, pkt.qp);
                }
                self.end_send(x, STATUS_ABORTED);
            }
            _ => self.abort_send(i, &pkt, RmppStatus::BadRmppType),
        }
    }

    /// Ends send `i` because of a bad packet from its peer, and tells the peer why.
    fn abort_send(&mut self, i: usize, pkt: &Packet, status: RmppStatus) {
        let x = self.sends.swap_remove(i);
        self.emit(nack(&pkt.mad, status), pkt.addr, pkt.qp);
        self.end_send(x, STATUS_ABORTED);
    }

    fn on_ack(&mut self, now: Instant, i: usize, pkt: &Packet, h: RmppHeader) {
        let (seg, newwin) = (h.data1, h.data2);
        if h.status != RmppStatus::Normal {
            return self.abort_send(i, pkt, RmppStatus::IllegalStatus);
        }
        if newwin < seg {
            return self.abort_send(i, pkt, RmppStatus::NewWindowLastTooSmall);
        }
        let x = &mut self.sends[i];
        if seg > x.count || seg > x.newwin {
            return self.abort_send(i, pkt, RmppStatus::SegmentNumberTooBig);
        }
        if newwin < x.newwin || seg < x.last_ack {
            return; // an old ACK
        }
        let progress = seg > x.last_ack;
        if progress {
            x.last_ack = seg;
            x.retries_left = x.max_retries;
            x.bounces_left = self.cfg.bounce_budget;
        }
        x.newwin = newwin;
        if x.last_ack == x.count {
            let x = self.sends.swap_remove(i);
            if x.is_request && x.timeout_ms > 0 {
                // The whole request is across: now wait for its response as usual.
                let timeout = Duration::from_millis(u64::from(x.timeout_ms));
                self.pending.insert(
                    (x.agent, x.class, x.tid & TID_MATCH),
                    Pending {
                        mad: x.report_mad(),
                        addr: x.addr,
                        qp: x.qp,
                        timeout,
                        deadline: now + timeout,
                        retries_left: 0,
                    },
                );
            }
            return;
        }
        if x.seg_num < x.newwin {
            self.send_window(now, i);
        } else if progress {
            // Progress without new room: wait a fresh ACK timeout from now. (A repeated ACK
            // changes no timer, as in the kernel.)
            x.deadline = now + x.ack_timeout;
        }
    }

    /// An RMPP-ACTIVE packet for an RMPP agent that is not about one of our sends.
    fn on_rmpp(
        &mut self,
        now: Instant,
        agent: AgentId,
        response: bool,
        pkt: Packet,
        h: RmppHeader,
    ) {
        if h.version != ibmad::rmpp::RMPP_VERSION {
            self.emit(
                nack(&pkt.mad, RmppStatus::UnsupportedVersion),
                pkt.addr,
                pkt.qp,
            );
            return;
        }
        match h.rmpp_type {
            RmppType::Data => self.on_data(now, agent, response, pkt, h),
            // A STOP or ABORT from the sender of a message we are receiving: it will never
            // complete, so free it now (and end the request it answers).
            RmppType::Stop | RmppType::Abort => {
                let m = Mad::new_unchecked(&pkt.mad[..]);
                let Some(i) = self
                    .recvs
                    .iter()
                    .position(|r| r.state == RecvState::Active && r.matches(agent, &m, &pkt.addr))
                else {
                    return;
                };
                let r = self.recvs.swap_remove(i);
                if response {
                    self.end_pending(agent, r.class, r.tid, STATUS_ABORTED);
                }
            }
            RmppType::Ack => {} // for a send we no longer hold
            _ => self.emit(nack(&pkt.mad, RmppStatus::BadRmppType), pkt.addr, pkt.qp),
        }
    }

    /// Ends a waiting request early with `status` (its transfer was aborted).
    fn end_pending(&mut self, agent: AgentId, class: u8, tid: u64, status: u32) {
        if let Some(p) = self.pending.remove(&(agent, class, tid & TID_MATCH)) {
            self.deliver(Received {
                agent,
                status,
                addr: p.addr,
                mad: report(p.mad),
            });
        }
    }

    /// Stops reassembly `i` with RESX (it would pass `max_message` or `max_held`) and ends
    /// the request waiting for it, if it is a response.
    fn abandon_reassembly(&mut self, i: usize, agent: AgentId, response: bool) {
        let r = self.recvs.swap_remove(i);
        self.emit(stop(&r.hdr), r.addr, r.qp);
        if response {
            self.end_pending(agent, r.class, r.tid, STATUS_ABORTED);
        }
    }

    fn on_data(
        &mut self,
        now: Instant,
        agent: AgentId,
        response: bool,
        pkt: Packet,
        h: RmppHeader,
    ) {
        self.stats.segments_received += 1;
        let seg = h.data1;
        let first = h.flags.is_first();
        if h.status != RmppStatus::Normal {
            return self.emit(nack(&pkt.mad, RmppStatus::IllegalStatus), pkt.addr, pkt.qp);
        }
        if (seg == 1) != first {
            return self.emit(
                nack(&pkt.mad, RmppStatus::InconsistentFirstAndSegmentNumber),
                pkt.addr,
                pkt.qp,
            );
        }
        let m = Mad::new_unchecked(&pkt.mad[..]);
        let class = u8::from(m.mgmt_class());
        let hdr_len = ibmad::rmpp::data_offset(class);
        let existing = self
            .recvs
            .iter()
            .position(|r| r.matches(agent, &m, &pkt.addr));
        let i = match existing {
            Some(i) => i,
            None if seg == 1 => {
                if self.recvs.len() >= self.cfg.max_reassemblies {
                    // Make room by forgetting the finished transfer closest to its end.
                    if let Some(j) = self
                        .recvs
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.state == RecvState::Complete)
                        .min_by_key(|(_, r)| r.deadline)
                        .map(|(j, _)| j)
                    {
                        self.recvs.swap_remove(j);
                    }
                }
                if self.recvs.len() >= self.cfg.max_reassemblies
                    || h.data2 as usize > self.cfg.max_message
                {
                    let stop = stop(&pkt.mad);
                    return self.emit(stop, pkt.addr, pkt.qp);
                }
                self.recvs.push(RecvXfer {
                    agent,
                    tid: m.tid(),
                    class,
                    class_version: m.class_version(),
                    method: u8::from(m.method()),
                    addr: pkt.addr,
                    qp: pkt.qp,
                    hdr: pkt.mad[..hdr_len].to_vec(),
                    data: Vec::new(),
                    later: BTreeMap::new(),
                    seg_num: 0,
                    last_ack: 0,
                    newwin: 1,
                    state: RecvState::Active,
                    deadline: now + self.cfg.reassembly_timeout,
                    bounces_left: self.cfg.bounce_budget,
                });
                self.recvs.len() - 1
            }
            None => return self.stats.dropped_unmatched += 1,
        };
        let window = self.cfg.window.max(1);
        let max_message = self.cfg.max_message;
        let r = &mut self.recvs[i];
        if seg > r.newwin {
            return; // beyond the window: dropped
        }
        if seg <= r.last_ack || r.state == RecvState::Complete {
            let ack = r.ack();
            let (addr, qp) = (r.addr, r.qp);
            return self.emit(ack, addr, qp);
        }
        if seg <= r.seg_num || r.later.contains_key(&seg) {
            return; // already placed, not yet ACKed
        }
        let last = h.flags.is_last();
        let seg_data = &pkt.mad[hdr_len..];
        if self.held() + seg_data.len() > self.cfg.max_held {
            return self.abandon_reassembly(i, agent, response);
        }
        let budget = self.cfg.bounce_budget;
        let r = &mut self.recvs[i];
        r.bounces_left = budget;
        r.later.insert(seg, (seg_data.to_vec(), last, h.data2));
        let mut done = None;
        while let Some((d, last, paylen)) = r.later.remove(&(r.seg_num + 1)) {
            r.seg_num += 1;
            r.data.extend_from_slice(&d);
            if last {
                done = Some(paylen);
                break;
            }
        }
        if r.data.len() > max_message {
            return self.abandon_reassembly(i, agent, response);
        }
        if response && r.seg_num > 0 {
            // The response is arriving: its request must not time out meanwhile.
            let key = (agent, r.class, r.tid & TID_MATCH);
            if let Some(p) = self.pending.get_mut(&key) {
                p.deadline = now + p.timeout;
            }
        }
        let r = &mut self.recvs[i];
        if let Some(paylen) = done {
            r.state = RecvState::Complete;
            r.later.clear();
            r.deadline = now + self.cfg.linger;
            let ack = r.ack();
            let (addr, qp) = (r.addr, r.qp);
            // The kernel's get_mad_len: the last segment's PayloadLength says how much of it
            // is data (a value out of range counts as a full segment).
            let rmpp_size = ibmad::rmpp::RMPP_SEGMENT_DATA_LEN;
            let pad = rmpp_size.saturating_sub(paylen as usize);
            let len = (r.data.len()).saturating_sub(pad);
            let mut msg = std::mem::take(&mut r.hdr);
            msg.extend_from_slice(&r.data[..len]);
            r.hdr = msg[..hdr_len].to_vec();
            r.data = Vec::new();
            let (class, tid) = (r.class, r.tid);
            self.emit(ack, addr, qp);
            if response {
                let key = (agent, class, tid & TID_MATCH);
                if !self.take_waiting(key, &addr) {
                    self.stats.dropped_unmatched += 1;
                    return;
                }
            }
            self.deliver(Received {
                agent,
                status: 0,
                addr,
                mad: msg,
            });
        } else if r.seg_num == r.newwin {
            // The first segment opens the window; afterwards each filled window is ACKed.
            r.newwin += window;
            let ack = r.ack();
            let (addr, qp) = (r.addr, r.qp);
            self.emit(ack, addr, qp);
        }
    }
}

/// A report of a request carries its common MAD header, as the kernel's (`ib_umad` queues the
/// send with `length = IB_MGMT_MAD_HDR`).
fn report(mut request: Vec<u8>) -> Vec<u8> {
    request.truncate(ibmad::HEADER_LEN);
    request
}

/// An ABORT answering `seg` (its header, method flipped) with `status`.
fn nack(seg: &[u8], status: RmppStatus) -> Vec<u8> {
    control(seg, RmppHeader::stop_or_abort(true, status))
}

/// A STOP (resources exhausted) answering `seg`.
fn stop(seg: &[u8]) -> Vec<u8> {
    control(
        seg,
        RmppHeader::stop_or_abort(false, RmppStatus::ResourcesExhausted),
    )
}

/// An RMPP control MAD answering `seg`: its class header, the method's response bit
/// flipped, `h` as the RMPP header with the segment's RRespTime.
fn control(seg: &[u8], h: RmppHeader) -> Vec<u8> {
    let view = Mad::new_unchecked(seg);
    let class = u8::from(view.mgmt_class());
    let method = u8::from(view.method()) ^ ibmad::header::METHOD_RESP_BIT;
    let mut m = seg[..ibmad::rmpp::data_offset(class).min(seg.len())].to_vec();
    m.resize(ibmad::MAD_SIZE, 0);
    Mad::new_unchecked(&mut m[..]).set_method(method.into());
    let mut r = Rmpp::new_unchecked(&mut m[..]);
    let mut h = h;
    h.resp_time = r.resp_time();
    h.emit(&mut r);
    m
}
