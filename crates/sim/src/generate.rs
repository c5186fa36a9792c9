//! Fabrics by shape, built in O(N) straight through [`Builder`] (no netfile text on the
//! way): two-level fat trees ([`FatTree`]), three-level fat trees ([`FatTree3`]), rings
//! ([`Ring`]) and 2-D meshes and tori ([`Mesh`]); the built-in fabric names ([`Spec`],
//! [`Fabric::load_named`], meant for `UMAD_SIM=fattree:36,8,28`); and netfile text for any
//! fabric ([`Fabric::to_netfile`]).
//!
//! A generated fabric is the one its netfile ([`Spec::netfile`]) loads into: node ids, GUIDs
//! (ibsim's defaults: CAs from 0x100000, each taking its port count + 1 GUIDs; switches from
//! 0x200000), NodeDescriptions, port numbers and enabled widths and speeds (4x QDR on every
//! link) are the same, node for node and port for port; HCAs come first, so the first HCA's
//! port 1 is ibsim's default attach point. For two-level fat trees the text is byte for byte
//! what `cargo xtask gen-fattree` has always written (`fabrics/fattree-1008.net` is
//! `fattree:36,8,28`), and `fabrics/fattree3-1760.net` is `fattree3:12,8,16,8,4,24` node for
//! node (its header comment aside, the same text).
//!
//! Every shape is checked before anything is built: counts of at least 1, at most
//! [`MAX_SWITCH_PORTS`] ports a switch, and no more LIDs than the unicast LID space has (one
//! for every HCA and every switch), so absurd sizes are refused with what is wrong, never
//! allocated.

use std::fmt::{self, Write as _};
use std::path::Path;
use std::str::FromStr;

use ibmad::NodeType;
use ibnetfile::Netfile;

use crate::model::{
    Builder, Fabric, NodeIdx, NodeSpec, Origin, Port, MAX_SWITCH_PORTS, MAX_UNICAST_LID,
};
use crate::{Error, Result};

/// The project's example fabric (`fabrics/example.net`: 2 switches, 4 HCAs, one HCA port
/// unconnected), built in: the fabric named `example`.
pub const EXAMPLE_NETFILE: &str = include_str!("../fabrics/example.net");

/// ibsim's first default CA GUID (each CA takes its port count + 1 GUIDs).
pub const CA_GUID_BASE: u64 = 0x10_0000;
/// ibsim's first default switch GUID (each switch takes one).
pub const SWITCH_GUID_BASE: u64 = 0x20_0000;

/// The built-in fabric names, with their parameters (what [`Spec::parse`] accepts).
pub const NAMES: &[&str] = &[
    "example",
    "fattree:LEAVES,SPINES,HOSTS_PER_LEAF[,RADIX[,LINKS]]",
    "fattree3:PODS,LEAVES_PER_POD,HOSTS_PER_LEAF,AGGS_PER_POD,CORES_PER_AGG[,RADIX]",
    "ring:SWITCHES[,HOSTS]",
    "mesh:WIDTHxHEIGHT[,HOSTS]",
    "torus:WIDTHxHEIGHT[,HOSTS]",
];

/// Default switch radix of the fat trees (36 ports).
pub const DEFAULT_RADIX: usize = 36;

/// LinkWidthEnabled 1x + 4x and LinkSpeedEnabled SDR + DDR + QDR: what a netfile's
/// `lid 0 4xQDR` comment enables, on both ends of every generated link.
const WIDTH_4X: u8 = 3;
const SPEED_QDR: u8 = 7;

/// ibsim 0.10's default capacities (`-N`, `-S`, `-P`).
const IBSIM_MAX_NODES: usize = 2048;
const IBSIM_MAX_SWITCHES: usize = 256;
const IBSIM_MAX_PORTS: usize = 13312;

/// A two-level fat tree: `leaves` leaf switches, each with `hosts_per_leaf` single-port HCAs
/// on its ports `1..=hosts_per_leaf` and `links` uplinks to every spine on the ports that
/// follow (spine `s`'s links first, then spine `s + 1`'s); `spines` spine switches whose
/// ports `(l - 1) * links + 1 ..= l * links` go to leaf `l`. Every switch has `radix` ports.
///
/// Names: `H-host0001`.. (description `host0001 HCA-1`), `S-leaf01`.., `S-spine01`..
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FatTree {
    /// Number of leaf switches.
    pub leaves: usize,
    /// Number of spine switches.
    pub spines: usize,
    /// HCAs on each leaf.
    pub hosts_per_leaf: usize,
    /// Ports of every switch.
    pub radix: usize,
    /// Links between each leaf and each spine (1 in the classic tree).
    pub links: usize,
}

/// A three-level fat tree: `pods` pods, each of `leaves_per_pod` leaves with
/// `hosts_per_leaf` HCAs (leaf ports `1..=hosts_per_leaf`) and `aggs_per_pod` aggregation
/// switches (leaf `l` port `hosts_per_leaf + a` → agg `a` port `l`); agg `a` of every pod
/// goes to the core switches of group `a` (agg port `leaves_per_pod + u` → core `(a, u)`
/// port `pod`), `cores_per_agg` of them: `aggs_per_pod × cores_per_agg` cores.
///
/// Names: `H-host0001`.. numbered pod by pod, leaf by leaf; `S-p01leaf1`, `S-p01agg1`,
/// `S-core<a><u>` (each number zero-padded to the width of its largest value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FatTree3 {
    /// Number of pods.
    pub pods: usize,
    /// Leaf switches in a pod.
    pub leaves_per_pod: usize,
    /// HCAs on each leaf.
    pub hosts_per_leaf: usize,
    /// Aggregation switches in a pod (one link to every leaf of the pod).
    pub aggs_per_pod: usize,
    /// Uplinks of each aggregation switch, each to its own core switch.
    pub cores_per_agg: usize,
    /// Ports of every switch.
    pub radix: usize,
}

/// A ring of `switches` switches (`S-ring1`..: port 1 → the next switch's port 2, the last
/// back to the first), each with `hosts` HCAs on ports 3.. (`H-r<n>h<k>`, as in
/// `fabrics/ring.net`). Switches have `2 + hosts` ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ring {
    /// Switches in the ring (at least 2; two make a pair of parallel links).
    pub switches: usize,
    /// HCAs on each switch.
    pub hosts: usize,
}

/// A `width × height` grid of switches: port 1 east (x + 1), 2 west, 3 south (y + 1),
/// 4 north, and `hosts` HCAs on ports 5..; a torus also links the last column to the first
/// and the last row to the first. Switches have `4 + hosts` ports.
///
/// Names: `S-mesh<y><x>` (a torus: `S-torus<y><x>`), 0-based and zero-padded to the width of
/// the largest value, as in `fabrics/ring.net`; HCAs `H-m<y><x>h<k>` (`H-t<y><x>h<k>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mesh {
    /// Switches in a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// HCAs on each switch.
    pub hosts: usize,
    /// Whether the edges wrap around (a torus: each dimension at least 2).
    pub torus: bool,
}

/// A fabric by name: the built-in example or a generated shape. Parsed from the names in
/// [`NAMES`] ([`Spec::parse`], [`FromStr`]); written back the same way ([`fmt::Display`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Spec {
    /// The project's example fabric ([`EXAMPLE_NETFILE`]).
    Example,
    /// A two-level fat tree.
    FatTree(FatTree),
    /// A three-level fat tree.
    FatTree3(FatTree3),
    /// A ring.
    Ring(Ring),
    /// A 2-D mesh or torus.
    Mesh(Mesh),
}

/// How many of what a shape has, known before it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Size {
    /// Single-port HCAs.
    pub hosts: usize,
    /// Switches.
    pub switches: usize,
    /// Physical ports of all the switches together.
    pub switch_ports: usize,
    /// Links (cables).
    pub links: usize,
}

impl Size {
    /// Nodes: HCAs and switches.
    pub fn nodes(&self) -> usize {
        self.hosts.saturating_add(self.switches)
    }

    /// LIDs a configured fabric needs: one for every HCA port and every switch.
    pub fn lids(&self) -> usize {
        self.nodes()
    }

    /// The flags ibsim 0.10 needs beyond its default capacities (`-N`, `-S`, `-P`, each
    /// rounded up to a power of two), empty when the defaults suffice.
    pub fn ibsim_flags(&self) -> Vec<String> {
        let nodes = self.nodes();
        let ports = self
            .hosts
            .saturating_add(self.switch_ports)
            .saturating_add(self.switches);
        let mut flags = Vec::new();
        if nodes > IBSIM_MAX_NODES {
            flags.push(format!("-N {}", nodes.next_power_of_two()));
        }
        if self.switches > IBSIM_MAX_SWITCHES {
            flags.push(format!("-S {}", self.switches.next_power_of_two()));
        }
        if ports > IBSIM_MAX_PORTS {
            flags.push(format!("-P {}", ports.next_power_of_two()));
        }
        flags
    }
}

/// An error about the shape named `name`.
fn refuse(name: &str, what: String) -> Error {
    Error::Invalid {
        origin: Origin {
            file: Some(name.to_string()),
            line: 0,
        },
        what,
    }
}

/// Checks what every shape must satisfy: `ports` a switch within 1..=254, and the LID space.
fn check_common(name: &str, ports: &[(&str, usize)], size: &Size) -> Result<()> {
    for &(what, n) in ports {
        if n > usize::from(MAX_SWITCH_PORTS) {
            return Err(refuse(
                name,
                format!("{what} needs {n} ports; IBA allows at most {MAX_SWITCH_PORTS} a switch"),
            ));
        }
    }
    if size.lids() > usize::from(MAX_UNICAST_LID) {
        return Err(refuse(
            name,
            format!(
                "{} HCAs and {} switches need {} LIDs; the unicast LID space has {}",
                size.hosts,
                size.switches,
                size.lids(),
                MAX_UNICAST_LID
            ),
        ));
    }
    Ok(())
}

/// Decimal digits of `n` (1 for 0).
fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// `1 HCA`, `2 HCAs`.
fn hcas(n: usize) -> String {
    if n == 1 {
        "1 HCA".into()
    } else {
        format!("{n} HCAs")
    }
}

/// A port number already checked to fit.
fn port(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// Adds nodes with ibsim's default GUIDs and 4x QDR links, through [`Builder`].
struct Gen {
    b: Builder,
    origin: Origin,
    ca_guid: u64,
    switch_guid: u64,
}

impl Gen {
    fn new(name: String) -> Gen {
        Gen {
            b: Builder::new(),
            origin: Origin {
                file: Some(name),
                line: 0,
            },
            ca_guid: CA_GUID_BASE,
            switch_guid: SWITCH_GUID_BASE,
        }
    }

    fn node(
        &mut self,
        node_type: NodeType,
        id: String,
        description: String,
        ports: u8,
    ) -> Result<NodeIdx> {
        let switch = node_type == NodeType::Switch;
        let guid = if switch {
            self.switch_guid
        } else {
            self.ca_guid
        };
        let idx = self.b.node(NodeSpec {
            node_type,
            id,
            description,
            num_ports: ports,
            guid,
            system_image_guid: guid,
            vendor_id: 0,
            device_id: 0,
            enhanced_port0: switch,
            origin: self.origin.clone(),
        })?;
        if switch {
            self.switch_guid += 1;
        } else {
            self.ca_guid += u64::from(ports) + 1;
        }
        Ok(idx)
    }

    /// A single-port HCA `H-<name>` described `<name> HCA-1`.
    fn host(&mut self, name: &str) -> Result<NodeIdx> {
        self.node(
            NodeType::ChannelAdapter,
            format!("H-{name}"),
            format!("{name} HCA-1"),
            1,
        )
    }

    /// A switch `S-<name>` described `<name>`, with an enhanced port 0.
    fn switch(&mut self, name: &str, ports: usize) -> Result<NodeIdx> {
        self.node(
            NodeType::Switch,
            format!("S-{name}"),
            name.to_string(),
            port(ports),
        )
    }

    /// A 4x QDR link.
    fn link(&mut self, a: (NodeIdx, usize), b: (NodeIdx, usize)) -> Result<()> {
        let (a, b) = ((a.0, port(a.1)), (b.0, port(b.1)));
        self.b.link(a, b, &self.origin)?;
        for (n, p) in [a, b] {
            if let Some(p) = self.b.port_mut(n, p) {
                p.width_enabled = WIDTH_4X;
                p.speed_enabled = SPEED_QDR;
            }
        }
        Ok(())
    }

    fn finish(self) -> Fabric {
        self.b.build()
    }
}

impl FatTree {
    /// The classic tree: one link between each leaf and spine, [`DEFAULT_RADIX`] ports.
    pub fn new(leaves: usize, spines: usize, hosts_per_leaf: usize) -> FatTree {
        FatTree {
            leaves,
            spines,
            hosts_per_leaf,
            radix: DEFAULT_RADIX,
            links: 1,
        }
    }

    /// What it has.
    pub fn size(&self) -> Size {
        let hosts = self.leaves.saturating_mul(self.hosts_per_leaf);
        let switches = self.leaves.saturating_add(self.spines);
        Size {
            hosts,
            switches,
            switch_ports: switches.saturating_mul(self.radix),
            links: hosts.saturating_add(
                self.leaves
                    .saturating_mul(self.spines)
                    .saturating_mul(self.links),
            ),
        }
    }

    /// Checks the dimensions: all at least 1, `radix` in 2..=254, a leaf's
    /// `hosts_per_leaf + spines × links` and a spine's `leaves × links` ports within
    /// `radix`, and LIDs for all.
    pub fn validate(&self) -> Result<()> {
        let name = Spec::FatTree(*self).to_string();
        let FatTree {
            leaves,
            spines,
            hosts_per_leaf: hpl,
            radix,
            links,
        } = *self;
        if leaves == 0 || spines == 0 || hpl == 0 {
            return Err(refuse(
                &name,
                "LEAVES, SPINES and HOSTS_PER_LEAF must be at least 1".into(),
            ));
        }
        if links == 0 {
            return Err(refuse(&name, "LINKS must be at least 1".into()));
        }
        if !(2..=usize::from(MAX_SWITCH_PORTS)).contains(&radix) {
            return Err(refuse(
                &name,
                format!("RADIX must be in 2..={MAX_SWITCH_PORTS} (IBA: at most {MAX_SWITCH_PORTS} ports a switch), got {radix}"),
            ));
        }
        let leaf = hpl.saturating_add(spines.saturating_mul(links));
        if leaf > radix {
            return Err(refuse(
                &name,
                format!("a leaf needs HOSTS_PER_LEAF + SPINES x LINKS = {leaf} ports but RADIX is {radix}"),
            ));
        }
        let spine = leaves.saturating_mul(links);
        if spine > radix {
            return Err(refuse(
                &name,
                format!("a spine needs LEAVES x LINKS = {spine} ports but RADIX is {radix}"),
            ));
        }
        check_common(&name, &[], &self.size())
    }

    /// Builds it (checked first).
    pub fn build(&self) -> Result<Fabric> {
        self.validate()?;
        let FatTree {
            leaves,
            spines,
            hosts_per_leaf: hpl,
            radix,
            links,
        } = *self;
        let mut g = Gen::new(Spec::FatTree(*self).to_string());
        let mut hosts = Vec::with_capacity(leaves * hpl);
        for h in 1..=leaves * hpl {
            hosts.push(g.host(&format!("host{h:04}"))?);
        }
        let mut leaf = Vec::with_capacity(leaves);
        for l in 1..=leaves {
            leaf.push(g.switch(&format!("leaf{l:02}"), radix)?);
        }
        let mut spine = Vec::with_capacity(spines);
        for s in 1..=spines {
            spine.push(g.switch(&format!("spine{s:02}"), radix)?);
        }
        for (l, &lsw) in leaf.iter().enumerate() {
            for p in 1..=hpl {
                g.link((hosts[l * hpl + p - 1], 1), (lsw, p))?;
            }
            for (s, &ssw) in spine.iter().enumerate() {
                for j in 1..=links {
                    g.link((lsw, hpl + s * links + j), (ssw, l * links + j))?;
                }
            }
        }
        Ok(g.finish())
    }

    /// The netfile's header comment (what `cargo xtask gen-fattree` has always written).
    fn header(&self) -> String {
        let FatTree {
            leaves,
            spines,
            hosts_per_leaf: hpl,
            radix,
            links,
        } = *self;
        let size = self.size();
        let (each, args) = if links == 1 {
            (String::new(), format!("{leaves} {spines} {hpl} {radix}"))
        } else {
            (
                format!(" ({links} links to each leaf)"),
                format!("{leaves} {spines} {hpl} {radix} {links}"),
            )
        };
        format!(
            "# Two-level fat tree: {leaves} leaves x {hpl} hosts, {spines} spines{each}, radix {radix}\n\
             # ({} HCAs, {} switches). Generated by `cargo xtask gen-fattree {args}`.\n\
             # Default attach point: H-host0001 port 1.\n",
            size.hosts, size.switches
        )
    }
}

impl FatTree3 {
    /// What it has.
    pub fn size(&self) -> Size {
        let leaves = self.pods.saturating_mul(self.leaves_per_pod);
        let aggs = self.pods.saturating_mul(self.aggs_per_pod);
        let cores = self.aggs_per_pod.saturating_mul(self.cores_per_agg);
        let hosts = leaves.saturating_mul(self.hosts_per_leaf);
        let switches = leaves.saturating_add(aggs).saturating_add(cores);
        Size {
            hosts,
            switches,
            switch_ports: switches.saturating_mul(self.radix),
            links: hosts
                .saturating_add(leaves.saturating_mul(self.aggs_per_pod))
                .saturating_add(aggs.saturating_mul(self.cores_per_agg)),
        }
    }

    /// Checks the dimensions: all at least 1, `radix` in 2..=254, a leaf's
    /// `hosts_per_leaf + aggs_per_pod`, an agg's `leaves_per_pod + cores_per_agg` and a
    /// core's `pods` ports within `radix`, and LIDs for all.
    pub fn validate(&self) -> Result<()> {
        let name = Spec::FatTree3(*self).to_string();
        let FatTree3 {
            pods,
            leaves_per_pod: lpp,
            hosts_per_leaf: hpl,
            aggs_per_pod: app,
            cores_per_agg: cpa,
            radix,
        } = *self;
        if [pods, lpp, hpl, app, cpa].contains(&0) {
            return Err(refuse(
                &name,
                "PODS, LEAVES_PER_POD, HOSTS_PER_LEAF, AGGS_PER_POD and CORES_PER_AGG must be at least 1".into(),
            ));
        }
        if !(2..=usize::from(MAX_SWITCH_PORTS)).contains(&radix) {
            return Err(refuse(
                &name,
                format!("RADIX must be in 2..={MAX_SWITCH_PORTS} (IBA: at most {MAX_SWITCH_PORTS} ports a switch), got {radix}"),
            ));
        }
        for (what, need) in [
            (
                "a leaf needs HOSTS_PER_LEAF + AGGS_PER_POD",
                hpl.saturating_add(app),
            ),
            (
                "an aggregation switch needs LEAVES_PER_POD + CORES_PER_AGG",
                lpp.saturating_add(cpa),
            ),
            ("a core switch needs PODS", pods),
        ] {
            if need > radix {
                return Err(refuse(
                    &name,
                    format!("{what} = {need} ports but RADIX is {radix}"),
                ));
            }
        }
        check_common(&name, &[], &self.size())
    }

    /// Builds it (checked first).
    pub fn build(&self) -> Result<Fabric> {
        self.validate()?;
        let FatTree3 {
            pods,
            leaves_per_pod: lpp,
            hosts_per_leaf: hpl,
            aggs_per_pod: app,
            cores_per_agg: cpa,
            radix,
        } = *self;
        let mut g = Gen::new(Spec::FatTree3(*self).to_string());
        let pw = digits(pods).max(2);
        let (aw, uw) = (digits(app), digits(cpa));
        let size = self.size();
        let mut hosts = Vec::with_capacity(size.hosts);
        for h in 1..=size.hosts {
            hosts.push(g.host(&format!("host{h:04}"))?);
        }
        // Leaves and aggs by (pod, number), 0-based; cores by (group a, u).
        let mut leaf = Vec::with_capacity(pods * lpp);
        for p in 1..=pods {
            for l in 1..=lpp {
                leaf.push(g.switch(&format!("p{p:0pw$}leaf{l}"), radix)?);
            }
        }
        let mut agg = Vec::with_capacity(pods * app);
        for p in 1..=pods {
            for a in 1..=app {
                agg.push(g.switch(&format!("p{p:0pw$}agg{a}"), radix)?);
            }
        }
        let mut core = Vec::with_capacity(app * cpa);
        for a in 1..=app {
            for u in 1..=cpa {
                core.push(g.switch(&format!("core{a:0aw$}{u:0uw$}"), radix)?);
            }
        }
        for (i, &lsw) in leaf.iter().enumerate() {
            for port in 1..=hpl {
                g.link((hosts[i * hpl + port - 1], 1), (lsw, port))?;
            }
            let (p, l) = (i / lpp, i % lpp);
            for a in 0..app {
                g.link((lsw, hpl + a + 1), (agg[p * app + a], l + 1))?;
            }
        }
        for (i, &asw) in agg.iter().enumerate() {
            let (p, a) = (i / app, i % app);
            for u in 0..cpa {
                g.link((asw, lpp + u + 1), (core[a * cpa + u], p + 1))?;
            }
        }
        Ok(g.finish())
    }

    fn header(&self) -> String {
        let s = self.size();
        format!(
            "# Three-level fat tree: {} pods x ({} leaves x {} hosts, {} aggregation switches), \
             {} core switches, radix {}\n# ({} HCAs, {} switches). Generated by ibnetsim (`{}`).\n\
             # Default attach point: H-host0001 port 1.\n",
            self.pods,
            self.leaves_per_pod,
            self.hosts_per_leaf,
            self.aggs_per_pod,
            self.aggs_per_pod.saturating_mul(self.cores_per_agg),
            self.radix,
            s.hosts,
            s.switches,
            Spec::FatTree3(*self)
        )
    }
}

impl Ring {
    /// What it has.
    pub fn size(&self) -> Size {
        let hosts = self.switches.saturating_mul(self.hosts);
        Size {
            hosts,
            switches: self.switches,
            switch_ports: self.switches.saturating_mul(self.hosts.saturating_add(2)),
            links: hosts.saturating_add(self.switches),
        }
    }

    /// Checks: at least 2 switches and 1 HCA each, at most 254 ports a switch, LIDs for all.
    pub fn validate(&self) -> Result<()> {
        let name = Spec::Ring(*self).to_string();
        if self.switches < 2 {
            return Err(refuse(&name, "a ring needs at least 2 switches".into()));
        }
        if self.hosts == 0 {
            return Err(refuse(&name, "HOSTS must be at least 1".into()));
        }
        check_common(
            &name,
            &[("a ring switch (2 + HOSTS)", self.hosts.saturating_add(2))],
            &self.size(),
        )
    }

    /// Builds it (checked first).
    pub fn build(&self) -> Result<Fabric> {
        self.validate()?;
        let (n, hosts) = (self.switches, self.hosts);
        let mut g = Gen::new(Spec::Ring(*self).to_string());
        let mut h = Vec::with_capacity(n * hosts);
        for r in 1..=n {
            for k in 1..=hosts {
                h.push(g.host(&format!("r{r}h{k}"))?);
            }
        }
        let mut sw = Vec::with_capacity(n);
        for r in 1..=n {
            sw.push(g.switch(&format!("ring{r}"), hosts + 2)?);
        }
        for (r, &s) in sw.iter().enumerate() {
            g.link((s, 1), (sw[(r + 1) % n], 2))?;
            for k in 0..hosts {
                g.link((s, 3 + k), (h[r * hosts + k], 1))?;
            }
        }
        Ok(g.finish())
    }

    fn header(&self) -> String {
        let s = self.size();
        format!(
            "# Ring of {} switches (port 1 -> the next one's port 2), {} on each (ports 3..)\n\
             # ({} HCAs, {} switches). Generated by ibnetsim (`{}`).\n\
             # Default attach point: H-r1h1 port 1.\n",
            self.switches,
            hcas(self.hosts),
            s.hosts,
            s.switches,
            Spec::Ring(*self)
        )
    }
}

impl Mesh {
    /// What it has.
    pub fn size(&self) -> Size {
        let switches = self.width.saturating_mul(self.height);
        let hosts = switches.saturating_mul(self.hosts);
        let (wl, hl) = if self.torus {
            (self.width, self.height)
        } else {
            (self.width.saturating_sub(1), self.height.saturating_sub(1))
        };
        Size {
            hosts,
            switches,
            switch_ports: switches.saturating_mul(self.hosts.saturating_add(4)),
            links: hosts
                .saturating_add(wl.saturating_mul(self.height))
                .saturating_add(hl.saturating_mul(self.width)),
        }
    }

    /// Checks: dimensions of at least 1 (a torus: 2), at least 1 HCA a switch, at most 254
    /// ports a switch, LIDs for all.
    pub fn validate(&self) -> Result<()> {
        let name = Spec::Mesh(*self).to_string();
        let least = if self.torus { 2 } else { 1 };
        if self.width < least || self.height < least {
            return Err(refuse(
                &name,
                format!(
                    "WIDTH and HEIGHT must be at least {least}{}",
                    if self.torus {
                        " in a torus (a 1-switch dimension would link a switch to itself)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if self.hosts == 0 {
            return Err(refuse(&name, "HOSTS must be at least 1".into()));
        }
        check_common(
            &name,
            &[("a mesh switch (4 + HOSTS)", self.hosts.saturating_add(4))],
            &self.size(),
        )
    }

    /// Builds it (checked first).
    pub fn build(&self) -> Result<Fabric> {
        self.validate()?;
        let Mesh {
            width,
            height,
            hosts,
            torus,
        } = *self;
        let (yw, xw) = (digits(height - 1), digits(width - 1));
        let (sname, hname) = if torus { ("torus", "t") } else { ("mesh", "m") };
        let mut g = Gen::new(Spec::Mesh(*self).to_string());
        let mut h = Vec::with_capacity(width * height * hosts);
        for y in 0..height {
            for x in 0..width {
                for k in 1..=hosts {
                    h.push(g.host(&format!("{hname}{y:0yw$}{x:0xw$}h{k}"))?);
                }
            }
        }
        let mut sw = Vec::with_capacity(width * height);
        for y in 0..height {
            for x in 0..width {
                sw.push(g.switch(&format!("{sname}{y:0yw$}{x:0xw$}"), hosts + 4)?);
            }
        }
        for y in 0..height {
            for x in 0..width {
                let i = y * width + x;
                // East to the next one's west, south to the next row's north.
                if x + 1 < width || torus {
                    g.link((sw[i], 1), (sw[y * width + (x + 1) % width], 2))?;
                }
                if y + 1 < height || torus {
                    g.link((sw[i], 3), (sw[((y + 1) % height) * width + x], 4))?;
                }
                for k in 0..hosts {
                    g.link((sw[i], 5 + k), (h[i * hosts + k], 1))?;
                }
            }
        }
        Ok(g.finish())
    }

    fn header(&self) -> String {
        let s = self.size();
        let zero = "0".repeat(digits(self.height - 1) + digits(self.width - 1));
        format!(
            "# {} of {} x {} switches (port 1 east, 2 west, 3 south, 4 north), {} on each (ports 5..)\n\
             # ({} HCAs, {} switches). Generated by ibnetsim (`{}`).\n\
             # Default attach point: H-{}{zero}h1 port 1.\n",
            if self.torus { "Torus" } else { "Mesh" },
            self.width,
            self.height,
            hcas(self.hosts),
            s.hosts,
            s.switches,
            Spec::Mesh(*self),
            if self.torus { "t" } else { "m" },
        )
    }
}

impl Spec {
    /// Parses a built-in name (see [`NAMES`]): `example`,
    /// `fattree:LEAVES,SPINES,HOSTS_PER_LEAF[,RADIX[,LINKS]]` (radix 36, 1 link by
    /// default), `fattree3:PODS,LEAVES_PER_POD,HOSTS_PER_LEAF,AGGS_PER_POD,CORES_PER_AGG[,RADIX]`,
    /// `ring:SWITCHES[,HOSTS]`, `mesh:WIDTHxHEIGHT[,HOSTS]`, `torus:WIDTHxHEIGHT[,HOSTS]` (1 HCA
    /// a switch by default). The dimensions are checked too ([`Spec::validate`]). An unknown
    /// name is refused with the list of names.
    pub fn parse(name: &str) -> Result<Spec> {
        let (kind, args) = match name.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (name, None),
        };
        let usage = |syntax: &str| refuse(name, format!("expected {syntax}"));
        let syntax = |k: &str| {
            NAMES
                .iter()
                .find(|n| n.split(':').next() == Some(k))
                .copied()
        };
        let nums = |args: Option<&str>, min: usize, max: usize| -> Result<Vec<usize>> {
            let s = syntax(kind).unwrap_or(kind);
            let args = args.ok_or_else(|| usage(s))?;
            let v: Vec<&str> = args.split(',').collect();
            if !(min..=max).contains(&v.len()) {
                return Err(usage(s));
            }
            v.iter()
                .map(|a| {
                    a.trim()
                        .parse::<usize>()
                        .map_err(|_| refuse(name, format!("{a:?} is not a number (expected {s})")))
                })
                .collect()
        };
        let spec = match kind {
            "example" if args.is_none() => Spec::Example,
            "fattree" => {
                let v = nums(args, 3, 5)?;
                Spec::FatTree(FatTree {
                    leaves: v[0],
                    spines: v[1],
                    hosts_per_leaf: v[2],
                    radix: v.get(3).copied().unwrap_or(DEFAULT_RADIX),
                    links: v.get(4).copied().unwrap_or(1),
                })
            }
            "fattree3" => {
                let v = nums(args, 5, 6)?;
                Spec::FatTree3(FatTree3 {
                    pods: v[0],
                    leaves_per_pod: v[1],
                    hosts_per_leaf: v[2],
                    aggs_per_pod: v[3],
                    cores_per_agg: v[4],
                    radix: v.get(5).copied().unwrap_or(DEFAULT_RADIX),
                })
            }
            "ring" => {
                let v = nums(args, 1, 2)?;
                Spec::Ring(Ring {
                    switches: v[0],
                    hosts: v.get(1).copied().unwrap_or(1),
                })
            }
            "mesh" | "torus" => {
                let s = syntax(kind).unwrap_or(kind);
                let args = args.ok_or_else(|| usage(s))?;
                let (dims, hosts) = match args.split_once(',') {
                    Some((d, h)) => (d, Some(h)),
                    None => (args, None),
                };
                let (w, h) = dims.split_once(['x', 'X']).ok_or_else(|| usage(s))?;
                let mut v = nums(Some(&format!("{w},{h}")), 2, 2)?;
                if let Some(hosts) = hosts {
                    v.extend(nums(Some(hosts), 1, 1)?);
                }
                Spec::Mesh(Mesh {
                    width: v[0],
                    height: v[1],
                    hosts: v.get(2).copied().unwrap_or(1),
                    torus: kind == "torus",
                })
            }
            _ => {
                return Err(refuse(
                    name,
                    format!(
                        "not a built-in fabric name; the names are: {}",
                        NAMES.join(", ")
                    ),
                ))
            }
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Checks the dimensions (see each shape's `validate`).
    pub fn validate(&self) -> Result<()> {
        match self {
            Spec::Example => Ok(()),
            Spec::FatTree(t) => t.validate(),
            Spec::FatTree3(t) => t.validate(),
            Spec::Ring(r) => r.validate(),
            Spec::Mesh(m) => m.validate(),
        }
    }

    /// What it has (the example: 4 HCAs, 2 switches of 8 ports, 5 links).
    pub fn size(&self) -> Size {
        match self {
            Spec::Example => Size {
                hosts: 4,
                switches: 2,
                switch_ports: 16,
                links: 5,
            },
            Spec::FatTree(t) => t.size(),
            Spec::FatTree3(t) => t.size(),
            Spec::Ring(r) => r.size(),
            Spec::Mesh(m) => m.size(),
        }
    }

    /// Builds the fabric, in O(N) (checked first).
    pub fn build(&self) -> Result<Fabric> {
        match self {
            Spec::Example => {
                let net = Netfile::parse(EXAMPLE_NETFILE)?;
                Fabric::from_netfile(&net, Some("example"))
            }
            Spec::FatTree(t) => t.build(),
            Spec::FatTree3(t) => t.build(),
            Spec::Ring(r) => r.build(),
            Spec::Mesh(m) => m.build(),
        }
    }

    /// The fabric as an ibsim netfile: a header comment (what it is, the default attach
    /// point, the ibsim flags it needs beyond the default capacities), then
    /// [`Fabric::to_netfile`] of [`Spec::build`]'s fabric. For a two-level fat tree this is
    /// byte for byte what `cargo xtask gen-fattree` writes; the example is
    /// [`EXAMPLE_NETFILE`].
    pub fn netfile(&self) -> Result<String> {
        self.validate()?;
        let header = match self {
            Spec::Example => return Ok(EXAMPLE_NETFILE.to_string()),
            Spec::FatTree(t) => t.header(),
            Spec::FatTree3(t) => t.header(),
            Spec::Ring(r) => r.header(),
            Spec::Mesh(m) => m.header(),
        };
        let fabric = self.build()?;
        let body = fabric.to_netfile()?;
        let mut s = String::with_capacity(header.len() + body.len() + 64);
        s.push_str(&header);
        let flags = self.size().ibsim_flags();
        if !flags.is_empty() {
            let _ = writeln!(s, "# Needs ibsim {}", flags.join(" "));
        }
        s.push('\n');
        s.push_str(&body);
        Ok(s)
    }
}

impl FromStr for Spec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Spec> {
        Spec::parse(s)
    }
}

impl fmt::Display for Spec {
    /// The name [`Spec::parse`] reads back (optional parameters left out when they have
    /// their default values, except a fat tree's radix).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Example => f.write_str("example"),
            Spec::FatTree(t) => {
                write!(
                    f,
                    "fattree:{},{},{},{}",
                    t.leaves, t.spines, t.hosts_per_leaf, t.radix
                )?;
                if t.links != 1 {
                    write!(f, ",{}", t.links)?;
                }
                Ok(())
            }
            Spec::FatTree3(t) => write!(
                f,
                "fattree3:{},{},{},{},{},{}",
                t.pods,
                t.leaves_per_pod,
                t.hosts_per_leaf,
                t.aggs_per_pod,
                t.cores_per_agg,
                t.radix
            ),
            Spec::Ring(r) => write!(f, "ring:{},{}", r.switches, r.hosts),
            Spec::Mesh(m) => write!(
                f,
                "{}:{}x{},{}",
                if m.torus { "torus" } else { "mesh" },
                m.width,
                m.height,
                m.hosts
            ),
        }
    }
}

impl Fabric {
    /// The fabric named by `name_or_path`: a netfile if that path exists (it wins over a
    /// name), else a built-in name ([`Spec::parse`]: `example`, `fattree:36,8,28`,
    /// `fattree3:12,8,16,8,4,24`, `ring:6,2`, `mesh:4x4`, `torus:8x8,2`, ...). Neither is
    /// refused with the list of names; a built-in name with bad dimensions, with what is
    /// wrong. Meant for `UMAD_SIM=<netfile or name>`.
    pub fn load_named(name_or_path: impl AsRef<Path>) -> Result<Fabric> {
        let path = name_or_path.as_ref();
        if path.exists() {
            return Fabric::load(path);
        }
        let Some(name) = path.to_str() else {
            return Fabric::load(path);
        };
        let kind = name.split(':').next().unwrap_or(name);
        if NAMES.iter().any(|n| n.split(':').next() == Some(kind)) {
            return Spec::parse(name)?.build();
        }
        Err(refuse(
            name,
            format!(
                "no such netfile, and not a built-in fabric name; the names are: {}",
                NAMES.join(", ")
            ),
        ))
    }

    /// The fabric as ibsim netfile text, which [`Fabric::load`] (and ibsim) read back into
    /// the same nodes and links: every node in index order, a blank line after each; `caguid=`,
    /// `switchguid=`, `rtguid=` only where a GUID is not the one ibsim would give next (so a
    /// generated fabric has none), `vendid=`, `devid=` and `sysimgguid=` where they are not
    /// ibsim's defaults; each linked port from its own node with the `lid N <W>x<SPEED>`
    /// comment ibsim reads the enabled width and speed from (`w=`/`s=`/`e=` options where no
    /// such token expresses the masks, and on routers, whose comments ibsim does not read).
    /// LIDs and LMCs are written as presets (a configured fabric's LIDs load back).
    ///
    /// Not kept: unlinked ports' widths and speeds (a netfile lists linked ports only), a
    /// Mellanox FDR10 enable no token expresses, and the state an SM or a test changed
    /// (port states, tables, counters). Descriptions lose `"` (to `'`), `=` (to `:`) and
    /// control characters and are cut to 63 bytes (ibsim's limit); an empty one reads back
    /// as the node id. A node id a netfile cannot carry (with `"`, `#`, `@` or a control
    /// character, or longer than 64 bytes) is refused.
    pub fn to_netfile(&self) -> Result<String> {
        let mut s = String::with_capacity(self.len().saturating_mul(160));
        // ibsim's next default GUID by type: router, CA, switch.
        let mut next = [0u64, CA_GUID_BASE, SWITCH_GUID_BASE];
        let mut devid = 0u16;
        for n in self.nodes() {
            let spec = &n.spec;
            if spec.id.len() > ibnetfile::MAX_NODE_ID
                || spec
                    .id
                    .chars()
                    .any(|c| matches!(c, '"' | '#' | '@') || c.is_control())
            {
                return Err(Error::Invalid {
                    origin: spec.origin.clone(),
                    what: format!(
                        "node id {:?} cannot be written in a netfile (no '\"', '#', '@' or control characters, at most {} bytes)",
                        spec.id,
                        ibnetfile::MAX_NODE_ID
                    ),
                });
            }
            let (t, directive, keyword) = match spec.node_type {
                NodeType::Switch => (2, "switchguid", "Switch"),
                NodeType::Router => (0, "rtguid", "Rt"),
                _ => (1, "caguid", "Hca"),
            };
            let switch = t == 2;
            if spec.vendor_id != 0 {
                let _ = writeln!(s, "vendid={:#x}", spec.vendor_id);
            }
            if spec.device_id != devid {
                let _ = writeln!(s, "devid={:#x}", spec.device_id);
                devid = spec.device_id;
            }
            if spec.system_image_guid != spec.guid && spec.system_image_guid != 0 {
                let _ = writeln!(s, "sysimgguid={:#x}", spec.system_image_guid);
            }
            if spec.guid != next[t] {
                let _ = writeln!(s, "{directive}={:#x}", spec.guid);
            }
            next[t] = spec.guid.wrapping_add(if switch {
                1
            } else {
                u64::from(spec.num_ports) + 1
            });
            let _ = write!(
                s,
                "{keyword}\t{} \"{}\"\t\t# \"{}\"",
                spec.num_ports,
                spec.id,
                ibnetfile::writable_description(&spec.description)
            );
            if switch {
                let p0 = &n.ports[0];
                let base = if spec.enhanced_port0 {
                    "enhanced"
                } else {
                    "base"
                };
                let _ = write!(s, " {base} port 0 lid {} lmc {}", p0.lid, p0.lmc);
            }
            s.push('\n');
            for p in n.ports.iter().skip(1) {
                let Some((far, far_port)) = p.remote else {
                    continue;
                };
                let far = self.node(far);
                let _ = write!(s, "[{}]\t\"{}\"[{}]", p.num, far.spec.id, far_port);
                let token = speed_token(p);
                let router = spec.node_type == NodeType::Router;
                if (router || token.is_none())
                    && (p.width_enabled, p.speed_enabled, p.speed_ext_enabled)
                        != (ibnetfile::DEFAULT_WIDTH, ibnetfile::DEFAULT_SPEED, 0)
                {
                    let _ = write!(
                        s,
                        " w={} s={} e={}",
                        p.width_enabled, p.speed_enabled, p.speed_ext_enabled
                    );
                }
                s.push_str("\t\t# ");
                if !switch {
                    let _ = write!(s, "lid {} lmc {} ", p.lid, p.lmc);
                }
                let _ = write!(
                    s,
                    "\"{}\"",
                    ibnetfile::writable_description(&far.spec.description)
                );
                if let Some(token) = token {
                    let _ = write!(s, " lid {} {token}", far.lid_of(far_port));
                }
                s.push('\n');
            }
            s.push('\n');
        }
        Ok(s)
    }
}

/// The `4xQDR`-style token of `p`'s enabled masks, if one gives exactly them.
fn speed_token(p: &Port) -> Option<String> {
    ibnetfile::link_token(
        p.width_enabled,
        p.speed_enabled,
        p.speed_ext_enabled,
        p.mlnx_speed_enabled,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::{HashSet, VecDeque};
    use std::path::PathBuf;
    use std::time::Instant;

    use ibmad::{attr::id, DrPath, Method, NodeInfo, Smp};

    use super::*;

    fn fabrics_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fabrics")
    }

    fn spec(name: &str) -> Spec {
        Spec::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Small instances of every shape.
    const SHAPES: &[&str] = &[
        "fattree:2,2,2,4",
        "fattree:3,2,4,8",
        "fattree:1,1,1,2",
        "fattree:4,3,5,16,2",
        "fattree:10,3,5",
        "fattree3:2,2,2,2,2,4",
        "fattree3:3,2,3,2,3,6",
        "fattree3:12,8,16,8,4,24",
        "ring:2",
        "ring:6,2",
        "ring:12,3",
        "mesh:1x1",
        "mesh:1x5",
        "mesh:4x4",
        "mesh:11x3,2",
        "torus:2x2",
        "torus:5x3,2",
        "torus:12x11",
    ];

    /// `a` and `b` have the same nodes and ports (where they were defined aside).
    fn same_nodes(a: &Fabric, b: &Fabric) {
        assert_eq!(a.len(), b.len(), "node count");
        for (x, y) in a.nodes().iter().zip(b.nodes()) {
            let (mut xs, mut ys) = (x.spec.clone(), y.spec.clone());
            xs.origin = Origin::default();
            ys.origin = Origin::default();
            assert_eq!(xs, ys);
            assert_eq!(x.ports.len(), y.ports.len(), "{}", xs.id);
            for (p, q) in x.ports.iter().zip(&y.ports) {
                assert_eq!(p, q, "{} port {}", xs.id, p.num);
            }
            assert_eq!(x.switch, y.switch, "{}", xs.id);
        }
        for n in a.nodes() {
            assert_eq!(a.by_guid(n.spec.guid), b.by_guid(n.spec.guid));
            assert_eq!(a.find_id(&n.spec.id), b.find_id(&n.spec.id));
        }
    }

    #[test]
    fn fattree_36_8_28_is_fabrics_fattree_1008_node_by_node_and_byte_for_byte() {
        let path = fabrics_dir().join("fattree-1008.net");
        let loaded = Fabric::load(&path).unwrap();
        let s = spec("fattree:36,8,28");
        assert_eq!(s, Spec::FatTree(FatTree::new(36, 8, 28)));
        let built = s.build().unwrap();
        assert_eq!(built.len(), 1052);
        same_nodes(&built, &loaded);
        let first = built.node(NodeIdx(0));
        assert_eq!(first.spec.id, "H-host0001");
        assert_eq!(first.spec.guid, CA_GUID_BASE);
        assert_eq!(first.spec.description, "host0001 HCA-1");
        let spine8 = built.node(built.find_id("S-spine08").unwrap());
        assert_eq!(spine8.spec.guid, SWITCH_GUID_BASE + 43);
        assert_eq!(spine8.spec.description, "spine08");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            s.netfile().unwrap() == text,
            "the text differs from {}",
            path.display()
        );
    }

    #[test]
    fn fattree3_is_fabrics_fattree3_1760() {
        let path = fabrics_dir().join("fattree3-1760.net");
        let loaded = Fabric::load(&path).unwrap();
        let s = spec("fattree3:12,8,16,8,4,24");
        same_nodes(&s.build().unwrap(), &loaded);
        // Past the header comment (written once by a script), the same text.
        let text = std::fs::read_to_string(&path).unwrap();
        let ours = s.netfile().unwrap();
        let body = |t: &str| t[t.find("\nHca").expect("HCAs") + 1..].to_string();
        assert!(body(&ours) == body(&text), "the node lines differ");
    }

    #[test]
    fn every_shape_builds_and_loads_back_from_its_netfile() {
        for name in SHAPES {
            let s = spec(name);
            let built = s.build().unwrap();
            let text = s.netfile().unwrap();
            let net = Netfile::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(net.warnings.is_empty(), "{name}: {:?}", net.warnings);
            let loaded = Fabric::from_netfile(&net, None).unwrap();
            same_nodes(&built, &loaded);
            // The header names it, and what it reads as is the same spec.
            assert!(text.contains(&format!("{} HCAs", s.size().hosts)), "{name}");
            assert_eq!(spec(&s.to_string()), s, "{name}");
            assert_eq!(
                net.nodes[0].node_type,
                NodeType::ChannelAdapter,
                "{name}: an HCA is the default attach point"
            );
            let attach = format!("# Default attach point: {} port 1.", net.nodes[0].id);
            assert!(text.contains(&attach), "{name}: {attach}");
        }
    }

    #[test]
    fn sizes_ports_and_links_are_what_the_shape_says() {
        for name in SHAPES {
            let s = spec(name);
            let size = s.size();
            let f = s.build().unwrap();
            assert_eq!(f.len(), size.nodes(), "{name}");
            let switches: Vec<_> = f.nodes().iter().filter(|n| n.is_switch()).collect();
            assert_eq!(switches.len(), size.switches, "{name}");
            let ports: usize = switches.iter().map(|n| usize::from(n.spec.num_ports)).sum();
            assert_eq!(ports, size.switch_ports, "{name}");
            let ends: usize = f
                .nodes()
                .iter()
                .map(|n| n.ports.iter().filter(|p| p.remote.is_some()).count())
                .sum();
            assert_eq!(ends, 2 * size.links, "{name}");
            for n in f.nodes() {
                if !n.is_switch() {
                    assert_eq!(n.spec.num_ports, 1, "{name}");
                    assert!(
                        n.ports[1].remote.is_some(),
                        "{name}: {} unlinked",
                        n.spec.id
                    );
                }
                assert!(n.spec.enhanced_port0 == n.is_switch(), "{name}");
                for p in n.ports.iter().skip(1) {
                    // Both ends agree, 4x QDR on every link.
                    if let Some((r, rp)) = p.remote {
                        assert_eq!(f.node(r).ports[usize::from(rp)].remote.unwrap().1, p.num);
                        assert_eq!((p.width_enabled, p.speed_enabled), (3, 7), "{name}");
                    }
                }
            }
        }
        let t = FatTree {
            links: 3,
            ..FatTree::new(4, 2, 10)
        };
        let f = t.build().unwrap();
        let leaf = f.node(f.find_id("S-leaf02").unwrap());
        // Leaf 2: ports 11-13 to spine 1's ports 4-6, 14-16 to spine 2's.
        let spine1 = f.find_id("S-spine01").unwrap();
        let spine2 = f.find_id("S-spine02").unwrap();
        assert_eq!(leaf.ports[11].remote, Some((spine1, 4)));
        assert_eq!(leaf.ports[13].remote, Some((spine1, 6)));
        assert_eq!(leaf.ports[14].remote, Some((spine2, 4)));
        assert_eq!(leaf.ports[16].remote, Some((spine2, 6)));
        assert!(leaf.ports[17].remote.is_none());
        // Mesh and torus ports: east, west, south, north.
        let m = spec("mesh:3x2").build().unwrap();
        let at = |f: &Fabric, id: &str| f.find_id(id).unwrap();
        let s00 = m.node(at(&m, "S-mesh00"));
        assert_eq!(s00.ports[1].remote, Some((at(&m, "S-mesh01"), 2)));
        assert_eq!(s00.ports[3].remote, Some((at(&m, "S-mesh10"), 4)));
        assert!(s00.ports[2].remote.is_none() && s00.ports[4].remote.is_none());
        assert_eq!(s00.ports[5].remote, Some((at(&m, "H-m00h1"), 1)));
        let t = spec("torus:3x2").build().unwrap();
        let s00 = t.node(at(&t, "S-torus00"));
        assert_eq!(s00.ports[2].remote, Some((at(&t, "S-torus02"), 1)));
        assert_eq!(s00.ports[4].remote, Some((at(&t, "S-torus10"), 3)));
        let r = spec("ring:3,2").build().unwrap();
        let ring3 = r.node(at(&r, "S-ring3"));
        assert_eq!(ring3.ports[1].remote, Some((at(&r, "S-ring1"), 2)));
        assert_eq!(ring3.ports[4].remote, Some((at(&r, "H-r3h2"), 1)));
    }

    /// Discovers the fabric from the first node's port 1 by directed-route
    /// Get(NodeInfo) alone, breadth first, as an SM's sweep does; returns the GUIDs found.
    fn discover(f: &mut Fabric) -> HashSet<u64> {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([Vec::<u8>::new()]);
        while let Some(path) = queue.pop_front() {
            let route = DrPath::from_hops(&path).unwrap();
            let req = Smp::dr_request(Method::Get, id::NODE_INFO, 0, 7, &route);
            let Ok(resp) = f.smp((NodeIdx(0), 1), &req) else {
                continue;
            };
            let smp = Smp::new_checked(&resp[..]).unwrap();
            assert!(smp.status().is_success(), "{route}: {:?}", smp.status());
            let ni = NodeInfo::parse(smp.data()).unwrap();
            let node = f.node(f.by_guid(ni.node_guid).expect("a GUID of the fabric"));
            assert_eq!(
                (ni.node_type, ni.num_ports),
                (node.spec.node_type, node.spec.num_ports)
            );
            if !seen.insert(ni.node_guid) {
                continue;
            }
            if (path.is_empty() || ni.node_type == NodeType::Switch)
                && path.len() < DrPath::MAX_HOPS
            {
                for p in 1..=ni.num_ports {
                    let mut next = path.clone();
                    next.push(p);
                    queue.push_back(next);
                }
            }
        }
        seen
    }

    #[test]
    fn directed_routes_reach_every_node() {
        for name in SHAPES {
            let mut f = spec(name).build().unwrap();
            let all: HashSet<u64> = f.nodes().iter().map(|n| n.spec.guid).collect();
            assert_eq!(discover(&mut f), all, "{name}");
        }
    }

    #[test]
    fn configured_lid_routing_reaches_every_ca_from_every_ca() {
        for name in SHAPES {
            let mut f = spec(name).build().unwrap();
            let top = f.configure(None).expect("LIDs for all");
            assert_eq!(usize::from(top), f.len(), "{name}: one LID a node");
            let cas: Vec<NodeIdx> = (0..f.len() as u32)
                .map(NodeIdx)
                .filter(|&i| !f.node(i).is_switch())
                .collect();
            for &a in &cas {
                for &b in &cas {
                    let dlid = f.lid_of(b, 1);
                    assert_eq!(
                        f.lid_route((a, 1), dlid),
                        Some((b, 1)),
                        "{name}: {} to {}",
                        f.node(a).spec.id,
                        f.node(b).spec.id
                    );
                }
            }
        }
        // And on the 1,052-node tree, from the first and the last HCA to every node.
        let mut f = spec("fattree:36,8,28").build().unwrap();
        f.configure(None).unwrap();
        let last = NodeIdx(1007);
        for i in 0..f.len() as u32 {
            let to = NodeIdx(i);
            let (port, dlid) = if f.node(to).is_switch() {
                (0, f.lid_of(to, 0))
            } else {
                (1, f.lid_of(to, 1))
            };
            for from in [NodeIdx(0), last] {
                let got = f.lid_route((from, 1), dlid).expect("routed");
                assert_eq!(got.0, to);
                if port == 1 {
                    assert_eq!(got.1, 1);
                }
            }
        }
    }

    #[test]
    fn a_40958_node_fat_tree_is_generated_quickly() {
        let s = spec("fattree:254,64,160,254");
        let t = Instant::now();
        let mut f = s.build().unwrap();
        let built = t.elapsed();
        assert_eq!(f.len(), 40_958);
        assert_eq!(s.size().nodes(), 40_958);
        assert_eq!(s.size().ibsim_flags(), ["-N 65536", "-S 512", "-P 131072"]);
        let t = Instant::now();
        let text = f.to_netfile().unwrap();
        let written = t.elapsed();
        let t = Instant::now();
        let top = f.configure(None);
        let configured = t.elapsed();
        assert_eq!(top, Some(40_958));
        eprintln!(
            "fattree:254,64,160,254: 40,958 nodes built in {built:?}, written ({} MB) in {written:?}, configured in {configured:?}",
            text.len() / 1_000_000
        );
    }

    #[test]
    fn bad_dimensions_are_refused_with_what_is_wrong() {
        let refused = |name: &str, what: &str| {
            let e = Spec::parse(name).expect_err(name).to_string();
            assert!(e.contains(what), "{name}: {e}");
            assert!(e.starts_with(name), "{name}: {e}");
            // load_named says the same.
            assert_eq!(Fabric::load_named(name).unwrap_err().to_string(), e);
        };
        refused("fattree:0,8,28", "at least 1");
        refused("fattree:36,0,28", "at least 1");
        refused("fattree:36,8,0", "at least 1");
        refused("fattree:2,2,2,4,0", "LINKS must be at least 1");
        refused("fattree:2,2,2,255", "RADIX must be in 2..=254");
        refused("fattree:2,2,2,1", "RADIX must be in 2..=254");
        refused("fattree:2,2,2,3", "a leaf needs");
        refused("fattree:5,2,2,4", "a spine needs");
        refused("fattree:3,1,1,4,2", "a spine needs");
        refused("fattree:2,2,2,5,2", "a leaf needs");
        refused("fattree:254,1,253,254", "LIDs");
        refused(
            "fattree:18446744073709551615,18446744073709551615,18446744073709551615,254,18446744073709551615",
            "a leaf needs",
        );
        refused("fattree:18446744073709551616,1,1", "is not a number");
        refused("fattree:1,2", "expected fattree:LEAVES");
        refused("fattree:1,2,3,4,5,6", "expected fattree:LEAVES");
        refused("fattree", "expected fattree:LEAVES");
        refused("fattree:a,2,3", "\"a\" is not a number");
        refused("fattree:-1,2,3", "is not a number");
        refused("fattree3:1,1,1,1,0", "at least 1");
        refused("fattree3:2,2,2,2,2,255", "RADIX");
        refused("fattree3:2,2,3,2,2,4", "a leaf needs");
        refused("fattree3:2,3,2,2,2,4", "an aggregation switch needs");
        refused("fattree3:5,2,2,2,2,4", "a core switch needs");
        refused("fattree3:200,200,200,50,50,254", "LIDs");
        refused("ring:1", "at least 2 switches");
        refused("ring:0", "at least 2 switches");
        refused("ring:4,0", "HOSTS must be at least 1");
        refused("ring:4,253", "at most 254");
        refused("ring:24576", "LIDs");
        refused(
            "ring:18446744073709551615,18446744073709551615",
            "at most 254",
        );
        refused("ring:18446744073709551615", "LIDs");
        refused("mesh:0x4", "at least 1");
        refused("mesh:4", "expected mesh:WIDTHxHEIGHT");
        refused("mesh:4x", "is not a number");
        refused("mesh:4x4,0", "HOSTS must be at least 1");
        refused("mesh:4x4,251", "at most 254");
        refused("mesh:1000000x1000000", "LIDs");
        refused("mesh:18446744073709551615x18446744073709551615", "LIDs");
        refused("torus:1x5", "at least 2 in a torus");
        // Shapes made by hand are checked before anything is written.
        let flat = Spec::Mesh(Mesh {
            width: 0,
            height: 0,
            hosts: 1,
            torus: false,
        });
        assert!(flat
            .netfile()
            .unwrap_err()
            .to_string()
            .contains("at least 1"));
        refused("example:1", "not a built-in fabric name");
        // The largest that fit are accepted.
        assert!(Spec::parse("ring:24575").is_ok());
        assert!(Spec::parse("fattree:254,64,160,254").is_ok());
        // An unknown name lists the names.
        let e = Spec::parse("bogus:1").unwrap_err().to_string();
        for n in NAMES {
            assert!(e.contains(n), "{e}");
        }
        let e = Fabric::load_named("no-such-fabric.net")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no such netfile") && e.contains("fattree3:PODS"),
            "{e}"
        );
        // The structs are checked too, not only the names.
        assert!(FatTree::new(0, 1, 1).build().is_err());
        assert!(Mesh {
            width: 3,
            height: 3,
            hosts: 1,
            torus: true
        }
        .build()
        .is_ok());
    }

    #[test]
    fn names_read_back_as_they_are_written() {
        assert_eq!(spec("example"), Spec::Example);
        assert_eq!(spec("fattree:36,8,28").to_string(), "fattree:36,8,28,36");
        assert_eq!(spec("fattree:4,2,4,8,2").to_string(), "fattree:4,2,4,8,2");
        assert_eq!(spec("fattree: 4, 2,4").to_string(), "fattree:4,2,4,36");
        assert_eq!(spec("ring:6").to_string(), "ring:6,1");
        assert_eq!(spec("mesh:4X3").to_string(), "mesh:4x3,1");
        assert_eq!(
            spec("torus:4x3,2"),
            Spec::Mesh(Mesh {
                width: 4,
                height: 3,
                hosts: 2,
                torus: true
            })
        );
        assert_eq!("ring:3,2".parse::<Spec>().unwrap(), spec("ring:3,2"));
        for name in SHAPES {
            assert_eq!(spec(&spec(name).to_string()), spec(name));
        }
    }

    #[test]
    fn the_built_in_example_is_fabrics_example_net() {
        let file = fabrics_dir().join("example.net");
        assert!(
            std::fs::read_to_string(&file).unwrap() == EXAMPLE_NETFILE,
            "crates/sim/fabrics/example.net and fabrics/example.net differ: copy one onto the other"
        );
        let named = Fabric::load_named("example").unwrap();
        same_nodes(&named, &Fabric::load(&file).unwrap());
        assert_eq!(named.len(), Spec::Example.size().nodes());
        assert_eq!(Spec::Example.netfile().unwrap(), EXAMPLE_NETFILE);
        // A path that exists is read as a netfile.
        let f = Fabric::load_named(fabrics_dir().join("ring.net")).unwrap();
        assert!(f.find_id("S-mesh33").is_some());
        // And the names build what Spec builds.
        same_nodes(
            &Fabric::load_named("torus:3x3,2").unwrap(),
            &spec("torus:3x3,2").build().unwrap(),
        );
    }

    #[test]
    fn every_fabric_in_fabrics_survives_to_netfile() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(fabrics_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "net"))
            .collect();
        names.sort();
        assert!(names.len() >= 9, "{names:?}");
        for path in names {
            let f = Fabric::load(&path).unwrap();
            let text = f.to_netfile().unwrap();
            let net =
                Netfile::parse(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
            same_nodes(&Fabric::from_netfile(&net, None).unwrap(), &f);
        }
        // A configured fabric's LIDs come back as presets.
        let mut f = spec("fattree:2,2,2,4").build().unwrap();
        f.configure(None);
        let back =
            Fabric::from_netfile(&Netfile::parse(&f.to_netfile().unwrap()).unwrap(), None).unwrap();
        for (a, b) in f.nodes().iter().zip(back.nodes()) {
            assert_ne!(a.lid_of(1), 0);
            assert_eq!(a.lid_of(1), b.lid_of(1), "{}", a.spec.id);
        }
    }

    #[test]
    fn ids_a_netfile_cannot_carry_are_refused() {
        for id in ["a\"b", "mod#x", "a@b", "new\nline", &"x".repeat(65)] {
            let mut b = Builder::new();
            b.node(NodeSpec {
                node_type: NodeType::ChannelAdapter,
                id: id.to_string(),
                description: String::new(),
                num_ports: 1,
                guid: 1,
                system_image_guid: 1,
                vendor_id: 0,
                device_id: 0,
                enhanced_port0: false,
                origin: Origin::default(),
            })
            .unwrap();
            let e = b.build().to_netfile().unwrap_err().to_string();
            assert!(e.contains("cannot be written"), "{e}");
        }
        assert_eq!(ibnetfile::writable_description(&"é".repeat(40)).len(), 62);
        assert_eq!(ibnetfile::writable_description("a\"b=c\td"), "a'b:c d");
    }
}
