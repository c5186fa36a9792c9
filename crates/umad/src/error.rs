//! The one error type of this crate.
//!
//! Every variant says which device, port or agent it concerns and carries the OS error where
//! there is one, so a message can be acted on without a debugger. [`Error::errno`] recovers the
//! errno for the C ABI layer.

use std::io;
use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `umad`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CA name that could escape the sysfs directory (`/`, `..`, NUL, empty) was refused
    /// before any path was built.
    #[error("invalid CA name {name:?}: {reason}")]
    InvalidCaName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// No InfiniBand CA exists at all (or none is usable for the request).
    #[error("no InfiniBand device found{}: {reason}", path.as_ref().map(|p| format!(" under {}", p.display())).unwrap_or_default())]
    NoDevice {
        /// The sysfs directory that was searched, if any.
        path: Option<PathBuf>,
        /// What was found instead.
        reason: String,
    },
    /// The named CA does not exist.
    #[error("no InfiniBand CA named {ca:?} (nothing at {})", path.display())]
    NoSuchCa {
        /// The CA name.
        ca: String,
        /// The sysfs directory that was looked for.
        path: PathBuf,
    },
    /// The CA exists but has no usable port matching the request.
    #[error("no InfiniBand port on {ca}: {reason}")]
    NoUsablePort {
        /// The CA name.
        ca: String,
        /// Why each candidate was rejected, e.g. "port 1 link layer is Ethernet".
        reason: String,
    },
    /// A sysfs file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Sysfs {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A sysfs file held something that is not in the kernel's format.
    #[error("cannot parse {what} from {} (content {text:?})", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was expected, e.g. "a GUID".
        what: &'static str,
        /// What the file held (trimmed).
        text: String,
    },
    /// `/sys/class/infiniband_mad/abi_version` is missing: `ib_umad` is not loaded.
    #[error("cannot read {} ({source}): is the ib_umad kernel module loaded? (modprobe ib_umad)", path.display())]
    AbiUnavailable {
        /// The abi_version file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The kernel speaks a user-MAD ABI older than version 5.
    #[error("kernel user-MAD ABI version {found} (from {}) is older than 5, the oldest supported", path.display())]
    AbiTooOld {
        /// The version found.
        found: u32,
        /// The abi_version file.
        path: PathBuf,
    },
    /// No `umadN` device in sysfs belongs to this CA and port.
    #[error("no umad device for {ca} port {port} under {} (is ib_umad loaded?)", path.display())]
    NoUmadDevice {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The sysfs directory searched.
        path: PathBuf,
    },
    /// Opening a device file failed.
    #[error("cannot open {} for {ca} port {port}: {source}", path.display())]
    Open {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The device file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The port already holds the maximum number of agents.
    #[error("{ca} port {port}: agent table full: a umad port holds at most {max} agents; unregister one first")]
    TooManyAgents {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The limit (32 for the kernel).
        max: usize,
    },
    /// Registering an agent failed.
    #[error("{ca} port {port}: cannot register an agent for class {class:#04x} version {version}: {source}")]
    Register {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// Management class.
        class: u8,
        /// Class version.
        version: u8,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// An agent id that this port did not hand out (or already unregistered).
    #[error("{ca} port {port}: agent {agent} is not registered on this port")]
    BadAgent {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The agent id.
        agent: u32,
    },
    /// A request that cannot be made as asked (the message says what to change).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Sending a MAD failed.
    #[error("{ca} port {port}: send by agent {agent} failed: {source}")]
    Send {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The sending agent.
        agent: u32,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Receiving a MAD failed.
    #[error("{ca} port {port}: receive failed: {source}")]
    Recv {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The next message is longer than the room the caller offered; it stays queued, so
    /// receive again with at least `needed` bytes (the kernel's `ENOSPC` contract).
    #[error("{ca} port {port}: the next MAD has {needed} bytes, more than the {capacity} offered: receive again with a buffer of at least {needed} bytes")]
    TooLong {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// The MAD's length.
        needed: usize,
        /// The room that was offered.
        capacity: usize,
    },
    /// The port stopped working (its carrier failed, e.g. the simulator went away); every
    /// call after it reports the same.
    #[error("{ca} port {port}: the port stopped working: {reason}")]
    Failed {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// What failed, as first reported.
        reason: String,
        /// The errno of that failure.
        errno: i32,
    },
    /// A request got no response within its whole timeout and retry budget (the typed form of
    /// a report with status `ETIMEDOUT`).
    #[error("{ca} port {port}: {what}: no response after {attempts} attempt(s) of {timeout_ms} ms each: check that the destination exists and is reachable, or raise the timeout/retries")]
    TimedOut {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// What was asked and of whom (e.g. `Get NodeInfo via DR 0,1`).
        what: String,
        /// How many times it was sent.
        attempts: u32,
        /// The timeout of each attempt.
        timeout_ms: u64,
    },
    /// The response came back with a non-zero MAD status (e.g. an attribute the destination
    /// does not support, or an SA query with no matching records).
    #[error("{ca} port {port}: {what}: the response has MAD status {status:#06x} ({text})")]
    MadStatus {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// What was asked and of whom.
        what: String,
        /// The MAD status word.
        status: u16,
        /// The status as text (class-specific where the class defines it).
        text: String,
    },
    /// A response arrived but could not be used (too short, wrong attribute, a malformed
    /// record): the destination answered something other than what was asked.
    #[error("{ca} port {port}: {what}: unusable response: {reason}")]
    BadResponse {
        /// The CA name.
        ca: String,
        /// The port number.
        port: u32,
        /// What was asked and of whom.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Talking to an ibsim simulator failed.
    #[error("ibsim {socket:?}: {reason}")]
    Ibsim {
        /// The ibsim socket base name (`IBSIM_SOCKNAME`).
        socket: String,
        /// What went wrong and what to do.
        reason: String,
        /// The OS error, if any.
        #[source]
        source: Option<io::Error>,
    },
    /// [`crate::disconnect_on_signals`] could not set up its SIGHUP/SIGINT/SIGTERM handling (the
    /// process then dies of those signals as before, without disconnecting from ibsim).
    #[error(
        "cannot arrange for ibsim connections to be closed on SIGHUP/SIGINT/SIGTERM: {source}"
    )]
    Signals {
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The errno this error corresponds to, for callers that speak C conventions.
    pub fn errno(&self) -> i32 {
        let io = match self {
            Error::Sysfs { source, .. }
            | Error::AbiUnavailable { source, .. }
            | Error::Open { source, .. }
            | Error::Register { source, .. }
            | Error::Send { source, .. }
            | Error::Recv { source, .. }
            | Error::Signals { source } => Some(source),
            Error::Ibsim { source, .. } => source.as_ref(),
            _ => None,
        };
        if let Some(code) = io.and_then(|e| e.raw_os_error()) {
            return code;
        }
        if let Error::Failed { errno, .. } = self {
            return *errno;
        }
        match self {
            Error::InvalidCaName { .. } | Error::InvalidArgument(_) | Error::Parse { .. } => {
                libc::EINVAL
            }
            Error::NoDevice { .. } | Error::NoUsablePort { .. } => libc::ENODEV,
            Error::NoSuchCa { .. } => libc::ENOENT,
            Error::AbiTooOld { .. } | Error::AbiUnavailable { .. } => libc::EOPNOTSUPP,
            Error::NoUmadDevice { .. } | Error::BadAgent { .. } => libc::EINVAL,
            Error::TooManyAgents { .. } => libc::ENOMEM,
            Error::TooLong { .. } => libc::ENOSPC,
            Error::TimedOut { .. } => libc::ETIMEDOUT,
            _ => libc::EIO,
        }
    }
}
