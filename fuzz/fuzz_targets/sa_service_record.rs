//! `ibmad::sa::ServiceRecord`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::sa::ServiceRecord, |r, _data| {
    let _ = r.name();
});
