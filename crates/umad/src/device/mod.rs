//! Enumeration of InfiniBand devices (CAs), their ports and their `umad` device files, from
//! sysfs — the Rust counterpart of libibumad's `umad_get_cas_names`, `umad_get_ca`,
//! `umad_get_port`, `umad_get_issm_path`, `umad_get_ca_device_list`, `umad_get_smi_gsi_pairs`
//! and `umad_get_smi_gsi_pair_by_ca_name`, and of its internal default-port rules.
//!
//! The directories are parameters ([`Paths`]), so everything here runs on fixture trees as well
//! as on `/sys`. Every file and directory is read through the libc `open`/`read`/`opendir`
//! symbols (see `sys`), never Rust's own file APIs, so ibsim's LD_PRELOAD shim sees every
//! access.
//!
//! Differences from libibumad, all deliberate:
//! * no fixed limits: any number of CAs, ports (libibumad refuses a whole CA with 10 or more
//!   ports), umad devices (libibumad only looks at `umad0`..`umad191`) and name lengths;
//! * where libibumad falls back to the made-up CA `"mthca0"` port 1, or returns an all-zero
//!   result, this module returns an error that says what was found instead;
//! * CA names are validated ([`validate_ca_name`]) before any path is built from them;
//! * numbers that do not fit their type, and P_Key tables that are not exactly `0..n-1`, are
//!   errors instead of being truncated or written out of bounds.
//!
//! The C layer reapplies libibumad's limits and fallbacks on top of this module.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
mod source;
mod sysfs;

pub use source::{DevFile, DeviceSource, SingleCa};

/// The default sysfs directory of RDMA devices.
pub const DEFAULT_CLASS_DIR: &str = "/sys/class/infiniband";
/// The default sysfs directory of `ib_umad` devices (`umadN`, `issmN`, `abi_version`).
pub const DEFAULT_MAD_DIR: &str = "/sys/class/infiniband_mad";
/// The default directory of the RDMA character devices.
pub const DEFAULT_DEV_DIR: &str = "/dev/infiniband";

/// The oldest kernel user-MAD ABI version supported (`IB_USER_MAD_ABI_VERSION` 5).
pub const MIN_ABI_VERSION: u32 = 5;

/// `PortInfo.PortState` ACTIVE, as the sysfs `state` file reports it (`4: ACTIVE`).
pub const PORT_STATE_ACTIVE: u32 = 4;
/// `PortInfo.PortState` DOWN (`1: DOWN`).
pub const PORT_STATE_DOWN: u32 = 1;
/// `PortInfo.PortPhysicalState` Disabled (`3: Disabled`).
pub const PHYS_STATE_DISABLED: u32 = 3;
/// `PortInfo.PortPhysicalState` LinkUp (`5: LinkUp`).
pub const PHYS_STATE_LINK_UP: u32 = 5;
/// `PortInfo.CapabilityMask` bit 10, IsSMDisabled (`CAPMASK_IS_SM_DISABLED` in libibumad): the
/// port has no SMI (QP0); on planarized devices it marks the GSI-only device of a pair.
pub const CAPMASK_IS_SM_DISABLED: u32 = 0x400;

/// Where the enumeration looks: the sysfs class directories and the device directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The RDMA device class directory, `/sys/class/infiniband` by default.
    pub class_dir: PathBuf,
    /// The `ib_umad` class directory, `/sys/class/infiniband_mad` by default.
    pub mad_dir: PathBuf,
    /// The character device directory, `/dev/infiniband` by default.
    pub dev_dir: PathBuf,
}

impl Default for Paths {
    /// The system directories: `/sys/class/infiniband`, `/sys/class/infiniband_mad`,
    /// `/dev/infiniband`.
    fn default() -> Paths {
        Paths {
            class_dir: PathBuf::from(DEFAULT_CLASS_DIR),
            mad_dir: PathBuf::from(DEFAULT_MAD_DIR),
            dev_dir: PathBuf::from(DEFAULT_DEV_DIR),
        }
    }
}

impl Paths {
    /// The same layout under another root: `root/sys/class/infiniband`,
    /// `root/sys/class/infiniband_mad` and `root/dev/infiniband` (for fixture trees and
    /// chroots).
    pub fn with_root(root: &Path) -> Paths {
        Paths {
            class_dir: root.join("sys/class/infiniband"),
            mad_dir: root.join("sys/class/infiniband_mad"),
            dev_dir: root.join("dev/infiniband"),
        }
    }
}

/// The node type of an RDMA device, from the number in its sysfs `node_type` file
/// (`"1: CA"`, `"2: switch"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    /// 1: an InfiniBand channel adapter (also what RoCE HCAs report).
    Ca,
    /// 2: an InfiniBand switch (its management port is port 0).
    Switch,
    /// 3: an InfiniBand router.
    Router,
    /// 4: an iWARP RNIC.
    Rnic,
    /// 5: a Cisco usNIC.
    Usnic,
    /// 6: a Cisco usNIC (UDP).
    UsnicUdp,
    /// Any other code (the number as read).
    Unknown(u32),
}

impl From<u32> for NodeType {
    fn from(code: u32) -> NodeType {
        match code {
            1 => NodeType::Ca,
            2 => NodeType::Switch,
            3 => NodeType::Router,
            4 => NodeType::Rnic,
            5 => NodeType::Usnic,
            6 => NodeType::UsnicUdp,
            n => NodeType::Unknown(n),
        }
    }
}

impl NodeType {
    /// The kernel's numeric code (`RDMA_NODE_*`).
    pub fn code(self) -> u32 {
        match self {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
            NodeType::Rnic => 4,
            NodeType::Usnic => 5,
            NodeType::UsnicUdp => 6,
            NodeType::Unknown(n) => n,
        }
    }

    /// Whether this is an InfiniBand node type (CA, switch or router — codes 1 to 3), the
    /// devices libibumad lists (`is_ib_type`). RoCE HCAs report CA and so are included.
    pub fn is_ib(self) -> bool {
        (1..=3).contains(&self.code())
    }
}

/// One port of a CA as sysfs describes it (libibumad's `umad_port_t`, filled by
/// `umad_get_port`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(alias = "umad_port_t")]
pub struct PortAttrs {
    /// The CA this port belongs to.
    pub ca_name: String,
    /// The port number (0 for a switch's management port).
    pub port_num: u32,
    /// The base LID (`lid`).
    pub base_lid: u32,
    /// The LID mask count (`lid_mask_count`).
    pub lmc: u32,
    /// The subnet manager's LID (`sm_lid`).
    pub sm_lid: u32,
    /// The subnet manager's SL (`sm_sl`).
    pub sm_sl: u32,
    /// `PortInfo.PortState`: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.
    pub state: u32,
    /// `PortInfo.PortPhysicalState`: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining,
    /// 5 LinkUp, 6 LinkErrorRecovery, 7 Phy Test.
    pub phys_state: u32,
    /// The integer part of the rate in Gb/s (`"2.5 Gb/sec (1X SDR)"` → 2).
    pub rate: u32,
    /// `PortInfo.CapabilityMask`, host order (libibumad stores it big-endian).
    pub cap_mask: u32,
    /// The subnet prefix of GID 0, as a host-order value (libibumad stores it big-endian).
    pub gid_prefix: u64,
    /// The port GUID (interface id of GID 0), as a host-order value (libibumad stores it
    /// big-endian).
    pub port_guid: u64,
    /// The P_Key table, index = table position, host-order values.
    pub pkeys: Vec<u16>,
    /// `"InfiniBand"`, `"Ethernet"`, …; `"IB"` when the `link_layer` file cannot be read (old
    /// kernels and ibsim lack it), as libibumad.
    pub link_layer: String,
}

impl PortAttrs {
    /// Whether the link layer is InfiniBand (`"InfiniBand"`, or `"IB"` when unknown).
    pub fn is_ib(&self) -> bool {
        self.link_layer == "InfiniBand" || self.link_layer == "IB"
    }

    /// Whether the port is ACTIVE (state 4).
    pub fn is_active(&self) -> bool {
        self.state == PORT_STATE_ACTIVE
    }

    /// Whether the port has no SMI (capability bit IsSMDisabled, 0x400, is set).
    pub fn is_smi_disabled(&self) -> bool {
        self.cap_mask & CAPMASK_IS_SM_DISABLED != 0
    }
}

/// An RDMA device (CA, switch, router …) and all its ports (libibumad's `umad_ca_t`, filled
/// by `umad_get_ca`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(alias = "umad_ca_t")]
pub struct Ca {
    /// The device name, e.g. `mlx5_0`.
    pub name: String,
    /// The node type.
    pub node_type: NodeType,
    /// Firmware version (`fw_ver`), empty if unreadable.
    pub fw_ver: String,
    /// Hardware revision (`hw_rev`), empty if unreadable.
    pub hw_ver: String,
    /// Device type (`hca_type`), empty if unreadable.
    pub ca_type: String,
    /// The node GUID, host-order value.
    pub node_guid: u64,
    /// The system image GUID, host-order value.
    pub system_guid: u64,
    /// The ports, sorted by port number; any count.
    pub ports: Vec<PortAttrs>,
    /// Which of the optional files (`fw_ver`, `hw_rev`, `hca_type`) could not be read: their
    /// text is then empty, as it is for a file that is there but empty (Soft-RoCE's
    /// `fw_ver`). libibumad stores the two cases differently, which the drop-in repeats.
    pub unreadable: Vec<&'static str>,
}

impl Ca {
    /// The port numbered `n`, if the device has it.
    pub fn port(&self, n: u32) -> Option<&PortAttrs> {
        self.ports
            .binary_search_by_key(&n, |p| p.port_num)
            .ok()
            .map(|i| &self.ports[i])
    }

    /// The highest port number (libibumad's `numports`: 0 for a switch, 2 for a 2-port HCA;
    /// not a count).
    pub fn num_ports(&self) -> u32 {
        self.ports.last().map_or(0, |p| p.port_num)
    }

    /// The per-CA step of [`Devices::resolve`] (libibumad's `resolve_ca_port`) on this
    /// already read CA: `port` 0 = the best port, else that port checked.
    /// [`Error::NoUsablePort`] says why no port qualifies. For the C layer, which walks the
    /// CAs itself to apply libibumad's read limits and messages.
    pub fn choose_port(&self, port: u32, enforce_smi: bool) -> Result<PortChoice> {
        self.choose_port_observed(port, enforce_smi, &mut ())
    }

    /// [`Ca::choose_port`], reporting each step of the scan to `observer` (for a C layer that
    /// traces it as libibumad does; the outcome is the same).
    pub fn choose_port_observed(
        &self,
        port: u32,
        enforce_smi: bool,
        observer: &mut dyn ScanObserver,
    ) -> Result<PortChoice> {
        scan_ports(self, port, enforce_smi, observer).map_err(|reason| Error::NoUsablePort {
            ca: self.name.clone(),
            reason,
        })
    }
}

/// Watches libibumad's default-port scan step by step — its C implementation prints a debug
/// line at each of these points — without changing it. Every method does nothing by default;
/// `()` observes nothing.
pub trait ScanObserver {
    /// A CA is about to be read and looked at.
    fn checking_ca(&mut self, _ca: &str) {}
    /// Port number `port` of the CA is looked at, in a pass over every number from 0 to
    /// [`Ca::num_ports`] (absent ones too); only when the best port is searched.
    fn checking_port(&mut self, _port: u32) {}
    /// Port `port` is ACTIVE: the search on this CA stops there.
    fn found_active_port(&mut self, _port: u32) {}
    /// The CA qualifies with `choice` (the scan over CAs stops at an [`PortChoice::Active`]
    /// one).
    fn found_ca(&mut self, _ca: &str, _choice: PortChoice) {}
}

impl ScanObserver for () {}

/// libibumad's `resolve_ca_name` without a CA name, over the CAs `names` in that order (the
/// class directory's readdir order): each is read with `read_ca` (one that cannot be read is
/// skipped), and the first whose port (`port`, or the best one for 0; see
/// [`Ca::choose_port`]) is ACTIVE wins at once, else the first with a usable one. `Err` says,
/// per CA, why none qualified. [`Devices::resolve`] is this over sysfs; a C layer passes its
/// own reader (with its limits and messages) and observer.
#[doc(alias = "resolve_ca_name")]
pub fn resolve_among<E: std::fmt::Display>(
    names: &[String],
    mut read_ca: impl FnMut(&str) -> std::result::Result<Ca, E>,
    port: u32,
    enforce_smi: bool,
    observer: &mut dyn ScanObserver,
) -> std::result::Result<(String, PortChoice), Vec<String>> {
    let mut usable: Option<(String, PortChoice)> = None;
    let mut reasons = Vec::new();
    for name in names {
        observer.checking_ca(name);
        let ca = match read_ca(name) {
            Ok(ca) => ca,
            Err(e) => {
                reasons.push(format!("{name}: {e}"));
                continue;
            }
        };
        match scan_ports(&ca, port, enforce_smi, observer) {
            Ok(choice) => {
                observer.found_ca(name, choice);
                if let PortChoice::Active(_) = choice {
                    return Ok((name.clone(), choice));
                }
                usable.get_or_insert((name.clone(), choice));
            }
            Err(reason) => reasons.push(format!("{name}: {reason}")),
        }
    }
    usable.ok_or(reasons)
}

/// An SMI/GSI device pair (libibumad's `struct umad_ca_pair`).
///
/// On "planarized" HCAs one physical port is exposed as two RDMA devices sharing a port GUID:
/// one with the SMI (QP0) and one GSI-only (IsSMDisabled set). On ordinary HCAs both names are
/// the same device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[doc(alias = "umad_ca_pair")]
pub struct CaPair {
    /// The device that carries the SMI, if any.
    pub smi_name: Option<String>,
    /// The port to use on the SMI device (0 = not chosen).
    pub smi_preferred_port: u32,
    /// The device that carries the GSI, if any.
    pub gsi_name: Option<String>,
    /// The port to use on the GSI device (0 = not chosen).
    pub gsi_preferred_port: u32,
}

/// Refuses a CA name that could make a path escape the sysfs directory: empty, `.` or `..`,
/// or containing `/` or a NUL byte. Every [`Devices`] method that takes a CA name calls this
/// before building any path from it.
pub fn validate_ca_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "the name is empty"
    } else if name == "." || name == ".." {
        "'.' and '..' are not device names"
    } else if name.contains('/') {
        "a device name cannot contain '/'"
    } else if name.contains('\0') {
        "a device name cannot contain a NUL byte"
    } else {
        return Ok(());
    };
    Err(Error::InvalidCaName {
        name: name.to_owned(),
        reason,
    })
}

/// What the default-port rules found on one CA (`resolve_ca_port`'s 1 and 0); see
/// [`Ca::choose_port`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortChoice {
    /// An ACTIVE port (or a switch's port 0): take it at once.
    Active(u32),
    /// A usable but not active port: take it if nothing better turns up.
    Usable(u32),
}

impl PortChoice {
    /// The chosen port number.
    pub fn port(self) -> u32 {
        match self {
            PortChoice::Active(p) | PortChoice::Usable(p) => p,
        }
    }
}

/// What a failed [`Devices::ca`] or [`Devices::port`] read means, as data, for a caller that
/// speaks libibumad's conventions (its C functions derive `errno`, return codes and a warning
/// from which file failed and how); see [`Devices::read_failure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFailure {
    /// Which part of the device failed.
    pub part: FailedPart,
    /// The errno of the failed sysfs `open`/`opendir`/`read` (`EIO` when the OS gave none);
    /// `None` when no sysfs read failed (absent device, malformed content, any other error).
    pub os_errno: Option<i32>,
    /// [`Error::errno`] of the error.
    pub errno: i32,
    /// Set when the failure is a port's P_Key directory that cannot be listed or holds no
    /// entries (libibumad warns about it whatever its debug level).
    pub no_pkeys: Option<NoPkeys>,
}

/// The part of a device whose read failed ([`ReadFailure::part`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedPart {
    /// The CA does not exist, or its name was refused ([`Error::NoSuchCa`],
    /// [`Error::InvalidCaName`]).
    NoSuchCa,
    /// The port does not exist ([`Error::NoUsablePort`], from [`Devices::port`]).
    NoSuchPort,
    /// A file of the CA itself, outside its `ports` directory (`node_type`, `node_guid`,
    /// `sys_image_guid`).
    CaFile,
    /// The CA's `ports` directory could not be listed.
    PortsDir,
    /// A port: its entry in the `ports` directory or a file under it.
    Port,
    /// Anything else (not a sysfs read, e.g. a simulator's failure).
    Other,
}

/// A port whose P_Key directory cannot be listed or holds no entries ([`ReadFailure::no_pkeys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoPkeys {
    /// The port number.
    pub port: u32,
    /// The P_Key directory.
    pub dir: PathBuf,
}

/// libibumad's `resolve_ca_port` (HEAD, with the `enforce_smi` filter) on an already read CA.
/// `Err` carries why no port qualifies.
fn choose_port(ca: &Ca, port: u32, enforce_smi: bool) -> std::result::Result<PortChoice, String> {
    scan_ports(ca, port, enforce_smi, &mut ())
}

/// [`choose_port`], reporting the steps of the best-port search to `observer`.
fn scan_ports(
    ca: &Ca,
    port: u32,
    enforce_smi: bool,
    observer: &mut dyn ScanObserver,
) -> std::result::Result<PortChoice, String> {
    if ca.node_type == NodeType::Switch {
        // QUIRK kept: a switch is always "active" on port 0, whatever was asked.
        return Ok(PortChoice::Active(0));
    }
    if port > 0 {
        let Some(p) = ca.port(port) else {
            return Err(format!(
                "port {port} does not exist (ports: {})",
                port_list(ca)
            ));
        };
        if !p.is_ib() {
            return Err(format!("port {port} link layer is {}", p.link_layer));
        }
        if enforce_smi && p.is_smi_disabled() {
            return Err(format!(
                "port {port} has no SMI (IsSMDisabled capability bit set)"
            ));
        }
        if p.is_active() {
            return Ok(PortChoice::Active(port));
        }
        if p.phys_state != PHYS_STATE_DISABLED {
            return Ok(PortChoice::Usable(port));
        }
        return Err(format!("port {port} is Disabled (phys_state 3)"));
    }
    // Both passes look at every port number up to the highest, as libibumad does.
    let numbers = 0..=ca.num_ports();
    // Pass 1: InfiniBand ports only; the first ACTIVE port wins, else the first LinkUp one.
    let mut up = None;
    for n in numbers.clone() {
        observer.checking_port(n);
        let Some(p) = ca.port(n) else { continue };
        if !p.is_ib() || (enforce_smi && p.is_smi_disabled()) {
            continue;
        }
        if up.is_none() && p.phys_state == PHYS_STATE_LINK_UP {
            up = Some(n);
        }
        if p.is_active() {
            observer.found_active_port(n);
            return Ok(PortChoice::Active(n));
        }
    }
    if let Some(n) = up {
        return Ok(PortChoice::Usable(n));
    }
    // Pass 2: the first port that is not Disabled. QUIRK kept from libibumad: the link layer
    // is not checked here, so an Ethernet-only HCA is still chosen.
    for n in numbers {
        observer.checking_port(n);
        let Some(p) = ca.port(n) else { continue };
        if !(enforce_smi && p.is_smi_disabled()) && p.phys_state != PHYS_STATE_DISABLED {
            return Ok(PortChoice::Usable(n));
        }
    }
    if ca.ports.is_empty() {
        return Err("it has no ports".to_owned());
    }
    let why: Vec<String> = ca
        .ports
        .iter()
        .map(|p| {
            if enforce_smi && p.is_smi_disabled() {
                format!(
                    "port {} has no SMI (IsSMDisabled capability bit set)",
                    p.port_num
                )
            } else {
                format!(
                    "port {} ({}) is Disabled (phys_state 3)",
                    p.port_num, p.link_layer
                )
            }
        })
        .collect();
    Err(format!("no usable port: {}", why.join(", ")))
}

fn port_list(ca: &Ca) -> String {
    if ca.ports.is_empty() {
        return "none".to_owned();
    }
    ca.ports
        .iter()
        .map(|p| p.port_num.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A port that counts as "active" for `find_preferred_ports`: it exists and its state is above
/// DOWN (INIT, ARMED or ACTIVE).
fn pair_port_active(ca: &Ca, port: u32) -> bool {
    ca.port(port).is_some_and(|p| p.state > PORT_STATE_DOWN)
}

fn first_pair_active_port(ca: &Ca) -> Option<u32> {
    ca.ports
        .iter()
        .find(|p| p.state > PORT_STATE_DOWN)
        .map(|p| p.port_num)
}

/// libibumad's `find_preferred_ports` (HEAD): fills the preferred ports of `pair` from `ca`,
/// the device the caller chose (`is_gsi`: the GSI side). `Err` says why nothing qualified.
fn find_preferred_ports(
    pair: &mut CaPair,
    ca: &Ca,
    is_gsi: bool,
    port: u32,
    devname: Option<&str>,
) -> std::result::Result<(), String> {
    let port = if ca.num_ports() == 1 { 1 } else { port };
    if port != 0 || ca.node_type == NodeType::Switch {
        let wanted = devname.is_some() || pair_port_active(ca, port);
        if !wanted {
            return Err(format!(
                "{} port {port} is not active (state DOWN or missing)",
                ca.name
            ));
        }
        if pair.smi_name == pair.gsi_name {
            pair.smi_preferred_port = port;
            pair.gsi_preferred_port = port;
            return Ok(());
        }
        // QUIRK kept: the other side's port is looked up on this same device.
        let other = first_pair_active_port(ca);
        if is_gsi {
            pair.gsi_preferred_port = port;
            pair.smi_preferred_port = other.unwrap_or(0);
        } else {
            pair.smi_preferred_port = port;
            pair.gsi_preferred_port = other.unwrap_or(0);
        }
        if devname.is_some() || other.is_some() {
            return Ok(());
        }
        return Err(format!(
            "{} has no active port for the other side of the pair",
            ca.name
        ));
    }
    match first_pair_active_port(ca) {
        Some(p) => {
            pair.smi_preferred_port = p;
            pair.gsi_preferred_port = p;
            Ok(())
        }
        None => Err(format!("{} has no active port (all ports DOWN)", ca.name)),
    }
}

/// Builds the SMI/GSI pairs of `cas` (in the order given), libibumad's
/// `umad_get_smi_gsi_pairs` step 3–4. With `max`, no new pair is created once `max` exist (a
/// port whose GUID has no pair yet is then skipped and the next port of the CA is tried, as in
/// C); without it there is no limit.
fn pair_up(cas: &[Ca], max: Option<usize>) -> Vec<CaPair> {
    // How many ports share each GUID, over all CAs (GUID 0 = unset, ignored).
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for p in cas
        .iter()
        .flat_map(|c| &c.ports)
        .filter(|p| p.port_guid != 0)
    {
        match counts.iter_mut().find(|(g, _)| *g == p.port_guid) {
            Some((_, n)) => *n += 1,
            None => counts.push((p.port_guid, 1)),
        }
    }
    let mut pairs: Vec<(u64, CaPair)> = Vec::new();
    for ca in cas {
        for p in ca.ports.iter().filter(|p| p.port_guid != 0) {
            let count = counts
                .iter()
                .find(|(g, _)| *g == p.port_guid)
                .map_or(0, |&(_, n)| n);
            let idx = match pairs.iter().position(|(g, _)| *g == p.port_guid) {
                Some(i) => i,
                None if max.is_some_and(|m| pairs.len() >= m) => continue,
                None => {
                    pairs.push((p.port_guid, CaPair::default()));
                    pairs.len() - 1
                }
            };
            let pair = &mut pairs[idx].1;
            if count > 1 {
                // Planarized: the SMI-disabled device is the GSI side.
                if p.is_smi_disabled() {
                    pair.gsi_name = Some(ca.name.clone());
                } else {
                    pair.smi_name = Some(ca.name.clone());
                }
            } else {
                if !p.is_smi_disabled() {
                    pair.smi_name = Some(ca.name.clone());
                }
                pair.gsi_name = Some(ca.name.clone());
            }
            // Only the first port (with a GUID) of each CA counts.
            break;
        }
    }
    pairs.into_iter().map(|(_, p)| p).collect()
}

/// The port of `ports_dir` whose `pkeys` directory `e` (from [`read_pkeys`]) says cannot be
/// listed or holds no numbered entries.
fn no_pkeys(e: &Error, ports_dir: &Path) -> Option<NoPkeys> {
    let dir = match e {
        Error::Sysfs { path, .. } => path,
        Error::Parse { path, text, .. } if text.is_empty() => path,
        _ => return None,
    };
    let mut rest = dir.strip_prefix(ports_dir).ok()?.iter();
    let port = rest.next()?.to_str().and_then(canonical_number)?;
    (rest.next()? == "pkeys" && rest.next().is_none()).then(|| NoPkeys {
        port,
        dir: dir.clone(),
    })
}

fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Sysfs { source, .. } if source.kind() == io::ErrorKind::NotFound)
}

/// A directory entry name that is a canonical decimal number (`"0"`, or no leading zero) and
/// fits `u32`.
fn canonical_number(name: &str) -> Option<u32> {
    let canonical =
        name == "0" || (name.bytes().all(|b| b.is_ascii_digit()) && !name.starts_with('0'));
    if !canonical || name.is_empty() {
        return None;
    }
    name.parse().ok()
}

/// The enumeration entry point: reads CAs, ports and umad devices under a set of [`Paths`].
///
/// Nothing is cached: every call reads sysfs again (libibumad does the same, except for the
/// ABI version, which its C layer caches).
#[derive(Debug, Clone, Default)]
pub struct Devices {
    paths: Paths,
}

impl Devices {
    /// Enumerates the system's devices (`/sys/class/infiniband`, …).
    pub fn new() -> Devices {
        Devices::default()
    }

    /// Enumerates the devices under other directories (fixture trees, chroots).
    pub fn with_paths(paths: Paths) -> Devices {
        Devices { paths }
    }

    /// The directories in use.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The kernel user-MAD ABI version from `abi_version` in the `ib_umad` class directory.
    ///
    /// Errors: [`Error::AbiUnavailable`] when the file cannot be read (`ib_umad` not loaded),
    /// [`Error::AbiTooOld`] below version 5. libibumad's `umad_open_port` fails with
    /// `-EOPNOTSUPP` in both cases.
    #[doc(alias = "get_abi_version")]
    #[doc(alias = "umad_init")]
    pub fn abi_version(&self) -> Result<u32> {
        let path = self.paths.mad_dir.join("abi_version");
        let version = match sysfs::read_uint(&path) {
            Ok(v) => v,
            Err(Error::Sysfs { path, source }) => {
                return Err(Error::AbiUnavailable { path, source })
            }
            Err(e) => return Err(e),
        };
        if version < MIN_ABI_VERSION {
            return Err(Error::AbiTooOld {
                found: version,
                path,
            });
        }
        Ok(version)
    }

    /// The names of the InfiniBand devices (node types 1–3), sorted by name.
    ///
    /// A missing class directory means no devices (`Ok` with an empty list); libibumad's C
    /// function instead reports the made-up name `"mthca0"`, and skips names of 20 bytes or
    /// more — both are left to the C layer. Entries that are not UTF-8 are skipped.
    #[doc(alias = "umad_get_cas_names")]
    pub fn ca_names(&self) -> Result<Vec<String>> {
        let mut names = self.ca_names_unsorted()?;
        names.sort();
        Ok(names)
    }

    /// The names of the InfiniBand devices (node types 1–3) in directory (readdir) order — the
    /// order libibumad's default-port search walks them in. A missing class directory means
    /// no devices.
    #[doc(alias = "umad_get_ca_device_list")]
    pub fn ca_names_unsorted(&self) -> Result<Vec<String>> {
        Ok(self
            .list_class_dir()?
            .unwrap_or_default()
            .into_iter()
            .filter(|n| self.is_ib_type(n))
            .collect())
    }

    /// Every device name in the class directory, in readdir order; `None` if the directory
    /// does not exist.
    fn list_class_dir(&self) -> Result<Option<Vec<String>>> {
        let entries = match sysfs::list_dir(&self.paths.class_dir) {
            Ok(e) => e,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(
            entries
                .into_iter()
                .filter_map(|n: OsString| n.into_string().ok())
                .filter(|n| validate_ca_name(n).is_ok())
                .collect(),
        ))
    }

    /// libibumad's `is_ib_type`: `node_type` readable and 1, 2 or 3.
    fn is_ib_type(&self, name: &str) -> bool {
        sysfs::read_uint(&self.paths.class_dir.join(name).join("node_type"))
            .is_ok_and(|t| NodeType::from(t).is_ib())
    }

    /// Reads a device and all its ports.
    ///
    /// Unlike libibumad there is no limit on the number of ports (the C library refuses a
    /// whole device with 10 or more). Errors: [`Error::NoSuchCa`] if the device does not
    /// exist; [`Error::Sysfs`]/[`Error::Parse`] naming the file for an unreadable or malformed
    /// `node_type`, `node_guid`, `sys_image_guid`, `ports` entry or port attribute (see
    /// [`Devices::port`]). `fw_ver`, `hw_rev` and `hca_type` are optional.
    #[doc(alias = "umad_get_ca")]
    pub fn ca(&self, name: &str) -> Result<Ca> {
        validate_ca_name(name)?;
        self.read_ca(name)
    }

    /// [`Devices::ca`] for a name already validated.
    fn read_ca(&self, name: &str) -> Result<Ca> {
        let dir = self.paths.class_dir.join(name);
        let node_type = match sysfs::read_uint(&dir.join("node_type")) {
            Ok(t) => NodeType::from(t),
            Err(e) => return Err(self.missing_ca_or(name, e)),
        };
        let mut unreadable = Vec::new();
        let mut optional = |file: &'static str| {
            sysfs::read_string(&dir.join(file), sysfs::STRING_MAX_READ).unwrap_or_else(|_| {
                unreadable.push(file);
                String::new()
            })
        };
        let fw_ver = optional("fw_ver");
        let hw_ver = optional("hw_rev");
        let ca_type = optional("hca_type");
        let node_guid = sysfs::read_guid(&dir.join("node_guid"))?;
        let system_guid = sysfs::read_guid(&dir.join("sys_image_guid"))?;

        let ports_dir = dir.join("ports");
        let mut entries: Vec<OsString> = sysfs::list_dir(&ports_dir)?;
        entries.sort();
        let mut numbers = Vec::with_capacity(entries.len());
        for entry in &entries {
            match entry.to_str().and_then(canonical_number) {
                Some(n) => numbers.push(n),
                None => {
                    return Err(sysfs::parse_error(
                        &ports_dir.join(entry),
                        "a port number (a directory named 0 or a positive decimal number)",
                        entry.as_encoded_bytes(),
                    ))
                }
            }
        }
        numbers.sort_unstable();
        let ports = numbers
            .into_iter()
            .map(|n| self.read_port(name, &ports_dir, n))
            .collect::<Result<Vec<_>>>()?;
        Ok(Ca {
            name: name.to_owned(),
            node_type,
            fw_ver,
            hw_ver,
            ca_type,
            node_guid,
            system_guid,
            ports,
            unreadable,
        })
    }

    /// Turns a failure to read a device's first file into [`Error::NoSuchCa`] when the device
    /// directory itself is missing.
    fn missing_ca_or(&self, name: &str, e: Error) -> Error {
        let dir = self.paths.class_dir.join(name);
        if is_not_found(&e) && sysfs::list_dir(&dir).as_ref().is_err_and(is_not_found) {
            return Error::NoSuchCa {
                ca: name.to_owned(),
                path: dir,
            };
        }
        e
    }

    /// Reads one port of a device, taken as given (no default-port rules; see
    /// [`Devices::resolve`] for those).
    ///
    /// Reads `lid_mask_count`, `sm_lid`, `sm_sl`, `lid`, `state`, `phys_state`, `rate`,
    /// `cap_mask`, `link_layer` (optional, `"IB"` if unreadable), `gids/0` and the `pkeys`
    /// directory. Errors name the file: [`Error::Sysfs`] if one cannot be read,
    /// [`Error::Parse`] for malformed content, a P_Key table that is empty or not exactly
    /// `0..n-1`, or a P_Key above 0xffff. [`Error::NoSuchCa`] / [`Error::NoUsablePort`] when the
    /// device / port does not exist.
    #[doc(alias = "umad_get_port")]
    pub fn port(&self, ca: &str, port: u32) -> Result<PortAttrs> {
        validate_ca_name(ca)?;
        let ports_dir = self.paths.class_dir.join(ca).join("ports");
        let port_dir = ports_dir.join(port.to_string());
        self.read_port(ca, &ports_dir, port).map_err(|e| {
            let first_file =
                matches!(&e, Error::Sysfs { path, .. } if *path == port_dir.join("lid_mask_count"));
            if !first_file || !is_not_found(&e) {
                return e;
            }
            match self.missing_ca_or(ca, e) {
                e @ Error::NoSuchCa { .. } => e,
                _ if sysfs::list_dir(&port_dir).as_ref().is_err_and(is_not_found) => {
                    Error::NoUsablePort {
                        ca: ca.to_owned(),
                        reason: format!("port {port} does not exist (no {})", port_dir.display()),
                    }
                }
                e => e,
            }
        })
    }

    /// What `e`, the error of a [`Devices::ca`] or [`Devices::port`] read of CA `ca`, means as
    /// data: the part that failed, the errno of the failed sysfs call and whether a port's
    /// P_Key directory is missing or empty. Nothing is read.
    pub fn read_failure(&self, ca: &str, e: &Error) -> ReadFailure {
        let ports_dir = self.paths.class_dir.join(ca).join("ports");
        let (part, os_errno) = match e {
            Error::NoSuchCa { .. } | Error::InvalidCaName { .. } => (FailedPart::NoSuchCa, None),
            Error::NoUsablePort { .. } => (FailedPart::NoSuchPort, None),
            Error::Sysfs { path, .. } | Error::Parse { path, .. } => {
                let part = if *path == ports_dir {
                    FailedPart::PortsDir
                } else if path.starts_with(&ports_dir) {
                    FailedPart::Port
                } else {
                    FailedPart::CaFile
                };
                let os_errno = matches!(e, Error::Sysfs { .. }).then(|| e.errno());
                (part, os_errno)
            }
            _ => (FailedPart::Other, None),
        };
        ReadFailure {
            part,
            os_errno,
            errno: e.errno(),
            no_pkeys: no_pkeys(e, &ports_dir),
        }
    }

    /// libibumad's `get_port`.
    fn read_port(&self, ca: &str, ports_dir: &Path, port_num: u32) -> Result<PortAttrs> {
        let dir = ports_dir.join(port_num.to_string());
        let uint = |file: &str| sysfs::read_uint(&dir.join(file));
        let lmc = uint("lid_mask_count")?;
        let sm_lid = uint("sm_lid")?;
        let sm_sl = uint("sm_sl")?;
        let base_lid = uint("lid")?;
        let state = uint("state")?;
        let phys_state = uint("phys_state")?;
        let rate = uint("rate")?;
        let cap_mask = uint("cap_mask")?;
        let link_layer = sysfs::read_string(&dir.join("link_layer"), sysfs::STRING_MAX_READ)
            .unwrap_or_else(|_| "IB".to_owned());
        let gid = sysfs::read_gid(&dir.join("gids").join("0"))?;
        let gid = u128::from_be_bytes(gid);
        let gid_prefix = (gid >> 64) as u64;
        let port_guid = gid as u64;
        let pkeys = read_pkeys(&dir.join("pkeys"))?;
        Ok(PortAttrs {
            ca_name: ca.to_owned(),
            port_num,
            base_lid,
            lmc,
            sm_lid,
            sm_sl,
            state,
            phys_state,
            rate,
            cap_mask,
            gid_prefix,
            port_guid,
            pkeys,
            link_layer,
        })
    }

    /// Chooses a CA and port the way libibumad does for `umad_open_port`, `umad_get_port`,
    /// `umad_get_issm_path` (`enforce_smi` false) and `umad_open_smi_port` (`enforce_smi` true):
    ///
    /// * a name and a non-zero port: taken as they are (the name is only validated, nothing is
    ///   read — as in libibumad, the port's existence, state and link layer are not checked);
    /// * a name and port 0: the best port of that CA (below);
    /// * no name: the CAs in directory (readdir) order; the first one whose port (the given
    ///   one, or the best one for port 0) is ACTIVE wins at once, else the first one with a
    ///   usable port.
    ///
    /// Per CA: a switch always gives port 0, whatever was asked. A given port must exist, have
    /// an InfiniBand link layer (and an SMI with `enforce_smi`) and be ACTIVE (preferred) or at
    /// least not Disabled. For port 0 the first ACTIVE InfiniBand port wins, else the first
    /// LinkUp InfiniBand port, else the first port that is not Disabled — **whatever its link
    /// layer** (libibumad quirk, kept: an Ethernet-only HCA is still chosen this way).
    ///
    /// Where libibumad would fall back to `"mthca0"` port 1 this returns [`Error::NoDevice`]
    /// (no name given) or [`Error::NoUsablePort`] (name given), with the reason for each CA.
    #[doc(alias = "resolve_ca_name")]
    #[doc(alias = "resolve_ca_port")]
    pub fn resolve(&self, ca: Option<&str>, port: u32, enforce_smi: bool) -> Result<(String, u32)> {
        if let Some(name) = ca {
            validate_ca_name(name)?;
            if port != 0 {
                return Ok((name.to_owned(), port));
            }
            let dev = self.read_ca(name)?;
            return match choose_port(&dev, 0, enforce_smi) {
                Ok(choice) => Ok((name.to_owned(), choice.port())),
                Err(reason) => Err(Error::NoUsablePort {
                    ca: name.to_owned(),
                    reason,
                }),
            };
        }
        let class_dir = Some(self.paths.class_dir.clone());
        let Some(all) = self.list_class_dir()? else {
            return Err(Error::NoDevice {
                path: class_dir,
                reason: "the directory does not exist (no RDMA device driver loaded?)".to_owned(),
            });
        };
        let names: Vec<String> = all.into_iter().filter(|n| self.is_ib_type(n)).collect();
        if names.is_empty() {
            return Err(Error::NoDevice {
                path: class_dir,
                reason: "no device of an InfiniBand node type (CA, switch, router)".to_owned(),
            });
        }
        resolve_among(&names, |n| self.read_ca(n), port, enforce_smi, &mut ())
            .map(|(name, choice)| (name, choice.port()))
            .map_err(|reasons| Error::NoDevice {
                path: class_dir,
                reason: reasons.join("; "),
            })
    }

    /// The number N of the `umadN` device of a CA port (libibumad's `dev_to_umad_id`).
    ///
    /// Every entry of the `ib_umad` class directory named `umad<N>` (canonical decimal N, no
    /// upper limit — libibumad stops at 191) is considered; its `ibdev` and `port` files are
    /// read, entries whose files are unreadable are skipped, and the lowest matching N is
    /// returned. Names are compared in full (libibumad compares 20 bytes).
    /// [`Error::NoUmadDevice`] if none matches or the directory does not exist.
    #[doc(alias = "dev_to_umad_id")]
    pub fn umad_id(&self, ca: &str, port: u32) -> Result<u32> {
        validate_ca_name(ca)?;
        let mad_dir = &self.paths.mad_dir;
        let not_found = || Error::NoUmadDevice {
            ca: ca.to_owned(),
            port,
            path: mad_dir.clone(),
        };
        let entries = match sysfs::list_dir(mad_dir) {
            Ok(e) => e,
            Err(e) if is_not_found(&e) => return Err(not_found()),
            Err(e) => return Err(e),
        };
        let mut best: Option<u32> = None;
        for entry in entries {
            let Some(id) = entry
                .to_str()
                .and_then(|n| n.strip_prefix("umad"))
                .and_then(canonical_number)
            else {
                continue;
            };
            if best.is_some_and(|b| b <= id) {
                continue;
            }
            let dir = mad_dir.join(&entry);
            let Ok(ibdev) = sysfs::read_string(&dir.join("ibdev"), sysfs::STRING_MAX_READ) else {
                continue;
            };
            if ibdev != ca || !sysfs::read_uint(&dir.join("port")).is_ok_and(|p| p == port) {
                continue;
            }
            best = Some(id);
        }
        best.ok_or_else(not_found)
    }

    /// The `umadN` character device of a CA port, e.g. `/dev/infiniband/umad3` (nothing under
    /// the device directory is opened or checked).
    #[doc(alias = "umad_open_port")]
    pub fn umad_device_path(&self, ca: &str, port: u32) -> Result<PathBuf> {
        let id = self.umad_id(ca, port)?;
        Ok(self.paths.dev_dir.join(format!("umad{id}")))
    }

    /// The `issmN` character device of a CA port (same N as its `umadN`, as libibumad), e.g.
    /// `/dev/infiniband/issm3`. Nothing is opened or checked under the device directory.
    #[doc(alias = "umad_get_issm_path")]
    pub fn issm_device_path(&self, ca: &str, port: u32) -> Result<PathBuf> {
        let id = self.umad_id(ca, port)?;
        Ok(self.paths.dev_dir.join(format!("issm{id}")))
    }

    /// The SMI/GSI device pairs, one per port GUID (libibumad HEAD's logic, without limits).
    ///
    /// The InfiniBand devices are read in name order (unreadable ones skipped). Only the first
    /// port with a non-zero GUID of each device counts. If its GUID is shared with another
    /// device (planarized), the device goes to `gsi_name` when that port is SMI-disabled, else
    /// to `smi_name`; if it is unique, the device is the GSI side and, unless SMI-disabled, the
    /// SMI side too. Pairs are in order of first appearance.
    ///
    /// As in libibumad, the preferred ports stay 0 here (the man page says otherwise); see
    /// [`Devices::smi_gsi_pair_by_ca_name`] for a pair with ports.
    #[doc(alias = "umad_get_smi_gsi_pairs")]
    pub fn smi_gsi_pairs(&self) -> Result<Vec<CaPair>> {
        Ok(pair_up(&self.read_ib_cas()?, None))
    }

    /// [`Devices::smi_gsi_pairs`] with libibumad's `max` argument applied exactly as the C
    /// function does: once `max` pairs exist, a port whose GUID has none is skipped and the next
    /// port of the same device is tried (so the result is not always a prefix of the unlimited
    /// one). For the C layer.
    #[doc(alias = "umad_get_smi_gsi_pairs")]
    pub fn smi_gsi_pairs_max(&self, max: usize) -> Result<Vec<CaPair>> {
        Ok(pair_up(&self.read_ib_cas()?, Some(max)))
    }

    /// The InfiniBand devices in name order; unreadable ones are skipped.
    fn read_ib_cas(&self) -> Result<Vec<Ca>> {
        Ok(self
            .ca_names()?
            .iter()
            .filter_map(|n| self.read_ca(n).ok())
            .collect())
    }

    /// The SMI/GSI pair to use for a device name (either side of a pair) or, with `None`, the
    /// first suitable pair, with its preferred ports filled (libibumad HEAD's logic).
    ///
    /// Pairs are tried in [`Devices::smi_gsi_pairs`] order. A pair qualifies when it has a GSI
    /// side (and an SMI side with `enforce_smi`) and, if `devname` is given, one of its names is
    /// `devname`. The device read is the GSI one when `devname` names it or when the pair has
    /// no SMI and `enforce_smi` is off, else the SMI one; a non-zero `port` must exist on it.
    /// Then (`find_preferred_ports`; "active" = state above DOWN): a device with exactly one
    /// port (highest port number 1) uses port 1; with a port (or on a switch) that port is
    /// used if it is active or `devname` was given, and the other side of a split pair gets the
    /// first active port of **the same device** (libibumad quirk, kept); with port 0 both sides
    /// get the device's first active port.
    ///
    /// Errors: [`Error::InvalidCaName`] for a bad `devname`; [`Error::NoDevice`] listing why each
    /// candidate failed — also when there is no pair at all, where libibumad returns 0 with an
    /// all-zero pair (a C layer wanting that checks [`Devices::smi_gsi_pairs`] first).
    #[doc(alias = "umad_get_smi_gsi_pair_by_ca_name")]
    pub fn smi_gsi_pair_by_ca_name(
        &self,
        devname: Option<&str>,
        port: u32,
        enforce_smi: bool,
    ) -> Result<CaPair> {
        if let Some(d) = devname {
            validate_ca_name(d)?;
        }
        pair_by_name(
            &self.smi_gsi_pairs()?,
            |name| self.read_ca(name),
            devname,
            port,
            enforce_smi,
            Some(self.paths.class_dir.clone()),
        )
    }
}

/// The SMI/GSI pairs of CAs already read — [`Devices::smi_gsi_pairs`] (`max` `None`) or
/// [`Devices::smi_gsi_pairs_max`] for devices that are not in sysfs (a simulator's), in the
/// order given.
#[doc(alias = "umad_get_smi_gsi_pairs")]
pub fn smi_gsi_pairs_of(cas: &[Ca], max: Option<usize>) -> Vec<CaPair> {
    pair_up(cas, max)
}

/// [`Devices::smi_gsi_pair_by_ca_name`] over CAs already read (in name order), for devices
/// that are not in sysfs (a simulator's).
#[doc(alias = "umad_get_smi_gsi_pair_by_ca_name")]
pub fn smi_gsi_pair_of(
    cas: &[Ca],
    devname: Option<&str>,
    port: u32,
    enforce_smi: bool,
) -> Result<CaPair> {
    if let Some(d) = devname {
        validate_ca_name(d)?;
    }
    let find = |name: &str| {
        cas.iter()
            .find(|c| c.name == name)
            .cloned()
            .ok_or_else(|| Error::NoUsablePort {
                ca: name.to_owned(),
                reason: "not among the devices given".to_owned(),
            })
    };
    pair_by_name(&pair_up(cas, None), find, devname, port, enforce_smi, None)
}

/// libibumad's `umad_get_smi_gsi_pair_by_ca_name` (HEAD) over `pairs`, reading each candidate
/// device with `read_ca`; see [`Devices::smi_gsi_pair_by_ca_name`].
fn pair_by_name(
    pairs: &[CaPair],
    read_ca: impl Fn(&str) -> Result<Ca>,
    devname: Option<&str>,
    port: u32,
    enforce_smi: bool,
    class_dir: Option<PathBuf>,
) -> Result<CaPair> {
    if pairs.is_empty() {
        return Err(Error::NoDevice {
            path: class_dir,
            reason: "no InfiniBand device with a readable port and a non-zero port GUID".to_owned(),
        });
    }
    let mut reasons = Vec::new();
    for pair in pairs {
        let Some(gsi) = pair.gsi_name.as_deref() else {
            continue;
        };
        if enforce_smi && pair.smi_name.is_none() {
            continue;
        }
        if let Some(d) = devname {
            if d != gsi && pair.smi_name.as_deref() != Some(d) {
                continue;
            }
        }
        let is_gsi = (!enforce_smi && pair.smi_name.is_none()) || devname == Some(gsi);
        let Some(target) = (if is_gsi {
            Some(gsi)
        } else {
            pair.smi_name.as_deref()
        }) else {
            continue;
        };
        let ca = match read_ca(target) {
            Ok(c) => c,
            Err(e) => {
                reasons.push(format!("{target}: {e}"));
                continue;
            }
        };
        if port != 0 && ca.port(port).is_none() {
            reasons.push(format!(
                "{target}: port {port} does not exist (ports: {})",
                port_list(&ca)
            ));
            continue;
        }
        let mut candidate = pair.clone();
        match find_preferred_ports(&mut candidate, &ca, is_gsi, port, devname) {
            Ok(()) => return Ok(candidate),
            Err(reason) => reasons.push(reason),
        }
    }
    if reasons.is_empty() {
        let what = match (devname, enforce_smi) {
            (Some(d), true) => format!("no SMI/GSI pair with an SMI device contains {d:?}"),
            (Some(d), false) => format!("no SMI/GSI pair contains {d:?}"),
            (None, true) => "no SMI/GSI pair has an SMI device".to_owned(),
            (None, false) => "no SMI/GSI pair has a GSI device".to_owned(),
        };
        reasons.push(what);
    }
    Err(Error::NoDevice {
        path: class_dir,
        reason: reasons.join("; "),
    })
}

/// Reads a port's P_Key table: the entries of `dir` whose names are all digits; each name is
/// the table index. The indices must be exactly `0..n-1` (n ≥ 1) and every value must fit 16
/// bits; anything else is an [`Error::Parse`] naming the directory or file (libibumad writes
/// out of bounds or truncates instead).
fn read_pkeys(dir: &Path) -> Result<Vec<u16>> {
    let mut names: Vec<String> = sysfs::list_dir(dir)?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    if names.is_empty() {
        return Err(sysfs::parse_error(
            dir,
            "a P_Key table (no numbered entries in the directory)",
            b"",
        ));
    }
    names.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    let contiguous = names
        .iter()
        .enumerate()
        .all(|(i, n)| canonical_number(n).is_some_and(|v| v as usize == i));
    if !contiguous {
        let mut shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
        if names.len() > shown.len() {
            shown.push("…");
        }
        let text = format!("entries {}", shown.join(" "));
        return Err(sysfs::parse_error(
            dir,
            "a P_Key table with entries 0..n-1",
            text.as_bytes(),
        ));
    }
    names
        .iter()
        .map(|n| {
            let path = dir.join(n);
            let value = sysfs::read_uint(&path)?;
            u16::try_from(value).map_err(|_| {
                sysfs::parse_error(&path, "a 16-bit P_Key", value.to_string().as_bytes())
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
