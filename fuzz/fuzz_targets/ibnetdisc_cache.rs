//! `ibfabric`'s ibnetdisc cache reader: never panics on any input; a loaded cache is a
//! consistent model, and writing it and loading that again gives the same nodes, ports and
//! links and the same bytes once more.
//!
//! Run: `cargo xtask fuzz` (all targets) or `cargo +nightly fuzz run ibnetdisc_cache`.
#![no_main]

use ibfabric::cache::CacheFile;
use ibfabric::Fabric;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = CacheFile::parse(data) {
        // The records alone round-trip to bytes that parse to the same records.
        let again = CacheFile::parse(&file.to_bytes()).expect("written records parse");
        assert_eq!(again, file);
    }
    let Ok(fabric) = Fabric::from_ibnetdisc_cache(data) else {
        return;
    };
    fabric.validate().expect("a consistent model");
    let written = fabric.to_ibnetdisc_cache().expect("a loaded fabric caches");
    let loaded = Fabric::from_ibnetdisc_cache(&written).expect("written cache loads");
    assert_eq!(loaded.nodes.len(), fabric.nodes.len());
    for (a, b) in loaded.nodes.iter().zip(&fabric.nodes) {
        assert_eq!((a.guid, a.num_ports, &a.raw), (b.guid, b.num_ports, &b.raw));
        assert_eq!(a.ports.len(), b.ports.len());
    }
    assert_eq!(loaded.links(), fabric.links());
    assert_eq!(loaded.to_ibnetdisc_cache().expect("caches again"), written);
});
