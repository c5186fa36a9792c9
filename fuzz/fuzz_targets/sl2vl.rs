//! `ibmad::SlToVlTable`: parse never panics; emit(parse(x)) reproduces x; the SL helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::SlToVlTable, |t, data| {
    let sl = mad_fuzz::byte(data, ibmad::SlToVlTable::LEN);
    let vl = mad_fuzz::byte(data, ibmad::SlToVlTable::LEN + 1);
    let mut t2 = *t;
    t2.set_vl(sl, vl);
    assert_eq!(t2.vl(sl), vl & 0x0f);
    let m = ibmad::SlToVlTable::modulo(vl);
    assert!((0..16).all(|s| m.vl(s) < vl.clamp(1, 15)));
});
