//! `umad ibaddr`: print a port's GID and LID range as infiniband-diags' `ibaddr`, or
//! `--json` (docs/json/ibaddr-v1.schema.json).
//!
//! `ibaddr [-g] [-l] [-L] [<lid|dr_path|guid> [port]]`: without a destination, the local
//! port. `-g` the GID only, `-l` the LID range in hex only, `-L` in decimal.

use std::ffi::OsString;
use std::net::Ipv6Addr;

use clap::{Arg, ArgMatches, Command};
use ibmad::attr::id;
use ibmad::dump::get_bits;
use serde_json::json;

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtoull, ibexit, Dest, SmpPort};
use crate::exit;

/// The clap command.
pub fn command() -> Command {
    let cmd = Command::new("ibaddr")
        .about("Show a port's GID and LID range (as infiniband-diags' ibaddr)")
        .override_usage("ibaddr [options] [<lid|dr_path|guid>]")
        .after_help(
            "Examples:\n  ibaddr \t\t# local port's address\n  ibaddr 32\t\t# show lid range and gid of lid 32\n  \
             ibaddr -G 0x8f1040023\t# same but using guid address\n  ibaddr -l 32\t\t# show lid range only\n  \
             ibaddr -L 32\t\t# show decimal lid range only\n  ibaddr -g 32\t\t# show gid address only",
        )
        .arg(common::count_flag("gid_show", 'g', "show gid address only"))
        .arg(common::count_flag("lid_show", 'l', "show lid range only"))
        .arg(common::count_flag("Lid_show", 'L', "show lid range (in decimal) only"))
        .arg(common::json_arg("ibaddr"))
        .arg(Arg::new("args").num_args(0..).value_name("lid|dr_path|guid [port]"));
    common::add_common_args(cmd, "KL")
}

/// A GID as glibc's `inet_ntop(AF_INET6)` prints it: the longest run of two or more zero
/// groups as `::`, and the last 32 bits dotted for IPv4-compatible and -mapped addresses.
pub fn inet_ntop6(gid: &[u8; 16]) -> String {
    let w: Vec<u16> = (0..8)
        .map(|i| u16::from_be_bytes([gid[2 * i], gid[2 * i + 1]]))
        .collect();
    // The longest run of zero words (the first of equal ones), if at least 2 long.
    let (mut best, mut cur): ((usize, usize), Option<(usize, usize)>) = ((0, 0), None);
    for (i, &x) in w.iter().enumerate() {
        if x == 0 {
            let c = cur.map_or((i, 1), |(b, l)| (b, l + 1));
            cur = Some(c);
            if c.1 > best.1 {
                best = c;
            }
        } else {
            cur = None;
        }
    }
    let run = (best.1 >= 2).then_some(best);
    let mut s = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some((b, l)) = run {
            if i == b {
                s.push(':');
                i += l;
                if i == 8 {
                    s.push(':');
                }
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        let v4 = run.is_some_and(|(b, l)| {
            b == 0 && (l == 6 || (l == 7 && w[7] != 1) || (l == 5 && w[5] == 0xffff))
        });
        if i == 6 && v4 {
            s.push_str(&format!("{}.{}.{}.{}", gid[12], gid[13], gid[14], gid[15]));
            break;
        }
        s.push_str(&format!("{:x}", w[i]));
        i += 1;
    }
    debug_assert!(s.parse::<Ipv6Addr>().is_ok());
    s
}

/// `umad ibaddr`.
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
    if let Some(code) = crate::dest::check_sm_port(prog, &opts) {
        return code;
    }
    let mut show_gid = m.get_count("gid_show") > 0;
    let mut show_lid: i32 = i32::from(m.get_count("lid_show"));
    if m.get_count("Lid_show") > 0 {
        show_lid = -100;
    }
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let mut portnum = args.get(1).map_or(0, |a| c_strtoull(a) as u32);
    if show_lid == 0 && !show_gid {
        show_lid = 1;
        show_gid = true;
    }
    let Some(port) = SmpPort::open(prog, &opts) else {
        return exit::FAILURE;
    };
    let dest = match args.first() {
        Some(a) => match port.resolve(a, opts.dest) {
            Some(d) => d,
            None => return ibexit(prog, &format!("can't resolve destination port {a}")),
        },
        None => match port.local() {
            Some(p) => {
                portnum = p.port_num;
                Dest::lid(p.base_lid as u16)
            }
            None => return ibexit(prog, "can't resolve self port (null)"),
        },
    };
    let ni = port.get(&dest, id::NODE_INFO, 0);
    let pi = ni
        .as_ref()
        .and_then(|_| port.get(&dest, id::PORT_INFO, portnum));
    let (Some(ni), Some(pi)) = (ni, pi) else {
        return ibexit(prog, "can't resolve requested address");
    };
    let lid = get_bits(&pi, 128, 16);
    let prefix = get_bits(&pi, 64, 64);
    let lmc = get_bits(&pi, 277, 3);
    let guid = get_bits(&ni, 160, 64);
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&prefix.to_be_bytes());
    gid[8..].copy_from_slice(&guid.to_be_bytes());
    let gid_text = inet_ntop6(&gid);
    let end = lid + (1u64 << lmc) - 1;
    if m.get_flag("json") {
        let doc = json!({
            "schema_version": 1,
            "gid": gid_text,
            "lid_start": lid,
            "lid_end": end,
            "lmc": lmc,
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
        return exit::OK;
    }
    let mut line = String::new();
    if show_gid {
        line.push_str(&format!("GID {gid_text} "));
    }
    if show_lid > 0 {
        line.push_str(&format!("LID start 0x{lid:x} end 0x{end:x}"));
    } else if show_lid < 0 {
        line.push_str(&format!("LID start {lid} end {end}"));
    }
    println!("{line}");
    exit::OK
}

#[cfg(test)]
mod tests {
    use super::inet_ntop6;

    fn gid(prefix: u64, guid: u64) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&prefix.to_be_bytes());
        g[8..].copy_from_slice(&guid.to_be_bytes());
        g
    }

    #[test]
    fn glibc_text() {
        assert_eq!(inet_ntop6(&gid(0xfe80 << 48, 0x10_0001)), "fe80::10:1");
        assert_eq!(inet_ntop6(&gid(0, 0x20_0000)), "::0.32.0.0");
        assert_eq!(inet_ntop6(&gid(0, 0)), "::");
        assert_eq!(inet_ntop6(&gid(0, 1)), "::1");
        assert_eq!(inet_ntop6(&gid(0, 0xffff_0102_0304)), "::ffff:1.2.3.4");
        assert_eq!(
            inet_ntop6(&gid(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001)),
            "fe80::2:c903:0:1"
        );
        assert_eq!(inet_ntop6(&gid(0x1_0000_0001, 0)), "0:1:0:1::");
    }
}
