//! `umad saquery`: query the subnet administrator, as infiniband-diags' `saquery` (same
//! options, same output byte for byte), plus `--json` (docs/json/saquery-v1.schema.json).
//!
//! Queries (name or alias, case-insensitive, as the first argument): every one of C's:
//! ClassPortInfo (CPI), NodeRecord (NR, the default), PortInfoRecord (PIR),
//! SwitchInfoRecord (SWIR), LinkRecord (LR), PathRecord (PR), MCMemberRecord (MCMR),
//! ServiceRecord (SR), InformInfoRecord (IIR), SMInfoRecord (SMIR), GUIDInfoRecord (GIR),
//! PKeyTableRecord (PKTR), LFTRecord (LFTR), SL2VLTableRecord (SL2VL),
//! VLArbitrationTableRecord (VLAR), MFTRecord (MFTR); and the commands `-N -D -L -l -G -O
//! -U -s -g -m -c -p -x -S -I --src-to-dst --sgid-to-dgid`. Multi-record answers come
//! whole through RMPP.
//!
//! Differences from C, on purpose:
//! * A malformed number option (`--slid x`) is a usage error (exit 2), where C's `strtoul`
//!   would read 0; a non-numeric `--smkey`/`--pkey`/`-q` is an error instead of a prompt.
//! * `-h` prints clap's help (on stderr, exit 2, as C).

use std::ffi::OsString;
use std::io::Write;
use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibfabric::NodeNameMap;
use ibmad::sa::{
    self, GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord,
    NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, Sl2VlRecord,
    SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use ibmad::{ClassPortInfo, Gid, Method, NodeType, SaMad};
use serde_json::{json, Map, Value};
use umad::rpc::Rpc;

use crate::common::{self, CliError, CommonOpts, Parsed};
use crate::dest::{c_strtol, c_strtoull};
use crate::exit;
use ibfabric::cnum;

/// The common options saquery does not take (C: `"DGLsy"`; `-D -G -L -s` are its own).
const EXCLUDED_COMMON: &str = "DGLsy";

/// C's default SA timeout (`DEFAULT_SA_TIMEOUT_MS`).
const DEFAULT_SA_TIMEOUT_MS: u32 = 1000;

/// `SA ClassPortInfo.CapabilityMask2`: MulticastFDBTop is supported.
const CAP_MASK2_IS_MCAST_TOP_SUP: u32 = 1 << 3;

/// PortInfo.CapabilityMask IsSM and IsSMDisabled.
const CAP_IS_SM: u32 = 1 << 1;
const CAP_SM_DISABLED: u32 = 1 << 10;

/// `NOT_DISPLAYED_STR`.
const NOT_DISPLAYED: &str = "<not displayed>";

/// errno values C exits with.
const EIO: i32 = 5;
const EINVAL: i32 = 22;
const ENONET: i32 = 64;
const ETIMEDOUT: i32 = 110;

/// The queries, in C's `query_cmds` order: (name, alias, usage, kind).
const QUERIES: &[(&str, &str, &str, Query)] = &[
    ("ClassPortInfo", "CPI", "", Query::ClassPortInfo),
    ("NodeRecord", "NR", "[lid]", Query::Node),
    (
        "PortInfoRecord",
        "PIR",
        "[[lid]/[port]/[options]]",
        Query::PortInfo,
    ),
    (
        "SL2VLTableRecord",
        "SL2VL",
        "[[lid]/[in_port]/[out_port]]",
        Query::Sl2Vl,
    ),
    (
        "PKeyTableRecord",
        "PKTR",
        "[[lid]/[port]/[block]]",
        Query::PKeyTable,
    ),
    (
        "VLArbitrationTableRecord",
        "VLAR",
        "[[lid]/[port]/[block]]",
        Query::VlArb,
    ),
    (
        "InformInfoRecord",
        "IIR",
        "[subscriber_gid]",
        Query::InformInfo,
    ),
    (
        "LinkRecord",
        "LR",
        "[[from_lid]/[from_port]] [[to_lid]/[to_port]]",
        Query::Link,
    ),
    ("ServiceRecord", "SR", "", Query::Service),
    ("PathRecord", "PR", "", Query::Path),
    ("MCMemberRecord", "MCMR", "", Query::McMember),
    ("LFTRecord", "LFTR", "[[lid]/[block]]", Query::Lft),
    (
        "MFTRecord",
        "MFTR",
        "[[mlid]/[position]/[block]]",
        Query::Mft,
    ),
    ("GUIDInfoRecord", "GIR", "[[lid]/[block]]", Query::GuidInfo),
    ("SwitchInfoRecord", "SWIR", "[lid]", Query::SwitchInfo),
    ("SMInfoRecord", "SMIR", "[lid]", Query::SmInfo),
];

/// A query type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Query {
    ClassPortInfo,
    Node,
    PortInfo,
    PKeyTable,
    InformInfo,
    Link,
    Service,
    Path,
    McMember,
    Lft,
    GuidInfo,
    SwitchInfo,
    SmInfo,
    Sl2Vl,
    VlArb,
    Mft,
}

/// What to do (C's `saquery_command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Query,
    NodeRecord,
    ClassPortInfo,
    IsSm,
    McGroups,
    McMembers,
}

/// How node records are printed (C's `node_print_desc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeDesc {
    All,
    LidOnly,
    UniqueLidOnly,
    GuidOnly,
    AllDesc,
    NameOfLid,
    NameOfGuid,
}

/// The query parameters (C's `query_params`); `None` = not given.
#[derive(Debug, Clone, Default)]
struct Params {
    service_id: u64,
    sgid: Gid,
    dgid: Gid,
    gid: Gid,
    mgid: Gid,
    slid: u16,
    dlid: u16,
    mlid: u16,
    flow_label: u32,
    hop_limit: Option<u32>,
    tclass: u8,
    reversible: Option<u32>,
    numb_path: Option<u32>,
    pkey: u16,
    qos_class: Option<u32>,
    sl: Option<u32>,
    mtu: u8,
    rate: u8,
    pkt_life: u8,
    qkey: u32,
    scope: u8,
    join_state: u8,
    proxy_join: Option<u32>,
    cpi: ClassPortInfo,
}

/// A failure that ends the run with C's message and exit code.
pub(crate) struct Exit {
    /// The exit code (an errno for a failed query).
    pub(crate) code: i32,
    /// The message for stderr.
    pub(crate) message: Option<String>,
}

impl Exit {
    fn new(code: i32, message: impl Into<String>) -> Exit {
        Exit {
            code,
            message: Some(message.into()),
        }
    }
}

/// One dumped record: C's text lines and, for `--json`, its fields.
struct Record {
    kind: &'static str,
    /// The width its field names are padded to with dots.
    width: usize,
    text: String,
    fields: Map<String, Value>,
}

impl Record {
    fn new(kind: &'static str, title: &str, width: usize) -> Record {
        Record {
            kind,
            width,
            text: format!("{title}\n"),
            fields: Map::new(),
        }
    }

    /// A `\t\t<name><dots><value>` line, the name padded with dots to the record's width.
    fn field(&mut self, name: &str, (text, value): (String, Value)) {
        let width = self.width;
        self.text.push_str(&format!("\t\t{name:.<width$}{text}\n"));
        self.fields.insert(name.to_string(), value);
    }

    /// [`Record::field`] for each of a list of fields, in order.
    fn fields<const N: usize>(&mut self, fields: [(&str, (String, Value)); N]) {
        for (name, value) in fields {
            self.field(name, value);
        }
    }

    /// A line of text only (a heading such as `\t\tRID`).
    fn line(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push('\n');
    }
}

/// A text value, in both forms.
fn text(s: String) -> (String, Value) {
    (s.clone(), json!(s))
}

/// `0x%0<digits>X` and the number.
fn hexw(v: impl Into<u64>, digits: usize) -> (String, Value) {
    let v = v.into();
    (format!("0x{v:0digits$X}"), json!(v))
}

/// `0x%X` and the number.
fn hex(v: impl Into<u64>) -> (String, Value) {
    let v = v.into();
    (format!("0x{v:X}"), json!(v))
}

/// `%u` and the number.
fn dec(v: impl Into<u64>) -> (String, Value) {
    let v = v.into();
    (v.to_string(), json!(v))
}

/// `0x%016lx`, as text in both forms (64-bit values stay exact in JSON).
fn hex64(v: u64) -> (String, Value) {
    let s = format!("0x{v:016x}");
    (s.clone(), json!(s))
}

/// A GID as glibc's `inet_ntop(AF_INET6)` writes it (embedded IPv4 for `::a.b.c.d` and
/// `::ffff:a.b.c.d`), in both forms.
fn gid(g: &Gid) -> (String, Value) {
    let s = inet_ntop6(&g.0);
    (s.clone(), json!(s))
}

/// glibc's `inet_ntop6`: the longest run (first of equals) of two or more zero words becomes
/// `::`; an address with 96 leading zero bits (but not `::`/`::1`-like short runs) or an
/// IPv4-mapped one ends in dotted IPv4.
fn inet_ntop6(raw: &[u8; 16]) -> String {
    let words: Vec<u16> = raw
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    // The longest run of zero words (the first of equal ones): (start, length).
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < 8 {
        if words[i] == 0 {
            let start = i;
            while i < 8 && words[i] == 0 {
                i += 1;
            }
            if best.map_or(true, |b| i - start > b.1) {
                best = Some((start, i - start));
            }
        } else {
            i += 1;
        }
    }
    let best = best.filter(|b| b.1 >= 2);
    let mut s = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some((b, l)) = best {
            if i >= b && i < b + l {
                if i == b {
                    s.push(':');
                }
                i += 1;
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 && best.is_some_and(|(b, l)| b == 0 && (l == 6 || (l == 5 && words[5] == 0xffff)))
        {
            s.push_str(&std::net::Ipv4Addr::new(raw[12], raw[13], raw[14], raw[15]).to_string());
            break;
        }
        s.push_str(&format!("{:x}", words[i]));
        i += 1;
    }
    if best.is_some_and(|(b, l)| b + l == 8) {
        s.push(':');
    }
    s
}

/// Parses an IPv6 GID as `inet_pton` does.
fn parse_gid(s: &str) -> Option<Gid> {
    s.parse::<Ipv6Addr>().ok().map(Gid::from)
}

/// A number option: C's `strtoul`, but junk is a usage error.
fn number(m: &ArgMatches, id: &str) -> Result<Option<u64>, CliError> {
    match m.get_one::<String>(id) {
        None => Ok(None),
        Some(v) => common::number_arg(&format!("--{id}"), v).map(Some),
    }
}

/// A GID option, or the usage error C's `inet_pton` check gives.
fn gid_opt(m: &ArgMatches, id: &str) -> Result<Option<Gid>, CliError> {
    match m.get_one::<String>(id) {
        None => Ok(None),
        Some(v) => parse_gid(v)
            .map(Some)
            .ok_or_else(|| CliError::Usage(format!("invalid GID {v:?} for --{id}"))),
    }
}

/// The command line.
fn command() -> Command {
    let mut usage = String::from(
        "[query-name] [<name> | <lid> | <guid>]\n\nSupported query names (and aliases):\n",
    );
    for (name, alias, args, _) in QUERIES {
        usage.push_str(&format!("  {name} ({alias}) {args}\n"));
    }
    usage.push_str("\n  Queries node records by default.");
    let flag = |id: &'static str, short: char, help: &'static str| {
        Arg::new(id)
            .short(short)
            .long(id)
            .action(ArgAction::SetTrue)
            .help(help)
    };
    let value = |id: &'static str, help: &'static str| Arg::new(id).long(id).num_args(1).help(help);
    let cmd = Command::new("saquery")
        .about("Query InfiniBand subnet administration attributes")
        .override_usage(format!("saquery [options] {usage}"))
        .arg(flag("p", 'p', "get PathRecord info"))
        .arg(flag("N", 'N', "get NodeRecord info"))
        .arg(flag("L", 'L', "return the Lids of the name specified"))
        .arg(flag(
            "l",
            'l',
            "return the unique Lid of the name specified",
        ))
        .arg(flag("G", 'G', "return the Guids of the name specified"))
        .arg(flag("O", 'O', "return name for the Lid specified"))
        .arg(flag("U", 'U', "return name for the Guid specified"))
        .arg(flag(
            "s",
            's',
            "return the PortInfoRecords with isSM or isSMdisabled capability mask bit on",
        ))
        .arg(flag("g", 'g', "get multicast group info"))
        .arg(flag(
            "m",
            'm',
            "get multicast member info (if multicast group specified, list member GIDs only \
             for group specified, for example 'saquery -m 0xC000')",
        ))
        .arg(flag("x", 'x', "get LinkRecord info"))
        .arg(flag("c", 'c', "get the SA's class port info"))
        .arg(flag("S", 'S', "get ServiceRecord info"))
        .arg(flag("I", 'I', "get InformInfoRecord (subscription) info"))
        .arg(flag("list", 'D', "the node desc of the CA's"))
        .arg(value(
            "src-to-dst",
            "get a PathRecord for <src:dst> where src and dst are either node names or LIDs",
        ).value_name("src:dst"))
        .arg(value(
            "sgid-to-dgid",
            "get a PathRecord for <sgid-dgid> where sgid and dgid are addresses in IPv6 format",
        ).value_name("sgid-dgid"))
        .arg(common::node_name_map_arg().help("specify a node name map file"))
        .arg(value("smkey", "SA SM_Key value for the query. If non-numeric value (like 'x') is specified then saquery will prompt for a value.  Default (when not specified here or in ibdiag.conf) is to  use SM_Key == 0 (or \"untrusted\")"))
        .arg(value("slid", "Source LID (PathRecord)").value_name("lid"))
        .arg(value("dlid", "Destination LID (PathRecord)").value_name("lid"))
        .arg(value("mlid", "Multicast LID (MCMemberRecord)").value_name("lid"))
        .arg(value("sgid", "Source GID (IPv6 format) (PathRecord)").value_name("gid"))
        .arg(value("dgid", "Destination GID (IPv6 format) (PathRecord)").value_name("gid"))
        .arg(value("gid", "Port GID (MCMemberRecord)").value_name("gid"))
        .arg(value("mgid", "Multicast GID (MCMemberRecord)").value_name("gid"))
        .arg(value("reversible", "Reversible path (PathRecord)").short('r'))
        .arg(value("numb_path", "Number of paths (PathRecord)").short('n'))
        .arg(value("pkey", "P_Key (PathRecord, MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value"))
        .arg(value("qos_class", "QoS Class (PathRecord)").short('Q'))
        .arg(value("sl", "Service level (PathRecord, MCMemberRecord)"))
        .arg(value("mtu", "MTU and selector (PathRecord, MCMemberRecord)").short('M'))
        .arg(value("rate", "Rate and selector (PathRecord, MCMemberRecord)").short('R'))
        .arg(value(
            "pkt_lifetime",
            "Packet lifetime and selector (PathRecord, MCMemberRecord)",
        ))
        .arg(value("qkey", "Q_Key (MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value").short('q'))
        .arg(value("tclass", "Traffic Class (PathRecord, MCMemberRecord)").short('T'))
        .arg(value("flow_label", "Flow Label (PathRecord, MCMemberRecord)").short('F'))
        .arg(value("hop_limit", "Hop limit (PathRecord, MCMemberRecord)").short('H'))
        .arg(value("scope", "Scope (MCMemberRecord)"))
        .arg(value("join_state", "Join state (MCMemberRecord)").short('J'))
        .arg(value("proxy_join", "Proxy join (MCMemberRecord)").short('X'))
        .arg(value("service_id", "ServiceID (PathRecord)"))
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print the records as JSON (docs/json/saquery-v1.schema.json)"),
        )
        .arg(Arg::new("args").num_args(0..).trailing_var_arg(false));
    common::add_common_args(cmd, EXCLUDED_COMMON)
}

/// The parsed command line.
struct Options {
    common: CommonOpts,
    command: Cmd,
    query: Option<Query>,
    node_desc: NodeDesc,
    params: Params,
    args: Vec<String>,
    src_dst: Option<(String, String)>,
    node_name_map: Option<PathBuf>,
    sm_key: u64,
    json: bool,
}

/// The query of `name` (name or alias, case-insensitive).
fn find_query(name: &str) -> Option<Query> {
    QUERIES
        .iter()
        .find(|(n, a, _, _)| n.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(name))
        .map(|q| q.3)
}

fn parse_options(m: &ArgMatches) -> Result<Options, Exit> {
    let usage = |e: CliError| Exit::new(exit::USAGE, format!("saquery: {e}"));
    let common = CommonOpts::from_matches(m).map_err(|e| match e {
        // C's IBEXIT (`-t 0`): `saquery: iberror: failed: ...` on stdout.
        CliError::Failed(_) => Exit {
            code: crate::dest::report("saquery", &e),
            message: None,
        },
        CliError::Usage(_) => Exit {
            code: e.exit_code(),
            message: Some(format!("saquery: {e}")),
        },
    })?;
    let mut params = Params::default();
    let mut cmd = Cmd::Query;
    let mut query = None;
    let mut node_desc = NodeDesc::All;
    let mut src_dst = None;
    // The flags in command-line order: each does what C's `process_opt` does, the later
    // ones overriding the earlier.
    let mut flags: Vec<(usize, &str)> = Vec::new();
    for id in [
        "p",
        "N",
        "L",
        "l",
        "G",
        "O",
        "U",
        "s",
        "g",
        "m",
        "x",
        "c",
        "S",
        "I",
        "list",
        "src-to-dst",
        "sgid-to-dgid",
    ] {
        if m.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            for i in m.indices_of(id).into_iter().flatten() {
                flags.push((i, id));
            }
        }
    }
    flags.sort();
    let show_usage = || Exit {
        code: exit::USAGE,
        message: Some(usage_text()),
    };
    for (_, id) in flags {
        match id {
            "p" => query = Some(Query::Path),
            "N" => cmd = Cmd::NodeRecord,
            "L" => (node_desc, cmd) = (NodeDesc::LidOnly, Cmd::NodeRecord),
            "l" => (node_desc, cmd) = (NodeDesc::UniqueLidOnly, Cmd::NodeRecord),
            "G" => (node_desc, cmd) = (NodeDesc::GuidOnly, Cmd::NodeRecord),
            "O" => (node_desc, cmd) = (NodeDesc::NameOfLid, Cmd::NodeRecord),
            "U" => (node_desc, cmd) = (NodeDesc::NameOfGuid, Cmd::NodeRecord),
            "list" => (node_desc, cmd) = (NodeDesc::AllDesc, Cmd::NodeRecord),
            "s" => cmd = Cmd::IsSm,
            "g" => cmd = Cmd::McGroups,
            "m" => cmd = Cmd::McMembers,
            "x" => query = Some(Query::Link),
            "c" => cmd = Cmd::ClassPortInfo,
            "S" => query = Some(Query::Service),
            "I" => query = Some(Query::InformInfo),
            "src-to-dst" => {
                let v = m.get_one::<String>(id).expect("a value");
                let (s, d) = v.split_once(':').ok_or_else(show_usage)?;
                src_dst = Some((s.to_string(), d.to_string()));
                params.numb_path = Some(0x7f);
                query = Some(Query::Path);
            }
            "sgid-to-dgid" => {
                let v = m.get_one::<String>(id).expect("a value");
                let (s, d) = v.split_once('-').ok_or_else(show_usage)?;
                params.sgid = parse_gid(s).ok_or_else(show_usage)?;
                params.dgid = parse_gid(d).ok_or_else(show_usage)?;
                params.numb_path = Some(0x7f);
                query = Some(Query::Path);
            }
            _ => unreachable!("listed above"),
        }
    }
    let num = |id: &str| number(m, id).map_err(usage);
    let n32 = |id: &str| num(id).map(|v| v.map(|v| v as u32));
    if let Some(v) = num("slid")? {
        params.slid = v as u16;
    }
    if let Some(v) = num("dlid")? {
        params.dlid = v as u16;
    }
    if let Some(v) = num("mlid")? {
        params.mlid = v as u16;
    }
    for (id, slot) in [
        ("sgid", &mut params.sgid),
        ("dgid", &mut params.dgid),
        ("gid", &mut params.gid),
        ("mgid", &mut params.mgid),
    ] {
        if let Some(g) = gid_opt(m, id).map_err(|_| show_usage())? {
            *slot = g;
        }
    }
    if let Some(v) = n32("reversible")? {
        params.reversible = Some(v);
    }
    if let Some(v) = n32("numb_path")? {
        params.numb_path = Some(v);
    }
    if let Some(v) = num("pkey")? {
        params.pkey = v as u16;
    }
    if let Some(v) = n32("qos_class")? {
        params.qos_class = Some(v);
    }
    if let Some(v) = n32("sl")? {
        params.sl = Some(v);
    }
    if let Some(v) = num("mtu")? {
        params.mtu = v as u8;
    }
    if let Some(v) = num("rate")? {
        params.rate = v as u8;
    }
    if let Some(v) = num("pkt_lifetime")? {
        params.pkt_life = v as u8;
    }
    if let Some(v) = n32("qkey")? {
        params.qkey = v;
    }
    if let Some(v) = num("tclass")? {
        params.tclass = v as u8;
    }
    if let Some(v) = n32("flow_label")? {
        params.flow_label = v;
    }
    if let Some(v) = n32("hop_limit")? {
        params.hop_limit = Some(v);
    }
    if let Some(v) = num("scope")? {
        params.scope = v as u8;
    }
    if let Some(v) = num("join_state")? {
        params.join_state = v as u8;
    }
    if let Some(v) = n32("proxy_join")? {
        params.proxy_join = Some(v);
    }
    if let Some(v) = num("service_id")? {
        params.service_id = v;
    }
    let sm_key = num("smkey")?.unwrap_or(common.sa_key);
    let mut args: Vec<String> = m
        .get_many::<String>("args")
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if query.is_none() && cmd == Cmd::Query {
        match args.first().and_then(|a| find_query(a)) {
            Some(q) => {
                query = Some(q);
                args.remove(0);
            }
            None => query = Some(Query::Node),
        }
    }
    if matches!(
        node_desc,
        NodeDesc::LidOnly | NodeDesc::UniqueLidOnly | NodeDesc::GuidOnly
    ) && args.is_empty()
    {
        return Err(with_usage("ERROR: name not specified"));
    }
    if node_desc == NodeDesc::NameOfLid {
        let Some(a) = args.first() else {
            return Err(with_usage("ERROR: lid not specified"));
        };
        if c_strtoull(a) as u16 == 0 {
            return Err(with_usage("ERROR: lid invalid"));
        }
    }
    if node_desc == NodeDesc::NameOfGuid && args.is_empty() {
        return Err(with_usage("ERROR: guid not specified"));
    }
    Ok(Options {
        common,
        command: cmd,
        query,
        node_desc,
        params,
        args,
        src_dst,
        node_name_map: m.get_one::<PathBuf>("node-name-map").cloned(),
        sm_key,
        json: m.get_flag("json"),
    })
}

/// C's `ibdiag_show_usage` text ([`common::c_usage`]) as an [`Exit`] message (which gets
/// its last newline when printed).
fn usage_text() -> String {
    let usage = common::c_usage(&command());
    usage.strip_suffix('\n').unwrap_or(&usage).to_string()
}

/// An `ERROR: ...` line and then the usage, exit 2 (C's `ibdiag_show_usage`).
fn with_usage(line: &str) -> Exit {
    Exit::new(exit::USAGE, format!("{line}\n{}", usage_text()))
}

/// Runs `saquery`; returns the exit code.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    let result = parse_options(&m).and_then(|o| run(&o));
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            if let Some(msg) = e.message {
                eprintln!("{msg}");
            }
            e.code
        }
    }
}

/// The SA session: the port, the SM key and the records' printing context.
/// infiniband-diags' `sa_query` (ibdiag_sa.c, shared by saquery and ibqueryerrors): one
/// request, no retries, `timeout` for the answer (whole, through RMPP).
pub(crate) struct Sa {
    /// The engine.
    pub(crate) rpc: Rpc,
    /// The SM_Key sent.
    pub(crate) sm_key: u64,
    /// The time the answer has.
    pub(crate) timeout: Duration,
}

impl Sa {
    /// One SA query: `method` with `template` matched on `mask`; the records, or C's message
    /// and exit code (the SA's status: `sa_report_err` and EIO; no answer: ETIMEDOUT, after
    /// C's `umad_recv failed` warning when the answer began but never completed, or never
    /// came: C's `umad_recv` timed out then, rather than the send).
    pub(crate) fn query<R: SaRecord>(
        &self,
        method: Method,
        template: &R,
        mask: u64,
    ) -> Result<Vec<R>, Exit> {
        self.query_mod(method, 0, template, mask)
    }

    /// [`Sa::query`] with an attribute modifier.
    fn query_mod<R: SaRecord>(
        &self,
        method: Method,
        attr_mod: u32,
        template: &R,
        mask: u64,
    ) -> Result<Vec<R>, Exit> {
        let mut mad = if method == Method::Get {
            SaMad::get_request(template, mask, 0)
        } else {
            SaMad::get_table_request(template, mask, 0)
        };
        let mut view = SaMad::new_unchecked(&mut mad[..]);
        view.set_sm_key(self.sm_key);
        view.header_mut().set_attr_mod(attr_mod);
        let addr = self.rpc.sa_addr().map_err(|e| {
            Exit::new(
                exit::FAILURE,
                format!("saquery: iberror: failed: Failed to bind to the SA: {e}"),
            )
        })?;
        // C dumps these on stdout; here they go to stderr (see crate::debug).
        crate::debug::dump("SA Request:\n", &mad);
        let request = self.rpc.request(mad, addr).timeout(self.timeout).retries(0);
        let expired_before = self.rpc.stats().deadline_expired;
        let response = self
            .rpc
            .call(request)
            .and_then(|c| c.into_response(self.rpc.port()))
            .map_err(|e| {
                let timed_out = matches!(e, umad::Error::TimedOut { .. });
                if timed_out && self.rpc.stats().deadline_expired > expired_before {
                    // No send completion reported the loss: C's umad_recv timed out.
                    crate::dest::ibwarn(
                        "sa_query",
                        &format!(
                            "umad_recv failed: attr {:#x}: Connection timed out\n",
                            R::ATTR_ID
                        ),
                    );
                }
                let (code, text) = if timed_out {
                    (ETIMEDOUT, "Connection timed out".to_string())
                } else {
                    (EIO, e.to_string())
                };
                Exit::new(code, format!("Query SA failed: {text}"))
            })?;
        crate::debug::dump("SA Response:\n", &response.mad);
        let bad = |e: ibmad::Error| Exit::new(EIO, format!("Query SA failed: {e}"));
        let sa = SaMad::new_checked(&response.mad[..]).map_err(bad)?;
        let status = sa.status().raw();
        if status != 0 {
            return Err(Exit::new(EIO, sa_report_err(status)));
        }
        if method == Method::Get {
            return R::parse(sa.data()).map(|r| vec![r]).map_err(bad);
        }
        sa.parse_records::<R>()
            .collect::<ibmad::Result<Vec<R>>>()
            .map_err(bad)
    }

    fn table<R: SaRecord>(&self, template: &R, mask: u64) -> Result<Vec<R>, Exit> {
        self.query(Method::GetTable, template, mask)
    }

    /// A GetTable of `R` whose template and ComponentMask `fill` sets from the
    /// `lid[/a[/b]]` argument `arg` (C's `parse_lid_and_ports`).
    fn table_by<R: SaRecord + Default>(
        &self,
        arg: Option<&String>,
        fill: impl FnOnce(&LidParts, &mut R, &mut u64),
    ) -> Result<Vec<R>, Exit> {
        let parts = LidParts::parse(self, arg)?;
        let (mut template, mut mask) = (R::default(), 0);
        fill(&parts, &mut template, &mut mask);
        self.table(&template, mask)
    }

    fn all<R: SaRecord + Default>(&self) -> Result<Vec<R>, Exit> {
        self.table(&R::default(), 0)
    }
}

/// C's `sa_report_err` line.
fn sa_report_err(status: u16) -> String {
    const SA_ERR: &[&str] = &[
        "SA_NO_ERROR",
        "SA_ERR_NO_RESOURCES",
        "SA_ERR_REQ_INVALID",
        "SA_ERR_NO_RECORDS",
        "SA_ERR_TOO_MANY_RECORDS",
        "SA_ERR_REQ_INVALID_GID",
        "SA_ERR_REQ_INSUFFICIENT_COMPONENTS",
        "SA_ERR_REQ_DENIED",
        "SA_ERR_STATUS_PRIO_SUGGESTED",
        "SA_ERR_UNKNOWN",
    ];
    const MAD_ERR: &[&str] = &[
        "MAD No invalid fields",
        "MAD Bad version",
        "MAD Method specified is not supported",
        "MAD Method/Attribute combination is not supported",
        "MAD Reserved",
        "MAD Reserved",
        "MAD Reserved",
        "MAD Invalid value in Attribute field(s) or Attribute Modifier",
        "MAD UNKNOWN ERROR",
    ];
    let st = usize::from(status & 0xff);
    let mad = if st != 0 {
        format!(
            " ({}; {}; {})",
            if st & 1 != 0 { "BUSY" } else { "" },
            if st & 2 != 0 {
                "Redirection Required"
            } else {
                ""
            },
            MAD_ERR[(st >> 2).min(MAD_ERR.len() - 1)]
        )
    } else {
        String::new()
    };
    let st = usize::from(status >> 8);
    let sa = if st != 0 {
        format!(" SA({})", SA_ERR[st.min(SA_ERR.len() - 1)])
    } else {
        String::new()
    };
    format!("ERROR: Query result returned 0x{status:04x}, {mad}{sa}")
}

/// What the run prints: text as C, or the records for `--json`.
struct Output {
    json: bool,
    text: String,
    records: Vec<Value>,
}

impl Output {
    fn text(&mut self, s: &str) {
        if !self.json {
            self.text.push_str(s);
        }
    }

    fn record(&mut self, r: Record) {
        if self.json {
            self.records
                .push(json!({ "type": r.kind, "fields": r.fields }));
        } else {
            self.text.push_str(&r.text);
        }
    }

    /// A one-value line (`-L`, `-G`, `-O`, `-U`, `-D`).
    fn value(&mut self, kind: &'static str, text: String, fields: Value) {
        if self.json {
            self.records.push(json!({ "type": kind, "fields": fields }));
        } else {
            self.text.push_str(&text);
        }
    }
}

/// A node's name: the map's, else its cleaned description (C's `remap_node_name`).
fn node_name(map: Option<&NodeNameMap>, nr: &NodeRecord) -> String {
    let desc = nr.node_description.as_str();
    NodeNameMap::remap_or_clean(map, nr.node_info.node_guid, &desc).into_owned()
}

/// C's `get_lid`: a name (starting with a letter) is looked up among the NodeRecords'
/// descriptions; anything else, the empty string too (`saquery ""`, `PIR /1`), is a LID
/// number.
fn get_lid(sa: &Sa, name: &str) -> Result<u16, Exit> {
    if name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) {
        let nodes: Vec<NodeRecord> = sa.all()?;
        return nodes
            .iter()
            .find(|n| *n.node_description.as_str() == *name)
            .map(|n| n.lid)
            .ok_or_else(|| {
                Exit::new(
                    ENONET,
                    format!("Failed to find lid for \"{name}\": Machine is not on the network"),
                )
            });
    }
    let v = c_strtol(name);
    if v <= 0 || v > i64::from(u16::MAX) {
        return Err(Exit::new(
            EINVAL,
            format!("Invalid lid specified: \"{name}\""),
        ));
    }
    Ok(v as u16)
}

/// C's `parse_lid_and_ports` result: the LID (0 = none) and the numbers after it
/// (`lid[/port1[/port2]]`), `None` when absent or empty.
#[derive(Default)]
struct LidParts {
    lid: u16,
    parts: [Option<u64>; 2],
}

impl LidParts {
    /// C's `parse_lid_and_ports` on `arg`; no argument selects nothing.
    fn parse(sa: &Sa, arg: Option<&String>) -> Result<LidParts, Exit> {
        let Some(s) = arg else {
            return Ok(LidParts::default());
        };
        let mut split = s.splitn(3, '/');
        let lid = get_lid(sa, split.next().unwrap_or(""))?;
        let mut part = || {
            let (v, end) = cnum::strtoull(split.next()?.as_bytes());
            (end > 0).then_some(v)
        };
        Ok(LidParts {
            lid,
            parts: [part(), part()],
        })
    }

    /// The LID, if one was given (not 0).
    fn lid(&self) -> Option<u16> {
        Some(self.lid).filter(|&l| l != 0)
    }

    /// Part `i` as C's `uint8_t` field, if given and not `-1` there.
    fn byte(&self, i: usize) -> Option<u8> {
        self.parts[i].map(|v| v as u8).filter(|&v| v as i8 != -1)
    }

    /// Part `i` as C's `uint16_t` field, if given and not `-1` there.
    fn word(&self, i: usize) -> Option<u16> {
        self.parts[i].map(|v| v as u16).filter(|&v| v as i16 != -1)
    }
}

/// Sets a template `field` and its ComponentMask `bit` when the value is given.
fn select<T>(mask: &mut u64, bit: u64, value: Option<T>, field: &mut T) {
    if let Some(v) = value {
        *field = v;
        *mask |= bit;
    }
}

/// A template value C counts as given: not zero (its type's default).
fn nonzero<T: Default + PartialEq>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

/// [`select_sel`] for the MTU, rate and packet-lifetime selectors of a path or multicast
/// template `$t` from the `-m`/`-r`/`--pkt_life` bytes of `$p`, with the bits of the `comp`
/// module in scope.
macro_rules! select_selectors {
    ($mask:expr, $t:ident, $p:ident) => {
        let life = comp::PACKET_LIFE_TIME_SELECTOR | comp::PACKET_LIFE_TIME;
        let (mtu, rate) = (
            comp::MTU_SELECTOR | comp::MTU,
            comp::RATE_SELECTOR | comp::RATE,
        );
        select_sel($mask, mtu, $p.mtu, &mut $t.mtu_selector, &mut $t.mtu);
        select_sel($mask, rate, $p.rate, &mut $t.rate_selector, &mut $t.rate);
        let (selector, value) = (&mut $t.packet_life_time_selector, &mut $t.packet_life_time);
        select_sel($mask, life, $p.pkt_life, selector, value);
    };
}

/// Sets a selector and its 6-bit value from C's option byte (selector in bits 7:6; 0 is not
/// given), and their ComponentMask `bits`.
fn select_sel<T: From<u8>>(
    mask: &mut u64,
    bits: u64,
    byte: u8,
    selector: &mut ibmad::types::Selector,
    value: &mut T,
) {
    if byte != 0 {
        *selector = ibmad::types::Selector::from(byte >> 6);
        *value = T::from(byte & 0x3f);
        *mask |= bits;
    }
}

/// C's `sa_get_handle` check: whether the port knows an SM to ask. If not, C's warning
/// ([`warn_no_sa`]).
pub(crate) fn sa_found(rpc: &Rpc, opts: &CommonOpts) -> bool {
    let found = rpc.sa_addr().is_ok();
    if !found {
        warn_no_sa(opts);
    }
    found
}

/// `sa_get_handle`'s `No SM/SA found on port <ca>:<port>` warning (C's test is inverted: it
/// names the CA `(null)` when none was given, and prints nothing for one that was).
fn warn_no_sa(opts: &CommonOpts) {
    let ca = if opts.ca.is_some() { "" } else { "(null)" };
    crate::dest::ibwarn(
        "sa_get_handle",
        &format!("No SM/SA found on port {ca}:{}", opts.port),
    );
}

/// saquery's end when there is no SA to ask: our reason on stderr (where C's libibumad
/// prints its `ibwarn` lines), C's warning, and C's `IBPANIC` with the `strerror(errno)` C
/// is left with: `Success` (errno 0), as C prints it without a device and, with a port but
/// no SM, on the drop-in libibumad. (Under umad2sim C says `No such file or directory`: the
/// shim's sysfs lacks files libibumad tries.)
fn no_sa(o: &Options, reason: &dyn std::fmt::Display) -> Exit {
    eprintln!("saquery: {reason}");
    warn_no_sa(&o.common);
    Exit::new(
        exit::FAILURE,
        format!(
            "ibpanic: [{}] main: Failed to bind to the SA: Success",
            std::process::id()
        ),
    )
}

fn run(o: &Options) -> Result<(), Exit> {
    let port = umad::Port::open(o.common.ca.as_deref(), o.common.port)
        .map_err(|e| no_sa(o, &format!("can't open port: {e}")))?;
    let rpc = Rpc::new(port);
    if let Err(e) = rpc.sa_addr() {
        return Err(no_sa(o, &e));
    }
    let sa = Sa {
        rpc,
        sm_key: o.sm_key,
        timeout: Duration::from_millis(u64::from(
            o.common.timeout_ms.unwrap_or(DEFAULT_SA_TIMEOUT_MS),
        )),
    };
    let map = common::open_node_name_map(o.node_name_map.as_deref());
    let map = map.as_ref();
    let mut p = o.params.clone();
    if let Some((s, d)) = &o.src_dst {
        if !s.is_empty() {
            p.slid = get_lid(&sa, s)?;
        }
        if !d.is_empty() {
            p.dlid = get_lid(&sa, d)?;
        }
    }
    if o.command == Cmd::ClassPortInfo
        || matches!(o.query, Some(Query::ClassPortInfo | Query::SwitchInfo))
    {
        p.cpi = sa
            .query(Method::Get, &ClassPortInfo::default(), 0)
            .map_err(|mut e| {
                let m = e.message.take().unwrap_or_default();
                e.message = Some(format!("{m}\nFailed to query SA:ClassPortInfo"));
                e
            })?
            .remove(0);
    }
    let mut out = Output {
        json: o.json,
        text: String::new(),
        records: Vec::new(),
    };
    let result = dispatch(o, &sa, &p, map, &mut out);
    // What was printed before a failure is printed (C prints as it goes).
    let query_name = match (o.command, o.query) {
        (Cmd::Query, Some(q)) => QUERIES
            .iter()
            .find(|e| e.3 == q)
            .map_or("NodeRecord", |e| e.0),
        (Cmd::NodeRecord, _) => "NodeRecord",
        (Cmd::ClassPortInfo, _) => "ClassPortInfo",
        (Cmd::IsSm, _) => "IsSM",
        (Cmd::McGroups, _) => "MCGroups",
        (Cmd::McMembers, _) => "MCMembers",
        (Cmd::Query, None) => "NodeRecord",
    };
    let mut stdout = std::io::stdout().lock();
    if o.json {
        if result.is_ok() || !out.records.is_empty() {
            let doc = json!({
                "schema_version": 1,
                "query": query_name,
                "records": out.records,
            });
            let _ = writeln!(
                stdout,
                "{}",
                serde_json::to_string_pretty(&doc).expect("JSON")
            );
        }
    } else {
        let _ = stdout.write_all(out.text.as_bytes());
    }
    let _ = stdout.flush();
    result
}

fn dispatch(
    o: &Options,
    sa: &Sa,
    p: &Params,
    map: Option<&NodeNameMap>,
    out: &mut Output,
) -> Result<(), Exit> {
    let args = &o.args;
    match o.command {
        Cmd::NodeRecord => return print_node_records(o, sa, map, out),
        Cmd::ClassPortInfo => {
            out.record(dump_class_port_info(&p.cpi));
            return Ok(());
        }
        Cmd::IsSm => {
            for (i, (title, cap)) in [
                ("IsSM ports", CAP_IS_SM),
                ("IsSMdisabled ports", CAP_SM_DISABLED),
            ]
            .into_iter()
            .enumerate()
            {
                let mut t = PortInfoRecord::default();
                t.port_info.capability_mask = cap;
                // Attribute modifier bit 31: match ports with any of the mask's bits.
                let recs = sa.query_mod(
                    Method::GetTable,
                    1 << 31,
                    &t,
                    sa::port_info_record::comp::CAPABILITY_MASK,
                )?;
                out.text(&format!("{}{title}\n", if i == 0 { "" } else { "\n" }));
                for r in &recs {
                    let mut d = Record::new("PortInfoRecord", "PortInfoRecord dump:", 24);
                    d.fields([
                        ("EndPortLid", dec(r.endport_lid)),
                        ("PortNum", dec(r.port_num)),
                        ("base_lid", dec(r.port_info.lid)),
                        ("master_sm_base_lid", dec(r.port_info.master_sm_lid)),
                        ("capability_mask", hex(r.port_info.capability_mask)),
                    ]);
                    d.fields.insert(
                        "section".into(),
                        json!(if i == 0 { "IsSM" } else { "IsSMdisabled" }),
                    );
                    out.record(d);
                }
            }
            return Ok(());
        }
        Cmd::McGroups => {
            for r in sa.all::<McMemberRecord>()? {
                out.record(dump_multicast_group_record(&r));
            }
            return Ok(());
        }
        Cmd::McMembers => {
            let groups: Vec<McMemberRecord> = sa.all()?;
            let nodes: Vec<NodeRecord> = sa.all()?;
            for r in &groups {
                let name = nodes
                    .iter()
                    .find(|n| n.node_info.port_guid == r.port_gid.guid())
                    .map_or_else(|| "<unknown>".to_string(), |n| node_name(map, n));
                match args.first() {
                    Some(req) => {
                        if c_strtol(req) == i64::from(r.mlid) {
                            let (g, _) = gid(&r.port_gid);
                            out.value(
                                "MCMemberRecord",
                                format!("\t\tPortGid.................{g} ({name})\n"),
                                json!({ "PortGid": g, "NodeDescription": name, "Mlid": r.mlid }),
                            );
                        }
                    }
                    None => {
                        let mut d =
                            Record::new("MCMemberRecord", "MCMemberRecord member dump:", 24);
                        d.fields([
                            ("MGID", gid(&r.mgid)),
                            ("Mlid", hex(r.mlid)),
                            ("PortGid", gid(&r.port_gid)),
                            ("ScopeState", hex(r.scope << 4 | r.join_state)),
                            ("ProxyJoin", hex(u8::from(r.proxy_join))),
                            ("NodeDescription", text(name)),
                        ]);
                        out.record(d);
                    }
                }
            }
            return Ok(());
        }
        Cmd::Query => {}
    }
    match o.query.unwrap_or(Query::Node) {
        Query::ClassPortInfo => out.record(dump_class_port_info(&p.cpi)),
        Query::Node => {
            let records = sa.table_by(args.first(), |l, t: &mut NodeRecord, m| {
                select(m, sa::node_record::comp::LID, l.lid(), &mut t.lid);
            })?;
            for r in records {
                out.record(dump_node_record(&r, map));
            }
        }
        Query::PortInfo => {
            use sa::port_info_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut PortInfoRecord, m| {
                select(m, comp::ENDPORT_LID, l.lid(), &mut t.endport_lid);
                select(m, comp::PORT_NUM, l.byte(0), &mut t.port_num);
                select(m, comp::OPTIONS, l.byte(1), &mut t.options);
            })?;
            for r in records {
                out.record(dump_one_portinfo_record(&r, o.common.show_keys));
            }
        }
        Query::Path => {
            for r in sa.table(&path_template(p).0, path_template(p).1)? {
                out.record(dump_path_record(&r));
            }
        }
        Query::McMember => {
            let (t, mask) = mcmember_template(p);
            for r in sa.table(&t, mask)? {
                out.record(dump_one_mcmember_record(&r));
            }
        }
        Query::Service => {
            for r in sa.all::<ServiceRecord>()? {
                out.record(dump_service_record(&r, o.common.show_keys));
            }
        }
        Query::SmInfo => {
            let records = sa.table_by(args.first(), |l, t: &mut SmInfoRecord, m| {
                select(m, sa::sm_info_record::comp::LID, l.lid(), &mut t.lid);
            })?;
            for r in records {
                out.record(dump_sm_info_record(&r));
            }
        }
        Query::SwitchInfo => {
            let mcast_top = p.cpi.capability_mask2 & CAP_MASK2_IS_MCAST_TOP_SUP != 0;
            let records = sa.table_by(args.first(), |l, t: &mut SwitchInfoRecord, m| {
                select(m, sa::switch_info_record::comp::LID, l.lid(), &mut t.lid);
            })?;
            for r in records {
                out.record(dump_switch_info_record(&r, mcast_top));
            }
        }
        Query::InformInfo => {
            let mut t = InformInfoRecord::default();
            let mut mask = 0;
            if let Some(a) = args.first() {
                t.subscriber_gid = parse_gid(a).ok_or_else(|| {
                    Exit::new(EINVAL, format!("Invalid SubscriberGID specified: \"{a}\""))
                })?;
                mask = sa::inform_info::comp::SUBSCRIBER_GID;
            }
            for r in sa.table(&t, mask)? {
                out.record(dump_inform_info_record(&r, o.common.show_keys));
            }
        }
        Query::Link => {
            let (from, to) = (
                LidParts::parse(sa, args.first())?,
                LidParts::parse(sa, args.get(1))?,
            );
            let mut t = LinkRecord::default();
            let mut mask = 0;
            use sa::link_record::comp;
            select(&mut mask, comp::FROM_LID, from.lid(), &mut t.from_lid);
            select(&mut mask, comp::FROM_PORT, from.byte(0), &mut t.from_port);
            select(&mut mask, comp::TO_LID, to.lid(), &mut t.to_lid);
            select(&mut mask, comp::TO_PORT, to.byte(0), &mut t.to_port);
            for r in sa.table(&t, mask)? {
                let mut d = Record::new("LinkRecord", "LinkRecord dump:", 27);
                d.fields([
                    ("FromLID", dec(r.from_lid)),
                    ("FromPort", dec(r.from_port)),
                    ("ToPort", dec(r.to_port)),
                    ("ToLID", dec(r.to_lid)),
                ]);
                out.record(d);
            }
        }
        Query::GuidInfo => {
            use sa::guid_info_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut GuidInfoRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(m, comp::BLOCK_NUM, l.byte(0), &mut t.block_num);
            })?;
            for r in records {
                let mut d = Record::new("GUIDInfoRecord", "GUIDInfo Record dump:", 27);
                d.fields([("LID", dec(r.lid)), ("Block", dec(r.block_num))]);
                for (i, g) in r.guid_info.guids.iter().enumerate() {
                    d.field(&format!("GUID {i}"), hex64(*g));
                }
                out.record(d);
            }
        }
        Query::PKeyTable => {
            use sa::pkey_table_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut PKeyTableRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(m, comp::PORT_NUM, l.byte(0), &mut t.port_num);
                select(m, comp::BLOCK_NUM, l.word(1), &mut t.block_num);
            })?;
            for r in records {
                let mut d = Record::new("PKeyTableRecord", "PKeyTableRecord dump:", 27);
                // C prints the BlockNum field as a native u16, not from network order
                // (opensm fills it in host order): the same bytes, read as C reads them.
                let block = u16::from_ne_bytes(r.block_num.to_be_bytes());
                d.fields([
                    ("LID", dec(r.lid)),
                    ("Port", dec(r.port_num)),
                    ("Block", dec(block)),
                ]);
                d.line("\t\tPKey Table:");
                for row in r.pkey_table.pkeys.chunks(8) {
                    let cells: Vec<String> = row.iter().map(|k| format!("0x{k:04x}")).collect();
                    d.line(&format!("\t\t{}", cells.join(" ")));
                }
                d.text.push('\n');
                d.fields
                    .insert("PKeys".into(), json!(r.pkey_table.pkeys.to_vec()));
                out.record(d);
            }
        }
        Query::Lft => {
            use sa::lft_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut LftRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(m, comp::BLOCK_NUM, l.word(0), &mut t.block_num);
            })?;
            for r in records {
                let mut d = Record::new("LFTRecord", "LFT Record dump:", 27);
                d.fields([("LID", dec(r.lid)), ("Block", dec(r.block_num))]);
                d.line("\t\tLFT:\n\t\tLID\tPort Number");
                let ports = r.lft.ports;
                for (i, port) in ports.iter().enumerate() {
                    d.line(&format!(
                        "\t\t{}\t{port}",
                        usize::from(r.block_num) * 64 + i
                    ));
                }
                d.text.push('\n');
                d.fields.insert("LFT".into(), json!(ports.to_vec()));
                out.record(d);
            }
        }
        Query::Sl2Vl => {
            use sa::sl2vl_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut Sl2VlRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(m, comp::IN_PORT, l.byte(0), &mut t.input_port);
                select(m, comp::OUT_PORT, l.byte(1), &mut t.output_port);
            })?;
            for r in records {
                let mut d = Record::new("SL2VLTableRecord", "SL2VLTableRecord dump:", 27);
                d.fields([
                    ("LID", dec(r.lid)),
                    ("InPort", dec(r.input_port)),
                    ("OutPort", dec(r.output_port)),
                ]);
                d.line("\t\tSL: 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|");
                let vls: String = r.table.vls.iter().map(|v| format!("{v:2}|")).collect();
                d.line(&format!("\t\tVL:{vls}"));
                d.fields.insert("VL".into(), json!(r.table.vls.to_vec()));
                out.record(d);
            }
        }
        Query::VlArb => {
            use sa::vl_arb_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut VlArbRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(m, comp::OUT_PORT, l.byte(0), &mut t.output_port);
                select(m, comp::BLOCK, l.byte(1), &mut t.block_num);
            })?;
            for r in records {
                let mut d = Record::new("VLArbitrationTableRecord", "VLArbTableRecord dump:", 27);
                d.fields([
                    ("LID", dec(r.lid)),
                    ("Port", dec(r.output_port)),
                    ("Block", dec(r.block_num)),
                ]);
                // C prints the whole VL byte (the reserved bits too) and the weight.
                let vl = |e: &ibmad::attr::VlArbEntry| (e.reserved & 0xf) << 4 | (e.vl & 0xf);
                for half in r.table.entries.chunks(16) {
                    let vls: String = half.iter().map(|e| format!("{:2}|", vl(e))).collect();
                    let ws: String = half.iter().map(|e| format!("{:2}|", e.weight)).collect();
                    d.line(&format!("\t\tVL    :{vls}"));
                    d.line(&format!("\t\tWeight:{ws}"));
                }
                d.fields.insert(
                    "VL".into(),
                    json!(r.table.entries.iter().map(vl).collect::<Vec<u8>>()),
                );
                d.fields.insert(
                    "Weight".into(),
                    json!(r
                        .table
                        .entries
                        .iter()
                        .map(|e| e.weight)
                        .collect::<Vec<u8>>()),
                );
                out.record(d);
            }
        }
        Query::Mft => {
            use sa::mft_record::comp;
            let records = sa.table_by(args.first(), |l, t: &mut MftRecord, m| {
                select(m, comp::LID, l.lid(), &mut t.lid);
                select(
                    m,
                    comp::BLOCK,
                    l.word(1).map(|v| v & 0x1ff),
                    &mut t.block_num,
                );
                select(
                    m,
                    comp::POSITION,
                    l.byte(0).map(|v| v & 0xf),
                    &mut t.position,
                );
            })?;
            for r in records {
                let mut d = Record::new("MFTRecord", "MFT Record dump:", 27);
                d.fields([
                    ("LID", dec(r.lid)),
                    ("Position", dec(r.position)),
                    ("Block", dec(r.block_num)),
                ]);
                d.line("\t\tMFT:\n\t\tMLID\tPort Mask");
                let base = 0xc000 + u32::from(r.block_num) * 32;
                for (i, m) in r.mft.port_masks.iter().enumerate() {
                    d.line(&format!("\t\t0x{:04x}\t0x{m:04x}", base + i as u32));
                }
                d.text.push('\n');
                d.fields
                    .insert("MFT".into(), json!(r.mft.port_masks.to_vec()));
                out.record(d);
            }
        }
    }
    Ok(())
}

/// C's `print_node_records`: every NodeRecord, filtered and printed as `-N -D -L -l -G -O
/// -U` ask.
fn print_node_records(
    o: &Options,
    sa: &Sa,
    map: Option<&NodeNameMap>,
    out: &mut Output,
) -> Result<(), Exit> {
    let nodes: Vec<NodeRecord> = sa.all()?;
    let requested = o.args.first();
    if o.node_desc == NodeDesc::AllDesc {
        out.text("   LID \"name\"\n================\n");
    }
    for nr in &nodes {
        match o.node_desc {
            NodeDesc::AllDesc => {
                if nr.node_info.node_type == NodeType::ChannelAdapter {
                    let name = node_name(map, nr);
                    out.value(
                        "NodeRecord",
                        format!("{:6}  \"{name}\"\n", nr.lid),
                        json!({ "lid": nr.lid, "NodeDescription": name }),
                    );
                }
            }
            NodeDesc::NameOfLid => {
                let want = c_strtoull(requested.expect("checked")) as u16;
                if nr.lid == want {
                    print_node_record(o.node_desc, nr, map, out);
                }
            }
            NodeDesc::NameOfGuid => {
                let want = c_strtoull(requested.expect("checked"));
                if nr.node_info.port_guid == want {
                    print_node_record(o.node_desc, nr, map, out);
                }
            }
            _ => {
                let name = node_name(map, nr);
                let desc = nr.node_description.as_str();
                let matches = requested.map_or(true, |r| *r == *desc || *r == name);
                if matches {
                    print_node_record(o.node_desc, nr, map, out);
                    if o.node_desc == NodeDesc::UniqueLidOnly {
                        return Ok(());
                    }
                }
            }
        }
    }
    Ok(())
}

/// C's `print_node_record`.
fn print_node_record(how: NodeDesc, nr: &NodeRecord, map: Option<&NodeNameMap>, out: &mut Output) {
    match how {
        NodeDesc::LidOnly | NodeDesc::UniqueLidOnly => {
            out.value(
                "NodeRecord",
                format!("{}\n", nr.lid),
                json!({ "lid": nr.lid }),
            );
        }
        NodeDesc::GuidOnly => {
            let g = format!("0x{:016x}", nr.node_info.port_guid);
            out.value("NodeRecord", format!("{g}\n"), json!({ "port_guid": g }));
        }
        NodeDesc::NameOfLid | NodeDesc::NameOfGuid => {
            let name = node_name(map, nr);
            out.value(
                "NodeRecord",
                format!("{name}\n"),
                json!({ "NodeDescription": name }),
            );
        }
        _ => out.record(dump_node_record(nr, map)),
    }
}

fn dump_node_record(nr: &NodeRecord, map: Option<&NodeNameMap>) -> Record {
    let ni = &nr.node_info;
    let ty = match ni.node_type {
        NodeType::ChannelAdapter | NodeType::Switch | NodeType::Router => ni.node_type.to_string(),
        NodeType::Unknown(_) => "UNKNOWN".to_string(),
    };
    let mut d = Record::new("NodeRecord", "NodeRecord dump:", 24);
    d.fields([
        ("lid", dec(nr.lid)),
        ("reserved", hex(nr.reserved)),
        ("base_version", hex(ni.base_version)),
        ("class_version", hex(ni.class_version)),
        ("node_type", text(ty)),
        ("num_ports", dec(ni.num_ports)),
        ("sys_guid", hex64(ni.system_image_guid)),
        ("node_guid", hex64(ni.node_guid)),
        ("port_guid", hex64(ni.port_guid)),
        ("partition_cap", hex(ni.partition_cap)),
        ("device_id", hex(ni.device_id)),
        ("revision", hex(ni.revision)),
        ("port_num", dec(ni.local_port_num)),
        ("vendor_id", hex(ni.vendor_id)),
        ("NodeDescription", text(node_name(map, nr))),
    ]);
    d
}

/// C's `dump_one_portinfo_record`: the record's ID, then the whole PortInfo as
/// infiniband-diags' `dump_portinfo` prints it (libibmad's field dump, two tabs in; the
/// M_Key hidden unless `-K`).
fn dump_one_portinfo_record(r: &PortInfoRecord, show_keys: bool) -> Record {
    use ibmad::dump;
    let mut d = Record::new("PortInfoRecord", "PortInfoRecord dump:", 24);
    d.line("\tRID");
    d.fields([
        ("EndPortLid", dec(r.endport_lid)),
        ("PortNum", dec(r.port_num)),
        ("Options", (format!("0x{:x}", r.options), json!(r.options))),
    ]);
    d.line("\tPortInfo dump:");
    let mut raw = [0u8; ibmad::PortInfo::LEN];
    r.port_info.emit(&mut raw);
    for f in dump::PORT_INFO {
        let value = dump::get_bits(&raw, f.offset, f.width);
        if f.name == dump::PORT_INFO_MKEY && !show_keys {
            d.line(&format!("\t\t{}{NOT_DISPLAYED}", dump::label(f.name)));
            d.fields.insert(f.name.into(), json!(NOT_DISPLAYED));
            continue;
        }
        d.line(&format!(
            "\t\t{}",
            dump::field_line(f.name, f.fmt, f.width, value)
        ));
        crate::debug::value_warning(f.fmt, value);
        let v = if f.width > 32 {
            json!(format!("0x{value:016x}"))
        } else {
            json!(value)
        };
        d.fields.insert(f.name.into(), v);
    }
    d
}

fn dump_class_port_info(c: &ClassPortInfo) -> Record {
    let redirect_tsf =
        u32::from(c.redirect_tc) << 24 | u32::from(c.redirect_sl) << 20 | c.redirect_fl;
    let qp = u32::from(c.reserved_32) << 24 | c.redirect_qp;
    let trap_tsf = u32::from(c.trap_tc) << 24 | u32::from(c.trap_sl) << 20 | c.trap_fl;
    let hq = u32::from(c.trap_hl) << 24 | c.trap_qp;
    let mut d = Record::new("ClassPortInfo", "SA ClassPortInfo:", 25);
    d.fields([
        ("Base version", dec(c.base_version)),
        ("Class version", dec(c.class_version)),
        ("Capability mask", hexw(c.capability_mask, 4)),
        ("Capability mask 2", hexw(c.capability_mask2, 8)),
        ("Response time value", hexw(c.resp_time_value, 2)),
        ("Redirect GID", gid(&c.redirect_gid)),
        ("Redirect TC/SL/FL", hexw(redirect_tsf, 8)),
        ("Redirect LID", dec(c.redirect_lid)),
        ("Redirect PKey", hexw(c.redirect_pkey, 4)),
        ("Redirect QP", hexw(qp, 8)),
        ("Redirect QKey", hexw(c.redirect_qkey, 8)),
        ("Trap GID", gid(&c.trap_gid)),
        ("Trap TC/SL/FL", hexw(trap_tsf, 8)),
        ("Trap LID", dec(c.trap_lid)),
        ("Trap PKey", hexw(c.trap_pkey, 4)),
        ("Trap HL/QP", hexw(hq, 8)),
        ("Trap QKey", hexw(c.trap_qkey, 8)),
    ]);
    d
}

/// C's `query_path_records` template and ComponentMask.
fn path_template(p: &Params) -> (PathRecord, u64) {
    use sa::path_record::comp;
    let mut t = PathRecord::default();
    let mut mask = 0;
    select(
        &mut mask,
        comp::SERVICE_ID,
        nonzero(p.service_id),
        &mut t.service_id,
    );
    select(&mut mask, comp::SGID, nonzero(p.sgid), &mut t.sgid);
    select(&mut mask, comp::DGID, nonzero(p.dgid), &mut t.dgid);
    select(&mut mask, comp::SLID, nonzero(p.slid), &mut t.slid);
    select(&mut mask, comp::DLID, nonzero(p.dlid), &mut t.dlid);
    // C stores the hop limit as the whole 32-bit word, then ORs the flow label in.
    let mut raw: u32 = 0;
    if let Some(h) = p.hop_limit.filter(|&h| h as i32 != -1) {
        raw = h;
        mask |= comp::HOP_LIMIT;
    }
    if p.flow_label as u8 != 0 {
        mask |= comp::FLOW_LABEL;
    }
    raw |= u32::from(p.flow_label as u8) << 8;
    t.raw_traffic = raw >> 31 != 0;
    t.reserved_44 = ((raw >> 28) & 7) as u8;
    t.flow_label = (raw >> 8) & 0xf_ffff;
    t.hop_limit = raw as u8;
    select(&mut mask, comp::TCLASS, nonzero(p.tclass), &mut t.tclass);
    let mut reversible = 0u8;
    if let Some(r) = p.reversible.filter(|&r| r as i8 != -1) {
        reversible = r as u8;
        mask |= comp::REVERSIBLE;
    }
    let mut num_path = 0u8;
    if let Some(n) = p.numb_path.filter(|&n| n as i8 != -1) {
        num_path = n as u8;
        mask |= comp::NUMB_PATH;
    }
    num_path |= reversible << 7;
    t.reversible = num_path >> 7 != 0;
    t.numb_path = num_path & 0x7f;
    select(&mut mask, comp::P_KEY, nonzero(p.pkey), &mut t.p_key);
    let mut qos_sl: u16 = 0;
    if let Some(sl) = p.sl.filter(|&s| s as i16 != -1) {
        qos_sl = sl as u16;
        mask |= comp::SL;
    }
    let mut qos_class = 0u16;
    if let Some(q) = p.qos_class.filter(|&q| q as i32 != -1) {
        qos_class = q as u16;
        mask |= comp::QOS_CLASS;
    }
    // ib_path_rec_set_qos_class keeps the SL bits of the word and sets the class.
    qos_sl = (qos_sl & 0xf) | (qos_class << 4);
    t.qos_class = qos_sl >> 4;
    t.sl = (qos_sl & 0xf) as u8;
    select_selectors!(&mut mask, t, p);
    (t, mask)
}

/// A selector and a 6-bit value as the byte C prints.
fn sel_byte(s: ibmad::types::Selector, v: u8) -> u8 {
    u8::from(s) << 6 | (v & 0x3f)
}

fn dump_path_record(r: &PathRecord) -> Record {
    let raw = u32::from(r.raw_traffic) << 31
        | u32::from(r.reserved_44 & 7) << 28
        | (r.flow_label & 0xf_ffff) << 8
        | u32::from(r.hop_limit);
    let resv: String = r.reserved_58.iter().map(|b| format!("{b:02X}")).collect();
    let mut d = Record::new("PathRecord", "PathRecord dump:", 24);
    d.fields([
        ("service_id", hex64(r.service_id)),
        ("dgid", gid(&r.dgid)),
        ("sgid", gid(&r.sgid)),
        ("dlid", dec(r.dlid)),
        ("slid", dec(r.slid)),
        ("hop_flow_raw", hex(raw)),
        ("tclass", hex(r.tclass)),
        (
            "num_path_revers",
            hex(u8::from(r.reversible) << 7 | (r.numb_path & 0x7f)),
        ),
        ("pkey", hex(r.p_key)),
        ("qos_class", hex(r.qos_class)),
        ("sl", hex(r.sl)),
        ("mtu", hex(sel_byte(r.mtu_selector, u8::from(r.mtu)))),
        ("rate", hex(sel_byte(r.rate_selector, u8::from(r.rate)))),
        (
            "pkt_life",
            hex(sel_byte(r.packet_life_time_selector, r.packet_life_time)),
        ),
        ("preference", hex(r.preference)),
        ("resv2", text(format!("0x{resv}"))),
    ]);
    d
}

/// C's `query_mcmember_records` template and ComponentMask.
fn mcmember_template(p: &Params) -> (McMemberRecord, u64) {
    use sa::mc_member_record::comp;
    let mut t = McMemberRecord::default();
    let mut mask = 0;
    select(&mut mask, comp::MGID, nonzero(p.mgid), &mut t.mgid);
    select(&mut mask, comp::PORT_GID, nonzero(p.gid), &mut t.port_gid);
    select(&mut mask, comp::MLID, nonzero(p.mlid), &mut t.mlid);
    select(&mut mask, comp::Q_KEY, nonzero(p.qkey), &mut t.q_key);
    select_selectors!(&mut mask, t, p);
    select(&mut mask, comp::TCLASS, nonzero(p.tclass), &mut t.tclass);
    select(&mut mask, comp::P_KEY, nonzero(p.pkey), &mut t.p_key);
    if let Some(sl) = p.sl.filter(|&s| s as i8 != -1) {
        t.sl = sl as u8 & 0xf;
        mask |= comp::SL;
    }
    if p.flow_label as u8 != 0 {
        t.flow_label = u32::from(p.flow_label as u8);
        mask |= comp::FLOW_LABEL;
    }
    if let Some(h) = p.hop_limit.filter(|&h| h as i8 != -1) {
        t.hop_limit = h as u8;
        mask |= comp::HOP_LIMIT;
    }
    if p.scope != 0 {
        t.scope = p.scope & 0xf;
        mask |= comp::SCOPE;
    }
    if p.join_state != 0 {
        t.join_state = p.join_state & 0xf;
        mask |= comp::JOIN_STATE;
    }
    if let Some(x) = p.proxy_join.filter(|&x| x as i8 != -1) {
        t.proxy_join = x as u8 & 0x80 != 0;
        mask |= comp::PROXY_JOIN;
    }
    (t, mask)
}

fn dump_one_mcmember_record(r: &McMemberRecord) -> Record {
    let mut d = Record::new("MCMemberRecord", "MCMember Record dump:", 24);
    d.fields([("MGID", gid(&r.mgid)), ("PortGid", gid(&r.port_gid))]);
    let lower = |(t, v): (String, Value)| (t.to_lowercase().replace("0X", "0x"), v);
    d.fields([
        ("qkey", lower(hex(r.q_key))),
        ("mlid", lower(hex(r.mlid))),
        ("mtu", lower(hex(sel_byte(r.mtu_selector, u8::from(r.mtu))))),
        ("TClass", lower(hex(r.tclass))),
        ("pkey", lower(hex(r.p_key))),
        (
            "rate",
            lower(hex(sel_byte(r.rate_selector, u8::from(r.rate)))),
        ),
        (
            "pkt_life",
            lower(hex(sel_byte(
                r.packet_life_time_selector,
                r.packet_life_time,
            ))),
        ),
        ("SL", lower(hex(r.sl))),
        ("FlowLabel", lower(hex(r.flow_label))),
        ("HopLimit", lower(hex(r.hop_limit))),
        ("Scope", lower(hex(r.scope))),
        ("JoinState", lower(hex(r.join_state))),
    ]);
    // C prints the whole ProxyJoin byte (bit 7 and the reserved bits).
    d.field(
        "ProxyJoin",
        lower(hex(u8::from(r.proxy_join) << 7 | (r.reserved_49 & 0x7f))),
    );
    d
}

fn dump_multicast_group_record(r: &McMemberRecord) -> Record {
    let mut d = Record::new("MCMemberRecord", "MCMemberRecord group dump:", 24);
    d.fields([
        ("MGID", gid(&r.mgid)),
        ("Mlid", hex(r.mlid)),
        ("Mtu", hex(sel_byte(r.mtu_selector, u8::from(r.mtu)))),
        ("pkey", hex(r.p_key)),
        ("Rate", hex(sel_byte(r.rate_selector, u8::from(r.rate)))),
        ("SL", hex(r.sl)),
    ]);
    d
}

fn dump_service_record(r: &ServiceRecord, show_keys: bool) -> Record {
    let mut d = Record::new("ServiceRecord", "ServiceRecord dump:", 24);
    d.fields([
        ("ServiceID", hex64(r.service_id)),
        ("ServiceGID", gid(&r.service_gid)),
        ("ServiceP_Key", hex(r.service_p_key)),
        ("ServiceLease", hex(r.service_lease)),
    ]);
    let key: String = r.service_key.iter().map(|b| format!("{b:02x}")).collect();
    let key = if show_keys {
        format!("0x{key}")
    } else {
        NOT_DISPLAYED.to_string()
    };
    d.field("ServiceKey", text(key));
    let end = r.service_name.iter().position(|&b| b == 0).unwrap_or(64);
    let name = String::from_utf8_lossy(&r.service_name[..end]).into_owned();
    d.field("ServiceName", text(name));
    for (i, b) in r.service_data8.iter().enumerate() {
        d.field(&format!("ServiceData8.{}", i + 1), hex(*b));
    }
    for (i, b) in r.service_data16.iter().enumerate() {
        d.field(&format!("ServiceData16.{}", i + 1), hex(*b));
    }
    for (i, b) in r.service_data32.iter().enumerate() {
        d.field(&format!("ServiceData32.{}", i + 1), hex(*b));
    }
    for (i, b) in r.service_data64.iter().enumerate() {
        d.field(&format!("ServiceData64.{}", i + 1), hex64(*b));
    }
    d
}

fn dump_sm_info_record(r: &SmInfoRecord) -> Record {
    let mut d = Record::new("SMInfoRecord", "SMInfoRecord dump:", 22);
    d.line("\t\tRID");
    d.field("LID", dec(r.lid));
    d.line("\t\tSMInfo dump:");
    d.fields([
        ("GUID", hex64(r.sm_info.guid)),
        ("SM_Key", hex64(r.sm_info.sm_key)),
        ("ActCount", dec(r.sm_info.act_count)),
        ("Priority", dec(r.sm_info.priority)),
        ("SMState", dec(u8::from(r.sm_info.sm_state))),
    ]);
    d
}

fn dump_switch_info_record(r: &SwitchInfoRecord, mcast_top: bool) -> Record {
    let s = &r.switch_info;
    let life = (s.life_time_value & 0x1f) << 3
        | u8::from(s.port_state_change) << 2
        | (s.optimized_sl2vl_mapping_programming & 3);
    let flags = u8::from(s.inbound_enforcement_cap) << 7
        | u8::from(s.outbound_enforcement_cap) << 6
        | u8::from(s.filter_raw_inbound_cap) << 5
        | u8::from(s.filter_raw_outbound_cap) << 4
        | u8::from(s.enhanced_port0) << 3
        | (s.reserved_16 & 7);
    let mut d = Record::new("SwitchInfoRecord", "SwitchInfoRecord dump:", 40);
    d.line("\t\tRID");
    d.field("LID", dec(r.lid));
    d.line("\t\tSwitchInfo dump:");
    d.fields([
        ("LinearFDBCap", hex(s.linear_fdb_cap)),
        ("RandomFDBCap", hex(s.random_fdb_cap)),
        ("MulticastFDBCap", hex(s.multicast_fdb_cap)),
        ("LinearFDBTop", hex(s.linear_fdb_top)),
        ("DefaultPort", dec(s.default_port)),
        (
            "DefaultMulticastPrimaryPort",
            dec(s.default_multicast_primary_port),
        ),
        (
            "DefaultMulticastNotPrimaryPort",
            dec(s.default_multicast_not_primary_port),
        ),
        ("LifeTimeValue/PortStateChange/OpSL2VL", hex(life)),
        ("LIDsPerPort", hex(s.lids_per_port)),
        ("PartitionEnforcementCap", hex(s.partition_enforcement_cap)),
        ("flags", hex(flags)),
    ]);
    if mcast_top {
        d.field("MulticastFDBTop", hex(s.multicast_fdb_top));
    }
    d
}

fn dump_inform_info_record(r: &InformInfoRecord, show_keys: bool) -> Record {
    let ii = &r.inform_info;
    let mut d = Record::new("InformInfoRecord", "InformInfoRecord dump:", 24);
    d.line("\t\tRID");
    d.fields([
        ("SubscriberGID", gid(&r.subscriber_gid)),
        ("SubscriberEnum", hex(r.subscriber_enum)),
    ]);
    d.line("\t\tInformInfo dump:");
    d.fields([
        ("gid", gid(&ii.gid)),
        ("lid_range_begin", dec(ii.lid_range_begin)),
        ("lid_range_end", dec(ii.lid_range_end)),
        ("is_generic", hex(ii.is_generic)),
        ("subscribe", hex(ii.subscribe)),
        ("trap_type", hex(ii.notice_type)),
    ]);
    d.field(
        if ii.is_generic != 0 {
            "trap_num"
        } else {
            "dev_id"
        },
        if ii.is_generic != 0 {
            dec(ii.trap_number_or_device_id)
        } else {
            hex(ii.trap_number_or_device_id)
        },
    );
    if show_keys {
        d.field("qpn", hexw(ii.qpn, 6));
    } else {
        d.field("qpn", text(NOT_DISPLAYED.to_string()));
    }
    d.field("resp_time_val", hex(ii.resp_time_value));
    d.field(
        if ii.is_generic != 0 {
            "node_type"
        } else {
            "vendor_id"
        },
        hexw(ii.producer_type_or_vendor_id, 6),
    );
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inet_ntop_as_glibc() {
        let g = |p: u64, i: u64| inet_ntop6(&Gid::new(p, i).0);
        assert_eq!(
            g(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
            "fe80::2:c903:0:1"
        );
        assert_eq!(g(0, 0), "::");
        assert_eq!(g(0, 1), "::1");
        assert_eq!(g(0, 0x0102_0304), "::1.2.3.4");
        assert_eq!(g(0, 0xffff_0102_0304), "::ffff:1.2.3.4");
        assert_eq!(
            g(0xff12_401b_ffff_0000, 0xffff_ffff),
            "ff12:401b:ffff::ffff:ffff"
        );
        assert_eq!(g(0xfe80_0000_0000_0000, 0), "fe80::");
        assert_eq!(
            g(0x0001_0000_0001_0000, 0x0001_0000_0000_0001),
            "1:0:1:0:1::1"
        );
    }

    #[test]
    fn lid_parts_as_c_fields() {
        let l = LidParts {
            lid: 0,
            parts: [Some(0x1fe), Some(u64::MAX)],
        };
        assert_eq!(l.lid(), None);
        assert_eq!((l.byte(0), l.word(0)), (Some(0xfe), Some(0x1fe)));
        // -1 at the field's width means "not given".
        assert_eq!((l.byte(1), l.word(1)), (None, None));
        let l = LidParts {
            lid: 5,
            parts: [Some(0x1ff), None],
        };
        assert_eq!(
            (l.lid(), l.byte(0), l.word(0), l.byte(1)),
            (Some(5), None, Some(0x1ff), None)
        );
    }

    #[test]
    fn sa_errors_as_c() {
        assert_eq!(
            sa_report_err(0x0300),
            "ERROR: Query result returned 0x0300,  SA(SA_ERR_NO_RECORDS)"
        );
        assert_eq!(
            sa_report_err(0x000c),
            "ERROR: Query result returned 0x000c,  (; ; MAD Method/Attribute combination is not supported)"
        );
    }
}
