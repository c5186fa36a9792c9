//! The RMPP header: checked view, every getter, and `RmppHeader`'s parse/emit round trip
//! (emit writes bytes 24..36 and nothing else).
#![no_main]
use ibmad::rmpp::{RMPP_DATA_OFFSET, RMPP_HEADER_OFFSET};
use ibmad::{Rmpp, RmppHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = Rmpp::new_checked(data) else {
        assert!(data.len() < RMPP_DATA_OFFSET);
        return;
    };
    let _ = (
        view.header().method(),
        view.version(),
        view.rmpp_type(),
        view.resp_time(),
        view.flags(),
        view.is_active(),
        view.status(),
        view.status().is_abort(),
        view.segment_number(),
        view.payload_length(),
        view.new_window_last(),
        view.data(),
    );
    let h = RmppHeader::parse(&view).expect("a checked view parses");
    let _ = (h.to_string(), h.rmpp_type.to_string(), h.status.to_string());
    let mut out = data.to_vec();
    out[RMPP_HEADER_OFFSET..RMPP_DATA_OFFSET]
        .iter_mut()
        .for_each(|b| *b = !*b);
    h.emit(&mut Rmpp::new_unchecked(&mut out[..]));
    assert_eq!(out, data);
    assert_eq!(RmppHeader::parse(&Rmpp::new_unchecked(&out[..])), Ok(h));
});
