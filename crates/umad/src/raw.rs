//! Descriptor-level access to the kernel's umad devices, for callers that must hand plain file
//! descriptors around — above all the libibumad C ABI, whose "port id" *is* the fd.
//!
//! These are the same libc calls [`Port`](crate::Port) uses (so interposers such as
//! umad2sim see them), without ownership tracking: the caller owns every fd it opens here and
//! closes it with [`close`]. Errors are what a C caller would see: when a call fails without
//! setting errno (umad2sim does that), the error is the errno the caller had before, exactly
//! as C reads it. Prefer [`Port`](crate::Port) in Rust code: its errors always name the real
//! cause.

use std::io;
use std::os::unix::io::RawFd;
use std::path::Path;

pub use crate::sys::c_view::close;
pub use crate::sys::c_view::{
    enable_pkey, poll_once, read, register_agent, register_agent2, unregister_agent, write,
};

/// `open(path, O_RDWR | O_NONBLOCK)` — how libibumad opens `umadN` and `issmN`. The caller
/// owns the returned descriptor.
pub fn open_device(path: &Path) -> io::Result<RawFd> {
    crate::sys::c_view::open_rw_nonblock(path)
}
