//! What the SMP tools (`smpquery`, `sminfo`, `ibaddr`, `smpdump`) share, after
//! infiniband-diags' `resolve_portid_str` and libibmad's `portid2str`/`smp_query_via`:
//! reading a destination argument as C does (a LID, `-D` a directed route, `-G` a port GUID
//! resolved through an SA PathRecord), naming it in output headers, sending one SMP and
//! reporting failures as C's `IBEXIT` does.
//!
//! C's number parsing is lenient (`strtol`/`atoi`: `12x` is 12, `x` is 0) and so is this
//! module's, so that the same arguments resolve to the same destinations and fail with the
//! same messages.

use std::sync::Arc;
use std::time::Duration;

use ibmad::attr::Attribute;
use ibmad::sa::path_record::comp;
use ibmad::sa::PathRecord;
use ibmad::{DrPath, Gid, Method, Smp};
use umad::rpc::Rpc;
use umad::MadAddr;

use crate::common::{CliError, CommonOpts, DestType};
use crate::exit;

/// The subnet prefix libibmad assumes when the port has none (`IB_DEFAULT_SUBN_PREFIX`).
const DEFAULT_SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// Prints `<prog>: iberror: failed: <msg>` on stdout, as infiniband-diags' `IBEXIT`, and
/// returns its exit code (255).
pub fn ibexit(prog: &str, msg: &str) -> i32 {
    println!("{prog}: iberror: failed: {msg}");
    exit::FAILURE
}

/// Reports a common-option error as the C tools do: a run-time failure (`-t 0`, a bad `-y`)
/// as [`ibexit`] on stdout, a usage error as [`CliError::report`].
pub fn report(prog: &str, e: &CliError) -> i32 {
    match e {
        CliError::Failed(m) => ibexit(prog, m),
        CliError::Usage(_) => e.report(prog),
    }
}

/// A warning on stderr in libibmad's `IBWARN` form (`ibwarn: [pid] func: msg`).
pub fn ibwarn(func: &str, msg: &str) {
    eprintln!("ibwarn: [{}] {func}: {msg}", std::process::id());
}

/// C's `strtol(s, NULL, 0)` ([`ibfabric::cnum::strtol`]): leading blanks, a sign, `0x` hex /
/// `0` octal / decimal, as many digits as there are; no digits is 0. Saturates as C does.
pub fn c_strtol(s: &str) -> i64 {
    ibfabric::cnum::strtol(s.as_bytes()).0
}

/// C's `strtoull(s, NULL, 0)` for GUIDs (a leading `-` negates modulo 2^64, as C does).
pub fn c_strtoull(s: &str) -> u64 {
    ibfabric::cnum::strtoull(s.as_bytes()).0
}

/// C's `atoi` ([`ibfabric::cnum::atoi`]): [`c_strtol`] in decimal only.
pub fn c_atoi(s: &str) -> i64 {
    ibfabric::cnum::atoi(s.as_bytes())
}

/// A directed route as libibmad's `str2drpath` reads it: the elements as given (element 0
/// is the local port, normally 0), each `atoi`'d and truncated to a byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrRoute {
    /// `p[0..=cnt]`.
    pub elems: Vec<u8>,
    /// DrSLID (0xffff unless combined routing).
    pub slid: u16,
    /// DrDLID (0xffff unless combined routing).
    pub dlid: u16,
}

impl DrRoute {
    /// Parses `text` as `str2drpath`: `None` for an empty string (C's `cnt < 0`) or a route
    /// longer than a DR SMP can carry.
    pub fn parse(text: &str) -> Option<DrRoute> {
        if text.is_empty() {
            return None;
        }
        let elems: Vec<u8> = text.split(',').map(|e| c_atoi(e) as u8).collect();
        if elems.len() > DrPath::MAX_HOPS + 1 {
            return None;
        }
        Some(DrRoute {
            elems,
            slid: 0xffff,
            dlid: 0xffff,
        })
    }

    /// The route for an SMP: the hops after element 0.
    pub fn path(&self) -> DrPath {
        DrPath::from_hops(&self.elems[1..]).expect("length checked in parse")
    }

    /// libibmad's `drpath2str`: `slid 65535; dlid 65535; 0,1,3`.
    pub fn to_c_string(&self) -> String {
        let hops: Vec<String> = self.elems.iter().map(u8::to_string).collect();
        format!("slid {}; dlid {}; {}", self.slid, self.dlid, hops.join(","))
    }
}

/// A resolved destination (C's `ib_portid_t`, the parts these tools use).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dest {
    /// The LID (0 for a directed route).
    pub lid: u16,
    /// The directed route, when addressed by one.
    pub dr: Option<DrRoute>,
}

impl Dest {
    /// A LID destination.
    pub fn lid(lid: u16) -> Dest {
        Dest { lid, dr: None }
    }

    /// libibmad's `portid2str`: `Lid 3`, or `DR path slid 65535; dlid 65535; 0,1`.
    pub fn to_c_string(&self) -> String {
        let dr = self.dr.as_ref().map(DrRoute::to_c_string);
        match (self.lid, dr) {
            (lid, None) if lid > 0 => format!("Lid {lid}"),
            (lid, Some(dr)) if lid > 0 => format!("Lid {lid} DR path {dr}"),
            (_, dr) => format!(
                "DR path {}",
                dr.unwrap_or_else(|| "slid 0; dlid 0; 0".into())
            ),
        }
    }

    /// The SMP to send `method` of `attr_id` here and where to send it.
    pub fn smp(
        &self,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        m_key: u64,
    ) -> ([u8; ibmad::MAD_SIZE], MadAddr) {
        let (mut mad, addr) = match &self.dr {
            Some(dr) => {
                let mut mad = Smp::dr_request(method, attr_id, attr_mod, 0, &dr.path());
                let mut smp = Smp::new_unchecked(&mut mad[..]);
                smp.set_dr_slid(dr.slid);
                smp.set_dr_dlid(dr.dlid);
                // Combined routing: LID routed to the LID, directed from there.
                let addr = if self.lid > 0 {
                    MadAddr::smi(self.lid)
                } else {
                    MadAddr::directed_route()
                };
                (mad, addr)
            }
            // LID 0 and no route (an unconfigured SM LID): libibmad goes directed to the
            // local port.
            None if self.lid == 0 => (
                Smp::dr_request(method, attr_id, attr_mod, 0, &DrPath::local()),
                MadAddr::directed_route(),
            ),
            None => (
                Smp::lid_request(method, attr_id, attr_mod, 0),
                MadAddr::smi(self.lid),
            ),
        };
        Smp::new_unchecked(&mut mad[..]).set_m_key(m_key);
        (mad, addr)
    }
}

/// Whether `lid` is a unicast LID (`IB_LID_VALID`).
pub fn lid_valid(lid: i64) -> bool {
    (1..=0xbfff).contains(&lid)
}

/// The port, the engine over it and the options an SMP tool runs with.
pub struct SmpPort {
    /// The engine (its port: [`Rpc::port`]).
    pub rpc: Rpc,
    /// The common options.
    pub opts: CommonOpts,
}

impl SmpPort {
    /// Opens the SMI port the options name (C: `mad_rpc_open_port`); `None` after printing
    /// C's `Failed to open '<ca>' port '<n>'` failure (the exit code is [`exit::FAILURE`]).
    pub fn open(prog: &str, opts: &CommonOpts) -> Option<SmpPort> {
        match opts.open_smi_port() {
            Ok(port) => Some(SmpPort {
                rpc: Rpc::new(Arc::new(port)),
                opts: opts.clone(),
            }),
            Err(e) => {
                eprintln!("{prog}: {e}");
                let ca = opts.ca.as_deref().unwrap_or("(null)");
                ibexit(prog, &format!("Failed to open '{ca}' port '{}'", opts.port));
                None
            }
        }
    }

    /// The timeout of one attempt: `-t`, or libibmad's default 1000 ms.
    fn timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.opts.timeout_ms.unwrap_or(1000)))
    }

    /// One SMP `method` of `attr_id` to `dest` (with `data` as the attribute data of a Set)
    /// and its whole response MAD, whatever its status; `None` if none came (a warning on
    /// stderr, as libibmad's `_do_madrpc failed`).
    pub fn send(
        &self,
        dest: &Dest,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        data: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        let (mut mad, addr) = dest.smp(method, attr_id, attr_mod, self.opts.m_key);
        if let Some(d) = data {
            let mut smp = Smp::new_unchecked(&mut mad[..]);
            let area = smp.data_mut();
            let n = d.len().min(area.len());
            area[..n].copy_from_slice(&d[..n]);
        }
        let req = self
            .rpc
            .request(mad, addr)
            .timeout(self.timeout())
            .retries(umad::rpc::DEFAULT_RETRIES);
        let got = self
            .rpc
            .call(req)
            .and_then(|c| c.into_response(self.rpc.port()));
        match got {
            Ok(r) => Some(r.mad),
            Err(e) => {
                ibwarn(
                    "mad_rpc",
                    &format!("_do_madrpc failed; dport ({})", dest.to_c_string()),
                );
                if self.opts.errors {
                    ibwarn("mad_rpc", &e.to_string());
                }
                None
            }
        }
    }

    /// `smp_query_via` / `smp_set_via`: the attribute data (64 bytes) of a successful
    /// response, `None` if none came or its status is an error (reported on stderr with
    /// `-e`, as libibmad's `ERRS`).
    pub fn query(
        &self,
        dest: &Dest,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        data: Option<&[u8]>,
    ) -> Option<Vec<u8>> {
        let mad = self.send(dest, method, attr_id, attr_mod, data)?;
        let smp = Smp::new_checked(&mad[..]).ok()?;
        let status = smp.status().raw() & 0x7fff;
        if status != 0 {
            if self.opts.errors {
                ibwarn(
                    "mad_rpc",
                    &format!(
                        "MAD completed with error status 0x{status:x}; dport ({})",
                        dest.to_c_string()
                    ),
                );
            }
            return None;
        }
        Some(smp.data().to_vec())
    }

    /// [`query`](Self::query) with `Get`.
    pub fn get(&self, dest: &Dest, attr_id: u16, attr_mod: u32) -> Option<Vec<u8>> {
        self.query(dest, Method::Get, attr_id, attr_mod, None)
    }

    /// [`get`](Self::get) of attribute `A`, parsed (`None` if either fails).
    pub fn get_attr<A: Attribute>(&self, dest: &Dest, attr_mod: u32) -> Option<A> {
        A::parse(&self.get(dest, A::ID, attr_mod)?).ok()
    }

    /// The local port's attributes (C reads them through libibumad: sysfs or ibsim).
    pub fn local(&self) -> Option<umad::device::PortAttrs> {
        let port = self.rpc.port();
        port.ca().ok()?.port(port.port_num()).cloned()
    }

    /// `resolve_portid_str`: the destination `text` names as `dest_type` says, or `None`
    /// (C then fails with `can't resolve destination port <text>`).
    pub fn resolve(&self, text: &str, dest_type: DestType) -> Option<Dest> {
        match dest_type {
            DestType::Lid => {
                let lid = c_strtol(text);
                lid_valid(lid).then(|| Dest::lid(lid as u16))
            }
            DestType::DrPath => DrRoute::parse(text).map(|dr| Dest {
                lid: 0,
                dr: Some(dr),
            }),
            DestType::Guid => {
                let guid = c_strtoull(text);
                if guid == 0 {
                    return None;
                }
                self.resolve_guid(guid).map(Dest::lid)
            }
        }
    }

    /// `resolve_guid`: the LID of port GUID `guid`, from an SA PathRecord from this port.
    pub fn resolve_guid(&self, guid: u64) -> Option<u16> {
        self.resolve_guid_path(guid).map(|pr| pr.dlid)
    }

    /// `ib_resolve_guid_via`: the SA's PathRecord from this port to port GUID `guid` (its
    /// DLID and SL make libibmad's portid); `None` after C's warnings.
    pub fn resolve_guid_path(&self, guid: u64) -> Option<PathRecord> {
        let local = self.local()?;
        let prefix = if local.gid_prefix != 0 {
            local.gid_prefix
        } else {
            DEFAULT_SUBNET_PREFIX
        };
        let template = PathRecord {
            sgid: Gid::new(local.gid_prefix, local.port_guid),
            dgid: Gid::new(prefix, guid),
            ..PathRecord::default()
        };
        let mask = comp::DGID | comp::SGID;
        let answer = match self.sm_lid() {
            Some(sm) => self.path_record_from(sm, &template, mask),
            None => self.rpc.sa_get(&template, mask),
        };
        match answer {
            Ok(pr) => Some(pr),
            Err(e) => {
                if self.sm_lid().is_none() && local.sm_lid == 0 {
                    // libibmad's sa_rpc_call: no SM LID to send to.
                    ibwarn("sa_rpc_call", "only lid routes are supported");
                } else if matches!(e, umad::Error::TimedOut { .. }) {
                    // libibmad's mad_rpc_rmpp: no answer from the SA.
                    let sa = self.sm_lid().unwrap_or(local.sm_lid as u16);
                    ibwarn(
                        "mad_rpc_rmpp",
                        &format!("_do_madrpc failed; dport (Lid {sa})"),
                    );
                }
                if self.opts.errors {
                    ibwarn("ib_path_query_via", &e.to_string());
                }
                ibwarn("ib_path_query_via", "sa call path_query failed");
                None
            }
        }
    }
}

impl SmpPort {
    /// `-s <lid>`: the SM (SA) to ask instead of the one the port knows.
    fn sm_lid(&self) -> Option<u16> {
        self.opts
            .sm_port
            .as_deref()
            .map(c_strtol)
            .filter(|&l| lid_valid(l))
            .map(|l| l as u16)
    }

    /// An SA Get of the PathRecord matching `template` from the SA at `sm_lid`.
    fn path_record_from(
        &self,
        sm_lid: u16,
        template: &PathRecord,
        mask: u64,
    ) -> umad::Result<PathRecord> {
        let mad = ibmad::sa::SaMad::get_request(template, mask, 0);
        let req = self
            .rpc
            .request(mad, MadAddr::gsi(sm_lid))
            .timeout(self.timeout());
        let r = self.rpc.call(req)?.into_response(self.rpc.port())?;
        let bad = |reason: String| umad::Error::BadResponse {
            ca: self.rpc.port().ca_name().to_string(),
            port: self.rpc.port().port_num(),
            what: format!("SA PathRecord from LID {sm_lid}"),
            reason,
        };
        let sa = ibmad::sa::SaMad::new_checked(&r.mad[..]).map_err(|e| bad(e.to_string()))?;
        let status = sa.status().raw();
        if status != 0 {
            return Err(bad(format!("MAD status 0x{status:04x}")));
        }
        PathRecord::parse(sa.data()).map_err(|e| bad(e.to_string()))
    }
}

/// `-s <lid>` as C checks it while reading the options: a valid LID, else C's
/// `cannot resolve SM destination port` failure (printed; `Some(exit code)`).
pub fn check_sm_port(prog: &str, opts: &CommonOpts) -> Option<i32> {
    let s = opts.sm_port.as_deref()?;
    (!lid_valid(c_strtol(s)))
        .then(|| ibexit(prog, &format!("cannot resolve SM destination port {s}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers() {
        assert_eq!(c_strtol("12"), 12);
        assert_eq!(c_strtol("12x"), 12);
        assert_eq!(c_strtol("x"), 0);
        assert_eq!(c_strtol("0x1f"), 31);
        assert_eq!(c_strtol("0x"), 0);
        assert_eq!(c_strtol("010"), 8);
        assert_eq!(c_strtol(" -3"), -3);
        assert_eq!(c_strtol("99999999999999999999999"), i64::MAX);
        assert_eq!(c_strtoull("0x2C9000100D051"), 0x2C9000100D051);
        assert_eq!(c_strtoull("-1"), u64::MAX);
        assert_eq!(c_atoi("0x10"), 0);
        assert_eq!(c_atoi("7,"), 7);
    }

    #[test]
    fn routes() {
        let r = DrRoute::parse("0,1,x,300").unwrap();
        assert_eq!(r.elems, vec![0, 1, 0, 44]);
        assert_eq!(r.to_c_string(), "slid 65535; dlid 65535; 0,1,0,44");
        assert!(DrRoute::parse("").is_none());
        let long = vec!["1"; 80].join(",");
        assert!(DrRoute::parse(&long).is_none());
        let d = Dest {
            lid: 0,
            dr: DrRoute::parse("0"),
        };
        assert_eq!(d.to_c_string(), "DR path slid 65535; dlid 65535; 0");
        assert_eq!(Dest::lid(3).to_c_string(), "Lid 3");
    }
}
