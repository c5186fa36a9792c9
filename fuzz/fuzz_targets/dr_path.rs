//! Directed-route paths: text ("0,1,3") and raw hops. Parsing never panics, Display parses
//! back to the same path, and the hop list rebuilds it.
#![no_main]
use ibmad::DrPath;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(path) = DrPath::from_hops(data) {
        assert_eq!(path.hops(), data);
        assert_eq!(DrPath::parse(&path.to_string()), Ok(path));
        let mut p = path;
        while p.pop().is_some() {}
        assert!(p.is_local());
    } else {
        assert!(data.len() > DrPath::MAX_HOPS);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = DrPath::parse(text) {
        assert_eq!(DrPath::parse(&path.to_string()), Ok(path));
        assert_eq!(DrPath::from_hops(path.hops()), Ok(path));
        assert_eq!(path.initial_path()[0], 0);
        let _ = path.with_hop(1);
    }
});
