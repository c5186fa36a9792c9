//! `ibmad::attr::MlnxExtPortInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::attr::MlnxExtPortInfo, |e, _data| {
    let _ = e.fdr10_active();
});
