//! `ibmad::LinearForwardingTable`: parse never panics; emit(parse(x)) reproduces x; the LID helpers never panic, whatever block or LID.
#![no_main]

mad_fuzz::repr_target!(ibmad::LinearForwardingTable, |lft, data| {
    let block = mad_fuzz::be32(data, ibmad::LinearForwardingTable::LEN);
    let lid = mad_fuzz::be16(data, ibmad::LinearForwardingTable::LEN + 4);
    for (l, port) in lft.routes(block) {
        assert_ne!(port, ibmad::LinearForwardingTable::NO_PORT);
        let _ = l;
    }
    assert_eq!(
        lft.port_for_lid(lid),
        lft.ports[ibmad::LinearForwardingTable::index_for_lid(lid)]
    );
    let b = ibmad::LinearForwardingTable::block_for_lid(lid);
    let first = ibmad::LinearForwardingTable::first_lid(b).expect("a LID's block starts at a LID");
    assert!(first <= lid);
    let _ = ibmad::LinearForwardingTable::first_lid(block);
});
