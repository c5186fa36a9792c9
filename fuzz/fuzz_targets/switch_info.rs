//! `ibmad::SwitchInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::SwitchInfo, |si, _data| {
    assert!(si.linear_fdb_blocks() >= 1);
});
