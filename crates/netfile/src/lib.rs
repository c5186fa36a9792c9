#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use ibmad::NodeType;

/// Longest line ibsim reads whole.
pub const MAX_LINE: usize = 255;
/// Deepest `include` nesting ibsim allows.
pub const MAX_INCLUDE: usize = 9;
/// Longest node id ibsim keeps (with the module prefix).
pub const MAX_NODE_ID: usize = 64;
/// Longest node description ibsim keeps.
pub const MAX_DESCRIPTION: usize = 63;
/// Longest `module` prefix.
pub const MAX_PREFIX: usize = 20;

/// Enabled-width mask ibsim uses by default (4x).
pub const DEFAULT_WIDTH: u8 = 2;
/// Enabled-speed mask ibsim uses by default (SDR).
pub const DEFAULT_SPEED: u8 = 1;

const ROUTER: usize = 0;
const CA: usize = 1;
const SWITCH: usize = 2;

/// A parsed netfile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Netfile {
    /// Nodes in file order (the first port of the first node is ibsim's default attach point).
    pub nodes: Vec<NetNode>,
    /// `do` console commands, in order: the text after `do`, as written (ibsim hands it to
    /// its console).
    pub commands: Vec<String>,
    /// Things ibsim accepts but that are probably mistakes (line, text).
    pub warnings: Vec<(usize, String)>,
}

/// One node of a netfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetNode {
    /// Switch, CA or router.
    pub node_type: NodeType,
    /// The node id (with the `module` prefix, if any).
    pub id: String,
    /// The NodeDescription ibsim gives it (the id when the file has none).
    pub description: String,
    /// Number of physical ports.
    pub num_ports: u8,
    /// The node GUID ibsim assigns.
    pub guid: u64,
    /// The system image GUID (the node GUID unless `sysimgguid=` said otherwise).
    pub system_image_guid: u64,
    /// NodeInfo.VendorID (`vendid=`; 0 by default).
    pub vendor_id: u32,
    /// NodeInfo.DeviceID (`devid=`; 0 by default).
    pub device_id: u16,
    /// A switch's `enhanced port 0` (`Some(true)`) or `base port 0` (`Some(false)`);
    /// ibsim's default is base.
    pub enhanced_port0: Option<bool>,
    /// A switch's port 0 LID and LMC from its header line (0: unset).
    pub lid: u16,
    /// See [`NetNode::lid`].
    pub lmc: u8,
    /// The listed ports, by increasing number.
    pub ports: Vec<NetPort>,
    /// Line of the node header (in its file).
    pub line: usize,
}

/// One port line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetPort {
    /// Port number (≥ 1).
    pub number: u8,
    /// The other end.
    pub remote: NetRemote,
    /// LinkWidthEnabled mask.
    pub width: u8,
    /// LinkSpeedEnabled mask.
    pub speed: u8,
    /// LinkSpeedExtEnabled mask.
    pub speed_ext: u8,
    /// Mellanox LinkSpeedEnabled (bit 0: FDR10).
    pub mlnx_speed: u8,
    /// A CA port's preset LID and LMC (0: unset).
    pub lid: u16,
    /// See [`NetPort::lid`].
    pub lmc: u8,
}

/// The far end of a port line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRemote {
    /// Node id (with the module prefix).
    pub node: String,
    /// Port number.
    pub port: u8,
}

/// A netfile ibsim would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetfileError {
    /// The file (for [`Netfile::load`] and includes).
    pub file: Option<PathBuf>,
    /// 1-based line number (0: not tied to a line, e.g. a link check).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for NetfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.file {
            write!(f, "{}:", p.display())?;
        }
        if self.line > 0 {
            write!(f, "{}: ", self.line)?;
        } else if self.file.is_some() {
            f.write_str(" ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for NetfileError {}

/// Reads an included file: (name as written, directory of the including file) → text and
/// the path it was read from.
type Includer<'a> = dyn FnMut(&str, Option<&Path>) -> Result<(String, PathBuf), String> + 'a;

struct Parser<'a> {
    out: Netfile,
    absguids: [u64; 3],
    guids: [u64; 3],
    prefix: String,
    vendid: u32,
    devid: u16,
    sysimgguid: u64,
    width: u8,
    speed: u8,
    speed_ext: u8,
    depth: usize,
    include: &'a mut Includer<'a>,
    ids: HashMap<String, usize>,
    /// The node GUIDs given so far (a file of N nodes is checked in O(N), not O(N²)).
    node_guids: HashSet<u64>,
}

fn err(file: Option<&Path>, line: usize, message: impl Into<String>) -> NetfileError {
    NetfileError {
        file: file.map(Path::to_path_buf),
        line,
        message: message.into(),
    }
}

impl Netfile {
    /// Parses netfile text; an `include` is an error (use [`Netfile::load`]).
    ///
    /// # Errors
    /// What ibsim would refuse, with the line.
    pub fn parse(text: &str) -> Result<Netfile, NetfileError> {
        let mut no_include = |name: &str, _: Option<&Path>| -> Result<(String, PathBuf), String> {
            Err(format!("include \"{name}\": includes need Netfile::load"))
        };
        Self::parse_with(text, None, &mut no_include)
    }

    /// Reads and parses a netfile, following its includes (relative to the including file).
    ///
    /// # Errors
    /// Unreadable files, and what ibsim would refuse.
    pub fn load(path: impl AsRef<Path>) -> Result<Netfile, NetfileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(Some(path), 0, format!("cannot read: {e}")))?;
        let mut reader = |name: &str, dir: Option<&Path>| -> Result<(String, PathBuf), String> {
            let p = match dir {
                Some(d) if Path::new(name).is_relative() => d.join(name),
                _ => PathBuf::from(name),
            };
            std::fs::read_to_string(&p)
                .map(|t| (t, p.clone()))
                .map_err(|e| format!("cannot read include \"{}\": {e}", p.display()))
        };
        Self::parse_with(&text, Some(path), &mut reader)
    }

    fn parse_with<'a>(
        text: &str,
        file: Option<&Path>,
        include: &'a mut Includer<'a>,
    ) -> Result<Netfile, NetfileError> {
        let mut p = Parser {
            out: Netfile::default(),
            absguids: [0, 0x10_0000, 0x20_0000],
            guids: [0, 0x10_0000, 0x20_0000],
            prefix: String::new(),
            vendid: 0,
            devid: 0,
            sysimgguid: 0,
            width: DEFAULT_WIDTH,
            speed: DEFAULT_SPEED,
            speed_ext: 0,
            depth: 0,
            include,
            ids: HashMap::new(),
            node_guids: HashSet::new(),
        };
        p.file(text, file)?;
        let out = p.out;
        out.check_links().map_err(|(line, m)| err(file, line, m))?;
        Ok(out)
    }

    /// The node with id `id`.
    pub fn node(&self, id: &str) -> Option<&NetNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// ibsim's `connect_ports` checks: every remote exists, has the port, and lists the link
    /// back. An error carries the line of the node whose port is at fault.
    fn check_links(&self) -> Result<(), (usize, String)> {
        let index: HashMap<&str, &NetNode> =
            self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        for n in &self.nodes {
            for p in &n.ports {
                let r = &p.remote;
                let Some(rn) = index.get(r.node.as_str()) else {
                    return Err((
                        n.line,
                        format!(
                            "can't find remote node \"{}\" connected to node \"{}\" port {}",
                            r.node, n.id, p.number
                        ),
                    ));
                };
                if r.port > rn.num_ports {
                    return Err((
                        n.line,
                        format!(
                            "bad remote port {} in node \"{}\" connected to node \"{}\" port {}",
                            r.port, r.node, n.id, p.number
                        ),
                    ));
                }
                let Some(back) = rn
                    .port(r.port)
                    .filter(|q| q.remote.node == n.id && q.remote.port == p.number)
                else {
                    return Err((
                        n.line,
                        format!(
                            "remote port {} in node \"{}\" is not connected to node \"{}\" port {}",
                            r.port, r.node, n.id, p.number
                        ),
                    ));
                };
                if p.width & back.width == 0 || p.speed & back.speed == 0 {
                    return Err((
                        n.line,
                        format!(
                        "mismatched enabled width or speed between node \"{}\" port {} (w={} s={}) \
                         and node \"{}\" port {} (w={} s={})",
                        n.id, p.number, p.width, p.speed, r.node, r.port, back.width, back.speed
                    ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The netfile text: GUID, vendor, device and system-image directives where ibsim's
    /// defaults would differ, every port line with the `lid N <W>x<SPEED>` comment ibsim
    /// reads the enabled width and speed from (or `w=`/`s=`/`e=` options where no such
    /// text expresses the masks: a Mellanox FDR10 enable is then lost, and a CA port's
    /// preset LID with it), then the `do` commands. Descriptions lose `"` (to `'`), `=` (to
    /// `:`) and control characters, and are cut to [`MAX_DESCRIPTION`] bytes. Node ids are written
    /// as they are: ids with a `module` prefix (`prefix#id`) are not written back as modules,
    /// so such a file does not load again.
    pub fn write(&self) -> String {
        let mut s = String::new();
        let by_id: HashMap<&str, &NetNode> =
            self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut devid = 0u16;
        for n in &self.nodes {
            let is_switch = n.node_type == NodeType::Switch;
            if n.vendor_id != 0 {
                let _ = writeln!(s, "vendid={:#x}", n.vendor_id);
            }
            if n.device_id != devid {
                let _ = writeln!(s, "devid={:#x}", n.device_id);
                devid = n.device_id;
            }
            if n.system_image_guid != n.guid && n.system_image_guid != 0 {
                let _ = writeln!(s, "sysimgguid={:#x}", n.system_image_guid);
            }
            let (directive, keyword) = match n.node_type {
                NodeType::Switch => ("switchguid", "Switch"),
                NodeType::Router => ("rtguid", "Rt"),
                _ => ("caguid", "Hca"),
            };
            let _ = writeln!(s, "{directive}={:#x}", n.guid);
            let _ = write!(
                s,
                "{keyword}\t{} \"{}\"\t\t# \"{}\"",
                n.num_ports,
                n.id,
                writable_description(&n.description)
            );
            if is_switch {
                let base = if n.enhanced_port0 == Some(true) {
                    "enhanced"
                } else {
                    "base"
                };
                let _ = write!(s, " {base} port 0 lid {} lmc {}", n.lid, n.lmc);
            }
            s.push('\n');
            for p in &n.ports {
                let far = by_id.get(p.remote.node.as_str());
                let _ = write!(
                    s,
                    "[{}]\t\"{}\"[{}]",
                    p.number, p.remote.node, p.remote.port
                );
                let token = speed_token(p);
                // ibsim reads a router port's width and speed from w=/s= only.
                if (token.is_none() || n.node_type == NodeType::Router)
                    && (p.width, p.speed, p.speed_ext) != (DEFAULT_WIDTH, DEFAULT_SPEED, 0)
                {
                    let _ = write!(s, " w={} s={} e={}", p.width, p.speed, p.speed_ext);
                }
                let rdesc = far.map_or(Cow::Borrowed(""), |f| writable_description(&f.description));
                let rlid = far.map_or(0, |f| {
                    if f.node_type == NodeType::Switch {
                        f.lid
                    } else {
                        f.port(p.remote.port).map_or(0, |q| q.lid)
                    }
                });
                s.push_str("\t\t# ");
                if !is_switch {
                    let _ = write!(s, "lid {} lmc {} ", p.lid, p.lmc);
                }
                let _ = write!(s, "\"{rdesc}\"");
                if let Some(t) = token {
                    let _ = write!(s, " lid {rlid} {t}");
                }
                s.push('\n');
            }
            s.push('\n');
        }
        for c in &self.commands {
            let _ = writeln!(s, "do{c}");
        }
        s
    }
}

impl fmt::Display for Netfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.write())
    }
}

impl NetNode {
    /// The listed port `number`.
    pub fn port(&self, number: u8) -> Option<&NetPort> {
        self.ports.iter().find(|p| p.number == number)
    }
}

impl NetPort {
    /// What ibsim makes active on the link between this port and `other` (`get_active_*`):
    /// (width code, speed code, extended speed code, Mellanox speed), the best both enable.
    pub fn active_with(&self, other: &NetPort) -> (u8, u8, u8, u8) {
        let best =
            |mask: u8, order: &[u8]| order.iter().copied().find(|b| mask & b != 0).unwrap_or(0);
        let width = best(self.width & other.width, &[8, 4, 2, 16, 1]);
        let speed = best(self.speed & other.speed, &[4, 2, 1]);
        let ext = best(self.speed_ext & other.speed_ext, &[8, 4, 2, 1]);
        let mlnx = self.mlnx_speed & other.mlnx_speed & 1;
        (width, speed, ext, mlnx)
    }
}

/// A description as a netfile can carry it: `"` becomes `'`, `=` (which ibsim would take
/// for a port option) `:`, control characters spaces; at most [`MAX_DESCRIPTION`] bytes
/// (what ibsim keeps).
pub fn writable_description(d: &str) -> Cow<'_, str> {
    let bad = |c: char| c == '"' || c == '=' || c.is_control();
    if d.len() <= MAX_DESCRIPTION && !d.chars().any(bad) {
        return Cow::Borrowed(d);
    }
    let mut s: String = d
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '=' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    truncate(&mut s, MAX_DESCRIPTION);
    Cow::Owned(s)
}

/// The `<W>x<SPEED>` text that gives exactly `p`'s masks (with ibsim's defaults of the
/// fields a token leaves alone), if there is one.
fn speed_token(p: &NetPort) -> Option<String> {
    link_token(p.width, p.speed, p.speed_ext, p.mlnx_speed)
}

/// The `<W>x<SPEED>` link token (`4xQDR`) that gives exactly these enabled masks (width,
/// speed, extended speed, Mellanox FDR10 speed), with ibsim's defaults of the fields a
/// token leaves alone; `None` if no token does.
pub fn link_token(width: u8, speed: u8, speed_ext: u8, mlnx_speed: u8) -> Option<String> {
    let w = match width {
        1 => 1,
        3 => 4,
        4 => 8,
        11 => 12,
        16 => 2,
        _ => return None,
    };
    let s = match (speed, speed_ext, mlnx_speed) {
        (1, 0, 0) => "SDR",
        (3, 0, 0) => "DDR",
        (7, 0, 0) => "QDR",
        (7, 1, 1) => "FDR",
        (7, 3, 1) => "EDR",
        (7, 7, 1) => "HDR",
        (7, 15, 1) => "NDR",
        (7, 0, 1) => "FDR10",
        _ => return None,
    };
    Some(format!("{w}x{s}"))
}

/// C `atoi` ([`ibmad::cnum::atoi`]): leading blanks, a sign, digits; 0 if none.
fn atoi(s: &str) -> i64 {
    ibmad::cnum::atoi(s.as_bytes())
}

/// C `strtoul(s, NULL, 0)` ([`ibmad::cnum::strtoull`]): blanks, sign, `0x` hex, `0` octal or
/// decimal; 0 if none.
fn strtoul(s: &str) -> u64 {
    ibmad::cnum::strtoull(s.as_bytes()).0
}

/// The first `"…"` of `s`: (contents, the rest after the closing quote).
fn quoted(s: &str) -> Option<(&str, &str)> {
    let a = s.find('"')?;
    let rest = &s[a + 1..];
    let b = rest.find('"')?;
    Some((&rest[..b], &rest[b + 1..]))
}

impl Parser<'_> {
    fn file(&mut self, text: &str, file: Option<&Path>) -> Result<(), NetfileError> {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut i = 0usize;
        while i < lines.len() {
            let line = lines[i].strip_suffix('\r').unwrap_or(lines[i]);
            let lineno = i + 1;
            if line.len() > MAX_LINE {
                return Err(err(
                    file,
                    lineno,
                    format!("line longer than {MAX_LINE} bytes (ibsim would split it)"),
                ));
            }
            i += 1;
            if line.starts_with("Switch") {
                i = self.node(&lines, i, line, NodeType::Switch, 6, file)?;
            } else if line.starts_with("Hca") || line.starts_with("Ca") {
                i = self.node(&lines, i, line, NodeType::ChannelAdapter, 3, file)?;
            } else if line.starts_with("Rt") {
                i = self.node(&lines, i, line, NodeType::Router, 3, file)?;
            } else if line.starts_with("switchguid") {
                self.guidbase(line, SWITCH)
                    .map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("hcaguids") || line.starts_with("caguid") {
                self.guidbase(line, CA).map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("rtguid") {
                self.guidbase(line, ROUTER)
                    .map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("vendid") {
                // NodeInfo.VendorID has 24 bits.
                self.vendid =
                    assignment(line).map_err(|m| err(file, lineno, m))? as u32 & 0xff_ffff;
            } else if line.starts_with("devid") {
                self.devid = assignment(line).map_err(|m| err(file, lineno, m))? as u16;
            } else if line.starts_with("sysimgguid") {
                self.sysimgguid = assignment(line).map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("width") {
                let v = assignment(line).map_err(|m| err(file, lineno, m))?;
                self.width = valid_width(v).map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("speed") {
                let v = assignment(line).map_err(|m| err(file, lineno, m))?;
                self.speed = valid_speed(v).map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("extspeed") {
                let v = assignment(line).map_err(|m| err(file, lineno, m))?;
                self.speed_ext = valid_speed_ext(v).map_err(|m| err(file, lineno, m))?;
            } else if line.starts_with("module") {
                let eq = line
                    .find('=')
                    .ok_or_else(|| err(file, lineno, "bad assignment: missing '=' sign"))?;
                let (prefix, _) = quoted(&line[eq + 1..])
                    .ok_or_else(|| err(file, lineno, "module: quoted prefix expected"))?;
                if prefix.len() > MAX_PREFIX {
                    return Err(err(file, lineno, format!("prefix {prefix} too long")));
                }
                self.prefix = prefix.to_string();
            } else if line.starts_with("include") {
                let (name, _) =
                    quoted(line).ok_or_else(|| err(file, lineno, "bad include file name"))?;
                if self.depth + 1 >= MAX_INCLUDE {
                    return Err(err(
                        file,
                        lineno,
                        format!("includes nested deeper than {MAX_INCLUDE}"),
                    ));
                }
                let dir = file.and_then(Path::parent);
                let (text, path) = (self.include)(name, dir).map_err(|m| err(file, lineno, m))?;
                self.depth += 1;
                let r = self.file(&text, Some(&path));
                self.depth -= 1;
                r?;
            } else if let Some(cmd) = line.strip_prefix("do") {
                self.out.commands.push(cmd.to_string());
            }
            // pdebug= and anything else: ignored.
        }
        Ok(())
    }

    fn guidbase(&mut self, line: &str, t: usize) -> Result<(), String> {
        let at = line
            .find('=')
            .or_else(|| line.find('+'))
            .ok_or("bad assignment: missing '=|+' sign")?;
        let v = strtoul(&line[at + 1..]);
        if line.as_bytes()[at] == b'+' {
            self.guids[t] = self.absguids[t].wrapping_add(v);
        } else {
            self.absguids[t] = v;
            self.guids[t] = v;
        }
        Ok(())
    }

    /// A node header and its port lines; returns the index of the next line to read.
    fn node(
        &mut self,
        lines: &[&str],
        mut i: usize,
        header: &str,
        node_type: NodeType,
        keyword: usize,
        file: Option<&Path>,
    ) -> Result<usize, NetfileError> {
        let lineno = i;
        let e = |m: String| err(file, lineno, m);
        let after = header.get(keyword..).unwrap_or("");
        let nports = after
            .find(|c: char| c.is_ascii_digit())
            .map_or(0, |d| strtoul(&after[d..]));
        if nports == 0 {
            return Err(e("node without a port count".into()));
        }
        let num_ports = u8::try_from(nports)
            .ok()
            .filter(|&n| n < 255)
            .ok_or_else(|| e(format!("{nports} ports: at most 254")))?;
        let (base, rest) = quoted(header).ok_or_else(|| e("can't find valid id".into()))?;
        if base.contains('#') || base.contains('@') {
            return Err(e(format!(
                "bad nodeid \"{base}\": '#' & '@' characters are reserved"
            )));
        }
        let id = if self.prefix.is_empty() {
            base.to_string()
        } else {
            format!("{}#{base}", self.prefix)
        };
        if id.len() > MAX_NODE_ID {
            return Err(e(format!(
                "node id \"{id}\" longer than {MAX_NODE_ID} bytes"
            )));
        }
        if self.ids.contains_key(&id) {
            return Err(e(format!("node id {id} already exists")));
        }
        let (desc, tail) = node_desc(rest);
        let t = match node_type {
            NodeType::Switch => SWITCH,
            NodeType::Router => ROUTER,
            _ => CA,
        };
        let guid = self.guids[t];
        if self.node_guids.contains(&guid) {
            return Err(e(format!("node {id} guid {guid:x} already exists")));
        }
        let is_switch = node_type == NodeType::Switch;
        self.guids[t] = guid.wrapping_add(if is_switch {
            1
        } else {
            u64::from(num_ports) + 1
        });
        let mut description = match desc {
            Some(d) if !d.is_empty() => d.to_string(),
            _ => id.clone(),
        };
        truncate(&mut description, MAX_DESCRIPTION);
        let mut node = NetNode {
            node_type,
            id: id.clone(),
            description,
            num_ports,
            guid,
            system_image_guid: if self.sysimgguid != 0 {
                self.sysimgguid
            } else {
                guid
            },
            vendor_id: self.vendid,
            device_id: self.devid,
            enhanced_port0: None,
            lid: 0,
            lmc: 0,
            ports: Vec::new(),
            line: lineno,
        };
        self.vendid = 0;
        self.sysimgguid = 0;
        if is_switch {
            if let Some(tail) = tail {
                if tail.contains("enhanced port 0") {
                    node.enhanced_port0 = Some(true);
                } else if tail.contains("base port 0") {
                    node.enhanced_port0 = Some(false);
                }
                let (lid, lmc) = lid_and_lmc(tail);
                node.lid = lid.unwrap_or(0);
                node.lmc = lmc.unwrap_or(0);
            }
        }
        // The port lines.
        let mut left = num_ports;
        while left > 0 && i < lines.len() {
            let line = lines[i].strip_suffix('\r').unwrap_or(lines[i]);
            let lineno = i + 1;
            i += 1;
            if line.len() > MAX_LINE {
                return Err(err(
                    file,
                    lineno,
                    format!("line longer than {MAX_LINE} bytes (ibsim would split it)"),
                ));
            }
            if line.starts_with('#') {
                continue;
            }
            if !line.starts_with('[') && !line.starts_with('@') {
                if !line.trim().is_empty() {
                    self.out.warnings.push((
                        lineno,
                        format!("line ends node \"{id}\" and is ignored (ibsim drops it): {line}"),
                    ));
                }
                break;
            }
            let port = self
                .port(line, node_type, num_ports)
                .map_err(|m| err(file, lineno, m))?;
            match node.ports.binary_search_by_key(&port.number, |p| p.number) {
                Ok(k) => node.ports[k] = port,
                Err(k) => node.ports.insert(k, port),
            }
            left -= 1;
        }
        self.ids.insert(id, self.out.nodes.len());
        self.node_guids.insert(node.guid);
        self.out.nodes.push(node);
        Ok(i)
    }

    fn port(&self, line: &str, node_type: NodeType, max: u8) -> Result<NetPort, String> {
        if line.starts_with('@') {
            return Err("port aliases ('@') are not supported".into());
        }
        let num = atoi(&line[1..]);
        if num < 0 || num > i64::from(max) {
            return Err(format!("bad port num {num}: <{line}>"));
        }
        if num == 0 {
            return Err(format!("bad port: <{line}>"));
        }
        let (remote, rest) =
            quoted(line).ok_or_else(|| format!("invalid remote nodeid: <{line}>"))?;
        if remote.contains('@') {
            return Err("port aliases ('@') are not supported".into());
        }
        let remote_id = if !self.prefix.is_empty() && !remote.contains('#') {
            format!("{}#{remote}", self.prefix)
        } else {
            remote.to_string()
        };
        let remote_port = match rest.strip_prefix('[') {
            Some(r) => {
                let v = atoi(r);
                if v <= 0 || v > 255 {
                    return Err(format!("invalid remote portnum {v}: <{line}>"));
                }
                v as u8
            }
            None => 1,
        };
        let mut port = NetPort {
            number: num as u8,
            remote: NetRemote {
                node: remote_id,
                port: remote_port,
            },
            width: self.width,
            speed: self.speed,
            speed_ext: self.speed_ext,
            mlnx_speed: 0,
            lid: 0,
            lmc: 0,
        };
        // Options: every '=' after the remote id, named by the nearest letter before it.
        let base = line.len() - rest.len();
        let bytes = line.as_bytes();
        let mut at = base;
        while let Some(off) = line.get(at + 1..).and_then(|s| s.find('=')) {
            let eq = at + 1 + off;
            let opt = bytes[..eq]
                .iter()
                .rposition(u8::is_ascii_alphabetic)
                .map(|k| bytes[k]);
            let value = strtoul(&line[eq + 1..]);
            match opt {
                Some(b'w') => port.width = valid_width(value)?,
                Some(b's') => {
                    port.speed = if value == 0 { 4 } else { valid_speed(value)? };
                }
                Some(b'e') => port.speed_ext = valid_speed_ext(value)?,
                _ => {}
            }
            at = eq;
        }
        // Connection data: the comment's "lid N <W>x<SPEED>" after the last quote.
        if node_type != NodeType::Router {
            if let Some(conn) = connection_data(rest) {
                if node_type == NodeType::ChannelAdapter {
                    let (lid, lmc) = lid_and_lmc(rest);
                    port.lid = lid.unwrap_or(0);
                    port.lmc = lmc.unwrap_or(0);
                }
                if let Some((w, speed)) = conn {
                    match w {
                        12 => port.width = 11,
                        8 => port.width = 4,
                        4 => port.width = 3,
                        1 => port.width = 1,
                        2 => port.width = 16,
                        _ => {}
                    }
                    let is = |name: &str| name.starts_with(speed);
                    if is("SDR") {
                        port.speed = 1;
                    } else if is("DDR") {
                        port.speed = 3;
                    } else if is("QDR") {
                        port.speed = 7;
                    } else if is("FDR") {
                        (port.speed, port.speed_ext, port.mlnx_speed) = (7, 1, 1);
                    } else if is("EDR") {
                        (port.speed, port.speed_ext, port.mlnx_speed) = (7, 3, 1);
                    } else if is("HDR") {
                        (port.speed, port.speed_ext, port.mlnx_speed) = (7, 7, 1);
                    } else if is("NDR") {
                        (port.speed, port.speed_ext, port.mlnx_speed) = (7, 15, 1);
                    } else if is("FDR10") {
                        (port.speed, port.mlnx_speed) = (7, 1);
                    }
                }
            }
        }
        Ok(port)
    }
}

/// `parse_node_desc`: the description after `#` and the rest of the line after it (`None`
/// when the description ran to the end of the line).
fn node_desc(rest: &str) -> (Option<&str>, Option<&str>) {
    let Some(h) = rest.find('#') else {
        return (None, Some(rest));
    };
    let s = rest[h + 1..].trim_start();
    if let Some(q) = s.strip_prefix('"') {
        return match q.find('"') {
            Some(e) => (Some(&q[..e]), Some(&q[e + 1..])),
            None => (Some(q), None),
        };
    }
    for stop in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(e) = s.find(stop) {
            return (Some(&s[..e]), Some(&s[e + 1..]));
        }
    }
    (Some(s), None)
}

/// `parse_port_lid_and_lmc`: the numbers after the first `lid ` and `lmc `.
fn lid_and_lmc(s: &str) -> (Option<u16>, Option<u8>) {
    let lid = s.find("lid ").map(|k| strtoul(&s[k + 4..]) as u16);
    let lmc = s.find("lmc ").map(|k| strtoul(&s[k + 4..]) as u8);
    (lid, lmc)
}

/// `parse_port_connection_data`'s match: the first `lid` with no `"` after it. `None`: no
/// such text (ibsim warns and leaves the port alone); `Some(None)`: it is not `lid N WxS`.
fn connection_data(rest: &str) -> Option<Option<(i64, &str)>> {
    let tail_start = rest.rfind('"').map_or(0, |q| q + 1);
    let k = rest[tail_start..].find("lid")? + tail_start;
    // If a "lid" before the last quote has no quote after it, it would match first; there is
    // none by construction, so k is the regex match.
    let s = &rest[k + 3..];
    let s2 = s.trim_start();
    if s2.len() == s.len() {
        return Some(None); // sscanf's " %d" would still accept; "lidX" has no number anyway
    }
    let n_end = s2
        .char_indices()
        .skip_while(|&(i, c)| i == 0 && (c == '-' || c == '+'))
        .find(|&(_, c)| !c.is_ascii_digit())
        .map_or(s2.len(), |(i, _)| i);
    if n_end == 0 || !s2[..n_end].bytes().any(|b| b.is_ascii_digit()) {
        return Some(None);
    }
    let s3 = s2[n_end..].trim_start();
    let w_end = s3
        .char_indices()
        .skip_while(|&(i, c)| i == 0 && (c == '-' || c == '+'))
        .find(|&(_, c)| !c.is_ascii_digit())
        .map_or(s3.len(), |(i, _)| i);
    if w_end == 0 || !s3[..w_end].bytes().any(|b| b.is_ascii_digit()) {
        return Some(None);
    }
    let width = atoi(&s3[..w_end]);
    let Some(s4) = s3[w_end..].strip_prefix('x') else {
        return Some(None);
    };
    let s4 = s4.trim_start();
    let tok_end = s4.find(char::is_whitespace).unwrap_or(s4.len()).min(9);
    let mut tok_end = tok_end;
    while !s4.is_char_boundary(tok_end) {
        tok_end -= 1;
    }
    if tok_end == 0 {
        return Some(None);
    }
    Some(Some((width, &s4[..tok_end])))
}

fn assignment(line: &str) -> Result<u64, String> {
    let eq = line.find('=').ok_or("bad assignment: missing '=' sign")?;
    Ok(strtoul(&line[eq + 1..]))
}

fn valid_width(v: u64) -> Result<u8, String> {
    if (1..=31).contains(&v) {
        Ok(v as u8)
    } else {
        Err(format!("bad enabled width {v} - should be between 1 to 31"))
    }
}

fn valid_speed(v: u64) -> Result<u8, String> {
    if (1..=7).contains(&v) {
        Ok(v as u8)
    } else {
        Err(format!("bad speed {v} - should be between 1 to 7"))
    }
}

fn valid_speed_ext(v: u64) -> Result<u8, String> {
    if v <= 15 {
        Ok(v as u8)
    } else {
        Err(format!(
            "bad extended speed {v} - should be between 0 to 15"
        ))
    }
}

fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut k = max;
        while !s.is_char_boundary(k) {
            k -= 1;
        }
        s.truncate(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../fabrics/example.net");

    #[test]
    fn example_net() {
        let n = Netfile::parse(EXAMPLE).unwrap();
        assert_eq!(n.nodes.len(), 6);
        assert!(n.warnings.is_empty(), "{:?}", n.warnings);
        let h1 = n.node("H-host1").unwrap();
        assert_eq!(h1.guid, 0x10_0000);
        assert_eq!(h1.description, "host1 HCA-1");
        let h2 = n.node("H-host2").unwrap();
        assert_eq!(h2.guid, 0x10_0002);
        assert_eq!(h2.num_ports, 2);
        let sw1 = n.node("S-sw1").unwrap();
        assert_eq!(sw1.guid, 0x20_0000);
        assert_eq!(sw1.enhanced_port0, Some(true));
        assert_eq!(n.node("S-sw2").unwrap().guid, 0x20_0001);
        let p = sw1.port(8).unwrap();
        assert_eq!(
            p.remote,
            NetRemote {
                node: "S-sw2".into(),
                port: 8
            }
        );
        assert_eq!((p.width, p.speed, p.speed_ext), (3, 7, 0));
    }

    #[test]
    fn fattree_1008() {
        let text = include_str!("../../../fabrics/fattree-1008.net");
        let n = Netfile::parse(text).unwrap();
        assert_eq!(n.nodes.len(), 1052);
        let back = Netfile::parse(&n.write()).unwrap();
        assert_eq!(back.nodes.len(), n.nodes.len());
        let links = |n: &Netfile| n.nodes.iter().map(|n| n.ports.len()).sum::<usize>();
        assert_eq!(links(&n), 2 * (1008 + 36 * 8), "every link from both ends");
        assert_eq!(links(&back), links(&n));
    }

    #[test]
    fn round_trip_through_the_writer() {
        let strip = |mut n: Netfile| {
            for node in &mut n.nodes {
                node.line = 0;
                node.enhanced_port0 = node.enhanced_port0.or(Some(false));
            }
            n.warnings.clear();
            n
        };
        // The example, and every netfile of the repository (odd.net's router ports take
        // their width and speed from w=/s= only: written so).
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fabrics");
        let mut texts = vec![("example".to_string(), EXAMPLE.to_string())];
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "net") {
                let text = std::fs::read_to_string(&path).unwrap();
                texts.push((path.display().to_string(), text));
            }
        }
        for (name, original) in texts {
            let n = Netfile::parse(&original).unwrap();
            let text = n.write();
            let back = Netfile::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(strip(back), strip(n), "{name}");
        }
    }

    #[test]
    fn grammar_details() {
        let text = "switchguid=0x500\ncaguid=0x900\nmodule=\"m\"\ndevid=0x1003\nvendid=0x2c9\n\
                    Switch 4 \"s\" # \"sw\" base port 0 lid 7 lmc 1\n\
                    [1] \"h\"[1] w=1 s=3\n# comment\n[2] \"h\"[2] # lid 3 lmc 0 \"x\" lid 3 12xFDR\n\n\
                    Ca 2 \"h\" # plain desc lid 9\n[1] \"s\"[1] w=1\n[2] \"s\"[2] # lid 5 lmc 2 \"sw\" lid 7 12xFDR\n\n\
                    do Error \"m#h\"[1] 5\n";
        let n = Netfile::parse(text).unwrap();
        let s = n.node("m#s").unwrap();
        assert_eq!(
            (s.guid, s.lid, s.lmc, s.enhanced_port0),
            (0x500, 7, 1, Some(false))
        );
        assert_eq!((s.vendor_id, s.device_id), (0x2c9, 0x1003));
        let p1 = s.port(1).unwrap();
        assert_eq!((p1.width, p1.speed), (1, 3));
        let p2 = s.port(2).unwrap();
        assert_eq!(
            (p2.width, p2.speed, p2.speed_ext, p2.mlnx_speed),
            (11, 7, 1, 1)
        );
        let h = n.node("m#h").unwrap();
        assert_eq!(
            (h.guid, h.description.as_str(), h.vendor_id, h.device_id),
            (0x900, "plain desc", 0, 0x1003)
        );
        assert_eq!(h.port(2).unwrap().lid, 5);
        assert_eq!(h.port(2).unwrap().lmc, 2);
        assert_eq!(n.commands, [" Error \"m#h\"[1] 5"]);
        let hp1 = h.port(1).unwrap();
        assert_eq!(hp1.active_with(p1), (1, 1, 0, 0), "1x SDR: both ends' best");
    }

    #[test]
    fn bad_inputs_are_errors() {
        for (text, what) in [
            ("Switch 4 \"a\"\n[1] \"b\"[1]\n", "can't find remote node"),
            (
                "Switch 4 \"a\"\n[1] \"b\"[1]\n\nSwitch 4 \"b\"\n[2] \"a\"[1]\n",
                "is not connected",
            ),
            ("Switch 4 \"a\"\n[9] \"b\"[1]\n", "bad port num"),
            ("Switch 4 \"a\"\n[0] \"b\"[1]\n", "bad port"),
            ("Switch \"a\"\n", "port count"),
            ("Switch 4 a\n", "valid id"),
            ("Switch 4 \"a#b\"\n", "reserved"),
            ("Switch 4 \"a\"\n\nSwitch 4 \"a\"\n", "already exists"),
            ("width=0\n", "bad enabled width"),
            ("include \"x.net\"\n", "include"),
            ("Switch 4 \"a\"\n[1] \"b\"[0]\n", "remote portnum"),
            ("Switch 300 \"a\"\n", "at most"),
            ("Switch 4 \"a\"\n[1] \"b\"[1] w=99\n", "width"),
            (
                "Switch 4 \"a\"\n[1] \"b\"[1] w=1\n\nSwitch 4 \"b\"\n[1] \"a\"[1] w=2\n",
                "mismatched",
            ),
        ] {
            let e = Netfile::parse(text).expect_err(text);
            assert!(e.to_string().contains(what), "{text:?}: {e}");
        }
        let long = format!("# {}\n", "x".repeat(300));
        assert!(Netfile::parse(&long).is_err());
    }

    #[test]
    fn load_follows_includes_relative_to_the_file() {
        let dir = std::env::temp_dir().join(format!("ibnetfile-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(
            dir.join("main.net"),
            "include \"sub/a.net\"\nSwitch 2 \"b\"\n[1] \"a\"[1]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("sub/a.net"),
            "caguid=0x50\nHca 1 \"a\"\n[1] \"b\"[1]\n\n",
        )
        .unwrap();
        std::fs::write(dir.join("loop.net"), "include \"loop.net\"\n").unwrap();
        let n = Netfile::load(dir.join("main.net")).unwrap();
        assert_eq!(n.nodes.len(), 2);
        assert_eq!(n.node("a").unwrap().guid, 0x50);
        let e = Netfile::load(dir.join("loop.net")).unwrap_err();
        assert!(e.to_string().contains("nested"), "{e}");
        let e = Netfile::load(dir.join("missing.net")).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mutated_inputs_never_panic() {
        let sample = "switchguid=0x10\nSwitch\t3 \"s\"\t# \"d\" enhanced port 0 lid 1 lmc 0\n\
                      [1]\t\"h\"[1] w=3 s=7 e=1\t# \"hd\" lid 2 4xQDR\n\n\
                      Hca\t1 \"h\"\t# \"hd\"\n[1]\t\"s\"[1]\t# lid 2 lmc 0 \"d\" lid 1 12xFDR10\n";
        assert!(Netfile::parse(sample).is_ok());
        let subs = [
            "\"", "[", "]", "#", "=", "0", "x", "\n", "é", " ", "lid ", "@", "+",
        ];
        for i in 0..=sample.len() {
            if !sample.is_char_boundary(i) {
                continue;
            }
            let _ = Netfile::parse(&sample[..i]);
            let j = (i + 1..=sample.len())
                .find(|&j| sample.is_char_boundary(j))
                .unwrap_or(i);
            for sub in subs {
                let text = format!("{}{sub}{}", &sample[..i], &sample[j..]);
                let _ = Netfile::parse(&text);
            }
        }
    }

    #[test]
    fn a_header_right_after_ports_is_dropped_as_ibsim_does() {
        let text = "Switch 2 \"a\"\n[1] \"a\"[2]\n[2] \"a\"[1]\nSwitch 2 \"b\"\n";
        let n = Netfile::parse(text).unwrap();
        assert_eq!(
            n.nodes.len(),
            2,
            "all ports read: the next line is a new node"
        );
        let text = "Switch 3 \"a\"\n[1] \"a\"[2]\n[2] \"a\"[1]\nSwitch 2 \"b\"\n";
        let n = Netfile::parse(text).unwrap();
        assert_eq!(n.nodes.len(), 1);
        assert_eq!(n.warnings.len(), 1);
    }
}
