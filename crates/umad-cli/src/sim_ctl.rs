//! `umad sim ctl [--socket NAME] <command...>`: the control interface of a running
//! `umad sim serve` (ibsim's console, and more), over the abstract unix datagram socket
//! `<base>:console` the daemon binds beside ibsim's `<base>:ctl`.
//!
//! Commands (NODE is a node id or NodeDescription, as `SIM_HOST` takes them; PORT a port
//! number):
//!
//! | command | what it does |
//! |---|---|
//! | `status` (or `dump`) | the fabric, the clients attached (slot, node, port, SM or not), the faults set, late answers queued, traps sent |
//! | `link NODE PORT down` / `up` | the link at that port down (PortPhysicalState Disabled, as an SM's Set would: both ends Down) or back up (Polling: both ends train to Initialize); the switches at both ends note PortStateChange and send Trap 128 to their SM |
//! | `fault SPEC...` | any fault spec ([`ibnetsim::faults`]: `seed=`, `drop=`, `drop[NODE]=`, `drop[NODE/PORT]=`, `dead=`, `alive=`, `delay=R@D1..D2`, `dup=`, `flip=`, `clear`), applied on top of what is set |
//! | `counters NODE PORT` | the port's PMA counters |
//! | `counters NODE PORT FIELD=N` / `FIELD+=N` ... | sets or adds to counters (PortCounters field names, as ibsim's `PerformanceSet`: `SymbolErrorCounter`, `PortRcvErrors`, `LinkDownedCounter`, ...) |
//! | `errors NODE PORT [N]` | N (default 1) more SymbolErrorCounter and PortRcvErrors at the port, as a noisy link would show |
//! | `quit` | the daemon exits (status 0) |
//! | `help` | this list |
//!
//! The protocol: a request is one datagram, [`MAGIC`] then the command's words, each ended
//! by a NUL (no quoting: a NodeDescription with spaces is one word); the answer is one
//! datagram, `0\n` or `1\n` (success or failure) then the text. `umad sim ctl` prints the
//! text on stdout and exits 0, or on stderr and exits 1; it exits 2 on a usage error
//! (checked before anything is sent) and 1 when no daemon answers.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use umad::carrier::ibsim::wire;

use crate::exit;

/// What a request starts with.
pub const MAGIC: &[u8] = b"umad-sim-ctl 1\0";
/// The largest request or answer.
pub const MAX_DATAGRAM: usize = 64 * 1024;

/// The daemon's control interface socket name, `<base>:console`.
pub fn console_name(base: &str) -> String {
    format!("{base}:console")
}

/// The commands, for `help` and usage errors.
pub const HELP: &str = "\
commands:
  status | dump                       the fabric, clients, faults, late answers, traps
  link NODE PORT down|up              take a link down (Disabled) or bring it up (Polling)
  fault SPEC...                       apply a fault spec (seed=, drop=, drop[NODE]=,
                                      drop[NODE/PORT]=, dead=, alive=, delay=R@D1..D2,
                                      dup=, flip=, clear)
  counters NODE PORT [FIELD=N|FIELD+=N ...]
                                      show, set or add to a port's PMA counters
  errors NODE PORT [N]                N (1) more SymbolErrorCounter and PortRcvErrors
  quit                                stop the daemon
  help                                this list
NODE: a node id or NodeDescription; PORT: a port number.
";

/// The PortCounters fields `counters` knows, as ibsim's `PerformanceSet` names them.
pub const COUNTER_FIELDS: &[&str] = &[
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitData",
    "PortRcvData",
    "PortXmitPkts",
    "PortRcvPkts",
    "PortXmitWait",
];

/// A counter change: the field (an index into [`COUNTER_FIELDS`]), whether it adds, and by
/// or to what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterOp {
    /// Index into [`COUNTER_FIELDS`].
    pub field: usize,
    /// `+=` (add) rather than `=` (set).
    pub add: bool,
    /// The value.
    pub value: u64,
}

/// A command, parsed (the node by name: the daemon looks it up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtlCommand {
    /// `status` / `dump`.
    Status,
    /// `link NODE PORT down|up`.
    Link {
        /// The node.
        node: String,
        /// The port.
        port: u8,
        /// Up (true) or down.
        up: bool,
    },
    /// `fault SPEC...` (the words joined by commas).
    Fault(String),
    /// `counters NODE PORT [ops]`.
    Counters {
        /// The node.
        node: String,
        /// The port.
        port: u8,
        /// The changes (none: show).
        ops: Vec<CounterOp>,
    },
    /// `errors NODE PORT [N]`.
    Errors {
        /// The node.
        node: String,
        /// The port.
        port: u8,
        /// How many.
        n: u64,
    },
    /// `quit`.
    Quit,
    /// `help`.
    Help,
}

fn parse_port(s: &str) -> Result<u8, String> {
    s.parse::<u8>()
        .ok()
        .filter(|p| *p < 255)
        .ok_or_else(|| format!("{s:?} is not a port number (0-254)"))
}

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("{s:?} is not a number"))
}

fn parse_counter_op(s: &str) -> Result<CounterOp, String> {
    let (name, add, value) = if let Some((n, v)) = s.split_once("+=") {
        (n, true, v)
    } else if let Some((n, v)) = s.split_once('=') {
        (n, false, v)
    } else {
        return Err(format!("{s:?}: expected FIELD=N or FIELD+=N"));
    };
    let name = name.trim();
    let field = COUNTER_FIELDS
        .iter()
        .position(|f| f.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            format!(
                "{name:?} is not a PortCounters field; the fields are: {}",
                COUNTER_FIELDS.join(", ")
            )
        })?;
    Ok(CounterOp {
        field,
        add,
        value: parse_count(value)?,
    })
}

impl CtlCommand {
    /// Parses a command's words; the error says what is wrong and how it is written.
    pub fn parse(words: &[String]) -> Result<CtlCommand, String> {
        let Some((cmd, args)) = words.split_first() else {
            return Err("no command".into());
        };
        let want = |n: usize, usage: &str| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("usage: {usage}"))
            }
        };
        match cmd.to_ascii_lowercase().as_str() {
            "status" | "dump" => {
                want(0, "status")?;
                Ok(CtlCommand::Status)
            }
            "help" => Ok(CtlCommand::Help),
            "quit" | "exit" => {
                want(0, "quit")?;
                Ok(CtlCommand::Quit)
            }
            "link" => {
                want(3, "link NODE PORT down|up")?;
                let up = match args[2].to_ascii_lowercase().as_str() {
                    "up" => true,
                    "down" => false,
                    other => return Err(format!("{other:?}: expected down or up")),
                };
                Ok(CtlCommand::Link {
                    node: args[0].clone(),
                    port: parse_port(&args[1])?,
                    up,
                })
            }
            "fault" | "faults" => {
                if args.is_empty() {
                    return Err("usage: fault SPEC... (e.g. fault drop=5% dead=S-sw2)".into());
                }
                Ok(CtlCommand::Fault(args.join(",")))
            }
            "counters" => {
                if args.len() < 2 {
                    return Err("usage: counters NODE PORT [FIELD=N|FIELD+=N ...]".into());
                }
                let ops = args[2..]
                    .iter()
                    .map(|a| parse_counter_op(a))
                    .collect::<Result<_, _>>()?;
                Ok(CtlCommand::Counters {
                    node: args[0].clone(),
                    port: parse_port(&args[1])?,
                    ops,
                })
            }
            "errors" => {
                if !(2..=3).contains(&args.len()) {
                    return Err("usage: errors NODE PORT [N]".into());
                }
                let n = match args.get(2) {
                    Some(a) => parse_count(a)?,
                    None => 1,
                };
                Ok(CtlCommand::Errors {
                    node: args[0].clone(),
                    port: parse_port(&args[1])?,
                    n,
                })
            }
            other => Err(format!("unknown command {other:?}")),
        }
    }
}

/// A request's words, or `None` if it is not one.
pub fn decode_request(buf: &[u8]) -> Option<Vec<String>> {
    let body = buf.strip_prefix(MAGIC)?;
    let body = body.strip_suffix(b"\0").unwrap_or(body);
    if body.is_empty() {
        return Some(Vec::new());
    }
    body.split(|b| *b == 0)
        .map(|w| String::from_utf8(w.to_vec()).ok())
        .collect()
}

fn encode_request(words: &[String]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for w in words {
        out.extend_from_slice(w.as_bytes());
        out.push(0);
    }
    out
}

/// An answer datagram: success or not, and the text (cut to fit a datagram).
pub fn encode_answer(ok: bool, text: &str) -> Vec<u8> {
    let mut out = if ok { b"0\n".to_vec() } else { b"1\n".to_vec() };
    let room = MAX_DATAGRAM - out.len() - 32;
    if text.len() > room {
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        out.extend_from_slice(&text.as_bytes()[..cut]);
        out.extend_from_slice(b"\n... (cut)\n");
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// The clap command of `umad sim ctl`.
pub fn command() -> clap::Command {
    use clap::{Arg, ArgAction};
    clap::Command::new("ctl")
        .about("control a running umad sim serve: links, faults, counters, status, quit")
        .after_help(HELP)
        .arg(
            Arg::new("socket")
                .long("socket")
                .short('s')
                .num_args(1)
                .value_name("NAME")
                .help(
                    "the daemon's socket base name (--socket of umad sim serve; default \"sim\")",
                ),
        )
        .arg(
            Arg::new("timeout")
                .long("timeout")
                .short('t')
                .num_args(1)
                .value_name("MS")
                .value_parser(clap::value_parser!(u64).range(1..))
                .default_value("5000")
                .help("how long to wait for the daemon's answer"),
        )
        .arg(
            Arg::new("command")
                .required(true)
                .num_args(1..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .action(ArgAction::Append)
                .value_name("COMMAND")
                .help("the command and its arguments (see below)"),
        )
}

/// `umad sim ctl`, with its matches.
pub fn run(m: &clap::ArgMatches) -> i32 {
    let words: Vec<String> = m
        .get_many::<String>("command")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    if let Err(e) = CtlCommand::parse(&words) {
        eprintln!("umad sim ctl: {e}\n\n{HELP}");
        return exit::USAGE;
    }
    let base = m
        .get_one::<String>("socket")
        .cloned()
        .unwrap_or_else(|| wire::DEFAULT_BASE.to_string());
    let timeout = Duration::from_millis(*m.get_one::<u64>("timeout").unwrap_or(&5000));
    match ask(&base, &words, timeout) {
        Ok((true, text)) => {
            print!("{text}");
            exit::OK
        }
        Ok((false, text)) => {
            eprint!("umad sim ctl: {text}");
            if !text.ends_with('\n') {
                eprintln!();
            }
            1
        }
        Err(e) => {
            eprintln!("umad sim ctl: {e}");
            1
        }
    }
}

/// Sends `words` to the daemon at `base` and waits up to `timeout` for its answer.
fn ask(base: &str, words: &[String], timeout: Duration) -> io::Result<(bool, String)> {
    static N: AtomicU32 = AtomicU32::new(0);
    let server_name = console_name(base);
    let me = UnixDatagram::bind_addr(&wire::abstract_addr(&format!(
        "{server_name}-client{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))?)?;
    me.set_read_timeout(Some(timeout))?;
    let server = wire::abstract_addr(&server_name)?;
    if let Err(e) = me.send_to_addr(&encode_request(words), &server) {
        return Err(match e.kind() {
            io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => io::Error::new(
                e.kind(),
                format!(
                    "no umad sim serve listens on @{server_name} (start one with `umad sim \
                     serve <fabric> --socket {base}`, or give its name with --socket)"
                ),
            ),
            _ => io::Error::new(e.kind(), format!("cannot send to @{server_name}: {e}")),
        });
    }
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let n = match me.recv(&mut buf) {
        Ok(n) => n,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "no answer from @{server_name} within {} ms (is the daemon stopped or \
                     overloaded?)",
                    timeout.as_millis()
                ),
            ))
        }
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&buf[..n]);
    match text.split_once('\n') {
        Some(("0", rest)) => Ok((true, rest.to_string())),
        Some(("1", rest)) => Ok((false, rest.to_string())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("@{server_name} answered something that is not a umad sim ctl answer"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn commands_parse_and_bad_ones_say_what_is_wrong() {
        assert_eq!(
            CtlCommand::parse(&words(&["link", "S-sw1", "8", "down"])),
            Ok(CtlCommand::Link {
                node: "S-sw1".into(),
                port: 8,
                up: false
            })
        );
        assert_eq!(
            CtlCommand::parse(&words(&["fault", "drop=5%", "dead=S-sw2"])),
            Ok(CtlCommand::Fault("drop=5%,dead=S-sw2".into()))
        );
        let c = CtlCommand::parse(&words(&["counters", "n", "1", "symbolerrorcounter+=3"]));
        assert_eq!(
            c,
            Ok(CtlCommand::Counters {
                node: "n".into(),
                port: 1,
                ops: vec![CounterOp {
                    field: 0,
                    add: true,
                    value: 3
                }]
            })
        );
        for (bad, says) in [
            (&["link", "S-sw1", "8"][..], "usage: link"),
            (&["link", "S-sw1", "x", "down"], "not a port number"),
            (&["link", "S-sw1", "300", "down"], "not a port number"),
            (&["link", "S-sw1", "1", "sideways"], "expected down or up"),
            (
                &["counters", "n", "1", "Bogus=1"],
                "not a PortCounters field",
            ),
            (&["counters", "n", "1", "PortRcvErrors=-1"], "not a number"),
            (&["errors", "n"], "usage: errors"),
            (&["fault"], "usage: fault"),
            (&["reboot"], "unknown command"),
            (&[], "no command"),
        ] {
            let e = CtlCommand::parse(&words(bad)).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn requests_round_trip_and_garbage_is_not_one() {
        let w = words(&["link", "host2 HCA-1", "1", "up"]);
        assert_eq!(decode_request(&encode_request(&w)), Some(w));
        assert_eq!(decode_request(b"garbage"), None);
        assert_eq!(decode_request(MAGIC), Some(vec![]));
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&[0xff, 0xfe, 0]);
        assert_eq!(decode_request(&bad), None);
        let a = encode_answer(true, &"x".repeat(MAX_DATAGRAM * 2));
        assert!(a.len() <= MAX_DATAGRAM);
    }
}
