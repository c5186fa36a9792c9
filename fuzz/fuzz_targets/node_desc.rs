//! `ibmad::NodeDescription`: parse never panics; emit(parse(x)) reproduces x; the text accessors never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::NodeDescription, |nd, _data| {
    assert!(nd.text_bytes().len() <= ibmad::NodeDescription::LEN);
    let text = nd.as_str();
    assert_eq!(nd.to_string(), text);
    // Rebuilding from the text keeps the text (up to the first NUL, valid UTF-8).
    if let Ok(s) = std::str::from_utf8(nd.text_bytes()) {
        assert_eq!(ibmad::NodeDescription::new(s).text_bytes(), nd.text_bytes());
    }
});
