//! Subnet management packets (IBA Vol 1, 14.2.1): LID-routed (class 0x01)
//! and directed-route (class 0x81) SMPs, always 256 bytes.
//!
//! ```text
//!  bytes    LID routed (0x01)        directed route (0x81)
//!    0..24  common MAD header        common MAD header, except:
//!                                      4..6  D bit (15) + 15-bit status
//!                                      6     hop pointer
//!                                      7     hop count
//!   24..32  M_Key                    M_Key
//!   32..34  reserved                 DrSLID
//!   34..36  reserved                 DrDLID
//!   36..64  reserved                 reserved
//!   64..128 SMP data (64 bytes)      SMP data (64 bytes)
//!  128..192 reserved                 initial path
//!  192..256 reserved                 return path
//! ```
//!
//! [`DrPath`] is the "0,1,3" text form infiniband-diags uses for directed
//! routes. [`Smp::dr_request`] and [`Smp::lid_request`] build ready-to-send
//! requests the way libibmad does (DrSLID = DrDLID = 0xffff, hop pointer 0,
//! M_Key 0).
//!
//! For the other side of the wire (an SMA, a switch, a simulated fabric),
//! [`Smp::advance_hop_pointer`] applies the directed-route rules of IBA
//! 14.2.2.2 at one node and returns a [`DrAction`];
//! [`Smp::is_at_destination`] tells whether a request is for this node's
//! SMA; [`Smp::make_response`] turns a request into its response.

use core::fmt;
use core::str::FromStr;

use crate::bytes;
use crate::header::{Mad, MadHeader, Method, MgmtClass, Status, MAD_SIZE};
use crate::{Error, Result};

mod field {
    use crate::bytes::Field;

    pub(super) const HOP_POINTER: usize = 6;
    pub(super) const HOP_COUNT: usize = 7;
    pub(super) const M_KEY: Field = 24..32;
    pub(super) const DR_SLID: Field = 32..34;
    pub(super) const DR_DLID: Field = 34..36;
    pub(super) const DATA: Field = 64..128;
    pub(super) const INITIAL_PATH: Field = 128..192;
    pub(super) const RETURN_PATH: Field = 192..256;
}

/// Size of an SMP in bytes (same as [`MAD_SIZE`]).
pub const SMP_SIZE: usize = field::RETURN_PATH.end;

/// Size of the SMP data area (the attribute) in bytes.
pub const SMP_DATA_LEN: usize = field::DATA.end - field::DATA.start;

/// Byte offset of the SMP data area within the MAD.
pub const SMP_DATA_OFFSET: usize = field::DATA.start;

/// Class version of subnet management (both 0x01 and 0x81).
pub const SMP_CLASS_VERSION: u8 = 1;

/// The permissive LID, used as DrSLID/DrDLID for purely directed routes.
pub const PERMISSIVE_LID: u16 = 0xffff;

const _: () = assert!(SMP_SIZE == MAD_SIZE);

/// A view of a buffer holding an SMP (LID-routed or directed-route).
///
/// The directed-route accessors (hop pointer/count, DrSLID/DrDLID, paths)
/// read those bytes regardless of the class; they are reserved in LID-routed
/// SMPs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Smp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Smp<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Smp<T> {
        Smp { buffer }
    }

    /// Wraps a buffer and checks that it holds a whole SMP.
    pub fn new_checked(buffer: T) -> Result<Smp<T>> {
        let smp = Self::new_unchecked(buffer);
        smp.check_len()?;
        Ok(smp)
    }

    /// Checks that the buffer holds at least [`SMP_SIZE`] bytes. After
    /// `Ok(())` no accessor or setter panics.
    pub fn check_len(&self) -> Result<()> {
        bytes::check_len(self.buffer.as_ref(), SMP_SIZE)
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header as a view (method, TID, attribute, …).
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }

    /// The management class (0x01 or 0x81 for a real SMP).
    pub fn mgmt_class(&self) -> MgmtClass {
        self.header().mgmt_class()
    }

    /// Whether the class is 0x81 (directed route).
    pub fn is_directed_route(&self) -> bool {
        self.mgmt_class() == MgmtClass::SubnDirectedRoute
    }

    /// The method (response bit included).
    pub fn method(&self) -> Method {
        self.header().method()
    }

    /// The transaction ID.
    pub fn tid(&self) -> u64 {
        self.header().tid()
    }

    /// The attribute ID.
    pub fn attr_id(&self) -> u16 {
        self.header().attr_id()
    }

    /// The attribute modifier.
    pub fn attr_mod(&self) -> u32 {
        self.header().attr_mod()
    }

    /// The full status word, D bit included for DR SMPs.
    pub fn status(&self) -> Status {
        self.header().status()
    }

    /// The D bit (status bit 15): set when the DR SMP travels back from the
    /// target.
    pub fn direction(&self) -> bool {
        self.status().direction()
    }

    /// The hop pointer (byte 6) of a DR SMP.
    pub fn hop_pointer(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_POINTER]
    }

    /// The hop count (byte 7) of a DR SMP.
    pub fn hop_count(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_COUNT]
    }

    /// The M_Key (bytes 24–31).
    pub fn m_key(&self) -> u64 {
        bytes::get_u64(&self.buffer.as_ref()[field::M_KEY])
    }

    /// DrSLID (bytes 32–33) of a DR SMP.
    pub fn dr_slid(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::DR_SLID])
    }

    /// DrDLID (bytes 34–35) of a DR SMP.
    pub fn dr_dlid(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::DR_DLID])
    }

    /// The directed route of a DR SMP, read from the hop count and the
    /// initial path. Fails with [`Error::BadHopCount`] if the hop count is
    /// above [`DrPath::MAX_HOPS`].
    pub fn dr_path(&self) -> Result<DrPath> {
        let count = self.hop_count();
        let hops = usize::from(count);
        if hops > DrPath::MAX_HOPS {
            return Err(Error::BadHopCount(count));
        }
        let path = &self.buffer.as_ref()[field::INITIAL_PATH];
        DrPath::from_hops(&path[1..=hops])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Smp<&'a T> {
    /// The 64-byte SMP data area (the attribute), borrowed from the buffer.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// The 64-byte initial path of a DR SMP (byte 0 is unused).
    pub fn initial_path(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::INITIAL_PATH]
    }

    /// The 64-byte return path of a DR SMP (byte 0 is unused).
    pub fn return_path(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::RETURN_PATH]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    /// The common MAD header as a mutable view.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }

    /// Sets the full status word (D bit included).
    pub fn set_status(&mut self, value: Status) {
        self.header_mut().set_status(value);
    }

    /// Sets or clears the D bit, keeping the rest of the status.
    pub fn set_direction(&mut self, returning: bool) {
        let s = self.status().without_direction().0;
        let d = if returning { Status::DIRECTION } else { 0 };
        self.set_status(Status(s | d));
    }

    /// Sets the hop pointer.
    pub fn set_hop_pointer(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_POINTER] = value;
    }

    /// Sets the hop count.
    pub fn set_hop_count(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_COUNT] = value;
    }

    /// Sets the M_Key.
    pub fn set_m_key(&mut self, value: u64) {
        bytes::set_u64(&mut self.buffer.as_mut()[field::M_KEY], value);
    }

    /// Sets DrSLID.
    pub fn set_dr_slid(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::DR_SLID], value);
    }

    /// Sets DrDLID.
    pub fn set_dr_dlid(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::DR_DLID], value);
    }

    /// Writes `path` as hop count and initial path (all 64 bytes).
    pub fn set_dr_path(&mut self, path: &DrPath) {
        self.set_hop_count(path.hop_count());
        self.initial_path_mut()
            .copy_from_slice(&path.initial_path());
    }

    /// The SMP data area, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// The initial path, mutably.
    pub fn initial_path_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::INITIAL_PATH]
    }

    /// The return path, mutably.
    pub fn return_path_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::RETURN_PATH]
    }
}

/// What a node does with a directed-route SMP after
/// [`Smp::advance_hop_pointer`] processed its hop pointer (IBA Vol 1,
/// 14.2.2.2, compliance statements C14-9 and C14-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DrAction {
    /// Send the SMP out of this port. The caller checks that the port
    /// exists (the kernel discards SMPs naming a port above the node's port
    /// count).
    Forward(u8),
    /// Hand the SMP to this node's SMA (outgoing, D = 0) or to the SM that
    /// sent the request (returning, D = 1).
    Local,
    /// The directed part of the route ends at this switch: send the SMP on
    /// by LID routing to this LID (DrDLID for a request, DrSLID for a
    /// response).
    LidRoute(u16),
    /// The SMP begins with a LID-routed part whose LID the SMP does not
    /// carry: a request with a non-permissive DrSLID leaving its originator
    /// (send it to the first switch of the directed part), or the response
    /// to a request that reached this node by LID routing (send it back to
    /// that request's source LID). The hop pointer is unchanged.
    LeadingLidRoute,
    /// Drop the SMP: a hop pointer that fits no rule, a hop count above
    /// [`DrPath::MAX_HOPS`], a node that is not a switch asked to forward or
    /// LID-route, or an SMP that is not directed-route (class 0x81).
    Discard,
}

impl<T: AsRef<[u8]>> Smp<T> {
    /// Whether this directed-route SMP is a request (D = 0) at the node its
    /// route leads to, i.e. for this node's SMA:
    ///
    /// * on arrival, before [`Smp::advance_hop_pointer`]: hop pointer ==
    ///   hop count and DrDLID is the permissive LID (no LID-routed part
    ///   follows the directed part);
    /// * after it (the SMA's view, IBA C14-9:3/4): hop pointer ==
    ///   hop count + 1, which is also how a request arrives over a
    ///   LID-routed last part.
    ///
    /// At a switch that ends the directed part and LID-routes the request
    /// on, the second condition also holds once `advance_hop_pointer`
    /// returned [`DrAction::LidRoute`]; that return value is what decides.
    pub fn is_at_destination(&self) -> bool {
        if !self.is_directed_route() || self.direction() {
            return false;
        }
        let (ptr, cnt) = (u16::from(self.hop_pointer()), u16::from(self.hop_count()));
        (ptr == cnt && self.dr_dlid() == PERMISSIVE_LID) || ptr == cnt + 1
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    /// Processes the hop pointer of a directed-route SMP at one node and
    /// says where the SMP goes next, per IBA Vol 1, 14.2.2.2 (receive and
    /// send processing combined, as one step per node).
    ///
    /// `arrived_on` is the port the SMP was received on, or `None` where it
    /// starts: at the SM sending a request, or at the SMA sending the
    /// response built by [`Smp::make_response`]. `is_switch` says whether
    /// this node is a switch (only switches forward).
    ///
    /// Outgoing (D = 0), with hop pointer `p` and hop count `n`:
    ///
    /// 1. `n > 0`, `p == 0` (C14-9:1): at the originator (if DrSLID is not
    ///    permissive, [`DrAction::LeadingLidRoute`] and nothing changes),
    ///    or at the first switch reached by LID routing: `p = 1`, forward
    ///    out of `InitialPath[1]`.
    /// 2. `0 < p < n` (C14-9:2, switches only): `ReturnPath[p] =
    ///    arrived_on`, `p += 1`, forward out of `InitialPath[p]`.
    /// 3. `p == n` (C14-9:3): end of the directed part. If `n > 0`,
    ///    `ReturnPath[p] = arrived_on`; `p += 1`; then [`DrAction::Local`]
    ///    if DrDLID is permissive, else (switches only)
    ///    [`DrAction::LidRoute`]`(DrDLID)`. With `n == 0` this is the
    ///    loopback to the local SMA.
    /// 4. `p == n + 1` (C14-9:4): arrived over the LID-routed last part:
    ///    [`DrAction::Local`].
    ///
    /// Returning (D = 1):
    ///
    /// 1. `n > 0`, `p == n + 1` (C14-13:1): at the responder (if DrDLID is
    ///    not permissive, [`DrAction::LeadingLidRoute`] and nothing
    ///    changes), or at the switch that ended the directed part, reached
    ///    by LID routing: `p -= 1`, forward out of `ReturnPath[p]`.
    /// 2. `2 <= p <= n` (C14-13:2, switches only): `p -= 1`, forward out of
    ///    `ReturnPath[p]`.
    /// 3. `p == 1` (C14-13:3): `p = 0`; [`DrAction::Local`] (the SM) if
    ///    DrSLID is permissive, else (switches only)
    ///    [`DrAction::LidRoute`]`(DrSLID)`.
    /// 4. `p == 0` (C14-13:4): arrived over the LID-routed last part:
    ///    [`DrAction::Local`].
    ///
    /// Anything else (C14-9:5, C14-13:5) is [`DrAction::Discard`], and the
    /// SMP is not modified. A response's hop pointer ends at 0, as the
    /// kernel delivers it to the SM.
    pub fn advance_hop_pointer(&mut self, arrived_on: Option<u8>, is_switch: bool) -> DrAction {
        let count = self.hop_count();
        if !self.is_directed_route() || usize::from(count) > DrPath::MAX_HOPS {
            return DrAction::Discard;
        }
        let (p, n) = (self.hop_pointer(), count);
        let dr_slid = self.dr_slid();
        let dr_dlid = self.dr_dlid();
        // Both paths are 64 bytes and n <= 63, so every index below is in
        // range.
        if !self.direction() {
            if n > 0 && p == 0 {
                if arrived_on.is_none() && dr_slid != PERMISSIVE_LID {
                    return DrAction::LeadingLidRoute;
                }
                self.set_hop_pointer(1);
                return DrAction::Forward(self.initial_path_byte(1));
            }
            if p > 0 && p < n {
                if !is_switch {
                    return DrAction::Discard;
                }
                if let Some(port) = arrived_on {
                    self.return_path_mut()[usize::from(p)] = port;
                }
                self.set_hop_pointer(p + 1);
                return DrAction::Forward(self.initial_path_byte(p + 1));
            }
            if p == n {
                let action = if dr_dlid == PERMISSIVE_LID {
                    DrAction::Local
                } else if is_switch {
                    DrAction::LidRoute(dr_dlid)
                } else {
                    return DrAction::Discard;
                };
                if let Some(port) = arrived_on.filter(|_| n > 0) {
                    self.return_path_mut()[usize::from(p)] = port;
                }
                self.set_hop_pointer(p + 1);
                return action;
            }
            if u16::from(p) == u16::from(n) + 1 {
                return DrAction::Local;
            }
            DrAction::Discard
        } else {
            if n > 0 && u16::from(p) == u16::from(n) + 1 {
                if arrived_on.is_none() && dr_dlid != PERMISSIVE_LID {
                    return DrAction::LeadingLidRoute;
                }
                self.set_hop_pointer(n);
                return DrAction::Forward(self.return_path_byte(n));
            }
            if (2..=n).contains(&p) {
                if !is_switch {
                    return DrAction::Discard;
                }
                self.set_hop_pointer(p - 1);
                return DrAction::Forward(self.return_path_byte(p - 1));
            }
            if p == 1 {
                let action = if dr_slid == PERMISSIVE_LID {
                    DrAction::Local
                } else if is_switch {
                    DrAction::LidRoute(dr_slid)
                } else {
                    return DrAction::Discard;
                };
                self.set_hop_pointer(0);
                return action;
            }
            if p == 0 {
                return DrAction::Local;
            }
            DrAction::Discard
        }
    }

    /// Turns a received request into its response in place, as an SMA
    /// answers (IBA Vol 1, 13.4 and 14.2.2.2):
    ///
    /// * the method becomes its response ([`Method::response`]: `Get` and
    ///   `Set` → `GetResp`, `Trap` → `TrapRepress`); a method without one
    ///   (e.g. an unsupported code) becomes `GetResp`;
    /// * the status becomes `status`, and for directed-route SMPs the D bit
    ///   is set (the D bit of `status` itself is ignored);
    /// * everything else stays: TID, attribute, M_Key, data (fill it in
    ///   after), DrSLID/DrDLID, both paths, hop count and **hop pointer**.
    ///   The responder does not move the hop pointer itself: the first
    ///   [`Smp::advance_hop_pointer`]`(None, …)` on the response applies
    ///   C14-13:1 (hop pointer n + 1 → n, out of the port the request
    ///   arrived on, which step C14-9:3 stored in the return path).
    pub fn make_response(&mut self, status: Status) {
        let method = self.method().response().unwrap_or(Method::GetResp);
        self.header_mut().set_method(method);
        let mut status = status.without_direction();
        if self.is_directed_route() {
            status.0 |= Status::DIRECTION;
        }
        self.set_status(status);
    }

    fn initial_path_byte(&self, index: u8) -> u8 {
        self.buffer.as_ref()[field::INITIAL_PATH][usize::from(index)]
    }

    fn return_path_byte(&self, index: u8) -> u8 {
        self.buffer.as_ref()[field::RETURN_PATH][usize::from(index)]
    }
}

impl Smp<[u8; MAD_SIZE]> {
    /// Builds a directed-route SMP request the way libibmad does: base
    /// version 1, class 0x81, class version 1, status 0 (D bit clear), hop
    /// pointer 0, hop count and initial path from `path`, DrSLID = DrDLID =
    /// 0xffff (permissive), M_Key 0, data zero.
    ///
    /// Send it to the permissive LID (0xffff) on QP0.
    pub fn dr_request(
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        tid: u64,
        path: &DrPath,
    ) -> [u8; MAD_SIZE] {
        let mut buf = [0u8; MAD_SIZE];
        let header = MadHeader::request(
            MgmtClass::SubnDirectedRoute,
            SMP_CLASS_VERSION,
            method,
            attr_id,
            attr_mod,
            tid,
        );
        header.emit(&mut Mad::new_unchecked(&mut buf[..]));
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.set_hop_pointer(0);
        smp.set_dr_path(path);
        smp.set_dr_slid(PERMISSIVE_LID);
        smp.set_dr_dlid(PERMISSIVE_LID);
        buf
    }

    /// Builds a LID-routed SMP request: base version 1, class 0x01, class
    /// version 1, status 0, M_Key 0, data zero.
    pub fn lid_request(method: Method, attr_id: u16, attr_mod: u32, tid: u64) -> [u8; MAD_SIZE] {
        let mut buf = [0u8; MAD_SIZE];
        let header = MadHeader::request(
            MgmtClass::SubnLid,
            SMP_CLASS_VERSION,
            method,
            attr_id,
            attr_mod,
            tid,
        );
        header.emit(&mut Mad::new_unchecked(&mut buf[..]));
        buf
    }
}

/// A directed route: the output port of each hop, starting at the local port.
///
/// Text form (infiniband-diags `-D` style): comma-separated decimal port
/// numbers whose first element is `0` (the local port), e.g. `"0"` (this
/// port, 0 hops) or `"0,1,3"` (out of port 1, then out of port 3: 2 hops).
/// Whitespace around elements is ignored. Unlike libibmad's `str2drpath`,
/// this parser rejects what `atoi` would silently accept: empty elements,
/// non-digits, ports above 255, a first element other than 0, and more than
/// [`DrPath::MAX_HOPS`] hops.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrPath {
    /// Initial-path layout: `path[0]` is always 0, hops at `1..=hops`.
    path: [u8; 64],
    /// Hop count; invariant: `<= MAX_HOPS`.
    hops: u8,
}

impl DrPath {
    /// The most hops a directed route can have (the initial path is 64
    /// bytes and byte 0 is unused).
    pub const MAX_HOPS: usize = 63;

    /// The empty route: the local port itself (hop count 0).
    pub const fn local() -> DrPath {
        DrPath {
            path: [0; 64],
            hops: 0,
        }
    }

    /// A route from the output port of each hop (without the leading 0).
    pub fn from_hops(ports: &[u8]) -> Result<DrPath> {
        if ports.len() > Self::MAX_HOPS {
            return Err(Error::DrPathTooLong { hops: ports.len() });
        }
        let mut p = DrPath::local();
        for &port in ports {
            p.push(port)?;
        }
        Ok(p)
    }

    /// Parses the `"0,1,3"` text form; see the type docs for the rules.
    pub fn parse(text: &str) -> Result<DrPath> {
        let mut path = DrPath::local();
        let mut elements = 0usize;
        let mut offset = 0usize;
        for elem in text.split(',') {
            let start = offset;
            offset += elem.len() + 1;
            let at = start + (elem.len() - elem.trim_start().len());
            let digits = elem.trim();
            if digits.is_empty() {
                return Err(Error::DrPathSyntax { offset: at });
            }
            let mut value = 0u32;
            for (i, c) in digits.bytes().enumerate() {
                if !c.is_ascii_digit() {
                    return Err(Error::DrPathSyntax { offset: at + i });
                }
                value = value.saturating_mul(10).saturating_add(u32::from(c - b'0'));
            }
            let port = u8::try_from(value).map_err(|_| Error::DrPortOutOfRange { offset: at })?;
            if elements == 0 {
                if port != 0 {
                    return Err(Error::DrPathNotLocal);
                }
            } else if elements <= Self::MAX_HOPS {
                path.push(port)?;
            }
            elements += 1;
        }
        let hops = elements.saturating_sub(1);
        if hops > Self::MAX_HOPS {
            return Err(Error::DrPathTooLong { hops });
        }
        Ok(path)
    }

    /// Number of hops (0 for the local port).
    pub fn hop_count(&self) -> u8 {
        self.hops
    }

    /// Whether this is the local port (no hops).
    pub fn is_local(&self) -> bool {
        self.hops == 0
    }

    /// The output port of each hop, without the leading 0.
    pub fn hops(&self) -> &[u8] {
        &self.path[1..=usize::from(self.hops)]
    }

    /// Appends a hop. Fails with [`Error::DrPathTooLong`] beyond
    /// [`DrPath::MAX_HOPS`].
    pub fn push(&mut self, port: u8) -> Result<()> {
        let next = usize::from(self.hops) + 1;
        match self.path.get_mut(next) {
            Some(slot) if next <= Self::MAX_HOPS => {
                *slot = port;
                self.hops += 1;
                Ok(())
            }
            _ => Err(Error::DrPathTooLong { hops: next }),
        }
    }

    /// This route extended by one hop.
    pub fn with_hop(&self, port: u8) -> Result<DrPath> {
        let mut p = *self;
        p.push(port)?;
        Ok(p)
    }

    /// Removes and returns the last hop.
    pub fn pop(&mut self) -> Option<u8> {
        if self.hops == 0 {
            return None;
        }
        let last = usize::from(self.hops);
        let port = self.path[last];
        self.path[last] = 0;
        self.hops -= 1;
        Some(port)
    }

    /// The 64-byte initial-path field: byte 0 is 0, hop `i` at byte `i`,
    /// the rest zero.
    pub fn initial_path(&self) -> [u8; 64] {
        self.path
    }
}

impl Default for DrPath {
    fn default() -> Self {
        DrPath::local()
    }
}

impl FromStr for DrPath {
    type Err = Error;

    fn from_str(s: &str) -> Result<DrPath> {
        DrPath::parse(s)
    }
}

impl fmt::Display for DrPath {
    /// The text form, e.g. `0,1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0")?;
        for port in self.hops() {
            write!(f, ",{port}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DrPath(\"{self}\")")
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::attr;

    fn dr_nodeinfo_request_bytes() -> [u8; 256] {
        // What libibmad puts on the wire for `smpquery -D nodeinfo 0,1,3`.
        let mut b = [0u8; 256];
        b[..24].copy_from_slice(&[
            0x01, 0x81, 0x01, 0x01, // base, class 0x81, version 1, Get
            0x00, 0x00, 0x00, 0x02, // status 0, hop ptr 0, hop cnt 2
            0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, // tid
            0x00, 0x11, 0x00, 0x00, // NodeInfo, reserved
            0x00, 0x00, 0x00, 0x00, // attr mod
        ]);
        b[32..36].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        b[129] = 1;
        b[130] = 3;
        b
    }

    #[test]
    fn test_dr_request() {
        let path = DrPath::parse("0,1,3").unwrap();
        let req = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 0x1234_5678, &path);
        assert_eq!(req, dr_nodeinfo_request_bytes());
    }

    #[test]
    fn test_lid_request() {
        let req = Smp::lid_request(Method::Get, attr::id::PORT_INFO, 1, 7);
        let mut expected = [0u8; 256];
        expected[..24].copy_from_slice(&[
            1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0x15, 0, 0, 0, 0, 0, 1,
        ]);
        assert_eq!(req, expected);
    }

    #[test]
    fn test_deconstruct() {
        let mut bytes = dr_nodeinfo_request_bytes();
        bytes[3] = 0x81;
        bytes[4] = 0x80;
        bytes[6] = 2;
        bytes[24..32].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        bytes[64] = 0x01;
        bytes[127] = 0xee;
        bytes[193] = 4;
        bytes[255] = 0x55;
        let smp = Smp::new_checked(&bytes[..]).unwrap();
        assert!(smp.is_directed_route());
        assert_eq!(smp.mgmt_class(), MgmtClass::SubnDirectedRoute);
        assert_eq!(smp.method(), Method::GetResp);
        assert_eq!(smp.tid(), 0x1234_5678);
        assert_eq!(smp.attr_id(), 0x11);
        assert_eq!(smp.attr_mod(), 0);
        assert!(smp.direction());
        assert_eq!(smp.status(), Status(0x8000));
        assert_eq!(smp.hop_pointer(), 2);
        assert_eq!(smp.hop_count(), 2);
        assert_eq!(smp.m_key(), 0x0102_0304_0506_0708);
        assert_eq!(smp.dr_slid(), 0xffff);
        assert_eq!(smp.dr_dlid(), 0xffff);
        assert_eq!(smp.data().len(), 64);
        assert_eq!(smp.data()[0], 0x01);
        assert_eq!(smp.data()[63], 0xee);
        assert_eq!(smp.initial_path()[1..3], [1, 3]);
        assert_eq!(smp.return_path()[1], 4);
        assert_eq!(smp.return_path()[63], 0x55);
        assert_eq!(smp.dr_path().unwrap().to_string(), "0,1,3");
        assert_eq!(smp.header().class_specific(), 0x0202);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 256];
        let mut smp = Smp::new_unchecked(&mut bytes[..]);
        MadHeader::request(
            MgmtClass::SubnDirectedRoute,
            1,
            Method::Get,
            0x11,
            0,
            0x1234_5678,
        )
        .emit(&mut smp.header_mut());
        smp.set_hop_pointer(0);
        smp.set_m_key(0);
        smp.set_dr_slid(0xffff);
        smp.set_dr_dlid(0xffff);
        smp.set_dr_path(&DrPath::from_hops(&[1, 3]).unwrap());
        smp.data_mut().fill(0);
        smp.return_path_mut().fill(0);
        let mut expected = dr_nodeinfo_request_bytes();
        // Reserved bytes 36..64 were not touched by any setter.
        expected[36..64].fill(0xa5);
        assert_eq!(bytes, expected);

        let mut smp = Smp::new_unchecked(&mut bytes[..]);
        smp.set_status(Status(0x001c));
        smp.set_direction(true);
        assert_eq!(smp.status(), Status(0x801c));
        smp.set_direction(false);
        assert_eq!(smp.status(), Status(0x001c));
    }

    #[test]
    fn test_impossible_len() {
        for len in [0, 1, 24, 64, 128, 255] {
            let buf = vec![0u8; len];
            assert_eq!(
                Smp::new_checked(&buf[..]).err(),
                Some(Error::Truncated {
                    needed: 256,
                    got: len
                })
            );
        }
        assert!(Smp::new_checked(&[0u8; 300][..]).is_ok());
    }

    #[test]
    fn test_bad_hop_count() {
        let mut bytes = [0u8; 256];
        bytes[7] = 64;
        let smp = Smp::new_checked(&bytes[..]).unwrap();
        assert_eq!(smp.dr_path(), Err(Error::BadHopCount(64)));
        bytes[7] = 63;
        let smp = Smp::new_checked(&bytes[..]).unwrap();
        assert_eq!(smp.dr_path().unwrap().hop_count(), 63);
        bytes[7] = 255;
        let smp = Smp::new_checked(&bytes[..]).unwrap();
        assert_eq!(smp.dr_path(), Err(Error::BadHopCount(255)));
    }

    #[test]
    fn dr_path_parse() {
        let p = DrPath::parse("0").unwrap();
        assert!(p.is_local());
        assert_eq!(p.hop_count(), 0);
        assert_eq!(p.hops(), &[] as &[u8]);
        assert_eq!(p.to_string(), "0");

        let p: DrPath = "0,1,3".parse().unwrap();
        assert_eq!(p.hop_count(), 2);
        assert_eq!(p.hops(), &[1, 3]);
        let mut ip = [0u8; 64];
        ip[1] = 1;
        ip[2] = 3;
        assert_eq!(p.initial_path(), ip);
        assert_eq!(format!("{p:?}"), "DrPath(\"0,1,3\")");

        assert_eq!(DrPath::parse(" 0 , 255,\t7 ").unwrap().hops(), &[255, 7]);
        assert_eq!(DrPath::parse("00,01").unwrap().hops(), &[1]);
    }

    #[test]
    fn dr_path_errors() {
        assert_eq!(DrPath::parse(""), Err(Error::DrPathSyntax { offset: 0 }));
        assert_eq!(DrPath::parse("0,"), Err(Error::DrPathSyntax { offset: 2 }));
        assert_eq!(
            DrPath::parse("0,,1"),
            Err(Error::DrPathSyntax { offset: 2 })
        );
        assert_eq!(
            DrPath::parse("0,1x"),
            Err(Error::DrPathSyntax { offset: 3 })
        );
        assert_eq!(
            DrPath::parse("0,-1"),
            Err(Error::DrPathSyntax { offset: 2 })
        );
        assert_eq!(
            DrPath::parse("0, +1"),
            Err(Error::DrPathSyntax { offset: 3 })
        );
        assert_eq!(DrPath::parse("0 1"), Err(Error::DrPathSyntax { offset: 1 }));
        assert_eq!(DrPath::parse("0,é"), Err(Error::DrPathSyntax { offset: 2 }));
        assert_eq!(
            DrPath::parse("0,1,256"),
            Err(Error::DrPortOutOfRange { offset: 4 })
        );
        assert_eq!(
            DrPath::parse("0,99999999999999999999"),
            Err(Error::DrPortOutOfRange { offset: 2 })
        );
        assert_eq!(DrPath::parse("1,3"), Err(Error::DrPathNotLocal));

        let ok = format!("0{}", ",1".repeat(63));
        assert_eq!(DrPath::parse(&ok).unwrap().hop_count(), 63);
        let long = format!("0{}", ",1".repeat(64));
        assert_eq!(DrPath::parse(&long), Err(Error::DrPathTooLong { hops: 64 }));
        let longer = format!("0{}", ",2".repeat(100));
        assert_eq!(
            DrPath::parse(&longer),
            Err(Error::DrPathTooLong { hops: 100 })
        );
    }

    #[test]
    fn dr_path_push_pop() {
        let mut p = DrPath::local();
        for i in 0..63u8 {
            p.push(i).unwrap();
        }
        assert_eq!(p.push(1), Err(Error::DrPathTooLong { hops: 64 }));
        assert_eq!(p.with_hop(1), Err(Error::DrPathTooLong { hops: 64 }));
        assert_eq!(p.pop(), Some(62));
        assert_eq!(p.hop_count(), 62);
        assert_eq!(p.initial_path()[63], 0);
        let q = p.with_hop(9).unwrap();
        assert_eq!(q.hops()[62], 9);
        assert_eq!(DrPath::local().pop(), None);
        assert_eq!(
            DrPath::from_hops(&[0; 64]),
            Err(Error::DrPathTooLong { hops: 64 })
        );
        assert_eq!(DrPath::default(), DrPath::local());
        // Equality ignores nothing: popped slots are cleared.
        let mut a = DrPath::from_hops(&[1, 2]).unwrap();
        a.pop();
        assert_eq!(a, DrPath::from_hops(&[1]).unwrap());
    }

    /// A request along `0,1,3` (SM node S, out port 1 → switch X, in 5,
    /// out 3 → CA D, in 1) and its response, node by node.
    #[test]
    fn dr_round_trip_through_a_switch() {
        let path = DrPath::parse("0,1,3").unwrap();
        let mut buf = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 7, &path);
        let mut smp = Smp::new_checked(&mut buf[..]).unwrap();
        assert!(!smp.is_at_destination());

        // S sends: C14-9:1.
        assert_eq!(smp.advance_hop_pointer(None, false), DrAction::Forward(1));
        assert_eq!(smp.hop_pointer(), 1);
        // X receives on port 5 and forwards: C14-9:2.
        assert!(!smp.is_at_destination());
        assert_eq!(smp.advance_hop_pointer(Some(5), true), DrAction::Forward(3));
        assert_eq!(smp.hop_pointer(), 2);
        assert_eq!(smp.return_path_mut()[1], 5);
        // D receives on port 1: end of the route, C14-9:3.
        assert!(smp.is_at_destination());
        assert_eq!(smp.advance_hop_pointer(Some(1), false), DrAction::Local);
        assert_eq!(smp.hop_pointer(), 3);
        assert_eq!(smp.return_path_mut()[2], 1);
        assert!(smp.is_at_destination());

        // D's SMA answers.
        smp.make_response(Status::SUCCESS);
        smp.data_mut()[0] = 1;
        assert_eq!(smp.method(), Method::GetResp);
        assert!(smp.direction());
        assert!(!smp.is_at_destination());
        assert_eq!(smp.hop_pointer(), 3);
        // D sends the response back out of port 1: C14-13:1.
        assert_eq!(smp.advance_hop_pointer(None, false), DrAction::Forward(1));
        assert_eq!(smp.hop_pointer(), 2);
        // X receives it on port 3, sends it out of port 5: C14-13:2.
        assert_eq!(smp.advance_hop_pointer(Some(3), true), DrAction::Forward(5));
        assert_eq!(smp.hop_pointer(), 1);
        // S receives it: C14-13:3, for the SM.
        assert_eq!(smp.advance_hop_pointer(Some(1), false), DrAction::Local);
        assert_eq!(smp.hop_pointer(), 0);
        // C14-13:4 is idempotent.
        assert_eq!(smp.advance_hop_pointer(Some(1), false), DrAction::Local);

        let reply = Smp::new_checked(&buf[..]).unwrap();
        assert_eq!(reply.status(), Status(0x8000));
        assert_eq!(reply.hop_count(), 2);
        assert_eq!(reply.tid(), 7);
        assert_eq!(reply.dr_path().unwrap(), path);
        assert_eq!(reply.return_path()[1..3], [5, 1]);
    }

    #[test]
    fn dr_loopback() {
        // Hop count 0: the local SMA (C14-9:3 with n = 0) and back
        // (C14-13:3).
        let mut buf = Smp::dr_request(Method::Get, attr::id::NODE_INFO, 0, 1, &DrPath::local());
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        assert!(smp.is_at_destination());
        assert_eq!(smp.advance_hop_pointer(None, false), DrAction::Local);
        assert_eq!(smp.hop_pointer(), 1);
        assert_eq!(smp.return_path_mut()[0], 0);
        smp.make_response(Status(Status::METHOD_ATTR_NOT_SUPPORTED));
        assert_eq!(smp.status(), Status(0x800c));
        assert_eq!(smp.advance_hop_pointer(None, false), DrAction::Local);
        assert_eq!(smp.hop_pointer(), 0);
    }

    #[test]
    fn dr_discards() {
        let path = DrPath::parse("0,1,3").unwrap();
        // A CA in the middle of the route (C14-9:2 needs a switch).
        let mut buf = Smp::dr_request(Method::Get, 0x11, 0, 1, &path);
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.set_hop_pointer(1);
        let before = buf;
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        assert_eq!(smp.advance_hop_pointer(Some(2), false), DrAction::Discard);
        assert_eq!(buf, before, "a discarded SMP is not modified");
        // Hop pointer beyond hop count + 1 (C14-9:5).
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.set_hop_pointer(4);
        assert_eq!(smp.advance_hop_pointer(Some(2), true), DrAction::Discard);
        // Returning with an impossible hop pointer (C14-13:5).
        smp.set_direction(true);
        assert_eq!(smp.advance_hop_pointer(Some(2), true), DrAction::Discard);
        // Returning through a CA (C14-13:2 needs a switch).
        smp.set_hop_pointer(2);
        assert_eq!(smp.advance_hop_pointer(Some(2), false), DrAction::Discard);
        // Hop count above 63.
        smp.set_hop_count(64);
        smp.set_hop_pointer(1);
        assert_eq!(smp.advance_hop_pointer(Some(2), true), DrAction::Discard);
        // Not a directed-route SMP.
        let mut lid = Smp::lid_request(Method::Get, 0x11, 0, 1);
        let mut smp = Smp::new_unchecked(&mut lid[..]);
        assert_eq!(smp.advance_hop_pointer(None, true), DrAction::Discard);
        assert!(!smp.is_at_destination());
        // The sender of a request must bump a hop pointer of 0 (C14-9:1 at
        // the receiver is the first switch after a LID-routed part).
        let mut buf = Smp::dr_request(Method::Get, 0x11, 0, 1, &path);
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        assert_eq!(smp.advance_hop_pointer(Some(9), true), DrAction::Forward(1));
        assert_eq!(smp.return_path_mut()[0], 0);
    }

    #[test]
    fn dr_with_lid_routed_parts() {
        // DrSLID 0x0001 (the SM is reached by LID), DrDLID 0x0042 (the
        // target is reached by LID after the directed part), path 0,2.
        let path = DrPath::parse("0,2").unwrap();
        let mut buf = Smp::dr_request(Method::Get, 0x11, 0, 1, &path);
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.set_dr_slid(0x0001);
        smp.set_dr_dlid(0x0042);
        // The SM LID-routes the request to the first switch, unchanged.
        assert_eq!(
            smp.advance_hop_pointer(None, false),
            DrAction::LeadingLidRoute
        );
        assert_eq!(smp.hop_pointer(), 0);
        // Switch A (reached by LID on port 4) starts the directed part.
        assert_eq!(smp.advance_hop_pointer(Some(4), true), DrAction::Forward(2));
        // Switch B ends it and LID-routes on to DrDLID.
        assert!(!smp.is_at_destination());
        assert_eq!(
            smp.advance_hop_pointer(Some(7), true),
            DrAction::LidRoute(0x0042)
        );
        assert_eq!(smp.hop_pointer(), 2);
        // A CA could not have ended the directed part here.
        let mut copy = buf;
        let mut c = Smp::new_unchecked(&mut copy[..]);
        c.set_hop_pointer(1);
        assert_eq!(c.advance_hop_pointer(Some(7), false), DrAction::Discard);
        // The target receives it by LID: C14-9:4.
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        assert!(smp.is_at_destination());
        assert_eq!(smp.advance_hop_pointer(Some(1), false), DrAction::Local);
        assert_eq!(smp.hop_pointer(), 2);
        smp.make_response(Status::SUCCESS);
        // The target answers by LID to the request's source, unchanged.
        assert_eq!(
            smp.advance_hop_pointer(None, false),
            DrAction::LeadingLidRoute
        );
        assert_eq!(smp.hop_pointer(), 2);
        // Switch B (reached by LID) starts the directed return: C14-13:1.
        assert_eq!(smp.advance_hop_pointer(Some(3), true), DrAction::Forward(7));
        assert_eq!(smp.hop_pointer(), 1);
        // Switch A ends it and LID-routes to DrSLID: C14-13:3.
        assert_eq!(
            smp.advance_hop_pointer(Some(2), true),
            DrAction::LidRoute(0x0001)
        );
        assert_eq!(smp.hop_pointer(), 0);
        // The SM receives it by LID: C14-13:4.
        assert_eq!(smp.advance_hop_pointer(Some(1), false), DrAction::Local);
    }

    #[test]
    fn make_response_methods() {
        let mut buf = Smp::lid_request(Method::Set, 0x15, 1, 1);
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.make_response(Status(0x801c));
        assert_eq!(smp.method(), Method::GetResp);
        // LID-routed: no D bit, even if the given status had one.
        assert_eq!(smp.status(), Status(0x001c));

        let mut buf = Smp::lid_request(Method::Trap, 0x02, 0, 1);
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.make_response(Status::SUCCESS);
        assert_eq!(smp.method(), Method::TrapRepress);

        let mut buf = Smp::dr_request(Method::Unknown(0x42), 0x11, 0, 1, &DrPath::local());
        let mut smp = Smp::new_unchecked(&mut buf[..]);
        smp.make_response(Status(Status::METHOD_NOT_SUPPORTED));
        assert_eq!(smp.method(), Method::GetResp);
        assert_eq!(smp.status(), Status(0x8008));
    }
}
