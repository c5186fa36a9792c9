//! `umad ibnetdiscover`: discover the fabric and print its topology, as infiniband-diags'
//! `ibnetdiscover` (same options, same output byte for byte), plus `--json`.
//!
//! Exit status: 0 on success (with `--diff --json`: no differences), 1 with `--diff --json`
//! when the topologies differ, 2 on bad usage (and `-h`), 255 when discovery or a file fails.
//!
//! `--diff <file>` compares the saved topology (`<`) with the current one (`>`: discovered,
//! or `--load-cache`) and prints what C prints, byte for byte
//! ([`Fabric::write_ibnetdiscover_diff`], the comparison is [`ibfabric::diff::topology_diff`]):
//! the topology lines of nodes only one side has, prefixed, and for nodes both have the node
//! header with the differing ports' lines; `--diffcheck` keys as C reads them (given keys
//! replace the default `sw,ca,router,port`; `lid` and `nodedesc` add checks; without a node
//! type key nothing is compared), `-f` adds the link codes. As in C, `-p` and
//! `-l`/`-H`/`-S`/`-R` take precedence over `--diff`, and the exit status is 0 whatever
//! differs.
//!
//! `--diff <file> --json` writes this crate's structured report instead
//! ([`ibfabric::diff::diff`], `docs/json/ibnetdiscover-diff-v1.schema.json`: nodes and links
//! added and removed, and changed descriptions, LIDs, port states, widths and speeds) and
//! exits 1 if anything differs. There `--diffcheck` also knows `state`, `width` and
//! `speed`, no `--diffcheck` means every check, and keys without a node type compare every
//! node type ([`Checks::or_all_types`]).
//!
//! `--cache <file>` writes libibnetdisc's binary cache ([`ibfabric::cache`]), which C's
//! `--load-cache` reads; `--load-cache <file>` and `--diff <file>` read such a cache
//! (written by C or by this tool) and also, told apart by the cache's magic, this tool's
//! `--json` output or `ibnetdiscover` text.
//!
//! Differences from C, on purpose: `--diffcheck` accepts `state`, `width` and `speed`
//! (which only `--json` uses) besides C's keys; where C would print a port line for a port
//! without a peer (and crash: `--diffcheck lid` on a switch whose LID changed, for its
//! unlinked ports), nothing is printed for that port.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::diff::{diff, Checks};
use ibfabric::discover::{DiscoverOptions, ProgressEvent, ProgressFn};
use ibfabric::{Fabric, Format, Node, WriteOptions};
use ibmad::NodeType;

use crate::common::{self, CliError, CommonOpts, Parsed, Progress};
use crate::exit;

/// The common options ibnetdiscover does not take (C: `"DGKLs"`; `-s` is its own).
const EXCLUDED_COMMON: &str = "DGKLs";

/// Which node types `-l`/`-H`/`-S`/`-R` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListTypes {
    /// CAs (`-H`, `-l`).
    pub cas: bool,
    /// Switches (`-S`, `-l`).
    pub switches: bool,
    /// Routers (`-R`, `-l`).
    pub routers: bool,
}

impl ListTypes {
    /// Whether anything is to be listed.
    pub fn any(&self) -> bool {
        self.cas || self.switches || self.routers
    }
}

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// The common options.
    pub common: CommonOpts,
    /// `-f`: speed, width and VLCap codes after each link.
    pub full: bool,
    /// `-s`: print each NodeInfo response during discovery.
    pub show: bool,
    /// `-l`/`-H`/`-S`/`-R`: list nodes instead of the topology (the last one given wins, as
    /// in C).
    pub list: ListTypes,
    /// `-g`: group by chassis.
    pub group: bool,
    /// `-p`: the ports report.
    pub ports_report: bool,
    /// `-m`: report max hops and MADs used.
    pub max_hops: bool,
    /// `-o`: outstanding SMPs (the discovery window); `None` = the default.
    pub outstanding: Option<u32>,
    /// `--node-name-map`.
    pub node_name_map: Option<PathBuf>,
    /// `--cache`: write the topology there as an ibnetdisc cache file.
    pub cache: Option<PathBuf>,
    /// `--load-cache`: read the topology from there instead of discovering.
    pub load_cache: Option<PathBuf>,
    /// `--diff`: compare with this saved topology.
    pub diff: Option<PathBuf>,
    /// `--diffcheck`, the keys exactly as given ([`Checks::parse_keys_exact`]); `None` when
    /// not given (C's text: [`Checks::C_DEFAULT`]; `--json`: [`Checks::ALL`]).
    pub diffcheck: Option<Checks>,
    /// `--json`.
    pub json: bool,
    /// The optional output file (C: `ibnetdiscover [topology-file]`).
    pub output: Option<PathBuf>,
}

/// The clap command: ibnetdiscover's own options in C's order, then the common ones.
pub fn command() -> Command {
    let flag = |id: &'static str, short: char, long: &'static str, help: &'static str| {
        Arg::new(id)
            .short(short)
            .long(long)
            .help(help)
            .action(ArgAction::SetTrue)
    };
    let file = |id: &'static str, help: &'static str| {
        Arg::new(id)
            .long(id)
            .value_name("file")
            .value_parser(clap::value_parser!(PathBuf))
            .help(help)
    };
    let cmd = Command::new("ibnetdiscover")
        .about("Discover the InfiniBand fabric and print its topology")
        .override_usage("ibnetdiscover [options] [topology-file]")
        .arg(flag(
            "full",
            'f',
            "full",
            "show full information (ports' speed and width, vlcap)",
        ))
        .arg(flag("show", 's', "show", "show more information"))
        .arg(flag("list", 'l', "list", "list of connected nodes"))
        .arg(flag("grouping", 'g', "grouping", "show grouping"))
        .arg(flag("Hca_list", 'H', "Hca_list", "list of connected CAs"))
        .arg(flag(
            "Switch_list",
            'S',
            "Switch_list",
            "list of connected switches",
        ))
        .arg(flag(
            "Router_list",
            'R',
            "Router_list",
            "list of connected routers",
        ))
        .arg(common::node_name_map_arg())
        .arg(file(
            "cache",
            "filename to cache ibnetdiscover data to",
        ))
        .arg(file(
            "load-cache",
            "filename of ibnetdiscover cache to load",
        ))
        .arg(file(
            "diff",
            "filename of ibnetdiscover cache to diff",
        ))
        .arg(
            Arg::new("diffcheck")
                .long("diffcheck")
                .value_name("key(s)")
                .help("specify checks to execute for --diff"),
        )
        .arg(flag("ports", 'p', "ports", "obtain a ports report"))
        .arg(flag(
            "max_hops",
            'm',
            "max_hops",
            "report max hops discovered by the library",
        ))
        .arg(
            Arg::new("outstanding_smps")
                .short('o')
                .long("outstanding_smps")
                .value_name("val")
                .help("specify the number of outstanding SMP's which should be issued during the scan"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("write the topology (or, with --diff, the differences) as JSON (docs/json/ibnetdiscover-v1.schema.json)"),
        )
        .arg(
            Arg::new("topology-file")
                .value_name("topology-file")
                .value_parser(clap::value_parser!(PathBuf))
                .help("write the output to this file instead of stdout"),
        );
    common::add_common_args(cmd, EXCLUDED_COMMON)
}

impl Options {
    /// Reads the parsed command line.
    pub fn from_matches(m: &ArgMatches) -> Result<Options, CliError> {
        let flag = |id: &str| m.get_flag(id);
        // C: each of -l/-H/-S/-R sets the list mask; the last one given wins.
        let mut list = ListTypes::default();
        let mut last: Option<(usize, ListTypes)> = None;
        for (id, types) in [
            (
                "list",
                ListTypes {
                    cas: true,
                    switches: true,
                    routers: true,
                },
            ),
            (
                "Hca_list",
                ListTypes {
                    cas: true,
                    ..Default::default()
                },
            ),
            (
                "Switch_list",
                ListTypes {
                    switches: true,
                    ..Default::default()
                },
            ),
            (
                "Router_list",
                ListTypes {
                    routers: true,
                    ..Default::default()
                },
            ),
        ] {
            if flag(id) {
                let at = m.index_of(id).unwrap_or(0);
                if last.map_or(true, |(i, _)| at > i) {
                    last = Some((at, types));
                }
            }
        }
        if let Some((_, t)) = last {
            list = t;
        }
        let outstanding = match m.get_one::<String>("outstanding_smps") {
            Some(v) => Some(
                u32::try_from(common::number_arg("-o", v)?)
                    .map_err(|_| CliError::Usage(format!("-o {v}: too large")))?,
            ),
            None => None,
        };
        let diffcheck = match m.get_one::<String>("diffcheck") {
            Some(keys) => Some(Checks::parse_keys_exact(keys).map_err(CliError::Usage)?),
            None => None,
        };
        let path = |id: &str| m.get_one::<PathBuf>(id).cloned();
        let opts = Options {
            common: CommonOpts::from_matches(m)?,
            full: flag("full"),
            show: flag("show"),
            list,
            group: flag("grouping"),
            ports_report: flag("ports"),
            max_hops: flag("max_hops"),
            outstanding,
            node_name_map: path("node-name-map"),
            cache: path("cache"),
            load_cache: path("load-cache"),
            diff: path("diff"),
            diffcheck,
            json: flag("json"),
            output: path("topology-file"),
        };
        if opts.json && (opts.ports_report || opts.list.any() || opts.group) && opts.diff.is_none()
        {
            return Err(CliError::Usage(
                "--json writes the whole topology: it does not combine with -p, -l, -H, -S, -R or -g"
                    .into(),
            ));
        }
        Ok(opts)
    }
}

/// `umad ibnetdiscover`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    // C's option callback rejects an unknown --diffcheck key: its message, then the usage.
    if let Some(Err(msg)) = m
        .get_one::<String>("diffcheck")
        .map(|k| Checks::parse_keys_exact(k))
    {
        eprint!("{msg}\n{}", common::c_usage(&command().name(prog)));
        return exit::USAGE;
    }
    // A bad common option (`-t 0`) is C's IBEXIT, on stdout; a failed run is reported on
    // stderr.
    let opts = match Options::from_matches(&m) {
        Ok(o) => o,
        Err(e) => return crate::dest::report(prog, &e),
    };
    match run(&opts) {
        Ok(code) => code,
        Err(CliError::Failed(m)) if m == DISCOVER_FAILED => {
            // C's IBEXIT("discover failed\n"): on stdout, with its own newline too.
            println!("{prog}: iberror: failed: {m}");
            exit::FAILURE
        }
        Err(e) => e.report(prog),
    }
}

/// C's message when libibnetdisc could not start (its port did not open).
const DISCOVER_FAILED: &str = "discover failed\n";

/// Reads a saved topology: an ibnetdisc cache file (C's `ibnetdiscover --cache`, told by
/// its magic), this tool's `--json` output (it starts with `{`) or `ibnetdiscover` text.
pub fn load_topology(path: &Path) -> Result<Fabric, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Failed(format!("can't read {}: {e}", path.display())))?;
    if ibfabric::cache::is_cache(&bytes) {
        return Fabric::from_ibnetdisc_cache(&bytes)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        CliError::Failed(format!(
            "{}: not an ibnetdisc cache, ibnetdiscover text or umad JSON",
            path.display()
        ))
    })?;
    parse_topology(&text).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))
}

/// Writes `fabric` to `path` as an ibnetdisc cache file (C's `ibnd_cache_fabric`).
pub fn write_cache(fabric: &Fabric, path: &Path) -> Result<(), CliError> {
    let failed = |why: String| {
        CliError::Failed(format!(
            "caching ibnetdiscover data to {} failed: {why}",
            path.display()
        ))
    };
    let bytes = fabric
        .to_ibnetdisc_cache()
        .map_err(|e| failed(e.to_string()))?;
    std::fs::write(path, bytes).map_err(|e| failed(e.to_string()))
}

/// Parses a saved topology's text: JSON if it starts with `{`, else `ibnetdiscover` text.
pub fn parse_topology(text: &str) -> Result<Fabric, String> {
    if text.trim_start().starts_with('{') {
        Fabric::from_json(text).map_err(|e| e.to_string())
    } else {
        Fabric::parse_ibnetdiscover(text).map_err(|e| e.to_string())
    }
}

/// Runs with parsed options; returns the exit code.
pub fn run(opts: &Options) -> Result<i32, CliError> {
    // C opens the output file, the name map and the saved topology before discovering.
    let mut file: Option<BufWriter<File>> = match &opts.output {
        Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
            CliError::Failed(format!("can't open file {} for writing: {e}", p.display()))
        })?)),
        None => None,
    };
    let names = common::open_node_name_map(opts.node_name_map.as_deref());
    let saved = opts.diff.as_deref().map(load_topology).transpose()?;
    let mut fabric = match &opts.load_cache {
        Some(p) => load_topology(p)?,
        None => discover(opts)?,
    };
    let stdout = io::stdout();
    let mut stdout = stdout.lock();
    let text_opts = WriteOptions {
        format: Format::Topology,
        show_progress: false,
        grouping: opts.group,
        full: opts.full,
        max_hops: opts.max_hops,
        node_name_map: names.as_ref(),
        date: common::ctime_now(),
    };
    // C prints -s's records on stdout while discovering, whatever the output file.
    if opts.show && !opts.json {
        let only_progress = WriteOptions {
            format: Format::List {
                ca: false,
                switch: false,
                router: false,
            },
            show_progress: true,
            ..text_opts.clone()
        };
        write_all(
            &mut stdout,
            fabric.to_ibnetdiscover(&only_progress).as_bytes(),
        )?;
    }
    let mut code = exit::OK;
    let (bytes, to_stdout) = if opts.ports_report {
        // C's ports report goes to stdout even with an output file.
        let o = WriteOptions {
            format: Format::Ports,
            ..text_opts.clone()
        };
        (fabric.to_ibnetdiscover(&o), true)
    } else if opts.list.any() {
        let o = WriteOptions {
            format: Format::List {
                ca: opts.list.cas,
                switch: opts.list.switches,
                router: opts.list.routers,
            },
            ..text_opts.clone()
        };
        (fabric.to_ibnetdiscover(&o), false)
    } else if let Some(saved) = &saved {
        let text = if opts.json {
            let checks = opts.diffcheck.map_or(Checks::ALL, Checks::or_all_types);
            let d = diff(saved, &fabric, checks);
            if !d.is_empty() {
                code = exit::DIFFERENCES;
            }
            d.to_json() + "\n"
        } else {
            let checks = opts.diffcheck.unwrap_or(Checks::C_DEFAULT);
            fabric.to_ibnetdiscover_diff(saved, checks, &text_opts)
        };
        (text, false)
    } else if opts.json {
        (fabric.to_json() + "\n", false)
    } else {
        (fabric.to_ibnetdiscover(&text_opts), false)
    };
    if opts.cache.is_some() && !opts.json && saved.is_none() {
        clean_printed(&mut fabric, opts, names.as_ref());
    }
    match (&mut file, to_stdout) {
        (Some(f), false) => write_all(f, bytes.as_bytes())?,
        _ => write_all(&mut stdout, bytes.as_bytes())?,
    }
    if let Some(f) = &mut file {
        f.flush()
            .map_err(|e| CliError::Failed(format!("write failed: {e}")))?;
    }
    stdout
        .flush()
        .map_err(|e| CliError::Failed(format!("write failed: {e}")))?;
    if let Some(p) = &opts.cache {
        write_cache(&fabric, p)?;
    }
    Ok(code)
}

/// What C's printing did to the descriptions that `--cache` then saves: rdma-core 44's
/// `remap_node_name` runs `clean_nodedesc` on `node->nodedesc` itself (in place) when the
/// map has no name for the node, and the topology output's `out_node` cleans every node's.
/// So after the topology every description is cleaned, after the ports report every one
/// the map does not name, after a list (`-l`, `-H`, `-S`, `-R`) those of the listed types
/// the map does not name. (The diff output's printed nodes are not followed: left raw.)
fn clean_printed(fabric: &mut Fabric, opts: &Options, names: Option<&ibfabric::NodeNameMap>) {
    let unmapped = |n: &Node| names.and_then(|m| m.get(n.guid)).is_none();
    let l = &opts.list;
    for n in &mut fabric.nodes {
        let printed = if opts.ports_report {
            unmapped(n)
        } else if l.any() {
            let listed = match n.node_type {
                NodeType::ChannelAdapter => l.cas,
                NodeType::Switch => l.switches,
                NodeType::Router => l.routers,
                _ => false,
            };
            listed && unmapped(n)
        } else {
            true
        };
        if printed {
            n.clean_description();
        }
    }
}

fn write_all(out: &mut dyn Write, bytes: &[u8]) -> Result<(), CliError> {
    out.write_all(bytes)
        .map_err(|e| CliError::Failed(format!("write failed: {e}")))
}

/// Discovers the fabric through the port the common options name
/// ([`ibfabric::discover::discover`]): `-o` is the window of SMPs in flight, `-t` the
/// timeout per try, `MLX_EPI` (ibdiag.conf) whether Mellanox ExtendedPortInfo is read, `-s`
/// records the progress lines. SMPs that got no answer are counted on stderr (listed with
/// `-v`, `-e` or `-d`); the fabric keeps what was learnt, as libibnetdisc's does.
fn discover(opts: &Options) -> Result<Fabric, CliError> {
    let port = opts
        .common
        .open_ibnd_port("ibnetdiscover")
        .map_err(|_| CliError::Failed(DISCOVER_FAILED.to_string()))?;
    let display = Arc::new(Mutex::new(Progress::stderr()));
    let shown = Arc::clone(&display);
    let on_node: ProgressFn = Arc::new(move |e: &ProgressEvent<'_>| {
        if let Ok(mut p) = shown.lock() {
            p.update(&format!(
                "discovering: {} nodes, {} of {} SMPs answered",
                e.nodes, e.done, e.smps
            ));
        }
    });
    let d_opts = DiscoverOptions {
        outstanding: opts.outstanding.filter(|&n| n > 0).map(|n| n as usize),
        timeout: opts
            .common
            .timeout_ms
            .map(|ms| Duration::from_millis(u64::from(ms))),
        mlx_epi: opts.common.mlx_epi,
        record_progress: opts.show,
        progress: Some(on_node),
        ..DiscoverOptions::default()
    };
    let result = {
        let rpc = ibfabric::discover::engine(port, &d_opts);
        crate::debug::attach_pipelined(&rpc);
        ibfabric::discover::discover_with(&rpc, &d_opts)
    };
    if let Ok(mut p) = display.lock() {
        p.finish();
    }
    let d = result.map_err(|e| CliError::Failed(format!("discover failed: {e}")))?;
    common::note_discovery("ibnetdiscover", &d);
    if !d.missed.is_empty() {
        eprintln!(
            "ibnetdiscover: warning: {} SMPs got no usable answer; the topology is partial",
            d.missed.len()
        );
        if opts.common.verbose > 0 || opts.common.errors {
            for m in &d.missed {
                eprintln!("  {m}");
            }
        }
    }
    Ok(d.fabric)
}
