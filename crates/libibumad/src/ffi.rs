//! The boundary machinery: the only places where raw pointers from C become references or
//! slices, plus `errno`, `strerror` and the C-string helpers the exported functions share.
//!
//! Every helper returns `None` for `NULL`, so each exported function decides in one place what
//! a `NULL` argument means (libibumad's documented failure value, or a safe refusal where the
//! C library would crash).
//!
//! The few libc calls the rest of the crate needs outside the exported functions (the C
//! allocator, `opendir`, the `stderr` stream, thread cancellation, `atexit`) are wrapped here
//! too, so that nothing else needs `unsafe`.

use core::ffi::{c_char, c_int, c_void, CStr};
use core::fmt;
use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::NonNull;

use crate::types::{umad_device_node, umad_port_t};

/// The calling thread's `errno`.
pub(crate) fn errno() -> c_int {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's `errno`.
pub(crate) fn set_errno(value: c_int) {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() = value }
}

/// The C library's text for an errno (`strerror`, what `%m` prints), without touching `errno`.
pub(crate) fn strerror(code: c_int) -> String {
    let mut buf = [0 as c_char; 128];
    // SAFETY: `buf` is writable for `buf.len()` bytes; the XSI strerror_r writes at most that
    // many bytes, NUL included.
    let rc = unsafe { libc::strerror_r(code, buf.as_mut_ptr(), buf.len()) };
    if rc != 0 {
        return format!("Unknown error {code}");
    }
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("Unknown error {code}"))
}

/// A C string argument: `None` for `NULL`.
///
/// # Safety
/// `p` is `NULL` or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub(crate) unsafe fn opt_cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string valid for 'a.
        Some(unsafe { CStr::from_ptr(p) })
    }
}

/// An exclusive reference from a C pointer: `None` for `NULL`.
///
/// # Safety
/// `p` is `NULL` or valid and aligned for reads and writes of a `T` holding a valid value
/// (every bit pattern is one for the plain-data `#[repr(C)]` mirrors), and not accessed by
/// anyone else during `'a`.
pub(crate) unsafe fn opt_mut<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: the caller's contract is exactly `as_mut`'s.
    unsafe { p.as_mut() }
}

/// A shared slice of `len` `T`s from a C pointer: `None` for `NULL` or for a length no
/// allocation can have.
///
/// # Safety
/// `p` is `NULL` or valid, aligned and initialised for reads of `len` consecutive `T`s, not
/// written by anyone else during `'a`.
pub(crate) unsafe fn opt_slice<'a, T>(p: *const T, len: usize) -> Option<&'a [T]> {
    if p.is_null() || !fits_isize::<T>(len) {
        return None;
    }
    // SAFETY: non-NULL, size checked against isize::MAX, and the caller guarantees validity.
    Some(unsafe { core::slice::from_raw_parts(p, len) })
}

/// An exclusive slice of `len` `T`s from a C pointer: `None` for `NULL` or for a length no
/// allocation can have.
///
/// # Safety
/// `p` is `NULL` or valid and aligned for reads and writes of `len` consecutive `T`s (every bit
/// pattern a valid `T`), not accessed by anyone else during `'a`.
pub(crate) unsafe fn opt_slice_mut<'a, T>(p: *mut T, len: usize) -> Option<&'a mut [T]> {
    if p.is_null() || !fits_isize::<T>(len) {
        return None;
    }
    // SAFETY: non-NULL, size checked against isize::MAX, and the caller guarantees validity.
    Some(unsafe { core::slice::from_raw_parts_mut(p, len) })
}

/// The bytes of a C buffer (`void *`): `None` for `NULL`.
///
/// # Safety
/// As [`opt_slice`] with `T = u8`.
pub(crate) unsafe fn opt_bytes<'a>(p: *const c_void, len: usize) -> Option<&'a [u8]> {
    // SAFETY: forwarded contract.
    unsafe { opt_slice(p.cast::<u8>(), len) }
}

/// The bytes of a writable C buffer (`void *`): `None` for `NULL`.
///
/// # Safety
/// As [`opt_slice_mut`] with `T = u8`.
pub(crate) unsafe fn opt_bytes_mut<'a>(p: *mut c_void, len: usize) -> Option<&'a mut [u8]> {
    // SAFETY: forwarded contract.
    unsafe { opt_slice_mut(p.cast::<u8>(), len) }
}

/// A shared reference from a C pointer: `None` for `NULL`.
///
/// # Safety
/// `p` is `NULL` or valid and aligned for reads of a `T` holding a valid value, not written by
/// anyone else during `'a`.
pub(crate) unsafe fn opt_ref<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: the caller's contract is exactly `as_ref`'s.
    unsafe { p.as_ref() }
}

/// Plain C data for which all-zero bytes are a valid value (what `calloc` returns).
///
/// # Safety
/// Every field is an integer, an array of them or a raw pointer (all-zero is `NULL`).
pub(crate) unsafe trait Zeroable {}

// SAFETY: integers, char arrays and a raw pointer (`pkeys`) only.
unsafe impl Zeroable for umad_port_t {}
// SAFETY: two raw pointers.
unsafe impl Zeroable for umad_device_node {}

/// One block from the C allocator (`calloc`), owned here and freed with `free` when dropped,
/// until [`CBlock::into_raw`] hands it to C (which frees it with `free`).
pub(crate) struct CBlock<T> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

impl<T> CBlock<T> {
    /// `calloc(n.max(1), sizeof(T))`: `None` when the allocation fails.
    fn calloc(n: usize) -> Option<CBlock<T>> {
        // SAFETY: calloc has no preconditions; a NULL result is handled.
        let p = unsafe { libc::calloc(n.max(1), size_of::<T>()) }.cast::<T>();
        NonNull::new(p).map(|ptr| CBlock {
            ptr,
            _owns: PhantomData,
        })
    }

    /// The block's address (it stays owned here).
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Hands the block over: the caller (C) frees it with `free`.
    pub(crate) fn into_raw(self) -> *mut T {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl<T: Copy> CBlock<T> {
    /// A copy of `src` in a fresh block of at least one element (zeroed when `src` is empty),
    /// as C callers `free()` it.
    pub(crate) fn copy_of(src: &[T]) -> Option<CBlock<T>> {
        let block = CBlock::calloc(src.len())?;
        // SAFETY: the block holds at least `src.len()` elements of T (calloc aligns for any
        // fundamental type) and is disjoint from `src`.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), block.as_ptr(), src.len()) };
        Some(block)
    }
}

impl<T: Zeroable> CBlock<T> {
    /// One zeroed `T`.
    pub(crate) fn zeroed() -> Option<CBlock<T>> {
        CBlock::calloc(1)
    }

    /// One zeroed `T` followed by a copy of `text` and a NUL, in one block
    /// (`calloc(1, sizeof(T) + len + 1)`), and the address of the copy.
    pub(crate) fn zeroed_with_text(text: &[u8]) -> Option<(CBlock<T>, *mut c_char)> {
        let size = size_of::<T>().checked_add(text.len())?.checked_add(1)?;
        // SAFETY: calloc has no preconditions; a NULL result is handled.
        let p = unsafe { libc::calloc(1, size) }.cast::<T>();
        let block = CBlock {
            ptr: NonNull::new(p)?,
            _owns: PhantomData,
        };
        // SAFETY: the block is `size` bytes long: the text fits right after the T, and the
        // byte after it stays the NUL calloc put there.
        let copy = unsafe { block.as_ptr().cast::<u8>().add(size_of::<T>()) };
        // SAFETY: `copy` has room for `text.len()` bytes (above), disjoint from `text`.
        unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), copy, text.len()) };
        Some((block, copy.cast::<c_char>()))
    }

    /// The `T` in the block.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        // SAFETY: the block holds a T (all-zero bytes are a valid one, `Zeroable`) owned
        // exclusively by `self`.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for CBlock<T> {
    fn drop(&mut self) {
        // SAFETY: a calloc block owned by `self`, freed once.
        unsafe { libc::free(self.ptr.as_ptr().cast()) };
    }
}

/// Whether `opendir(path)` succeeds (the directory is closed again), through the libc symbol
/// an interposer sees.
pub(crate) fn dir_opens(path: &CStr) -> bool {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let dir = unsafe { libc::opendir(path.as_ptr()) };
    if dir.is_null() {
        return false;
    }
    // SAFETY: `dir` is a live DIR* from opendir, closed once.
    unsafe { libc::closedir(dir) };
    true
}

/// The process id (`getpid`).
pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

extern "C" {
    /// The C library's `stderr` stream: libibumad writes with `fprintf(stderr, …)`, so output
    /// interleaves with the program's own stdio exactly as with the C library.
    static mut stderr: *mut libc::FILE;
}

/// `fputs(text, stderr)` on the C library's `stderr` stream (nothing if it is `NULL`).
pub(crate) fn fputs_stderr(text: &CStr) {
    // SAFETY: reading the address of the C library's `stderr` variable, which glibc defines.
    let stream = unsafe { core::ptr::addr_of!(stderr).read() };
    if stream.is_null() {
        return;
    }
    // SAFETY: `text` is NUL-terminated and `stream` is the live C stderr stream.
    unsafe { libc::fputs(text.as_ptr(), stream) };
}

extern "C" {
    fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    fn pthread_testcancel();
}

/// `pthread_setcancelstate(state, &old)`: sets the calling thread's cancelability state and
/// returns the previous one.
pub(crate) fn set_cancel_state(state: c_int) -> c_int {
    let mut old: c_int = 0;
    // SAFETY: pthread_setcancelstate only stores the state; `old` is a valid int.
    unsafe { pthread_setcancelstate(state, &mut old) };
    old
}

/// `pthread_testcancel()`: a cancellation point. A cancelled thread unwinds from here without
/// running destructors, so the caller's frame must hold no value with one (see
/// `sim::cancellation_point`).
pub(crate) fn testcancel() {
    // SAFETY: pthread_testcancel has no preconditions; see the caller's obligation above.
    unsafe { pthread_testcancel() };
}

/// `atexit(f)`: runs `f` at process exit.
pub(crate) fn atexit(f: extern "C" fn()) {
    // SAFETY: registers a plain `extern "C" fn()` without arguments, as atexit requires.
    unsafe { libc::atexit(f) };
}

fn fits_isize<T>(len: usize) -> bool {
    len.checked_mul(core::mem::size_of::<T>())
        .is_some_and(|n| n <= isize::MAX as usize)
}

/// `strncpy(dst, src, N)` into a fixed `char[N]` field, but always NUL-terminated: at most
/// `N - 1` bytes of `src`, then NULs to the end of the field.
pub(crate) fn put_str<const N: usize>(dst: &mut [c_char; N], src: &[u8]) {
    let n = src.len().min(N.saturating_sub(1));
    for (i, d) in dst.iter_mut().enumerate() {
        *d = if i < n { src[i] as c_char } else { 0 };
    }
}

/// libibumad's `strncpy(dst, src, N - 1)` of a CA name: at most `N - 1` bytes, NULs up to
/// byte `N - 2`; the last byte is left as it is — except that it is set to NUL when the name
/// fills the first `N - 1` bytes, where C would leave the field unterminated.
pub(crate) fn put_name<const N: usize>(dst: &mut [c_char; N], src: &[u8]) {
    let Some(limit) = N.checked_sub(1) else {
        return;
    };
    let n = src.len().min(limit);
    for (i, d) in dst[..limit].iter_mut().enumerate() {
        *d = if i < n { src[i] as c_char } else { 0 };
    }
    if n == limit {
        dst[limit] = 0;
    }
}

/// What `sprintf(dst, "%s", src)` leaves in a `char[N]` field (bounded): at most `N - 1` bytes
/// of text and a NUL; the bytes after the NUL are left as they are.
pub(crate) fn put_text<const N: usize>(dst: &mut [c_char; N], src: &[u8]) {
    let Some(limit) = N.checked_sub(1) else {
        return;
    };
    let n = src.len().min(limit);
    for (d, &b) in dst.iter_mut().zip(&src[..n]) {
        *d = b as c_char;
    }
    dst[n] = 0;
}

/// What libibumad's `sys_read_string` leaves in a `char[N]` field for a sysfs value read with
/// its trailing newline (the kernel's format): the text (at most `N - 1` bytes), a NUL where
/// the newline was and, if the whole line fitted, the NUL `read` put after it; the rest of the
/// field is left as it is.
pub(crate) fn put_sysfs_text<const N: usize>(dst: &mut [c_char; N], src: &[u8]) {
    put_text(dst, src);
    if let Some(after) = dst.get_mut(src.len() + 1) {
        *after = 0;
    }
}

/// The text of a fixed `char[N]` field: up to the first NUL, or all `N` bytes if there is none
/// (never reads past the field).
pub(crate) fn field_bytes(field: &[c_char]) -> Vec<u8> {
    field
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect()
}

/// A C string for a `%s` in a debug line: glibc prints `(null)` for `NULL`.
pub(crate) struct Str<'a>(pub Option<&'a [u8]>);

impl<'a> Str<'a> {
    /// From an optional C string.
    pub(crate) fn c(s: Option<&'a CStr>) -> Str<'a> {
        Str(s.map(CStr::to_bytes))
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("(null)"),
            Some(b) => f.write_str(&String::from_utf8_lossy(b)),
        }
    }
}

/// A pointer for a `%p` in a debug line: glibc prints `(nil)` for `NULL`, else `0x…`.
pub(crate) struct Ptr(pub *const c_void);

impl fmt::Display for Ptr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_null() {
            f.write_str("(nil)")
        } else {
            write!(f, "{:#x}", self.0 as usize)
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;

    #[test]
    fn strerror_matches_libc_text() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
        assert_eq!(strerror(libc::EBADF), "Bad file descriptor");
        assert_eq!(strerror(99999), "Unknown error 99999");
    }

    #[test]
    fn errno_round_trip() {
        set_errno(libc::ENOSPC);
        assert_eq!(errno(), libc::ENOSPC);
        set_errno(0);
        assert_eq!(errno(), 0);
    }

    #[test]
    fn put_name_is_strncpy_of_19_but_terminated() {
        let mut f = [b'x' as c_char; 6];
        put_name(&mut f, b"ab");
        assert_eq!(f.map(|c| c as u8), *b"ab\0\0\0x");
        put_name(&mut f, b"abcdefgh");
        assert_eq!(f.map(|c| c as u8), *b"abcde\0");
        let mut g = [b'x' as c_char; 6];
        put_text(&mut g, b"ab");
        assert_eq!(g.map(|c| c as u8), *b"ab\0xxx");
        put_text(&mut g, b"abcdefgh");
        assert_eq!(g.map(|c| c as u8), *b"abcde\0");
        let mut h = [b'x' as c_char; 6];
        put_sysfs_text(&mut h, b"ab");
        assert_eq!(h.map(|c| c as u8), *b"ab\0\0xx");
        put_sysfs_text(&mut h, b"abcd");
        assert_eq!(h.map(|c| c as u8), *b"abcd\0\0");
        put_sysfs_text(&mut h, b"abcdefgh");
        assert_eq!(h.map(|c| c as u8), *b"abcde\0");
    }

    #[test]
    fn put_str_terminates_and_zero_fills() {
        let mut f = [b'x' as c_char; 6];
        put_str(&mut f, b"ab");
        assert_eq!(field_bytes(&f), b"ab");
        assert!(f[2..].iter().all(|&c| c == 0));
        put_str(&mut f, b"abcdefgh");
        assert_eq!(field_bytes(&f), b"abcde");
        assert_eq!(f[5], 0);
        let unterminated = [b'z' as c_char; 4];
        assert_eq!(field_bytes(&unterminated), b"zzzz");
    }

    #[test]
    fn printf_style_arguments() {
        assert_eq!(Str(None).to_string(), "(null)");
        assert_eq!(Str::c(Some(c"mlx5_0")).to_string(), "mlx5_0");
        assert_eq!(Ptr(core::ptr::null()).to_string(), "(nil)");
        assert_eq!(Ptr(0x1234 as *const c_void).to_string(), "0x1234");
    }

    #[test]
    fn null_pointers_are_none() {
        // SAFETY: NULL is always accepted by these helpers.
        unsafe {
            assert!(opt_cstr(core::ptr::null()).is_none());
            assert!(opt_mut::<u32>(core::ptr::null_mut()).is_none());
            assert!(opt_bytes(core::ptr::null(), 4).is_none());
            assert!(opt_bytes_mut(core::ptr::null_mut(), 4).is_none());
        }
        let mut x = [0u64; 2];
        // SAFETY: a length beyond isize::MAX bytes is refused before any slice is formed.
        assert!(unsafe { opt_slice_mut(x.as_mut_ptr(), usize::MAX / 4) }.is_none());
    }
}
