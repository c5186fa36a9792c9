//! `ibfabric`'s ibnetdiscover text parser and node-name-map reader: never panic on any input;
//! text that parses writes back to text that parses to the same model (write is a fixed
//! point after one round), and the model survives JSON unchanged.
//!
//! Run: `cargo xtask fuzz` (all targets) or `cargo +nightly fuzz run ibnetdiscover_text`.
#![no_main]

use ibfabric::{Fabric, NodeNameMap, WriteOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let map = NodeNameMap::parse_bytes(data).ok();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(fabric) = Fabric::parse_ibnetdiscover(text) else {
        return;
    };
    let opts = WriteOptions {
        show_progress: true,
        max_hops: fabric.max_hops_discovered.is_some(),
        node_name_map: None,
        ..WriteOptions::default()
    };
    let written = fabric.to_ibnetdiscover(&opts);
    let again = Fabric::parse_ibnetdiscover(&written).expect("written text parses");
    assert_eq!(
        again.to_ibnetdiscover(&opts),
        written,
        "write is a fixed point"
    );
    let json = Fabric::from_json(&fabric.to_json()).expect("JSON reads back");
    assert_eq!(json, fabric);
    // Every other mode and a name map must not panic either.
    for format in [
        ibfabric::Format::Ports,
        ibfabric::Format::List {
            ca: true,
            switch: true,
            router: true,
        },
    ] {
        let o = WriteOptions {
            format,
            grouping: true,
            full: true,
            node_name_map: map.as_ref(),
            ..WriteOptions::default()
        };
        let _ = fabric.to_ibnetdiscover(&o);
    }
});
