//! The `ibnetdiscover` text format of infiniband-diags 44 (`infiniband-diags/ibnetdiscover.c`,
//! `util/node_name_map.c`): written byte for byte as the C tool prints it, and parsed back
//! ([`parse`](Fabric::parse_ibnetdiscover)).
//!
//! | C flag | here |
//! |---|---|
//! | (none) | [`Format::Topology`] |
//! | `-p`, `--ports` | [`Format::Ports`] |
//! | `-l`, `--list` / `-H` / `-S` / `-R` | [`Format::List`] (CAs, then switches, then routers) |
//! | `-s`, `--show` | [`WriteOptions::show_progress`]: [`Fabric::progress`] first |
//! | `-g`, `--grouping` | [`WriteOptions::grouping`] |
//! | `-f`, `--full` | [`WriteOptions::full`]: ` s=<speed> w=<width> v=<vlcap>` on port lines |
//! | `-m`, `--max_hops` | [`WriteOptions::max_hops`] |
//! | `--node-name-map <file>` | [`WriteOptions::node_name_map`], [`NodeNameMap`] |
//!
//! (infiniband-diags 44 has no `-G` or `-u`: its `ibnetdiscover -h` lists `--full, -f` and
//! no option to show port GUIDs; CA port GUIDs are always printed.)
//!
//! Quirks kept on purpose: a CA or router header shows the node's own (cleaned) description,
//! never the mapped name, while switch headers and every peer comment are mapped; a switch
//! port's extended speed is judged by port 0's capability mask; a switch without port 0
//! shows speed `???` (and `s=0`); the ports report (`-p`) lists ports from the highest number
//! down; with `-g`, CAs and routers in a numbered chassis are left out of the main list (and
//! routers are then printed nowhere).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::path::Path;

use ibmad::NodeType;

use crate::cnum::{c_isspace, strtoull};
use crate::diff::{topology_diff, Checks, Side, TopologyDiffItem};
use crate::model::{Chassis, Fabric, Node, Port, MLNX_SPEED_FDR10};

mod parse;

pub use parse::{generated_date, ParseError};

/// What `ibnetdiscover` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The topology file (no mode flag).
    #[default]
    Topology,
    /// `-p`: the ports report.
    Ports,
    /// `-l` (all three), `-H` (CAs), `-S` (switches), `-R` (routers): one line per node.
    List {
        /// List CAs.
        ca: bool,
        /// List switches.
        switch: bool,
        /// List routers.
        router: bool,
    },
}

/// How to write: the mode and the flags that change the text.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions<'a> {
    /// The mode.
    pub format: Format,
    /// `-s`: write [`Fabric::progress`] before the output, as libibnetdisc prints it during
    /// discovery.
    pub show_progress: bool,
    /// `-g`: chassis grouping.
    pub grouping: bool,
    /// `-f`: raw speed, width and VLCap codes on topology port lines.
    pub full: bool,
    /// `-m`: the max-hops and MAD-count header lines (from [`Fabric::max_hops_discovered`]
    /// and [`Fabric::total_mads_used`]; 0 when unknown).
    pub max_hops: bool,
    /// `--node-name-map`: names for node GUIDs.
    pub node_name_map: Option<&'a NodeNameMap>,
    /// The date in the `# Topology file: generated on <date>` line, as C's `ctime()` prints
    /// it without the newline (e.g. `Tue Dec  1 11:39:57 2026`); see [`ctime`].
    pub date: String,
}

/// The text C's `ctime()` gives for a time (without its newline): `Www Mmm dd hh:mm:ss yyyy`,
/// the day of the month padded with a space. The caller supplies the broken-down local time
/// (this crate does not read clocks or time zones).
///
/// `weekday` is 0 = Sunday, `month` 1 = January; out-of-range values print `???`.
pub fn ctime(year: i32, month: u8, day: u8, weekday: u8, hour: u8, min: u8, sec: u8) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let wd = DAYS.get(usize::from(weekday)).copied().unwrap_or("???");
    let mo = usize::from(month)
        .checked_sub(1)
        .and_then(|m| MONTHS.get(m))
        .copied()
        .unwrap_or("???");
    format!("{wd} {mo} {day:2} {hour:02}:{min:02}:{sec:02} {year}")
}

impl Fabric {
    /// Writes the fabric as `ibnetdiscover` with `opts` prints it.
    ///
    /// A reference that does not resolve (a remote node index out of range, a missing remote
    /// port) leaves that line out instead of panicking; [`Fabric::validate`] finds such
    /// models.
    ///
    /// # Errors
    /// Only those of `out`.
    pub fn write_ibnetdiscover(
        &self,
        opts: &WriteOptions<'_>,
        out: &mut impl Write,
    ) -> fmt::Result {
        let w = Writer {
            fabric: self,
            opts,
            names: opts.node_name_map,
        };
        if opts.show_progress {
            w.progress(out)?;
        }
        match opts.format {
            Format::Topology => w.topology(out),
            Format::Ports => w.ports_report(out),
            Format::List { ca, switch, router } => {
                for (on, t) in [
                    (ca, NodeType::ChannelAdapter),
                    (switch, NodeType::Switch),
                    (router, NodeType::Router),
                ] {
                    if on {
                        for (_, n) in self.nodes_of_type(t) {
                            w.list_node(n, out)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// [`Fabric::write_ibnetdiscover`] into a new `String`.
    pub fn to_ibnetdiscover(&self, opts: &WriteOptions<'_>) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_ibnetdiscover(opts, &mut s);
        s
    }
}

impl Fabric {
    /// Writes what C `ibnetdiscover --diff <saved>` prints with `self` as the current
    /// fabric (discovered, or `--load-cache`): the [`topology_diff`] items as topology
    /// lines, `< ` for the saved side and `> ` for the current one. `opts` gives the node
    /// name map and `-f` ([`WriteOptions::full`]); C's diff never groups, so
    /// [`WriteOptions::grouping`] is ignored, as are the format and the header options.
    /// Nothing is written when nothing differs.
    ///
    /// A port C would print without a peer (it dereferences the missing link and crashes:
    /// possible with `lid` on a switch's unlinked ports) prints nothing here, nor does the
    /// node header printed only for it ([`topology_diff`]).
    ///
    /// # Errors
    /// Only those of `out`.
    pub fn write_ibnetdiscover_diff(
        &self,
        saved: &Fabric,
        checks: Checks,
        opts: &WriteOptions<'_>,
        out: &mut impl Write,
    ) -> fmt::Result {
        let opts = WriteOptions {
            grouping: false,
            ..opts.clone()
        };
        let writer = |fabric| Writer {
            fabric,
            opts: &opts,
            names: opts.node_name_map,
        };
        let (old, new) = (writer(saved), writer(self));
        let side = |s: Side| match s {
            Side::Saved => &old,
            Side::Current => &new,
        };
        for line in topology_diff(saved, self, checks) {
            let switch = line.pass == NodeType::Switch;
            // `out_switch`/`out_ca` with an id prefix and a detail prefix.
            let header = |w: &Writer<'_>, n: &Node, id: &str, detail: &str, out: &mut _| {
                if switch {
                    w.switch_header(n, None, id, detail, out)
                } else {
                    w.ca_header(n, None, id, detail, out)
                }
            };
            match line.item {
                TopologyDiffItem::Only { side: s, node } => {
                    let w = side(s);
                    let Some(n) = w.fabric.nodes.get(node) else {
                        continue;
                    };
                    header(w, n, s.prefix(), s.prefix(), out)?;
                    for p in n
                        .ports
                        .iter()
                        .filter(|p| (1..=n.num_ports).contains(&p.number))
                    {
                        w.port_line(switch, n, p, s.prefix(), out)?;
                    }
                }
                TopologyDiffItem::Changed {
                    saved: i,
                    current: j,
                } => {
                    let (Some(a), Some(b)) = (saved.nodes.get(i), self.nodes.get(j)) else {
                        continue;
                    };
                    header(&old, a, "", Side::Saved.prefix(), out)?;
                    if switch {
                        new.switch_detail(b, Side::Current.prefix(), out)?;
                    } else {
                        new.ca_detail(b, Side::Current.prefix(), out)?;
                    }
                    out.write_char('\n')?;
                }
                TopologyDiffItem::Header { saved: i } => {
                    if let Some(a) = saved.nodes.get(i) {
                        header(&old, a, "", "", out)?;
                    }
                }
                TopologyDiffItem::NumPorts {
                    saved: i,
                    current: j,
                } => {
                    let (Some(a), Some(b)) = (saved.nodes.get(i), self.nodes.get(j)) else {
                        continue;
                    };
                    write!(
                        out,
                        "{}numports = {}\n{}numports = {}\n",
                        Side::Saved.prefix(),
                        a.num_ports,
                        Side::Current.prefix(),
                        b.num_ports
                    )?;
                }
                TopologyDiffItem::Port {
                    side: s,
                    node,
                    port,
                } => {
                    let w = side(s);
                    if let Some((n, p)) = w
                        .fabric
                        .nodes
                        .get(node)
                        .and_then(|n| Some((n, n.port(port)?)))
                    {
                        w.port_line(switch, n, p, s.prefix(), out)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Fabric::write_ibnetdiscover_diff`] into a new `String`.
    pub fn to_ibnetdiscover_diff(
        &self,
        saved: &Fabric,
        checks: Checks,
        opts: &WriteOptions<'_>,
    ) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_ibnetdiscover_diff(saved, checks, opts, &mut s);
        s
    }
}

struct Writer<'a> {
    fabric: &'a Fabric,
    opts: &'a WriteOptions<'a>,
    names: Option<&'a NodeNameMap>,
}

/// `clean_nodedesc`: every byte that is not printable ASCII becomes a space (C's `isprint`
/// in the C locale), so a multi-byte UTF-8 character becomes as many spaces as it has bytes.
pub fn clean_description(desc: &str) -> Cow<'_, str> {
    if desc.bytes().all(is_printable) {
        return Cow::Borrowed(desc);
    }
    Cow::Owned(
        desc.bytes()
            .map(|b| if is_printable(b) { b as char } else { ' ' })
            .collect(),
    )
}

/// C's `clean_nodedesc` on the raw NodeDescription bytes, in place: up to the first NUL,
/// every byte [`clean_description`] would make a space becomes one.
pub fn clean_description_bytes(desc: &mut [u8]) {
    for b in desc.iter_mut().take_while(|b| **b != 0) {
        if !is_printable(*b) {
            *b = b' ';
        }
    }
}

/// C's `isprint` in the C locale.
fn is_printable(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

/// `dump_linkwidth_compat`.
pub fn width_text(code: u8) -> &'static str {
    match code {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 => "2x",
        _ => "??",
    }
}

/// `dump_linkspeed_compat`.
fn speed_compat(code: u8) -> &'static str {
    match code {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        _ => "???",
    }
}

/// The speed `ibnetdiscover` shows from LinkSpeedActive (`speed`), the LinkSpeedExtActive
/// that counts (`speed_ext`, 0 when the capability mask says no extended speeds) and the
/// Mellanox ExtendedPortInfo LinkSpeedActive (`mlnx`): `SDR`, `DDR`, `QDR`, `FDR10`, `FDR`,
/// `EDR`, `HDR`, `NDR` or `???`.
pub fn speed_text(speed: u8, speed_ext: u8, mlnx: u8) -> &'static str {
    if speed != 4 && speed_ext == 0 {
        return speed_compat(speed);
    }
    match speed_ext {
        0 if mlnx & MLNX_SPEED_FDR10 != 0 => "FDR10",
        0 => speed_compat(speed),
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        _ => "???",
    }
}

/// `ibnetdiscover`'s node id: `"S-%016x"` (with the quotes), `H` for CAs, `R` for
/// routers, `?` otherwise.
pub fn node_id(node_type: NodeType, guid: u64) -> String {
    format!("\"{}-{guid:016x}\"", type_letter(node_type))
}

fn type_letter(t: NodeType) -> char {
    match t {
        NodeType::Switch => 'S',
        NodeType::ChannelAdapter => 'H',
        NodeType::Router => 'R',
        NodeType::Unknown(_) => '?',
    }
}

/// Xsigo GUID tests of libibnetdisc (`chassis.c`).
fn is_xsigo_guid(guid: u64) -> bool {
    guid & 0xffff_ff00_0000_0000 == 0x0013_9700_0000_0000
}

fn is_xsigo_hca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9702_0000_0000
}

fn is_xsigo_tca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9703_0000_0000
}

impl Writer<'_> {
    fn name<'n>(&'n self, node: &'n Node) -> Cow<'n, str> {
        match self.names.and_then(|m| m.get(node.guid)) {
            Some(name) => Cow::Borrowed(name),
            None => clean_description(&node.description),
        }
    }

    fn remote(&self, port: &Port) -> Option<(&Node, &Port)> {
        let r = port.remote?;
        let node = self.fabric.nodes.get(r.node)?;
        Some((node, node.port(r.port)?))
    }

    fn progress(&self, out: &mut impl Write) -> fmt::Result {
        for p in &self.fabric.progress {
            let Some(node) = self.fabric.nodes.get(p.node) else {
                continue;
            };
            let last = u32::from(p.lid) + (1u32 << p.lmc.min(31)) - 1;
            writeln!(
                out,
                "DR path slid {}; dlid {}; {} -> {} {} {{{:016x}}} portnum {} lid {}-{} \"{}\"",
                p.route.slid,
                p.route.dlid,
                p.route.path,
                if p.new { "new" } else { "known" },
                node.node_type,
                node.guid,
                p.port,
                p.lid,
                last,
                p.description
            )?;
        }
        Ok(())
    }

    fn topology(&self, out: &mut impl Write) -> fmt::Result {
        let f = self.fabric;
        let group = self.opts.grouping;
        write!(
            out,
            "#\n# Topology file: generated on {}\n#\n",
            self.opts.date
        )?;
        if self.opts.max_hops {
            write!(
                out,
                "# Reported max hops discovered: {}\n# Total MADs used: {}\n",
                f.max_hops_discovered.unwrap_or(0),
                f.total_mads_used.unwrap_or(0)
            )?;
        }
        if let Some(from) = f.from_node() {
            writeln!(
                out,
                "# Initiated from node {:016x} port {:016x}",
                from.guid, from.port_guid
            )?;
        }
        if group {
            for ch in f.chassis.iter().filter(|c| c.number != 0) {
                self.chassis(ch, out)?;
            }
            out.write_str("\nNon-Chassis Nodes\n")?;
        }
        for (_, n) in f.nodes_of_type(NodeType::Switch) {
            if group && in_chassis(n) {
                continue;
            }
            self.switch_section(n, None, out)?;
        }
        for t in [NodeType::ChannelAdapter, NodeType::Router] {
            for (_, n) in f.nodes_of_type(t) {
                if group && in_chassis(n) {
                    continue;
                }
                self.ca_section(n, None, out)?;
            }
        }
        Ok(())
    }

    fn chassis(&self, ch: &Chassis, out: &mut impl Write) -> fmt::Result {
        let nodes = &self.fabric.nodes;
        write!(out, "\nChassis {}", ch.number)?;
        if ch.guid != 0 {
            write!(out, " (guid {:#x})", ch.guid)?;
        }
        out.write_char('\n')?;
        let mut chname = None;
        if is_xsigo_guid(ch.guid) {
            for n in ch.nodes.iter().filter_map(|&i| nodes.get(i)) {
                if is_xsigo_hca(n.guid) {
                    chname = Some(n.description.as_str());
                    writeln!(out, "Hostname: {}", clean_description(&n.description))?;
                }
            }
        }
        out.write_str("\n# Spine Nodes")?;
        for n in ch
            .spines
            .iter()
            .skip(1)
            .take(18)
            .flatten()
            .filter_map(|&i| nodes.get(i))
        {
            self.switch_section(n, chname, out)?;
        }
        out.write_str("\n# Line Nodes")?;
        for n in ch
            .lines
            .iter()
            .skip(1)
            .take(36)
            .flatten()
            .filter_map(|&i| nodes.get(i))
        {
            self.switch_section(n, chname, out)?;
        }
        out.write_str("\n# Chassis Switches")?;
        for n in ch.nodes.iter().filter_map(|&i| nodes.get(i)) {
            if n.is_switch() {
                self.switch_section(n, chname, out)?;
            }
        }
        out.write_str("\n# Chassis CAs")?;
        for n in ch.nodes.iter().filter_map(|&i| nodes.get(i)) {
            if n.node_type == NodeType::ChannelAdapter {
                self.ca_section(n, chname, out)?;
            }
        }
        Ok(())
    }

    /// `out_ids`, each line after `prefix`.
    fn ids(
        &self,
        n: &Node,
        chname: Option<&str>,
        prefix: &str,
        out: &mut impl Write,
    ) -> fmt::Result {
        write!(
            out,
            "\n{prefix}vendid={:#x}\n{prefix}devid={:#x}\n",
            n.vendor_id, n.device_id
        )?;
        if n.system_image_guid != 0 {
            write!(out, "{prefix}sysimgguid={:#x}", n.system_image_guid)?;
        }
        let chassis = match &n.chassis {
            Some(c) if self.opts.grouping && c.number != 0 => Some(c),
            _ => None,
        };
        if let Some(c) = chassis {
            write!(out, "\t\t# Chassis {}", c.number)?;
            if let Some(name) = chname {
                write!(out, " ({})", clean_description(name))?;
            }
            if is_xsigo_tca(n.guid) {
                if let Some(rp) = n.port(1).and_then(|p| self.remote(p)) {
                    write!(out, " slot {}", rp.1.number)?;
                }
            }
        }
        if n.system_image_guid != 0 || chassis.is_some() {
            out.write_char('\n')?;
        }
        Ok(())
    }

    fn ext_port(&self, p: &Port) -> Option<String> {
        (self.opts.grouping && p.ext_port != 0).then(|| format!("[ext {}]", p.ext_port))
    }

    fn switch_section(&self, n: &Node, chname: Option<&str>, out: &mut impl Write) -> fmt::Result {
        self.switch_header(n, chname, "", "", out)?;
        for p in n
            .ports
            .iter()
            .filter(|p| (1..=n.num_ports).contains(&p.number))
        {
            self.switch_port(n, p, "", out)?;
        }
        Ok(())
    }

    /// `out_switch`: the id lines after `id_prefix`, the `Switch` line after `prefix`.
    fn switch_header(
        &self,
        n: &Node,
        chname: Option<&str>,
        id_prefix: &str,
        prefix: &str,
        out: &mut impl Write,
    ) -> fmt::Result {
        self.ids(n, chname, id_prefix, out)?;
        write!(
            out,
            "{id_prefix}switchguid={:#x}({:x})",
            n.guid, n.port_guid
        )?;
        if self.opts.grouping {
            out.write_str("\t# ")?;
            if let Some(c) = &n.chassis {
                if let Some(t) = &c.chassis_type {
                    write!(out, "{t} ")?;
                }
                if let Some(s) = &c.slot {
                    out.write_str(s)?;
                }
            }
        }
        out.write_char('\n')?;
        self.switch_detail(n, prefix, out)?;
        out.write_char('\n')
    }

    /// `out_switch_detail`: the `Switch` line without its newline.
    fn switch_detail(&self, n: &Node, prefix: &str, out: &mut impl Write) -> fmt::Result {
        write!(
            out,
            "{prefix}Switch\t{} {}\t\t# \"{}\" {} port 0 lid {} lmc {}",
            n.num_ports,
            node_id(n.node_type, n.guid),
            self.name(n),
            if n.enhanced_port0 { "enhanced" } else { "base" },
            n.lid,
            n.lmc
        )
    }

    /// The (speed, speed_ext) codes a topology port line uses: `out_switch_port` zeroes
    /// both for a switch without port 0; the extended speed counts only where the capability
    /// mask allows it ([`Fabric::port_speed_ext`]).
    fn port_codes(n: &Node, p: &Port) -> (u8, u8) {
        if n.is_switch() && n.port(0).is_none() {
            return (0, 0);
        }
        (p.speed, Fabric::port_speed_ext(n, p))
    }

    /// A port line as the pass of type `switch` prints it (`out_switch_port` or
    /// `out_ca_port`).
    fn port_line(
        &self,
        switch: bool,
        n: &Node,
        p: &Port,
        prefix: &str,
        out: &mut impl Write,
    ) -> fmt::Result {
        if switch {
            self.switch_port(n, p, prefix, out)
        } else {
            self.ca_port(n, p, prefix, out)
        }
    }

    /// `out_switch_port` after `prefix`; nothing for an unlinked port.
    fn switch_port(&self, n: &Node, p: &Port, prefix: &str, out: &mut impl Write) -> fmt::Result {
        let Some((rn, rp)) = self.remote(p) else {
            return Ok(());
        };
        write!(out, "{prefix}[{}]", p.number)?;
        if let Some(e) = self.ext_port(p) {
            out.write_str(&e)?;
        }
        write!(
            out,
            "\t{}[{}]{}",
            node_id(rn.node_type, rn.guid),
            rp.number,
            self.ext_port(rp).unwrap_or_default()
        )?;
        if !rn.is_switch() {
            write!(out, "({:x}) ", rp.guid)?;
        }
        let (speed, ext) = Self::port_codes(n, p);
        write!(
            out,
            "\t\t# \"{}\" lid {} {}{}",
            self.name(rn),
            rn.shown_lid(rp.number),
            width_text(p.width),
            speed_text(speed, ext, p.mlnx_speed)
        )?;
        if self.opts.full {
            write!(out, " s={} w={} v={}", speed, p.width, p.vl_cap)?;
        }
        if is_xsigo_tca(rp.guid) {
            write!(out, " slot {}", p.number)?;
        } else if is_xsigo_hca(rp.guid) {
            out.write_str(" (scp)")?;
        }
        out.write_char('\n')
    }

    fn ca_section(&self, n: &Node, chname: Option<&str>, out: &mut impl Write) -> fmt::Result {
        self.ca_header(n, chname, "", "", out)?;
        for p in n
            .ports
            .iter()
            .filter(|p| (1..=n.num_ports).contains(&p.number))
        {
            self.ca_port(n, p, "", out)?;
        }
        Ok(())
    }

    /// `out_ca`: the id lines after `id_prefix`, the `Ca`/`Rt` line after `prefix`.
    fn ca_header(
        &self,
        n: &Node,
        chname: Option<&str>,
        id_prefix: &str,
        prefix: &str,
        out: &mut impl Write,
    ) -> fmt::Result {
        self.ids(n, chname, id_prefix, out)?;
        let guid_tag = match n.node_type {
            NodeType::ChannelAdapter => "ca",
            NodeType::Router => "rt",
            _ => "???",
        };
        writeln!(out, "{id_prefix}{guid_tag}guid={:#x}", n.guid)?;
        self.ca_detail(n, prefix, out)?;
        if self.opts.grouping && is_xsigo_hca(n.guid) {
            out.write_str(" (scp)")?;
        }
        out.write_char('\n')
    }

    /// `out_ca_detail`: the `Ca`/`Rt` line without its newline (the node's own cleaned
    /// description, never the mapped name).
    fn ca_detail(&self, n: &Node, prefix: &str, out: &mut impl Write) -> fmt::Result {
        let header = match n.node_type {
            NodeType::ChannelAdapter => "Ca",
            NodeType::Router => "Rt",
            _ => "???",
        };
        write!(
            out,
            "{prefix}{header}\t{} {}\t\t# \"{}\"",
            n.num_ports,
            node_id(n.node_type, n.guid),
            clean_description(&n.description)
        )
    }

    /// `out_ca_port` after `prefix`; nothing for an unlinked port.
    fn ca_port(&self, n: &Node, p: &Port, prefix: &str, out: &mut impl Write) -> fmt::Result {
        let Some((rn, rp)) = self.remote(p) else {
            return Ok(());
        };
        write!(out, "{prefix}[{}]", p.number)?;
        if !n.is_switch() {
            write!(out, "({:x}) ", p.guid)?;
        }
        write!(out, "\t{}[{}]", node_id(rn.node_type, rn.guid), rp.number)?;
        if let Some(e) = self.ext_port(rp) {
            out.write_str(&e)?;
        }
        if !rn.is_switch() {
            write!(out, " ({:x}) ", rp.guid)?;
        }
        let (speed, ext) = Self::port_codes(n, p);
        write!(
            out,
            "\t\t# lid {} lmc {} \"{}\" lid {} {}{}",
            p.lid,
            p.lmc,
            self.name(rn),
            rn.shown_lid(rp.number),
            width_text(p.width),
            speed_text(speed, ext, p.mlnx_speed)
        )?;
        if self.opts.full {
            write!(out, " s={} w={} v={}", p.speed, p.width, p.vl_cap)?;
        }
        out.write_char('\n')
    }

    fn ports_report(&self, out: &mut impl Write) -> fmt::Result {
        for n in &self.fabric.nodes {
            for p in n
                .ports
                .iter()
                .rev()
                .filter(|p| (1..=n.num_ports).contains(&p.number))
            {
                // `dump_ports_report`: a switch without port 0 shows no width or speed.
                let (width, speed, ext) = if n.is_switch() && n.port(0).is_none() {
                    (0, 0, 0)
                } else {
                    (p.width, p.speed, Fabric::port_speed_ext(n, p))
                };
                let name = self.name(n);
                write!(
                    out,
                    "{:>2} {:5} {:2} 0x{:016x} {} {}",
                    ports_type(n.node_type),
                    n.shown_lid(p.number),
                    p.number,
                    p.guid,
                    width_text(width),
                    speed_text(speed, ext, p.mlnx_speed)
                )?;
                match self.remote(p) {
                    Some((rn, rp)) => writeln!(
                        out,
                        " - {:>2} {:5} {:2} 0x{:016x} ( '{}' - '{}' )",
                        ports_type(rn.node_type),
                        rn.shown_lid(rp.number),
                        rp.number,
                        rp.guid,
                        name,
                        self.name(rn)
                    )?,
                    None => writeln!(out, "{:36}'{}'", "", name)?,
                }
            }
        }
        Ok(())
    }

    fn list_node(&self, n: &Node, out: &mut impl Write) -> fmt::Result {
        let t = match n.node_type {
            NodeType::Switch => "Switch",
            NodeType::ChannelAdapter => "Ca",
            NodeType::Router => "Router",
            NodeType::Unknown(_) => "???",
        };
        writeln!(
            out,
            "{t}\t : 0x{:016x} ports {} devid {:#x} vendid {:#x} \"{}\"",
            n.guid,
            n.num_ports,
            n.device_id,
            n.vendor_id,
            self.name(n)
        )
    }
}

fn in_chassis(n: &Node) -> bool {
    n.chassis.as_ref().is_some_and(|c| c.number != 0)
}

/// `ports_nt_str_compat`.
fn ports_type(t: NodeType) -> &'static str {
    match t {
        NodeType::Switch => "SW",
        NodeType::ChannelAdapter => "CA",
        NodeType::Router => "RT",
        NodeType::Unknown(_) => "??",
    }
}

/// A node-name map (`--node-name-map <file>`): node GUID → name.
///
/// Read exactly as rdma-core's `util/node_name_map.c` reads it: the file is taken in
/// `fgets` chunks of at most 255 bytes (a longer line is split, and its tail is read as a
/// line of its own); leading whitespace is skipped; empty lines and lines starting with `#`
/// are ignored; the GUID is read as `strtoull(…, 0)` does (`0x` hex, leading-`0` octal, or
/// decimal; an optional sign; saturating at 2⁶⁴−1) and must be followed by whitespace, `#`
/// or the end; the name is the first run of characters other than `"` and `#` after the
/// whitespace that follows (so `0x1 "a b"` names `a b`, `0x1 a b # c` names `a b ` with
/// the trailing space, and `0x1 "a \"q\""` names `a \`). A line without a name adds
/// nothing. The first entry for a GUID wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNameMap {
    names: BTreeMap<u64, String>,
}

/// A node-name map line the C reader rejects (it then warns and uses no map at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeNameMapError {
    /// 1-based line number (of the chunk's first byte).
    pub line: usize,
    /// The offending text, as C's warning shows it (up to the newline).
    pub text: String,
}

impl fmt::Display for NodeNameMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "node name map line {}: no GUID (a number followed by a space, '#' or the end): {:?}",
            self.line, self.text
        )
    }
}

impl std::error::Error for NodeNameMapError {}

/// The map `ibnetdiscover` reads when no `--node-name-map` is given, if it exists
/// (`IBDIAG_NODENAME_MAP_PATH` of the Debian build).
pub const DEFAULT_NODE_NAME_MAP: &str = "/etc/rdma/ib-node-name-map";

impl NodeNameMap {
    /// An empty map.
    pub fn new() -> NodeNameMap {
        NodeNameMap::default()
    }

    /// Parses a map file's text (see the type docs for the rules).
    ///
    /// # Errors
    /// The first line C rejects: its whole map is then void.
    pub fn parse(text: &str) -> Result<NodeNameMap, NodeNameMapError> {
        Self::parse_bytes(text.as_bytes())
    }

    /// [`NodeNameMap::parse`] on raw bytes (names that are not UTF-8 are converted lossily).
    ///
    /// # Errors
    /// As [`NodeNameMap::parse`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<NodeNameMap, NodeNameMapError> {
        const CHUNK: usize = 255; // fgets into char line[256]
        let mut map = NodeNameMap::new();
        let mut rest = bytes;
        let mut line_no = 1;
        while !rest.is_empty() {
            let len = rest
                .iter()
                .take(CHUNK)
                .position(|&b| b == b'\n')
                .map_or(rest.len().min(CHUNK), |nl| nl + 1);
            let (chunk, tail) = rest.split_at(len);
            rest = tail;
            let this_line = line_no;
            if chunk.last() == Some(&b'\n') {
                line_no += 1;
            }
            // C string functions stop at a NUL.
            let chunk = &chunk[..chunk.iter().position(|&b| b == 0).unwrap_or(chunk.len())];
            let mut p = 0;
            while p < chunk.len() && c_isspace(chunk[p]) {
                p += 1;
            }
            if p == chunk.len() || chunk[p] == b'#' {
                continue;
            }
            let (guid, used) = strtoull(&chunk[p..]);
            let e = p + used;
            if used == 0 || !(e == chunk.len() || c_isspace(chunk[e]) || chunk[e] == b'#') {
                let text = &chunk[..chunk
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(chunk.len())];
                return Err(NodeNameMapError {
                    line: this_line,
                    text: String::from_utf8_lossy(text).into_owned(),
                });
            }
            let mut q = e;
            while q < chunk.len() && c_isspace(chunk[q]) {
                q += 1;
            }
            let value = &chunk[q..];
            let value = &value[..value
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(value.len())];
            // strtok(p, "\"#"): skip delimiters, take up to the next one.
            let is_delim = |b: &u8| *b == b'"' || *b == b'#';
            let Some(s) = value.iter().position(|b| !is_delim(b)) else {
                continue;
            };
            let token = &value[s..];
            let token = &token[..token.iter().position(is_delim).unwrap_or(token.len())];
            map.names
                .entry(guid)
                .or_insert_with(|| String::from_utf8_lossy(token).into_owned());
        }
        Ok(map)
    }

    /// Reads and parses the map file at `path`.
    ///
    /// # Errors
    /// The file cannot be read (`io::Error`), or a line is rejected (wrapped as
    /// `InvalidData`).
    pub fn load(path: impl AsRef<Path>) -> std::io::Result<NodeNameMap> {
        let bytes = std::fs::read(path)?;
        Self::parse_bytes(&bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    /// The name for `guid`, if the map has one.
    pub fn get(&self, guid: u64) -> Option<&str> {
        self.names.get(&guid).map(String::as_str)
    }

    /// Adds a name (the first one for a GUID wins, as in C). Returns whether it was added.
    pub fn insert(&mut self, guid: u64, name: impl Into<String>) -> bool {
        use std::collections::btree_map::Entry;
        match self.names.entry(guid) {
            Entry::Vacant(v) => {
                v.insert(name.into());
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// `remap_node_name`: the mapped name for `guid`, else the cleaned `description`.
    pub fn remap<'a>(&'a self, guid: u64, description: &'a str) -> Cow<'a, str> {
        match self.get(guid) {
            Some(n) => Cow::Borrowed(n),
            None => clean_description(description),
        }
    }

    /// `remap_node_name` with or without a map: [`NodeNameMap::remap`] through `map`, else
    /// the cleaned `description` (as C's tools call it with a NULL map).
    pub fn remap_or_clean<'a>(
        map: Option<&'a NodeNameMap>,
        guid: u64,
        description: &'a str,
    ) -> Cow<'a, str> {
        match map {
            Some(m) => m.remap(guid, description),
            None => clean_description(description),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_map_follows_the_c_reader() {
        let m = NodeNameMap::parse(
            "# comment\n\n  0x10 \"quoted name\"\n0X11\tunquoted # c\n012 octal\n13 \"a \\\"q\\\"\"\n\
             0x14\n0x15 \"\"\n0x10 \"second\"\n-1 minus\n99999999999999999999999 big\n0x16#x\n",
        )
        .unwrap();
        assert_eq!(m.get(0x10), Some("quoted name"));
        assert_eq!(m.get(0x11), Some("unquoted "));
        assert_eq!(m.get(0o12), Some("octal"));
        assert_eq!(m.get(13), Some("a \\"));
        assert_eq!(m.get(0x14), None);
        assert_eq!(m.get(0x15), None);
        assert_eq!(
            m.get(u64::MAX),
            Some("minus"),
            "first of -1 and the saturated value"
        );
        assert_eq!(m.get(0x16), Some("x"));
        assert_eq!(m.len(), 6);
        for bad in [
            "x1 name\n",
            "0x1name\n",
            "08 eight\n",
            "0xg nohex\n",
            "\"0x1\" q\n",
        ] {
            let e = NodeNameMap::parse(&format!("0x1 ok\n{bad}")).unwrap_err();
            assert_eq!(e.line, 2, "{bad:?}");
            assert_eq!(e.text, bad.trim_end_matches('\n'));
        }
    }

    #[test]
    fn remap_or_clean_with_and_without_a_map() {
        let m = NodeNameMap::parse("0x1 mapped\n").unwrap();
        assert_eq!(NodeNameMap::remap_or_clean(Some(&m), 1, "a\tb"), "mapped");
        assert_eq!(NodeNameMap::remap_or_clean(Some(&m), 2, "a\tb"), "a b");
        assert_eq!(NodeNameMap::remap_or_clean(None, 1, "a\tb"), "a b");
    }

    #[test]
    fn name_map_reads_long_lines_in_fgets_chunks() {
        let long = format!("0x1 {}\n", "n".repeat(300));
        let m = NodeNameMap::parse(&long).unwrap_err();
        // The tail (after 255 bytes) is read as a line of its own and is no GUID.
        assert_eq!(m.line, 1);
        let ok = format!("0x1 {}\n0x2 two\n", "n".repeat(200));
        let m = NodeNameMap::parse(&ok).unwrap();
        assert_eq!(m.get(0x1).map(str::len), Some(200));
        assert_eq!(m.get(2), Some("two"));
    }

    #[test]
    fn speed_and_width_texts() {
        assert_eq!(speed_text(4, 0, 0), "QDR");
        assert_eq!(speed_text(4, 0, 1), "FDR10");
        assert_eq!(speed_text(2, 0, 1), "DDR");
        assert_eq!(speed_text(4, 1, 0), "FDR");
        assert_eq!(speed_text(0, 2, 0), "EDR");
        assert_eq!(speed_text(0, 4, 0), "HDR");
        assert_eq!(speed_text(0, 8, 0), "NDR");
        assert_eq!(speed_text(0, 16, 0), "???");
        assert_eq!(speed_text(3, 0, 0), "???");
        assert_eq!(width_text(16), "2x");
        assert_eq!(width_text(3), "??");
        assert_eq!(
            ctime(2026, 12, 1, 2, 11, 39, 57),
            "Tue Dec  1 11:39:57 2026"
        );
        assert_eq!(clean_description("a\tb\u{e9}"), "a b  ");
        let mut raw = *b"a\tb\xc3\xa9\0\x01";
        clean_description_bytes(&mut raw);
        assert_eq!(&raw, b"a b  \0\x01");
    }
}
