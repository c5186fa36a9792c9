//! What every tool shares, after infiniband-diags' `ibdiag_common.c`: the common options
//! (`-z -C -P -D -L -G -t -s -K -y -e -v -d -h -V`, each tool excluding the letters it uses
//! for itself), the `ibdiag.conf` defaults, the node name map, opening the port, errors and
//! progress.
//!
//! The node name map itself is [`ibfabric::NodeNameMap`] (rdma-core's format).
//!
//! Differences from C, on purpose: a malformed number (`-P x`, `-o 1k`) is a usage error
//! (exit 2) where C's `strtoul` would silently read 0; an unreadable `-y` M_Key is an error
//! instead of a password prompt; run-time errors go to stderr (C's `IBEXIT` prints them on
//! stdout), with the same exit code 255.

use std::ffi::OsString;
use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::NodeNameMap;

use crate::exit;

/// The configuration file every tool reads first (`-z` reads another one).
pub const DEFAULT_CONFIG: &str = "/etc/infiniband-diags/ibdiag.conf";

/// A tool's failure: what to print and which exit code it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Bad usage (exit 2): a malformed or contradictory argument.
    Usage(String),
    /// A run-time failure (exit 255): no port, discovery failed, a file unreadable, ...
    Failed(String),
}

impl CliError {
    /// The exit code: [`exit::USAGE`] or [`exit::FAILURE`].
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            CliError::Failed(_) => exit::FAILURE,
        }
    }

    /// Prints the error on stderr, prefixed with `prog`, and returns the exit code.
    pub fn report(&self, prog: &str) -> i32 {
        match self {
            CliError::Usage(m) => eprintln!("{prog}: {m}"),
            CliError::Failed(m) => eprintln!("{prog}: iberror: failed: {m}"),
        }
        self.exit_code()
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// How a destination argument is meant (`-D`, `-L`, `-G`); tools without a destination
/// exclude these options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DestType {
    /// `-L` (the default): a LID.
    #[default]
    Lid,
    /// `-D`: a directed route.
    DrPath,
    /// `-G`: a port GUID.
    Guid,
}

/// The common options after the config file(s) and the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonOpts {
    /// `-C`: the CA name (`None` = the default CA).
    pub ca: Option<String>,
    /// `-P`: the CA port (0 = the best port).
    pub port: u32,
    /// `-D`/`-L`/`-G`.
    pub dest: DestType,
    /// `-t`: the MAD timeout in milliseconds (`None` = the library's default).
    pub timeout_ms: Option<u32>,
    /// `-s`: the SM port LID, as given (tools that use it resolve it).
    pub sm_port: Option<String>,
    /// `-K`: show keys in the output.
    pub show_keys: bool,
    /// `-y`: the M_Key for requests.
    pub m_key: u64,
    /// `sa_key` from the config file.
    pub sa_key: u64,
    /// `-e`: show send and receive errors.
    pub errors: bool,
    /// `-v`, counted.
    pub verbose: u8,
    /// `-d`, counted (also set process-wide for [`crate::debug`]).
    pub debug: u8,
    /// `MLX_EPI` from the config file (default true): read Mellanox ExtendedPortInfo.
    pub mlx_epi: bool,
    /// `nd_format` from the config file.
    pub nd_format: Option<String>,
}

impl Default for CommonOpts {
    fn default() -> Self {
        CommonOpts {
            ca: None,
            port: 0,
            dest: DestType::Lid,
            timeout_ms: None,
            sm_port: None,
            show_keys: false,
            m_key: 0,
            sa_key: 0,
            errors: false,
            verbose: 0,
            debug: 0,
            mlx_epi: true,
            nd_format: None,
        }
    }
}

/// The common options: (letter, long name, value name or `None` for a flag, help), in the
/// order of C's `common_opts`.
const COMMON: &[(char, &str, Option<&str>, &str)] = &[
    (
        'z',
        "config",
        Some("<config>"),
        "use config file, default: /etc/infiniband-diags/ibdiag.conf",
    ),
    ('C', "Ca", Some("<ca>"), "Ca name to use"),
    ('P', "Port", Some("<port>"), "Ca port number to use"),
    ('D', "Direct", None, "use Direct address argument"),
    ('L', "Lid", None, "use LID address argument"),
    ('G', "Guid", None, "use GUID address argument"),
    ('t', "timeout", Some("<ms>"), "timeout in ms"),
    ('s', "sm_port", Some("<lid>"), "SM port lid"),
    ('K', "show_keys", None, "display security keys in output"),
    ('y', "m_key", Some("<key>"), "M_Key to use in request"),
    ('e', "errors", None, "show send and receive errors"),
    ('v', "verbose", None, "increase verbosity level"),
    ('d', "debug", None, "raise debug level"),
    ('h', "help", None, "help message"),
    ('V', "version", None, "show version"),
];

/// The clap id of a common option: its long name (no tool uses one of these as its own id).
fn id(long: &str) -> &str {
    long
}

/// Adds the common options to `cmd`, except those whose letter is in `exclude` (as C's
/// `ibdiag_process_opts(..., exclude_common_str, ...)`). `-h` and `-V` are always kept.
/// Also turns off clap's own help and version flags: [`parse_args`] handles them as C does.
pub fn add_common_args(mut cmd: Command, exclude: &str) -> Command {
    cmd = cmd
        .disable_help_flag(true)
        .disable_version_flag(true)
        .infer_long_args(true);
    for &(letter, long, value, help) in COMMON {
        if exclude.contains(letter) && letter != 'h' && letter != 'V' {
            continue;
        }
        let mut arg = Arg::new(long).short(letter).long(long).help(help);
        arg = match (letter, value) {
            (_, Some(v)) => arg.value_name(v.trim_matches(['<', '>'])).num_args(1),
            ('v' | 'd', None) => arg.action(ArgAction::Count),
            (_, None) => arg.action(ArgAction::SetTrue),
        };
        cmd = cmd.arg(arg);
    }
    cmd
}

/// A `-<short>`/`--<id>` flag that may be repeated (C's `case 'x': x++`).
pub fn count_flag(id: &'static str, short: char, help: &'static str) -> Arg {
    Arg::new(id)
        .short(short)
        .long(id)
        .action(ArgAction::Count)
        .help(help)
}

/// The `--json` flag of `tool`, whose output follows `docs/json/<tool>-v1.schema.json`.
pub fn json_arg(tool: &str) -> Arg {
    Arg::new("json")
        .long("json")
        .action(ArgAction::SetTrue)
        .help(format!(
            "print JSON (docs/json/{tool}-v1.schema.json) instead of text"
        ))
}

/// The `--node-name-map <file>` option, for the tools that take it.
pub fn node_name_map_arg() -> Arg {
    Arg::new("node-name-map")
        .long("node-name-map")
        .value_name("file")
        .value_parser(clap::value_parser!(PathBuf))
        .help("node name map file")
}

/// What [`parse_args`] found.
pub enum Parsed {
    /// Run the tool with these matches.
    Run(ArgMatches),
    /// Stop now with this exit code (help, version or a usage error, already printed).
    Exit(i32),
}

/// Parses `args` for tool `prog` with `cmd` (built with [`add_common_args`]) as
/// infiniband-diags does: a bad option (glibc `getopt_long`'s check, its message on stderr)
/// or `-h` prints [`c_usage`] on stderr and exits 2; `-V` prints the version on stderr and
/// exits 0. What getopt accepts but clap still refuses (a second value, ...) is reported as
/// `<prog>: <clap's message>` with the usage, exit 2.
pub fn parse_args(prog: &'static str, cmd: Command, args: Vec<OsString>) -> Parsed {
    // getopt gives an option that requires an argument the next word whatever it is
    // (`iblinkinfo --switch -l` looks up the GUID "-l"); clap would refuse a value that
    // starts with '-'.
    let mut cmd = cmd.name(prog).bin_name(prog).mut_args(|a| {
        if !a.is_positional() && takes_value(&a) {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    });
    match getopt_scan(&cmd, &args) {
        Scan::Fine => {}
        Scan::Help => {
            eprint!("{}", c_usage(&cmd));
            return Parsed::Exit(exit::USAGE);
        }
        Scan::Bad(msg) => {
            eprint!("{prog}: {msg}\n{}", c_usage(&cmd));
            return Parsed::Exit(exit::USAGE);
        }
    }
    let argv = std::iter::once(OsString::from(prog)).chain(args);
    match cmd.try_get_matches_from_mut(argv) {
        Ok(m) => {
            if m.get_flag(id("help")) {
                eprint!("{}", c_usage(&cmd));
                Parsed::Exit(exit::USAGE)
            } else if m.get_flag(id("version")) {
                eprintln!("{prog} (umad-rs) {}", env!("CARGO_PKG_VERSION"));
                Parsed::Exit(exit::OK)
            } else {
                Parsed::Run(m)
            }
        }
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            let msg = first.strip_prefix("error: ").unwrap_or(first);
            eprint!("{prog}: {msg}\n{}", c_usage(&cmd));
            Parsed::Exit(exit::USAGE)
        }
    }
}

/// C's `pretty_print(start, width, str)`: `text` wrapped at the spaces past column `width`,
/// each continuation line indented to column `start` (infiniband-diags' exact rule: a line
/// keeps its trailing space, and the last word may run past `width`).
fn pretty_print(out: &mut String, start: usize, width: usize, text: &str) {
    let len = width.saturating_sub(start);
    let b = text.as_bytes();
    let mut s = 0;
    loop {
        while s < b.len() && b[s].is_ascii_whitespace() {
            s += 1;
        }
        let space_from = |i: usize| (i..b.len()).find(|&j| b[j] == b' ');
        let mut p = Some(s);
        let mut e;
        loop {
            e = p.unwrap_or(s) + 1;
            p = if e <= b.len() { space_from(e) } else { None };
            match p {
                Some(q) if q - s < len => continue,
                _ => break,
            }
        }
        let Some(q) = p else {
            out.push_str(&text[s..]);
            break;
        };
        if e - s == 1 {
            e = q;
        }
        out.push_str(&text[s..e]);
        out.push('\n');
        out.push_str(&" ".repeat(start));
        s = e;
    }
}

/// An option's template as C prints it: the value name in `<>` (kept as is when it is
/// already written that way), `<val>` when there is none.
fn arg_template(arg: &Arg) -> String {
    match arg.get_value_names().and_then(|v| v.first()) {
        Some(n) if n.starts_with('<') => n.to_string(),
        Some(n) => format!("<{n}>"),
        None => "<val>".to_string(),
    }
}

/// Whether option `arg` takes a value (C's `has_arg`).
fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

/// The usage text infiniband-diags' `ibdiag_show_usage` prints, from `cmd` (named `prog`):
/// the usage line from its `override_usage` (`<prog> [options] <args>`; or, verbatim, the
/// args as its `before_help`), then every option
/// in declaration order (the tool's own, then the common ones), `  --long, -x <tmpl>` and
/// the help wrapped by C's rule at column 74, then the `after_help` text (the tool's
/// `Examples:` block), then a blank line.
pub fn c_usage(cmd: &Command) -> String {
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
    let prog = cmd.get_name();
    // C: "Usage: %s [options] %s" with the tool's usage args (clap trims a trailing space).
    let args = usage
        .strip_prefix(prog)
        .and_then(|u| u.strip_prefix(" [options]"))
        .map_or(usage, |a| a.strip_prefix(' ').unwrap_or(a));
    // Usage args that end with a newline (smpquery's, ibportstate's) are given as
    // `before_help`, verbatim: clap trims the override_usage.
    let raw = cmd.get_before_help().map(ToString::to_string);
    let args = raw.as_deref().unwrap_or(args);
    let mut out = format!("\nUsage: {prog} [options] {args}\n\n");
    let opts: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set() && a.get_long().is_some())
        .collect();
    if !opts.is_empty() {
        out.push_str("Options:\n");
    }
    for a in opts {
        let mut line = format!("  --{}", a.get_long().unwrap_or_default());
        if let Some(c) = a.get_short() {
            line.push_str(&format!(", -{c}"));
        }
        if takes_value(a) {
            line.push(' ');
            line.push_str(&arg_template(a));
        }
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        if !help.is_empty() {
            let pad = 24usize.saturating_sub(line.len());
            line.push_str(&" ".repeat(pad + 2));
            let n = line.len();
            out.push_str(&line);
            pretty_print(&mut out, n, 74, &help);
        } else {
            out.push_str(&line);
        }
        out.push('\n');
    }
    if let Some(ex) = cmd.get_after_help() {
        out.push('\n');
        out.push_str(ex.to_string().trim_end_matches('\n'));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The `Examples:` block C's usage ends with, for a command's `after_help`: each example
/// as `  <prog> <example>`.
pub fn examples(prog: &str, lines: &[&str]) -> String {
    let mut s = String::from("Examples:\n");
    for l in lines {
        s.push_str(&format!("  {prog} {l}\n"));
    }
    s
}

/// What a getopt-style scan of the command line found first.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scan {
    /// No bad option, no `-h`.
    Fine,
    /// `-h`/`--help` came before any bad option.
    Help,
    /// A bad option: glibc `getopt_long`'s message (without the program name).
    Bad(String),
}

/// Scans `args` as glibc's `getopt_long` does with the options of `cmd` (arguments
/// permuted, `--` ends the options, long names matched by unique prefix, `--x=v`): the
/// first `-h`/`--help` or the first error, with getopt's message.
fn getopt_scan(cmd: &Command, args: &[OsString]) -> Scan {
    let opts: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_positional()).collect();
    let is_help = |a: &Arg| a.get_id() == id("help");
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].to_string_lossy();
        i += 1;
        if arg == "--" {
            break;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let exact = opts.iter().find(|a| a.get_long() == Some(name));
            let found = match exact {
                Some(a) => *a,
                None => {
                    let cands: Vec<&&Arg> = opts
                        .iter()
                        .filter(|a| a.get_long().is_some_and(|l| l.starts_with(name)))
                        .collect();
                    match cands.as_slice() {
                        [] => return Scan::Bad(format!("unrecognized option '--{body}'")),
                        [a] => **a,
                        many => {
                            let mut m = format!("option '--{name}' is ambiguous; possibilities:");
                            for a in many {
                                m.push_str(&format!(" '--{}'", a.get_long().unwrap_or_default()));
                            }
                            return Scan::Bad(m);
                        }
                    }
                }
            };
            let long = found.get_long().unwrap_or_default();
            if takes_value(found) {
                if value.is_none() {
                    if i < args.len() {
                        i += 1;
                    } else {
                        return Scan::Bad(format!("option '--{long}' requires an argument"));
                    }
                }
            } else if value.is_some() {
                return Scan::Bad(format!("option '--{long}' doesn't allow an argument"));
            }
            if is_help(found) {
                return Scan::Help;
            }
        } else if let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) {
            for (k, c) in letters.char_indices() {
                let Some(found) = opts.iter().find(|a| a.get_short() == Some(c)) else {
                    return Scan::Bad(format!("invalid option -- '{c}'"));
                };
                if is_help(found) {
                    return Scan::Help;
                }
                if takes_value(found) {
                    if k + c.len_utf8() == letters.len() {
                        if i < args.len() {
                            i += 1;
                        } else {
                            return Scan::Bad(format!("option requires an argument -- '{c}'"));
                        }
                    }
                    break;
                }
            }
        }
    }
    Scan::Fine
}

/// Parses an unsigned number as C's `strtoul(s, NULL, 0)` reads a well-formed one: `0x`/`0X`
/// hexadecimal, a leading `0` octal, else decimal. Anything else, or trailing junk, is `None`
/// ([`ibfabric::cnum::parse_unsigned`]).
pub fn parse_c_number(s: &str) -> Option<u64> {
    ibfabric::cnum::parse_unsigned(s.as_bytes())
}

/// A number option's value, or a usage error naming the option.
pub fn number_arg(option: &str, value: &str) -> Result<u64, CliError> {
    parse_c_number(value)
        .ok_or_else(|| CliError::Usage(format!("invalid number {value:?} for {option}")))
}

/// Applies one `ibdiag.conf` text to `opts`: `name=value` lines (`#` comments, blank lines
/// skipped), the names C knows matched by prefix as C's `strncmp` does: `CA`, `Port`,
/// `timeout`, `MLX_EPI`, `m_key`, `sa_key`, `nd_format`. Unknown names are ignored, as in C.
pub fn apply_config(opts: &mut CommonOpts, text: &str) {
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = line.split_once('=').unwrap_or((line, ""));
        if name.starts_with("CA") {
            opts.ca = Some(value.to_string());
        } else if name.starts_with("Port") {
            opts.port = parse_c_number(value).unwrap_or(0) as u32;
        } else if name.starts_with("timeout") {
            opts.timeout_ms = parse_c_number(value).and_then(|v| u32::try_from(v).ok());
        } else if name.starts_with("MLX_EPI") {
            opts.mlx_epi = value.starts_with("TRUE") || value.starts_with("true");
        } else if name.starts_with("m_key") {
            opts.m_key = parse_c_number(value).unwrap_or(0);
        } else if name.starts_with("sa_key") {
            opts.sa_key = parse_c_number(value).unwrap_or(0);
        } else if name.starts_with("nd_format") {
            opts.nd_format = Some(value.to_string());
        }
    }
}

impl CommonOpts {
    /// The common options: the defaults, then [`DEFAULT_CONFIG`] if it exists, then `-z`'s
    /// file, then the command line.
    pub fn from_matches(m: &ArgMatches) -> Result<CommonOpts, CliError> {
        let mut opts = CommonOpts::default();
        if let Ok(text) = std::fs::read_to_string(DEFAULT_CONFIG) {
            apply_config(&mut opts, &text);
        }
        let s =
            |long: &str| -> Option<&String> { m.try_get_one::<String>(id(long)).ok().flatten() };
        let flag = |long: &str| m.try_get_one::<bool>(id(long)).ok().flatten() == Some(&true);
        let count = |long: &str| m.try_get_one::<u8>(id(long)).ok().flatten().copied();
        if let Some(file) = s("config") {
            // C ignores a missing config file silently, even one named with -z.
            if let Ok(text) = std::fs::read_to_string(file) {
                apply_config(&mut opts, &text);
            }
        }
        if let Some(ca) = s("Ca") {
            opts.ca = Some(ca.clone());
        }
        if let Some(p) = s("Port") {
            opts.port = u32::try_from(number_arg("-P", p)?)
                .map_err(|_| CliError::Usage(format!("port {p} out of range")))?;
        }
        if flag("Direct") {
            opts.dest = DestType::DrPath;
        }
        if flag("Lid") {
            opts.dest = DestType::Lid;
        }
        if flag("Guid") {
            opts.dest = DestType::Guid;
        }
        if let Some(t) = s("timeout") {
            match t.trim().parse::<i64>() {
                Ok(v) if v > 0 && v <= i64::from(i32::MAX) => opts.timeout_ms = Some(v as u32),
                _ => {
                    return Err(CliError::Failed(format!(
                        "Invalid timeout \"{t}\".  Timeout requires a positive integer value < {}.",
                        i32::MAX
                    )))
                }
            }
        }
        opts.sm_port = s("sm_port").cloned();
        opts.show_keys = flag("show_keys");
        if let Some(k) = s("m_key") {
            opts.m_key = parse_c_number(k).ok_or_else(|| CliError::Failed("Bad M_Key".into()))?;
        }
        opts.errors = flag("errors");
        opts.verbose = count("verbose").unwrap_or(0);
        opts.debug = count("debug").unwrap_or(0);
        if opts.debug > 0 {
            opts.errors = true;
        }
        crate::debug::set(opts.debug, opts.errors);
        Ok(opts)
    }

    /// Opens the SMI port these options name: [`umad::Port::open_smi`] (the kernel's umad
    /// devices, or ibsim when `UMAD_IBSIM` is set).
    pub fn open_smi_port(&self) -> Result<umad::Port, CliError> {
        umad::Port::open_smi(self.ca.as_deref(), self.port).map_err(|e| self.open_failure(&e))
    }

    /// Why the port these options name did not open (`can't open port[ <ca>:<port>]: ...`).
    pub fn open_failure(&self, e: &umad::Error) -> CliError {
        let which = match (&self.ca, self.port) {
            (None, 0) => String::new(),
            (ca, p) => format!(" {}:{p}", ca.as_deref().unwrap_or("(default CA)")),
        };
        CliError::Failed(format!("can't open port{which}: {e}"))
    }

    /// [`open_mad_port`](Self::open_mad_port) as libibnetdisc's discovery opens its port
    /// (`ibnd_discover_fabric`): a failure also prints its `IBND_ERROR` line, which names
    /// C's source position.
    pub fn open_ibnd_port(&self, prog: &str) -> Result<umad::Port, CliError> {
        self.open_mad_port(prog).inspect_err(|_| {
            let ca = self.ca.as_deref().unwrap_or("(null)");
            eprintln!(
                "./libibnetdisc/ibnetdisc.c:802; can't open MAD port ({ca}:{})",
                self.port
            );
        })
    }

    /// [`open_smi_port`](Self::open_smi_port) as libibmad's `mad_rpc_open_port`, which the
    /// MAD tools open their port with. A failure says why on stderr (`<prog>: can't open
    /// port ...`, where C's libibumad would print its own diagnostics), then libibmad's
    /// `ibwarn: [<pid>] mad_rpc_open_port: can't open UMAD port (<ca or (null)>:<port>)`;
    /// the tool goes on to C's own message.
    pub fn open_mad_port(&self, prog: &str) -> Result<umad::Port, CliError> {
        self.open_smi_port().inspect_err(|e| {
            eprintln!("{prog}: {e}");
            let ca = self.ca.as_deref().unwrap_or("(null)");
            crate::debug::ibwarn(
                "mad_rpc_open_port",
                &format!("can't open UMAD port ({ca}:{})", self.port),
            );
        })
    }
}

thread_local! {
    /// Whether a discovery of this tool run was cut short (see [`note_discovery`]).
    static WENT_SILENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Looks at a finished discovery: when the fabric stopped answering in the middle
/// ([`ibfabric::discover::Discovery::went_silent`]), says so on stderr and marks the run, so
/// that a tool that would exit 0 exits [`exit::PARTIAL`] instead: a script checking `$?`
/// must not take a prefix of the fabric for the fabric. Scattered SMPs without an answer
/// (a dead node, a lossy link) leave the status alone, as in C.
pub fn note_discovery(prog: &str, d: &ibfabric::discover::Discovery) {
    if d.went_silent() {
        eprintln!(
            "{prog}: error: the fabric stopped answering: {} SMPs given up after a whole request budget (timeout × tries) of silence; the topology is partial ({} nodes found)",
            d.stats.abandoned,
            d.fabric.nodes.len()
        );
        WENT_SILENT.with(|w| w.set(true));
    }
}

/// Runs one tool: its exit code, [`exit::PARTIAL`] in place of [`exit::OK`] when one of its
/// discoveries was cut short ([`note_discovery`]).
pub fn run_tool(
    main: fn(&'static str, Vec<OsString>) -> i32,
    name: &'static str,
    args: Vec<OsString>,
) -> i32 {
    WENT_SILENT.with(|w| w.set(false));
    let code = main(name, args);
    if code == exit::OK && WENT_SILENT.with(|w| w.replace(false)) {
        exit::PARTIAL
    } else {
        code
    }
}

/// The node name map a tool uses, as C's `open_node_name_map`: `path`, else
/// [`ibfabric::ibnetdiscover::DEFAULT_NODE_NAME_MAP`] if it exists, else none. A map that
/// cannot be read or parsed is reported on stderr as a warning and not used (C goes on
/// without it too).
pub fn open_node_name_map(path: Option<&Path>) -> Option<NodeNameMap> {
    let default = Path::new(ibfabric::ibnetdiscover::DEFAULT_NODE_NAME_MAP);
    let path = match path {
        Some(p) => p,
        None if default.exists() => default,
        None => return None,
    };
    match NodeNameMap::load(path) {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!(
                "WARNING failed to open node name map \"{}\" ({e})",
                path.display()
            );
            None
        }
    }
}

/// The current time as C's `ctime()` prints it (without the newline), in UTC: this crate
/// reads no time zone database (C prints local time; the same on a machine set to UTC).
pub fn ctime_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    ctime_utc(i64::try_from(secs).unwrap_or(0))
}

/// C's `ctime()` text (without the newline) for `secs` since the Unix epoch, in UTC.
pub fn ctime_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // 1970-01-01 was a Thursday (4).
    let weekday = (days + 4).rem_euclid(7);
    ibfabric::ibnetdiscover::ctime(
        year as i32,
        month as u8,
        day as u8,
        weekday as u8,
        (rem / 3600) as u8,
        (rem / 60 % 60) as u8,
        (rem % 60) as u8,
    )
}

/// A progress line on stderr, shown only when stderr is a terminal (so pipes, files and
/// tests never see it).
pub struct Progress {
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// A progress line that shows only if stderr is a terminal.
    pub fn stderr() -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Replaces the line with `msg`.
    pub fn update(&mut self, msg: &str) {
        if self.enabled {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K{msg}");
            let _ = e.flush();
            self.shown = true;
        }
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers() {
        assert_eq!(parse_c_number("12"), Some(12));
        assert_eq!(parse_c_number("0x1f"), Some(31));
        assert_eq!(parse_c_number("010"), Some(8));
        assert_eq!(parse_c_number("0"), Some(0));
        assert_eq!(parse_c_number("08"), None);
        assert_eq!(parse_c_number("1k"), None);
        assert_eq!(parse_c_number(""), None);
        assert_eq!(parse_c_number("0x"), None);
        assert_eq!(parse_c_number("99999999999999999999999"), None);
    }

    #[test]
    fn ctime_in_utc() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime_utc(1_796_125_148), "Tue Dec  1 11:39:08 2026");
        assert_eq!(ctime_utc(-1), "Wed Dec 31 23:59:59 1969");
    }

    /// Random text never panics the hand-written parsers.
    #[test]
    fn parsers_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"0123456789abcdefxX+- =#\n\t,CAPortimeuMLX_EPIkysnd\xff";
        for len in 0..200 {
            let text: String = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize] as char
                })
                .collect();
            let _ = parse_c_number(&text);
            let mut o = CommonOpts::default();
            apply_config(&mut o, &text);
            let _ = ibfabric::diff::Checks::parse_keys(&text);
        }
    }

    #[test]
    fn config_file() {
        let mut o = CommonOpts::default();
        apply_config(
            &mut o,
            "# c\nCA=mlx5_0\nPort=2\ntimeout=0x100\nMLX_EPI=false\nm_key=0x12\nbogus=1\n",
        );
        assert_eq!(o.ca.as_deref(), Some("mlx5_0"));
        assert_eq!(o.port, 2);
        assert_eq!(o.timeout_ms, Some(256));
        assert!(!o.mlx_epi);
        assert_eq!(o.m_key, 0x12);
    }
}
