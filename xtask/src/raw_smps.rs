//! Pipelined directed-route NodeInfo SMPs through a `umad::Port` on the native ibsim
//! transport: the raw MAD rate ibsim sustains, against which `bench-rmpp` and
//! `bench-discover` measure.

use std::time::{Duration, Instant};

use ibmad::{DrPath, Method, NodeInfo, NodeType, Smp};
use umad::{AgentId, AgentSpec, IbsimOptions, MadAddr, Port};

/// Directed-route SMP class and class version.
const DR_SMP_CLASS: u8 = 0x81;
/// Timeout of one SMP, and how long the pipeline waits for any reply.
const SMP_TIMEOUT_MS: u32 = 1000;
const SMP_WAIT: Duration = Duration::from_secs(3);

/// A port that sends NodeInfo requests along one directed route, `window` in flight.
pub(crate) struct RawSmps {
    port: Port,
    agent: AgentId,
    route: DrPath,
    tid: u32,
    /// Requests in flight during [`RawSmps::run`].
    pub(crate) window: usize,
    /// Where the port is, for messages.
    node: String,
}

impl RawSmps {
    /// Opens a native ibsim port (`opts`) for NodeInfo requests along `route`.
    pub(crate) fn open(
        opts: &IbsimOptions,
        route: &[u8],
        window: usize,
    ) -> Result<RawSmps, String> {
        let node = opts
            .node
            .clone()
            .unwrap_or_else(|| "the default node".into());
        let fail = |e: umad::Error| format!("Rust SMP client on {node}: {e}");
        let port = Port::open_ibsim(opts).map_err(fail)?;
        let agent = port
            .register(&AgentSpec::new(DR_SMP_CLASS, 1))
            .map_err(fail)?;
        let route = DrPath::from_hops(route).map_err(|e| e.to_string())?;
        Ok(RawSmps {
            port,
            agent,
            route,
            tid: 0,
            window: window.max(1),
            node,
        })
    }

    fn request(&mut self) -> [u8; 256] {
        self.tid = self.tid.wrapping_add(1);
        Smp::dr_request(
            Method::Get,
            ibmad::attr::id::NODE_INFO,
            0,
            u64::from(self.tid),
            &self.route,
        )
    }

    /// The type of the node at the end of the route (one transaction, with retries).
    pub(crate) fn node_type(&mut self) -> Result<NodeType, String> {
        let req = self.request();
        let r = self
            .port
            .transact(
                self.agent,
                &req,
                &MadAddr::directed_route(),
                SMP_TIMEOUT_MS,
                2,
            )
            .map_err(|e| format!("NodeInfo over {}: {e}", self.route))?;
        Smp::new_checked(&r.mad[..])
            .ok()
            .filter(|s| r.status == 0 && s.status().is_success())
            .and_then(|s| NodeInfo::parse(s.data()).ok())
            .map(|ni| ni.node_type)
            .ok_or_else(|| {
                format!(
                    "no NodeInfo from the end of {} from {} (transport status {})",
                    self.route, self.node, r.status
                )
            })
    }

    /// Sends `total` NodeInfo requests keeping [`RawSmps::window`] in flight; returns the
    /// time until the last reply. Every reply must be a successful GetResp.
    pub(crate) fn run(&mut self, total: usize) -> Result<Duration, String> {
        let dr = MadAddr::directed_route();
        let fail = |e: umad::Error| format!("raw SMPs: {e}");
        let started = Instant::now();
        let mut sent = 0;
        while sent < total.min(self.window) {
            let req = self.request();
            self.port
                .send(self.agent, &req, &dr, SMP_TIMEOUT_MS, 0)
                .map_err(fail)?;
            sent += 1;
        }
        for _ in 0..total {
            let r = self
                .port
                .recv(Some(SMP_WAIT))
                .map_err(fail)?
                .ok_or_else(|| format!("raw SMPs: no reply within {SMP_WAIT:?}"))?;
            let ok = r.status == 0
                && Smp::new_checked(&r.mad[..]).is_ok_and(|s| s.status().is_success());
            if !ok {
                return Err(format!(
                    "raw SMPs: a NodeInfo failed (transport status {})",
                    r.status
                ));
            }
            if sent < total {
                let req = self.request();
                self.port
                    .send(self.agent, &req, &dr, SMP_TIMEOUT_MS, 0)
                    .map_err(fail)?;
                sent += 1;
            }
        }
        Ok(started.elapsed())
    }
}
