//! `umad ibportstate`: show a port's state, link width and speed (and its peer's, for a
//! switch port), or change them, as infiniband-diags' `ibportstate` (rdma-core 44): the same
//! operations (`query`, `enable`, `disable`, `on`, `off`, `reset`, `down`, `arm`, `active`)
//! and settings (`speed`, `espeed`, `fdr10`, `width`, `vls`, `mtu`, `lid`, `smlid`, `lmc`,
//! `mkey`, `mkeylease`, `mkeyprot`), the same text byte for byte, errors included; `--json`
//! (docs/json/ibportstate-v1.schema.json).
//!
//! A set reads the port's PortInfo, changes what was asked (PortState and
//! PortPhysicalState are "no change" unless an operation sets them; a LID or SM LID of 0 or
//! 0xffff becomes 0x1234, as C does, so the SMA accepts the Set) and writes it back; `fdr10`
//! writes the Mellanox ExtendedPortInfo first. A query of an active switch port also shows
//! the peer port (reached by a directed route one hop further) and warns on stderr when the
//! link runs below what both ends enable.
//!
//! Differences from C: a malformed `mkey` value is an error (`Bad new M_Key`) instead of a
//! password prompt.

use std::ffi::OsString;

use clap::{Arg, ArgMatches, Command};
use ibmad::attr::id;
use ibmad::attr::{MlnxExtPortInfo, MLNX_SPEED_FDR10};
use ibmad::dump::{self, Field};
use ibmad::{Method, Mtu, PhysPortState, PortInfo, PortState};
use serde_json::{json, Map, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtol, c_strtoull, ibexit, ibwarn, Dest, DrRoute, SmpPort};
use crate::exit;
use crate::smpquery::{dest_json, fields_json};

/// The operations and settings, in C's `port_args` order: (name, takes a value).
const PORT_ARGS: &[(&str, bool)] = &[
    ("query", false),
    ("enable", false),
    ("reset", false),
    ("disable", false),
    ("speed", true),
    ("espeed", true),
    ("fdr10", true),
    ("width", true),
    ("down", false),
    ("arm", false),
    ("active", false),
    ("vls", true),
    ("mtu", true),
    ("lid", true),
    ("smlid", true),
    ("lmc", true),
    ("mkey", true),
    ("mkeylease", true),
    ("mkeyprot", true),
    ("on", false),
    ("off", false),
];

/// PortInfo CapabilityMask: IsExtendedSpeedsSupported.
const CAP_EXT_SPEEDS: u32 = 1 << 14;
/// Mellanox ExtendedPortInfo: the FDR10 bit of the speed masks and StateChangeEnable.
const FDR10: u8 = MLNX_SPEED_FDR10;

/// The PortInfo fields `show_port_info` prints, by libibmad name, in its order: always,
/// with extended speeds, and (a CA, router or switch port 0) the M_Key ones.
const SHOWN: &[&str] = &[
    "LinkState",
    "PhysLinkState",
    "Lid",
    "SMLid",
    "LMC",
    "LinkWidthSupported",
    "LinkWidthEnabled",
    "LinkWidthActive",
    "LinkSpeedSupported",
    "LinkSpeedEnabled",
    "LinkSpeedActive",
];
const SHOWN_EXT: &[&str] = &[
    "LinkSpeedExtSupported",
    "LinkSpeedExtEnabled",
    "LinkSpeedExtActive",
];
const SHOWN_KEYS: &[&str] = &[dump::PORT_INFO_MKEY, "MkeyLeasePeriod", "ProtectBits"];

/// C's usage args (they end with a newline).
const USAGE_ARGS: &str = "<dest dr_path|lid|guid> <portnum> [<op>]\n\n\
    Supported ops: enable, disable, on, off, reset, speed, espeed, fdr10,\n\
    \twidth, query, down, arm, active, vls, mtu, lid, smlid, lmc,\n\
    \tmkey, mkeylease, mkeyprot\n";

/// The clap command.
pub fn command() -> Command {
    let cmd = Command::new("ibportstate")
        .about("Query or change a port's state, link width and speed (as infiniband-diags' ibportstate)")
        .override_usage(format!("ibportstate [options] {USAGE_ARGS}"))
        .before_help(USAGE_ARGS)
        .after_help(
            "Examples:\n  \
             ibportstate -C qib0 -P 1 3 1 disable     # by CA name, CA Port Number, lid, physical port number\n  \
             ibportstate -C qib0 -P 1 3 1 enable      # by CA name, CA Port Number, lid, physical port number\n  \
             ibportstate -D 0 1\t\t\t# (query) by direct route\n  \
             ibportstate 3 1 reset\t\t\t# by lid\n  \
             ibportstate 3 1 speed 1\t\t\t# by lid\n  \
             ibportstate 3 1 width 1\t\t\t# by lid\n  \
             ibportstate -D 0 1 lid 0x1234 arm\t\t# by direct route",
        )
        .arg(common::json_arg("ibportstate"))
        .arg(
            Arg::new("args")
                .num_args(0..)
                .value_name("dest portnum [op [value]]..."),
        );
    common::add_common_args(cmd, "")
}

/// `umad ibportstate`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

/// What the command line asks for.
#[derive(Debug, Default)]
struct Request {
    /// The operation (index into [`PORT_ARGS`]); `None` = query.
    op: Option<usize>,
    /// The settings given, by [`PORT_ARGS`] index.
    values: Vec<(usize, u64)>,
}

impl Request {
    fn value(&self, name: &str) -> Option<u64> {
        self.values
            .iter()
            .rev()
            .find(|(j, _)| PORT_ARGS[*j].0 == name)
            .map(|&(_, v)| v)
    }

    fn is_set(&self, name: &str) -> bool {
        self.value(name).is_some()
    }

    fn op_name(&self) -> &'static str {
        self.op.map_or("query", |j| PORT_ARGS[j].0)
    }

    /// C's `port_op != QUERY || changed`.
    fn changes(&self) -> bool {
        self.op.is_some_and(|j| PORT_ARGS[j].0 != "query") || !self.values.is_empty()
    }
}

/// `strtoull(s, &end, 0)` that consumed the whole string without overflow (C's M_Key
/// check): `None` otherwise. An empty string is 0, as in C.
fn strict_strtoull(s: &str) -> Option<u64> {
    let r = ibfabric::cnum::scan(s.as_bytes(), 0);
    (r.whole(s.as_bytes()) && !r.overflow).then(|| r.unsigned())
}

/// Parses the operations after `<dest> <portnum>` as C's loop does; `Err` is the IBEXIT text.
fn parse_request(args: &[String]) -> Result<Request, String> {
    let mut r = Request::default();
    let mut i = 0;
    while i < args.len() {
        let Some(j) = PORT_ARGS.iter().position(|(n, _)| *n == args[i]) else {
            return Err(format!("invalid operation: {}", args[i]));
        };
        let (name, takes_value) = PORT_ARGS[j];
        if !takes_value {
            if r.op.is_some() {
                return Err(format!(
                    "{name} only one of: query, enable, disable, reset, down, arm, active, can be specified"
                ));
            }
            r.op = Some(j);
            i += 1;
            continue;
        }
        i += 1;
        let Some(text) = args.get(i) else {
            return Err(format!("{name} requires an additional parameter"));
        };
        let val = c_strtoull(text);
        let bad = match name {
            "speed" if val > 15 => Some(format!("invalid speed value {val}")),
            "espeed" if val > 31 => Some(format!("invalid extended speed value {val}")),
            "fdr10" if val > 1 => Some(format!("invalid fdr10 speed value {val}")),
            "width" if val > 31 && val != 255 => Some(format!("invalid width value {val}")),
            "vls" if val == 0 || val > 5 => Some(format!("invalid vls value {val}")),
            "mtu" if val == 0 || val > 5 => Some(format!("invalid mtu value {val}")),
            "lid" if val == 0 || val >= 0xc000 => Some(format!("invalid lid value 0x{val:x}")),
            "smlid" if val == 0 || val >= 0xc000 => Some(format!("invalid smlid value 0x{val:x}")),
            "lmc" if val > 7 => Some(format!("invalid lmc value {val}")),
            "mkey" if strict_strtoull(text).is_none() => Some("Bad new M_Key\n".to_string()),
            "mkeylease" if val > 0xffff => Some(format!("invalid mkey lease time {val}")),
            "mkeyprot" if val > 3 => Some(format!("invalid mkey protection bit setting {val}")),
            _ => None,
        };
        if let Some(msg) = bad {
            return Err(msg);
        }
        r.values.push((j, val));
        i += 1;
    }
    Ok(r)
}

/// The fields of `names`, from libibmad's PortInfo table.
fn port_fields(names: &[&str]) -> Vec<Field> {
    names
        .iter()
        .filter_map(|n| dump::PORT_INFO.iter().find(|f| f.name == *n).copied())
        .collect()
}

/// The value of PortInfo field `name` in `data`.
fn pi_get(data: &[u8], name: &str) -> u64 {
    port_fields(&[name])
        .first()
        .map_or(0, |f| dump::get_bits(data, f.offset, f.width))
}

/// A failure: the C function that calls IBEXIT, and its message.
struct Failed(&'static str, String);

impl Failed {
    /// A failure in C's `main`.
    fn main(msg: impl Into<String>) -> Failed {
        Failed("main", msg.into())
    }
}

/// C's `ibexit`: with `-d` the line names the pid and the function, as C's does.
fn exit_failed(prog: &str, debug: bool, f: &Failed) -> i32 {
    if debug {
        println!(
            "{prog}: iberror: [pid {}] {}: failed: {}",
            std::process::id(),
            f.0,
            f.1
        );
        exit::FAILURE
    } else {
        ibexit(prog, &f.1)
    }
}

/// The run, with the text printed so far and the JSON document being built.
struct Run<'a> {
    port: &'a SmpPort,
    out: String,
    doc: Map<String, Value>,
}

impl Run<'_> {
    /// `get_node_info`: the NodeInfo data and whether it is a switch.
    fn node_info(&self, dest: &Dest) -> Result<(Vec<u8>, bool), Failed> {
        let data = self
            .port
            .get(dest, id::NODE_INFO, 0)
            .ok_or_else(|| Failed("get_node_info", "smp query nodeinfo failed".into()))?;
        let is_switch = dump::get_bits(&data, 16, 8) == 2;
        Ok((data, is_switch))
    }

    /// `get_port_info`: port `portnum`'s PortInfo, and whether extended speeds apply (the
    /// capability of port 0 for a switch, of the port itself otherwise). `held`: what C's
    /// buffer holds before the query (the NodeInfo), which its Get carries as payload.
    fn port_info(
        &self,
        dest: &Dest,
        portnum: i32,
        is_switch: bool,
        held: &[u8],
    ) -> Result<(Vec<u8>, bool), Failed> {
        let port0 = if is_switch {
            Some(self.port.get(dest, id::PORT_INFO, 0).ok_or_else(|| {
                Failed("get_port_info", "smp query port 0 portinfo failed".into())
            })?)
        } else {
            None
        };
        let data = self
            .port
            .query(dest, Method::Get, id::PORT_INFO, portnum as u32, Some(held))
            .ok_or_else(|| Failed("get_port_info", "smp query portinfo failed".into()))?;
        let info = port0.as_deref().unwrap_or(&data);
        let espeed_cap = pi_get(info, "CapMask") as u32 & CAP_EXT_SPEEDS != 0;
        Ok((data, espeed_cap))
    }

    /// `show_port_info`: the text, and the fields shown in JSON.
    fn show_port_info(
        &mut self,
        dest: &Dest,
        data: &[u8],
        portnum: i32,
        espeed_cap: bool,
        is_switch: bool,
    ) -> Value {
        let mut names: Vec<&str> = SHOWN.to_vec();
        if espeed_cap {
            names.extend_from_slice(SHOWN_EXT);
        }
        if !is_switch || portnum == 0 {
            names.extend_from_slice(SHOWN_KEYS);
        }
        let fields = port_fields(&names);
        let hidden = (!self.port.opts.show_keys).then_some(dump::PORT_INFO_MKEY);
        self.out.push_str(&format!(
            "# Port info: {} port {portnum}\n",
            dest.to_c_string()
        ));
        self.out
            .push_str(&dump::dump_fields_hiding(data, &fields, hidden));
        crate::debug::dump_warnings(data, &fields);
        json!({
            "destination": dest_json(dest),
            "port": portnum,
            "fields": fields_json(data, &fields, hidden),
        })
    }

    /// `get_mlnx_ext_port_info`.
    fn mlnx_ext(&self, dest: &Dest, portnum: i32) -> Result<Vec<u8>, Failed> {
        self.port
            .get(dest, id::MLNX_EXT_PORT_INFO, portnum as u32)
            .ok_or_else(|| {
                Failed(
                    "get_mlnx_ext_port_info",
                    "smp query ext portinfo failed".into(),
                )
            })
    }

    /// `show_mlnx_ext_port_info`.
    fn show_mlnx_ext(&mut self, dest: &Dest, data: &[u8], portnum: i32) -> Value {
        self.out.push_str(&format!(
            "# MLNX ext Port info: {} port {portnum}\n",
            dest.to_c_string()
        ));
        self.out
            .push_str(&dump::dump_fields(data, dump::MLNX_EXT_PORT_INFO));
        fields_json(data, dump::MLNX_EXT_PORT_INFO, None)
    }
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    if args.len() < 2 {
        eprint!("{}", common::c_usage(&command().name(prog)));
        return exit::USAGE;
    }
    let json = m.get_flag("json");
    let debug = opts.debug > 0;
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let Some(dest) = port.resolve(&args[0], opts.dest) else {
        let f = Failed::main(format!("can't resolve destination port {}", args[0]));
        return exit_failed(prog, debug, &f);
    };
    // C: strtol into an int.
    let portnum = c_strtol(&args[1]) as i32;
    let request = match parse_request(&args[2..]) {
        Ok(r) => r,
        Err(msg) => return exit_failed(prog, debug, &Failed::main(msg)),
    };
    let mut r = Run {
        port: &port,
        out: String::new(),
        doc: Map::new(),
    };
    let result = execute(&mut r, &dest, portnum, &request);
    if !json {
        print!("{}", r.out);
    }
    match result {
        Ok(()) => {
            if json {
                let mut doc = Map::new();
                doc.insert("schema_version".into(), json!(1));
                doc.insert("destination".into(), dest_json(&dest));
                doc.insert("port".into(), json!(portnum));
                doc.insert("operation".into(), json!(request.op_name()));
                let settings: Map<String, Value> = request
                    .values
                    .iter()
                    .map(|&(j, v)| {
                        let v = if PORT_ARGS[j].0 == "mkey" {
                            json!(format!("0x{v:016x}"))
                        } else {
                            json!(v)
                        };
                        (PORT_ARGS[j].0.to_string(), v)
                    })
                    .collect();
                doc.insert("settings".into(), Value::Object(settings));
                doc.extend(std::mem::take(&mut r.doc));
                println!(
                    "{}",
                    serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON")
                );
            }
            exit::OK
        }
        Err(f) => exit_failed(prog, debug, &f),
    }
}

/// C's `main` after the arguments: show, then set or check the peer.
fn execute(r: &mut Run<'_>, dest: &Dest, portnum: i32, req: &Request) -> Result<(), Failed> {
    let (ni, is_switch) = r.node_info(dest)?;
    let vendor_id = dump::get_bits(&ni, 296, 24) as u32;
    let device_id = dump::get_bits(&ni, 240, 16) as u16;
    let mkey_fields = req.is_set("mkey") || req.is_set("mkeylease") || req.is_set("mkeyprot");
    if mkey_fields && is_switch && portnum != 0 {
        return Err(Failed::main("Can't set M_Key fields on switch port != 0"));
    }
    let kind = if is_switch { "Switch" } else { "CA/RT" };
    r.doc.insert("node_type".into(), json!(kind));
    if req.changes() {
        r.out.push_str(&format!("Initial {kind} PortInfo:\n"));
    } else {
        r.out.push_str(&format!("{kind} PortInfo:\n"));
    }
    let (mut data, espeed_cap) = r.port_info(dest, portnum, is_switch, &ni)?;
    let shown = r.show_port_info(dest, &data, portnum, espeed_cap, is_switch);
    r.doc.insert("port_info".into(), shown);
    let mlnx = r.port.opts.mlx_epi
        && ibfabric::discover::mlnx_ext_port_info_supported(vendor_id, device_id);
    let mut data2 = vec![0u8; 64];
    let mut mlnx_json = Value::Null;
    if mlnx {
        data2 = r.mlnx_ext(dest, portnum)?;
        mlnx_json = r.show_mlnx_ext(dest, &data2, portnum);
    }
    r.doc.insert("mlnx_ext_port_info".into(), mlnx_json);
    r.doc.insert("after_mlnx_ext_set".into(), Value::Null);
    r.doc.insert("after_set".into(), Value::Null);
    r.doc.insert("peer".into(), Value::Null);
    r.doc.insert("warnings".into(), json!([]));
    r.doc.insert("messages".into(), json!([]));

    if req.changes() {
        set(
            r, dest, portnum, req, &mut data, &mut data2, espeed_cap, is_switch,
        )
    } else if is_switch && portnum != 0 {
        check_peer(r, dest, portnum, &data, &mut data2, espeed_cap)
    } else {
        Ok(())
    }
}

/// A message printed on stdout (and kept for JSON).
fn message(r: &mut Run<'_>, text: &str) {
    r.out.push_str(text);
    r.out.push('\n');
    if let Some(Value::Array(a)) = r.doc.get_mut("messages") {
        a.push(json!(text));
    }
}

/// A warning on stderr as libibmad's IBWARN from `func` (and kept for JSON).
fn warn(r: &mut Run<'_>, func: &str, text: String) {
    ibwarn(func, &text);
    if let Some(Value::Array(a)) = r.doc.get_mut("warnings") {
        a.push(json!(text));
    }
}

/// The set path: change `data` (PortInfo) as asked and write it back.
#[allow(clippy::too_many_arguments)]
fn set(
    r: &mut Run<'_>,
    dest: &Dest,
    portnum: i32,
    req: &Request,
    data: &mut [u8],
    data2: &mut [u8],
    espeed_cap: bool,
    is_switch: bool,
) -> Result<(), Failed> {
    let mut pi = PortInfo::parse(data).map_err(|e| Failed::main(format!("bad PortInfo: {e}")))?;
    let physstate = u8::from(pi.port_physical_state);
    // An unset LID would make the SMA refuse the Set: something unlikely but valid.
    if !req.is_set("lid") && (pi.lid == 0 || pi.lid == 0xffff) {
        pi.lid = 0x1234;
    }
    if !req.is_set("smlid") && (pi.master_sm_lid == 0 || pi.master_sm_lid == 0xffff) {
        pi.master_sm_lid = 0x1234;
    }
    pi.port_state = PortState::NoChange;
    pi.port_physical_state = PhysPortState::NoChange;
    match req.op_name() {
        "on" if physstate != 3 => {
            message(r, "Port is already in enable state");
            return Ok(());
        }
        "on" | "enable" | "reset" => pi.port_physical_state = PhysPortState::Polling,
        "off" | "disable" => {
            message(r, "Disable may be irreversible");
            pi.port_physical_state = PhysPortState::Disabled;
        }
        "down" => pi.port_state = PortState::Down,
        "arm" => pi.port_state = PortState::Armed,
        "active" => pi.port_state = PortState::Active,
        _ => {}
    }
    // Always written: 0 means no change.
    pi.link_speed_enabled = req.value("speed").unwrap_or(0) as u8 & 0xf;
    pi.link_speed_ext_enabled = req.value("espeed").unwrap_or(0) as u8 & 0x1f;
    pi.link_width_enabled = req.value("width").unwrap_or(0) as u8;
    if let Some(v) = req.value("vls") {
        pi.operational_vls = v as u8;
    }
    if let Some(v) = req.value("mtu") {
        pi.neighbor_mtu = Mtu::from(v as u8);
    }
    if let Some(v) = req.value("lid") {
        pi.lid = v as u16;
    }
    if let Some(v) = req.value("smlid") {
        pi.master_sm_lid = v as u16;
    }
    if let Some(v) = req.value("lmc") {
        pi.lmc = v as u8;
    }
    if let Some(v) = req.value("fdr10") {
        let mut ext = MlnxExtPortInfo::parse(data2)
            .map_err(|e| Failed::main(format!("bad MlnxExtPortInfo: {e}")))?;
        ext.state_change_enable = FDR10;
        ext.link_speed_enabled = v as u8;
        ext.emit(data2);
        let resp = r
            .port
            .query(
                dest,
                Method::Set,
                id::MLNX_EXT_PORT_INFO,
                portnum as u32,
                Some(data2),
            )
            .ok_or_else(|| {
                Failed(
                    "set_mlnx_ext_port_info",
                    "smp set MLNX ext portinfo failed".into(),
                )
            })?;
        r.out.push_str("\nAfter MLNXExtendedPortInfo set:\n");
        let shown = r.show_mlnx_ext(dest, &resp, portnum);
        r.doc.insert("after_mlnx_ext_set".into(), shown);
    }
    if let Some(v) = req.value("mkey") {
        pi.m_key = v;
    }
    if let Some(v) = req.value("mkeylease") {
        pi.m_key_lease_period = v as u16;
    }
    if let Some(v) = req.value("mkeyprot") {
        pi.m_key_protect_bits = v as u8;
    }
    pi.emit(data);
    let mut modifier = portnum as u32;
    if espeed_cap {
        modifier |= 1 << 31;
    }
    let resp = r
        .port
        .query(dest, Method::Set, id::PORT_INFO, modifier, Some(data))
        .ok_or_else(|| Failed("set_port_info", "smp set portinfo failed".into()))?;
    r.out.push_str("\nAfter PortInfo set:\n");
    let shown = r.show_port_info(dest, &resp, portnum, espeed_cap, is_switch);
    r.doc.insert("after_set".into(), shown);
    Ok(())
}

/// The Mellanox ExtendedPortInfo in `data` (zeros if it is too short).
fn mlnx_fields(data: &[u8]) -> MlnxExtPortInfo {
    MlnxExtPortInfo::parse(data).unwrap_or_default()
}

/// `get_link_width`: 255 (enable all supported) means the supported widths.
fn effective(enabled: u64, all: u64, supported: u64) -> u64 {
    if enabled == all {
        supported
    } else {
        enabled
    }
}

/// `validate_width`'s codes, in the order it checks them (the best first).
const WIDTHS: &[(u64, &str)] = &[
    (0x8, "12x"),
    (0x4, "8x"),
    (0x2, "4x"),
    (0x10, "2x"),
    (0x1, "1x"),
];
/// `validate_speed`'s.
const SPEEDS: &[(u64, &str)] = &[(0x4, "10.0 Gbps"), (0x2, "5.0 Gbps"), (0x1, "2.5 Gbps")];
/// `validate_extended_speed`'s (rdma-core 44: no XDR).
const EXT_SPEEDS: &[(u64, &str)] = &[
    (0x8, "106.25 Gbps"),
    (0x4, "53.125 Gbps"),
    (0x2, "25.78125 Gbps"),
    (0x1, "14.0625 Gbps"),
];

/// C's `validate_*`: the best code of `table` both ends enable (`both`); a warning if the
/// link is active at another.
fn link_warning(what: &str, both: u64, active: u64, table: &[(u64, &str)]) -> Option<String> {
    let &(bit, name) = table.iter().find(|(bit, _)| both & bit != 0)?;
    (active != bit).then(|| {
        format!("Peer ports operating at active {what} {active} rather than {bit} ({name})")
    })
}

/// The query of an active switch port: its peer's PortInfo, and warnings when the link
/// runs below what both ends enable.
fn check_peer(
    r: &mut Run<'_>,
    dest: &Dest,
    portnum: i32,
    data: &[u8],
    data2: &mut Vec<u8>,
    espeed_cap: bool,
) -> Result<(), Failed> {
    if pi_get(data, "LinkState") != 4 {
        return Ok(());
    }
    let (lwe, lws, lwa) = (
        pi_get(data, "LinkWidthEnabled"),
        pi_get(data, "LinkWidthSupported"),
        pi_get(data, "LinkWidthActive"),
    );
    let (lss, lsa, lse) = (
        pi_get(data, "LinkSpeedSupported"),
        pi_get(data, "LinkSpeedActive"),
        pi_get(data, "LinkSpeedEnabled"),
    );
    let ext = mlnx_fields(data2);
    let (fdr10e, fdr10a) = (ext.link_speed_enabled, ext.link_speed_active);
    let (lsea, lsee, lses) = if espeed_cap {
        (
            pi_get(data, "LinkSpeedExtActive"),
            pi_get(data, "LinkSpeedExtEnabled"),
            pi_get(data, "LinkSpeedExtSupported"),
        )
    } else {
        (0, 0, 0)
    };

    // The peer: one hop further by directed route (from this port, or from the LID).
    let peer = if dest.lid == 0 {
        let mut dr = dest.dr.clone().unwrap_or(DrRoute {
            elems: vec![0],
            slid: 0xffff,
            dlid: 0xffff,
        });
        if dr.elems.len() > ibmad::DrPath::MAX_HOPS {
            return Err(Failed::main("Too many hops"));
        }
        dr.elems.push(portnum as u8);
        Dest {
            lid: 0,
            dr: Some(dr),
        }
    } else {
        let self_lid = r
            .port
            .local()
            .ok_or_else(|| Failed::main("could not resolve self"))?
            .base_lid as u16;
        Dest {
            lid: dest.lid,
            dr: Some(DrRoute {
                elems: vec![0, portnum as u8],
                slid: self_lid,
                dlid: 0xffff,
            }),
        }
    };
    let (pni, is_peer_switch) = r.node_info(&peer)?;
    let rem_vendor = dump::get_bits(&pni, 296, 24) as u32;
    let rem_dev = dump::get_bits(&pni, 240, 16) as u16;
    let peer_port = dump::get_bits(&pni, 288, 8) as i32;
    r.out.push_str("Peer PortInfo:\n");
    let (pdata, peer_espeed_cap) = r.port_info(&peer, peer_port, is_peer_switch, &pni)?;
    let rem_mlnx = r.port.opts.mlx_epi
        && ibfabric::discover::mlnx_ext_port_info_supported(rem_vendor, rem_dev);
    if rem_mlnx {
        *data2 = r.mlnx_ext(&peer, peer_port)?;
    }
    let mut shown = r.show_port_info(&peer, &pdata, peer_port, peer_espeed_cap, is_peer_switch);
    if rem_mlnx {
        let m = r.show_mlnx_ext(&peer, data2, peer_port);
        shown["mlnx_ext_port_info"] = m;
    }
    r.doc.insert("peer".into(), shown);

    let peer_lwe = pi_get(&pdata, "LinkWidthEnabled");
    let peer_lws = pi_get(&pdata, "LinkWidthSupported");
    let peer_lss = pi_get(&pdata, "LinkSpeedSupported");
    let peer_lse = pi_get(&pdata, "LinkSpeedEnabled");
    let peer_fdr10e = mlnx_fields(data2).link_speed_enabled;
    let (peer_lsee, peer_lses) = if peer_espeed_cap {
        (
            pi_get(&pdata, "LinkSpeedExtEnabled"),
            pi_get(&pdata, "LinkSpeedExtSupported"),
        )
    } else {
        (0, 0)
    };

    let checks = [
        (
            "validate_width",
            "width",
            effective(lwe, 255, lws) & effective(peer_lwe, 255, peer_lws),
            lwa,
            WIDTHS,
        ),
        (
            "validate_speed",
            "speed",
            effective(lse, 15, lss) & effective(peer_lse, 15, peer_lss),
            lsa,
            SPEEDS,
        ),
    ];
    for (func, what, both, active, table) in checks {
        if let Some(msg) = link_warning(what, both, active, table) {
            warn(r, func, msg);
        }
    }
    if espeed_cap && peer_espeed_cap {
        let both = effective(lsee, 31, lses) & effective(peer_lsee, 31, peer_lses);
        if let Some(msg) = link_warning("extended speed", both, lsea, EXT_SPEEDS) {
            warn(r, "validate_extended_speed", msg);
        }
    } else if fdr10e & FDR10 != 0 && peer_fdr10e & FDR10 != 0 && fdr10a & FDR10 == 0 {
        warn(
            r,
            "main",
            format!("Peer ports operating at active speed {lsa} rather than FDR10"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requests() {
        let r = parse_request(&args(&["speed", "1", "width", "0x2", "enable"])).unwrap();
        assert_eq!(r.op_name(), "enable");
        assert_eq!(r.value("speed"), Some(1));
        assert_eq!(r.value("width"), Some(2));
        assert!(r.changes());
        let q = parse_request(&args(&["query"])).unwrap();
        assert!(!q.changes());
        assert!(!parse_request(&[]).unwrap().changes());
        let err = |a: &[&str]| parse_request(&args(a)).err().unwrap();
        assert_eq!(err(&["bogus"]), "invalid operation: bogus");
        assert_eq!(
            err(&["query", "enable"]),
            "enable only one of: query, enable, disable, reset, down, arm, active, can be specified"
        );
        assert_eq!(err(&["speed"]), "speed requires an additional parameter");
        assert_eq!(err(&["speed", "16"]), "invalid speed value 16");
        assert_eq!(err(&["lid", "0"]), "invalid lid value 0x0");
        assert_eq!(err(&["smlid", "0xc000"]), "invalid smlid value 0xc000");
        assert_eq!(err(&["width", "32"]), "invalid width value 32");
        assert!(parse_request(&args(&["width", "255"])).is_ok());
        assert_eq!(err(&["vls", "0"]), "invalid vls value 0");
        assert_eq!(err(&["mtu", "6"]), "invalid mtu value 6");
        assert_eq!(err(&["lmc", "8"]), "invalid lmc value 8");
        assert_eq!(
            err(&["mkeylease", "65536"]),
            "invalid mkey lease time 65536"
        );
        assert_eq!(
            err(&["mkeyprot", "4"]),
            "invalid mkey protection bit setting 4"
        );
        assert_eq!(err(&["espeed", "32"]), "invalid extended speed value 32");
        assert_eq!(err(&["fdr10", "2"]), "invalid fdr10 speed value 2");
        assert_eq!(err(&["mkey", "12x"]), "Bad new M_Key\n");
        assert_eq!(
            err(&["speed", "-1"]),
            "invalid speed value 18446744073709551615"
        );
        assert_eq!(
            parse_request(&args(&["mkey", "0xffffffffffffffff"]))
                .unwrap()
                .value("mkey"),
            Some(u64::MAX)
        );
        assert_eq!(
            parse_request(&args(&["mkey", ""])).unwrap().value("mkey"),
            Some(0)
        );
        assert!(parse_request(&args(&["mkey", "0x1ffffffffffffffff"])).is_err());
    }

    #[test]
    fn link_warnings() {
        assert_eq!(link_warning("width", 0x3, 2, WIDTHS), None);
        assert_eq!(
            link_warning("width", 0x3, 1, WIDTHS).unwrap(),
            "Peer ports operating at active width 1 rather than 2 (4x)"
        );
        assert_eq!(
            link_warning("width", 0x1b, 2, WIDTHS).unwrap(),
            "Peer ports operating at active width 2 rather than 8 (12x)"
        );
        assert_eq!(link_warning("speed", 0, 1, SPEEDS), None);
        assert_eq!(
            link_warning("speed", 7, 1, SPEEDS).unwrap(),
            "Peer ports operating at active speed 1 rather than 4 (10.0 Gbps)"
        );
        assert_eq!(
            link_warning("extended speed", 0x3, 1, EXT_SPEEDS).unwrap(),
            "Peer ports operating at active extended speed 1 rather than 2 (25.78125 Gbps)"
        );
        assert_eq!(effective(255, 255, 3), 3);
        assert_eq!(effective(2, 255, 3), 2);
    }

    #[test]
    fn shown_fields_exist() {
        for names in [SHOWN, SHOWN_EXT, SHOWN_KEYS] {
            assert_eq!(port_fields(names).len(), names.len());
        }
    }

    #[test]
    fn mkey_must_be_a_whole_number() {
        assert_eq!(strict_strtoull(""), Some(0));
        assert_eq!(strict_strtoull("0x10"), Some(16));
        assert_eq!(strict_strtoull(" 010"), Some(8));
        assert_eq!(strict_strtoull("-1"), Some(u64::MAX));
        for bad in [" ", "-", "08", "0x1g", "1 ", "18446744073709551616"] {
            assert_eq!(strict_strtoull(bad), None, "{bad:?}");
        }
    }
}
