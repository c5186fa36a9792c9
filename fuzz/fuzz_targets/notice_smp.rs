//! `ibmad::Notice::parse_smp`: the 64-byte SMP form (no IssuerGID) never panics; emit(parse(x))
//! reproduces x; the DataDetails decoders never panic.
#![no_main]
use ibmad::Notice;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mad_fuzz::round_trip(data, Notice::parse_smp, Notice::buffer_len, Notice::emit);
    if let Ok(n) = Notice::parse_smp(data) {
        assert_eq!((n.issuer_gid, n.buffer_len()), (None, Notice::SMP_LEN));
        let _ = (n.details_gid(), n.details_lid(), n.details_port());
        let _ = (n.details_local_changes(), n.details_system_image_guid());
    }
});
