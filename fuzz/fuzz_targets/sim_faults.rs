//! The simulator's fault specs (`ibnetsim::Fabric::apply_faults`, the text of
//! `UMAD_SIM_FAULTS` and the daemon's control interface) fed any text, then hostile packets
//! through the faulty fabric: never a panic; a spec refused changes nothing.
#![no_main]
use ibnetfile::Netfile;
use ibnetsim::{Fabric, NodeIdx};
use libfuzzer_sys::fuzz_target;

const ODD: &str = include_str!("../../fabrics/odd.net");

fuzz_target!(|data: &[u8]| {
    // The spec up to the first 0 byte, packets after it.
    let (spec, mut rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let spec = String::from_utf8_lossy(spec);
    let net = Netfile::parse(ODD).expect("odd.net parses");
    let mut f = Fabric::from_netfile(&net, None).expect("odd.net builds");
    f.configure(None);
    f.apply_faults("seed=1,drop=10%").expect("a good spec");
    let before = f.faults().cloned();
    if f.apply_faults(&spec).is_err() {
        assert_eq!(
            f.faults().cloned(),
            before,
            "a refused spec changed the faults"
        );
    }
    // Records: [node, port, dlid hi, dlid lo, qp, len, bytes...].
    while let [node, port, hi, lo, qp, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (mad, next) = tail.split_at(n);
        rest = next;
        let from = (NodeIdx(u32::from(*node) % (f.len() as u32 + 1)), *port % 8);
        let dlid = u16::from_be_bytes([*hi, *lo]);
        let _ = f.deliver(from, dlid, u32::from(*qp & 1), mad);
    }
});
