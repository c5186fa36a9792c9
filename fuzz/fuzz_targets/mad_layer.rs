//! The user-space MAD layer's engine (`umad::layer::Engine`) fed a hostile packet stream on a
//! simulated clock: SA agents with RMPP (client and server), a PerfMgt client, packets of any
//! length and content (biased towards RMPP segments of the SA class, so the reassembly, ACK
//! and abort paths are reached), bounces, and timers fired as time jumps. It must never panic,
//! and once every timer has run out nothing may be held.
#![no_main]
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use umad::layer::{Engine, LayerConfig, Packet};
use umad::{AgentSpec, MadAddr, MethodMask};

fuzz_target!(|data: &[u8]| {
    let cfg = LayerConfig {
        max_reassemblies: 16,
        max_queued: 64,
        ..LayerConfig::default()
    };
    let mut e = Engine::new(cfg, "fuzz0", 1);
    e.register(&AgentSpec::new(0x03, 2).rmpp_version(1))
        .expect("client");
    e.register(
        &AgentSpec::new(0x03, 2)
            .rmpp_version(1)
            .methods(MethodMask::of(&[0x12, 0x02])),
    )
    .expect("server");
    e.register(&AgentSpec::new(0x04, 1)).expect("perf");
    let start = Instant::now();
    let mut now = start;
    // Records: [flags, len, bytes...]; flags: bit 0 bounce, bit 1 SA/RMPP bias, bits 2..7 ms.
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (body, next) = tail.split_at(n);
        rest = next;
        let mut mad = body.to_vec();
        if flags & 2 != 0 && mad.len() >= 36 {
            mad[0] = 1;
            mad[1] = 0x03;
            mad[2] = 2;
            mad[24] = 1;
            mad[26] |= 1;
        }
        now += Duration::from_millis(u64::from(flags >> 2) * 97);
        e.on_packet(
            now,
            Packet {
                mad,
                addr: MadAddr::new(7, 1, 0, MadAddr::DEFAULT_QKEY),
                qp: 1,
                status: u32::from(flags & 1) * 110,
            },
        );
        e.on_timer(now);
        let _ = e.take_outbox();
        if e.ready().len() > 32 {
            while e.pop_ready().is_some() {}
        }
    }
    e.on_timer(now + Duration::from_secs(120));
    let _ = e.take_outbox();
    assert_eq!(e.transfers(), (0, 0), "everything ends");
    assert!(e.next_deadline().is_none());
});
