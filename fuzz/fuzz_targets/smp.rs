//! SMPs (LID-routed and directed-route): checked view, every getter, the DR path.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mad::Smp;

fuzz_target!(|data: &[u8]| {
    let Ok(smp) = Smp::new_checked(data) else {
        return;
    };
    let _ = (
        smp.mgmt_class(),
        smp.method(),
        smp.status(),
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
    );
    if let Ok(path) = smp.dr_path() {
        assert_eq!(path.hop_count(), smp.hop_count());
    }
});
