//! Prints CA and port status field for field as infiniband-diags' `ibstat` does.
//!
//! ```text
//! cargo run -p umad --example ibstat                 # all CAs
//! cargo run -p umad --example ibstat -- mlx5_0 1     # one port
//! cargo run -p umad --example ibstat -- -l | -s | -p # names / no ports / port GUIDs
//! UMAD_IBSIM=<ibsim socket> cargo run -p umad --example ibstat
//! ```
//! With `UMAD_IBSIM` set it describes the simulated port it attaches to (the CA `ibsim0`, as
//! ibsim's umad2sim shim names it); otherwise it reads sysfs.

use std::error::Error;
use std::process::ExitCode;

use umad::device::{Ca, Devices, NodeType, PortAttrs};
use umad::Port;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ibstat: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Default)]
struct Opts {
    list: bool,
    short: bool,
    ports: bool,
    ca: Option<String>,
    port: Option<u32>,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts::default();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "-l" | "--list_of_cas" => o.list = true,
            "-s" | "--short" => o.short = true,
            "-p" | "--port_list" => o.ports = true,
            s if s.starts_with('-') => return Err(format!("unknown option {s}; use -l, -s or -p")),
            s if o.ca.is_none() => o.ca = Some(s.to_string()),
            s if o.port.is_none() => o.port = Some(parse_port(s)?),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    Ok(o)
}

/// A port number as `strtol(…, 0)` reads it: decimal, 0x hex or leading-0 octal.
fn parse_port(s: &str) -> Result<u32, String> {
    let r = if let Some(h) = s.strip_prefix("0x") {
        u32::from_str_radix(h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8)
    } else {
        s.parse()
    };
    r.map_err(|_| format!("bad port number {s:?}"))
}

fn type_name(t: NodeType) -> &'static str {
    match t.code() {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        4 => "iWARP RNIC",
        _ => "???",
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let o = parse_args()?;
    let cas: Vec<Ca> = if umad::IbsimOptions::from_env().is_some() {
        vec![Port::open(None, 0)?.ca()?]
    } else {
        let devices = Devices::new();
        let names = devices.ca_names_unsorted()?;
        let names: Vec<String> = match &o.ca {
            // As ibstat: the first device whose name is a prefix of the argument.
            Some(want) => vec![names
                .into_iter()
                .find(|n| want.starts_with(n.as_str()))
                .ok_or_else(|| format!("'{want}' IB device can't be found"))?],
            None => names,
        };
        names
            .iter()
            .map(|n| devices.ca(n))
            .collect::<Result<_, _>>()?
    };
    for ca in &cas {
        if o.list {
            println!("{}", ca.name);
        } else if o.ports {
            for p in &ca.ports {
                if p.port_guid != 0 {
                    println!("{:#018x}", p.port_guid);
                }
            }
        } else {
            stat(ca, &o)?;
        }
    }
    Ok(())
}

fn stat(ca: &Ca, o: &Opts) -> Result<(), Box<dyn Error>> {
    let kind = type_name(ca.node_type);
    if let (false, Some(n)) = (o.short, o.port) {
        let p = ca.port(n).ok_or_else(|| {
            format!(
                "{kind}: '{}' has no port number {n} - max ({})",
                ca.name,
                ca.num_ports()
            )
        })?;
        println!("{kind}: '{}'", ca.name);
        port_dump(p, "", "");
        return Ok(());
    }
    println!("{kind} '{}'", ca.name);
    println!("\t{kind} type: {}", ca.ca_type);
    println!("\tNumber of ports: {}", ca.num_ports());
    println!("\tFirmware version: {}", ca.fw_ver);
    println!("\tHardware version: {}", ca.hw_ver);
    println!("\tNode GUID: {:#018x}", ca.node_guid);
    println!("\tSystem image GUID: {:#018x}", ca.system_guid);
    if !o.short {
        for p in &ca.ports {
            port_dump(p, "\t", "\t\t");
        }
    }
    Ok(())
}

fn port_dump(p: &PortAttrs, hdr: &str, pre: &str) {
    const STATES: [&str; 5] = ["???", "Down", "Initializing", "Armed", "Active"];
    const PHYS: [&str; 8] = [
        "No state change",
        "Sleep",
        "Polling",
        "Disabled",
        "PortConfigurationTraining",
        "LinkUp",
        "LinkErrorRecovery",
        "PhyTest",
    ];
    println!("{hdr}Port {}:", p.port_num);
    println!(
        "{pre}State: {}",
        STATES.get(p.state as usize).unwrap_or(&"???")
    );
    println!(
        "{pre}Physical state: {}",
        PHYS.get(p.phys_state as usize).unwrap_or(&"???")
    );
    match p.rate {
        2 => println!("{pre}Rate: 2.5"),
        r => println!("{pre}Rate: {r}"),
    }
    println!("{pre}Base lid: {}", p.base_lid);
    println!("{pre}LMC: {}", p.lmc);
    println!("{pre}SM lid: {}", p.sm_lid);
    println!("{pre}Capability mask: {:#010x}", p.cap_mask);
    println!("{pre}Port GUID: {:#018x}", p.port_guid);
    println!("{pre}Link layer: {}", p.link_layer);
}
