//! `ibmad::PKeyTable`: parse never panics; emit(parse(x)) reproduces x; the P_Key helpers never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::PKeyTable, |t, data| {
    let pkey = mad_fuzz::be16(data, ibmad::PKeyTable::LEN);
    assert!(t
        .valid()
        .all(|(i, k)| ibmad::attr::pkey_is_valid(k) && t.pkeys[i] == k));
    if let Some(i) = t.find_base(pkey) {
        assert_eq!(
            ibmad::attr::pkey_base(t.pkeys[i]),
            ibmad::attr::pkey_base(pkey)
        );
    }
    let _ = ibmad::attr::pkeys_match(pkey, t.pkeys[0]);
    let (block, pos) = ibmad::PKeyTable::block_for_index(pkey);
    assert_eq!(
        usize::from(block) * ibmad::PKeyTable::PKEYS_PER_BLOCK + pos,
        usize::from(pkey)
    );
});
