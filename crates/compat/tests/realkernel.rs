//! The drop-in on a real kernel: run in the QEMU guest of `cargo xtask realkernel` (a stock
//! Debian kernel's `ib_umad`, two Soft-RoCE ports `rxe0`/`rxe1`), gated on `UMAD_REALKERNEL`.
//!
//! The C programs were built on the host (the guest has no compiler) and sit in
//! `$UMAD_RK_C_DIR`: `umad_calls` (every libibumad function; here the sections that need no
//! SMP) and `umad_rk` (the GSI path: GRH addressing, RMPP to 1 MiB both ways, a GetTable, the
//! kernel's `ENOSPC`, its own replies and refusals, user RMPP). Each runs on the system
//! libibumad and on ours; the transcripts must be identical. Then `umad ibstat` against C
//! `ibstat` on the RoCE ports.

use std::path::{Path, PathBuf};
use std::process::Command;

use compat::{require_drop_in, run_differential};

/// `None` (after saying so) outside the guest; in the guest, records the test as run.
fn guest(test: &str) -> Option<PathBuf> {
    if std::env::var_os("UMAD_REALKERNEL").is_none() {
        eprintln!(
            "realkernel {test}: not in the real-kernel guest: `cargo xtask realkernel` runs it"
        );
        return None;
    }
    if let Some(path) = std::env::var_os("UMAD_RK_RAN") {
        ibsim_harness::record_ran(Path::new(&path), &format!("compat::realkernel::{test}"))
            .expect("writing the guest's ran-file");
    }
    let dir = PathBuf::from(std::env::var_os("UMAD_RK_C_DIR").expect("UMAD_RK_C_DIR in the guest"));
    assert!(dir.is_dir(), "{}: no C programs", dir.display());
    Some(dir)
}

fn drop_in(test: &str) -> PathBuf {
    require_drop_in(test).expect("the drop-in is in the guest")
}

/// Every section of `umad_calls.c` that needs no SMP (all but the ibsim and HEAD-only ones),
/// in one process, on the RoCE devices: the same transcript on both libraries.
#[test]
fn umad_calls_device_sections_match() {
    let Some(c) = guest("umad_calls_device_sections_match") else {
        return;
    };
    let lib = drop_in("umad_calls_device_sections_match");
    let d = run_differential(
        || {
            let mut cmd = Command::new(c.join("umad_calls"));
            cmd.args(compat::DEVICE_SECTIONS).current_dir("/tmp");
            cmd
        },
        &lib,
    )
    .unwrap();
    if let Err(report) = d.check(&["umad_get_cas_names(cas, 4) = 2*"], &[]) {
        panic!("{report}\n--- system ---\n{}", d.system.text);
    }
}

/// The GSI path through libibumad on the real kernel: every check of `umad_rk.c` passes on
/// both libraries, with identical transcripts.
#[test]
fn umad_rk_gsi_checks_match() {
    let Some(c) = guest("umad_rk_gsi_checks_match") else {
        return;
    };
    let lib = drop_in("umad_rk_gsi_checks_match");
    let d = run_differential(
        || {
            let mut cmd = Command::new(c.join("umad_rk"));
            cmd.arg("all").current_dir("/tmp");
            cmd
        },
        &lib,
    )
    .unwrap();
    for t in [&d.system, &d.ours] {
        let last = t.text.lines().find(|l| l.starts_with("checks: "));
        assert!(
            last.is_some_and(|l| l.ends_with(" passed, 0 failed")),
            "{}: {last:?}\n{}",
            t.library.label(),
            t.text
        );
    }
    if let Err(report) = d.check(&[], &[]) {
        panic!(
            "{report}\n--- system ---\n{}\n--- ours ---\n{}",
            d.system.text, d.ours.text
        );
    }
}

/// `umad ibstat` prints what C `ibstat` prints on the RoCE ports, exit codes included.
#[test]
fn ibstat_matches_c_on_roce() {
    if guest("ibstat_matches_c_on_roce").is_none() {
        return;
    }
    let umad = std::env::var_os("UMAD_RK_UMAD").expect("UMAD_RK_UMAD in the guest");
    let cases: [&[&str]; 8] = [
        &[],
        &["-l"],
        &["-p"],
        &["-s"],
        &["rxe0"],
        &["rxe1", "1"],
        &["-p", "rxe0"],
        &["nosuchca"],
    ];
    for args in cases {
        let c = Command::new("ibstat").args(args).output().unwrap();
        let ours = Command::new(&umad)
            .arg("ibstat")
            .args(args)
            .output()
            .unwrap();
        let show = |o: &std::process::Output| {
            format!(
                "exit {:?}\n{}{}",
                o.status.code(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        };
        assert_eq!(
            (ours.status.code(), &ours.stdout),
            (c.status.code(), &c.stdout),
            "ibstat {args:?}\n--- C ---\n{}--- umad ---\n{}",
            show(&c),
            show(&ours)
        );
        if args == ["nosuchca"] {
            assert!(!c.status.success());
        } else {
            let text = String::from_utf8_lossy(&c.stdout);
            assert!(
                text.contains("rxe") || text.starts_with("0x"),
                "{}",
                show(&c)
            );
        }
    }
}
