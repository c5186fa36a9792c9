//! `mad::LinearForwardingTable`: parse never panics; emit(parse(x)) reproduces x; the LID helpers never panic, whatever block or LID.
#![no_main]

mad_fuzz::repr_target!(mad::LinearForwardingTable, |lft, data| {
    let block = mad_fuzz::be32(data, mad::LinearForwardingTable::LEN);
    let lid = mad_fuzz::be16(data, mad::LinearForwardingTable::LEN + 4);
    for (l, port) in lft.routes(block) {
        assert_ne!(port, mad::LinearForwardingTable::NO_PORT);
        let _ = l;
    }
    assert_eq!(
        lft.port_for_lid(lid),
        lft.ports[mad::LinearForwardingTable::index_for_lid(lid)]
    );
    let b = mad::LinearForwardingTable::block_for_lid(lid);
    let first = mad::LinearForwardingTable::first_lid(b).expect("a LID's block starts at a LID");
    assert!(first <= lid);
    let _ = mad::LinearForwardingTable::first_lid(block);
});
