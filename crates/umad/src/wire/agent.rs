//! What an agent registers for: class, version, methods, RMPP, OUI.

use crate::abi::{AgentRegistration, USER_RMPP};
use crate::{Error, Result};

/// The OpenIB OUI libibumad's `umad_register` puts into every legacy registration.
pub use ibmad::vendor::OPENIB_OUI;

/// An agent's id on its port (0..31 on the kernel), as returned by registration and carried
/// by every received MAD.
pub type AgentId = u32;

/// A 128-bit set of methods: the methods an agent receives *requests* for.
///
/// An empty mask makes a client-only agent, which receives just the responses to its own
/// requests (and their timeouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct MethodMask(pub [u64; 2]);

impl MethodMask {
    /// No methods: a client-only agent.
    pub const EMPTY: MethodMask = MethodMask([0; 2]);

    /// The mask holding exactly `methods` (method values 0..=127).
    pub fn of(methods: &[u8]) -> MethodMask {
        methods.iter().fold(MethodMask::EMPTY, |m, &x| m.with(x))
    }

    /// This mask plus `method` (values ≥ 128 are ignored: no method has the response bit).
    pub fn with(mut self, method: u8) -> MethodMask {
        if method < 128 {
            self.0[usize::from(method / 64)] |= 1u64 << (method % 64);
        }
        self
    }

    /// Whether `method` is in the mask.
    pub fn contains(&self, method: u8) -> bool {
        method < 128 && self.0[usize::from(method / 64)] & (1u64 << (method % 64)) != 0
    }

    /// Whether the mask is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == [0, 0]
    }

    /// Whether the two masks share a method.
    pub fn overlaps(&self, other: &MethodMask) -> bool {
        self.0[0] & other.0[0] != 0 || self.0[1] & other.0[1] != 0
    }
}

/// Everything an agent registers with — the arguments of `umad_register`,
/// `umad_register_oui` and `umad_register2` in one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "umad_reg_attr")]
pub struct AgentSpec {
    /// Management class (0 = no class: a client that only sends requests).
    pub class: u8,
    /// Class version.
    pub class_version: u8,
    /// Methods whose requests this agent receives.
    pub methods: MethodMask,
    /// RMPP version (0 = none, 1 = RMPP; only for RMPP-capable classes).
    pub rmpp_version: u8,
    /// 24-bit OUI, required for vendor classes 0x30–0x4F.
    pub oui: u32,
    /// Registration flags (`IB_USER_MAD_USER_RMPP`).
    pub flags: u32,
}

impl AgentSpec {
    /// A client-only agent of `class`/`class_version` (no methods, no RMPP, no OUI).
    /// `class` is an [`ibmad::MgmtClass`] (`MgmtClass::SubnAdm`) or its wire value (`0x03`).
    #[doc(alias = "umad_register")]
    pub fn new(class: impl Into<ibmad::MgmtClass>, class_version: u8) -> AgentSpec {
        AgentSpec {
            class: u8::from(class.into()),
            class_version,
            methods: MethodMask::EMPTY,
            rmpp_version: 0,
            oui: 0,
            flags: 0,
        }
    }

    /// The management class, named.
    pub fn mgmt_class(&self) -> ibmad::MgmtClass {
        ibmad::MgmtClass::from(self.class)
    }

    /// The same agent receiving requests with these methods.
    pub fn methods(mut self, methods: MethodMask) -> AgentSpec {
        self.methods = methods;
        self
    }

    /// The same agent with an RMPP version (1 lets the kernel do RMPP for the agent).
    pub fn rmpp_version(mut self, version: u8) -> AgentSpec {
        self.rmpp_version = version;
        self
    }

    /// The same agent with a 24-bit OUI (vendor classes 0x30–0x4F).
    #[doc(alias = "umad_register_oui")]
    pub fn oui(mut self, oui: u32) -> AgentSpec {
        self.oui = oui;
        self
    }

    /// The same agent with registration flags (e.g. [`USER_RMPP`]).
    #[doc(alias = "umad_register2")]
    pub fn flags(mut self, flags: u32) -> AgentSpec {
        self.flags = flags;
        self
    }

    /// The same agent doing RMPP in user space (`IB_USER_MAD_USER_RMPP`).
    pub fn user_rmpp(self) -> AgentSpec {
        self.flags(self.flags | USER_RMPP)
    }

    /// The QP the agent lives on: 0 (SMI) for classes 0x01 and 0x81, else 1 (GSI).
    pub fn qpn(&self) -> u32 {
        ibmad::qp_for_class(self.class)
    }

    /// Whether the class is in the vendor range with OUI (0x30–0x4F).
    pub fn is_vendor_oui_class(&self) -> bool {
        ibmad::header::is_vendor_range2(self.class)
    }

    /// Whether the transport does RMPP for this agent (an RMPP version on an RMPP class,
    /// without [`USER_RMPP`]): it then sends and receives whole messages of any length.
    pub fn kernel_rmpp(&self) -> bool {
        self.rmpp_version != 0 && ibmad::is_rmpp_class(self.class) && self.flags & USER_RMPP == 0
    }

    /// Checks a MAD this agent is about to send, the same way on every transport: at least
    /// 36 bytes (the common and RMPP headers: the kernel's `ib_umad` write refuses less), and
    /// at most 256 bytes unless the agent has transport RMPP
    /// ([`kernel_rmpp`](AgentSpec::kernel_rmpp)) and the MAD's RMPP header is ACTIVE — the
    /// rules of that write.
    pub fn check_send(&self, mad: &[u8]) -> Result<()> {
        let min = ibmad::rmpp::RMPP_DATA_OFFSET;
        if mad.len() < min {
            return Err(Error::InvalidArgument(format!(
                "a MAD sent through umad has at least {min} bytes (the common and RMPP headers, as the kernel requires); this one has {} bytes",
                mad.len()
            )));
        }
        if mad.len() > ibmad::MAD_SIZE && !(self.kernel_rmpp() && rmpp_active(mad)) {
            let why = if !self.kernel_rmpp() {
                "register the agent with rmpp_version(1) on an RMPP class (SA, vendor 0x30-0x4f, ...) to send longer messages"
            } else {
                "set the ACTIVE flag in its RMPP header (byte 26) so it is sent as an RMPP transfer"
            };
            return Err(Error::InvalidArgument(format!(
                "this MAD has {} bytes, more than the {} of one MAD: {why}",
                mad.len(),
                ibmad::MAD_SIZE
            )));
        }
        Ok(())
    }

    /// Checks what the kernel would refuse with a bare `EINVAL`, and says why.
    pub fn validate(&self) -> Result<()> {
        if self.oui > 0x00ff_ffff {
            return Err(Error::InvalidArgument(format!(
                "OUI {:#x} does not fit 24 bits",
                self.oui
            )));
        }
        if self.is_vendor_oui_class() && self.oui == 0 {
            return Err(Error::InvalidArgument(format!(
                "class {:#04x} is a vendor class with OUI (0x30-0x4f): give the vendor's 24-bit OUI",
                self.class
            )));
        }
        if self.class_version >= 8 {
            return Err(Error::InvalidArgument(format!(
                "class version {} is out of range: the kernel accepts 0..7",
                self.class_version
            )));
        }
        Ok(())
    }

    /// The registration the kernel is asked for (both ioctls' fields; see
    /// [`abi::register_agent`](crate::abi::register_agent)). The OUI is passed as given, as
    /// libibumad's `umad_register2` passes it (the kernel looks at it only for vendor classes).
    pub fn registration(&self) -> AgentRegistration {
        AgentRegistration {
            qpn: self.qpn(),
            class: self.class,
            class_version: self.class_version,
            flags: self.flags,
            method_mask: self.methods.0,
            oui: self.oui,
            rmpp_version: self.rmpp_version,
        }
    }
}

impl From<&AgentRegistration> for AgentSpec {
    /// The agent a registration request describes (the QP follows from the class; the OUI is
    /// cut to the 24 bits the kernel looks at).
    fn from(r: &AgentRegistration) -> AgentSpec {
        AgentSpec {
            class: r.class,
            class_version: r.class_version,
            methods: MethodMask(r.method_mask),
            rmpp_version: r.rmpp_version,
            oui: r.oui & 0x00ff_ffff,
            flags: r.flags,
        }
    }
}

/// Whether a MAD carries an RMPP header with the ACTIVE flag (only meaningful for RMPP
/// classes).
pub(crate) fn rmpp_active(mad: &[u8]) -> bool {
    ibmad::Rmpp::new_checked(mad).is_ok_and(|r| r.flags().is_active())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_mask_bits() {
        let m = MethodMask::of(&[1, 63, 64, 127, 200]);
        assert_eq!(m.0, [0x8000_0000_0000_0002, 0x8000_0000_0000_0001]);
        assert!(m.contains(64) && m.contains(1) && !m.contains(2) && !m.contains(200));
    }

    #[test]
    fn qp_and_requests() {
        assert_eq!(AgentSpec::new(0x81, 1).qpn(), 0);
        assert_eq!(AgentSpec::new(0x01, 1).qpn(), 0);
        assert_eq!(AgentSpec::new(0x04, 1).qpn(), 1);
        let r = AgentSpec::new(0x4f, 1)
            .oui(0x00066a)
            .methods(MethodMask::of(&[1, 64]))
            .user_rmpp()
            .registration();
        assert_eq!((r.oui, r.flags, r.qpn, r.class), (0x00066a, 1, 1, 0x4f));
        assert_eq!(r.method_mask, [2, 1]);
        assert_eq!(AgentSpec::new(0x81, 1).registration().qpn, 0);
        let spec = AgentSpec::new(0x4f, 1)
            .oui(0x00066a)
            .methods(MethodMask::of(&[1]))
            .rmpp_version(1);
        assert_eq!(AgentSpec::from(&spec.registration()), spec);
    }

    #[test]
    fn validation_explains() {
        let e = AgentSpec::new(0x30, 1).validate().unwrap_err().to_string();
        assert!(e.contains("OUI"), "{e}");
        assert!(AgentSpec::new(0x30, 1).oui(0x1_000_000).validate().is_err());
        assert!(AgentSpec::new(0x04, 8).validate().is_err());
        assert!(AgentSpec::new(0x04, 1).validate().is_ok());
    }
}
