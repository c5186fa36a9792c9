//! The user-MAD buffer: header accessors (`umad_size`, `umad_get_mad`, `umad_set_addr`,
//! `umad_set_grh`, `umad_set_pkey`, …).
//!
//! A buffer is the kernel header (56 bytes in the old layout, 64 with `pkey_index`) followed
//! by the MAD; which layout is in use is the process-global flag of [`crate::global`]. Fields
//! are read and written through the header view of [`umad::abi`], byte-wise, so no alignment
//! is assumed; each function touches only the bytes C touches.

use core::ffi::{c_int, c_void};

use umad::abi::{field, HeaderLayout, MadAddrView, UserMadHeader, HDR_LEN_OLD};

use crate::ffi::{opt_bytes, opt_bytes_mut, Ptr};
use crate::global::{header_layout, header_size, new_user_mad_api, trace};
use crate::types::ib_mad_addr_t;

/// The bytes up to the P_Key index: what `umad_set_pkey`/`umad_get_pkey` may touch.
const PKEY_END: usize = field::ADDR + field::addr::PKEY_INDEX.end;

/// The common header fields (every field but `pkey_index`): a view of the first 56 bytes of a
/// buffer (`None` for `NULL`: pass `opt_bytes_mut(umad, HDR_LEN_OLD)`).
fn common_header(bytes: Option<&mut [u8]>) -> Option<UserMadHeader<&mut [u8]>> {
    UserMadHeader::new_checked(bytes?, HeaderLayout::Old).ok()
}

/// Where the MAD starts in `umad`: 64 bytes in with the P_Key-aware header, else 56.
///
/// # Safety
/// No preconditions: the pointer is only offset, never read (`NULL` gives `NULL + 56/64`, as in
/// C).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_mad(umad: *mut c_void) -> *mut c_void {
    umad.cast::<u8>().wrapping_add(header_size()).cast()
}

/// The size of the header before the MAD: 64 once a port was opened with P_Key support
/// (always, on current kernels), 56 before any port was opened.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_size() -> libc::size_t {
    header_size()
}

/// The `status` of a received header: 0, or `ETIMEDOUT` for a send that got no response.
///
/// # Safety
/// `umad` is `NULL` (then `-EINVAL` is returned) or points to a readable header.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_status(umad: *mut c_void) -> c_int {
    // SAFETY: the caller guarantees `umad` is NULL or readable for the header.
    let Some(h) = (unsafe { opt_bytes(umad, field::STATUS.end) }) else {
        return -libc::EINVAL;
    };
    UserMadHeader::from_prefix(h, header_layout()).status() as c_int
}

/// The address inside a header (`umad + 20`).
///
/// # Safety
/// No preconditions: the pointer is only offset, never read.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_mad_addr(umad: *mut c_void) -> *mut ib_mad_addr_t {
    umad.cast::<u8>().wrapping_add(field::ADDR).cast()
}

/// Sets (or, with a `NULL` `mad_addr`, clears) the GRH of a header. From `mad_addr` the GID,
/// hop limit and traffic class are copied as they are and the flow label is converted from host
/// to network order; `gid_index` is **not** copied (as in libibumad). Returns 0.
///
/// # Safety
/// `umad` is `NULL` (then `-EINVAL`) or valid for 56 writable bytes; `mad_addr` is `NULL` or
/// points to a readable `ib_mad_addr_t` (it may lie inside `umad`).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_set_grh(umad: *mut c_void, mad_addr: *mut c_void) -> c_int {
    // Copy the source first: it may be the header's own address.
    // SAFETY: the caller guarantees `mad_addr` is NULL or readable for 44 bytes; the borrow
    // ends before the header is borrowed mutably below.
    let src = unsafe { opt_bytes(mad_addr, field::addr::LEN) }.and_then(|b| {
        let mut a = [0u8; field::addr::LEN];
        a.copy_from_slice(b);
        MadAddrView::new_checked(a).ok()
    });
    // SAFETY: the caller guarantees `umad` is NULL or writable for 56 bytes.
    let Some(mut h) = common_header(unsafe { opt_bytes_mut(umad, HDR_LEN_OLD) }) else {
        return -libc::EINVAL;
    };
    let mut dst = h.addr_mut();
    match src {
        Some(src) => {
            dst.set_grh_present(1);
            dst.set_gid(&src.gid());
            // C takes the source's flow label as a host-order value (the stored bytes read as
            // a native word, i.e. the decoded network-order value's `to_be()`) and stores it
            // in network order.
            dst.set_flow_label(src.flow_label().to_be());
            dst.set_hop_limit(src.hop_limit());
            dst.set_traffic_class(src.traffic_class());
        }
        None => dst.set_grh_present(0),
    }
    0
}

/// Sets the destination from host-order values: LID, QP, SL and Q_Key (stored big-endian).
/// Path bits, GRH and P_Key index are left as they are. Returns 0.
///
/// # Safety
/// `umad` is `NULL` (then `-EINVAL`) or valid for 56 writable bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_set_addr(
    umad: *mut c_void,
    dlid: c_int,
    dqp: c_int,
    sl: c_int,
    qkey: c_int,
) -> c_int {
    trace!(
        "umad_set_addr",
        "umad {} dlid {} dqp {} sl {}, qkey {:x}",
        Ptr(umad),
        dlid as u32,
        dqp,
        sl,
        qkey as u32
    );
    // SAFETY: the caller guarantees `umad` is NULL or writable for 56 bytes.
    let Some(mut h) = common_header(unsafe { opt_bytes_mut(umad, HDR_LEN_OLD) }) else {
        return -libc::EINVAL;
    };
    let mut a = h.addr_mut();
    a.set_qpn(dqp as u32);
    a.set_lid(dlid as u16);
    a.set_qkey(qkey as u32);
    a.set_sl(sl as u8);
    0
}

/// Sets the destination from network-order values, stored as given. Returns 0.
///
/// # Safety
/// `umad` is `NULL` (then `-EINVAL`) or valid for 56 writable bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_set_addr_net(
    umad: *mut c_void,
    dlid: u16,
    dqp: u32,
    sl: c_int,
    qkey: u32,
) -> c_int {
    trace!(
        "umad_set_addr_net",
        "umad {} dlid {} dqp {} sl {} qkey {:x}",
        Ptr(umad),
        u16::from_be(dlid),
        u32::from_be(dqp) as i32,
        sl,
        u32::from_be(qkey)
    );
    // SAFETY: the caller guarantees `umad` is NULL or writable for 56 bytes.
    let Some(mut h) = common_header(unsafe { opt_bytes_mut(umad, HDR_LEN_OLD) }) else {
        return -libc::EINVAL;
    };
    let mut a = h.addr_mut();
    a.set_qpn(u32::from_be(dqp));
    a.set_lid(u16::from_be(dlid));
    a.set_qkey(u32::from_be(qkey));
    a.set_sl(sl as u8);
    0
}

/// Sets the P_Key index (low 16 bits of `pkey_index`) when the 64-byte header is in use;
/// does nothing with the old header. Returns 0.
///
/// # Safety
/// With the 64-byte header, `umad` is `NULL` (then `-EINVAL`) or valid for 64 writable bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_set_pkey(umad: *mut c_void, pkey_index: c_int) -> c_int {
    if new_user_mad_api() {
        // SAFETY: the caller guarantees `umad` is NULL or writable for the 64-byte header.
        let Some(b) = (unsafe { opt_bytes_mut(umad, PKEY_END) }) else {
            return -libc::EINVAL;
        };
        let mut h = UserMadHeader::from_prefix(b, HeaderLayout::WithPkey);
        h.addr_mut().set_pkey_index(pkey_index as u16);
        h.write_prefix(b);
    }
    0
}

/// The P_Key index of a header with the 64-byte layout; 0 with the old layout.
///
/// # Safety
/// With the 64-byte header, `umad` is `NULL` (then `-EINVAL`) or valid for 64 readable bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_pkey(umad: *mut c_void) -> c_int {
    if !new_user_mad_api() {
        return 0;
    }
    // SAFETY: the caller guarantees `umad` is NULL or readable for the 64-byte header.
    let Some(b) = (unsafe { opt_bytes(umad, PKEY_END) }) else {
        return -libc::EINVAL;
    };
    c_int::from(
        UserMadHeader::from_prefix(b, HeaderLayout::WithPkey)
            .addr()
            .pkey_index(),
    )
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;
    use crate::global::set_new_user_mad_api;
    use crate::global::tests::global_lock;
    use crate::types::ib_user_mad_t;

    fn as_hdr(buf: &[u8; 64]) -> ib_user_mad_t {
        // SAFETY: `buf` holds 64 initialised bytes and ib_user_mad_t is plain data of 64 bytes.
        unsafe { core::ptr::read_unaligned(buf.as_ptr().cast::<ib_user_mad_t>()) }
    }

    #[test]
    fn size_and_mad_offset_follow_the_layout_flag() {
        let _g = global_lock();
        let before = new_user_mad_api();
        let mut buf = [0u8; 320];
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: plain pointer arithmetic and reads of the size.
        unsafe {
            set_new_user_mad_api(false);
            assert_eq!(umad_size(), 56);
            assert_eq!(umad_get_mad(p) as usize - p as usize, 56);
            set_new_user_mad_api(true);
            assert_eq!(umad_size(), 64);
            assert_eq!(umad_get_mad(p) as usize - p as usize, 64);
            assert_eq!(umad_get_mad_addr(p) as usize - p as usize, 20);
        }
        set_new_user_mad_api(before);
    }

    #[test]
    fn set_addr_stores_network_order() {
        let mut buf = [0u8; 64];
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: `buf` is a writable 64-byte header.
        let rc = unsafe { umad_set_addr(p, 0x1234, 1, 3, 0x8001_0000u32 as i32) };
        assert_eq!(rc, 0);
        assert_eq!(&buf[28..30], &[0x12, 0x34]);
        let h = as_hdr(&buf);
        assert_eq!(u32::from_be(h.addr.qpn), 1);
        assert_eq!(u32::from_be(h.addr.qkey), 0x8001_0000);
        assert_eq!(h.addr.sl, 3);
        // SAFETY: as above.
        let rc =
            unsafe { umad_set_addr_net(p, 0x0100u16.to_be(), 7u32.to_be(), 0x1ff, 5u32.to_be()) };
        assert_eq!(rc, 0);
        let h = as_hdr(&buf);
        assert_eq!(u16::from_be(h.addr.lid), 0x0100);
        assert_eq!(u32::from_be(h.addr.qpn), 7);
        assert_eq!(u32::from_be(h.addr.qkey), 5);
        assert_eq!(h.addr.sl, 0xff);
        // SAFETY: NULL is refused.
        let rc = unsafe { umad_set_addr(core::ptr::null_mut(), 1, 1, 1, 1) };
        assert_eq!(rc, -libc::EINVAL);
    }

    #[test]
    fn set_grh_copies_all_but_gid_index() {
        let mut buf = [0u8; 64];
        let addr = ib_mad_addr_t {
            gid_index: 7,
            hop_limit: 64,
            traffic_class: 3,
            gid: [0xfe; 16],
            flow_label: 0x12345,
            ..Default::default()
        };
        let p = buf.as_mut_ptr().cast::<c_void>();
        let a = (&addr as *const ib_mad_addr_t).cast_mut().cast::<c_void>();
        // SAFETY: `buf` is writable, `addr` readable.
        assert_eq!(unsafe { umad_set_grh(p, a) }, 0);
        let h = as_hdr(&buf);
        assert_eq!(h.addr.grh_present, 1);
        assert_eq!(h.addr.gid_index, 0);
        assert_eq!(h.addr.hop_limit, 64);
        assert_eq!(h.addr.traffic_class, 3);
        assert_eq!(h.addr.gid, [0xfe; 16]);
        assert_eq!(u32::from_be(h.addr.flow_label), 0x12345);
        // The source may be the header's own address: the stored (big-endian) flow label is
        // then taken as a host value and swapped once more, as C's htobe32 does.
        // SAFETY: `buf` is writable and its address part readable.
        assert_eq!(unsafe { umad_set_grh(p, umad_get_mad_addr(p).cast()) }, 0);
        assert_eq!(as_hdr(&buf).addr.flow_label, 0x12345);
        // SAFETY: as above.
        assert_eq!(unsafe { umad_set_grh(p, core::ptr::null_mut()) }, 0);
        assert_eq!(as_hdr(&buf).addr.grh_present, 0);
    }

    #[test]
    fn pkey_only_with_the_new_layout() {
        let _g = global_lock();
        let before = new_user_mad_api();
        let mut buf = [0u8; 64];
        let p = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: `buf` is a writable 64-byte header.
        unsafe {
            set_new_user_mad_api(false);
            assert_eq!(umad_set_pkey(p, 5), 0);
            assert_eq!(umad_get_pkey(p), 0);
            assert_eq!(buf[56], 0);
            assert_eq!(umad_set_pkey(core::ptr::null_mut(), 5), 0);
            set_new_user_mad_api(true);
            assert_eq!(umad_set_pkey(p, 0x1_0005), 0);
            assert_eq!(umad_get_pkey(p), 5);
            assert_eq!(umad_set_pkey(core::ptr::null_mut(), 5), -libc::EINVAL);
        }
        set_new_user_mad_api(before);
    }

    #[test]
    fn status_reads_host_order() {
        let mut buf = [0u8; 64];
        buf[4..8].copy_from_slice(&110u32.to_ne_bytes());
        // SAFETY: `buf` is a readable header.
        assert_eq!(unsafe { umad_status(buf.as_mut_ptr().cast()) }, 110);
    }
}
