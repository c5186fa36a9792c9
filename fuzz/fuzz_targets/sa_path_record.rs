//! `ibmad::sa::PathRecord`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::sa::PathRecord, |p, _data| {
    let _ = (
        p.mtu.to_string(),
        p.rate.to_string(),
        p.mtu_selector.to_string(),
    );
    let _ = (
        p.rate.gbps(),
        p.mtu.bytes(),
        p.sgid.to_string(),
        p.dgid.to_string(),
    );
});
