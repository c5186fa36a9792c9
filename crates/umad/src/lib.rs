//! Safe access to InfiniBand user MADs: the Rust successor of libibumad.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
pub mod device;
pub mod error;
mod sys;
mod sysfs;

pub use error::{Error, Result};
