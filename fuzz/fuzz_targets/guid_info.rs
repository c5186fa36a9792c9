//! `ibmad::GuidInfo`: parse never panics; emit(parse(x)) reproduces x; the index helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::GuidInfo, |gi, data| {
    assert!(gi.assigned().all(|(i, g)| g != 0 && gi.guids[i] == g));
    let index = mad_fuzz::be16(data, ibmad::GuidInfo::LEN);
    let (block, pos) = ibmad::GuidInfo::block_for_index(index);
    assert_eq!(
        block as usize * ibmad::GuidInfo::GUIDS_PER_BLOCK + pos,
        usize::from(index)
    );
});
