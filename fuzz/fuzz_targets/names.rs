//! The name tables are total functions: any class, method, attribute or status has a text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: [u8; 4]| {
    let [class, method, a, b] = data;
    let word = u16::from_be_bytes([a, b]);
    assert!(!ibmad::class_str(class).is_empty());
    assert!(!ibmad::method_str(class, method).is_empty());
    assert!(!ibmad::attribute_str(class, word).is_empty());
    assert!(!ibmad::common_mad_status_str(word).is_empty());
    assert!(!ibmad::sa_mad_status_str(word).is_empty());
});
