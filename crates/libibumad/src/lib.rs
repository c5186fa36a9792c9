//! `libibumad.so.3` from Rust: the C ABI of rdma-core's libibumad (HEAD, symbol versions
//! `IBUMAD_1.0` … `IBUMAD_1.4`) as a thin translation onto the [`umad`] and [`mad`] crates.
//!
//! `cargo xtask libibumad` builds this crate's staticlib with the `capi` profile
//! (`panic = "abort"`) and links it into `target/libibumad/libibumad.so.3` with the version
//! script `libibumad.map`. Programs built against the C library (infiniband-diags, opensm,
//! libibmad, ibsim's umad2sim) load it unchanged. See `COMPATIBILITY.md` at the repository
//! root for how the behaviour matches libibumad and for the list of deliberate deviations.
//!
//! # API conventions (libibumad's own contract, reproduced — not a new one)
//!
//! * Every exported function is a `#[no_mangle] unsafe extern "C" fn` named like its C
//!   counterpart. Nothing else is exported from the shared object.
//! * Return conventions differ per function, exactly as in C: most return a negative errno;
//!   `umad_get_ca_portguids` returns -1 when the CA cannot be read; `umad_register` and
//!   `umad_register_oui` return `-EPERM` (== -1); `umad_unregister` returns the raw `ioctl`
//!   result (-1 with `errno`); `umad_register2` and `umad_sort_ca_device_list` return a
//!   **positive** errno; `umad_send` and `umad_recv` clear `errno` on entry.
//! * A "port id" is the file descriptor returned by `umad_open_port`.
//! * With `UMAD_IBSIM=<ibsim socket>` (and optionally `UMAD_IBSIM_NODE`) in the environment,
//!   the library runs over the user-space MAD layer instead of the kernel: the simulated CA
//!   is enumerated and ports are native ibsim connections, whose descriptors are the port ids
//!   (no LD_PRELOAD; see `COMPATIBILITY.md`, "Over the MAD layer").
//! * Memory the caller frees with `free()` or with `umad_release_*` /
//!   `umad_free_ca_device_list` (`umad_port_t::pkeys`, the ports of a `umad_ca_t`, device-list
//!   nodes) comes from the C allocator (`calloc`).
//! * The header layout (56 or 64 bytes before the MAD) is process-global state, set by each
//!   successful `umad_open_port`, as in C; ibsim's umad2sim relies on it.
//!
//! # Safety rules for callers
//!
//! Pointer arguments must be `NULL` or valid for what the C prototype implies (a `umad_ca_t *`
//! points to a writable, aligned `umad_ca_t`; a `void *umad` to a buffer of at least
//! `umad_size()` bytes plus the MAD length given; a `const char *` to a NUL-terminated string).
//! Where the C library would crash on a `NULL` or out-of-range argument this library refuses
//! the call instead; each such case is listed in `COMPATIBILITY.md`.
//!
//! # Inside
//!
//! All `unsafe` is confined to the FFI boundary of this crate: raw pointers become references
//! or slices once, through the helpers in `ffi`, and each `unsafe` block says why it is sound.
//! The crate is `#![deny(unsafe_code)]`; only the exported functions, the `ffi` module (which
//! also wraps the C allocator and the few libc calls the rest needs) and the tests, which call
//! the C ABI as C does, allow it.
//! Panics never unwind into C: the shared object is built with `panic = "abort"` (and the
//! `capi` feature refuses to compile otherwise).

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
