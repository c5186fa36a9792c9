#![doc = include_str!("../README.md")]

pub mod differential;

pub use differential::*;

// BEGIN drop-in helpers: real programs on our library (tests/real_programs.rs, tests/valgrind.rs)
pub mod drop_in;
// END drop-in helpers

// The topology `ibnetdiscover` prints, the SA tables opensm derives from it and `saquery`'s
// dumps of them (tests/ibsim_native.rs).
pub mod fabric;
