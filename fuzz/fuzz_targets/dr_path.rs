//! Directed-route path text ("0,1,3"): parse never panics, and Display parses back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mad::DrPath;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = DrPath::parse(text) {
        assert_eq!(DrPath::parse(&path.to_string()), Ok(path));
    }
});
