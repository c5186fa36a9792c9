//! Typed one-liners over [`Rpc`]: SMP attributes by LID or directed route, PerfMgt counters,
//! SA records (whole tables, through RMPP). Each returns the parsed `ibmad` Repr, or an
//! [`Error`] that says what was asked of whom: [`Error::TimedOut`], [`Error::MadStatus`],
//! [`Error::BadResponse`].

use std::fmt;

use ibmad::attr::Attribute;
use ibmad::sa::{SaMad, SaRecord, SaStatus};
use ibmad::{DrPath, Method, PortCounters, PortCountersExt, Smp};

use super::{Request, Response, Rpc};
use crate::addr::MadAddr;
use crate::{Error, Result};

/// Where an SMP goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// LID routed (class 0x01), to this LID.
    Lid(u16),
    /// Directed route (class 0x81) along this path from the local port.
    Dr(DrPath),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Lid(lid) => write!(f, "LID {lid}"),
            Target::Dr(path) => write!(f, "DR path {path}"),
        }
    }
}

impl Target {
    /// The SMP asking `method` of `attr_id` at this target, and where to send it.
    fn smp(&self, method: Method, attr_id: u16, attr_mod: u32) -> ([u8; ibmad::MAD_SIZE], MadAddr) {
        match self {
            Target::Lid(lid) => (
                Smp::lid_request(method, attr_id, attr_mod, 0),
                MadAddr::smi(*lid),
            ),
            Target::Dr(path) => (
                Smp::dr_request(method, attr_id, attr_mod, 0, path),
                MadAddr::directed_route(),
            ),
        }
    }
}

impl Rpc {
    /// The response to `request`, or the typed error of one that got none.
    fn answer(&self, request: Request) -> Result<(String, Response)> {
        let what = request.describe();
        let done = self.call(request)?;
        Ok((what, done.into_response(self.port())?))
    }

    fn bad(&self, what: &str, reason: impl fmt::Display) -> Error {
        Error::BadResponse {
            ca: self.port().ca_name().to_string(),
            port: self.port().port_num(),
            what: what.to_string(),
            reason: reason.to_string(),
        }
    }

    fn status_error(&self, what: &str, status: u16, text: &str) -> Error {
        Error::MadStatus {
            ca: self.port().ca_name().to_string(),
            port: self.port().port_num(),
            what: what.to_string(),
            status,
            text: text.to_string(),
        }
    }

    /// The data area of a successful SMP response.
    fn smp_data(&self, what: &str, r: &Response) -> Result<Vec<u8>> {
        let smp = Smp::new_checked(&r.mad[..]).map_err(|e| self.bad(what, e))?;
        // The D bit of a directed-route SMP is not part of the status.
        let status = smp.status().raw() & !0x8000;
        if status != 0 {
            return Err(self.status_error(what, status, ibmad::common_mad_status_str(status)));
        }
        Ok(smp.data().to_vec())
    }

    /// Gets an SMP attribute, e.g. `rpc.smp_get::<NodeInfo>(&Target::Dr(path), 0)`.
    #[doc(alias = "smp_query")]
    pub fn smp_get<A: Attribute>(&self, target: &Target, attr_mod: u32) -> Result<A> {
        let (mad, addr) = target.smp(Method::Get, A::ID, attr_mod);
        let (what, r) = self.answer(self.request(mad, addr))?;
        let data = self.smp_data(&what, &r)?;
        A::parse(&data).map_err(|e| self.bad(&what, e))
    }

    /// Sets an SMP attribute and returns what the destination answered with (the value now
    /// in effect).
    #[doc(alias = "smp_set_via")]
    pub fn smp_set<A: Attribute>(&self, target: &Target, attr_mod: u32, value: &A) -> Result<A> {
        let (mut mad, addr) = target.smp(Method::Set, A::ID, attr_mod);
        {
            let mut smp = Smp::new_unchecked(&mut mad[..]);
            value.emit(smp.data_mut());
        }
        let (what, r) = self.answer(self.request(mad, addr))?;
        let data = self.smp_data(&what, &r)?;
        A::parse(&data).map_err(|e| self.bad(&what, e))
    }

    /// The PerfMgt data area of a successful response.
    fn perf_data(&self, what: &str, r: &Response) -> Result<Vec<u8>> {
        let m = ibmad::Mad::new_checked(&r.mad[..]).map_err(|e| self.bad(what, e))?;
        let status = m.status().raw();
        if status != 0 {
            return Err(self.status_error(what, status, ibmad::common_mad_status_str(status)));
        }
        Ok(ibmad::perf::data(&r.mad)
            .map_err(|e| self.bad(what, e))?
            .to_vec())
    }

    /// PortCounters of `port` (0xff: all ports, where supported) at `lid`, as `perfquery`.
    #[doc(alias = "pma_query")]
    pub fn port_counters(&self, lid: u16, port: u8) -> Result<PortCounters> {
        let mad = ibmad::perf::port_counters_get(port, 0);
        let (what, r) = self.answer(self.request(mad, MadAddr::gsi(lid)))?;
        let data = self.perf_data(&what, &r)?;
        PortCounters::parse(&data).map_err(|e| self.bad(&what, e))
    }

    /// PortCountersExtended (64-bit counters) of `port` at `lid`, as `perfquery -x`.
    pub fn port_counters_ext(&self, lid: u16, port: u8) -> Result<PortCountersExt> {
        let mad = ibmad::perf::port_counters_ext_get(port, 0);
        let (what, r) = self.answer(self.request(mad, MadAddr::gsi(lid)))?;
        let data = self.perf_data(&what, &r)?;
        PortCountersExt::parse(&data).map_err(|e| self.bad(&what, e))
    }

    /// Resets the PortCounters chosen by `counter_select` (0xffff: all) of `port` at `lid`,
    /// as `perfquery -R`.
    pub fn reset_port_counters(&self, lid: u16, port: u8, counter_select: u16) -> Result<()> {
        let mad = ibmad::perf::port_counters_reset(port, counter_select, 0);
        let (what, r) = self.answer(self.request(mad, MadAddr::gsi(lid)))?;
        self.perf_data(&what, &r).map(drop)
    }

    /// Where the SA is: the port's SM LID and SL, on QP1 with the well-known Q_Key.
    pub fn sa_addr(&self) -> Result<MadAddr> {
        let ca = self.port().ca()?;
        let p = ca.port(self.port().port_num()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} has no port {}",
                self.port().ca_name(),
                self.port().port_num()
            ))
        })?;
        if p.sm_lid == 0 {
            return Err(Error::InvalidArgument(format!(
                "{} port {}: no SM LID known (no subnet manager has configured this port): \
                 start an SM first",
                self.port().ca_name(),
                self.port().port_num()
            )));
        }
        let mut addr = MadAddr::gsi(p.sm_lid as u16);
        addr.sl = p.sm_sl as u8;
        Ok(addr)
    }

    /// Every record matching `template` on the fields in `comp_mask` (SA GetTable, the
    /// answer whole through RMPP). No match is an empty table.
    #[doc(alias = "sa_query")]
    pub fn sa_get_table<R: SaRecord>(&self, template: &R, comp_mask: u64) -> Result<Vec<R>> {
        let mad = SaMad::get_table_request(template, comp_mask, 0);
        let (what, r) = self.answer(self.request(mad, self.sa_addr()?))?;
        let sa = SaMad::new_checked(&r.mad[..]).map_err(|e| self.bad(&what, e))?;
        let status = sa.status().raw();
        if SaStatus::from_status(sa.status()) == SaStatus::NoRecords {
            return Ok(Vec::new());
        }
        if status != 0 {
            return Err(self.status_error(&what, status, ibmad::sa_mad_status_str(status)));
        }
        sa.parse_records::<R>()
            .collect::<ibmad::Result<Vec<R>>>()
            .map_err(|e| self.bad(&what, e))
    }

    /// The one record matching `template` on the fields in `comp_mask` (SA Get).
    pub fn sa_get<R: SaRecord>(&self, template: &R, comp_mask: u64) -> Result<R> {
        let mad = SaMad::get_request(template, comp_mask, 0);
        let (what, r) = self.answer(self.request(mad, self.sa_addr()?))?;
        let sa = SaMad::new_checked(&r.mad[..]).map_err(|e| self.bad(&what, e))?;
        let status = sa.status().raw();
        if status != 0 {
            return Err(self.status_error(&what, status, ibmad::sa_mad_status_str(status)));
        }
        R::parse(sa.data()).map_err(|e| self.bad(&what, e))
    }
}
