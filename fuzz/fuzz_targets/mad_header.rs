//! The common MAD header: checked view, every getter, and the Repr's parse/emit round trip.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mad::{Mad, MadHeader};

fuzz_target!(|data: &[u8]| {
    let Ok(view) = Mad::new_checked(data) else {
        return;
    };
    let _ = (
        view.mgmt_class(),
        view.method(),
        view.status(),
        view.tid(),
        view.attr_id(),
        view.attr_mod(),
    );
    let _ = format!("{view}");
    if let Ok(h) = MadHeader::parse(&view) {
        let mut out = vec![0u8; h.buffer_len()];
        h.emit(&mut Mad::new_unchecked(&mut out[..]));
        assert_eq!(&out[..], &data[..h.buffer_len()]);
    }
});
