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
/// returns its exit code (255). With `-d`, C's form names the pid and the function:
/// `<prog>: iberror: [pid <pid>] main: failed: <msg>` (every single-query tool fails from
/// its `main`; here the function is always named `main`).
pub fn ibexit(prog: &str, msg: &str) -> i32 {
    if crate::debug::level() > 0 {
        println!(
            "{prog}: iberror: [pid {}] main: failed: {msg}",
            std::process::id()
        );
    } else {
        println!("{prog}: iberror: failed: {msg}");
    }
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

pub use crate::debug::ibwarn;

/// libibmad's `MAD_DEF_RETRIES`: how many attempts `_do_madrpc` makes in all.
pub const C_ATTEMPTS: u32 = 3;

/// libibmad's `mad_rpc` after `_do_madrpc` (`func`: the C function that reports, `mad_rpc`
/// or `mad_rpc_rmpp`): the response of `done`, or `None` after C's lines (the `ERRS`
/// retries and timeout with `-e`/`-d`, then `_do_madrpc failed; dport (<dest>)`).
pub fn mad_rpc_result(
    func: &str,
    port: &umad::Port,
    dest: &str,
    done: umad::Result<umad::rpc::Completion>,
) -> Option<umad::rpc::Response> {
    let got = done.and_then(|c| {
        if matches!(c.outcome, umad::rpc::Outcome::Timeout) {
            crate::debug::timed_out(
                &c.request.mad,
                c.request.retries.saturating_add(1),
                c.request.timeout.as_millis() as u64,
            );
        }
        c.into_response(port)
    });
    match got {
        Ok(r) => Some(r),
        Err(e) => {
            if !matches!(e, umad::Error::TimedOut { .. }) {
                crate::debug::errs(func, format_args!("{e}"));
            }
            ibwarn(func, &format!("_do_madrpc failed; dport ({dest})"));
            None
        }
    }
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
    /// Parses `text` as `str2drpath`: `None` for an empty string (C's `cnt < 0`). A route
    /// longer than a DR SMP can carry still parses (str2drpath has no limit; C writes the
    /// extra elements past its 64-byte array): it fails when it is sent, as libibmad's
    /// `mad_encode` refuses it ([`path`](Self::path)).
    pub fn parse(text: &str) -> Option<DrRoute> {
        if text.is_empty() {
            return None;
        }
        let mut pieces: Vec<&str> = text.split(',').collect();
        // str2drpath stops when nothing follows a comma: a trailing comma adds no hop
        // ("0,1," is 0,1), while an empty element elsewhere is atoi("") = 0.
        if pieces.len() > 1 && pieces.last() == Some(&"") {
            pieces.pop();
        }
        let elems: Vec<u8> = pieces.iter().map(|e| c_atoi(e) as u8).collect();
        Some(DrRoute {
            elems,
            slid: 0xffff,
            dlid: 0xffff,
        })
    }

    /// The route for an SMP: the hops after element 0; `None` for more than
    /// [`DrPath::MAX_HOPS`] hops.
    pub fn path(&self) -> Option<DrPath> {
        DrPath::from_hops(&self.elems[1..]).ok()
    }

    /// The hop count C's `str2drpath` leaves (`cnt`: the elements after element 0).
    pub fn hop_count(&self) -> usize {
        self.elems.len() - 1
    }

    /// [`path`](Self::path), or libibmad's `mad_encode` warning for a route too long to
    /// encode (`dr path with hop count <n>`; C then sends nothing and the call fails).
    pub fn encodable_path(&self) -> Option<DrPath> {
        let path = self.path();
        if path.is_none() {
            ibwarn(
                "mad_encode",
                &format!("dr path with hop count {}", self.hop_count()),
            );
        }
        path
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

    /// libibmad's `portid2str`: `Lid 3`, or `DR path slid 65535; dlid 65535; 0,1`. A LID
    /// with a route of no hops (`-c` with `<lid> 0`, or no route at all) is just `Lid 3`:
    /// C names the route only when its hop count is not 0.
    pub fn to_c_string(&self) -> String {
        let dr = self
            .dr
            .as_ref()
            .filter(|dr| self.lid == 0 || dr.elems.len() > 1)
            .map(DrRoute::to_c_string);
        match (self.lid, dr) {
            (lid, None) if lid > 0 => format!("Lid {lid}"),
            (lid, Some(dr)) if lid > 0 => format!("Lid {lid} DR path {dr}"),
            (_, dr) => format!(
                "DR path {}",
                dr.unwrap_or_else(|| "slid 0; dlid 0; 0".into())
            ),
        }
    }

    /// The SMP to send `method` of `attr_id` here and where to send it; `None` (after
    /// libibmad's `mad_encode` warning) for a directed route of more than
    /// [`DrPath::MAX_HOPS`] hops.
    pub fn smp(
        &self,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        m_key: u64,
    ) -> Option<([u8; ibmad::MAD_SIZE], MadAddr)> {
        let (mut mad, addr) = match &self.dr {
            Some(dr) => {
                let path = dr.encodable_path()?;
                let mut mad = Smp::dr_request(method, attr_id, attr_mod, 0, &path);
                let mut smp = Smp::new_unchecked(&mut mad[..]);
                // libibmad's mad_encode: a DrSLID/DrDLID of 0 goes out as the permissive LID.
                let permissive = |l: u16| if l == 0 { 0xffff } else { l };
                smp.set_dr_slid(permissive(dr.slid));
                smp.set_dr_dlid(permissive(dr.dlid));
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
        Some((mad, addr))
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
    /// The engine's observer prints every SMP's `-d` line as it is sent
    /// ([`crate::debug::attach_pipelined`], for the sweeping tools): [`send`](Self::send)
    /// then prints none of its own.
    pub pipelined: bool,
}

impl SmpPort {
    /// Opens the SMI port the options name (C: `mad_rpc_open_port`); `None` after printing
    /// C's `Failed to open '<ca>' port '<n>'` failure (the exit code is [`exit::FAILURE`]).
    pub fn open(prog: &str, opts: &CommonOpts) -> Option<SmpPort> {
        match opts.open_mad_port(prog) {
            Ok(port) => {
                let rpc = Rpc::new(Arc::new(port));
                crate::debug::attach(&rpc);
                Some(SmpPort {
                    rpc,
                    opts: opts.clone(),
                    pipelined: false,
                })
            }
            Err(_) => {
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
        let route = dest.to_c_string();
        let func = if method == Method::Set {
            "smp_set_status_via"
        } else {
            "smp_query_status_via"
        };
        if !self.pipelined {
            crate::debug::debug(
                func,
                format_args!("attr 0x{attr_id:x} mod 0x{attr_mod:x} route {route}"),
            );
        }
        // A route too long to encode: C's mad_rpc returns at once, nothing sent.
        let (mut mad, addr) = dest.smp(method, attr_id, attr_mod, self.opts.m_key)?;
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
            .retries(C_ATTEMPTS - 1);
        let done = self.rpc.call(req);
        mad_rpc_result("mad_rpc", self.rpc.port(), &route, done).map(|r| r.mad)
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
            crate::debug::errs(
                "mad_rpc",
                format_args!(
                    "MAD completed with error status 0x{status:x}; dport ({})",
                    dest.to_c_string()
                ),
            );
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
            DestType::DrPath => {
                crate::debug::debug("str2drpath", format_args!("DR str: {text}"));
                DrRoute::parse(text).map(|dr| Dest {
                    lid: 0,
                    dr: Some(dr),
                })
            }
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
        let answer = match self
            .sm_lid()
            .or(u16::try_from(local.sm_lid).ok().filter(|&l| l > 0))
        {
            Some(sm) => self.path_record_from(sm, &template, mask),
            None => {
                // libibmad's sa_rpc_call: no SM LID to send to (a zeroed portid).
                crate::debug::debug(
                    "sa_rpc_call",
                    format_args!(
                        "attr 0x{:x} mod 0x0 route DR path slid 0; dlid 0; 0",
                        ibmad::sa::attr_id::PATH_RECORD
                    ),
                );
                ibwarn("sa_rpc_call", "only lid routes are supported");
                Err(())
            }
        };
        match answer {
            Ok(pr) => Some(pr),
            Err(()) => {
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

    /// An SA Get of the PathRecord matching `template` from the SA at `sm_lid`, as
    /// libibmad's `sa_rpc_call` and `mad_rpc_rmpp` (their `-d` lines, their failures).
    fn path_record_from(
        &self,
        sm_lid: u16,
        template: &PathRecord,
        mask: u64,
    ) -> Result<PathRecord, ()> {
        let route = Dest::lid(sm_lid).to_c_string();
        crate::debug::debug(
            "sa_rpc_call",
            format_args!(
                "attr 0x{:x} mod 0x0 route {route}",
                ibmad::sa::attr_id::PATH_RECORD
            ),
        );
        let mad = ibmad::sa::SaMad::get_request(template, mask, 0);
        // C prints the address of its receive buffer.
        crate::debug::debug(
            "mad_rpc_rmpp",
            format_args!("rmpp (nil) data {:p}", mad.as_ptr()),
        );
        let req = self
            .rpc
            .request(mad, MadAddr::gsi(sm_lid))
            .timeout(self.timeout())
            .retries(C_ATTEMPTS - 1);
        let r =
            mad_rpc_result("mad_rpc_rmpp", self.rpc.port(), &route, self.rpc.call(req)).ok_or(())?;
        let bad = |reason: String| {
            crate::debug::errs("ib_path_query_via", format_args!("{reason}"));
        };
        let sa = ibmad::sa::SaMad::new_checked(&r.mad[..]).map_err(|e| bad(e.to_string()))?;
        let status = sa.status().raw();
        if status != 0 {
            crate::debug::errs(
                "mad_rpc_rmpp",
                format_args!("MAD completed with error status 0x{status:x}; dport ({route})"),
            );
            return Err(());
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
        assert_eq!(DrRoute::parse("0,1,").unwrap().elems, vec![0, 1]);
        assert_eq!(DrRoute::parse("0,1,,").unwrap().elems, vec![0, 1, 0]);
        assert_eq!(DrRoute::parse(",1").unwrap().elems, vec![0, 1]);
        assert_eq!(DrRoute::parse(",").unwrap().elems, vec![0]);
        // Longer than an SMP carries: parses (as str2drpath), but has no SMP path.
        let long = DrRoute::parse(&vec!["1"; 80].join(",")).unwrap();
        assert_eq!(long.hop_count(), 79);
        assert!(long.path().is_none());
        let max = DrRoute::parse(&vec!["1"; DrPath::MAX_HOPS + 1].join(",")).unwrap();
        assert_eq!(max.path().map(|p| p.hop_count()), Some(63));
        let d = Dest {
            lid: 0,
            dr: DrRoute::parse("0"),
        };
        assert_eq!(d.to_c_string(), "DR path slid 65535; dlid 65535; 0");
        assert_eq!(Dest::lid(3).to_c_string(), "Lid 3");
    }
}
