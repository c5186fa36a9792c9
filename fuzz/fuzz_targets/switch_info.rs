//! `mad::SwitchInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(mad::SwitchInfo, |si, _data| {
    assert!(si.linear_fdb_blocks() >= 1);
});
