//! The simulator's built-in fabric names (`ibnetsim::generate::Spec::parse`, what
//! `UMAD_SIM=<name>` takes) fed any text: never a panic; a name that parses prints back to a
//! name that parses to the same spec, and a small one builds and writes its netfile.
#![no_main]
use ibnetsim::generate::Spec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = Spec::parse(text) else {
        return;
    };
    let again = Spec::parse(&spec.to_string()).expect("a spec prints back as a name");
    assert_eq!(again.to_string(), spec.to_string());
    if spec.validate().is_ok() && spec.size().nodes() <= 2_000 {
        let f = spec.build().expect("a valid spec builds");
        assert_eq!(f.len(), spec.size().nodes());
        spec.netfile().expect("and writes its netfile");
    }
});
