//! The common MAD header: checked view, every getter, and the Repr's parse/emit round trip.
#![no_main]
use ibmad::{Mad, MadHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = Mad::new_checked(data) else {
        return;
    };
    let _ = (
        view.base_version(),
        view.mgmt_class(),
        view.class_version(),
        view.method(),
        view.is_response(),
        view.status(),
        view.class_specific(),
        view.tid(),
        view.attr_id(),
        view.reserved(),
        view.attr_mod(),
        view.data(),
    );
    let _ = format!("{view}");
    let _ = (view.status().to_string(), view.status().invalid_field());
    let _ = (
        view.mgmt_class().qp(),
        view.mgmt_class().is_rmpp(),
        view.method().response(),
    );
    mad_fuzz::round_trip(
        data,
        |d| MadHeader::parse(&Mad::new_unchecked(d)),
        MadHeader::buffer_len,
        |h, out| h.emit(&mut Mad::new_unchecked(out)),
    );
    if let Ok(h) = MadHeader::parse(&view) {
        assert_eq!(h.to_string(), view.to_string());
    }
});
