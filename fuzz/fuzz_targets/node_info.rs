//! `ibmad::NodeInfo`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::NodeInfo, |ni, _data| {
    let _ = ni.node_type.to_string();
});
