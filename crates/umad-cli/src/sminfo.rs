//! `umad sminfo`: query (or, with a modifier, set) an SM's SMInfo and print it as
//! infiniband-diags' `sminfo`, or `--json` (docs/json/sminfo-v1.schema.json).
//!
//! `sminfo [-s state] [-p priority] [-a activity] [sm_lid|sm_dr_path] [modifier]`: without a
//! destination it asks the SM the local port knows. A non-zero modifier sends a Set with the
//! given state, priority and activity count (C's `-s -p -a`), as C does.

use std::ffi::OsString;

use clap::{Arg, ArgMatches, Command};
use ibmad::attr::id;
use ibmad::dump::get_bits;
use ibmad::Method;
use serde_json::json;

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_atoi, ibexit, Dest, SmpPort};
use crate::exit;

/// C's SMInfo state names.
const STATES: [&str; 4] = [
    "SMINFO_NOTACT",
    "SMINFO_DISCOVER",
    "SMINFO_STANDBY",
    "SMINFO_MASTER",
];

/// The clap command.
pub fn command() -> Command {
    let value = |id: &'static str, short: char, name: Option<&'static str>, help: &'static str| {
        let a = Arg::new(id).short(short).long(id).num_args(1).help(help);
        match name {
            Some(n) => a.value_name(n),
            None => a.value_name("val"),
        }
    };
    let cmd = Command::new("sminfo")
        .about("Query the SMInfo of a subnet manager (as infiniband-diags' sminfo)")
        .override_usage("sminfo [options] <sm_lid|sm_dr_path> [modifier]")
        .arg(value("state", 's', Some("0-3"), "set SM state"))
        .arg(value("priority", 'p', Some("0-15"), "set SM priority"))
        .arg(value("activity", 'a', None, "set activity count"))
        .arg(common::json_arg("sminfo"))
        .arg(
            Arg::new("args")
                .num_args(0..)
                .value_name("sm_lid|sm_dr_path [modifier]"),
        );
    common::add_common_args(cmd, "sK")
}

/// `umad sminfo`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => run(prog, &m),
        Parsed::Exit(code) => code,
    }
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    // C reads these with strtoul(..., 0) into ints.
    let num = |id: &str| -> u64 {
        m.get_one::<String>(id)
            .map_or(0, |s| crate::dest::c_strtoull(s))
    };
    let act = num("activity") as u32;
    let prio = num("priority") as u32;
    let state = m
        .get_one::<String>("state")
        .map_or(2, |s| crate::dest::c_strtoull(s) as u32);
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let modifier = args.get(1).map_or(0, |a| c_atoi(a) as u32);
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let dest = match args.first() {
        Some(a) => match port.resolve(a, opts.dest) {
            Some(d) => d,
            None => return ibexit(prog, &format!("can't resolve destination port {a}")),
        },
        None => match port.local() {
            Some(p) => Dest::lid(p.sm_lid as u16),
            None => return ibexit(prog, "can't resolve sm port (null)"),
        },
    };
    let mut data = [0u8; 64];
    // SmActivity (bits 128..160), SmPriority (160..164), SmState (164..168).
    data[16..20].copy_from_slice(&act.to_be_bytes());
    data[20] = (((prio & 0xf) << 4) | (state & 0xf)) as u8;
    let got = if modifier != 0 {
        port.query(&dest, Method::Set, id::SM_INFO, modifier, Some(&data))
    } else {
        // C's Get carries the same data (its buffer is filled before either).
        port.query(&dest, Method::Get, id::SM_INFO, 0, Some(&data))
    };
    let Some(r) = got else {
        return ibexit(prog, "query");
    };
    let guid = get_bits(&r, 0, 64);
    let act = get_bits(&r, 128, 32);
    let prio = get_bits(&r, 160, 4);
    let state = get_bits(&r, 164, 4);
    let state_name = STATES.get(state as usize).copied().unwrap_or("???");
    if m.get_flag("json") {
        let doc = json!({
            "schema_version": 1,
            "sm_lid": dest.lid,
            "sm_guid": format!("0x{guid:016x}"),
            "activity_count": act,
            "priority": prio,
            "state": state,
            "state_name": state_name,
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        println!(
            "sminfo: sm lid {} sm guid 0x{guid:x}, activity count {act} priority {prio} state {state} {state_name}",
            dest.lid
        );
    }
    exit::OK
}
