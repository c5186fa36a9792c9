//! `umad perfquery`: read (and reset) a port's performance counters as infiniband-diags'
//! `perfquery`: the same options, arguments, text (libibmad's dumps, [`ibmad::dump::perf`])
//! and errors; `--json` (docs/json/perfquery-v1.schema.json) instead of text.
//!
//! `perfquery [options] [<lid|guid> [[port(s)] [reset_mask]]]`: PortCounters by default,
//! `-x` PortCountersExtended, one of `-X -S -D -E -T -c --oprcvcounters ...` another
//! attribute; `-a` all ports (the PMA's AllPortSelect, or the sum over the ports when the PMA
//! cannot), `-l` each port in turn, a port list `1,4,8` or range `1-10`; `-r` resets after
//! reading, `-R` only resets (with the optional counter-select mask).
//!
//! Differences from C: `-s <sm lid>` is accepted but GUIDs are resolved through the SM the
//! local port knows; run-time errors print C's `iberror` line on stdout (as C).

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};
use ibmad::attr::id;
use ibmad::dump::{self, perf as tables, Field, Fmt};
use ibmad::perf::{attr_id, cap, cap2, PERF_DATA_OFFSET};
use ibmad::Method;
use serde_json::{json, Value};

use crate::common::{self, CommonOpts, Parsed};
use crate::dest::{c_strtoull, ibexit, ibwarn, Dest, SmpPort};
use crate::exit;

/// PortSelect meaning "all ports".
pub const ALL_PORTS: u8 = 0xff;

/// One of the single-attribute queries (`-X`, `-S`, ...): option id, the name C prints, the
/// attribute and its counters (shown after [`tables::SELECTS`]).
struct Other {
    id: &'static str,
    name: &'static str,
    attr: u16,
    fields: &'static [Field],
}

/// The single-attribute queries, in C's order of precedence.
const OTHERS: &[Other] = &[
    Other {
        id: "xmtsl",
        name: "PortXmitDataSL",
        attr: attr_id::PORT_XMIT_DATA_SL,
        fields: tables::PORT_XMIT_DATA_SL,
    },
    Other {
        id: "rcvsl",
        name: "PortRcvDataSL",
        attr: attr_id::PORT_RCV_DATA_SL,
        fields: tables::PORT_RCV_DATA_SL,
    },
    Other {
        id: "xmtdisc",
        name: "PortXmitDiscardDetails",
        attr: attr_id::PORT_XMIT_DISCARD_DETAILS,
        fields: tables::PORT_XMIT_DISCARD_DETAILS,
    },
    Other {
        id: "rcverr",
        name: "PortRcvErrorDetails",
        attr: attr_id::PORT_RCV_ERROR_DETAILS,
        fields: tables::PORT_RCV_ERROR_DETAILS,
    },
];

/// The long-only queries after `-T`, in C's order of precedence (attribute IDs from
/// libibmad's `MAD_ATTR_ID` for the congestion-control extensions).
const LONG_ONLY: &[(&str, &str, &str, u16, &[Field])] = &[
    (
        "oprcvcounters",
        "show Rcv Counters per Op code",
        "PortOpRcvCounters",
        attr_id::PORT_OP_RCV_COUNTERS,
        tables::PORT_OP_RCV_COUNTERS,
    ),
    (
        "flowctlcounters",
        "show flow control counters",
        "PortFlowCtlCounters",
        attr_id::PORT_FLOW_CTL_COUNTERS,
        tables::PORT_FLOW_CTL_COUNTERS,
    ),
    (
        "vloppackets",
        "show packets received per Op code per VL",
        "PortVLOpPackets",
        attr_id::PORT_VL_OP_PACKETS,
        tables::PORT_VL_OP_PACKETS,
    ),
    (
        "vlopdata",
        "show data received per Op code per VL",
        "PortVLOpData",
        attr_id::PORT_VL_OP_DATA,
        tables::PORT_VL_OP_DATA,
    ),
    (
        "vlxmitflowctlerrors",
        "show flow control update errors per VL",
        "PortVLXmitFlowCtlUpdateErrors",
        attr_id::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
        tables::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
    ),
    (
        "vlxmitcounters",
        "show ticks waiting to transmit counters per VL",
        "PortVLXmitWaitCounters",
        attr_id::PORT_VL_XMIT_WAIT_COUNTERS,
        tables::PORT_VL_XMIT_WAIT_COUNTERS,
    ),
    (
        "swportvlcong",
        "show sw port VL congestion",
        "SwPortVLCongestion",
        0x0030,
        tables::SW_PORT_VL_CONGESTION,
    ),
    (
        "rcvcc",
        "show Rcv congestion control counters",
        "PortRcvConCtrl",
        0x0031,
        tables::PORT_RCV_CON_CTRL,
    ),
    (
        "slrcvfecn",
        "show SL Rcv FECN counters",
        "PortSLRcvFECN",
        0x0032,
        tables::PORT_SL_RCV_FECN,
    ),
    (
        "slrcvbecn",
        "show SL Rcv BECN counters",
        "PortSLRcvBECN",
        0x0033,
        tables::PORT_SL_RCV_BECN,
    ),
    (
        "xmitcc",
        "show Xmit congestion control counters",
        "PortXmitConCtrl",
        0x0034,
        tables::PORT_XMIT_CON_CTRL,
    ),
    (
        "vlxmittimecc",
        "show VL Xmit Time congestion control counters",
        "PortVLXmitTimeCong",
        0x0035,
        tables::PORT_VL_XMIT_TIME_CONG,
    ),
];

/// The clap command.
pub fn command() -> Command {
    let flag = |id: &'static str, short: Option<char>, help: &'static str| {
        let a = Arg::new(id).long(id).action(ArgAction::SetTrue).help(help);
        match short {
            Some(c) => a.short(c),
            None => a,
        }
    };
    let count = |id: &'static str, short: char, help: &'static str| {
        Arg::new(id)
            .long(id)
            .short(short)
            .action(ArgAction::Count)
            .help(help)
    };
    let mut cmd = Command::new("perfquery")
        .about("Query (and reset) performance counters (as infiniband-diags' perfquery)")
        .override_usage("perfquery [options]  [<lid|guid> [[port(s)] [reset_mask]]]")
        .after_help(common::examples(
            "perfquery",
            &[
                "\t\t# read local port's performance counters",
                "32 1\t\t# read performance counters from lid 32, port 1",
                "-x 32 1\t# read extended performance counters from lid 32, port 1",
                "-a 32\t\t# read performance counters from lid 32, all ports",
                "-r 32 1\t# read performance counters and reset",
                "-x -r 32 1\t# read extended performance counters and reset",
                "-R 0x20 1\t# reset performance counters of port 1 only",
                "-x -R 0x20 1\t# reset extended performance counters of port 1 only",
                "-R -a 32\t# reset performance counters of all ports",
                "-R 32 2 0x0fff\t# reset only error counters of port 2",
                "-R 32 2 0xf000\t# reset only non-error counters of port 2",
                "-a 32 1-10\t# read performance counters from lid 32, port 1-10, aggregate output",
                "-l 32 1-10\t# read performance counters from lid 32, port 1-10, output each port",
                "-a 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, aggregate output",
                "-l 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, output each port",
            ],
        ))
        .arg(flag("extended", Some('x'), "show extended port counters"))
        .arg(flag("xmtsl", Some('X'), "show Xmt SL port counters"))
        .arg(flag("rcvsl", Some('S'), "show Rcv SL port counters"))
        .arg(flag("xmtdisc", Some('D'), "show Xmt Discard Details"))
        .arg(flag("rcverr", Some('E'), "show Rcv Error Details"))
        .arg(flag(
            "extended_speeds",
            Some('T'),
            "show port extended speeds counters",
        ));
    for &(id, help, ..) in LONG_ONLY {
        cmd = cmd.arg(flag(id, None, help));
    }
    cmd = cmd
        .arg(flag("smplctl", Some('c'), "show samples control"))
        .arg(count("all_ports", 'a', "show aggregated counters"))
        .arg(count("loop_ports", 'l', "iterate through each port"))
        .arg(count("reset_after_read", 'r', "reset counters after read"))
        .arg(count("Reset_only", 'R', "only reset counters"))
        .arg(common::json_arg("perfquery"))
        .arg(
            Arg::new("args")
                .num_args(0..)
                .value_name("lid|guid [port(s)] [reset_mask]"),
        );
    common::add_common_args(cmd, "DK")
}

/// `umad perfquery`.
pub fn main(prog: &'static str, args: Vec<OsString>) -> i32 {
    let m = match common::parse_args(prog, command(), args) {
        Parsed::Run(m) => m,
        Parsed::Exit(code) => return code,
    };
    match run(prog, &m) {
        Ok(()) => exit::OK,
        Err(code) => code,
    }
}

/// A PerfMgt agent over an [`SmpPort`] (which also sends the SMPs some queries need).
pub struct Pma<'a> {
    /// The port and its options.
    pub port: &'a SmpPort,
}

impl Pma<'_> {
    fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.port.opts.timeout_ms.unwrap_or(1000)))
    }

    /// libibmad's `pma_query_via` / `performance_reset_via`: `method` of `attr` at `lid`
    /// with PortSelect `port` and the rest of the data area from `fill`; the response's data
    /// area (192 bytes), or `None` after C's warnings (no response: `_do_madrpc failed`; an
    /// error status: only with `-e`).
    pub fn call(
        &self,
        lid: u16,
        method: Method,
        attr: u16,
        port: u8,
        fill: impl FnOnce(&mut [u8]),
    ) -> Option<Vec<u8>> {
        if method == Method::Get {
            crate::debug::debug("pma_query_via", format_args!("lid {lid} port {port}"));
        }
        let rpc = &self.port.rpc;
        let done = rpc.call(self.request(lid, 0, method, attr, port, fill));
        self.interpret(lid, done)
    }

    /// The request [`call`](Self::call) sends (at service level `sl`), for pipelining with
    /// [`Rpc::run_all`](umad::rpc::Rpc::run_all).
    pub fn request(
        &self,
        lid: u16,
        sl: u8,
        method: Method,
        attr: u16,
        port: u8,
        fill: impl FnOnce(&mut [u8]),
    ) -> umad::rpc::Request {
        let mut mad = ibmad::perf::request(method, attr, 0, 0);
        mad[PERF_DATA_OFFSET + 1] = port;
        fill(&mut mad[PERF_DATA_OFFSET..]);
        let mut addr = umad::MadAddr::gsi(lid);
        addr.sl = sl;
        self.port
            .rpc
            .request(mad, addr)
            .timeout(self.timeout())
            .retries(crate::dest::C_ATTEMPTS - 1)
    }

    /// The data area of a completed [`request`](Self::request) to `lid`, or `None` after
    /// C's warnings.
    pub fn interpret(
        &self,
        lid: u16,
        done: umad::Result<umad::rpc::Completion>,
    ) -> Option<Vec<u8>> {
        let rpc = &self.port.rpc;
        let dest = Dest::lid(lid).to_c_string();
        let r = crate::dest::mad_rpc_result("mad_rpc", rpc.port(), &dest, done)?;
        let status = ibmad::Mad::new_checked(&r.mad[..]).ok()?.status().raw();
        if status != 0 {
            crate::debug::errs(
                "mad_rpc",
                format_args!("MAD completed with error status 0x{status:x}; dport ({dest})"),
            );
            return None;
        }
        ibmad::perf::data(&r.mad).ok().map(<[u8]>::to_vec)
    }

    /// Runs `requests` pipelined over the rpc's window; one result per request, in order.
    pub fn run_all(
        &self,
        requests: Vec<umad::rpc::Request>,
    ) -> Vec<umad::Result<umad::rpc::Completion>> {
        let n = requests.len();
        match self.port.rpc.run_all(requests) {
            Ok(d) => d.into_iter().map(Ok).collect(),
            Err(e) => (0..n)
                .map(|_| Err(umad::Error::InvalidArgument(e.to_string())))
                .collect(),
        }
    }

    /// `pma_query_via`: Get `attr` of `port` at `lid`.
    pub fn get(&self, lid: u16, attr: u16, port: u8) -> Option<Vec<u8>> {
        self.call(lid, Method::Get, attr, port, |_| {})
    }

    /// `performance_reset_via`: Set `attr` of `port` at `lid` with CounterSelect = the low
    /// 16 bits of `mask` (0: all), the rest in CounterSelect2.
    pub fn reset(&self, lid: u16, attr: u16, port: u8, mask: u32) -> Option<Vec<u8>> {
        crate::debug::debug(
            "performance_reset_via",
            format_args!("lid {lid} port {port} mask 0x{mask:x}"),
        );
        let done = self
            .port
            .rpc
            .call(self.reset_request(lid, 0, attr, port, mask));
        self.interpret(lid, done)
    }

    /// The request [`reset`](Self::reset) sends.
    pub fn reset_request(
        &self,
        lid: u16,
        sl: u8,
        attr: u16,
        port: u8,
        mask: u32,
    ) -> umad::rpc::Request {
        let mask = if mask == 0 { u32::MAX } else { mask };
        self.request(lid, sl, Method::Set, attr, port, |d| {
            tables::put_bits(d, 16, 16, u64::from(mask & 0xffff));
            if attr == attr_id::PORT_COUNTERS_EXT {
                tables::put_bits(d, 32, 32, u64::from(mask >> 16));
            } else {
                tables::put_bits(d, 144, 8, u64::from(mask >> 16));
            }
        })
    }
}

/// The PMA's ClassPortInfo capabilities: CapabilityMask and CapabilityMask2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmaCaps {
    /// CapabilityMask (host order).
    pub cap_mask: u16,
    /// CapabilityMask2 (27 bits).
    pub cap_mask2: u32,
}

impl PmaCaps {
    /// From a ClassPortInfo data area.
    pub fn parse(data: &[u8]) -> PmaCaps {
        let b = |i: usize| data.get(i).copied().unwrap_or(0);
        PmaCaps {
            cap_mask: u16::from_be_bytes([b(2), b(3)]),
            cap_mask2: u32::from_be_bytes([b(4), b(5), b(6), b(7)]) >> 5,
        }
    }

    fn has(&self, bit: u16) -> bool {
        self.cap_mask & bit != 0
    }
}

/// What one run prints and collects.
struct Run<'a> {
    prog: &'static str,
    pma: Pma<'a>,
    dest: Dest,
    lid: u16,
    caps: PmaCaps,
    json: bool,
    text: String,
    queries: Vec<Value>,
    resets: Vec<Value>,
}

fn fields_json(data: &[u8], parts: &[&[Field]]) -> Value {
    let mut m = serde_json::Map::new();
    for fl in parts.iter().flat_map(|p| p.iter()) {
        m.insert(
            fl.name.to_string(),
            json!(dump::get_bits(data, fl.offset, fl.width)),
        );
    }
    Value::Object(m)
}

impl Run<'_> {
    fn show(&mut self, header: String, attr: &str, port: u8, data: &[u8], parts: &[&[Field]]) {
        self.text.push_str(&header);
        for p in parts {
            self.text.push_str(&dump::dump_fields(data, p));
        }
        self.queries.push(json!({
            "attribute": attr,
            "lid": self.lid,
            "port": port,
            "counters": fields_json(data, parts),
        }));
    }

    fn flush(&mut self) {
        let text = std::mem::take(&mut self.text);
        if !self.json {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }

    fn ext_parts(&self) -> Vec<&'static [Field]> {
        let mut parts = vec![tables::PORT_COUNTERS_EXT];
        if self.caps.has(cap::EXT_WIDTH_SUPPORTED) {
            parts.push(tables::PORT_COUNTERS_EXT_WIDTH);
        }
        if self.caps.cap_mask2 & cap2::IS_ADDL_PORT_CTRS_EXT_SUPPORTED != 0 {
            parts.push(tables::PORT_COUNTERS_EXT_ADDL);
        }
        parts
    }

    fn header(&self, extended: bool, port: u8) -> String {
        if extended {
            format!(
                "# Port extended counters: {} port {port} (CapMask: 0x{:02X} CapMask2: 0x{:07X})\n",
                self.dest.to_c_string(),
                self.caps.cap_mask,
                self.caps.cap_mask2
            )
        } else {
            format!(
                "# Port counters: {} port {port} (CapMask: 0x{:02X})\n",
                self.dest.to_c_string(),
                self.caps.cap_mask
            )
        }
    }

    /// C's `dump_perfcounters`: query one port; print it, or add it to `agg`.
    fn dump(&mut self, extended: bool, port: u8, agg: Option<&mut Aggregate>) -> Result<(), i32> {
        let data = if !extended {
            let Some(mut d) = self.pma.get(self.lid, attr_id::PORT_COUNTERS, port) else {
                self.flush();
                return Err(ibexit(self.prog, "perfquery"));
            };
            if !self.caps.has(cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED) {
                tables::put_bits(&mut d, 320, 32, 0);
            }
            d
        } else {
            if !self.caps.has(cap::EXT_WIDTH_SUPPORTED)
                && !self.caps.has(cap::EXT_WIDTH_NOIETF_SUPPORTED)
            {
                ibwarn(
                    "dump_perfcounters",
                    &format!(
                        "PerfMgt ClassPortInfo CapMask 0x{:02X}; No extended counter support indicated\n",
                        self.caps.cap_mask
                    ),
                );
            }
            let Some(d) = self.pma.get(self.lid, attr_id::PORT_COUNTERS_EXT, port) else {
                self.flush();
                return Err(ibexit(self.prog, "perfextquery"));
            };
            d
        };
        let parts: Vec<&'static [Field]> = if extended {
            self.ext_parts()
        } else {
            vec![tables::PORT_COUNTERS]
        };
        match agg {
            Some(a) => a.add(&data, &parts),
            None => {
                let header = self.header(extended, port);
                let attr = if extended {
                    "PortCountersExtended"
                } else {
                    "PortCounters"
                };
                self.show(header, attr, port, &data, &parts);
            }
        }
        Ok(())
    }

    fn reset(&mut self, extended: bool, port: u8, mask: u32) -> Result<(), i32> {
        let (attr, what) = if extended {
            (attr_id::PORT_COUNTERS_EXT, "perf ext reset")
        } else {
            (attr_id::PORT_COUNTERS, "perf reset")
        };
        if self.pma.reset(self.lid, attr, port, mask).is_none() {
            self.flush();
            return Err(ibexit(self.prog, what));
        }
        self.resets.push(json!({
            "attribute": if extended { "PortCountersExtended" } else { "PortCounters" },
            "lid": self.lid,
            "port": port,
            "mask": mask,
        }));
        Ok(())
    }

    /// C's `common_func`: query (and/or reset) one of the other attributes.
    fn other(
        &mut self,
        name: &str,
        attr: u16,
        fields: &'static [Field],
        port: u8,
        query: bool,
        reset: Option<u32>,
    ) -> Result<(), i32> {
        if query {
            let Some(d) = self.pma.get(self.lid, attr, port) else {
                self.flush();
                return Err(ibexit(self.prog, &format!("cannot query {name}")));
            };
            let header = format!(
                "# {name} counters: {} port {port}\n",
                self.dest.to_c_string()
            );
            self.show(header, name, port, &d, &[tables::SELECTS, fields]);
        }
        if let Some(mask) = reset {
            if self.pma.reset(self.lid, attr, port, mask).is_none() {
                self.flush();
                return Err(ibexit(self.prog, &format!("cannot reset {name}")));
            }
            self.resets
                .push(json!({"attribute": name, "lid": self.lid, "port": port, "mask": mask}));
        }
        Ok(())
    }
}

/// Sums of counters over ports, as C's `aggregate_perfcounters*`: each counter saturates at
/// its width; select fields keep the last port's value.
struct Aggregate {
    last: Vec<u8>,
    sums: Vec<u64>,
    parts: Vec<&'static [Field]>,
}

impl Aggregate {
    fn new() -> Aggregate {
        Aggregate {
            last: Vec::new(),
            sums: Vec::new(),
            parts: Vec::new(),
        }
    }

    fn add(&mut self, data: &[u8], parts: &[&'static [Field]]) {
        let fields: Vec<&Field> = parts.iter().flat_map(|p| p.iter()).collect();
        if self.sums.len() != fields.len() {
            self.sums = vec![0; fields.len()];
        }
        for (s, fl) in self.sums.iter_mut().zip(&fields) {
            let v = dump::get_bits(data, fl.offset, fl.width);
            let max = if fl.width >= 64 {
                u64::MAX
            } else {
                (1u64 << fl.width) - 1
            };
            *s = s.checked_add(v).filter(|&t| t <= max).unwrap_or(max);
        }
        self.last = data.to_vec();
        self.parts = parts.to_vec();
    }

    /// The aggregated data area: the last port's, with PortSelect 255 and the sums.
    fn data(&self) -> Vec<u8> {
        let mut d = self.last.clone();
        let fields = self.parts.iter().flat_map(|p| p.iter());
        for (s, fl) in self.sums.iter().zip(fields) {
            if fl.fmt == Fmt::Uint && fl.name != "PortSelect" {
                tables::put_bits(&mut d, fl.offset, fl.width, *s);
            }
        }
        tables::put_bits(&mut d, 8, 8, u64::from(ALL_PORTS));
        d
    }
}

/// C's port-list argument: `1,4,8`, `1-10` or one port.
fn parse_ports(text: &str) -> Result<(u8, Vec<u8>), String> {
    let num = |s: &str| c_strtoull(s) as u8;
    if text.contains(',') {
        let ports: Vec<u8> = text.split(',').filter(|t| !t.is_empty()).map(num).collect();
        Ok((ports.first().copied().unwrap_or(0), ports))
    } else if let Some((a, b)) = text.split_once('-') {
        let (pmin, pmax) = (c_strtoull(a) as u32 as i32, c_strtoull(b) as u32 as i32);
        if pmin >= pmax {
            return Err("max port must be greater than min port in range".into());
        }
        let ports: Vec<u8> = (pmin..=pmax).map(|p| p as u8).collect();
        Ok((ports[0], ports))
    } else {
        Ok((num(text), Vec::new()))
    }
}

fn run(prog: &'static str, m: &ArgMatches) -> Result<(), i32> {
    let opts = CommonOpts::from_matches(m).map_err(|e| crate::dest::report(prog, &e))?;
    let args: Vec<String> = m
        .get_many::<String>("args")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let extended = m.get_flag("extended");
    let all_ports = m.get_count("all_ports") > 0;
    let loop_ports = m.get_count("loop_ports") > 0;
    let reset = m.get_count("reset_after_read") > 0;
    let reset_only = m.get_count("Reset_only") > 0;
    let json = m.get_flag("json");

    let mut port: u8 = if all_ports { ALL_PORTS } else { 0 };
    let mut ports = Vec::new();
    if args.len() > 1 {
        let (p, list) = parse_ports(&args[1]).map_err(|e| ibexit(prog, &e))?;
        port = p;
        ports = list;
    }
    let mut ext_mask: u64 = u64::MAX;
    let mut mask: u32 = 0xffff;
    if args.len() > 2 {
        ext_mask = c_strtoull(&args[2]);
        mask = ext_mask as u32;
    }
    let Some(sp) = SmpPort::open(prog, &opts) else {
        return Err(exit::FAILURE);
    };
    let dest = if let Some(a) = args.first() {
        match sp.resolve(a, opts.dest) {
            Some(d) => d,
            None => return Err(ibexit(prog, &format!("can't resolve destination port {a}"))),
        }
    } else {
        match sp.local() {
            Some(l) => {
                port = l.port_num as u8;
                Dest::lid(l.base_lid as u16)
            }
            None => return Err(ibexit(prog, "can't resolve self port (null)")),
        }
    };
    let lid = dest.lid;
    let pma = Pma { port: &sp };
    let Some(cpi) = pma.get(lid, id::CLASS_PORT_INFO, port) else {
        return Err(ibexit(prog, "classportinfo query"));
    };
    let caps = PmaCaps::parse(&cpi);
    let mut all_ports_loop = false;
    if !caps.has(cap::ALL_PORT_SELECT) {
        if !all_ports && port == ALL_PORTS {
            return Err(ibexit(prog, "AllPortSelect not supported"));
        }
        if all_ports && port == ALL_PORTS {
            all_ports_loop = true;
        }
    }
    let mut r = Run {
        prog,
        pma,
        dest: dest.clone(),
        lid,
        caps,
        json,
        text: String::new(),
        queries: Vec::new(),
        resets: Vec::new(),
    };
    let result = run_queries(
        prog,
        m,
        &mut r,
        Plan {
            extended,
            all_ports,
            loop_ports,
            reset,
            reset_only,
            all_ports_loop,
            port,
            ports,
            mask,
            ext_mask,
            explicit_mask: args.len() > 2,
        },
    );
    r.flush();
    result?;
    if json {
        let v = json!({
            "schema_version": 1,
            "tool": "perfquery",
            "dest": dest.to_c_string(),
            "lid": lid,
            "cap_mask": caps.cap_mask,
            "cap_mask2": caps.cap_mask2,
            "queries": r.queries,
            "resets": r.resets,
        });
        let text = serde_json::to_string_pretty(&v).unwrap_or_default();
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
    Ok(())
}

/// What to query, from the options and arguments.
struct Plan {
    extended: bool,
    all_ports: bool,
    loop_ports: bool,
    reset: bool,
    reset_only: bool,
    all_ports_loop: bool,
    port: u8,
    ports: Vec<u8>,
    mask: u32,
    ext_mask: u64,
    explicit_mask: bool,
}

fn run_queries(prog: &'static str, m: &ArgMatches, r: &mut Run, p: Plan) -> Result<(), i32> {
    let reset_mask = (p.reset_only || p.reset).then_some(p.mask);
    for o in OTHERS {
        if m.get_flag(o.id) {
            return r.other(o.name, o.attr, o.fields, p.port, !p.reset_only, reset_mask);
        }
    }
    if m.get_flag("extended_speeds") {
        return extended_speeds(r, &p);
    }
    for &(id, _, name, attr, fields) in LONG_ONLY {
        if m.get_flag(id) {
            return r.other(name, attr, fields, p.port, !p.reset_only, reset_mask);
        }
    }
    if m.get_flag("smplctl") {
        let Some(d) = r.pma.get(r.lid, attr_id::PORT_SAMPLES_CONTROL, p.port) else {
            return Err(ibexit(prog, "sampctlquery"));
        };
        let header = format!(
            "# PortSamplesControl: {} port {}\n",
            r.dest.to_c_string(),
            p.port
        );
        r.show(
            header,
            "PortSamplesControl",
            p.port,
            &d,
            &[tables::PORT_SAMPLES_CONTROL],
        );
        return Ok(());
    }
    let looping = p.all_ports_loop || (p.loop_ports && (p.all_ports || p.port == ALL_PORTS));
    let mut start_port = 1u8;
    let mut num_ports = 0u8;
    if looping {
        let Some(ni) = r.pma.port.get(&r.dest, id::NODE_INFO, 0) else {
            return Err(ibexit(prog, "smp query nodeinfo failed"));
        };
        let node_type = ni.get(2).copied().unwrap_or(0);
        num_ports = ni.get(3).copied().unwrap_or(0);
        if num_ports == 0 {
            return Err(ibexit(prog, "smp query nodeinfo: num ports invalid"));
        }
        if node_type == 2 {
            let Some(si) = r.pma.port.get(&r.dest, id::SWITCH_INFO, 0) else {
                return Err(ibexit(prog, "smp query nodeinfo failed"));
            };
            if dump::get_bits(&si, 132, 1) == 1 {
                start_port = 0;
            }
        }
        if p.all_ports_loop && !p.loop_ports {
            ibwarn(
                "main",
                "Emulating AllPortSelect by iterating through all ports",
            );
        }
    }
    if !p.reset_only {
        if looping {
            let aggregate = p.all_ports_loop && !p.loop_ports;
            let mut agg = Aggregate::new();
            for port in start_port..=num_ports {
                r.dump(p.extended, port, aggregate.then_some(&mut agg))?;
            }
            if aggregate {
                show_aggregate(r, p.extended, &agg);
            }
        } else if p.ports.len() > 1 {
            let aggregate = p.all_ports && !p.loop_ports;
            let mut agg = Aggregate::new();
            for &port in &p.ports {
                r.dump(p.extended, port, aggregate.then_some(&mut agg))?;
            }
            if aggregate {
                show_aggregate(r, p.extended, &agg);
            }
        } else {
            r.dump(p.extended, p.port, None)?;
        }
        if !p.reset {
            return Ok(());
        }
    }
    let mut mask = p.mask;
    if !p.explicit_mask && !p.extended {
        if r.caps.has(cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED) {
            mask |= 1 << 16;
        }
        if r.caps.has(cap::QP1_DROP_SUPPORTED) {
            mask |= 1 << 17;
        }
    }
    if p.extended {
        mask |= 0xfff_0000;
        if r.caps.has(cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED) {
            mask |= 1 << 28;
        }
        if r.caps.has(cap::QP1_DROP_SUPPORTED) {
            mask |= 1 << 29;
        }
    }
    if looping {
        for port in start_port..=num_ports {
            r.reset(p.extended, port, mask)?;
        }
    } else if p.ports.len() > 1 {
        for &port in &p.ports {
            r.reset(p.extended, port, mask)?;
        }
    } else {
        r.reset(p.extended, p.port, mask)?;
    }
    Ok(())
}

fn show_aggregate(r: &mut Run, extended: bool, agg: &Aggregate) {
    let data = agg.data();
    let header = r.header(extended, ALL_PORTS);
    let (attr, parts) = if extended {
        ("PortCountersExtended", r.ext_parts())
    } else {
        ("PortCounters", vec![tables::PORT_COUNTERS])
    };
    r.show(header, attr, ALL_PORTS, &data, &parts);
}

/// `-T`: PortExtendedSpeedsCounters (the RS-FEC layout when the port's FEC mode is RS-FEC).
fn extended_speeds(r: &mut Run, p: &Plan) -> Result<(), i32> {
    const NAME: &str = "PortExtendedSpeedsCounters";
    if !p.reset_only {
        let rsfec = rsfec_active(r, p.port);
        let (name, fields) = if rsfec {
            (
                "PortExtendedSpeedsCounters with RS-FEC Active",
                tables::PORT_EXT_SPEEDS_COUNTERS_RSFEC,
            )
        } else {
            (NAME, tables::PORT_EXT_SPEEDS_COUNTERS)
        };
        let Some(d) = r.pma.get(r.lid, attr_id::PORT_EXT_SPEEDS_COUNTERS, p.port) else {
            r.flush();
            return Err(ibexit(r.prog, &format!("cannot query {name}")));
        };
        let header = format!(
            "# {name} counters: {} port {}\n",
            r.dest.to_c_string(),
            p.port
        );
        r.show(header, NAME, p.port, &d, &[fields]);
    }
    if p.reset_only || p.reset {
        let mask = if p.ext_mask == 0 {
            u64::MAX
        } else {
            p.ext_mask
        };
        let ok = r.pma.call(
            r.lid,
            Method::Set,
            attr_id::PORT_EXT_SPEEDS_COUNTERS,
            p.port,
            |d| tables::put_bits(d, 64, 64, mask),
        );
        if ok.is_none() {
            r.flush();
            return Err(ibexit(r.prog, &format!("cannot reset {NAME}")));
        }
        r.resets
            .push(json!({"attribute": NAME, "lid": r.lid, "port": p.port, "mask": mask}));
    }
    Ok(())
}

/// C's `is_rsfec_mode_active`: the PMA counts RS-FEC and the port's PortInfoExtended says
/// RS-FEC is active.
fn rsfec_active(r: &Run, port: u8) -> bool {
    if !r.caps.has(cap::RSFEC_COUNTERS_SUPPORTED) {
        return false;
    }
    let sp = r.pma.port;
    // PortInfo CapabilityMask2 bit 1: IsPortInfoExtendedSupported.
    let supported = sp
        .get(&r.dest, id::PORT_INFO, u32::from(port))
        .is_some_and(|pi| dump::get_bits(&pi, 480, 16) & 0x2 != 0);
    if !supported {
        ibwarn("is_rsfec_mode_active", "Port Info Extended not supported");
        return false;
    }
    let Some(pie) = sp.get(&r.dest, id::PORT_INFO_EXT, u32::from(port)) else {
        return false;
    };
    let capmask = dump::get_bits(&pie, 0, 32);
    let fec = dump::get_bits(&pie, 32, 16);
    // IsFECModeSupported, and FECModeActive RS-FEC (2) or RS-FEC2 (3).
    capmask & 1 != 0 && (fec == 2 || fec == 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_lists() {
        assert_eq!(parse_ports("3").unwrap(), (3, vec![]));
        assert_eq!(parse_ports("1,4,,8").unwrap(), (1, vec![1, 4, 8]));
        assert_eq!(parse_ports("1-3").unwrap(), (1, vec![1, 2, 3]));
        assert!(parse_ports("3-1").is_err());
        assert!(parse_ports("x-y").is_err());
    }

    #[test]
    fn aggregates_saturate() {
        let mut a = Aggregate::new();
        let mut d = vec![0u8; 192];
        tables::put_bits(&mut d, 152, 4, 9); // LocalLinkIntegrityErrors
        tables::put_bits(&mut d, 192, 32, 7); // PortXmitData
        tables::put_bits(&mut d, 16, 16, 0x1234); // CounterSelect
        a.add(&d, &[tables::PORT_COUNTERS]);
        a.add(&d, &[tables::PORT_COUNTERS]);
        let out = a.data();
        assert_eq!(dump::get_bits(&out, 152, 4), 0xf);
        assert_eq!(dump::get_bits(&out, 192, 32), 14);
        assert_eq!(dump::get_bits(&out, 16, 16), 0x1234);
        assert_eq!(dump::get_bits(&out, 8, 8), 255);
    }
}
