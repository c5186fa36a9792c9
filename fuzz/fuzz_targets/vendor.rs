//! Vendor range-2 MADs: checked view, every getter, and `VendorHeader`'s parse/emit round trip.
#![no_main]
use ibmad::vendor::VENDOR_HEADER_LEN;
use ibmad::{VendorHeader, VendorMad};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = VendorMad::new_checked(data) else {
        assert!(data.len() < VENDOR_HEADER_LEN);
        return;
    };
    let _ = (
        view.mgmt_class(),
        view.is_vendor_range2(),
        view.reserved(),
        view.oui(),
        view.data(),
        view.rmpp().flags(),
        view.header().tid(),
    );
    mad_fuzz::round_trip(
        data,
        |d| VendorHeader::parse(&VendorMad::new_unchecked(d)),
        VendorHeader::buffer_len,
        |h, out| h.emit(&mut VendorMad::new_unchecked(out)),
    );
    if let Ok(h) = VendorHeader::parse(&view) {
        assert_eq!(h.oui, view.oui());
        let _ = h.to_string();
    }
});
