//! `umad smpdump`: send one SMP Get and dump the attribute data as infiniband-diags'
//! `smpdump`: hex (libibmad's `xdump`), or with `-s` as a string; a non-zero MAD status is
//! printed after it. `--json` (docs/json/smpdump-v1.schema.json) gives the data in hex.
//!
//! `smpdump [-D] [-s] <dlid|dr_path> <attr> [mod]`. As C, a request that gets no answer
//! prints the (zeroed) data of the request and succeeds; the default timeout is 1000 ms and
//! there are no retries.

use std::ffi::OsString;
use std::io::Write;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibmad::dump::xdump;
use ibmad::{Method, Smp};
use serde_json::json;

use crate::common::{self, CommonOpts, DestType, Parsed};
use crate::debug::ibpanic;
use crate::dest::{c_strtoull, Dest, DrRoute};
use crate::exit;

/// The clap command.
pub fn command() -> Command {
    let cmd = Command::new("smpdump")
        .about("Dump one SMP attribute in hex (as infiniband-diags' smpdump)")
        .override_usage("smpdump [options] <dlid|dr_path> <attr> [mod]")
        .after_help(
            "Examples:\n  smpdump  -- DR routed examples:\n  smpdump -D 0,1,2,3,5 16\t# NODE DESC\n  \
             smpdump -D 0,1,2 0x15 2\t# PORT INFO, port 2\n  smpdump  -- LID routed examples:\n  \
             smpdump 3 0x15 2\t# PORT INFO, lid 3 port 2\n  smpdump 0xa0 0x11\t# NODE INFO, lid 0xa0",
        )
        .arg(
            Arg::new("string")
                .short('s')
                .long("string")
                // C gives `--string` no description (it prints the data as a string).
                .action(ArgAction::SetTrue),
        )
        .arg(common::json_arg("smpdump"))
        .arg(Arg::new("args").num_args(0..).value_name("dlid|dr_path attr [mod]"));
    common::add_common_args(cmd, "GKs")
}

/// `umad smpdump`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => run(prog, &m),
        Parsed::Exit(code) => code,
    }
}

fn run(prog: &'static str, m: &ArgMatches) -> i32 {
    let mut opts = match CommonOpts::from_matches(m) {
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
    let dest = if opts.dest == DestType::DrPath {
        crate::debug::ibdebug("str2DRPath", format_args!("DR str: {}", args[0]));
        // More than 63 hops: C's str2DRPath stores the 65th element over its own hop count
        // (a 64-byte array followed by the count) and sends whatever route that leaves
        // (undefined behaviour: on chain.net `-D <64 hops> 0x10` answered from the
        // 2nd switch). We refuse the route as one C cannot parse.
        match DrRoute::parse(&args[0]).filter(|dr| dr.path().is_some()) {
            Some(dr) => Dest {
                lid: 0,
                dr: Some(dr),
            },
            None => return ibpanic(&format!("bad path str '{}'", args[0])),
        }
    } else {
        Dest::lid(c_strtoull(&args[0]) as u16)
    };
    let attr = c_strtoull(&args[1]) as u16;
    let modifier = args.get(2).map_or(0, |a| c_strtoull(a) as u32);
    // smpdump sends without an M_Key and without retries.
    opts.m_key = 0;
    let timeout = std::time::Duration::from_millis(u64::from(opts.timeout_ms.unwrap_or(1000)));
    let port = match umad::Port::open_smi(opts.ca.as_deref(), opts.port) {
        Ok(p) => p,
        Err(e) => {
            // Why, then C's: umad_open_port failed, IBPANIC with the errno of its sysfs
            // lookups.
            eprintln!("{prog}: {}", opts.open_failure(&e));
            let ca = opts.ca.as_deref().unwrap_or("(null)");
            return ibpanic(&format!(
                "can't open UMAD port ({ca}:{}): No such file or directory",
                opts.port
            ));
        }
    };
    let rpc = umad::rpc::Rpc::new(std::sync::Arc::new(port));
    let Some((mad, addr)) = dest.smp(Method::Get, attr, modifier, 0) else {
        return ibpanic(&format!("bad path str '{}'", args[0]));
    };
    crate::debug::dump("before send:\n", &mad);
    let req = rpc.request(mad, addr).timeout(timeout).retries(0);
    let reply = rpc
        .call(req)
        .ok()
        .and_then(|c| c.outcome.response().map(|r| r.mad.clone()));
    // No answer: C dumps the request it gets back.
    let reply = reply.unwrap_or_else(|| mad.to_vec());
    if crate::debug::level() > 0 {
        eprintln!("{} bytes received", reply.len());
    }
    let Ok(smp) = Smp::new_checked(&reply[..]) else {
        return ibpanic("recv error: short MAD");
    };
    let data = smp.data();
    let status = smp.status().raw();
    if m.get_flag("json") {
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let doc = json!({
            "schema_version": 1,
            "attribute_id": attr,
            "attribute_modifier": modifier,
            "status": status,
            "data": hex,
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
        return exit::OK;
    }
    // Bytes, not text: `-s` prints the data's bytes up to the first NUL as they are.
    let mut out: Vec<u8> = Vec::new();
    if m.get_flag("string") {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        out.extend_from_slice(&data[..end]);
        out.push(b'\n');
    } else {
        out.extend_from_slice(xdump(data).as_bytes());
    }
    if status != 0 {
        out.extend_from_slice(format!("SMP status: 0x{status:x}\n").as_bytes());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out).and_then(|()| stdout.flush()) {
        Ok(()) => exit::OK,
        Err(_) => exit::FAILURE,
    }
}
