//! Directed-route NodeInfo over a path, printed as `smpquery -D nodeinfo <path>` prints it.
//!
//! ```text
//! cargo run -p umad --example nodeinfo -- 0,1,8     # two hops out of the local port
//! UMAD_IBSIM=<ibsim socket> cargo run -p umad --example nodeinfo -- 0,1
//! ```
//! The path is infiniband-diags' `-D` form: `0` is the local port, each further number the
//! output port of one hop. Without `UMAD_IBSIM` the default local port of the kernel is used.

use std::error::Error;
use std::process::ExitCode;

use ibmad::{DrPath, Method, NodeInfo, Smp};
use umad::{AgentSpec, MadAddr, Port};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nodeinfo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One `Label:.....value` line as libibmad's dump functions print it (dots to column 33).
fn field(label: &str, value: impl std::fmt::Display) {
    println!("{:.<33}{value}", format!("{label}:"));
}

fn run() -> Result<(), Box<dyn Error>> {
    let text = std::env::args().nth(1).unwrap_or_else(|| "0".to_string());
    let path = DrPath::parse(&text).map_err(|e| format!("bad path {text:?}: {e}"))?;
    let port = Port::open(None, 0)?;
    let agent = port.register(&AgentSpec::new(0x81, 1))?;
    let request = Smp::dr_request(Method::Get, ibmad::attr::id::NODE_INFO, 0, 0x1234, &path);
    let reply = port.transact(agent, &request, &MadAddr::directed_route(), 1000, 2)?;
    if reply.is_timeout() {
        return Err(format!(
            "no NodeInfo over DR path {text}: timed out (no node there, or the link is down)"
        )
        .into());
    }
    let smp = Smp::new_checked(&reply.mad[..])?;
    let status = smp.status();
    if !status.is_success() {
        return Err(format!(
            "NodeInfo over DR path {text} answered with MAD status {:#06x}",
            status.raw()
        )
        .into());
    }
    let ni = NodeInfo::parse(smp.data())?;
    println!("# Node info: DR path slid 65535; dlid 65535; {text}");
    field("BaseVers", ni.base_version);
    field("ClassVers", ni.class_version);
    field("NodeType", ni.node_type);
    field("NumPorts", ni.num_ports);
    field("SystemGuid", format_args!("{:#018x}", ni.system_image_guid));
    field("Guid", format_args!("{:#018x}", ni.node_guid));
    field("PortGuid", format_args!("{:#018x}", ni.port_guid));
    field("PartCap", ni.partition_cap);
    field("DevId", format_args!("{:#06x}", ni.device_id));
    field("Revision", format_args!("{:#010x}", ni.revision));
    field("LocalPort", ni.local_port_num);
    field("VendorId", format_args!("{:#08x}", ni.vendor_id));
    Ok(())
}
