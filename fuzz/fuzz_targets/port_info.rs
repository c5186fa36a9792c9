//! `mad::PortInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mad_fuzz::round_trip(
        data,
        mad::PortInfo::parse,
        mad::PortInfo::buffer_len,
        mad::PortInfo::emit,
    );
});
