//! Helpers for the compatibility tests of our `libibumad.so.3` drop-in against the system
//! library.
//!
//! * [`differential`]: compile the C test programs of `crates/compat/c`, run each one twice
//!   (system library, then ours through `LD_LIBRARY_PATH`), verify which library answered and
//!   diff the masked transcripts (used by `tests/c_differential.rs` and `tests/abi_check.rs`).
//!   Its items are re-exported here.
//!
//! Other test files may add their own modules next to it; keep helpers generic and
//! documented.

pub mod differential;

pub use differential::*;

// BEGIN drop-in helpers: real programs on our library (tests/real_programs.rs, tests/valgrind.rs)
pub mod drop_in;
// END drop-in helpers

// The topology `ibnetdiscover` prints, the SA tables opensm derives from it and `saquery`'s
// dumps of them (tests/ibsim_native.rs).
pub mod fabric;
