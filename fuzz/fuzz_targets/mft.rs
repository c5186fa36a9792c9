//! `ibmad::MulticastForwardingTable`: parse never panics; emit(parse(x)) reproduces x; the MLID and port helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::MulticastForwardingTable, |mft, data| {
    let index = usize::from(mad_fuzz::byte(data, ibmad::MulticastForwardingTable::LEN));
    let position = mad_fuzz::byte(data, ibmad::MulticastForwardingTable::LEN + 1);
    let mlid = mad_fuzz::be16(data, ibmad::MulticastForwardingTable::LEN + 2);
    let ports: Vec<u8> = mft.ports(index, position).collect();
    assert!(ports.len() <= ibmad::MulticastForwardingTable::PORTS_PER_MASK);
    if let Some((block, i)) = ibmad::MulticastForwardingTable::block_for_mlid(mlid) {
        assert!(i < ibmad::MulticastForwardingTable::MLIDS_PER_BLOCK);
        let _ = ibmad::attr::mft_attr_mod(block, position);
    }
    let (pos, bit) = ibmad::MulticastForwardingTable::position_for_port(position);
    assert_eq!(bit.count_ones(), 1);
    let _ = pos;
});
