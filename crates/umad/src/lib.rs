//! Safe access to InfiniBand user MADs: the Rust successor of libibumad.
//!
//! * [`device`] enumerates CAs and ports from sysfs and chooses default ports exactly as
//!   libibumad does.
//! * [`Port`] opens a port, registers agents, sends and receives MADs; the
//!   [`transport`] underneath is the kernel's `ib_umad` device or a native ibsim client.
//! * [`abi`] mirrors the kernel's user-MAD structures.
//!
//! All access to `/sys/class/infiniband*` and `/dev/infiniband` goes through the libc
//! functions `open`, `read`, `write`, `ioctl`, `poll`, `close` and `opendir`/`readdir`, so
//! interposers such as ibsim's umad2sim see it.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
pub mod addr;
pub mod agent;
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
mod sysfs;
pub mod transport;

pub use addr::{Grh, MadAddr};
pub use agent::{AgentId, AgentSpec, MethodMask};
pub use error::{Error, Result};
pub use port::Port;
pub use transport::ibsim::IbsimOptions;
pub use transport::{Issm, Received, Transport, TransportKind};

/// The crate README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
