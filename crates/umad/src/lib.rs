#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod carrier;
pub mod device;
pub mod error;
#[cfg(test)]
mod fake;
mod hash;
pub mod layer;
pub mod port;
pub mod raw;
// The kernel transport on a real kernel (the guest of `cargo xtask realkernel`); test-only,
// so it lives in a `tests.rs` like the other fixture code.
#[cfg(test)]
#[path = "realkernel/tests.rs"]
mod realkernel;
pub mod rpc;
mod sys;
pub mod transport;
pub mod wire;

pub use wire::{abi, addr, agent};

pub use addr::{Grh, MadAddr};
pub use agent::{AgentId, AgentSpec, MethodMask};
pub use carrier::ibsim::IbsimOptions;
pub use carrier::sim::SimOptions;
pub use carrier::Simulated;
pub use error::{Error, Result};
pub use port::Port;
pub use transport::{Issm, Received, Transport, TransportKind};

/// Makes SIGHUP, SIGINT and SIGTERM disconnect every native ibsim connection of the process before it
/// dies of the signal, so that its ibsim client slots are free again (ibsim has ten, and
/// frees one only when its client says goodbye: a program killed with its connections open
/// leaks them until ibsim restarts).
///
/// On either signal a thread of this crate sends each open connection's DISCONNECT (what
/// dropping the port sends; at most 100 ms each if ibsim does not confirm), refuses new
/// connections, then restores the signal's default action and raises it again: the process
/// still ends "killed by signal" (exit status 128 + n in a shell), as without this and as C's
/// tools end. A second signal meanwhile kills at once; a signal the process ignores
/// (`nohup`, a background job) stays ignored.
///
/// For programs that own their signals: call it once, first thing in `main` (later calls do
/// nothing). It replaces any SIGHUP/SIGINT/SIGTERM handler installed before, and one installed
/// after replaces it. A library must not call it for its host program (the C drop-in
/// `libibumad.so.3` does not: C programs handle their signals themselves).
///
/// # Errors
/// [`Error::Signals`] if the pipe, thread or handlers cannot be set up; the signals then act
/// as before.
pub fn disconnect_on_signals() -> Result<()> {
    sys::signals::on_termination(carrier::ibsim::disconnect_all)
        .map_err(|source| Error::Signals { source })
}
