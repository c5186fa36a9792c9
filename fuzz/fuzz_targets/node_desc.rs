//! `mad::NodeDescription`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mad_fuzz::round_trip(
        data,
        mad::NodeDescription::parse,
        mad::NodeDescription::buffer_len,
        mad::NodeDescription::emit,
    );
});
