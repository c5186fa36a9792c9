//! SMPs (LID-routed and directed-route): checked view, every getter, the DR path.
#![no_main]
use ibmad::Smp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(smp) = Smp::new_checked(data) else {
        return;
    };
    let _ = (
        smp.mgmt_class(),
        smp.is_directed_route(),
        smp.method(),
        smp.tid(),
        smp.attr_id(),
        smp.attr_mod(),
        smp.status(),
        smp.direction(),
        smp.hop_pointer(),
        smp.hop_count(),
    );
    let _ = (
        smp.m_key(),
        smp.dr_slid(),
        smp.dr_dlid(),
        smp.data(),
        smp.initial_path(),
        smp.return_path(),
        smp.is_at_destination(),
    );
    assert_eq!(smp.data().len(), ibmad::SMP_DATA_LEN);
    assert_eq!(
        smp.header().to_string(),
        ibmad::Mad::new_checked(data).unwrap().to_string()
    );
    match smp.dr_path() {
        Ok(path) => {
            assert_eq!(path.hop_count(), smp.hop_count());
            assert_eq!(
                path.hops(),
                &smp.initial_path()[1..=usize::from(smp.hop_count())]
            );
        }
        Err(e) => assert_eq!(e, ibmad::Error::BadHopCount(smp.hop_count())),
    }
});
