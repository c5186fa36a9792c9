//! Project automation for umad-rs: `cargo xtask <command>` (see `cargo xtask help`).

mod bench;
mod bench_diags;
mod bench_discover;
mod bench_rmpp;
mod bench_roundtrip;
mod bench_sim;
mod capture;
mod demo;
mod fattree;
mod fuzz;
mod initramfs;
mod libibumad;
mod package;
mod packages;
mod raw_smps;
mod realkernel;
mod stats;
mod testrun;

/// Counts heap allocations (for `bench-roundtrip`'s allocations per round trip); otherwise
/// the system allocator, at the cost of one relaxed atomic add per allocation.
#[global_allocator]
static ALLOC: ibsim_harness::CountingAlloc = ibsim_harness::CountingAlloc;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  gen-fattree LEAVES SPINES HOSTS_PER_LEAF [RADIX]
        print a two-level fat-tree netfile for ibsim (RADIX defaults to 36), e.g.
        `cargo xtask gen-fattree 36 8 28 > fabrics/fattree-1008.net`
  gen-fabric NAME
        print the netfile of an ibnetsim built-in fabric (Fabric::load_named's names):
        example, fattree:LEAVES,SPINES,HOSTS_PER_LEAF[,RADIX[,LINKS]],
        fattree3:PODS,LEAVES_PER_POD,HOSTS_PER_LEAF,AGGS_PER_POD,CORES_PER_AGG[,RADIX],
        ring:SWITCHES[,HOSTS], mesh:WIDTHxHEIGHT[,HOSTS], torus:WIDTHxHEIGHT[,HOSTS]
  demo [--with-c]
        run the umad-rs tools (ibstat, ibnetdiscover, smpquery, iblinkinfo, ibroute,
        ibtracert, ibswitches, ibhosts) and the nodeinfo example on fabrics/example.net
        simulated in process (UMAD_SIM; nothing installed), each under the command to type;
        then, when ibsim, umad2sim and opensm are installed, start ibsim on the same fabric,
        run opensm once and show the C tools next to ours (with --with-c: install the missing
        ibsim packages with apt-get when run as root, else name the command; without it and
        without them: skip that part and say so)
  test [--require-ibsim] [--min-ibsim-tests N] [-- CARGO_TEST_ARGS...]
        install the missing Debian packages the tests need (as root; else name the command),
        then cargo test --workspace, recording which ibsim-backed tests ran; with
        CI=true or --require-ibsim it fails when fewer than N (default: all of them, testrun::IBSIM_TESTS) ran
  ci [--min-ibsim-tests N] [-- CARGO_TEST_ARGS...]
        cargo fmt --check, cargo clippy --workspace --all-targets -D warnings, then `test`
        with CI semantics
  libibumad
        build the drop-in C library target/libibumad/libibumad.so.3 (+ libibumad.so,
        libibumad.pc) from crates/libibumad and check its symbols, versions, SONAME, NEEDED
  capture-fixtures
        record real MAD replies from ibsim (SMP, PerfMgt, SA) as hex fixtures under
        crates/mad/tests/fixtures/ibsim for the mad crate's decoding tests
  fuzz [--seconds N] [--runs N]
        run every cargo-fuzz target in fuzz/ (default 10 s each; needs cargo-fuzz)
  bench-libibumad [--runs N] [--no-pin]
        ibnetdiscover on fabrics/fattree-1008.net (1052 nodes), system libibumad vs ours
        (`cargo xtask libibumad` first), N interleaved runs each (default 7, at least 5),
        pinned to one CPU unless --no-pin: median wall times and the ratio ours / system
  bench-rmpp [--runs N] [--no-pin]
        RMPP through ibsim on fabrics/fattree-1008.net: opensm on our library over
        UMAD_IBSIM serves the SA; N interleaved runs each (default 7, at least 5) of C
        saquery on the drop-in, a Rust SA GetTable of all NodeRecords and 64-deep pipelined
        DR SMPs; prints segments/s of both tables ÷ the raw MAD rate (goal >= 0.80). Needs
        `cargo xtask libibumad` first; re-runs itself as an optimized build
  bench-roundtrip [--runs N] [--no-pin]
        serial and pipelined (16, 64 in flight) directed-route NodeInfo round trips: the Rust
        kernel transport vs a C loop on the system libibumad, both under umad2sim; N
        interleaved runs each (default 11, at least 9); prints Rust ÷ C per row (goal >= 1.05).
        Re-runs itself as an optimized build
  bench-discover [--runs N] [--pin]
        discovery on generated 1052- and 2368-node fat trees, one ibsim each: `umad
        ibnetdiscover` (crates/umad-cli, native transport; or UMAD_BIN=<umad>) vs C
        ibnetdiscover default and -o 128 under umad2sim, and the floor (SMPs ÷ the best raw
        MAD rate, 32/64/128 in flight); N interleaved rounds (default 11, at least 10),
        unpinned unless --pin. Re-runs itself as an optimized build
  bench-diags [--runs N] [--pin]
        `umad iblinkinfo` and `umad ibqueryerrors --skip-sl` (crates/umad-cli, native
        transport; or UMAD_BIN=<umad>) vs the C tools under umad2sim on fabrics/fattree-1008.net
        (1052 nodes): checked identical, then N interleaved rounds (default 9, at least 7),
        medians, umad ÷ C per tool (goal <= 0.25). Re-runs itself as an optimized build
  bench-sim [--runs N] [--quick]
        the in-process simulator (ibnetsim) vs ibsim on fat trees of 1052, 10,400 and
        40,958 nodes: start-up time and peak memory (Fabric::load + configure in a child vs
        ibsim from spawn to answering), pipelined DR NodeInfo rate (64 in flight) in process
        vs through ibsim, and `umad ibnetdiscover` under UMAD_SIM; N interleaved rounds
        (default 5, at least 5; the 41k ibsim starts in 3 of them, none with --quick).
        Goals: start-up >= 20x faster at 41k, SMP rate >= 10x, discovery of 10,400 nodes
        < 1 s and of 41k < 4 s. Re-runs itself as an optimized build
  realkernel [--tests FILTER] [--timeout SECS] [--kernel-pkg PKG]
        boot a stock Debian kernel (downloaded and unpacked into target/realkernel, never
        installed) in QEMU (TCG) with ib_umad and two Soft-RoCE ports, and run the tests gated
        on that guest there: umad's kernel transport (realkernel::) and the drop-in's C
        differential tests (crates/compat/tests/realkernel.rs). Installs qemu-system-x86,
        busybox-static and iproute2 as root, else names the command. Part of `test`
  package [CARGO_PACKAGE_ARGS...]
        check the crates.io metadata of every publishable workspace member (publish not
        false), then `cargo package` them together, verified (e.g. `-- --allow-dirty`)
  msrv  build every workspace member with the toolchain its rust-version names (installed
        with rustup, minimal profile, when missing)
  help  this text
";

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match cmd.as_str() {
        "gen-fattree" => fattree::parse_args(rest)
            .and_then(|t| t.netfile())
            .and_then(|net| print_out(&net)),
        "gen-fabric" if rest.len() == 1 => rest[0]
            .parse::<ibnetsim::generate::Spec>()
            .and_then(|spec| spec.netfile())
            .map_err(|e| e.to_string())
            .and_then(|net| print_out(&net)),
        "demo" => demo::parse_args(rest).and_then(|o| demo::run(&o)),
        "capture-fixtures" if rest.is_empty() => capture::run(),
        "libibumad" if rest.is_empty() => libibumad::run(),
        "test" => testrun::parse_opts(rest, true).and_then(|o| testrun::test(&o)),
        "fuzz" => fuzz::run(rest),
        "ci" => testrun::parse_opts(rest, false).and_then(|o| testrun::ci(&o)),
        "bench-libibumad" => bench::run(rest),
        "bench-rmpp" => bench_rmpp::run(rest),
        "bench-roundtrip" => bench_roundtrip::run(rest),
        "bench-discover" => bench_discover::run(rest),
        "bench-diags" => bench_diags::run(rest),
        "bench-sim" => bench_sim::run(rest),
        bench_sim::CHILD_COMMAND => bench_sim::child(rest),
        bench_roundtrip::CHILD_COMMAND => bench_roundtrip::child(rest),
        "realkernel" => realkernel::parse_opts(rest).and_then(|o| realkernel::run(&o)),
        "package" => package::run(rest),
        "msrv" => package::msrv(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        _ => {
            eprint!("xtask: unknown command or arguments: {args:?}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {cmd}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of the `xtask` directory).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .to_owned()
}

/// The cargo that runs us (`$CARGO`), or `cargo` from `$PATH`.
pub(crate) fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}
