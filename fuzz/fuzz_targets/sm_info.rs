//! `ibmad::SmInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::SmInfo, |si, _data| {
    let _ = (si.sm_state.to_string(), si.sm_state.diag_name());
});
