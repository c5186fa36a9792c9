//! `ibmad::Notice`: parse never panics; emit(parse(x)) reproduces x (80-byte GS form); the DataDetails decoders never panic.
#![no_main]

mad_fuzz::repr_target!(ibmad::Notice, |n, _data| {
    assert!(n.issuer_gid.is_some());
    let _ = (
        n.producer_type(),
        n.vendor_id(),
        n.trap_number(),
        n.device_id(),
    );
    let _ = (n.details_gid(), n.details_lid(), n.details_port());
    let _ = (n.details_local_changes(), n.details_system_image_guid());
    if let Some(t) = n.trap_number() {
        let _ = t.to_string();
    }
    let _ = (
        n.notice_type.to_string(),
        n.producer_type().map(|p| p.to_string()),
    );
});
