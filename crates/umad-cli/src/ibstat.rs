//! `umad ibstat`: the local CAs and their ports, as infiniband-diags' `ibstat` prints them
//! (from sysfs through [`umad::device`], or the simulated port when `UMAD_IBSIM` or `UMAD_SIM`
//! is set),
//! or `--json` (docs/json/ibstat-v1.schema.json).
//!
//! `ibstat [-l] [-s] [-p] [<ca_name> [portnum]]`: `-l` the CA names, `-s` without ports,
//! `-p` the port GUIDs. FDR10 (`Rate: 40 (FDR10)`) is read as C reads it, from the sysfs
//! `rate` text (ibsim's simulated port has none).

use std::ffi::OsString;

use clap::{Arg, ArgMatches, Command};
use serde_json::{json, Value};
use umad::device::{Ca, Devices, PortAttrs};

use crate::common::{self, Parsed};
use crate::debug::ibpanic;
use crate::dest::c_strtol;
use crate::exit;

/// The clap command.
pub fn command() -> Command {
    let cmd = Command::new("ibstat")
        .about("Show the local CAs and ports (as infiniband-diags' ibstat)")
        .override_usage("ibstat [options] <ca_name> [portnum]")
        .after_help(
            "Examples:\n  ibstat -l       # list all IB devices\n  ibstat mthca0 2 # stat port 2 of 'mthca0'",
        )
        .arg(common::count_flag("list_of_cas", 'l', "list all IB devices"))
        .arg(common::count_flag("short", 's', "short output"))
        .arg(common::count_flag("port_list", 'p', "show port list"))
        .arg(common::json_arg("ibstat"))
        .arg(Arg::new("args").num_args(0..).value_name("ca_name [portnum]"));
    common::add_common_args(cmd, "CDeGKLPsty")
}

/// `umad ibstat`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => run(&m),
        Parsed::Exit(code) => code,
    }
}

/// C's `IBPANIC` appends `%m`, the `errno` its call left behind:
/// `strerror(0)` for a lookup that failed without a failing call (`'x' IB device can't be found`).
const ERRNO_NONE: &str = "Success";
/// `strerror(ENOENT)`: what C's `umad_get_ca` leaves behind when it looked for a sysfs file that
/// is not there, as it does before `ca_stat` reports a missing port number.
const ERRNO_ENOENT: &str = "No such file or directory";

/// Whether sysfs says port `port` of `ca` runs FDR10 (C's `is_fdr10`: the `rate` text has
/// `FDR10` just before its `)`, e.g. `40 Gb/sec (4X FDR10)`).
fn is_fdr10(devices: Option<&Devices>, ca: &str, port: u32) -> bool {
    let Some(d) = devices else { return false };
    let path = d
        .paths()
        .class_dir
        .join(ca)
        .join("ports")
        .join(port.to_string())
        .join("rate");
    std::fs::read_to_string(path).is_ok_and(|rate| {
        rate.find(')')
            .is_some_and(|i| i >= 5 && rate.as_bytes()[i - 5..i].eq_ignore_ascii_case(b"fdr10"))
    })
}

/// The CAs: the simulated one under `UMAD_IBSIM` or `UMAD_SIM`, else every device in sysfs,
/// by name; and the sysfs devices (`None` under a simulator).
fn all_cas() -> Result<(Vec<Ca>, Option<Devices>), String> {
    if umad::Simulated::from_env()
        .map_err(|e| e.to_string())?
        .is_some()
    {
        let port = umad::Port::open(None, 0).map_err(|e| e.to_string())?;
        return Ok((vec![port.ca().map_err(|e| e.to_string())?], None));
    }
    let devices = Devices::new();
    let names = devices
        .ca_names()
        .map_err(|e| format!("can't list IB device names: {e}"))?;
    let cas = names
        .iter()
        .map(|n| devices.ca(n).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok((cas, Some(devices)))
}

fn run(m: &ArgMatches) -> i32 {
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let dev_port = args.get(1).map(|a| c_strtol(a));
    let (cas, devices) = match all_cas() {
        Ok(c) => c,
        Err(e) => return ibpanic(&e),
    };
    let cas: Vec<&Ca> = match args.first() {
        Some(want) => match cas.iter().find(|c| &c.name == want) {
            Some(c) => vec![c],
            None => return ibpanic(&format!("'{want}' IB device can't be found: {ERRNO_NONE}")),
        },
        None => cas.iter().collect(),
    };
    let list = m.get_count("list_of_cas") > 0;
    let short = m.get_count("short") > 0;
    let ports = m.get_count("port_list") > 0;
    if m.get_flag("json") {
        let doc = json!({
            "schema_version": 1,
            "cas": cas.iter().map(|c| ca_json(c)).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
        return exit::OK;
    }
    let mut out = String::new();
    if ports {
        for ca in &cas {
            for p in ca.ports.iter().filter(|p| p.port_guid != 0) {
                out.push_str(&format!("0x{:016x}\n", p.port_guid));
            }
        }
        print!("{out}");
        return exit::OK;
    }
    for ca in &cas {
        if list {
            out.push_str(&format!("{}\n", ca.name));
        } else if let Err(e) =
            write_ca(&mut out, ca, dev_port.filter(|&p| p >= 0), short, &|port| {
                is_fdr10(devices.as_ref(), &ca.name, port)
            })
        {
            print!("{out}");
            eprintln!("ibwarn: [{}] ca_stat: {e}", std::process::id());
            return ibpanic(&format!(
                "stat of IB device '{}' failed: {ERRNO_ENOENT}",
                ca.name
            ));
        }
    }
    print!("{out}");
    exit::OK
}

/// C's names of node types 0–4.
fn type_name(ca: &Ca) -> &'static str {
    match ca.node_type.code() {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        4 => "iWARP RNIC",
        _ => "???",
    }
}

/// `ca_stat`: the CA header and its ports, or only port `port`; `fdr10` says whether a port
/// runs FDR10.
pub fn write_ca(
    out: &mut String,
    ca: &Ca,
    port: Option<i64>,
    short: bool,
    fdr10: &dyn Fn(u32) -> bool,
) -> Result<(), String> {
    let kind = type_name(ca);
    if let (false, Some(n)) = (short, port) {
        let p = u32::try_from(n)
            .ok()
            .and_then(|n| ca.port(n))
            .ok_or_else(|| {
                format!(
                    "{kind}: '{}' has no port number {n} - max ({})",
                    ca.name,
                    ca.num_ports()
                )
            })?;
        out.push_str(&format!("{kind}: '{}'\n", ca.name));
        write_port(out, p, "", "", fdr10(p.port_num));
        return Ok(());
    }
    out.push_str(&format!("{kind} '{}'\n", ca.name));
    out.push_str(&format!("\t{kind} type: {}\n", ca.ca_type));
    out.push_str(&format!("\tNumber of ports: {}\n", ca.num_ports()));
    out.push_str(&format!("\tFirmware version: {}\n", ca.fw_ver));
    out.push_str(&format!("\tHardware version: {}\n", ca.hw_ver));
    out.push_str(&format!("\tNode GUID: 0x{:016x}\n", ca.node_guid));
    out.push_str(&format!("\tSystem image GUID: 0x{:016x}\n", ca.system_guid));
    if !short {
        for p in &ca.ports {
            write_port(out, p, "\t", "\t\t", fdr10(p.port_num));
        }
    }
    Ok(())
}

/// C's port state names (`port_state_str`).
fn state_name(s: u32) -> &'static str {
    ["???", "Down", "Initializing", "Armed", "Active"]
        .get(s as usize)
        .copied()
        .unwrap_or("???")
}

/// C's physical port state names (`port_phy_state_str`).
fn phys_name(s: u32) -> &'static str {
    [
        "No state change",
        "Sleep",
        "Polling",
        "Disabled",
        "PortConfigurationTraining",
        "LinkUp",
        "LinkErrorRecovery",
        "PhyTest",
    ]
    .get(s as usize)
    .copied()
    .unwrap_or("???")
}

/// `port_dump`.
fn write_port(out: &mut String, p: &PortAttrs, hdr: &str, pre: &str, fdr10: bool) {
    out.push_str(&format!("{hdr}Port {}:\n", p.port_num));
    out.push_str(&format!("{pre}State: {}\n", state_name(p.state)));
    out.push_str(&format!(
        "{pre}Physical state: {}\n",
        phys_name(p.phys_state)
    ));
    match p.rate {
        r if fdr10 => out.push_str(&format!("{pre}Rate: {r} (FDR10)\n")),
        2 => out.push_str(&format!("{pre}Rate: 2.5\n")),
        r => out.push_str(&format!("{pre}Rate: {r}\n")),
    }
    out.push_str(&format!("{pre}Base lid: {}\n", p.base_lid));
    out.push_str(&format!("{pre}LMC: {}\n", p.lmc));
    out.push_str(&format!("{pre}SM lid: {}\n", p.sm_lid));
    out.push_str(&format!("{pre}Capability mask: 0x{:08x}\n", p.cap_mask));
    out.push_str(&format!("{pre}Port GUID: 0x{:016x}\n", p.port_guid));
    out.push_str(&format!("{pre}Link layer: {}\n", p.link_layer));
}

fn ca_json(ca: &Ca) -> Value {
    json!({
        "name": ca.name,
        "node_type": type_name(ca),
        "ca_type": ca.ca_type,
        "num_ports": ca.num_ports(),
        "fw_ver": ca.fw_ver,
        "hw_ver": ca.hw_ver,
        "node_guid": format!("0x{:016x}", ca.node_guid),
        "system_guid": format!("0x{:016x}", ca.system_guid),
        "ports": ca.ports.iter().map(|p| json!({
            "port": p.port_num,
            "state": state_name(p.state),
            "phys_state": phys_name(p.phys_state),
            "rate": if p.rate == 2 { json!(2.5) } else { json!(p.rate) },
            "base_lid": p.base_lid,
            "lmc": p.lmc,
            "sm_lid": p.sm_lid,
            "cap_mask": format!("0x{:08x}", p.cap_mask),
            "port_guid": format!("0x{:016x}", p.port_guid),
            "link_layer": p.link_layer,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use umad::device::Paths;

    #[test]
    fn fdr10_from_the_rate_text() {
        let root = std::env::temp_dir().join(format!("umad-ibstat-fdr10-{}", std::process::id()));
        let devices = Devices::with_paths(Paths::with_root(&root));
        for (port, rate) in [
            (1, "40 Gb/sec (4X FDR10)\n"),
            (2, "56 Gb/sec (4X FDR)\n"),
            (3, "10"),
        ] {
            let dir = devices
                .paths()
                .class_dir
                .join("mlx4_0/ports")
                .join(port.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("rate"), rate).unwrap();
        }
        assert!(is_fdr10(Some(&devices), "mlx4_0", 1));
        assert!(!is_fdr10(Some(&devices), "mlx4_0", 2));
        assert!(!is_fdr10(Some(&devices), "mlx4_0", 3));
        assert!(!is_fdr10(Some(&devices), "mlx4_0", 4));
        assert!(!is_fdr10(None, "mlx4_0", 1));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
