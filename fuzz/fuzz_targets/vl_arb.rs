//! `ibmad::VlArbTable`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::VlArbTable, |t, _data| {
    assert!(t.active().all(|(i, e)| e.weight != 0 && t.entries[i] == e));
});
