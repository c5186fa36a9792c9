//! What the SA of a fabric must answer, checked against what the tools print: the topology
//! `ibnetdiscover` reports ([`Topology::parse`]), the SA tables opensm derives from it (the
//! expected sets below), and `saquery`'s dumps of those tables ([`parse_dumps`] and the
//! typed readers).
//!
//! The rules for opensm's tables (opensm 3.3: `osm_sa_node_record.c`,
//! `osm_sa_link_record.c`, `osm_sa_sw_info_record.c`, `osm_sa_portinfo_record.c`), for a
//! query with component mask 0 from a port that shares the default partition with all:
//!
//! * **NodeRecord**: one per end port opensm discovered, i.e. port 0 of every switch and
//!   every CA port `ibnetdiscover` lists (a CA port without a link is never reached, so it
//!   has none); LID = that port's LID, with the node's GUID and description and the port's
//!   GUID ([`Topology::node_records`]).
//! * **LinkRecord**: one per linked port and direction: (from LID, from port, to LID, to
//!   port), where a switch port's LID is the switch's (port 0) LID. `ibnetdiscover` lists
//!   every link from both of its ends, so the set is exactly its port lines
//!   ([`Topology::link_records`]).
//! * **SwitchInfoRecord**: one per switch, keyed by its LID ([`Topology::switch_lids`]).
//! * **PortInfoRecord**: one per physical port opensm holds PortInfo for: every port
//!   0..=N of an N-port switch (linked or not: opensm reads them all through port 0), with
//!   the switch's LID as EndPortLid; and every CA port `ibnetdiscover` lists, with its own
//!   LID ([`Topology::port_info_records`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Debug, Write as _};

use ibmad::NodeType;

/// The kind of a node in `ibnetdiscover` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    /// `Switch` (its ports share the LID of port 0).
    Switch,
    /// `Ca` (every port has its own LID).
    Ca,
    /// `Rt` (router; LIDs per port, like a CA).
    Router,
}

/// One port line of a node's section: the local port and its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortLine {
    /// Local port number.
    pub port: u8,
    /// Local port GUID (CA port lines: `[1](100003)`).
    pub guid: Option<u64>,
    /// Local port LID (CA port lines: `# lid 4 lmc 0 …`).
    pub lid: Option<u16>,
    /// The peer's node id (`"S-0000000000200000"`).
    pub remote_id: String,
    /// The peer's port number.
    pub remote_port: u8,
    /// The peer's LID as the comment states it (`… lid 2 4xQDR`).
    pub remote_lid: Option<u16>,
}

/// One node section of `ibnetdiscover` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Switch, CA or router.
    pub kind: NodeKind,
    /// `ibnetdiscover`'s node id (`"S-0000000000200000"`, `"H-0000000000100002"`).
    pub id: String,
    /// Node GUID (the `switchguid=` / `caguid=` / `rtguid=` line before the header).
    pub guid: Option<u64>,
    /// Port 0 GUID of a switch (`switchguid=0x…(<port 0 guid>)`).
    pub port0_guid: Option<u64>,
    /// NodeDescription.
    pub description: String,
    /// Number of physical ports (the header's count).
    pub num_ports: u8,
    /// A switch's LID (`port 0 lid N`).
    pub lid: Option<u16>,
    /// Port lines, by local port number.
    pub ports: BTreeMap<u8, PortLine>,
}

impl Node {
    /// The LID of `port`: the switch's LID for any switch port, else the port's own.
    pub fn port_lid(&self, port: u8) -> Option<u16> {
        match self.kind {
            NodeKind::Switch => self.lid,
            NodeKind::Ca | NodeKind::Router => self.ports.get(&port).and_then(|p| p.lid),
        }
    }
}

/// A NodeRecord reduced to what the topology fixes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeRecordKey {
    /// LID of the end port.
    pub lid: u16,
    /// Node GUID.
    pub node_guid: u64,
    /// GUID of the end port.
    pub port_guid: u64,
    /// NodeDescription.
    pub description: String,
}

impl From<&ibmad::sa::NodeRecord> for NodeRecordKey {
    fn from(r: &ibmad::sa::NodeRecord) -> NodeRecordKey {
        NodeRecordKey {
            lid: r.lid,
            node_guid: r.node_info.node_guid,
            port_guid: r.node_info.port_guid,
            description: r.node_description.as_str().into_owned(),
        }
    }
}

/// A LinkRecord: one direction of one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkKey {
    /// FromLID.
    pub from_lid: u16,
    /// FromPort.
    pub from_port: u8,
    /// ToLID.
    pub to_lid: u16,
    /// ToPort.
    pub to_port: u8,
}

/// A PortInfoRecord's key: (EndPortLid, PortNum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortKey {
    /// EndPortLid (a switch's LID for all its ports).
    pub lid: u16,
    /// PortNum.
    pub port: u8,
}

/// The fabric as `ibnetdiscover` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    /// Node sections, in output order.
    pub nodes: Vec<Node>,
}

impl Topology {
    /// Parses `ibnetdiscover` output (the default format, or `-s`/`-f`/`-m`) with
    /// [`ibfabric::Fabric::parse_ibnetdiscover`] and reduces it to the node sections in
    /// output order.
    ///
    /// # Errors
    /// What `ibfabric` rejects (with the line number): a line that does not parse, a port
    /// line outside a node section, a duplicate node or port, a link not listed from both
    /// ends alike, a peer LID in a comment that disagrees with the peer's section.
    pub fn parse(ibnetdiscover: &str) -> Result<Topology, String> {
        let fabric =
            ibfabric::Fabric::parse_ibnetdiscover(ibnetdiscover).map_err(|e| e.to_string())?;
        let id = |n: &ibfabric::Node| {
            ibfabric::ibnetdiscover::node_id(n.node_type, n.guid)
                .trim_matches('"')
                .to_owned()
        };
        let mut nodes: Vec<&ibfabric::Node> = fabric.nodes.iter().collect();
        // Output order: switches, CAs, routers (each in iteration order).
        nodes.sort_by_key(|n| match n.node_type {
            NodeType::Switch => 0,
            NodeType::ChannelAdapter => 1,
            _ => 2,
        });
        let nodes = nodes
            .into_iter()
            .map(|n| {
                let kind = match n.node_type {
                    NodeType::Switch => NodeKind::Switch,
                    NodeType::Router => NodeKind::Router,
                    _ => NodeKind::Ca,
                };
                let ports = n
                    .ports
                    .iter()
                    .filter(|p| p.number >= 1)
                    .filter_map(|p| {
                        let r = p.remote?;
                        let rn = fabric.nodes.get(r.node)?;
                        let ca = !n.is_switch();
                        Some((
                            p.number,
                            PortLine {
                                port: p.number,
                                guid: ca.then_some(p.guid),
                                lid: ca.then_some(p.lid),
                                remote_id: id(rn),
                                remote_port: r.port,
                                remote_lid: Some(rn.shown_lid(r.port)),
                            },
                        ))
                    })
                    .collect();
                Node {
                    kind,
                    id: id(n),
                    guid: Some(n.guid),
                    port0_guid: n.is_switch().then_some(n.port_guid),
                    description: n.description.clone(),
                    num_ports: n.num_ports,
                    lid: n.is_switch().then_some(n.lid),
                    ports,
                }
            })
            .collect();
        Ok(Topology { nodes })
    }

    /// The node with `ibnetdiscover` id `id`.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Switches.
    pub fn switches(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.kind == NodeKind::Switch)
    }

    /// LIDs by node description: a switch's LID, a CA's first listed port's LID.
    pub fn lids_by_description(&self) -> BTreeMap<String, u16> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let lid = match n.kind {
                    NodeKind::Switch => n.lid,
                    _ => n.ports.values().find_map(|p| p.lid),
                }?;
                Some((n.description.clone(), lid))
            })
            .collect()
    }

    /// The NodeRecords opensm holds (see the [module docs](self)).
    ///
    /// # Errors
    /// A node without a GUID, a switch without a LID or port 0 GUID, a CA port without a
    /// LID or GUID.
    pub fn node_records(&self) -> Result<BTreeSet<NodeRecordKey>, String> {
        let mut out = BTreeSet::new();
        for n in &self.nodes {
            let key = |lid: Option<u16>, port_guid: Option<u64>, what: &str| {
                Ok::<_, String>(NodeRecordKey {
                    lid: lid.ok_or_else(|| format!("{} {what}: no LID", n.id))?,
                    node_guid: n.guid.ok_or_else(|| format!("{}: no node GUID", n.id))?,
                    port_guid: port_guid.ok_or_else(|| format!("{} {what}: no GUID", n.id))?,
                    description: n.description.clone(),
                })
            };
            match n.kind {
                NodeKind::Switch => {
                    out.insert(key(n.lid, n.port0_guid, "port 0")?);
                }
                NodeKind::Ca | NodeKind::Router => {
                    for p in n.ports.values() {
                        out.insert(key(p.lid, p.guid, &format!("port {}", p.port))?);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The LinkRecords opensm holds: every port line as (this end, that end), the LIDs taken
    /// from each node's own section.
    ///
    /// # Errors
    /// A peer that is not in the topology, a missing LID, a link not listed from its other
    /// end too, or a peer LID in a comment that disagrees with the peer's own section.
    pub fn link_records(&self) -> Result<BTreeSet<LinkKey>, String> {
        let mut out = BTreeSet::new();
        for n in &self.nodes {
            for p in n.ports.values() {
                let what = format!("{}[{}] -> {}[{}]", n.id, p.port, p.remote_id, p.remote_port);
                let peer = self
                    .node(&p.remote_id)
                    .ok_or_else(|| format!("{what}: peer not in the topology"))?;
                let back = peer.ports.get(&p.remote_port);
                if !back.is_some_and(|b| b.remote_id == n.id && b.remote_port == p.port) {
                    return Err(format!("{what}: not listed from the other end"));
                }
                let from_lid = n
                    .port_lid(p.port)
                    .ok_or_else(|| format!("{what}: no LID"))?;
                let to_lid = peer
                    .port_lid(p.remote_port)
                    .ok_or_else(|| format!("{what}: peer has no LID"))?;
                if p.remote_lid.is_some_and(|l| l != to_lid) {
                    return Err(format!(
                        "{what}: comment says peer lid {:?}, its section {to_lid}",
                        p.remote_lid
                    ));
                }
                out.insert(LinkKey {
                    from_lid,
                    from_port: p.port,
                    to_lid,
                    to_port: p.remote_port,
                });
            }
        }
        Ok(out)
    }

    /// The SwitchInfoRecords opensm holds: the switches' LIDs.
    ///
    /// # Errors
    /// A switch without a LID.
    pub fn switch_lids(&self) -> Result<BTreeSet<u16>, String> {
        self.switches()
            .map(|s| s.lid.ok_or_else(|| format!("switch {} has no LID", s.id)))
            .collect()
    }

    /// The PortInfoRecords opensm holds (see the [module docs](self)).
    ///
    /// # Errors
    /// A switch or a listed CA port without a LID.
    pub fn port_info_records(&self) -> Result<BTreeSet<PortKey>, String> {
        let mut out = BTreeSet::new();
        for n in &self.nodes {
            let ports: Vec<u8> = match n.kind {
                NodeKind::Switch => (0..=n.num_ports).collect(),
                NodeKind::Ca | NodeKind::Router => n.ports.keys().copied().collect(),
            };
            for port in ports {
                let lid = n
                    .port_lid(port)
                    .ok_or_else(|| format!("{}[{port}] has no LID", n.id))?;
                out.insert(PortKey { lid, port });
            }
        }
        Ok(out)
    }
}

/// One `<Kind> dump:` record of `saquery` output, its fields (nested dumps such as
/// `PortInfo dump:` flattened in) in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dump {
    /// `NodeRecord`, `LinkRecord`, `SwitchInfoRecord`, `PortInfoRecord`, …
    pub kind: String,
    /// `(name, value)` of every `name.....value` / `name:.....value` line.
    pub fields: Vec<(String, String)>,
}

impl Dump {
    /// The first field called `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first field called `name` as a number (decimal, or hex with `0x`).
    ///
    /// # Errors
    /// The field is missing or not a number of that type.
    pub fn number<T: TryFrom<u64>>(&self, name: &str) -> Result<T, String> {
        let v = self
            .field(name)
            .ok_or_else(|| format!("{} without {name}: {:?}", self.kind, self.fields))?;
        let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        };
        n.and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| format!("{} {name}: not a number: {v:?}", self.kind))
    }
}

/// Splits `saquery` output into its records. A record starts at an unindented
/// `<Kind> dump:` line; its fields are the indented `name....value` lines up to the next
/// one (a value starting with `.` loses those dots). Lines without a field (flags such as
/// `IsSM`, `RID`) are skipped.
pub fn parse_dumps(saquery: &str) -> Vec<Dump> {
    let mut dumps: Vec<Dump> = Vec::new();
    for line in saquery.lines() {
        if !line.starts_with([' ', '\t']) {
            if let Some(kind) = line.trim_end().strip_suffix(" dump:") {
                dumps.push(Dump {
                    kind: kind.to_owned(),
                    fields: Vec::new(),
                });
            }
            continue;
        }
        let Some(dump) = dumps.last_mut() else {
            continue;
        };
        let line = line.trim();
        let Some(start) = line.find(['.', ':']) else {
            continue;
        };
        let value = line[start..].trim_start_matches(['.', ':']);
        // `a.b` is no field line: the name ends where a run of at least two dots (or a
        // colon) begins.
        if line[start..].len() - value.len() < 2 && !line[start..].starts_with(':') {
            continue;
        }
        dump.fields
            .push((line[..start].to_owned(), value.trim_end().to_owned()));
    }
    dumps
}

/// The records of `kind` in `saquery` output.
pub fn dumps_of<'a>(dumps: &'a [Dump], kind: &'a str) -> impl Iterator<Item = &'a Dump> + 'a {
    dumps.iter().filter(move |d| d.kind == kind)
}

/// The NodeRecords of `saquery` output.
///
/// # Errors
/// A record without `lid`, `node_guid`, `port_guid` or `NodeDescription`.
pub fn saquery_node_records(dumps: &[Dump]) -> Result<Vec<NodeRecordKey>, String> {
    dumps_of(dumps, "NodeRecord")
        .map(|d| {
            Ok::<_, String>(NodeRecordKey {
                lid: d.number("lid")?,
                node_guid: d.number("node_guid")?,
                port_guid: d.number("port_guid")?,
                description: d
                    .field("NodeDescription")
                    .ok_or("NodeRecord without NodeDescription")?
                    .to_owned(),
            })
        })
        .collect()
}

/// The LinkRecords of `saquery -x` output.
///
/// # Errors
/// A record without `FromLID`, `FromPort`, `ToLID` or `ToPort`.
pub fn saquery_link_records(dumps: &[Dump]) -> Result<Vec<LinkKey>, String> {
    dumps_of(dumps, "LinkRecord")
        .map(|d| {
            Ok(LinkKey {
                from_lid: d.number("FromLID")?,
                from_port: d.number("FromPort")?,
                to_lid: d.number("ToLID")?,
                to_port: d.number("ToPort")?,
            })
        })
        .collect()
}

/// The LIDs of the SwitchInfoRecords of `saquery SWIR` output.
///
/// # Errors
/// A record without `LID`.
pub fn saquery_switch_lids(dumps: &[Dump]) -> Result<Vec<u16>, String> {
    dumps_of(dumps, "SwitchInfoRecord")
        .map(|d| d.number("LID"))
        .collect()
}

/// The (EndPortLid, PortNum) of the PortInfoRecords of `saquery PIR` output.
///
/// # Errors
/// A record without `EndPortLid` or `PortNum`.
pub fn saquery_port_info_records(dumps: &[Dump]) -> Result<Vec<PortKey>, String> {
    dumps_of(dumps, "PortInfoRecord")
        .map(|d| {
            Ok(PortKey {
                lid: d.number("EndPortLid")?,
                port: d.number("PortNum")?,
            })
        })
        .collect()
}

/// Compares the records a query returned with the set expected: `None` if they are the
/// same records, each once; else the counts, the duplicates, and the first few missing and
/// unexpected records.
pub fn table_diff<T: Ord + Debug>(expected: &BTreeSet<T>, got: &[T]) -> Option<String> {
    const SHOW: usize = 5;
    let mut seen = BTreeSet::new();
    let duplicates: Vec<&T> = got.iter().filter(|r| !seen.insert(*r)).collect();
    let missing: Vec<&T> = expected.iter().filter(|r| !seen.contains(r)).collect();
    let extra: Vec<&T> = seen
        .iter()
        .copied()
        .filter(|r| !expected.contains(r))
        .collect();
    if duplicates.is_empty() && missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut s = format!("{} records, {} expected", got.len(), expected.len());
    for (what, list) in [
        ("duplicated", &duplicates),
        ("missing", &missing),
        ("unexpected", &extra),
    ] {
        if !list.is_empty() {
            let _ = write!(
                s,
                "; {} {what}, e.g. {:?}",
                list.len(),
                Shown(&list[..list.len().min(SHOW)])
            );
        }
    }
    Some(s)
}

struct Shown<'a, T>(&'a [&'a T]);

impl<T: Debug> Debug for Shown<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ibnetdiscover` of `fabrics/example.net` after opensm (abridged to one switch, its
    /// peers and a CA with an unlinked second port).
    const DISCOVERED: &str = "#\n# Topology file: generated on Tue Dec  1 09:40:11 2026\n#\n\
        # Initiated from node 0000000000100000 port 0000000000100001\n\n\
        vendid=0x0\ndevid=0x0\nsysimgguid=0x200000\nswitchguid=0x200000(200000)\n\
        Switch\t8 \"S-0000000000200000\"\t\t# \"sw1\" enhanced port 0 lid 2 lmc 0\n\
        [1]\t\"H-0000000000100000\"[1](100001) \t\t# \"host1 HCA-1\" lid 1 4xQDR\n\
        [2]\t\"H-0000000000100002\"[1](100003) \t\t# \"host2 HCA-1\" lid 4 4xQDR\n\n\
        vendid=0x0\ndevid=0x0\nsysimgguid=0x100002\ncaguid=0x100002\n\
        Ca\t2 \"H-0000000000100002\"\t\t# \"host2 HCA-1\"\n\
        [1](100003) \t\"S-0000000000200000\"[2]\t\t# lid 4 lmc 0 \"sw1\" lid 2 4xQDR\n\n\
        vendid=0x0\ndevid=0x0\nsysimgguid=0x100000\ncaguid=0x100000\n\
        Ca\t1 \"H-0000000000100000\"\t\t# \"host1 \"quoted\" HCA-1\"\n\
        [1](100001) \t\"S-0000000000200000\"[1]\t\t# lid 1 lmc 0 \"sw1\" lid 2 4xQDR\n";

    #[test]
    fn parses_ibnetdiscover_sections() {
        let t = Topology::parse(DISCOVERED).unwrap();
        assert_eq!(t.nodes.len(), 3);
        let sw = t.node("S-0000000000200000").unwrap();
        assert_eq!(
            (sw.kind, sw.guid, sw.port0_guid, sw.lid, sw.num_ports),
            (
                NodeKind::Switch,
                Some(0x20_0000),
                Some(0x20_0000),
                Some(2),
                8
            )
        );
        assert_eq!(sw.description, "sw1");
        assert_eq!(
            sw.ports[&2],
            PortLine {
                port: 2,
                guid: None,
                lid: None,
                remote_id: "H-0000000000100002".into(),
                remote_port: 1,
                remote_lid: Some(4),
            }
        );
        let ca = t.node("H-0000000000100002").unwrap();
        assert_eq!(
            (ca.kind, ca.guid, ca.num_ports),
            (NodeKind::Ca, Some(0x10_0002), 2)
        );
        assert_eq!(ca.ports[&1].guid, Some(0x10_0003));
        assert_eq!(ca.ports[&1].lid, Some(4));
        assert_eq!(ca.ports[&1].remote_lid, Some(2));
        assert_eq!(ca.port_lid(2), None, "the unlinked port is not listed");
        assert_eq!(
            t.node("H-0000000000100000").unwrap().description,
            "host1 \"quoted\" HCA-1"
        );
        assert_eq!(
            t.lids_by_description(),
            BTreeMap::from([
                ("sw1".to_owned(), 2),
                ("host2 HCA-1".to_owned(), 4),
                ("host1 \"quoted\" HCA-1".to_owned(), 1),
            ])
        );
    }

    #[test]
    fn derives_the_sa_tables() {
        let t = Topology::parse(DISCOVERED).unwrap();
        let nodes = t.node_records().unwrap();
        assert_eq!(nodes.len(), 3);
        assert!(nodes.contains(&NodeRecordKey {
            lid: 4,
            node_guid: 0x10_0002,
            port_guid: 0x10_0003,
            description: "host2 HCA-1".into(),
        }));
        assert!(nodes.iter().any(|n| n.lid == 2 && n.port_guid == 0x20_0000));
        let link = |from_lid, from_port, to_lid, to_port| LinkKey {
            from_lid,
            from_port,
            to_lid,
            to_port,
        };
        assert_eq!(
            t.link_records().unwrap(),
            BTreeSet::from([
                link(1, 1, 2, 1),
                link(2, 1, 1, 1),
                link(2, 2, 4, 1),
                link(4, 1, 2, 2),
            ])
        );
        assert_eq!(t.switch_lids().unwrap(), BTreeSet::from([2]));
        let ports = t.port_info_records().unwrap();
        // 9 switch ports (0..=8) + one port of each CA.
        assert_eq!(ports.len(), 11);
        assert!(ports.contains(&PortKey { lid: 2, port: 8 }));
        assert!(ports.contains(&PortKey { lid: 4, port: 1 }));
        assert!(!ports.iter().any(|p| p.lid == 4 && p.port == 2));
    }

    #[test]
    fn rejects_inconsistent_topologies() {
        // A link listed from one end only.
        let one_sided = DISCOVERED.replace(
            "[2]\t\"H-0000000000100002\"[1](100003) \t\t# \"host2 HCA-1\" lid 4 4xQDR\n",
            "",
        );
        let err = Topology::parse(&one_sided).unwrap_err();
        assert!(err.contains("not listed from the other end"), "{err}");
        // A comment that disagrees with the peer's section.
        let wrong =
            DISCOVERED.replace("\"host1 HCA-1\" lid 1 4xQDR", "\"host1 HCA-1\" lid 9 4xQDR");
        let err = Topology::parse(&wrong).unwrap_err();
        assert!(err.contains("peer lid 9"), "{err}");
        assert!(Topology::parse("Ca\tx \"H-1\"\t\t# \"x\"\n").is_err());
        assert!(Topology::parse("[1]\t\"H-1\"[1]\n").is_err());
        assert!(Topology::parse("caguid=0x1\nCa\t1 \"H-1\"\n").is_err());
        // Sections without their GUID lines, or peers without a section, are rejected.
        let bare = "Ca\t1 \"H-1\"\t\t# \"x\"\n[1](2) \t\"S-3\"[4]\t\t# lid 7 lmc 0\n";
        assert!(Topology::parse(bare).is_err());
    }

    /// `saquery` output shapes (abridged): a NodeRecord, LinkRecords, a SwitchInfoRecord with
    /// its nested dump, a PortInfoRecord with a nested `name:....value` dump and flags.
    const SAQUERY: &str = "NodeRecord dump:\n\t\tlid.....................1\n\
        \t\treserved................0x0\n\t\tnode_type...............Channel Adapter\n\
        \t\tnode_guid...............0x0000000000100000\n\
        \t\tport_guid...............0x0000000000100001\n\
        \t\tNodeDescription.........host1 HCA-1 v1.2\n\
        LinkRecord dump:\n\t\tFromLID....................1\n\t\tFromPort...................1\n\
        \t\tToPort.....................1\n\t\tToLID......................2\n\
        LinkRecord dump:\n\t\tFromLID....................2\n\t\tFromPort...................1\n\
        \t\tToPort.....................1\n\t\tToLID......................1\n\
        SwitchInfoRecord dump:\n\t\tRID\n\t\tLID.....................................2\n\
        \t\tSwitchInfo dump:\n\t\tLinearFDBCap............................0x7800\n\
        PortInfoRecord dump:\n\tRID\n\t\tEndPortLid..............3\n\t\tPortNum.................7\n\
        \tPortInfo dump:\n\t\tLid:.............................3\n\t\t\t\tIsSM\n\
        \t\tLinkWidthSupported:..............1X or 4X\n\t\tRoundTrip:.......................0";

    #[test]
    fn parses_saquery_dumps() {
        let dumps = parse_dumps(SAQUERY);
        let kinds: Vec<&str> = dumps.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "NodeRecord",
                "LinkRecord",
                "LinkRecord",
                "SwitchInfoRecord",
                "PortInfoRecord"
            ]
        );
        assert_eq!(
            saquery_node_records(&dumps).unwrap(),
            [NodeRecordKey {
                lid: 1,
                node_guid: 0x10_0000,
                port_guid: 0x10_0001,
                description: "host1 HCA-1 v1.2".into(),
            }]
        );
        assert_eq!(
            saquery_link_records(&dumps).unwrap(),
            [
                LinkKey {
                    from_lid: 1,
                    from_port: 1,
                    to_lid: 2,
                    to_port: 1
                },
                LinkKey {
                    from_lid: 2,
                    from_port: 1,
                    to_lid: 1,
                    to_port: 1
                }
            ]
        );
        assert_eq!(saquery_switch_lids(&dumps).unwrap(), [2]);
        assert_eq!(
            saquery_port_info_records(&dumps).unwrap(),
            [PortKey { lid: 3, port: 7 }]
        );
        let pir = &dumps[4];
        assert_eq!(pir.field("Lid"), Some("3"));
        assert_eq!(pir.field("LinkWidthSupported"), Some("1X or 4X"));
        assert_eq!(pir.field("RoundTrip"), Some("0"));
        assert_eq!(pir.field("IsSM"), None);
        assert_eq!(dumps[3].number::<u16>("LinearFDBCap"), Ok(0x7800));
        assert!(dumps[3].number::<u8>("LinearFDBCap").is_err());
        assert!(dumps[3].number::<u16>("Nope").is_err());
        assert!(parse_dumps("Query SA failed: Connection timed out\n").is_empty());
    }

    #[test]
    fn table_diff_names_what_differs() {
        let want = BTreeSet::from([1, 2, 3]);
        assert_eq!(table_diff(&want, &[3, 1, 2]), None);
        let d = table_diff(&want, &[1, 1, 4]).unwrap();
        assert_eq!(
            d,
            "3 records, 3 expected; 1 duplicated, e.g. [1]; 2 missing, e.g. [2, 3]; \
             1 unexpected, e.g. [4]"
        );
    }
}
