//! `mad::PKeyTable`: parse never panics; emit(parse(x)) reproduces x; the P_Key helpers never panic.
#![no_main]

mad_fuzz::repr_target!(mad::PKeyTable, |t, data| {
    let pkey = mad_fuzz::be16(data, mad::PKeyTable::LEN);
    assert!(t
        .valid()
        .all(|(i, k)| mad::attr::pkey_is_valid(k) && t.pkeys[i] == k));
    if let Some(i) = t.find_base(pkey) {
        assert_eq!(mad::attr::pkey_base(t.pkeys[i]), mad::attr::pkey_base(pkey));
    }
    let _ = mad::attr::pkeys_match(pkey, t.pkeys[0]);
    let (block, pos) = mad::PKeyTable::block_for_index(pkey);
    assert_eq!(
        usize::from(block) * mad::PKeyTable::PKEYS_PER_BLOCK + pos,
        usize::from(pkey)
    );
});
