//! Devices and ports: `umad_get_cas_names`, `umad_get_ca`, `umad_get_port`,
//! `umad_get_ca_portguids`, `umad_get_issm_path`, the device list (`IBUMAD_1.1`/`1.2`), the
//! SMI/GSI pairs (`IBUMAD_1.4`) and libibumad's default CA/port selection.
//!
//! Everything is read through [`umad::device::Devices`] (or, under `UMAD_IBSIM`, the simulated
//! CA: see `source`); this module only reapplies the C library's fixed-size limits,
//! fallbacks, messages and return codes on top of it (the `"mthca0"`/port 1 default, the
//! 10-port limit of `umad_ca_t`, the 20-byte name fields, the `umad0`…`umad191` scan range)
//! and copies results into the caller's C structures. The default CA selection is the core's
//! scan ([`umad::device::resolve_among`], [`Ca::choose_port_observed`]) with this module's
//! reader — each CA read as `umad_get_ca` reads it, so CAs the C library cannot read are
//! skipped with the same warnings — and an observer that prints libibumad's trace lines as
//! the scan reaches each step.

use core::ffi::{c_char, c_int, c_uint, CStr};
use core::ptr::null_mut;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use umad::device::{
    resolve_among, Ca, CaPair, DevFile, DeviceSource, Devices, FailedPart, NoPkeys, PortAttrs,
    PortChoice, ReadFailure, ScanObserver, SingleCa,
};
use umad::Error;

use crate::ffi::{
    dir_opens, errno, field_bytes, opt_cstr, opt_mut, opt_ref, opt_slice_mut, put_name, put_str,
    put_sysfs_text, put_text, set_errno, strerror, CBlock, Str,
};
use crate::global::{debug_level, ibwarn, trace};
use crate::sim;
use crate::types::{
    umad_ca_pair, umad_ca_t, umad_device_node, umad_port_t, UMAD_CA_MAX_PORTS, UMAD_CA_NAME_LEN,
    UMAD_MAX_PORTS,
};

/// Where the device functions find devices: sysfs ([`Devices`]), or — with `UMAD_IBSIM` set —
/// the simulated CA of the process's ibsim connection ([`umad::Port::ca`], read afresh on every
/// call), presented by [`SingleCa`] as umad2sim's fake sysfs presents it: the one CA
/// (`ibsim0`), its attach port, and `umad0` for that port.
pub(crate) fn source() -> &'static dyn DeviceSource {
    static SOURCE: OnceLock<Box<dyn DeviceSource>> = OnceLock::new();
    SOURCE
        .get_or_init(|| match sim::options() {
            Some(env) => Box::new(SingleCa::new(
                move || sim_ca(env),
                sim::UMAD_ID,
                sim::ISSM_PATH,
            )),
            None => Box::new(Devices::new()),
        })
        .as_ref()
}

/// The simulated CA, or the error reading it (`errno` left alone: C reads sysfs here, and
/// sets it from that where it matters).
fn sim_ca(env: &sim::SimEnv) -> umad::Result<Ca> {
    let saved = errno();
    let ca = sim::no_cancel(|| sim::ca(env));
    set_errno(saved);
    ca
}

/// Whether the class directory can be opened (libibumad's `scandir` succeeding), through
/// the libc `opendir` an interposer sees; one that is not sysfs always exists.
fn class_dir_opens(devices: &dyn DeviceSource) -> bool {
    if !devices.is_sysfs() {
        return true;
    }
    CString::new(devices.class_dir().as_os_str().as_bytes()).is_ok_and(|path| dir_opens(&path))
}

/// libibumad's default CA (`def_ca_name`), chosen when CAs exist but none qualifies.
const DEF_CA_NAME: &[u8] = b"mthca0";
/// libibumad's default port (`def_ca_port`).
const DEF_CA_PORT: c_int = 1;

/// The InfiniBand devices in directory order, as libibumad's `resolve_ca_name` gets them from
/// `umad_get_ca_device_list()`: `None` (with `errno` 0, or the error's) when there is none.
fn device_list_names() -> Option<Vec<String>> {
    let devices = source();
    match devices.ca_names_unsorted() {
        Ok(names) => {
            // C traces the count only when it could open the directory.
            if debug_level() != 0 && (!names.is_empty() || class_dir_opens(devices)) {
                trace!("umad_get_ca_device_list", "return {} cas", names.len());
            }
            set_errno(0);
            (!names.is_empty()).then_some(names)
        }
        Err(e) => {
            set_errno(e.errno());
            None
        }
    }
}

/// libibumad's `umad_get_ca` as `resolve_ca_port` calls it: its trace lines around `get_ca`.
fn get_ca_traced(name: &[u8]) -> Result<Ca, c_int> {
    trace!("umad_get_ca", "ca_name {}", Str(Some(name)));
    let ca = read_ca(name)?;
    trace!("umad_get_ca", "opened {}", Str(Some(name)));
    Ok(ca)
}

/// libibumad's debug lines of the default-port scan, printed as the core's scan
/// ([`umad::device::resolve_among`], [`Ca::choose_port_observed`]) reaches each step.
struct TraceScan {
    /// Whether the scan walks the CAs (`resolve_ca_name`), which announces each CA too.
    over_cas: bool,
}

impl ScanObserver for TraceScan {
    fn checking_ca(&mut self, ca: &str) {
        if self.over_cas {
            trace!("resolve_ca_name", "checking ca '{}'", ca);
        }
        trace!("resolve_ca_port", "checking ca '{}'", ca);
    }

    fn checking_port(&mut self, port: u32) {
        trace!("resolve_ca_port", "checking port {}", port);
    }

    fn found_active_port(&mut self, port: u32) {
        trace!("resolve_ca_port", "found active port {}", port);
    }

    fn found_ca(&mut self, ca: &str, choice: PortChoice) {
        let (port, kind) = match choice {
            PortChoice::Active(p) => (p, 1),
            PortChoice::Usable(p) => (p, 0),
        };
        trace!(
            "resolve_ca_name",
            "found ca {} with port {} type {}",
            ca,
            port,
            kind
        );
        if kind > 0 {
            trace!(
                "resolve_ca_name",
                "found ca {} with active port {}",
                ca,
                port
            );
        }
    }
}

/// libibumad's `resolve_ca_port` for a named CA: reads it as `umad_get_ca` does (same limits,
/// same warnings) and applies the core's per-CA port rules. A `*port` above 0 is checked,
/// anything else means "the best port". Returns 1 (active port, written to `*port`), 0
/// (usable port, written) or -1.
fn resolve_ca_port(name: &[u8], port: &mut c_int, enforce_smi: bool) -> c_int {
    let mut trace = TraceScan { over_cas: false };
    trace.checking_ca(&String::from_utf8_lossy(name));
    let Ok(ca) = get_ca_traced(name) else {
        return -1;
    };
    let want = u32::try_from(*port).unwrap_or(0);
    match ca.choose_port_observed(want, enforce_smi, &mut trace) {
        Ok(PortChoice::Active(p)) => {
            *port = p as c_int;
            1
        }
        Ok(PortChoice::Usable(p)) => {
            *port = p as c_int;
            0
        }
        Err(_) => -1,
    }
}

/// libibumad's `resolve_ca_name`: the CA (and port) an API call works on, or `None` where the
/// C function fails (callers turn that into `-ENODEV`).
///
/// `best_port` is `None` where C passes a `NULL` port pointer (`umad_get_ca`,
/// `umad_get_ca_portguids`): a given name is then taken as it is.
///
/// * name given and (`best_port` is `None` or not 0): taken unchecked, as in C;
/// * name given and port 0: the best port of that CA, or `None`;
/// * no name: `None` if there is no InfiniBand device at all; else the first CA (readdir order)
///   with an active port (or, for a given port, with that port active), else the first with a
///   usable one, else `"mthca0"` port 1.
///
/// Each CA is read as `umad_get_ca` reads it, so CAs the C library cannot read (10 or more
/// ports, unreadable P_Key tables, names of 20 bytes or more) are skipped as in C, with C's
/// warnings and trace lines.
pub(crate) fn resolve_ca_name(
    ca_in: Option<&CStr>,
    best_port: Option<c_int>,
    enforce_smi: bool,
) -> Option<(Vec<u8>, c_int)> {
    const FUNC: &str = "resolve_ca_name";
    if let Some(name) = ca_in {
        let name = name.to_bytes().to_vec();
        match best_port {
            None => return Some((name, 0)),
            Some(p) if p != 0 => return Some((name, p)),
            Some(_) => {}
        }
        let mut port = 0;
        if resolve_ca_port(&name, &mut port, enforce_smi) < 0 {
            return None;
        }
        return Some((name, port));
    }
    let names = device_list_names()?;
    let want = u32::try_from(best_port.unwrap_or(0)).unwrap_or(0);
    let found = resolve_among(
        &names,
        |name| get_ca_traced(name.as_bytes()),
        want,
        enforce_smi,
        &mut TraceScan { over_cas: true },
    );
    let phys_found = match found {
        Ok((name, PortChoice::Active(p))) => return Some((name.into_bytes(), p as c_int)),
        Ok((name, PortChoice::Usable(p))) => Some((name, p as c_int)),
        Err(_) => None,
    };
    let (found_name, found_port) = phys_found
        .as_ref()
        .map_or((None, 0), |(n, p)| (Some(n.as_str()), *p));
    trace!(
        FUNC,
        "phys found on {} port {}",
        Str(found_name.map(str::as_bytes)),
        found_port
    );
    if let Some(name) = found_name {
        trace!(FUNC, "phys found on {} port {}", name, found_port);
        return Some((name.as_bytes().to_vec(), found_port));
    }
    Some((DEF_CA_NAME.to_vec(), DEF_CA_PORT))
}

/// libibumad's `dev_to_umad_id`: the N of `umadN` for a CA port, looking only at
/// `umad0`…`umad191` and at names shorter than 20 bytes, as C does.
pub(crate) fn dev_to_umad_id(name: &[u8], port: c_int) -> Option<u32> {
    let found = umad_id_in_range(name, port);
    if found.is_none() {
        // What C's last failed read of a missing `umadN/ibdev` leaves.
        set_errno(libc::ENOENT);
    }
    found
}

fn umad_id_in_range(name: &[u8], port: c_int) -> Option<u32> {
    let name = std::str::from_utf8(name).ok()?;
    if name.len() >= UMAD_CA_NAME_LEN {
        return None;
    }
    let port = u32::try_from(port).ok()?;
    let id = source()
        .umad_id(name, port)
        .ok()
        .filter(|&id| id < UMAD_MAX_PORTS)?;
    trace!("dev_to_umad_id", "mapped {} {} to {}", name, port, id);
    Some(id)
}

/// The character-device path of `kind` (`"umad"`/`"issm"`) number `id`.
pub(crate) fn dev_file(kind: DevFile, id: u32) -> PathBuf {
    source().dev_file(kind, id)
}

/// libibumad's `get_ca` result for a CA: the device, or the negative errno C returns.
///
/// Like C, the directory read is that of the name cut to 19 bytes (the `ca_name` field the
/// path is built from).
fn read_ca(name: &[u8]) -> Result<Ca, c_int> {
    let name = &name[..name.len().min(UMAD_CA_NAME_LEN - 1)];
    let Ok(name_str) = std::str::from_utf8(name) else {
        set_errno(libc::ENOENT);
        return Err(-libc::ENOENT);
    };
    let devices = source();
    match devices.ca(name_str) {
        // A umad_ca_t holds ports 0..9 only: C refuses the whole CA otherwise.
        Ok(ca)
            if ca
                .ports
                .iter()
                .any(|p| p.port_num as usize >= UMAD_CA_MAX_PORTS) =>
        {
            Err(-libc::EIO)
        }
        Ok(ca) => Ok(ca),
        Err(e) => {
            let failure = devices.read_failure(name_str, &e);
            warn_no_pkeys(&failure, name);
            set_read_errno(&failure);
            Err(ca_errno(&failure))
        }
    }
}

/// Sets `errno` as C's failing `open`/`opendir` of the same file would (a parse error, which
/// C does not have, leaves it alone).
fn set_read_errno(f: &ReadFailure) {
    match (f.part, f.os_errno) {
        (FailedPart::NoSuchCa | FailedPart::NoSuchPort, _) => set_errno(libc::ENOENT),
        (_, Some(code)) => set_errno(code),
        _ => {}
    }
}

/// The negative errno C's `get_ca` returns for a failed CA read.
fn ca_errno(f: &ReadFailure) -> c_int {
    match f.part {
        // opendir of the ports directory failing is -ENOENT; anything under it is -EIO.
        FailedPart::NoSuchCa | FailedPart::PortsDir => -libc::ENOENT,
        FailedPart::Port => -libc::EIO,
        // A malformed file of the CA is C's parse failure, -EINVAL.
        FailedPart::CaFile => -f.os_errno.unwrap_or(libc::EINVAL),
        FailedPart::NoSuchPort | FailedPart::Other => -f.errno,
    }
}

/// libibumad's unconditional warning when a port has no readable P_Key entries.
fn warn_no_pkeys(f: &ReadFailure, ca: &[u8]) {
    let Some(NoPkeys { port, dir }) = &f.no_pkeys else {
        return;
    };
    let ca = &ca[..ca.len().min(UMAD_CA_NAME_LEN - 1)];
    ibwarn(
        "get_port",
        format_args!(
            "no pkeys found for {}:{} (at dir {})...",
            Str(Some(ca)),
            port,
            dir.display()
        ),
    );
}

/// Fills `dst` like libibumad's `get_port` from what the core read, all but `pkeys` (left as
/// it is): the P_Key table is copied into a `calloc` block, returned for the caller to store
/// there; on allocation failure C's warning is printed and `-EIO` returned.
fn fill_port(dst: &mut umad_port_t, ca_name: &[u8], p: &PortAttrs) -> Result<CBlock<u16>, c_int> {
    put_name(&mut dst.ca_name, ca_name);
    dst.portnum = p.port_num as c_int;
    dst.pkeys = null_mut();
    dst.lmc = p.lmc;
    dst.sm_lid = p.sm_lid;
    dst.sm_sl = p.sm_sl;
    dst.base_lid = p.base_lid;
    dst.state = p.state;
    dst.phys_state = p.phys_state;
    dst.rate = p.rate;
    // "IB" is the core's stand-in for an unreadable file, which C writes with sprintf.
    if p.link_layer == "IB" {
        put_text(&mut dst.link_layer, b"IB");
    } else {
        put_sysfs_text(&mut dst.link_layer, p.link_layer.as_bytes());
    }
    dst.capmask = p.cap_mask.to_be();
    dst.gid_prefix = p.gid_prefix.to_be();
    dst.port_guid = p.port_guid.to_be();
    let Some(pkeys) = CBlock::copy_of(&p.pkeys) else {
        ibwarn(
            "get_port",
            format_args!("get_port: calloc failed: {}", strerror(errno())),
        );
        return Err(-libc::EIO);
    };
    dst.pkeys_size = p.pkeys.len() as c_uint;
    Ok(pkeys)
}

/// What libibumad's `release_port` frees, taken out of the port: the P_Key table (`NULL` or a
/// `calloc` block, the caller's to free).
fn take_pkeys(port: &mut umad_port_t) -> *mut u16 {
    let pkeys = port.pkeys;
    port.pkeys = null_mut();
    port.pkeys_size = 0;
    pkeys
}

/// The port slots libibumad's `release_ca` frees: ports `0..=numports`, bounded by the array
/// (none for a negative `numports`).
fn released_slots(ca: &mut umad_ca_t) -> &mut [*mut umad_port_t] {
    let last = usize::try_from(ca.numports)
        .map(|n| n.min(UMAD_CA_MAX_PORTS - 1))
        .ok();
    match last {
        Some(last) => &mut ca.ports[..=last],
        None => &mut [],
    }
}

/// An optional sysfs string (`fw_ver`, `hw_rev`, `hca_type`) as C stores it: the value read
/// (an empty file too: Soft-RoCE's `fw_ver`), or for an unreadable file only the first byte
/// cleared.
fn put_optional_text<const N: usize>(dst: &mut [c_char; N], dev: &Ca, file: &str, text: &str) {
    if dev.unreadable.contains(&file) {
        put_text(dst, b"");
    } else {
        put_sysfs_text(dst, text.as_bytes());
    }
}

/// Fills `dst` like libibumad's `get_ca` (after `ca_name`, `numports` and `ports` were reset).
///
/// The ports are built in blocks owned here and handed to `dst` only once all are read; a
/// failure frees them and leaves what C's `release_ca` leaves: no port pointers, `numports` as
/// far as it got.
fn fill_ca(dst: &mut umad_ca_t, dev: &Ca) -> c_int {
    dst.node_type = dev.node_type.code();
    put_optional_text(&mut dst.fw_ver, dev, "fw_ver", &dev.fw_ver);
    put_optional_text(&mut dst.hw_ver, dev, "hw_rev", &dev.hw_ver);
    put_optional_text(&mut dst.ca_type, dev, "hca_type", &dev.ca_type);
    dst.node_guid = dev.node_guid.to_be();
    dst.system_guid = dev.system_guid.to_be();
    let mut ports: [Option<(CBlock<umad_port_t>, CBlock<u16>)>; UMAD_CA_MAX_PORTS] =
        Default::default();
    for p in &dev.ports {
        let n = p.port_num as usize;
        let Some(mut slot) = CBlock::<umad_port_t>::zeroed() else {
            return -libc::ENOMEM;
        };
        let pkeys = match fill_port(slot.get_mut(), dev.name.as_bytes(), p) {
            Ok(pkeys) => pkeys,
            Err(rc) => return rc,
        };
        slot.get_mut().pkeys = pkeys.as_ptr();
        ports[n] = Some((slot, pkeys));
        dst.numports = dst.numports.max(n as c_int);
    }
    for (out, port) in dst.ports.iter_mut().zip(ports) {
        if let Some((slot, pkeys)) = port {
            pkeys.into_raw();
            *out = slot.into_raw();
        }
    }
    0
}

/// Does nothing but trace; returns 0. (Kept for programs that call it; libibumad needs no
/// initialisation.)
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_init() -> c_int {
    trace!("umad_init", "umad_init");
    0
}

/// Does nothing but trace; returns 0.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_done() -> c_int {
    trace!("umad_done", "umad_done");
    0
}

/// Copies the names of the InfiniBand devices (node types 1–3, names shorter than 20 bytes)
/// in alphabetical order into `cas`, at most `max`; returns how many.
///
/// If the sysfs class directory cannot be read at all, copies `"mthca0"` into `cas[0]` and
/// returns 1 (libibumad's historical default); it never returns an error.
///
/// # Safety
/// `cas` is `NULL` (nothing is written) or points to `max` writable `char[20]` entries.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_cas_names(
    cas: *mut [c_char; UMAD_CA_NAME_LEN],
    max: c_int,
) -> c_int {
    trace!("umad_get_cas_names", "max {}", max);
    let cap = usize::try_from(max).unwrap_or(0);
    // SAFETY: the caller guarantees `cas` is NULL or holds `max` writable entries.
    let out = unsafe { opt_slice_mut(cas, cap) }.unwrap_or_default();
    let devices = source();
    let names = match devices.ca_names() {
        Ok(names) if !names.is_empty() || class_dir_opens(devices) => names,
        _ => {
            if let Some(first) = out.first_mut() {
                // strncpy(cas[0], "mthca0", 20): the name, then NULs to the end of the entry.
                put_str(first, DEF_CA_NAME);
            }
            trace!("umad_get_cas_names", "return 1 ca");
            return 1;
        }
    };
    let mut j = 0;
    for (slot, name) in out
        .iter_mut()
        .zip(names.iter().filter(|n| n.len() < UMAD_CA_NAME_LEN))
    {
        // strcpy: the name and its NUL; the rest of the entry is left alone.
        for (d, &b) in slot.iter_mut().zip(name.as_bytes().iter().chain(&[0])) {
            *d = b as c_char;
        }
        j += 1;
    }
    trace!("umad_get_cas_names", "return {} cas", j);
    j
}

/// Fills `portguids` with the port GUIDs (network order) of a CA — index = port number, 0 for
/// absent ports (a 1-port HCA gives 2 entries, the first 0) — and returns the count.
///
/// `ca_name` `NULL` means the default CA. Returns `-ENODEV` if there is no CA, -1 if the CA
/// cannot be read, `-ENOMEM` if `max` entries are too few, and 0 (not the count) when
/// `portguids` is `NULL`.
///
/// # Safety
/// `ca_name` is `NULL` or a C string; `portguids` is `NULL` or holds `max` writable entries.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_ca_portguids(
    ca_name: *const c_char,
    portguids: *mut u64,
    max: c_int,
) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    let name_in = unsafe { opt_cstr(ca_name) };
    trace!(
        "umad_get_ca_portguids",
        "ca name {} max port guids {}",
        Str::c(name_in),
        max
    );
    let Some((found, _)) = resolve_ca_name(name_in, None, false) else {
        return -libc::ENODEV;
    };
    let Ok(ca) = get_ca_traced(&found) else {
        return -1;
    };
    let mut ports = 0;
    if !portguids.is_null() {
        let count = ca.num_ports() as usize + 1;
        if usize::try_from(max).map_or(true, |m| count > m) {
            return -libc::ENOMEM;
        }
        // SAFETY: non-NULL, and the caller guarantees `max` ≥ `count` writable entries.
        let Some(out) = (unsafe { opt_slice_mut(portguids, count) }) else {
            return -libc::ENOMEM;
        };
        for (i, g) in out.iter_mut().enumerate() {
            *g = ca.port(i as u32).map_or(0, |p| p.port_guid.to_be());
        }
        ports = count as c_int;
    }
    trace!(
        "umad_get_ca_portguids",
        "{}: {} ports",
        Str(Some(&found)),
        ports
    );
    ports
}

/// Reads a CA and all its ports into `ca` (ports and P_Key tables are allocated; release them
/// with [`umad_release_ca`]).
///
/// `ca_name` `NULL` means the default CA. Returns 0, `-ENODEV` if there is no CA, or the
/// negative errno of the failure (`-ENOENT` for a missing CA, `-EIO` for an unreadable port
/// or a CA with port numbers ≥ 10, `-ENOMEM`, `-EINVAL`).
///
/// # Safety
/// `ca_name` is `NULL` or a C string; `ca` is `NULL` (then `-EINVAL` after the name was
/// resolved) or points to a writable `umad_ca_t`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_ca(ca_name: *const c_char, ca: *mut umad_ca_t) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    let name_in = unsafe { opt_cstr(ca_name) };
    trace!("umad_get_ca", "ca_name {}", Str::c(name_in));
    let Some((found, _)) = resolve_ca_name(name_in, None, false) else {
        return -libc::ENODEV;
    };
    // SAFETY: the caller guarantees `ca` is NULL or a writable umad_ca_t.
    let Some(out) = (unsafe { opt_mut(ca) }) else {
        return -libc::EINVAL;
    };
    out.numports = 0;
    out.ports = [null_mut(); UMAD_CA_MAX_PORTS];
    put_name(&mut out.ca_name, &found);
    let dev = match read_ca(&found) {
        Ok(dev) => dev,
        Err(rc) => return rc,
    };
    let rc = fill_ca(out, &dev);
    if rc < 0 {
        return rc;
    }
    trace!("umad_get_ca", "opened {}", Str(Some(&found)));
    0
}

/// Frees the ports a successful [`umad_get_ca`] allocated and clears the pointers; returns 0,
/// or `-ENODEV` for a `NULL` `ca`.
///
/// # Safety
/// `ca` is `NULL` or points to a `umad_ca_t` filled by `umad_get_ca` (or zeroed); its port
/// pointers are not used afterwards.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_release_ca(ca: *mut umad_ca_t) -> c_int {
    // SAFETY: the caller guarantees `ca` is NULL or a valid umad_ca_t.
    let Some(ca) = (unsafe { opt_mut(ca) }) else {
        trace!("umad_release_ca", "ca_name {}", Str(None));
        return -libc::ENODEV;
    };
    let name = field_bytes(&ca.ca_name);
    trace!("umad_release_ca", "ca_name {}", Str(Some(&name)));
    for slot in released_slots(ca) {
        // SAFETY: a non-NULL entry is a calloc'd umad_port_t owned by this CA (from
        // `umad_get_ca`), not referenced elsewhere.
        if let Some(port) = unsafe { opt_mut(*slot) } {
            // SAFETY: `pkeys` is NULL or a calloc block owned by this port, freed once.
            unsafe { libc::free(take_pkeys(port).cast()) };
            // SAFETY: the port came from calloc and is freed exactly once (the slot is cleared).
            unsafe { libc::free((*slot).cast()) };
            *slot = null_mut();
        }
    }
    trace!("umad_release_ca", "releasing {}", Str(Some(&name)));
    0
}

/// Reads one port into `port` (its P_Key table is allocated; release it with
/// [`umad_release_port`]).
///
/// The CA and port are chosen as for [`umad_open_port`](crate::umad_open_port): `NULL`/0 mean
/// "the default". Returns 0, `-ENODEV` if nothing qualifies, `-EIO` if the port cannot be read.
///
/// # Safety
/// `ca_name` is `NULL` or a C string; `port` is `NULL` (then `-EINVAL` after the name was
/// resolved) or points to a writable `umad_port_t`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_port(
    ca_name: *const c_char,
    portnum: c_int,
    port: *mut umad_port_t,
) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    let name_in = unsafe { opt_cstr(ca_name) };
    trace!(
        "umad_get_port",
        "ca_name {} portnum {}",
        Str::c(name_in),
        portnum
    );
    let Some((found, portnum)) = resolve_ca_name(name_in, Some(portnum), false) else {
        return -libc::ENODEV;
    };
    // SAFETY: the caller guarantees `port` is NULL or a writable umad_port_t.
    let Some(out) = (unsafe { opt_mut(port) }) else {
        return -libc::EINVAL;
    };
    put_name(&mut out.ca_name, &found);
    out.portnum = portnum;
    out.pkeys = null_mut();
    let (Ok(name), Ok(num)) = (std::str::from_utf8(&found), u32::try_from(portnum)) else {
        return -libc::EIO;
    };
    let devices = source();
    match devices.port(name, num) {
        Ok(p) => match fill_port(out, &found, &p) {
            Ok(pkeys) => {
                out.pkeys = pkeys.into_raw();
                0
            }
            Err(rc) => rc,
        },
        Err(e) => {
            let failure = devices.read_failure(name, &e);
            warn_no_pkeys(&failure, &found);
            set_read_errno(&failure);
            -libc::EIO
        }
    }
}

/// Frees the P_Key table of a port filled by [`umad_get_port`]; returns 0, or `-ENODEV` for a
/// `NULL` `port`.
///
/// # Safety
/// `port` is `NULL` or points to a `umad_port_t` filled by `umad_get_port` (or zeroed).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_release_port(port: *mut umad_port_t) -> c_int {
    // SAFETY: the caller guarantees `port` is NULL or a valid umad_port_t.
    let Some(port) = (unsafe { opt_mut(port) }) else {
        trace!("umad_release_port", "port {}:0", Str(None));
        return -libc::ENODEV;
    };
    let name = field_bytes(&port.ca_name);
    trace!(
        "umad_release_port",
        "port {}:{}",
        Str(Some(&name)),
        port.portnum
    );
    // SAFETY: `pkeys` is NULL or a calloc block from `umad_get_port` (or the C library's
    // equivalent), owned by this port.
    unsafe { libc::free(take_pkeys(port).cast()) };
    trace!(
        "umad_release_port",
        "releasing {}:{}",
        Str(Some(&name)),
        port.portnum
    );
    0
}

/// Writes the path of the `issmN` device of a port (`/dev/infiniband/issmN`) into `path`,
/// truncated to `max` bytes like `snprintf`. Nothing is opened. Returns 0, `-ENODEV` if no CA
/// qualifies, `-EINVAL` if the port has no umad device.
///
/// # Safety
/// `ca_name` is `NULL` or a C string; `path` is `NULL` (nothing is written) or holds `max`
/// writable bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_issm_path(
    ca_name: *const c_char,
    portnum: c_int,
    path: *mut c_char,
    max: c_int,
) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    let name_in = unsafe { opt_cstr(ca_name) };
    trace!(
        "umad_get_issm_path",
        "ca {} port {}",
        Str::c(name_in),
        portnum
    );
    let Some((found, portnum)) = resolve_ca_name(name_in, Some(portnum), false) else {
        return -libc::ENODEV;
    };
    let Some(id) = dev_to_umad_id(&found, portnum) else {
        return -libc::EINVAL;
    };
    let path_text = dev_file(DevFile::Issm, id);
    let text = path_text.as_os_str().as_bytes();
    let cap = usize::try_from(max).unwrap_or(0);
    // SAFETY: the caller guarantees `path` is NULL or holds `max` writable bytes.
    if let Some(buf) = unsafe { opt_slice_mut(path, cap) } {
        if let Some((last, body)) = buf.split_last_mut() {
            let n = text.len().min(body.len());
            for (d, &b) in body.iter_mut().zip(&text[..n]) {
                *d = b as c_char;
            }
            if n < body.len() {
                body[n] = 0;
            } else {
                *last = 0;
            }
        }
    }
    0
}

/// Lists the InfiniBand devices (node types 1–3) in directory order, one `calloc` block per
/// node with the name stored after the node. Free the list with
/// [`umad_free_ca_device_list`].
///
/// Returns `NULL` with `errno` 0 when there is no device (also when the sysfs directory does
/// not exist), `NULL` with `errno` set on failure; on success `errno` is 0.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_ca_device_list() -> *mut umad_device_node {
    let devices = source();
    let names = match devices.ca_names_unsorted() {
        Ok(names) => names,
        Err(e) => {
            set_errno(e.errno());
            return null_mut();
        }
    };
    let mut head: *mut umad_device_node = null_mut();
    let mut tail: *mut umad_device_node = null_mut();
    for name in &names {
        // The node and its name in one calloc block, as C frees it.
        let Some((mut block, ca_name)) = CBlock::zeroed_with_text(name.as_bytes()) else {
            // SAFETY: `head` is the list built so far, from this function's calloc blocks.
            unsafe { umad_free_ca_device_list(head) };
            set_errno(libc::ENOMEM);
            return null_mut();
        };
        *block.get_mut() = umad_device_node {
            next: null_mut(),
            ca_name,
        };
        let node: *mut umad_device_node = block.into_raw();
        // SAFETY: `tail` is NULL or the previous node of this list, still owned here.
        match unsafe { opt_mut(tail) } {
            Some(t) => t.next = node,
            None => head = node,
        }
        tail = node;
    }
    // C traces the count only when it could open the directory.
    if debug_level() != 0 && (!names.is_empty() || class_dir_opens(devices)) {
        trace!("umad_get_ca_device_list", "return {} cas", names.len());
    }
    set_errno(0);
    head
}

/// Frees a list from [`umad_get_ca_device_list`] (each node with `free()`).
///
/// # Safety
/// `head` is `NULL` or a list returned by `umad_get_ca_device_list` (possibly re-linked by
/// [`umad_sort_ca_device_list`]), not used afterwards.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_free_ca_device_list(head: *mut umad_device_node) {
    let mut node = head;
    // SAFETY: `node` is NULL or a live node of the list; its successor is read before it is
    // freed.
    while let Some(next) = unsafe { opt_ref(node) }.map(|n| n.next) {
        // SAFETY: each node is one calloc block (name included), freed exactly once.
        unsafe { libc::free(node.cast()) };
        node = next;
    }
}

/// Sorts a device list by name (`strcmp` order) and re-links it; `*head` becomes the first
/// node. `size` is the number of nodes (0: count them). Returns 0, or a **positive** errno:
/// `EINVAL` if the list does not have exactly `size` nodes, `ENOMEM`.
///
/// # Safety
/// `head` is `NULL` (then `EINVAL`) or points to the head pointer of a list from
/// [`umad_get_ca_device_list`].
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_sort_ca_device_list(
    head: *mut *mut umad_device_node,
    size: libc::size_t,
) -> c_int {
    // SAFETY: the caller guarantees `head` is NULL or a valid pointer to the list head.
    let Some(head) = (unsafe { opt_mut(head) }) else {
        return libc::EINVAL;
    };
    let mut size = size;
    if size == 0 {
        let mut node = *head;
        // SAFETY: `node` is NULL or a live node of the caller's list.
        while let Some(n) = unsafe { opt_ref(node) } {
            size += 1;
            node = n.next;
        }
    }
    if size < 2 {
        return 0;
    }
    let mut nodes: Vec<*mut umad_device_node> = Vec::new();
    if nodes.try_reserve_exact(size).is_err() {
        return libc::ENOMEM;
    }
    let mut node = *head;
    // SAFETY: `node` is NULL or a live node of the caller's list.
    while let Some(n) = unsafe { opt_ref(node) } {
        if nodes.len() == size {
            return libc::EINVAL;
        }
        nodes.push(node);
        node = n.next;
    }
    if nodes.len() != size {
        return libc::EINVAL;
    }
    // SAFETY: every node is live and its `ca_name` is NULL or a C string (the list's contract).
    let name = |n: &*mut umad_device_node| unsafe { opt_ref(*n).and_then(|n| opt_cstr(n.ca_name)) };
    nodes.sort_by(|a, b| name(a).cmp(&name(b)));
    for pair in nodes.windows(2) {
        // SAFETY: every node is live and owned by the list being re-linked.
        if let Some(n) = unsafe { opt_mut(pair[0]) } {
            n.next = pair[1];
        }
    }
    if let (Some(&first), Some(&last)) = (nodes.first(), nodes.last()) {
        // SAFETY: as above.
        if let Some(n) = unsafe { opt_mut(last) } {
            n.next = null_mut();
        }
        *head = first;
    }
    0
}

/// A pair as the C functions can report it: libibumad only ever sees devices whose names
/// are shorter than 20 bytes (`umad_get_cas_names`), so a longer name is dropped from its side
/// rather than truncated into another device's name. `None` if no name is left.
fn c_visible_pair(p: &CaPair) -> Option<CaPair> {
    let visible = |n: &Option<String>| n.clone().filter(|n| n.len() < UMAD_CA_NAME_LEN);
    let pair = CaPair {
        smi_name: visible(&p.smi_name),
        gsi_name: visible(&p.gsi_name),
        ..p.clone()
    };
    (pair.smi_name.is_some() || pair.gsi_name.is_some()).then_some(pair)
}

/// The SMI/GSI pairs of [`Devices::smi_gsi_pairs_max`] the C functions report.
fn c_visible_pairs(devices: &dyn DeviceSource, max: usize) -> Vec<CaPair> {
    devices
        .smi_gsi_pairs_max(max)
        .unwrap_or_default()
        .iter()
        .filter_map(c_visible_pair)
        .collect()
}

fn put_pair_name(dst: &mut [c_char; UMAD_CA_NAME_LEN], name: Option<&str>) {
    put_str(dst, name.unwrap_or("").as_bytes());
}

fn fill_pair(dst: &mut umad_ca_pair, p: &CaPair) {
    put_pair_name(&mut dst.smi_name, p.smi_name.as_deref());
    dst.smi_preferred_port = p.smi_preferred_port;
    put_pair_name(&mut dst.gsi_name, p.gsi_name.as_deref());
    dst.gsi_preferred_port = p.gsi_preferred_port;
}

/// Fills `cas` with up to `max` SMI/GSI device pairs, one per port GUID (for planarized HCAs,
/// whose SMI and GSI are separate devices; on ordinary HCAs both names are the same device),
/// and returns how many. The preferred ports stay 0, as in libibumad. The whole array is zeroed
/// first. Returns -1 if `cas` is `NULL` while `max` is not 0.
///
/// # Safety
/// `cas` is `NULL` or holds `max` writable `struct umad_ca_pair`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_smi_gsi_pairs(
    cas: *mut umad_ca_pair,
    max: libc::size_t,
) -> c_int {
    let out: &mut [umad_ca_pair] = if max == 0 {
        &mut []
    } else {
        // SAFETY: the caller guarantees `cas` is NULL or holds `max` writable pairs.
        match unsafe { opt_slice_mut(cas, max) } {
            Some(s) => s,
            None => return -1,
        }
    };
    out.fill(umad_ca_pair::default());
    let pairs = c_visible_pairs(source(), max);
    let mut n: c_int = 0;
    for (slot, pair) in out.iter_mut().zip(&pairs) {
        fill_pair(slot, pair);
        n = n.saturating_add(1);
    }
    n
}

/// Finds the SMI/GSI pair for a device (`devname`, either side of a pair; `NULL` = the first
/// suitable pair) and a port (0 = any), with its preferred ports, and copies it to `ca_pair`.
/// With `enforce_smi` the pair must have an SMI device.
///
/// Returns 0 on success — and also 0 with an all-zero pair when there is no device at all (as
/// libibumad) — `-ENODEV` (with `errno` `ENODEV`) when nothing qualifies, -1 for a `NULL`
/// `ca_pair`.
///
/// # Safety
/// `devname` is `NULL` or a C string; `ca_pair` is `NULL` or points to a writable
/// `struct umad_ca_pair`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_smi_gsi_pair_by_ca_name(
    devname: *const c_char,
    portnum: u8,
    ca_pair: *mut umad_ca_pair,
    enforce_smi: c_uint,
) -> c_int {
    // SAFETY: the caller guarantees `ca_pair` is NULL or a writable pair.
    let Some(out) = (unsafe { opt_mut(ca_pair) }) else {
        return -1;
    };
    *out = umad_ca_pair::default();
    let devices = source();
    if c_visible_pairs(devices, UMAD_MAX_PORTS as usize).is_empty() {
        return 0;
    }
    // SAFETY: the caller guarantees `devname` is NULL or a C string.
    let devname = unsafe { opt_cstr(devname) };
    let enforce_smi = enforce_smi != 0;
    let found = match devname.map(CStr::to_str) {
        None => devices.smi_gsi_pair_by_ca_name(None, u32::from(portnum), enforce_smi),
        Some(Ok(name)) => {
            devices.smi_gsi_pair_by_ca_name(Some(name), u32::from(portnum), enforce_smi)
        }
        Some(Err(_)) => Err(Error::InvalidArgument("device name is not UTF-8".into())),
    };
    let usable = found
        .ok()
        .as_ref()
        .and_then(c_visible_pair)
        .filter(|p| p.gsi_name.is_some() && (!enforce_smi || p.smi_name.is_some()));
    match usable {
        Some(pair) => {
            fill_pair(out, &pair);
            0
        }
        None => {
            set_errno(libc::ENODEV);
            -libc::ENODEV
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;
    use core::mem::size_of;

    /// A device list built by hand in the C layout.
    fn list(names: &[&str]) -> *mut umad_device_node {
        let mut head = null_mut();
        for name in names.iter().rev() {
            let c = CString::new(*name).unwrap();
            let n = size_of::<umad_device_node>();
            // SAFETY: calloc; the block holds the node and the name with its NUL.
            let node = unsafe { libc::calloc(1, n + c.as_bytes_with_nul().len()) }
                .cast::<umad_device_node>();
            assert!(!node.is_null());
            // SAFETY: the block is large enough for the node followed by the name.
            unsafe {
                let text = node.cast::<u8>().add(n);
                core::ptr::copy_nonoverlapping(
                    c.as_ptr().cast::<u8>(),
                    text,
                    c.as_bytes_with_nul().len(),
                );
                node.write(umad_device_node {
                    next: head,
                    ca_name: text.cast(),
                });
            }
            head = node;
        }
        head
    }

    fn names(mut node: *mut umad_device_node) -> Vec<String> {
        let mut v = Vec::new();
        while !node.is_null() {
            // SAFETY: nodes from `list`, alive until freed by the test.
            unsafe {
                v.push(CStr::from_ptr((*node).ca_name).to_str().unwrap().to_owned());
                node = (*node).next;
            }
        }
        v
    }

    #[test]
    fn sort_relinks_by_name() {
        let mut head = list(&["mlx5_1", "hfi1_0", "mlx5_0", "mlx4_0"]);
        // SAFETY: `head` is a valid list head.
        assert_eq!(unsafe { umad_sort_ca_device_list(&mut head, 0) }, 0);
        assert_eq!(names(head), ["hfi1_0", "mlx4_0", "mlx5_0", "mlx5_1"]);
        // SAFETY: as above.
        assert_eq!(unsafe { umad_sort_ca_device_list(&mut head, 4) }, 0);
        // SAFETY: the list is not used afterwards.
        unsafe { umad_free_ca_device_list(head) };
    }

    #[test]
    fn sort_size_mismatch_is_einval_and_untouched() {
        let mut head = list(&["b", "a", "c"]);
        // SAFETY: `head` is a valid list head.
        unsafe {
            assert_eq!(umad_sort_ca_device_list(&mut head, 2), libc::EINVAL);
            assert_eq!(umad_sort_ca_device_list(&mut head, 4), libc::EINVAL);
            assert_eq!(umad_sort_ca_device_list(&mut head, 1), 0);
        }
        assert_eq!(names(head), ["b", "a", "c"]);
        // SAFETY: NULL head pointer is refused; empty list is fine.
        unsafe {
            assert_eq!(
                umad_sort_ca_device_list(core::ptr::null_mut(), 0),
                libc::EINVAL
            );
            let mut empty = null_mut();
            assert_eq!(umad_sort_ca_device_list(&mut empty, 0), 0);
            umad_free_ca_device_list(head);
            umad_free_ca_device_list(null_mut());
        }
    }

    #[test]
    fn fill_ca_hands_the_ports_over_and_release_frees_them() {
        let port = |n: u32| PortAttrs {
            ca_name: "ibsim0".into(),
            port_num: n,
            base_lid: n,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            state: 4,
            phys_state: 5,
            rate: 10,
            cap_mask: 0,
            gid_prefix: 0,
            port_guid: 0x20 + u64::from(n),
            pkeys: vec![0xffff, 0x8001],
            link_layer: "InfiniBand".into(),
        };
        let dev = Ca {
            name: "ibsim0".into(),
            node_type: umad::device::NodeType::Ca,
            fw_ver: String::new(),
            hw_ver: String::new(),
            ca_type: String::new(),
            node_guid: 0x10,
            system_guid: 0x10,
            ports: vec![port(1), port(3)],
            unreadable: Vec::new(),
        };
        // SAFETY: all-zero is a valid umad_ca_t.
        let mut ca: umad_ca_t = unsafe { core::mem::zeroed() };
        assert_eq!(fill_ca(&mut ca, &dev), 0);
        assert_eq!(ca.numports, 3);
        assert!(ca.ports[0].is_null() && ca.ports[2].is_null());
        // SAFETY: filled by fill_ca: a live calloc'd port with a 2-entry P_Key table.
        let (p3, pkeys) = unsafe {
            let p = &*ca.ports[3];
            (p, core::slice::from_raw_parts(p.pkeys, 2))
        };
        assert_eq!((p3.portnum, p3.pkeys_size), (3, 2));
        assert_eq!(pkeys, [0xffff, 0x8001]);
        assert_eq!(u64::from_be(p3.port_guid), 0x23);
        // SAFETY: `ca` was filled by fill_ca.
        assert_eq!(unsafe { umad_release_ca(&mut ca) }, 0);
        assert!(ca.ports.iter().all(|p| p.is_null()));
    }

    #[test]
    fn release_accepts_null_and_clamps_numports() {
        // SAFETY: NULL is refused.
        let (rc_ca, rc_port) = unsafe {
            (
                umad_release_ca(core::ptr::null_mut()),
                umad_release_port(core::ptr::null_mut()),
            )
        };
        assert_eq!((rc_ca, rc_port), (-libc::ENODEV, -libc::ENODEV));
        // SAFETY: all-zero is a valid umad_ca_t.
        let mut ca: umad_ca_t = unsafe { core::mem::zeroed() };
        ca.numports = 1000;
        // SAFETY: `ca` is a valid, empty umad_ca_t; numports beyond the array is clamped.
        assert_eq!(unsafe { umad_release_ca(&mut ca) }, 0);
        // SAFETY: all-zero is a valid umad_port_t.
        let mut port: umad_port_t = unsafe { core::mem::zeroed() };
        port.pkeys = CBlock::copy_of(&[0xffffu16, 0x8001]).unwrap().into_raw();
        port.pkeys_size = 2;
        // SAFETY: `port.pkeys` is a calloc block owned by the port.
        assert_eq!(unsafe { umad_release_port(&mut port) }, 0);
        assert!(port.pkeys.is_null());
        assert_eq!(port.pkeys_size, 0);
    }

    #[test]
    fn pair_names_are_never_truncated() {
        let long = CaPair {
            smi_name: Some("mlx5_0".into()),
            smi_preferred_port: 1,
            gsi_name: Some("a_device_name_of_twenty".into()),
            gsi_preferred_port: 2,
        };
        let mut p = umad_ca_pair::default();
        fill_pair(&mut p, &c_visible_pair(&long).unwrap());
        assert_eq!(field_bytes(&p.smi_name), b"mlx5_0");
        assert_eq!(field_bytes(&p.gsi_name), b"");
        assert_eq!((p.smi_preferred_port, p.gsi_preferred_port), (1, 2));
        let only_long = CaPair {
            smi_name: None,
            gsi_name: Some("a_device_name_of_twenty".into()),
            ..long
        };
        assert_eq!(c_visible_pair(&only_long), None);
    }

    #[test]
    fn smi_gsi_null_arguments() {
        // SAFETY: NULL arrays are refused or, with max 0, untouched.
        unsafe {
            assert_eq!(umad_get_smi_gsi_pairs(core::ptr::null_mut(), 4), -1);
            assert_eq!(
                umad_get_smi_gsi_pair_by_ca_name(core::ptr::null(), 0, core::ptr::null_mut(), 0),
                -1
            );
        }
    }

    #[test]
    fn ca_errno_mapping() {
        use std::path::Path;
        let ports = Path::new("/sys/class/infiniband/mlx5_0/ports");
        let rc = |e: Error| {
            let f = Devices::new().read_failure("mlx5_0", &e);
            (ca_errno(&f), f.no_pkeys.is_some())
        };
        let sysfs = |p: &Path, code| Error::Sysfs {
            path: p.to_path_buf(),
            source: std::io::Error::from_raw_os_error(code),
        };
        let parse = |p: &Path, text: &str| Error::Parse {
            path: p.to_path_buf(),
            what: "a GUID",
            text: text.to_owned(),
        };
        let node_guid = Path::new("/sys/class/infiniband/mlx5_0/node_guid");
        assert_eq!(rc(sysfs(ports, libc::EACCES)), (-libc::ENOENT, false));
        assert_eq!(
            rc(sysfs(&ports.join("1/rate"), libc::EINVAL)),
            (-libc::EIO, false)
        );
        assert_eq!(rc(sysfs(node_guid, libc::EACCES)), (-libc::EACCES, false));
        assert_eq!(rc(parse(node_guid, "")), (-libc::EINVAL, false));
        assert_eq!(rc(parse(&ports.join("1/gids/0"), "")), (-libc::EIO, false));
        assert_eq!(
            rc(sysfs(&ports.join("1/pkeys"), libc::ENOENT)),
            (-libc::EIO, true)
        );
        assert_eq!(rc(parse(&ports.join("1/pkeys"), "")), (-libc::EIO, true));
        assert_eq!(
            rc(parse(&ports.join("1/pkeys"), "entries 0 2")),
            (-libc::EIO, false)
        );
        let no_ca = Error::NoSuchCa {
            ca: "mlx5_0".into(),
            path: ports.parent().unwrap().to_path_buf(),
        };
        assert_eq!(rc(no_ca), (-libc::ENOENT, false));
        let no_port = Error::NoUsablePort {
            ca: "mlx5_0".into(),
            reason: String::new(),
        };
        assert_eq!(rc(no_port), (-libc::ENODEV, false));
    }
}
