//! Directed-route processing on arbitrary SMPs: `Smp::advance_hop_pointer`,
//! `Smp::is_at_destination` and `Smp::make_response` never panic on a checked view, a
//! discarded SMP is left unmodified, and only the hop pointer, the return path and (for a
//! response) method and status ever change.
#![no_main]
use ibmad::{DrAction, Method, Smp, Status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // The first two bytes choose the node (arrival port, switch or not) and the status of
    // the response; the rest is the SMP.
    let (arrived_on, is_switch, status) = match input {
        [a, b, c, ..] => ((a & 1 != 0).then_some(*b), a & 2 != 0, u16::from(*c) << 2),
        _ => return,
    };
    let mut buf = input[3..].to_vec();
    if Smp::new_checked(&buf[..]).is_err() {
        return;
    }
    let before = buf.clone();
    let mut smp = Smp::new_unchecked(&mut buf[..]);
    let _ = smp.is_at_destination();
    let action = smp.advance_hop_pointer(arrived_on, is_switch);
    let (returning, hop_pointer) = (smp.direction(), smp.hop_pointer());
    match action {
        DrAction::Discard | DrAction::LeadingLidRoute => assert_eq!(before, buf),
        DrAction::Forward(_) | DrAction::Local | DrAction::LidRoute(_) => {
            // Only the hop pointer (byte 6) and the return path (192..256) may change.
            for (i, (b, a)) in before.iter().zip(&buf).enumerate() {
                if b != a {
                    assert!(i == 6 || (192..256).contains(&i), "byte {i} changed");
                }
            }
        }
    }
    // Only switches forward a request past the first hop or LID-route it.
    if matches!(action, DrAction::Forward(_) | DrAction::LidRoute(_)) && !returning {
        assert!(is_switch || hop_pointer <= 1);
    }
    let mut smp = Smp::new_unchecked(&mut buf[..]);
    let _ = smp.is_at_destination();

    smp.make_response(Status(status));
    assert!(smp.method() == Method::TrapRepress || smp.method().is_response());
    assert_eq!(smp.direction(), smp.is_directed_route());
    assert_eq!(smp.status().without_direction(), Status(status));
    // A second step on the response never panics either.
    let _ = smp.advance_hop_pointer(arrived_on, is_switch);
    let _ = smp.dr_path();
});
