//! valgrind memcheck on real programs running on our `libibumad.so.3` under umad2sim.
//!
//! The criterion is "no error in our code": valgrind's XML report is parsed, and the test
//! fails if any error that is not umad2sim's own has a frame (in its main, allocation or
//! origin stack) in our library. umad2sim has two known defects that valgrind reports on every
//! MAD (docs/ibsim-harness.md §1.6), both with umad2sim frames on top:
//!
//! * `write` of a MAD sends umad2sim's own stack `struct sim_request`, whose padding is
//!   uninitialised → a suppression that matches only libc's `write` called by two umad2sim
//!   frames (the origin is a stack allocation in umad2sim);
//! * `read` copies header + 256 bytes out of its 288-byte receive buffer, 24 bytes too many →
//!   an `InvalidRead` in valgrind's `memmove` called by umad2sim's `read`, past a 288-byte
//!   block. Suppressions cannot tell reads from writes (`Addr8` covers both), and umad2sim
//!   overflowing *our* buffer would be the same frames, so this one is classified here
//!   instead: only an `InvalidRead` past a 288-byte block is umad2sim's.
//!
//! `LD_PRELOAD=libumad2sim.so` is set in valgrind's environment; valgrind hands it to the
//! client (`--trace-children=no`). The wrapper shell and launcher get it too, but umad2sim
//! stays dormant in them (it initialises on the first `/sys/class/infiniband` access).

use std::path::PathBuf;
use std::time::Duration;

use compat::drop_in::{
    check_loaded, parse_valgrind_xml, run_tool_with, valgrind_suppressed, ToolRun, ValgrindError,
};
use compat::{require_drop_in, Library, SONAME};
use ibsim_harness::{example_fabric, find_tool, ibsim_required, require_ibsim, Ibsim};

/// Suppressions for umad2sim's own defects; every entry matches only frames of libc's
/// syscall wrapper and of `libumad2sim.so`.
const SUPPRESSIONS: &str = "\
{
   umad2sim-write-sends-uninitialised-padding-of-its-own-sim_request
   Memcheck:Param
   write(buf)
   obj:*/libc.so*
   ...
   obj:*/libumad2sim.so
   obj:*/libumad2sim.so
}
";

/// valgrind is slow: a generous limit per run.
const VALGRIND_TIMEOUT: Duration = Duration::from_secs(300);

/// The valgrind binary, or `None` (skip, or panic when ibsim tests are required).
fn require_valgrind(test: &str) -> Option<PathBuf> {
    if let Some(v) = find_tool("valgrind") {
        return Some(v);
    }
    assert!(
        !ibsim_required(),
        "{test}: valgrind is not installed (apt-get install -y valgrind)"
    );
    eprintln!("SKIPPED {test}: valgrind is not installed (apt-get install -y valgrind)");
    None
}

/// Whether `e` is umad2sim's known over-read of its 288-byte receive buffer: an
/// `InvalidRead` whose top frames are valgrind's `mem*` replacement called by umad2sim's
/// `read`, at an address just past a block of 288 bytes.
fn is_umad2sim_receive_overread(e: &ValgrindError) -> bool {
    let top: Vec<&str> = e.objects.iter().take(2).map(String::as_str).collect();
    e.kind == "InvalidRead"
        && matches!(top.as_slice(), [a, b] if a.contains("/vgpreload_memcheck") && b.ends_with("/libumad2sim.so"))
        && e.raw.contains("<fn>read</fn>")
        && e.raw.contains("bytes after a block of size 288")
}

/// The outcome of one program under valgrind.
struct Checked {
    run: ToolRun,
    errors: Vec<ValgrindError>,
    umad2sim_overreads: usize,
    suppressed: u64,
}

/// Runs `program args…` under valgrind memcheck on our library as a umad2sim client of
/// `sim`, and asserts that no error touches our library.
fn valgrind_on_ours(sim: &Ibsim, ours: &Library, program: &str, args: &[&str]) -> Checked {
    let Library::DropIn(dir) = ours else {
        unreachable!("valgrind runs on our library")
    };
    let our_lib: PathBuf = dir.join(SONAME);
    let tool = find_tool(program).unwrap_or_else(|| panic!("{program} is not installed"));
    let n = sim.workdir().read_dir().map_or(0, Iterator::count);
    let supp = sim.workdir().join("umad2sim.supp");
    std::fs::write(&supp, SUPPRESSIONS).expect("write suppressions");
    let xml_path = sim.workdir().join(format!("valgrind-{program}-{n}.xml"));
    let mut argv: Vec<String> = [
        "--trace-children=no",
        "--error-exitcode=99",
        "--errors-for-leak-kinds=definite",
        "--leak-check=full",
        "--track-origins=yes",
        "--num-callers=40",
        "--xml=yes",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    argv.push(format!("--suppressions={}", supp.display()));
    argv.push(format!("--xml-file={}", xml_path.display()));
    argv.push(tool.to_string_lossy().into_owned());
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let run = run_tool_with(sim, ours, "valgrind", &argv, &[], VALGRIND_TIMEOUT)
        .unwrap_or_else(|e| panic!("valgrind {program}: {e}"));
    check_loaded(ours, &run.libibumad).unwrap_or_else(|e| panic!("valgrind {program}: {e}"));
    let xml = std::fs::read_to_string(&xml_path)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", xml_path.display(), run.describe()));
    assert!(
        xml.contains("<state>FINISHED</state>"),
        "valgrind did not finish {program}:\n{}",
        run.describe()
    );
    let all = parse_valgrind_xml(&xml);
    let (overreads, errors): (Vec<_>, Vec<_>) =
        all.into_iter().partition(is_umad2sim_receive_overread);
    let ours_errors: Vec<&ValgrindError> = errors.iter().filter(|e| e.touches(&our_lib)).collect();
    assert!(
        ours_errors.is_empty(),
        "valgrind found {} error(s) with frames in our {} while running {program}:\n\n{}",
        ours_errors.len(),
        our_lib.display(),
        ours_errors
            .iter()
            .map(|e| e.raw.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // 99 = valgrind found errors (umad2sim's, or the tools' own such as libibnetdisc's leak);
    // anything else is the program's own failure.
    assert!(
        run.code() == 0 || run.code() == 99,
        "{program} under valgrind exited {}:\n{}",
        run.code(),
        run.describe()
    );
    for e in &errors {
        eprintln!(
            "note: valgrind error outside our library while running {program}: {} {} (objects: {})",
            e.kind,
            e.what,
            distinct(&e.objects).join(", ")
        );
    }
    Checked {
        suppressed: valgrind_suppressed(&xml).values().sum(),
        umad2sim_overreads: overreads.len(),
        errors,
        run,
    }
}

fn distinct(objects: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for o in objects {
        if !out.contains(&o.as_str()) {
            out.push(o);
        }
    }
    out
}

fn report(name: &str, c: &Checked) {
    eprintln!(
        "{name}: `{}` in {:.2?}: {} umad2sim receive over-read(s) and {} suppressed umad2sim \
         write error(s) ignored, {} error(s) elsewhere, none in our library",
        c.run.command,
        c.run.elapsed,
        c.umad2sim_overreads,
        c.suppressed,
        c.errors.len()
    );
}

/// Common set-up: ibsim on the example fabric, subnet up, our library, valgrind.
fn setup(name: &str) -> Option<(Ibsim, Library)> {
    if !require_ibsim(name) {
        return None;
    }
    let dir = require_drop_in(name)?;
    require_valgrind(name)?;
    let sim = Ibsim::start(example_fabric()).expect("ibsim");
    sim.run_sm_once().expect("opensm -o");
    Some((sim, Library::DropIn(dir)))
}

/// `ibnetdiscover` (discovery of the whole example fabric: ~100 SMPs through `umad_send`,
/// `umad_recv`, `umad_poll`, device enumeration, open/close) has no error in our code.
#[test]
fn valgrind_ibnetdiscover_on_ours() {
    const NAME: &str = "valgrind_ibnetdiscover_on_ours";
    let Some((sim, ours)) = setup(NAME) else {
        return;
    };
    let c = valgrind_on_ours(&sim, &ours, "ibnetdiscover", &[]);
    for node in ["\"sw1\"", "\"sw2\"", "host1 HCA-1", "host4 HCA-1"] {
        assert!(c.run.stdout.contains(node), "{node}\n{}", c.run.describe());
    }
    assert!(
        c.umad2sim_overreads + usize::try_from(c.suppressed).unwrap_or(0) > 0,
        "expected umad2sim's known errors (is valgrind really watching the client?)\n{}",
        c.run.describe()
    );
    report(NAME, &c);
}

/// `smpquery nodeinfo <lid>` (a LID-routed SMP: open, register, send, poll, recv, close)
/// has no error in our code.
#[test]
fn valgrind_smpquery_nodeinfo_on_ours() {
    const NAME: &str = "valgrind_smpquery_nodeinfo_on_ours";
    let Some((sim, ours)) = setup(NAME) else {
        return;
    };
    // S-sw2: LID 3 after opensm -o from H-host1 (fabrics/README.md); checked below.
    let c = valgrind_on_ours(&sim, &ours, "smpquery", &["nodeinfo", "3"]);
    assert!(
        c.run
            .stdout
            .contains("NodeType:........................Switch")
            && c.run
                .stdout
                .contains("Guid:............................0x0000000000200001"),
        "{}",
        c.run.describe()
    );
    report(NAME, &c);
}
