//! What an operation costs, as the benchmarks and the allocation test measure it: CPU time of
//! this process or of its reaped children (`getrusage`), and heap allocations counted by a
//! [`CountingAlloc`] global allocator. The one copy for the workspace (`xtask`'s benchmarks and
//! `crates/umad/tests/alloc_per_mad.rs` use it).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// User + system CPU time this process (all its threads) has used so far
/// (`getrusage(RUSAGE_SELF)`); `None` if the call failed.
pub fn self_cpu() -> Option<Duration> {
    rusage(libc::RUSAGE_SELF)
}

/// User + system CPU time of this process's children that have ended and been waited for
/// (`getrusage(RUSAGE_CHILDREN)`, which includes their own waited-for descendants); `None`
/// if the call failed. The difference around one child's run ([`crate::run_with_timeout`]
/// waits for it) is that child's whole CPU time, as long as no other child ends meanwhile.
pub fn children_cpu() -> Option<Duration> {
    rusage(libc::RUSAGE_CHILDREN)
}

fn rusage(who: libc::c_int) -> Option<Duration> {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct (integers and
    // timevals only).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call, and `who` is
    // RUSAGE_SELF or RUSAGE_CHILDREN.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Allocations made through every [`CountingAlloc`] so far.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// A global allocator that is [`System`] and counts every allocation (`alloc`,
/// `alloc_zeroed` and `realloc` calls; frees are not counted) in one relaxed atomic, for
/// [`allocations`]. Install it in a binary or a test crate:
///
/// ```
/// #[global_allocator]
/// static ALLOC: ibsim_harness::CountingAlloc = ibsim_harness::CountingAlloc;
///
/// let before = ibsim_harness::allocations();
/// let v = vec![1u8; 10];
/// assert!(ibsim_harness::allocations() > before);
/// # drop(v);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

/// How many allocations every [`CountingAlloc`] of this process has made so far (0 when none
/// is installed); the difference around an operation is what it allocated, in all threads.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so it
// upholds GlobalAlloc's contract exactly as `System` does; the counter has no effect on the
// memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` (a non-zero-sized layout) is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is `System`, with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`, and the caller guarantees
        // `new_size` is valid for it.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_grow() {
        let a = self_cpu().unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(self_cpu().unwrap() >= a);
        let c = children_cpu().unwrap();
        std::process::Command::new("true").status().unwrap();
        assert!(children_cpu().unwrap() >= c);
    }
}
