//! libibnetdisc's fabric cache file (`ibnetdiscover --cache`, `ibnd_cache_fabric` /
//! `ibnd_load_fabric` in rdma-core's `libibnetdisc/ibnetdisc_cache.c`): read into a
//! [`Fabric`] and written from one, so that caches made by the C tools load here and caches
//! written here load in the C tools.
//!
//! # Format
//!
//! Every number is **little-endian**; the attribute blocks are the 64-byte SMP data areas as
//! received (big-endian inside, decoded with [`ibmad`]'s Reprs).
//!
//! * Header, 28 bytes: magic `0x8FE7832B`, version 1, node count, port count (all `u32`),
//!   the "from node" NodeGUID (`u64`), `maxhops_discovered` (`u32`).
//! * Node records, 207 bytes plus 9 per port key: `smalid` (`u16`), `smalmc`, `smaenhsp0`
//!   (`u8`), SwitchInfo (64), NodeGUID (`u64`), type, numports (`u8`), NodeInfo (64),
//!   NodeDescription (64), the count of port keys (`u8`) and that many keys (port GUID
//!   `u64`, port number `u8`).
//! * Port records, 95 bytes: port GUID (`u64`), port number, external port number (`u8`),
//!   base LID (`u16`), LMC (`u8`), PortInfo (64), the owning NodeGUID (`u64`), a flag (`u8`,
//!   non-zero: linked) and the remote port's key (GUID `u64`, number `u8`; zeros when not
//!   linked).
//!
//! A port is identified by (port GUID, port number): every port of a switch has port 0's
//! GUID.
//!
//! # Order
//!
//! C writes the nodes in its all-nodes list order, which is [`Fabric::nodes`]' order, and
//! loads them back in file order; so nodes round-trip in order. It writes the ports by
//! walking its port-GUID hash table (`HTSZ` 137 buckets, [`hash_guid`]), each bucket's chain
//! newest first, so their order depends on the order discovery created them.
//! [`CacheFile::from_fabric`] writes the ports bucket by bucket and, within a bucket, by
//! node (in [`Fabric::nodes`] order) and then by descending port number: exactly the chain
//! order of a fabric C *loaded* from a cache, so re-caching a loaded cache gives C's bytes.
//! The order of port records does not change what the C tools load.
//!
//! # Loading
//!
//! [`Fabric::from_ibnetdisc_cache`] follows `ibnd_load_fabric` of rdma-core 44 and later:
//! a node's port key with no port record, or with a port number above the node's
//! NumPorts, is skipped (the cache is incomplete, C keeps going), as is a port record no
//! node lists; of two keys for one port number the later wins; a remote key naming no
//! loaded port leaves the port unlinked. Everything C
//! rejects is an error ([`CacheError`]), and so are files whose meaning the model cannot
//! hold (two nodes with one GUID, two records for one port, a port listed by two nodes or by
//! a node that does not own it, links that do not point back). Counts in the header are
//! checked against the file's length before anything is allocated. Bytes after the last
//! port record are ignored, as C does. Like C, loading then groups the nodes into chassis
//! ([`Fabric::group_chassis`]).
//!
//! What the cache does not hold is absent from a loaded fabric: the directed routes
//! ([`Node::path`] is empty), Mellanox ExtendedPortInfo ([`Port::mlnx_speed`] 0), the MAD
//! count and `-s` progress records. The attribute bytes are kept ([`RawNode`],
//! [`Port::raw_info`]) and written back unchanged; a fabric without them (parsed from text
//! or JSON) gets attribute blocks rebuilt from the model's fields (other fields zero).

use std::collections::HashMap;
use std::fmt;

use ibmad::{LinkWidth, NodeInfo, NodeType, PortInfo, SwitchInfo};

use crate::model::{Fabric, Node, Origin, Port, PortRef, RawNode};

/// The file's first four bytes (`IBND_FABRIC_CACHE_MAGIC`, little-endian).
pub const MAGIC: u32 = 0x8FE7_832B;
/// The only format version (`IBND_FABRIC_CACHE_VERSION`).
pub const VERSION: u32 = 1;
/// Header length (`IBND_FABRIC_CACHE_HEADER_LEN`).
pub const HEADER_LEN: usize = 28;
/// A node record's length without its port keys (`IBND_NODE_CACHE_HEADER_LEN`).
pub const NODE_RECORD_LEN: usize = 15 + 3 * 64;
/// One port key in a node record (`IBND_PORT_CACHE_KEY_LEN`).
pub const PORT_KEY_LEN: usize = 9;
/// A port record's length (`IBND_PORT_CACHE_LEN`).
pub const PORT_RECORD_LEN: usize = 31 + 64;
/// Buckets of libibnetdisc's GUID hash tables (`HTSZ`).
pub const HTSZ: u32 = 137;

/// libibnetdisc's `HASHGUID`: the bucket of `guid` is `hash_guid(guid) % HTSZ`.
pub fn hash_guid(guid: u64) -> u32 {
    (guid as u32).wrapping_mul(101) ^ ((guid >> 32) as u32).wrapping_mul(103)
}

/// Whether `bytes` start with the cache magic (how the tools tell a cache from text/JSON).
pub fn is_cache(bytes: &[u8]) -> bool {
    bytes.get(..4) == Some(&MAGIC.to_le_bytes()[..])
}

/// Why a cache file was not loaded (or a fabric not cached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheError {
    /// The file ended inside `what`, which needs `need` bytes at `offset`.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// Its length.
        need: usize,
    },
    /// The first four bytes are not [`MAGIC`].
    BadMagic(u32),
    /// The version is not [`VERSION`].
    BadVersion(u32),
    /// The header's count of `what` records cannot fit in the file.
    TooManyRecords {
        /// `"node"` or `"port"`.
        what: &'static str,
        /// The count in the header.
        count: u32,
        /// Bytes left for those records.
        available: usize,
    },
    /// Two node records have this NodeGUID.
    DuplicateNode(u64),
    /// Two port records have this (GUID, number).
    DuplicatePort(u64, u8),
    /// A port is listed twice (by two nodes, or twice by one): C's "duplicate port".
    PortListedTwice(u64, u8),
    /// A node lists a port whose record names another owner (or an owner with no record).
    WrongOwner {
        /// The listing node.
        node: u64,
        /// The port.
        port: (u64, u8),
        /// The owner its record names.
        owner: u64,
    },
    /// The header's "from node" has no node record.
    NoFromNode(u64),
    /// A link does not point back: `a`'s remote is `b`, `b`'s is something else.
    AsymmetricLink {
        /// One end (GUID, number).
        a: (u64, u8),
        /// The end it names.
        b: (u64, u8),
    },
    /// The fabric to cache has no start node ([`Fabric::from`]).
    MissingFrom,
    /// The fabric to cache breaks the model's invariants ([`Fabric::validate`]) or does not
    /// fit the format.
    Invalid(String),
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::Truncated { what, offset, need } => write!(
                f,
                "truncated ibnetdisc cache: {what} at offset {offset} needs {need} bytes"
            ),
            CacheError::BadMagic(m) => write!(
                f,
                "not an ibnetdisc cache file (magic {m:#010x}, expected {MAGIC:#010x})"
            ),
            CacheError::BadVersion(v) => write!(
                f,
                "unsupported ibnetdisc cache version {v} (expected {VERSION})"
            ),
            CacheError::TooManyRecords {
                what,
                count,
                available,
            } => write!(
                f,
                "invalid ibnetdisc cache: {count} {what} records cannot fit in the {available} bytes left"
            ),
            CacheError::DuplicateNode(g) => {
                write!(f, "invalid ibnetdisc cache: two nodes with GUID {g:#018x}")
            }
            CacheError::DuplicatePort(g, p) => write!(
                f,
                "invalid ibnetdisc cache: two records for port {g:#018x}:{p}"
            ),
            CacheError::PortListedTwice(g, p) => write!(
                f,
                "invalid ibnetdisc cache: duplicate port {g:#018x}:{p}"
            ),
            CacheError::WrongOwner { node, port, owner } => write!(
                f,
                "invalid ibnetdisc cache: node {node:#018x} lists port {:#018x}:{} owned by {owner:#018x}",
                port.0, port.1
            ),
            CacheError::NoFromNode(g) => write!(
                f,
                "invalid ibnetdisc cache: cannot find from node {g:#018x}"
            ),
            CacheError::AsymmetricLink { a, b } => write!(
                f,
                "invalid ibnetdisc cache: port {:#018x}:{} links to {:#018x}:{}, which does not link back",
                a.0, a.1, b.0, b.1
            ),
            CacheError::MissingFrom => f.write_str("cannot cache fabric: missing from node"),
            CacheError::Invalid(why) => write!(f, "inconsistent fabric: {why}"),
        }
    }
}

impl std::error::Error for CacheError {}

/// One node record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    /// `smalid`: a switch's port 0 LID.
    pub smalid: u16,
    /// `smalmc`.
    pub smalmc: u8,
    /// `smaenhsp0` (SwitchInfo.EnhancedPort0).
    pub smaenhsp0: u8,
    /// SwitchInfo.
    pub switch_info: [u8; 64],
    /// NodeGUID.
    pub guid: u64,
    /// NodeType.
    pub node_type: u8,
    /// NumPorts.
    pub num_ports: u8,
    /// NodeInfo.
    pub node_info: [u8; 64],
    /// NodeDescription.
    pub node_desc: [u8; 64],
    /// The ports stored, as (port GUID, port number) keys.
    pub ports: Vec<(u64, u8)>,
}

/// One port record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRecord {
    /// Port GUID.
    pub guid: u64,
    /// Port number.
    pub number: u8,
    /// External (chassis) port number.
    pub ext_port: u8,
    /// Base LID.
    pub base_lid: u16,
    /// LMC.
    pub lmc: u8,
    /// PortInfo.
    pub info: [u8; 64],
    /// NodeGUID of the owning node.
    pub node_guid: u64,
    /// The remote port's key, when the flag says linked.
    pub remote: Option<(u64, u8)>,
}

/// A whole cache file, record by record: [`CacheFile::parse`] / [`CacheFile::to_bytes`]
/// convert bytes, [`CacheFile::to_fabric`] / [`CacheFile::from_fabric`] the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFile {
    /// NodeGUID of the node discovery started from.
    pub from_node_guid: u64,
    /// `maxhops_discovered`.
    pub max_hops: u32,
    /// Node records in file order.
    pub nodes: Vec<NodeRecord>,
    /// Port records in file order.
    pub ports: Vec<PortRecord>,
}

/// A bounds-checked little-endian cursor.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], CacheError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(CacheError::Truncated {
                what,
                offset: self.pos,
                need: n,
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// Reads little-endian fields from a record whose length was already checked.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.0[0];
        self.0 = &self.0[1..];
        v
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | (u16::from(self.u8()) << 8)
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    fn block(&mut self) -> [u8; 64] {
        let mut b = [0; 64];
        b.copy_from_slice(&self.0[..64]);
        self.0 = &self.0[64..];
        b
    }
}

impl CacheFile {
    /// Parses a cache file's records (no cross-checks between records; see
    /// [`CacheFile::to_fabric`]).
    ///
    /// # Errors
    /// Bad magic or version, a count that cannot fit, or a record cut short.
    pub fn parse(bytes: &[u8]) -> Result<CacheFile, CacheError> {
        let mut c = Cursor { buf: bytes, pos: 0 };
        if bytes.len() >= 4 && !is_cache(bytes) {
            let m = Fields(&bytes[..4]).u32();
            return Err(CacheError::BadMagic(m));
        }
        let mut h = Fields(c.take(HEADER_LEN, "header")?);
        let magic = h.u32();
        if magic != MAGIC {
            return Err(CacheError::BadMagic(magic));
        }
        let version = h.u32();
        if version != VERSION {
            return Err(CacheError::BadVersion(version));
        }
        let node_count = h.u32();
        let port_count = h.u32();
        let from_node_guid = h.u64();
        let max_hops = h.u32();
        let min_total = u64::from(node_count) * NODE_RECORD_LEN as u64
            + u64::from(port_count) * PORT_RECORD_LEN as u64;
        if min_total > c.remaining() as u64 {
            let nodes_fit = u64::from(node_count) * NODE_RECORD_LEN as u64 <= c.remaining() as u64;
            return Err(CacheError::TooManyRecords {
                what: if nodes_fit { "port" } else { "node" },
                count: if nodes_fit { port_count } else { node_count },
                available: c.remaining(),
            });
        }
        // The check above bounds both counts by the file's length.
        let mut nodes = Vec::with_capacity(node_count as usize);
        for _ in 0..node_count {
            let mut f = Fields(c.take(NODE_RECORD_LEN, "node record")?);
            let smalid = f.u16();
            let smalmc = f.u8();
            let smaenhsp0 = f.u8();
            let switch_info = f.block();
            let guid = f.u64();
            let node_type = f.u8();
            let num_ports = f.u8();
            let node_info = f.block();
            let node_desc = f.block();
            let keys = f.u8();
            let mut k = Fields(c.take(PORT_KEY_LEN * usize::from(keys), "node's port keys")?);
            let ports = (0..keys).map(|_| (k.u64(), k.u8())).collect();
            nodes.push(NodeRecord {
                smalid,
                smalmc,
                smaenhsp0,
                switch_info,
                guid,
                node_type,
                num_ports,
                node_info,
                node_desc,
                ports,
            });
        }
        let fit = c.remaining() / PORT_RECORD_LEN;
        let mut ports = Vec::with_capacity((port_count as usize).min(fit));
        for _ in 0..port_count {
            let mut f = Fields(c.take(PORT_RECORD_LEN, "port record")?);
            let guid = f.u64();
            let number = f.u8();
            let ext_port = f.u8();
            let base_lid = f.u16();
            let lmc = f.u8();
            let info = f.block();
            let node_guid = f.u64();
            let flag = f.u8();
            let remote_guid = f.u64();
            let remote_port = f.u8();
            ports.push(PortRecord {
                guid,
                number,
                ext_port,
                base_lid,
                lmc,
                info,
                node_guid,
                remote: (flag != 0).then_some((remote_guid, remote_port)),
            });
        }
        Ok(CacheFile {
            from_node_guid,
            max_hops,
            nodes,
            ports,
        })
    }

    /// The file's bytes, as `ibnd_cache_fabric` writes them (a node's key count is a byte:
    /// keys past the 255th are not written; [`CacheFile::from_fabric`] refuses such nodes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let keys: usize = self.nodes.iter().map(|n| n.ports.len()).sum();
        let mut out = Vec::with_capacity(
            HEADER_LEN
                + self.nodes.len() * NODE_RECORD_LEN
                + keys * PORT_KEY_LEN
                + self.ports.len() * PORT_RECORD_LEN,
        );
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.nodes.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.ports.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.from_node_guid.to_le_bytes());
        out.extend_from_slice(&self.max_hops.to_le_bytes());
        for n in &self.nodes {
            out.extend_from_slice(&n.smalid.to_le_bytes());
            out.push(n.smalmc);
            out.push(n.smaenhsp0);
            out.extend_from_slice(&n.switch_info);
            out.extend_from_slice(&n.guid.to_le_bytes());
            out.push(n.node_type);
            out.push(n.num_ports);
            out.extend_from_slice(&n.node_info);
            out.extend_from_slice(&n.node_desc);
            // The count is a byte, as in C: at most 255 keys are written.
            let keys = &n.ports[..n.ports.len().min(255)];
            out.push(keys.len() as u8);
            for (g, p) in keys {
                out.extend_from_slice(&g.to_le_bytes());
                out.push(*p);
            }
        }
        for p in &self.ports {
            out.extend_from_slice(&p.guid.to_le_bytes());
            out.push(p.number);
            out.push(p.ext_port);
            out.extend_from_slice(&p.base_lid.to_le_bytes());
            out.push(p.lmc);
            out.extend_from_slice(&p.info);
            out.extend_from_slice(&p.node_guid.to_le_bytes());
            let (flag, (g, n)) = match p.remote {
                Some(r) => (1, r),
                None => (0, (0, 0)),
            };
            out.push(flag);
            out.extend_from_slice(&g.to_le_bytes());
            out.push(n);
        }
        out
    }

    /// Rebuilds the fabric as `ibnd_load_fabric` does (see the module docs for what is
    /// skipped and what is an error), then groups chassis.
    ///
    /// # Errors
    /// See [`CacheError`].
    pub fn to_fabric(&self) -> Result<Fabric, CacheError> {
        let mut node_index: HashMap<u64, usize> = HashMap::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            if node_index.insert(n.guid, i).is_some() {
                return Err(CacheError::DuplicateNode(n.guid));
            }
        }
        let mut port_index: HashMap<(u64, u8), usize> = HashMap::with_capacity(self.ports.len());
        for (i, p) in self.ports.iter().enumerate() {
            if port_index.insert((p.guid, p.number), i).is_some() {
                return Err(CacheError::DuplicatePort(p.guid, p.number));
            }
        }
        let Some(&from) = node_index.get(&self.from_node_guid) else {
            return Err(CacheError::NoFromNode(self.from_node_guid));
        };
        // Claim the ports: which node holds each port record.
        let mut claimed: Vec<Option<usize>> = vec![None; self.ports.len()];
        // (node index, port number) -> the record loaded there.
        let mut at: HashMap<(usize, u8), usize> = HashMap::with_capacity(self.ports.len());
        let mut nodes: Vec<Node> = Vec::with_capacity(self.nodes.len());
        for (i, rec) in self.nodes.iter().enumerate() {
            let mut node = node_from_record(rec);
            for &key in &rec.ports {
                let Some(&pi) = port_index.get(&key) else {
                    continue; // C: "Cache incomplete: cannot find port"
                };
                if claimed[pi].is_some() {
                    return Err(CacheError::PortListedTwice(key.0, key.1));
                }
                let prec = &self.ports[pi];
                if key.1 > rec.num_ports {
                    continue; // C: "portnum out of range", skipped
                }
                if prec.node_guid != rec.guid {
                    return Err(CacheError::WrongOwner {
                        node: rec.guid,
                        port: key,
                        owner: prec.node_guid,
                    });
                }
                // Two keys for one port number: the later one wins, as C's
                // `node->ports[portnum]` assignment.
                if let Some(old) = at.insert((i, key.1), pi) {
                    claimed[old] = None;
                    node.ports.retain(|p| p.number != key.1);
                }
                claimed[pi] = Some(i);
                node.ports.push(port_from_record(prec));
            }
            node.ports.sort_by_key(|p| p.number);
            nodes.push(node);
        }
        // Links: a remote key naming a loaded port links; any other leaves it unlinked.
        let resolve = |key: (u64, u8)| -> Option<PortRef> {
            let pi = *port_index.get(&key)?;
            claimed[pi].map(|node| PortRef { node, port: key.1 })
        };
        for (pi, prec) in self.ports.iter().enumerate() {
            let Some(owner) = claimed[pi] else { continue };
            let Some(remote) = prec.remote.and_then(resolve) else {
                continue;
            };
            let back = at
                .get(&(remote.node, remote.port))
                .and_then(|&ri| self.ports[ri].remote)
                .and_then(resolve);
            if back
                != Some(PortRef {
                    node: owner,
                    port: prec.number,
                })
            {
                return Err(CacheError::AsymmetricLink {
                    a: (prec.guid, prec.number),
                    b: prec.remote.unwrap_or_default(),
                });
            }
            if let Some(p) = nodes[owner].port_mut(prec.number) {
                p.remote = Some(remote);
            }
        }
        let mut fabric = Fabric {
            from: Some(Origin {
                node: from,
                port: nodes[from].local_port,
            }),
            nodes,
            max_hops_discovered: Some(self.max_hops),
            ..Fabric::default()
        };
        fabric.group_chassis();
        fabric.validate().map_err(CacheError::Invalid)?;
        Ok(fabric)
    }

    /// The records `ibnd_cache_fabric` writes for `fabric`: nodes in order, ports in hash
    /// bucket order (see the module docs). Ports numbered above their node's NumPorts, which
    /// C cannot hold, are left out.
    ///
    /// # Errors
    /// [`CacheError::MissingFrom`] without [`Fabric::from`]; [`CacheError::Invalid`] if the
    /// fabric fails [`Fabric::validate`] or a node has 256 ports (0 to 255: C's key count
    /// byte would wrap to 0).
    pub fn from_fabric(fabric: &Fabric) -> Result<CacheFile, CacheError> {
        fabric.validate().map_err(CacheError::Invalid)?;
        let from = fabric.from.ok_or(CacheError::MissingFrom)?;
        let stored = |n: &Node, p: &Port| p.number <= n.num_ports;
        if let Some(n) = fabric
            .nodes
            .iter()
            .find(|n| n.ports.iter().filter(|p| stored(n, p)).count() > 255)
        {
            return Err(CacheError::Invalid(format!(
                "node {:#018x} has 256 ports; a cache record holds 255",
                n.guid
            )));
        }
        let nodes = fabric
            .nodes
            .iter()
            .map(|n| {
                let raw = n.raw.as_deref().cloned().unwrap_or_else(|| synth_raw(n));
                NodeRecord {
                    smalid: n.lid,
                    smalmc: n.lmc,
                    smaenhsp0: u8::from(n.enhanced_port0),
                    switch_info: raw.switch_info,
                    guid: n.guid,
                    node_type: n.node_type.into(),
                    num_ports: n.num_ports,
                    node_info: raw.node_info,
                    node_desc: raw.node_desc,
                    ports: n
                        .ports
                        .iter()
                        .filter(|p| stored(n, p))
                        .map(|p| (p.guid, p.number))
                        .collect(),
                }
            })
            .collect();
        let mut order: Vec<(u32, usize, std::cmp::Reverse<u8>)> = Vec::new();
        for (i, n) in fabric.nodes.iter().enumerate() {
            for p in n.ports.iter().filter(|p| stored(n, p)) {
                order.push((hash_guid(p.guid) % HTSZ, i, std::cmp::Reverse(p.number)));
            }
        }
        order.sort_unstable();
        let ports = order
            .into_iter()
            .filter_map(|(_, i, std::cmp::Reverse(num))| {
                let n = &fabric.nodes[i];
                let p = n.port(num)?;
                let remote = p.remote.and_then(|r| {
                    let rn = fabric.nodes.get(r.node)?;
                    let rp = rn.port(r.port)?;
                    stored(rn, rp).then_some((rp.guid, rp.number))
                });
                Some(PortRecord {
                    guid: p.guid,
                    number: p.number,
                    ext_port: p.ext_port,
                    base_lid: p.lid,
                    lmc: p.lmc,
                    info: p
                        .raw_info
                        .as_deref()
                        .copied()
                        .unwrap_or_else(|| synth_port_info(p)),
                    node_guid: n.guid,
                    remote,
                })
            })
            .collect();
        Ok(CacheFile {
            from_node_guid: fabric.nodes[from.node].guid,
            max_hops: fabric.max_hops_discovered.unwrap_or(0),
            nodes,
            ports,
        })
    }
}

fn node_from_record(rec: &NodeRecord) -> Node {
    let mut node = Node::new(NodeType::from(rec.node_type), rec.num_ports, rec.guid);
    // A 64-byte block always holds NodeInfo's 40 bytes.
    if let Ok(ni) = NodeInfo::parse(&rec.node_info) {
        node.system_image_guid = ni.system_image_guid;
        node.port_guid = ni.port_guid;
        node.local_port = ni.local_port_num;
        node.vendor_id = ni.vendor_id;
        node.device_id = ni.device_id;
        node.revision = ni.revision;
    }
    node.description = Node::description_from_bytes(&rec.node_desc);
    node.lid = rec.smalid;
    node.lmc = rec.smalmc;
    node.enhanced_port0 = rec.smaenhsp0 != 0;
    node.raw = Some(Box::new(RawNode {
        node_info: rec.node_info,
        switch_info: rec.switch_info,
        node_desc: rec.node_desc,
    }));
    node
}

fn port_from_record(rec: &PortRecord) -> Port {
    let mut port = Port::new(rec.number, rec.guid);
    port.lid = rec.base_lid;
    port.lmc = rec.lmc;
    port.ext_port = rec.ext_port;
    if let Ok(pi) = PortInfo::parse(&rec.info) {
        port.state = pi.port_state;
        port.phys_state = pi.port_physical_state;
        port.width = u8::from(pi.link_width_active);
        port.speed = pi.link_speed_active;
        port.speed_ext = pi.link_speed_ext_active;
        port.capability_mask = pi.capability_mask;
        port.vl_cap = pi.vl_cap;
    }
    // A port created from a NodeInfo alone is cached with a zeroed PortInfo.
    port.has_info = rec.info != [0; 64];
    port.raw_info = Some(Box::new(rec.info));
    port
}

/// NodeInfo, SwitchInfo and NodeDescription blocks rebuilt from the model's fields.
fn synth_raw(n: &Node) -> RawNode {
    let mut raw = RawNode::default();
    NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: n.node_type,
        num_ports: n.num_ports,
        system_image_guid: n.system_image_guid,
        node_guid: n.guid,
        port_guid: n.port_guid,
        device_id: n.device_id,
        revision: n.revision,
        local_port_num: n.local_port,
        vendor_id: n.vendor_id,
        ..NodeInfo::default()
    }
    .emit(&mut raw.node_info);
    if n.is_switch() {
        SwitchInfo {
            enhanced_port0: n.enhanced_port0,
            ..SwitchInfo::default()
        }
        .emit(&mut raw.switch_info);
    }
    let d = n.description.as_bytes();
    let len = d.len().min(64);
    raw.node_desc[..len].copy_from_slice(&d[..len]);
    raw
}

/// A PortInfo block rebuilt from the model's fields (zeros for a port without PortInfo).
fn synth_port_info(p: &Port) -> [u8; 64] {
    let mut b = [0; 64];
    if p.has_info {
        PortInfo {
            lid: p.lid,
            lmc: p.lmc,
            local_port_num: p.number,
            port_state: p.state,
            port_physical_state: p.phys_state,
            link_width_active: LinkWidth::from(p.width),
            link_speed_active: p.speed,
            link_speed_ext_active: p.speed_ext,
            capability_mask: p.capability_mask,
            vl_cap: p.vl_cap,
            ..PortInfo::default()
        }
        .emit(&mut b);
    }
    b
}

impl Fabric {
    /// Loads an ibnetdisc cache file's bytes ([`CacheFile::parse`], then
    /// [`CacheFile::to_fabric`]).
    ///
    /// # Errors
    /// See [`CacheError`].
    pub fn from_ibnetdisc_cache(bytes: &[u8]) -> Result<Fabric, CacheError> {
        CacheFile::parse(bytes)?.to_fabric()
    }

    /// The fabric as an ibnetdisc cache file ([`CacheFile::from_fabric`], then
    /// [`CacheFile::to_bytes`]).
    ///
    /// # Errors
    /// See [`CacheFile::from_fabric`].
    pub fn to_ibnetdisc_cache(&self) -> Result<Vec<u8>, CacheError> {
        Ok(CacheFile::from_fabric(self)?.to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, WriteOptions};
    use ibmad::{PhysPortState, PortState};

    /// A switch (0x20, 4 ports) with two CAs on ports 1 and 2; discovery from CA 0x10.
    fn fabric() -> Fabric {
        let mut f = Fabric::default();
        let mut sw = Node::new(NodeType::Switch, 4, 0x20);
        sw.port_guid = 0x20;
        sw.system_image_guid = 0x21;
        sw.vendor_id = 0x2c9;
        sw.device_id = 0xc738;
        sw.description = "sw".into();
        sw.lid = 3;
        sw.enhanced_port0 = true;
        for p in 0..=4 {
            let mut port = Port::new(p, 0x20);
            port.lid = 3;
            port.state = PortState::Active;
            port.phys_state = PhysPortState::LinkUp;
            port.width = 2;
            port.speed = 4;
            port.vl_cap = 4;
            sw.ports.push(port);
        }
        f.nodes.push(sw);
        for (guid, lid) in [(0x10u64, 1u16), (0x30, 2)] {
            let mut ca = Node::new(NodeType::ChannelAdapter, 2, guid);
            ca.port_guid = guid + 1;
            ca.local_port = 1;
            ca.description = format!("ca {guid:#x}");
            let mut port = Port::new(1, guid + 1);
            port.lid = lid;
            port.state = PortState::Active;
            port.phys_state = PhysPortState::LinkUp;
            port.width = 2;
            port.speed = 4;
            ca.ports.push(port);
            f.nodes.push(ca);
        }
        f.link(PortRef { node: 1, port: 1 }, PortRef { node: 0, port: 1 });
        f.link(PortRef { node: 2, port: 1 }, PortRef { node: 0, port: 2 });
        f.from = Some(Origin { node: 1, port: 1 });
        f.max_hops_discovered = Some(2);
        f.validate().unwrap();
        f
    }

    fn text(f: &Fabric) -> String {
        let o = WriteOptions {
            format: Format::Topology,
            date: "today".into(),
            ..WriteOptions::default()
        };
        f.to_ibnetdiscover(&o)
    }

    #[test]
    fn round_trips() {
        let f = fabric();
        let bytes = f.to_ibnetdisc_cache().unwrap();
        assert!(is_cache(&bytes));
        let keys = 5 + 1 + 1;
        assert_eq!(
            bytes.len(),
            HEADER_LEN + 3 * NODE_RECORD_LEN + keys * PORT_KEY_LEN + 7 * PORT_RECORD_LEN
        );
        let g = Fabric::from_ibnetdisc_cache(&bytes).unwrap();
        assert_eq!(text(&g), text(&f));
        assert_eq!(g.nodes.len(), 3);
        assert_eq!(g.from, f.from);
        assert_eq!(g.max_hops_discovered, Some(2));
        assert_eq!(g.links(), f.links());
        for (a, b) in f.nodes.iter().zip(&g.nodes) {
            assert_eq!(
                (
                    a.guid,
                    a.port_guid,
                    a.system_image_guid,
                    a.vendor_id,
                    a.device_id
                ),
                (
                    b.guid,
                    b.port_guid,
                    b.system_image_guid,
                    b.vendor_id,
                    b.device_id
                )
            );
            assert_eq!(
                (a.lid, a.enhanced_port0, &a.description),
                (b.lid, b.enhanced_port0, &b.description)
            );
            for (p, q) in a.ports.iter().zip(&b.ports) {
                assert_eq!(
                    (
                        p.number,
                        p.guid,
                        p.lid,
                        p.state,
                        p.phys_state,
                        p.width,
                        p.speed
                    ),
                    (
                        q.number,
                        q.guid,
                        q.lid,
                        q.state,
                        q.phys_state,
                        q.width,
                        q.speed
                    )
                );
            }
        }
        // Written again from the loaded fabric (raw blocks kept): the same bytes.
        assert_eq!(g.to_ibnetdisc_cache().unwrap(), bytes);
    }

    #[test]
    fn ports_are_written_in_hash_bucket_order() {
        let file = CacheFile::from_fabric(&fabric()).unwrap();
        let keys: Vec<(u32, u64, u8)> = file
            .ports
            .iter()
            .map(|p| (hash_guid(p.guid) % HTSZ, p.guid, p.number))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_by_key(|&(b, ..)| b);
        assert_eq!(keys, sorted);
        // A switch's ports share a bucket: highest number first, as C's chain after a load.
        let sw: Vec<u8> = keys.iter().filter(|k| k.1 == 0x20).map(|k| k.2).collect();
        assert_eq!(sw, [4, 3, 2, 1, 0]);
        assert_eq!(hash_guid(0x1_0000_0002), 103 ^ 202);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = fabric().to_ibnetdisc_cache().unwrap();
        for n in 0..bytes.len() {
            match Fabric::from_ibnetdisc_cache(&bytes[..n]) {
                Err(CacheError::Truncated { .. } | CacheError::TooManyRecords { .. }) => {}
                other => panic!("{n} bytes: {other:?}"),
            }
        }
        // Trailing bytes are ignored, as C does.
        let mut longer = bytes.clone();
        longer.extend_from_slice(b"junk");
        assert!(Fabric::from_ibnetdisc_cache(&longer).is_ok());
    }

    #[test]
    fn bad_magic_version_and_counts() {
        let bytes = fabric().to_ibnetdisc_cache().unwrap();
        let mut b = bytes.clone();
        b[0] ^= 1;
        assert!(matches!(
            Fabric::from_ibnetdisc_cache(&b),
            Err(CacheError::BadMagic(_))
        ));
        assert!(!is_cache(&b));
        assert!(Fabric::from_ibnetdisc_cache(b"# Topology file").is_err());
        let mut b = bytes.clone();
        b[4] = 2;
        assert_eq!(
            Fabric::from_ibnetdisc_cache(&b),
            Err(CacheError::BadVersion(2))
        );
        for at in [8, 12] {
            let mut b = bytes.clone();
            b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            let e = Fabric::from_ibnetdisc_cache(&b).unwrap_err();
            assert!(
                matches!(
                    e,
                    CacheError::TooManyRecords {
                        count: u32::MAX,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("4294967295"), "{e}");
        }
    }

    fn file() -> CacheFile {
        CacheFile::from_fabric(&fabric()).unwrap()
    }

    fn load(f: &CacheFile) -> Result<Fabric, CacheError> {
        Fabric::from_ibnetdisc_cache(&f.to_bytes())
    }

    #[test]
    fn inconsistent_records_are_errors() {
        let mut f = file();
        f.nodes[2].guid = 0x20;
        assert_eq!(load(&f), Err(CacheError::DuplicateNode(0x20)));

        let mut f = file();
        let p = f.ports[0].clone();
        f.ports.push(p.clone());
        assert_eq!(load(&f), Err(CacheError::DuplicatePort(p.guid, p.number)));

        let mut f = file();
        f.from_node_guid = 0x99;
        assert_eq!(load(&f), Err(CacheError::NoFromNode(0x99)));

        // CA 0x30 also lists the switch's port 1.
        let mut f = file();
        f.nodes[2].ports.push((0x20, 1));
        assert_eq!(load(&f), Err(CacheError::PortListedTwice(0x20, 1)));

        // A port owned by another node.
        let mut f = file();
        let i = f.ports.iter().position(|p| p.guid == 0x31).unwrap();
        f.ports[i].node_guid = 0x10;
        assert!(matches!(
            load(&f),
            Err(CacheError::WrongOwner { node: 0x30, .. })
        ));

        // The CA's link points at switch port 3, which points nowhere.
        let mut f = file();
        let i = f.ports.iter().position(|p| p.guid == 0x11).unwrap();
        f.ports[i].remote = Some((0x20, 3));
        assert!(matches!(load(&f), Err(CacheError::AsymmetricLink { .. })));
    }

    #[test]
    fn incomplete_caches_load_as_c_does() {
        // A key with no record, a key above NumPorts, a record nobody lists, a remote key
        // naming no port: skipped or unlinked.
        let mut f = file();
        f.nodes[0].ports.push((0x20, 7));
        f.nodes[1].ports.push((0x11, 9));
        f.ports.push(PortRecord {
            guid: 0x11,
            number: 9,
            ext_port: 0,
            base_lid: 0,
            lmc: 0,
            info: [0; 64],
            node_guid: 0x10,
            remote: None,
        });
        let g = load(&f).unwrap();
        assert_eq!(g.nodes[0].ports.len(), 5);
        assert_eq!(g.nodes[1].ports.len(), 1);
        let mut f = file();
        let i = f.ports.iter().position(|p| p.guid == 0x11).unwrap();
        let j = f
            .ports
            .iter()
            .position(|p| p.guid == 0x20 && p.number == 1)
            .unwrap();
        f.ports[i].remote = Some((0x55, 1));
        f.ports[j].remote = None;
        let g = load(&f).unwrap();
        assert_eq!(g.nodes[1].port(1).unwrap().remote, None);
        // Two keys for switch port 4 (the second naming a record of GUID 0x22): the later
        // one is the port.
        let mut f = file();
        let mut other = f
            .ports
            .iter()
            .find(|p| p.guid == 0x20 && p.number == 4)
            .unwrap()
            .clone();
        other.guid = 0x22;
        f.ports.push(other);
        f.nodes[0].ports.push((0x22, 4));
        let g = load(&f).unwrap();
        assert_eq!(g.nodes[0].port(4).unwrap().guid, 0x22);
        assert_eq!(g.nodes[0].ports.len(), 5);
    }

    #[test]
    fn corrupted_bytes_never_panic() {
        let bytes = fabric().to_ibnetdisc_cache().unwrap();
        for i in 0..bytes.len() {
            for v in [0u8, 0xff, bytes[i] ^ 0x80] {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = Fabric::from_ibnetdisc_cache(&b);
            }
        }
    }

    #[test]
    fn caching_needs_a_start_node_and_at_most_255_ports_a_node() {
        let mut f = fabric();
        f.from = None;
        assert_eq!(f.to_ibnetdisc_cache(), Err(CacheError::MissingFrom));
        let mut f = fabric();
        f.nodes[0].num_ports = 255;
        f.nodes[0].ports = (0..=255).map(|p| Port::new(p, 0x20)).collect();
        f.link(PortRef { node: 1, port: 1 }, PortRef { node: 0, port: 1 });
        f.link(PortRef { node: 2, port: 1 }, PortRef { node: 0, port: 2 });
        match f.to_ibnetdisc_cache() {
            Err(CacheError::Invalid(why)) => assert!(why.contains("256 ports"), "{why}"),
            other => panic!("{other:?}"),
        }
        f.nodes[0].ports.pop();
        let g = Fabric::from_ibnetdisc_cache(&f.to_ibnetdisc_cache().unwrap()).unwrap();
        assert_eq!(g.nodes[0].ports.len(), 255);
    }
}
