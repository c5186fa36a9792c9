//! An in-memory [`Transport`] for unit tests: answers requests after a delay, loses some
//! (with or without a timeout report), injects unsolicited MADs, and counts what is in
//! flight (in all and per destination LID) so tests can check windows independently.
//!
//! Where it models the kernel's `ib_umad`, it does what a real kernel was seen doing in the
//! guest of `cargo xtask realkernel` (each point has a test in [`crate::realkernel`] that runs
//! on both): agent ids are the lowest free slot of 32, and a 33rd registration fails; an
//! unknown agent cannot be unregistered or send; RMPP on a class without RMPP and (on a port
//! without QP0, as RoCE) SMP classes are refused, and so is a method another agent of the
//! same class and version has; the TID's upper 32 bits are a per-agent
//! value from a counter shared by every registration (the kernel's `hi_tid`); a second
//! request with the TID of one still in flight from the same agent is refused (`EINVAL`); a
//! timeout report is the request's 24-byte common header.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::abi::MAX_AGENTS;
use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::device::Ca;
use crate::transport::{deadline, Issm, Outgoing, Received, Transport, STATUS_TIMEOUT};
use crate::{Error, Result};

pub(crate) const CLASS: u8 = 0x81;
pub(crate) const GET: u8 = 0x01;
pub(crate) const TRAP: u8 = 0x05;
/// TIDs (low 32 bits) from here up are the fake's unsolicited MADs; tests use smaller ones.
pub(crate) const UNSOLICITED: u32 = 0xf000_0000;
/// The next agent's TID upper half: one counter for every registration of every fake, as the
/// kernel's `ib_mad_client_id` is one counter for every agent of the machine.
static NEXT_HI_TID: AtomicU32 = AtomicU32::new(0x100);

/// The length of a timeout report's MAD: the kernel copies only the request's common header.
pub(crate) const REPORT_LEN: usize = 24;

/// What becomes of a request the fake loses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Loss {
    /// A timeout report after the request's timeout/retry budget, as the kernel gives.
    Report,
    /// Nothing ever.
    Silent,
    /// The response, but this late.
    Late(Duration),
}

/// How the fake answers requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Behaviour {
    /// Responses are due this long after the request ...
    pub(crate) delay: Duration,
    /// ... plus this much times (request number mod 4), so responses overtake each other.
    pub(crate) jitter: Duration,
    /// Every `lose_every`-th request (0: none) is lost.
    pub(crate) lose_every: u64,
    pub(crate) loss: Loss,
    /// After every `unsolicited_every`-th request (0: never) the fake also delivers an
    /// unsolicited Trap to the sending agent.
    pub(crate) unsolicited_every: u64,
    /// The port has no QP0 (RoCE): SMP classes cannot be registered (`EPROTONOSUPPORT`).
    pub(crate) no_qp0: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            lose_every: 0,
            loss: Loss::Report,
            unsolicited_every: 0,
            no_qp0: false,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct FakeState {
    /// (due time, sequence number) of each MAD to deliver, earliest first.
    pub(crate) due: BinaryHeap<Reverse<(Instant, u64)>>,
    pub(crate) msgs: HashMap<u64, Received>,
    pub(crate) seq: u64,
    /// Requests sent.
    pub(crate) sent: u64,
    /// Unsolicited MADs delivered so far.
    pub(crate) unsolicited: u32,
    /// Registered agents: id → (what was registered, the TID's upper 32 bits it sends with).
    pub(crate) agents: BTreeMap<AgentId, (AgentSpec, u32)>,
    /// Requests in flight, by agent and whole TID, until their response or report is taken
    /// (or their timeout budget passed): the kernel refuses a second one with the same TID.
    pub(crate) in_flight: HashMap<(AgentId, u64), Instant>,
    /// Requests sent and not yet answered (delivered response or report), in all and per
    /// destination LID, and the most there ever were.
    pub(crate) outstanding: usize,
    pub(crate) max_outstanding: usize,
    pub(crate) outstanding_to: HashMap<u16, usize>,
    pub(crate) max_outstanding_to: usize,
}

#[derive(Debug)]
pub(crate) struct Fake {
    pub(crate) b: Behaviour,
    pub(crate) st: Mutex<FakeState>,
    pub(crate) cv: Condvar,
    /// Threads inside `recv_fit` now, and the most there ever were.
    pub(crate) readers: AtomicUsize,
    pub(crate) max_readers: AtomicUsize,
}

impl Fake {
    pub(crate) fn new(b: Behaviour) -> Arc<Fake> {
        Arc::new(Fake {
            b,
            st: Mutex::new(FakeState::default()),
            cv: Condvar::new(),
            readers: AtomicUsize::new(0),
            max_readers: AtomicUsize::new(0),
        })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, FakeState> {
        self.st.lock().unwrap()
    }

    pub(crate) fn push(st: &mut FakeState, at: Instant, r: Received) {
        st.seq += 1;
        st.due.push(Reverse((at, st.seq)));
        st.msgs.insert(st.seq, r);
    }

    fn push_unsolicited(st: &mut FakeState, agent: AgentId, len: usize) {
        let mut mad = vec![0u8; len];
        mad[..4].copy_from_slice(&[1, CLASS, 1, TRAP]);
        mad[12..16].copy_from_slice(&(UNSOLICITED + st.unsolicited).to_be_bytes());
        st.unsolicited += 1;
        let r = Received {
            agent,
            status: 0,
            addr: MadAddr::directed_route(),
            mad,
        };
        Fake::push(st, Instant::now(), r);
    }

    /// Delivers `n` unsolicited MADs of `len` bytes to `agent` now.
    pub(crate) fn inject(&self, agent: AgentId, n: usize, len: usize) {
        let mut st = self.state();
        for _ in 0..n {
            Fake::push_unsolicited(&mut st, agent, len);
        }
        self.cv.notify_all();
    }

    pub(crate) fn sent(&self) -> u64 {
        self.state().sent
    }

    /// The TID upper half of `agent`'s requests (what the kernel's `hi_tid` is for it).
    pub(crate) fn hi_tid(&self, agent: AgentId) -> u32 {
        self.state().agents.get(&agent).map_or(0, |a| a.1)
    }

    /// The kernel's bare errno (`_why` says which of its checks this is).
    fn errno(_why: &str, code: i32) -> std::io::Error {
        std::io::Error::from_raw_os_error(code)
    }
}

/// The fake as the port's transport (tests keep another handle to inspect and inject).
impl Transport for Arc<Fake> {
    fn ca_name(&self) -> &str {
        "fake0"
    }

    fn port_num(&self) -> u32 {
        1
    }

    fn ca(&self) -> Result<Ca> {
        Err(Error::InvalidArgument(
            "the fake transport has no CA".into(),
        ))
    }

    fn register(&self, spec: &AgentSpec) -> Result<AgentId> {
        spec.validate()?;
        let refuse = |code, what: &str| Error::Register {
            ca: "fake0".into(),
            port: 1,
            class: spec.class,
            version: spec.class_version,
            source: Fake::errno(what, code),
        };
        if spec.qpn() == 0 && self.b.no_qp0 {
            return Err(refuse(libc::EPROTONOSUPPORT, "this port has no QP0"));
        }
        if spec.rmpp_version != 0 && !ibmad::is_rmpp_class(spec.class) {
            return Err(refuse(libc::EINVAL, "RMPP on a class without RMPP"));
        }
        let mut st = self.state();
        let taken = st.agents.values().any(|(a, _)| {
            (a.class, a.class_version) == (spec.class, spec.class_version)
                && a.methods.overlaps(&spec.methods)
        });
        if taken {
            return Err(refuse(libc::EINVAL, "a method is already in use"));
        }
        let Some(id) = (0..MAX_AGENTS as AgentId).find(|id| !st.agents.contains_key(id)) else {
            return Err(Error::TooManyAgents {
                ca: "fake0".into(),
                port: 1,
                max: MAX_AGENTS,
            });
        };
        let hi = NEXT_HI_TID.fetch_add(1, Ordering::Relaxed);
        st.agents.insert(id, (*spec, hi));
        Ok(id)
    }

    fn unregister(&self, agent: AgentId) -> Result<()> {
        let mut st = self.state();
        if st.agents.remove(&agent).is_none() {
            return Err(Error::BadAgent {
                ca: "fake0".into(),
                port: 1,
                agent,
            });
        }
        st.in_flight.retain(|(a, _), _| *a != agent);
        Ok(())
    }

    fn send(&self, out: &Outgoing<'_>) -> Result<()> {
        let mut st = self.state();
        let Some(&(spec, hi)) = st.agents.get(&out.agent) else {
            return Err(Error::BadAgent {
                ca: "fake0".into(),
                port: 1,
                agent: out.agent,
            });
        };
        spec.check_send(out.mad)?;
        if ibmad::Mad::new_unchecked(out.mad).is_response_mad() || out.timeout_ms == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let low = u32::from_be_bytes([out.mad[12], out.mad[13], out.mad[14], out.mad[15]]);
        let key = (out.agent, (u64::from(hi) << 32) | u64::from(low));
        st.in_flight.retain(|_, until| *until > now);
        let budget =
            Duration::from_millis(u64::from(out.timeout_ms) * (u64::from(out.retries) + 1));
        if st.in_flight.insert(key, now + budget).is_some() {
            return Err(Error::Send {
                ca: "fake0".into(),
                port: 1,
                agent: out.agent,
                source: Fake::errno("a request with this TID is in flight", libc::EINVAL),
            });
        }
        st.sent += 1;
        let n = st.sent;
        st.outstanding += 1;
        st.max_outstanding = st.max_outstanding.max(st.outstanding);
        let to = st.outstanding_to.entry(out.addr.lid).or_insert(0);
        *to += 1;
        let to = *to;
        st.max_outstanding_to = st.max_outstanding_to.max(to);
        let mut mad = out.mad.to_vec();
        mad[8..12].copy_from_slice(&hi.to_be_bytes());
        let lost = self.b.lose_every != 0 && n % self.b.lose_every == 0;
        let reply = |mad: Vec<u8>, status| Received {
            agent: out.agent,
            status,
            addr: out.addr,
            mad,
        };
        let mut response = mad.clone();
        response[3] |= 0x80;
        match (lost, self.b.loss) {
            (false, _) => {
                let at = now + self.b.delay + self.b.jitter * (n % 4) as u32;
                Fake::push(&mut st, at, reply(response, 0));
            }
            (true, Loss::Report) => {
                mad.truncate(REPORT_LEN);
                Fake::push(&mut st, now + budget, reply(mad, STATUS_TIMEOUT))
            }
            (true, Loss::Silent) => {}
            (true, Loss::Late(d)) => Fake::push(&mut st, now + d, reply(response, 0)),
        }
        if self.b.unsolicited_every != 0 && n % self.b.unsolicited_every == 0 {
            Fake::push_unsolicited(&mut st, out.agent, 256);
        }
        self.cv.notify_all();
        Ok(())
    }

    fn recv_into(
        &self,
        timeout: Option<Duration>,
        capacity: usize,
        into: &mut Received,
    ) -> Result<bool> {
        Ok(crate::transport::fill(into, self.take(timeout, capacity)?))
    }

    fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        // Looks without taking (Port::poll peeks while no transaction waits).
        let until = deadline(timeout);
        let mut st = self.state();
        loop {
            let now = Instant::now();
            let next = st.due.peek().map(|Reverse((at, _))| *at);
            if next.is_some_and(|at| at <= now) {
                return Ok(true);
            }
            if until.is_some_and(|u| u <= now) {
                return Ok(false);
            }
            let wake = match (until, next) {
                (Some(u), Some(n)) => Some(u.min(n)),
                (u, n) => u.or(n),
            };
            st = match wake {
                None => self.cv.wait(st).unwrap(),
                Some(w) => self.cv.wait_timeout(st, w - now).unwrap().0,
            };
        }
    }

    fn raw_fd(&self) -> RawFd {
        -1
    }

    fn issm(&self) -> Result<Issm> {
        Err(Error::InvalidArgument(
            "the fake transport has no issm".into(),
        ))
    }
}

impl Fake {
    /// The next due MAD that fits in `capacity` bytes (the receive of [`Transport::recv_into`]).
    fn take(&self, timeout: Option<Duration>, capacity: usize) -> Result<Option<Received>> {
        let now_reading = self.readers.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_readers.fetch_max(now_reading, Ordering::SeqCst);
        struct Out<'a>(&'a AtomicUsize);
        impl Drop for Out<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _out = Out(&self.readers);
        let until = deadline(timeout);
        let mut st = self.state();
        loop {
            let now = Instant::now();
            let next = st.due.peek().map(|Reverse(d)| *d);
            if let Some((at, seq)) = next.filter(|(at, _)| *at <= now) {
                let needed = st.msgs[&seq].mad.len();
                if needed > capacity {
                    return Err(Error::TooLong {
                        ca: "fake0".into(),
                        port: 1,
                        needed,
                        capacity,
                    });
                }
                st.due.pop();
                let _ = at;
                let r = st.msgs.remove(&seq);
                if let Some(r) = &r {
                    let tid = u32::from_be_bytes([r.mad[12], r.mad[13], r.mad[14], r.mad[15]]);
                    let whole = u64::from_be_bytes(r.mad[8..16].try_into().unwrap_or_default());
                    st.in_flight.remove(&(r.agent, whole));
                    if tid < UNSOLICITED {
                        st.outstanding = st.outstanding.saturating_sub(1);
                        if let Some(n) = st.outstanding_to.get_mut(&r.addr.lid) {
                            *n = n.saturating_sub(1);
                        }
                    }
                }
                return Ok(r);
            }
            if until.is_some_and(|u| u <= now) {
                return Ok(None);
            }
            let wake = match (until, next.map(|(at, _)| at)) {
                (Some(u), Some(n)) => Some(u.min(n)),
                (u, n) => u.or(n),
            };
            st = match wake {
                None => self.cv.wait(st).unwrap(),
                Some(w) => self.cv.wait_timeout(st, w - now).unwrap().0,
            };
        }
    }
}
