//! Compares `ibmad::names` with the installed libibumad's `umad_str.h`
//! functions for every input that matters.
//!
//! A small C program linked with `-libumad` prints, one answer per line:
//!
//! 1. `umad_class_str(c)` for all 256 classes;
//! 2. `umad_method_str(c, m)` for all 256 × 256 (class, method) pairs;
//! 3. `umad_attribute_str(c, htobe16(a))` for every attribute ID
//!    0..=0xffff of each class in [`ATTR_CLASSES`] — the full range, not a
//!    sample: it is under a million short lines (about 10 MB) and runs in well
//!    under a second, so there is no reason to guess where C might name
//!    something;
//! 4. `umad_common_mad_status_str(htobe16(s))` and
//!    `umad_sa_mad_status_str(htobe16(s))` for all 65536 values.
//!
//! The C functions take attribute IDs and status words as `__be16`, the Rust
//! ones take host-order values, so the C side is passed `htobe16(x)` for each
//! host-order `x` and both sides are compared on the same host-order input.
//!
//! If `cc` or libibumad's development files are missing the test prints a
//! SKIPPED line, unless `CI` is `true` or `1`, where it fails and names the
//! package to install.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use ibmad::names;

/// Classes whose full attribute range is compared: every class with its own
/// table in C (0x01, 0x81, 0x03, 0x07), performance management (0x04, which
/// has none in C), and a spread of other classes (BM, DevMgt, vendor range 1,
/// DevAdm, congestion, vendor range 2, an unassigned one).
const ATTR_CLASSES: [u8; 13] = [
    0x01, 0x81, 0x03, 0x04, 0x07, 0x02, 0x05, 0x06, 0x09, 0x10, 0x21, 0x30, 0xff,
];

const C_SOURCE: &str = r#"
#include <stdio.h>
#include <stdint.h>
#include <endian.h>
#include <infiniband/umad_str.h>

static const uint8_t attr_classes[] = { @ATTR_CLASSES@ };

int main(void)
{
	static char buf[1 << 20];
	unsigned c, m, a, s;
	size_t i;

	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	for (c = 0; c < 256; c++)
		puts(umad_class_str((uint8_t)c));
	for (c = 0; c < 256; c++)
		for (m = 0; m < 256; m++)
			puts(umad_method_str((uint8_t)c, (uint8_t)m));
	for (i = 0; i < sizeof(attr_classes); i++)
		for (a = 0; a < 65536; a++)
			puts(umad_attribute_str(attr_classes[i], htobe16((uint16_t)a)));
	for (s = 0; s < 65536; s++)
		puts(umad_common_mad_status_str(htobe16((uint16_t)s)));
	for (s = 0; s < 65536; s++)
		puts(umad_sa_mad_status_str(htobe16((uint16_t)s)));
	return fflush(stdout) != 0;
}
"#;

/// One expected line: what the input was, and Rust's answer.
struct Expected {
    input: String,
    answer: &'static str,
}

/// Every input in the order the C program prints it, with Rust's answer.
fn rust_answers() -> Vec<Expected> {
    let mut out = Vec::new();
    for c in 0..=u8::MAX {
        out.push(Expected {
            input: format!("umad_class_str({c:#04x})"),
            answer: names::class_str(c),
        });
    }
    for c in 0..=u8::MAX {
        for m in 0..=u8::MAX {
            out.push(Expected {
                input: format!("umad_method_str({c:#04x}, {m:#04x})"),
                answer: names::method_str(c, m),
            });
        }
    }
    for c in ATTR_CLASSES {
        for a in 0..=u16::MAX {
            out.push(Expected {
                input: format!("umad_attribute_str({c:#04x}, htobe16({a:#06x}))"),
                answer: names::attribute_str(c, a),
            });
        }
    }
    for s in 0..=u16::MAX {
        out.push(Expected {
            input: format!("umad_common_mad_status_str(htobe16({s:#06x}))"),
            answer: names::common_mad_status_str(s),
        });
    }
    for s in 0..=u16::MAX {
        out.push(Expected {
            input: format!("umad_sa_mad_status_str(htobe16({s:#06x}))"),
            answer: names::sa_mad_status_str(s),
        });
    }
    out
}

/// Skips (or, on CI, fails) because the C toolchain or libibumad is missing.
fn missing(what: &str) {
    let ci = matches!(
        std::env::var("CI").as_deref().map(str::trim),
        Ok("true") | Ok("1")
    );
    let fix = "apt-get install -y gcc libibumad-dev";
    if ci {
        panic!("names_vs_libibumad: {what}; install it with `{fix}`");
    }
    eprintln!(
        "\n*** SKIPPED names_vs_libibumad: {what}; the name tables were NOT \
         compared with libibumad (install with `{fix}`) ***\n"
    );
}

/// A scratch directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "mad-names-vs-libibumad-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds the C program; `None` (after reporting) when the toolchain or
/// libibumad is missing.
fn build(dir: &Path) -> Option<PathBuf> {
    let classes = ATTR_CLASSES
        .iter()
        .map(|c| format!("{c:#04x}"))
        .collect::<Vec<_>>()
        .join(", ");
    let src = dir.join("umad_names.c");
    let exe = dir.join("umad_names");
    std::fs::write(&src, C_SOURCE.replace("@ATTR_CLASSES@", &classes)).expect("write C source");

    let output = match Command::new("cc")
        .arg("-O1")
        .arg("-Wall")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg("-libumad")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            missing(&format!("cannot run `cc` ({e})"));
            return None;
        }
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("umad_str.h") || stderr.contains("-libumad") {
            missing(&format!("libibumad development files not found:\n{stderr}"));
            return None;
        }
        panic!("compiling the C reference program failed:\n{stderr}");
    }
    Some(exe)
}

#[test]
fn names_match_libibumad_for_every_input() {
    let dir = TempDir::new();
    let Some(exe) = build(dir.path()) else {
        return;
    };
    let output = Command::new(&exe)
        .output()
        .expect("run the C reference program");
    assert!(
        output.status.success(),
        "C reference program failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("C output is UTF-8");
    let c_lines: Vec<&str> = stdout.lines().collect();
    let expected = rust_answers();

    let mut report = String::new();
    let mut mismatches = 0usize;
    for (want, got) in expected.iter().zip(&c_lines) {
        if want.answer != *got {
            mismatches += 1;
            if mismatches <= 20 {
                let _ = writeln!(
                    report,
                    "  {}: C {:?}, Rust {:?}",
                    want.input, got, want.answer
                );
            }
        }
    }
    assert_eq!(
        c_lines.len(),
        expected.len(),
        "C printed {} lines, expected {}; differences so far:\n{report}",
        c_lines.len(),
        expected.len()
    );
    assert!(
        mismatches == 0,
        "{mismatches} of {} answers differ from libibumad (first 20):\n{report}",
        expected.len()
    );
}
