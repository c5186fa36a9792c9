//! `mad::MulticastForwardingTable`: parse never panics; emit(parse(x)) reproduces x; the MLID and port helpers never panic.
#![no_main]

mad_fuzz::repr_target!(mad::MulticastForwardingTable, |mft, data| {
    let index = usize::from(mad_fuzz::byte(data, mad::MulticastForwardingTable::LEN));
    let position = mad_fuzz::byte(data, mad::MulticastForwardingTable::LEN + 1);
    let mlid = mad_fuzz::be16(data, mad::MulticastForwardingTable::LEN + 2);
    let ports: Vec<u8> = mft.ports(index, position).collect();
    assert!(ports.len() <= mad::MulticastForwardingTable::PORTS_PER_MASK);
    if let Some((block, i)) = mad::MulticastForwardingTable::block_for_mlid(mlid) {
        assert!(i < mad::MulticastForwardingTable::MLIDS_PER_BLOCK);
        let _ = mad::attr::mft_attr_mod(block, position);
    }
    let (pos, bit) = mad::MulticastForwardingTable::position_for_port(position);
    assert_eq!(bit.count_ones(), 1);
    let _ = pos;
});
