//! `umad smpquery`: query one SMP attribute and print it as infiniband-diags' `smpquery`
//! (same operations, options and text byte for byte, errors included), or `--json`
//! (docs/json/smpquery-v1.schema.json).
//!
//! Operations (case insensitive, with C's aliases): `NodeInfo` (`NI`), `NodeDesc` (`ND`),
//! `PortInfo` (`PI`), `PortInfoExtended` (`PIE`), `SwitchInfo` (`SI`), `PKeyTable`
//! (`PKeys`), `SL2VLTable` (`SL2VL`), `VLArbitration` (`VLArb`), `GUIDInfo` (`GI`),
//! `MlnxExtPortInfo` (`MEPI`). The destination is a LID, a directed route (`-D`), a port
//! GUID (`-G`), or a LID and a route (`-c`, combined routing).
//!
//! Failures print C's `iberror` line on stdout (as C does), details on stderr. Not
//! supported:
//! `-d` (C's libibmad debug output); `-c` is implemented but untested (ibsim does not answer
//! combined-route SMPs).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::NodeNameMap;
use ibmad::attr::id;
use ibmad::dump;
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtol, ibexit, Dest, DrRoute, SmpPort};
use crate::exit;

/// An operation's function: the context, the destination, the arguments after it, the
/// output to append to; the JSON result, or the error message.
type OpFn = fn(&Ctx, &Dest, &[String], &mut Vec<u8>) -> Result<Value, String>;

/// One operation: its name, alias, whether it takes a port number, and its function.
struct Op {
    name: &'static str,
    alias: &'static str,
    port_arg: bool,
    run: OpFn,
}

/// The operations, in C's `match_tbl` order.
const OPS: &[Op] = &[
    Op {
        name: "NodeInfo",
        alias: "NI",
        port_arg: false,
        run: node_info,
    },
    Op {
        name: "NodeDesc",
        alias: "ND",
        port_arg: false,
        run: node_desc,
    },
    Op {
        name: "PortInfo",
        alias: "PI",
        port_arg: true,
        run: port_info,
    },
    Op {
        name: "PortInfoExtended",
        alias: "PIE",
        port_arg: true,
        run: port_info_extended,
    },
    Op {
        name: "SwitchInfo",
        alias: "SI",
        port_arg: false,
        run: switch_info,
    },
    Op {
        name: "PKeyTable",
        alias: "PKeys",
        port_arg: true,
        run: pkey_table,
    },
    Op {
        name: "SL2VLTable",
        alias: "SL2VL",
        port_arg: true,
        run: sl2vl_table,
    },
    Op {
        name: "VLArbitration",
        alias: "VLArb",
        port_arg: true,
        run: vlarb_table,
    },
    Op {
        name: "GUIDInfo",
        alias: "GI",
        port_arg: false,
        run: guid_info,
    },
    Op {
        name: "MlnxExtPortInfo",
        alias: "MEPI",
        port_arg: true,
        run: mlnx_ext_port_info,
    },
];

/// The operation `name` names (C's `match_op`: name or alias, case insensitive).
fn find_op(name: &str) -> Option<&'static Op> {
    OPS.iter()
        .find(|o| o.name.eq_ignore_ascii_case(name) || o.alias.eq_ignore_ascii_case(name))
}

/// What an operation runs with.
struct Ctx {
    port: SmpPort,
    map: Option<NodeNameMap>,
    extended_speeds: bool,
}

/// The clap command.
pub fn command() -> Command {
    let mut usage = String::from(
        "<op> <dest dr_path|lid|guid> [op params]\n\n\
         Supported ops (and aliases, case insensitive):\n",
    );
    for o in OPS {
        usage.push_str(&format!(
            "  {} ({}) <addr>{}\n",
            o.name,
            o.alias,
            if o.port_arg { " [<portnum>]" } else { "" }
        ));
    }
    let cmd = Command::new("smpquery")
        .about("Query one SMP attribute (as infiniband-diags' smpquery)")
        .override_usage(format!("smpquery [options] {usage}"))
        .before_help(usage)
        .after_help(
            "Examples:\n  smpquery portinfo 3 1\t\t\t\t# portinfo by lid, with port modifier\n  \
             smpquery -G switchinfo 0x2C9000100D051 1\t# switchinfo by guid\n  \
             smpquery -D nodeinfo 0\t\t\t\t# nodeinfo by direct route\n  \
             smpquery -c nodeinfo 6 0,12\t\t\t# nodeinfo by combined route",
        )
        .arg(
            Arg::new("combined")
                .short('c')
                .long("combined")
                .action(ArgAction::SetTrue)
                .help("use Combined route address argument"),
        )
        .arg(common::node_name_map_arg())
        .arg(
            Arg::new("extended")
                .short('x')
                .long("extended")
                .action(ArgAction::SetTrue)
                .help("use extended speeds"),
        )
        .arg(common::json_arg("smpquery"))
        .arg(
            Arg::new("args")
                .num_args(0..)
                .allow_hyphen_values(false)
                .value_name("op dest [params]"),
        );
    common::add_common_args(cmd, "")
}

/// `umad smpquery`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    run(prog, &m)
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let opts = match CommonOpts::from_matches(m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    if let Some(code) = crate::dest::check_sm_port(prog, &opts) {
        return code;
    }
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let combined = m.get_flag("combined");
    let json = m.get_flag("json");
    if args.len() < 2 {
        eprint!("{}", common::c_usage(&command().name(prog)));
        return exit::USAGE;
    }
    let Some(op) = find_op(&args[0]) else {
        return ibexit(prog, &format!("operation '{}' not supported", args[0]));
    };
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let map =
        common::open_node_name_map(m.get_one::<PathBuf>("node-name-map").map(|p| p.as_path()));
    let ctx = Ctx {
        port,
        map,
        extended_speeds: m.get_flag("extended"),
    };
    let (dest, rest) = if combined {
        let route = args.get(2).map_or("(null)", String::as_str);
        let concat = combined_arg(&args[1], route);
        match resolve_combined(&ctx.port, &concat) {
            Some(d) => (d, args.get(3..).unwrap_or(&[])),
            None => return ibexit(prog, &format!("can't resolve destination port {concat}")),
        }
    } else {
        match ctx.port.resolve(&args[1], opts.dest) {
            Some(d) => (d, &args[2..]),
            None => return ibexit(prog, &format!("can't resolve destination port {}", args[1])),
        }
    };
    let mut out: Vec<u8> = Vec::new();
    let result = (op.run)(&ctx, &dest, rest, &mut out);
    match result {
        Ok(value) => {
            if json {
                let doc = json!({
                    "schema_version": 1,
                    "operation": op.name,
                    "destination": dest_json(&dest),
                    "result": value,
                });
                println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            } else {
                write_out(&out);
            }
            exit::OK
        }
        Err(e) => {
            if !json {
                write_out(&out);
            }
            // An IBEXIT inside a helper (is_port_info_extended_supported) has no
            // "operation" prefix: such errors start with '!'.
            match e.strip_prefix('!') {
                Some(msg) => ibexit(prog, msg),
                None => ibexit(prog, &format!("operation {}: {e}", args[0])),
            }
        }
    }
}

/// Appends `s` to the output.
fn put(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

/// Writes the output (bytes: a node description is printed as it is).
fn write_out(out: &[u8]) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out).and_then(|()| stdout.flush());
}

/// C's `-c` argument: `snprintf(concat, 64, "%s %s", argv[1], argv[2])` (a missing route
/// is glibc's `(null)`), cut to 63 bytes as C's buffer cuts it.
fn combined_arg(lid: &str, route: &str) -> String {
    let mut concat = format!("{lid} {route}").into_bytes();
    concat.truncate(63);
    String::from_utf8_lossy(&concat).into_owned()
}

/// `-c`: `resolve_portid_str(..., concat, IB_DEST_DRSLID)`: the LID is what `strtol` reads
/// from the start, the route whatever follows the one character after it (so `"8 0,1"` as
/// one argument is LID 8 with route `0,1`, and a missing route `(null)` is route `0`).
fn resolve_combined(port: &SmpPort, concat: &str) -> Option<Dest> {
    let (lid, end) = ibfabric::cnum::strtol(concat.as_bytes());
    if !crate::dest::lid_valid(lid) {
        return None;
    }
    let self_lid = port.local()?.base_lid as u16;
    let route = concat.get(end + 1..).unwrap_or("");
    let mut dr = DrRoute::parse(route)?;
    dr.slid = if self_lid != 0 { self_lid } else { 0xffff };
    Some(Dest {
        lid: lid as u16,
        dr: Some(dr),
    })
}

/// The destination in JSON: its LID (0 for a directed route) and route.
pub fn dest_json(dest: &Dest) -> Value {
    json!({
        "lid": dest.lid,
        "dr_path": dest.dr.as_ref().map(|d| {
            d.elems.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
        }),
        "text": dest.to_c_string(),
    })
}

/// Every field of a dump table in JSON: name, raw value and the text C prints.
pub fn fields_json(data: &[u8], fields: &[dump::Field], hidden: Option<&str>) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                if Some(f.name) == hidden {
                    json!({"name": f.name, "value": null, "text": "<not displayed>"})
                } else {
                    let v = dump::get_bits(data, f.offset, f.width);
                    // Wider than 32 bits (GUIDs, keys, prefixes): a hex string, as JSON
                    // numbers lose bits past 2^53.
                    let value = if f.width > 32 {
                        json!(format!("0x{v:016x}"))
                    } else {
                        json!(v)
                    };
                    json!({
                        "name": f.name,
                        "value": value,
                        "text": dump::format_value(f.fmt, f.width, v),
                    })
                }
            })
            .collect(),
    )
}

/// The optional port number argument (`strtol`, 0 if absent).
fn port_num(args: &[String]) -> i64 {
    args.first().map_or(0, |a| c_strtol(a))
}

fn node_info(ctx: &Ctx, dest: &Dest, _: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let data = ctx
        .port
        .get(dest, id::NODE_INFO, 0)
        .ok_or("node info query failed")?;
    put(out, &format!("# Node info: {}\n", dest.to_c_string()));
    put(out, &dump::dump_fields(&data, dump::NODE_INFO));
    Ok(json!({"fields": fields_json(&data, dump::NODE_INFO, None)}))
}

fn node_desc(ctx: &Ctx, dest: &Dest, _: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let ni = ctx
        .port
        .get(dest, id::NODE_INFO, 0)
        .ok_or("node info query failed")?;
    let guid = dump::get_bits(&ni, 96, 64);
    let nd = ctx
        .port
        .get(dest, id::NODE_DESC, 0)
        .ok_or("node desc query failed")?;
    let raw = &nd[..nd.iter().position(|&b| b == 0).unwrap_or(nd.len())];
    let desc = String::from_utf8_lossy(raw).into_owned();
    // C's remap_node_name (with or without a map): the map's name for the GUID, else the
    // description with every byte that isn't printable ASCII made a space. Bytes above 0x7f
    // are handed to clean_description as one non-printable character each, so that each
    // becomes one space, as in C.
    let ascii: String = raw
        .iter()
        .map(|&b| if b.is_ascii() { b as char } else { '\u{1}' })
        .collect();
    let empty = NodeNameMap::new();
    let name = ctx
        .map
        .as_ref()
        .unwrap_or(&empty)
        .remap(guid, &ascii)
        .into_owned();
    let dots = if name.len() < 32 {
        ".".repeat(32 - name.len())
    } else {
        ".".into()
    };
    put(out, &format!("Node Description:{dots}{name}\n"));
    Ok(json!({"node_guid": format!("0x{guid:016x}"), "description": desc, "name": name}))
}

fn port_info(ctx: &Ctx, dest: &Dest, args: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let orig = port_num(args);
    let mut modifier = orig as u32;
    if ctx.extended_speeds {
        modifier |= 1 << 31;
    }
    let data = ctx
        .port
        .get(dest, id::PORT_INFO, modifier)
        .ok_or("port info query failed")?;
    let hidden = (!ctx.port.opts.show_keys).then_some(dump::PORT_INFO_MKEY);
    put(
        out,
        &format!("# Port info: {} port {}\n", dest.to_c_string(), orig as i32),
    );
    put(
        out,
        &dump::dump_fields_hiding(&data, dump::PORT_INFO, hidden),
    );
    crate::debug::dump_warnings(&data, dump::PORT_INFO);
    Ok(json!({"port": orig as i32, "fields": fields_json(&data, dump::PORT_INFO, hidden)}))
}

/// `is_port_info_extended_supported`; its own failures are `IBEXIT`s (`!`-prefixed).
fn port_info_ext_supported(ctx: &Ctx, dest: &Dest, port: u32) -> Result<bool, String> {
    let ni = ctx
        .port
        .get(dest, id::NODE_INFO, 0)
        .ok_or("!node info query failed")?;
    let is_switch = dump::get_bits(&ni, 16, 8) == 2;
    let pi = ctx
        .port
        .get(dest, id::PORT_INFO, if is_switch { 0 } else { port })
        .ok_or("!port info query failed")?;
    let cap = dump::get_bits(&pi, 160, 32);
    if cap & (1 << 15) != 0 {
        let cap2 = dump::get_bits(&pi, 480, 16);
        if cap2 & (1 << 1) == 0 {
            crate::dest::ibwarn(
                "is_port_info_extended_supported",
                &format!(
                    "port info capability mask2 = 0x{cap2:x} doesn't indicate PortInfoExtended support"
                ),
            );
            return Ok(false);
        }
        Ok(true)
    } else {
        crate::dest::ibwarn(
            "is_port_info_extended_supported",
            "port info capability mask2 not supported",
        );
        Ok(false)
    }
}

fn port_info_extended(
    ctx: &Ctx,
    dest: &Dest,
    args: &[String],
    out: &mut Vec<u8>,
) -> Result<Value, String> {
    let port = port_num(args) as i32;
    if !port_info_ext_supported(ctx, dest, port as u32)? {
        return Err("port info extended not supported".into());
    }
    let data = ctx
        .port
        .get(dest, id::PORT_INFO_EXT, port as u32)
        .ok_or("port info extended query failed")?;
    put(
        out,
        &format!("# Port info Extended: {} port {port}\n", dest.to_c_string()),
    );
    put(out, &dump::dump_fields(&data, dump::PORT_INFO_EXT));
    Ok(json!({"port": port, "fields": fields_json(&data, dump::PORT_INFO_EXT, None)}))
}

fn mlnx_ext_port_info(
    ctx: &Ctx,
    dest: &Dest,
    args: &[String],
    out: &mut Vec<u8>,
) -> Result<Value, String> {
    let port = port_num(args) as i32;
    let data = ctx
        .port
        .get(dest, id::MLNX_EXT_PORT_INFO, port as u32)
        .ok_or("Mellanox ext port info query failed")?;
    put(
        out,
        &format!("# MLNX ext Port info: {} port {port}\n", dest.to_c_string()),
    );
    put(out, &dump::dump_fields(&data, dump::MLNX_EXT_PORT_INFO));
    Ok(json!({"port": port, "fields": fields_json(&data, dump::MLNX_EXT_PORT_INFO, None)}))
}

fn switch_info(ctx: &Ctx, dest: &Dest, _: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let data = ctx
        .port
        .get(dest, id::SWITCH_INFO, 0)
        .ok_or("switch info query failed")?;
    put(out, &format!("# Switch info: {}\n", dest.to_c_string()));
    put(out, &dump::dump_fields(&data, dump::SWITCH_INFO));
    Ok(json!({"fields": fields_json(&data, dump::SWITCH_INFO, None)}))
}

fn be16(data: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([data[2 * i], data[2 * i + 1]])
}

fn pkey_table(ctx: &Ctx, dest: &Dest, args: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let portnum = port_num(args);
    let ni = ctx
        .port
        .get(dest, id::NODE_INFO, 0)
        .ok_or("node info query failed")?;
    let node_type = dump::get_bits(&ni, 16, 8);
    let phy_ports = dump::get_bits(&ni, 24, 8) as i64;
    if portnum > phy_ports {
        return Err("invalid port number".into());
    }
    let n = if node_type == 2 && portnum != 0 {
        let si = ctx
            .port
            .get(dest, id::SWITCH_INFO, 0)
            .ok_or("switch info failed")?;
        dump::get_bits(&si, 112, 16) as i64
    } else {
        dump::get_bits(&ni, 224, 16) as i64
    };
    let blocks = (n + 31) / 32;
    let mut pkeys = Vec::new();
    for i in 0..blocks {
        let modifier = (i as u32) | ((portnum as u32) << 16);
        let data = ctx
            .port
            .get(dest, id::PKEY_TABLE, modifier)
            .ok_or("pkey table query failed")?;
        let k = if i + 1 == blocks {
            ((n + 7 - i * 32) / 8) * 8
        } else {
            32
        };
        for j in (0..k).step_by(8) {
            let j = j as usize;
            let row: Vec<String> = (0..8)
                .map(|x| format!("0x{:04x}", be16(&data, j + x)))
                .collect();
            put(
                out,
                &format!("{:4}: {}\n", i as usize * 32 + j, row.join(" ")),
            );
            pkeys.extend((0..8).map(|x| be16(&data, j + x)));
        }
    }
    put(out, &format!("{n} pkeys capacity for this port\n"));
    Ok(json!({"port": portnum, "capacity": n, "pkeys": pkeys}))
}

fn sl2vl_table(
    ctx: &Ctx,
    dest: &Dest,
    args: &[String],
    out: &mut Vec<u8>,
) -> Result<Value, String> {
    let portnum = port_num(args);
    let ni = ctx
        .port
        .get(dest, id::NODE_INFO, 0)
        .ok_or("node info query failed")?;
    let node_type = dump::get_bits(&ni, 16, 8);
    let num_ports = dump::get_bits(&ni, 24, 8) as i64;
    if portnum > num_ports {
        return Err("invalid port number".into());
    }
    put(out, &format!("# SL2VL table: {}\n", dest.to_c_string()));
    put(out, "#                 SL: |");
    for i in 0..16 {
        put(out, &format!("{i:2}|"));
    }
    out.push(b'\n');
    let pairs: Vec<(i64, i64)> = if node_type != 2 {
        vec![(0, 0)]
    } else {
        (0..=num_ports).map(|i| (i, portnum)).collect()
    };
    let mut rows = Vec::new();
    for (inp, outp) in pairs {
        let modifier = ((inp as u32) << 8) | outp as u32;
        let data = ctx
            .port
            .get(dest, id::SL2VL, modifier)
            .ok_or("slvl query failed")?;
        put(out, &format!("ports: in {inp:2}, out {outp:2}: "));
        put(out, &dump::sl2vl_row(&data));
        let vls: Vec<u8> = (0..16)
            .map(|sl| {
                let b = data[sl / 2];
                if sl % 2 == 0 {
                    b >> 4
                } else {
                    b & 0xf
                }
            })
            .collect();
        rows.push(json!({"in_port": inp, "out_port": outp, "vl": vls}));
    }
    Ok(json!({"port": portnum, "tables": rows}))
}

/// One VL arbitration table (`vlarb_dump_table`): the header, then one or two blocks.
fn vlarb_dump(
    ctx: &Ctx,
    dest: &Dest,
    portnum: u32,
    name: &str,
    offset: u32,
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<Value, String> {
    put(out, &format!("# {name} priority VL Arbitration Table:"));
    let mut entries = Vec::new();
    let mut block = |off: u32, n: usize, out: &mut Vec<u8>| -> Result<(), String> {
        let data = ctx
            .port
            .get(dest, id::VL_ARB, (off << 16) | portnum)
            .ok_or("vl arb query failed")?;
        put(out, &dump::vlarb_rows(&data, n));
        for i in 0..n {
            entries.push(json!({"vl": data[2 * i] & 0xf, "weight": data[2 * i + 1]}));
        }
        Ok(())
    };
    block(offset, cap.min(32), out)?;
    if cap > 32 {
        block(offset + 1, cap - 32, out)?;
    }
    Ok(Value::Array(entries))
}

fn vlarb_table(
    ctx: &Ctx,
    dest: &Dest,
    args: &[String],
    out: &mut Vec<u8>,
) -> Result<Value, String> {
    let portnum = port_num(args) as u32;
    if portnum == 0 {
        let ni = ctx
            .port
            .get(dest, id::NODE_INFO, 0)
            .ok_or("node info query failed")?;
        if dump::get_bits(&ni, 16, 8) == 2 {
            let si = ctx
                .port
                .get(dest, id::SWITCH_INFO, 0)
                .ok_or("switch info query failed")?;
            if dump::get_bits(&si, 132, 1) == 0 {
                put(
                    out,
                    &format!(
                        "# No VLArbitration tables (BSP0): {} port 0\n",
                        dest.to_c_string()
                    ),
                );
                return Ok(json!({"port": 0, "low": null, "high": null}));
            }
        }
    }
    let pi = ctx
        .port
        .get(dest, id::PORT_INFO, portnum)
        .ok_or("port info query failed")?;
    let lowcap = dump::get_bits(&pi, 320, 8) as usize;
    let highcap = dump::get_bits(&pi, 312, 8) as usize;
    put(
        out,
        &format!(
            "# VLArbitration tables: {} port {} LowCap {lowcap} HighCap {highcap}\n",
            dest.to_c_string(),
            portnum as i32
        ),
    );
    let mut low = Value::Null;
    let mut high = Value::Null;
    if lowcap > 0 {
        low = vlarb_dump(ctx, dest, portnum, "Low", 1, lowcap, out)?;
    }
    if highcap > 0 {
        high = vlarb_dump(ctx, dest, portnum, "High", 3, highcap, out)?;
    }
    Ok(json!({"port": portnum, "low_cap": lowcap, "high_cap": highcap, "low": low, "high": high}))
}

fn guid_info(ctx: &Ctx, dest: &Dest, _: &[String], out: &mut Vec<u8>) -> Result<Value, String> {
    let pi = ctx
        .port
        .get(dest, id::PORT_INFO, 0)
        .ok_or("port info failed")?;
    let n = dump::get_bits(&pi, 400, 8) as i64;
    let blocks = (n + 7) / 8;
    let mut guids = Vec::new();
    for i in 0..blocks {
        let data = ctx
            .port
            .get(dest, id::GUID_INFO, i as u32)
            .ok_or("guid info query failed")?;
        let k = if i + 1 == blocks {
            ((n + 1 - i * 8) / 2) * 2
        } else {
            8
        };
        for j in (0..k as usize).step_by(2) {
            let g0 = dump::get_bits(&data, (j * 64) as u16, 64);
            let g1 = dump::get_bits(&data, ((j + 1) * 64) as u16, 64);
            put(
                out,
                &format!("{:4}: 0x{g0:016x} 0x{g1:016x}\n", i as usize * 8 + j),
            );
            guids.push(format!("0x{g0:016x}"));
            guids.push(format!("0x{g1:016x}"));
        }
    }
    put(out, &format!("{n} guids capacity for this port\n"));
    Ok(json!({"capacity": n, "guids": guids}))
}
