//! [`Port`]: an opened InfiniBand port, its agents, and MAD send/receive.

use std::collections::VecDeque;
use std::fmt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec};
use crate::device::{Ca, Devices};
use crate::layer::{LayerConfig, MadLayer};
use crate::transport::ibsim::{IbsimCarrier, IbsimOptions};
use crate::transport::kernel::KernelTransport;
use crate::transport::{Issm, Outgoing, Received, Transport, STATUS_TIMEOUT};
use crate::Result;

/// Slack added to a transaction's own timeout budget before user space gives up on it, so
/// the transport's (kernel's) timeout report normally arrives first.
const TRANSACT_SLACK: Duration = Duration::from_millis(500);

/// An opened port: register agents on it, send and receive MADs.
///
/// All methods take `&self`; a port can be shared between a sending and a receiving thread.
/// Dropping the port unregisters its agents and closes it.
pub struct Port {
    transport: Box<dyn Transport>,
    /// MADs taken off the transport by [`Port::transact`] for someone else.
    stash: Mutex<VecDeque<Received>>,
}

impl fmt::Debug for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Port")
            .field("transport", &self.transport)
            .finish()
    }
}

impl Port {
    /// Opens a port the way libibumad's `umad_open_port` chooses it: `ca` `None` = the
    /// default CA, `port` 0 = its best port (ACTIVE, else LinkUp, else not Disabled;
    /// InfiniBand link layer; switches use port 0).
    ///
    /// If the environment variable `UMAD_IBSIM` names an ibsim socket, the port is instead a
    /// native connection to that simulator (node from `UMAD_IBSIM_NODE`); `ca` and `port` are
    /// then ignored. That variable is the only way this function uses ibsim.
    #[doc(alias = "umad_open_port")]
    pub fn open(ca: Option<&str>, port: u32) -> Result<Port> {
        match IbsimOptions::from_env() {
            Some(opts) => Port::open_ibsim(&opts),
            None => Port::open_kernel(&Devices::new(), ca, port),
        }
    }

    /// Like [`Port::open`], but only ports that have an SMI (QP0) qualify: on planarized HCAs
    /// the GSI-only twin device is skipped.
    #[doc(alias = "umad_open_smi_port")]
    pub fn open_smi(ca: Option<&str>, port: u32) -> Result<Port> {
        match IbsimOptions::from_env() {
            Some(opts) => Port::open_ibsim(&opts),
            None => Ok(Port::from_transport(Box::new(KernelTransport::open(
                &Devices::new(),
                ca,
                port,
                true,
            )?))),
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
        Ok(Port::from_transport(Box::new(MadLayer::new(
            Box::new(carrier),
            LayerConfig::default(),
        )?)))
    }

    /// A port over any transport.
    pub fn from_transport(transport: Box<dyn Transport>) -> Port {
        Port {
            transport,
            stash: Mutex::new(VecDeque::new()),
        }
    }

    /// The transport underneath.
    pub fn transport(&self) -> &dyn Transport {
        &*self.transport
    }

    /// The CA's name.
    pub fn ca_name(&self) -> &str {
        self.transport.ca_name()
    }

    /// The port number (0 on a switch).
    pub fn port_num(&self) -> u32 {
        self.transport.port_num()
    }

    /// Describes the CA this port belongs to (read now, not cached).
    #[doc(alias = "umad_get_ca")]
    pub fn ca(&self) -> Result<Ca> {
        self.transport.ca()
    }

    /// Registers an agent. Fails with [`Error::TooManyAgents`](crate::Error::TooManyAgents)
    /// when the port already holds 32.
    #[doc(alias = "umad_register")]
    #[doc(alias = "umad_register_oui")]
    #[doc(alias = "umad_register2")]
    pub fn register(&self, spec: &AgentSpec) -> Result<AgentId> {
        self.transport.register(spec)
    }

    /// Unregisters an agent.
    #[doc(alias = "umad_unregister")]
    pub fn unregister(&self, agent: AgentId) -> Result<()> {
        self.stash().retain(|r| r.agent != agent);
        self.transport.unregister(agent)
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
        self.transport.send(&Outgoing {
            agent,
            mad,
            addr: *addr,
            timeout_ms,
            retries,
        })
    }

    /// Takes the next MAD, waiting up to `timeout` (`None` = forever, zero = don't wait).
    /// `Ok(None)`: nothing arrived in time. A message of any length is returned whole.
    #[doc(alias = "umad_recv")]
    pub fn recv(&self, timeout: Option<Duration>) -> Result<Option<Received>> {
        if let Some(r) = self.stash().pop_front() {
            return Ok(Some(r));
        }
        self.transport.recv(timeout)
    }

    /// Waits until a MAD can be received, up to `timeout`.
    #[doc(alias = "umad_poll")]
    pub fn poll(&self, timeout: Option<Duration>) -> Result<bool> {
        if !self.stash().is_empty() {
            return Ok(true);
        }
        self.transport.poll(timeout)
    }

    /// Sends a request and waits for its response: the MAD received for `agent` with the same
    /// TID (lower 32 bits). Gives up — returning a report with status `ETIMEDOUT` holding the
    /// request — if the transport has not answered within the whole timeout/retry budget plus
    /// a margin, so it never hangs even when a MAD is lost without trace. MADs that arrive
    /// meanwhile for other agents or TIDs are kept for [`Port::recv`].
    pub fn transact(
        &self,
        agent: AgentId,
        mad: &[u8],
        addr: &MadAddr,
        timeout_ms: u32,
        retries: u32,
    ) -> Result<Received> {
        let tid = tid_low(mad);
        self.send(agent, mad, addr, timeout_ms.max(1), retries)?;
        let budget = Duration::from_millis(u64::from(timeout_ms.max(1)) * (u64::from(retries) + 1))
            + TRANSACT_SLACK;
        let until = Instant::now() + budget;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.transport.recv(Some(left))? {
                Some(r) if r.agent == agent && tid.is_some() && tid_low(&r.mad) == tid => {
                    return Ok(r)
                }
                Some(other) => self.stash().push_back(other),
                None => {
                    return Ok(Received {
                        agent,
                        status: STATUS_TIMEOUT,
                        addr: *addr,
                        mad: mad.to_vec(),
                    });
                }
            }
        }
    }

    /// Becomes the subnet manager of this port (PortInfo.CapabilityMask.IsSM) until the
    /// returned guard is dropped. On the kernel this opens `/dev/infiniband/issmN`, which
    /// blocks while another process holds it.
    #[doc(alias = "umad_get_issm_path")]
    pub fn issm(&self) -> Result<Issm> {
        self.transport.issm()
    }

    fn stash(&self) -> std::sync::MutexGuard<'_, VecDeque<Received>> {
        self.stash.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl AsRawFd for Port {
    /// A descriptor that polls readable when MADs arrive (`umad_get_fd`).
    #[doc(alias = "umad_get_fd")]
    fn as_raw_fd(&self) -> RawFd {
        self.transport.raw_fd()
    }
}

/// The lower 32 bits of a MAD's TID (bytes 12..16), the part the sender owns.
fn tid_low(mad: &[u8]) -> Option<u32> {
    mad.get(12..16)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
