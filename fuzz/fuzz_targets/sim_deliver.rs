//! The simulated fabric (`ibnetsim`) fed hostile packets: any bytes, from any port (valid or
//! not), to any LID, on either QP, on the odd fabric (routers, dead ports, a 2-port switch,
//! LMC) configured or not. It must never panic, and every answer is a response.
#![no_main]
use ibnetfile::Netfile;
use ibnetsim::{Fabric, NodeIdx};
use libfuzzer_sys::fuzz_target;

const ODD: &str = include_str!("../../fabrics/odd.net");

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let net = Netfile::parse(ODD).expect("odd.net parses");
    let mut f = Fabric::from_netfile(&net, None).expect("odd.net builds");
    if first & 1 != 0 {
        f.configure(None);
    }
    // Records: [node, port, dlid hi, dlid lo, qp, len, bytes...].
    while let [node, port, hi, lo, qp, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (mad, next) = tail.split_at(n);
        rest = next;
        let from = (NodeIdx(u32::from(*node) % (f.len() as u32 + 1)), *port % 8);
        let dlid = u16::from_be_bytes([*hi, *lo]);
        if let Ok(r) = f.deliver(from, dlid, u32::from(*qp & 1), mad) {
            assert!(r.mad[3] & 0x80 != 0, "an answer is a response");
        }
    }
});
