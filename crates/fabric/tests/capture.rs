//! Fixture capture: runs the C `ibnetdiscover` (infiniband-diags 44.0) on ibsim under umad2sim
//! for every fabric and flag set in [`CASES`], after one opensm sweep, and writes
//! `tests/data/<fabric>.<case>.txt`. Ignored by default; re-capture with
//!
//! ```text
//! cargo test -p ibfabric --test capture -- --ignored --nocapture
//! ```
//!
//! `live_fixtures_match_c` (in `tests/fixtures.rs`) re-runs the C tool and compares, so the
//! stored files cannot silently rot.

mod common;

#[test]
#[ignore = "re-captures the fixtures in tests/data; run by hand"]
fn capture_fixtures() {
    if !ibsim_harness::require_ibsim("capture_fixtures") {
        return;
    }
    for fabric in common::FABRICS {
        let sim = common::start(fabric);
        for case in common::CASES {
            let out = common::run_c(&sim, case.args);
            let path = common::fixture_path(fabric, case.name);
            std::fs::write(&path, out).unwrap();
            eprintln!("wrote {}", path.display());
        }
    }
}
