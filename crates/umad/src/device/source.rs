//! The device-backend seam: [`DeviceSource`], the queries libibumad's device functions ask of
//! "where the devices are", with two backends — sysfs ([`Devices`]) and one CA that a packet
//! carrier presents ([`SingleCa`], e.g. the simulated CA of an ibsim connection).
//!
//! Every fact about a backend is written once, in its implementation: callers hold a
//! `&dyn DeviceSource` (or a `Box`) and never ask which backend it is, except for what only
//! the caller can do ([`DeviceSource::is_sysfs`]: the C drop-in opens the class directory
//! through libc's `opendir` itself, so that interposers see it).

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use super::{
    smi_gsi_pair_of, smi_gsi_pairs_of, Ca, CaPair, Devices, PortAttrs, ReadFailure,
    DEFAULT_CLASS_DIR, DEFAULT_DEV_DIR, DEFAULT_MAD_DIR,
};
use crate::error::{Error, Result};

/// The kind of a character device of a port ([`DeviceSource::dev_file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevFile {
    /// `umadN`: MAD I/O.
    Umad,
    /// `issmN`: holding it open sets the port's IsSM capability bit.
    Issm,
}

impl DevFile {
    /// The file name's prefix: `"umad"` or `"issm"`.
    pub fn prefix(self) -> &'static str {
        match self {
            DevFile::Umad => "umad",
            DevFile::Issm => "issm",
        }
    }
}

/// Where devices come from: the queries behind libibumad's device functions
/// (`umad_get_cas_names`, `umad_get_ca`, `umad_get_port`, `umad_get_issm_path`,
/// `umad_open_port`'s device selection, the device list and the SMI/GSI pairs).
///
/// Object safe; `Send + Sync`, so one backend can serve a whole process.
pub trait DeviceSource: Send + Sync {
    /// The kernel's user-MAD ABI version (see [`Devices::abi_version`]).
    fn abi_version(&self) -> Result<u32>;

    /// The InfiniBand devices' names in name order (see [`Devices::ca_names`]).
    fn ca_names(&self) -> Result<Vec<String>>;

    /// The InfiniBand devices' names in directory order (see [`Devices::ca_names_unsorted`]).
    fn ca_names_unsorted(&self) -> Result<Vec<String>>;

    /// CA `name` and all its ports (see [`Devices::ca`]).
    fn ca(&self, name: &str) -> Result<Ca>;

    /// Port `port` of CA `ca` (see [`Devices::port`]).
    fn port(&self, ca: &str, port: u32) -> Result<PortAttrs>;

    /// The number `N` of the `umadN` device of a port (see [`Devices::umad_id`]).
    fn umad_id(&self, ca: &str, port: u32) -> Result<u32>;

    /// The path of character device `kind` number `id` (`/dev/infiniband/umad0`, …).
    fn dev_file(&self, kind: DevFile, id: u32) -> PathBuf;

    /// What `e`, the error of a [`DeviceSource::ca`] or [`DeviceSource::port`] read of CA
    /// `ca`, means (see [`Devices::read_failure`]). Nothing is read.
    fn read_failure(&self, ca: &str, e: &Error) -> ReadFailure;

    /// The device class directory the backend reports its CAs under (what error paths name).
    fn class_dir(&self) -> PathBuf;

    /// Up to `max` SMI/GSI device pairs (see [`Devices::smi_gsi_pairs_max`]).
    fn smi_gsi_pairs_max(&self, max: usize) -> Result<Vec<CaPair>>;

    /// The SMI/GSI pair of a device and port (see [`Devices::smi_gsi_pair_by_ca_name`]).
    fn smi_gsi_pair_by_ca_name(
        &self,
        devname: Option<&str>,
        port: u32,
        enforce_smi: bool,
    ) -> Result<CaPair>;

    /// Whether the devices are read from a sysfs tree (at [`DeviceSource::class_dir`]), which
    /// a caller may then inspect by other means; `false` unless a backend says otherwise.
    fn is_sysfs(&self) -> bool {
        false
    }
}

/// `dir` + `/` + `kind` + `id`, as libibumad builds the device path.
fn dev_path(dir: &std::path::Path, kind: DevFile, id: u32) -> PathBuf {
    let mut path = OsString::from(dir.as_os_str());
    path.push(format!("/{}{id}", kind.prefix()));
    PathBuf::from(path)
}

impl DeviceSource for Devices {
    fn abi_version(&self) -> Result<u32> {
        Devices::abi_version(self)
    }

    fn ca_names(&self) -> Result<Vec<String>> {
        Devices::ca_names(self)
    }

    fn ca_names_unsorted(&self) -> Result<Vec<String>> {
        Devices::ca_names_unsorted(self)
    }

    fn ca(&self, name: &str) -> Result<Ca> {
        Devices::ca(self, name)
    }

    fn port(&self, ca: &str, port: u32) -> Result<PortAttrs> {
        Devices::port(self, ca, port)
    }

    fn umad_id(&self, ca: &str, port: u32) -> Result<u32> {
        Devices::umad_id(self, ca, port)
    }

    fn dev_file(&self, kind: DevFile, id: u32) -> PathBuf {
        dev_path(&self.paths().dev_dir, kind, id)
    }

    fn read_failure(&self, ca: &str, e: &Error) -> ReadFailure {
        Devices::read_failure(self, ca, e)
    }

    fn class_dir(&self) -> PathBuf {
        self.paths().class_dir.clone()
    }

    fn smi_gsi_pairs_max(&self, max: usize) -> Result<Vec<CaPair>> {
        Devices::smi_gsi_pairs_max(self, max)
    }

    fn smi_gsi_pair_by_ca_name(
        &self,
        devname: Option<&str>,
        port: u32,
        enforce_smi: bool,
    ) -> Result<CaPair> {
        Devices::smi_gsi_pair_by_ca_name(self, devname, port, enforce_smi)
    }

    fn is_sysfs(&self) -> bool {
        true
    }
}

/// Reads the one CA of a [`SingleCa`] afresh.
type ReadCa = dyn Fn() -> Result<Ca> + Send + Sync;

/// A carrier's single CA as a device backend — what umad2sim's fake sysfs shows of an ibsim
/// node: that one CA (read afresh on every query), its first port as device `umad<id>`, the
/// default class and device directories, and a fixed path for the issm device.
///
/// Errors are those a sysfs read of the same tree would give, against the default paths:
/// another CA name is [`Error::NoSuchCa`] under [`DEFAULT_CLASS_DIR`], a port the CA does not
/// have is [`Error::NoUsablePort`], a port other than the first has no umad device
/// ([`Error::NoUmadDevice`] under [`DEFAULT_MAD_DIR`]); a failed read of the CA is returned as
/// it is. The ABI version is the current one ([`crate::abi::ABI_VERSION`]).
pub struct SingleCa {
    read: Box<ReadCa>,
    umad_id: u32,
    issm_path: PathBuf,
}

impl fmt::Debug for SingleCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleCa")
            .field("umad_id", &self.umad_id)
            .field("issm_path", &self.issm_path)
            .finish_non_exhaustive()
    }
}

impl SingleCa {
    /// The CA `read` returns (called on every query), its first port presented as `umad<umad_id>`
    /// and `issm_path` as the path of every issm device.
    pub fn new(
        read: impl Fn() -> Result<Ca> + Send + Sync + 'static,
        umad_id: u32,
        issm_path: impl Into<PathBuf>,
    ) -> SingleCa {
        SingleCa {
            read: Box::new(read),
            umad_id,
            issm_path: issm_path.into(),
        }
    }

    /// The CA, read now.
    fn read(&self) -> Result<Ca> {
        (self.read)()
    }
}

impl DeviceSource for SingleCa {
    fn abi_version(&self) -> Result<u32> {
        Ok(crate::abi::ABI_VERSION)
    }

    fn ca_names(&self) -> Result<Vec<String>> {
        self.read().map(|ca| vec![ca.name])
    }

    fn ca_names_unsorted(&self) -> Result<Vec<String>> {
        self.read().map(|ca| vec![ca.name])
    }

    fn ca(&self, name: &str) -> Result<Ca> {
        let ca = self.read()?;
        if ca.name == name {
            Ok(ca)
        } else {
            Err(Error::NoSuchCa {
                ca: name.to_owned(),
                path: self.class_dir().join(name),
            })
        }
    }

    fn port(&self, ca: &str, port: u32) -> Result<PortAttrs> {
        let dev = self.ca(ca)?;
        dev.port(port).cloned().ok_or_else(|| Error::NoUsablePort {
            ca: ca.to_owned(),
            reason: format!("port {port} does not exist"),
        })
    }

    fn umad_id(&self, ca: &str, port: u32) -> Result<u32> {
        let dev = self.ca(ca)?;
        match dev.ports.first() {
            Some(p) if p.port_num == port => Ok(self.umad_id),
            _ => Err(Error::NoUmadDevice {
                ca: ca.to_owned(),
                port,
                path: PathBuf::from(DEFAULT_MAD_DIR),
            }),
        }
    }

    fn dev_file(&self, kind: DevFile, id: u32) -> PathBuf {
        match kind {
            DevFile::Issm => self.issm_path.clone(),
            DevFile::Umad => dev_path(std::path::Path::new(DEFAULT_DEV_DIR), kind, id),
        }
    }

    /// Classified against the default sysfs paths, those [`SingleCa::class_dir`] reports.
    fn read_failure(&self, ca: &str, e: &Error) -> ReadFailure {
        Devices::new().read_failure(ca, e)
    }

    fn class_dir(&self) -> PathBuf {
        PathBuf::from(DEFAULT_CLASS_DIR)
    }

    fn smi_gsi_pairs_max(&self, max: usize) -> Result<Vec<CaPair>> {
        Ok(smi_gsi_pairs_of(&[self.read()?], Some(max)))
    }

    fn smi_gsi_pair_by_ca_name(
        &self,
        devname: Option<&str>,
        port: u32,
        enforce_smi: bool,
    ) -> Result<CaPair> {
        smi_gsi_pair_of(&[self.read()?], devname, port, enforce_smi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::NodeType;

    fn port(num: u32) -> PortAttrs {
        PortAttrs {
            ca_name: "ibsim0".into(),
            port_num: num,
            base_lid: num,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            state: 4,
            phys_state: 5,
            rate: 10,
            cap_mask: 0,
            gid_prefix: 0xfe80_0000_0000_0000,
            port_guid: 0x20 + u64::from(num),
            pkeys: vec![0xffff],
            link_layer: "IB".into(),
        }
    }

    fn ca(ports: &[u32]) -> Ca {
        Ca {
            name: "ibsim0".into(),
            node_type: NodeType::Ca,
            fw_ver: String::new(),
            hw_ver: String::new(),
            ca_type: String::new(),
            node_guid: 0x10,
            system_guid: 0x10,
            ports: ports.iter().map(|&n| port(n)).collect(),
            unreadable: Vec::new(),
        }
    }

    fn single(ports: &'static [u32]) -> SingleCa {
        SingleCa::new(move || Ok(ca(ports)), 7, "/dev/null")
    }

    #[test]
    fn presents_the_one_ca() {
        let s = single(&[1, 2]);
        assert_eq!(s.ca_names().unwrap(), ["ibsim0"]);
        assert_eq!(s.ca_names_unsorted().unwrap(), ["ibsim0"]);
        assert_eq!(s.ca("ibsim0").unwrap(), ca(&[1, 2]));
        assert_eq!(s.port("ibsim0", 2).unwrap(), port(2));
        assert_eq!(s.abi_version().unwrap(), crate::abi::ABI_VERSION);
        assert_eq!(s.class_dir(), PathBuf::from(DEFAULT_CLASS_DIR));
        assert!(!s.is_sysfs());
        assert!(Devices::new().is_sysfs());
        let pairs = s.smi_gsi_pairs_max(4).unwrap();
        assert_eq!(pairs, smi_gsi_pairs_of(&[ca(&[1, 2])], Some(4)));
        assert_eq!(
            s.smi_gsi_pair_by_ca_name(Some("ibsim0"), 1, false).unwrap(),
            smi_gsi_pair_of(&[ca(&[1, 2])], Some("ibsim0"), 1, false).unwrap()
        );
    }

    #[test]
    fn another_name_is_no_such_ca() {
        let s = single(&[1]);
        let path = PathBuf::from(DEFAULT_CLASS_DIR).join("mlx5_0");
        for e in [
            s.ca("mlx5_0").unwrap_err(),
            s.port("mlx5_0", 1).unwrap_err(),
            s.umad_id("mlx5_0", 1).unwrap_err(),
        ] {
            match e {
                Error::NoSuchCa { ca, path: p } => {
                    assert_eq!((ca.as_str(), p), ("mlx5_0", path.clone()))
                }
                other => panic!("{other:?}"),
            }
        }
        let e = s.ca("mlx5_0").unwrap_err();
        assert_eq!(
            s.read_failure("mlx5_0", &e),
            Devices::new().read_failure("mlx5_0", &e)
        );
    }

    #[test]
    fn a_missing_port_is_no_usable_port() {
        match single(&[1]).port("ibsim0", 3).unwrap_err() {
            Error::NoUsablePort { ca, reason } => {
                assert_eq!(ca, "ibsim0");
                assert_eq!(reason, "port 3 does not exist");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_the_first_port_has_a_umad_device() {
        let s = single(&[1, 2]);
        assert_eq!(s.umad_id("ibsim0", 1).unwrap(), 7);
        for p in [0, 2, 3] {
            match s.umad_id("ibsim0", p).unwrap_err() {
                Error::NoUmadDevice { ca, port, path } => {
                    assert_eq!((ca.as_str(), port), ("ibsim0", p));
                    assert_eq!(path, PathBuf::from(DEFAULT_MAD_DIR));
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(single(&[]).umad_id("ibsim0", 1).is_err());
    }

    #[test]
    fn device_paths() {
        let s = single(&[1]);
        assert_eq!(s.dev_file(DevFile::Issm, 0), PathBuf::from("/dev/null"));
        assert_eq!(s.dev_file(DevFile::Issm, 5), PathBuf::from("/dev/null"));
        assert_eq!(
            s.dev_file(DevFile::Umad, 7),
            PathBuf::from("/dev/infiniband/umad7")
        );
        let d = Devices::with_paths(super::super::Paths::with_root(std::path::Path::new("/r")));
        assert_eq!(
            d.dev_file(DevFile::Issm, 3),
            PathBuf::from("/r/dev/infiniband/issm3")
        );
        assert_eq!(
            DeviceSource::class_dir(&d),
            PathBuf::from("/r/sys/class/infiniband")
        );
    }

    #[test]
    fn read_errors_pass_through_and_the_ca_is_read_each_time() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let reads = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&reads);
        let s = SingleCa::new(
            move || {
                counter.fetch_add(1, Ordering::Relaxed);
                Err(Error::InvalidArgument("gone".into()))
            },
            0,
            "/dev/null",
        );
        let boxed: Box<dyn DeviceSource> = Box::new(s);
        assert!(matches!(boxed.ca_names(), Err(Error::InvalidArgument(_))));
        assert!(matches!(boxed.ca("ibsim0"), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            boxed.smi_gsi_pairs_max(1),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(reads.load(Ordering::Relaxed), 3);
    }
}
