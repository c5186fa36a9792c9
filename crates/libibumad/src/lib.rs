#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![deny(unsafe_code)]

#[cfg(all(feature = "capi", not(panic = "abort"), not(test)))]
compile_error!(
    "the `capi` feature builds the C library: it needs panic = \"abort\" (use the `capi` \
     profile: cargo xtask libibumad); unwinding into C is undefined behaviour"
);

mod dev;
#[allow(unsafe_code)] // the boundary: raw pointers become references here, once
mod ffi;
mod sim;

pub mod devices;
pub mod global;
pub mod header;
pub mod port;
pub mod register;
pub mod strings;
pub mod types;

pub use devices::*;
pub use global::*;
pub use header::*;
pub use port::*;
pub use register::*;
pub use strings::*;
pub use types::*;
