//! Packet carriers beneath the user-space MAD layer ([`crate::layer::Carrier`]): they move
//! single 256-byte MADs and know nothing of agents, TIDs, timeouts or RMPP, which the layer
//! does. Built in: [`ibsim`], a native client of the ibsim simulator's socket protocol, and
//! [`sim`], a fabric simulated in this process ([`ibnetsim`]).

pub mod ibsim;
pub mod sim;

use crate::device::{Ca, NodeType, PortAttrs};
use crate::{Error, Result};

/// A simulated fabric the environment (or a caller) asks for instead of the kernel's devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Simulated {
    /// A running ibsim, natively (`UMAD_IBSIM`).
    Ibsim(ibsim::IbsimOptions),
    /// A fabric simulated in this process (`UMAD_SIM`).
    InProcess(sim::SimOptions),
}

impl Simulated {
    /// What `UMAD_IBSIM` and `UMAD_SIM` (and their `_NODE` companions) ask for; `Ok(None)`:
    /// neither is set, the kernel's devices are meant.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a value that cannot be used, or both set.
    pub fn from_env() -> Result<Option<Simulated>> {
        let ibsim = ibsim::IbsimOptions::from_env()?;
        let sim = sim::SimOptions::from_env()?;
        match (ibsim, sim) {
            (Some(_), Some(_)) => Err(Error::InvalidArgument(format!(
                "both {} and {} are set: unset one (ibsim, or the fabric simulated in process)",
                ibsim::ENV_SOCKET,
                sim::ENV_SIM
            ))),
            (Some(o), None) => Ok(Some(Simulated::Ibsim(o))),
            (None, Some(o)) => Ok(Some(Simulated::InProcess(o))),
            (None, None) => Ok(None),
        }
    }

    /// The environment variable that selects it.
    pub fn variable(&self) -> &'static str {
        match self {
            Simulated::Ibsim(_) => ibsim::ENV_SOCKET,
            Simulated::InProcess(_) => sim::ENV_SIM,
        }
    }
}

/// What a simulated CA reports beyond its NodeInfo and PortInfo.
pub(crate) struct SimulatedVersions {
    pub(crate) hw: u32,
    pub(crate) fw: u64,
    pub(crate) port_guid: u64,
    pub(crate) pkeys: Vec<u16>,
}

/// A simulated CA with one port, described from its NodeInfo and PortInfo as umad2sim's fake
/// sysfs describes it (so `ibstat` prints the same under every simulator).
pub(crate) fn simulated_ca(
    name: &str,
    port_num: u32,
    ni: &ibmad::NodeInfo,
    pi: &ibmad::PortInfo,
    v: SimulatedVersions,
) -> Ca {
    let port = PortAttrs {
        ca_name: name.to_string(),
        port_num,
        base_lid: u32::from(pi.lid),
        lmc: u32::from(pi.lmc),
        sm_lid: u32::from(pi.master_sm_lid),
        sm_sl: u32::from(pi.master_sm_sl),
        state: u32::from(u8::from(pi.port_state)),
        phys_state: u32::from(u8::from(pi.port_physical_state)),
        rate: umad2sim_rate(pi),
        cap_mask: pi.capability_mask,
        gid_prefix: pi.gid_prefix,
        port_guid: v.port_guid,
        pkeys: v.pkeys,
        link_layer: "IB".to_string(),
    };
    Ca {
        name: name.to_string(),
        node_type: NodeType::from(u32::from(u8::from(ni.node_type))),
        fw_ver: format!("{:x}", v.fw),
        hw_ver: format!("{:x}", v.hw),
        ca_type: "simulator".to_string(),
        node_guid: ni.node_guid,
        system_guid: ni.system_image_guid,
        ports: vec![port],
        unreadable: Vec::new(),
    }
}

/// The integer Gb/s rate of a port as umad2sim writes it into its fake sysfs `rate` file
/// (and so as libibumad and `ibstat` report it under the shim): width × 2.5/5/10 for
/// SDR/DDR/QDR, 14 × width for FDR and 26 × width for any faster extended speed.
fn umad2sim_rate(pi: &ibmad::PortInfo) -> u32 {
    let width = match u8::from(pi.link_width_active) {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        _ => 0,
    };
    let ext = if pi.capability_mask & ibmad::attr::cap::IS_EXTENDED_SPEEDS_SUPPORTED != 0 {
        pi.link_speed_ext_active
    } else {
        0
    };
    match ext {
        0 => width * u32::from(pi.link_speed_active) * 25 / 10,
        1 => 14 * width,
        _ => 26 * width,
    }
}
