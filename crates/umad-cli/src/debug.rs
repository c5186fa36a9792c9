//! `-d` (repeatable) and `-e`: the debug and error lines, the one place every tool prints
//! them from, after infiniband-diags' `ibdiag_common.c` (`-d`: `ibdebug++`,
//! `madrpc_show_errors(1)`) and libibmad (`rpc.c`, `smp.c`, `sa.c`, `gs.c`, `portid.c`).
//!
//! What each level prints, on stderr:
//!
//! * `-e`: libibmad's `ERRS` lines: `_do_madrpc: retry <n> (timeout <ms> ms)`,
//!   `_do_madrpc: timeout after <n> retries, <ms> ms`, `MAD completed with error status ...`
//!   ([`errs`]).
//! * `-d`: those, and libibmad's `DEBUG` lines ([`debug`]: `smp_query_status_via: attr 0x11
//!   mod 0x0 route Lid 1`, `str2drpath: DR str: 0,1`, `pma_query_via: lid 1 port 1`, ...), and
//!   the tools' own `DEBUG` lines ([`ibdebug`]: `ibdebug: [pid] get_node: ...`).
//! * `-dd`: also libibmad's `_do_madrpc` dumps of every MAD sent (`>>> sending: len 256
//!   pktsz 320`, then `send buf` and the user-MAD header and MAD in [`xdump`] form) and
//!   received (`rcv buf:`, then `rcv buf` and the MAD), through an [`Rpc`] observer
//!   ([`attach`]); smpdump's `before send:` and saquery's `SA Request:`/`SA Response:` dumps.
//!
//! Every line has C's form (`ibwarn: [<pid>] <function>: <message>`, the C function's name),
//! so `umad <tool> -d` and the C tool print the same lines for the single-query tools
//! (smpquery, smpdump, perfquery, saquery, sminfo, ibaddr, ibportstate, ibroute, ibtracert),
//! but for run-dependent values (pids, TIDs, C's pointer in `mad_rpc_rmpp: rmpp (nil) data
//! 0x...`). The discovery tools (ibnetdiscover, ibqueryerrors, dump_fts, ...) keep many MADs
//! in flight: they print the same kind of lines ([`attach_pipelined`]: each SMP's
//! `smp_query_status_via` line as it is sent, the dumps at `-dd`), in the order the engine
//! sends and reads, which is not C's; libibnetdisc's own `ibdebug:` lines are not printed.
//!
//! Differences from C, on purpose:
//!
//! * Everything goes to stderr. C prints the tools' own `DEBUG` lines (`ibdebug: ...`) and
//!   saquery's dumps on stdout, in the middle of the output; here stdout is the same with and
//!   without `-d`.
//! * libibumad's own trace (`umad_debug(ibdebug - 1)` at `-dd`: `umad_open_port: ...`,
//!   `umad_send: ...`, `umad_addr_dump`, ...) is not printed: it describes the C library's
//!   internals (fds, buffers), which the `umad` crate does not have.
//! * A request is handed to the transport once, with its retries (the kernel retries); the
//!   `retry <n>` lines of a request that timed out are printed when it ends, and its `-dd`
//!   dumps show the one send (C dumps every attempt).

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use umad::abi::{HeaderLayout, UserMadHeader};
use umad::rpc::{MadEvent, Rpc};

/// `ibdebug`: the number of `-d`.
static LEVEL: AtomicU8 = AtomicU8::new(0);
/// `iberrs`: `-e` (or `-d`).
static ERRORS: AtomicBool = AtomicBool::new(false);

/// Sets the debug level (`-d` counted) and whether errors are shown (`-e`), for the whole
/// process, as C's globals `ibdebug` and `iberrs`.
pub fn set(level: u8, errors: bool) {
    LEVEL.store(level, Ordering::Relaxed);
    ERRORS.store(errors || level > 0, Ordering::Relaxed);
}

/// The debug level (`-d` counted).
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Whether `ERRS` lines are printed (`-e` or `-d`).
pub fn errors() -> bool {
    ERRORS.load(Ordering::Relaxed)
}

/// A warning on stderr in libibmad's `IBWARN` form (`ibwarn: [pid] func: msg`), always.
pub fn ibwarn(func: &str, msg: &str) {
    eprintln!("ibwarn: [{}] {func}: {msg}", std::process::id());
}

/// The text of an I/O error as the C library's `strerror` writes it (std adds ` (os error
/// N)`).
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The `IBWARN` lines libibmad's dumpers print while formatting `fields` of `data`
/// ([`ibmad::dump::fields_warnings`]: `mad_dump_linkwidth: bad width 0`).
pub fn dump_warnings(data: &[u8], fields: &[ibmad::dump::Field]) {
    for (func, msg) in ibmad::dump::fields_warnings(data, fields) {
        ibwarn(func, &msg);
    }
}

/// The `IBWARN` line, if any, libibmad's dumper for `fmt` prints for `value`
/// ([`ibmad::dump::value_warning`]).
pub fn value_warning(fmt: ibmad::dump::Fmt, value: u64) {
    if let Some((func, msg)) = ibmad::dump::value_warning(fmt, value) {
        ibwarn(func, &msg);
    }
}

/// libibmad's `IBPANIC` from a tool's `main` (`ibpanic: [pid] main: msg` on stderr); returns
/// its exit code (255). C appends `strerror(errno)` to most messages: callers pass it in.
pub fn ibpanic(msg: &str) -> i32 {
    eprintln!("ibpanic: [{}] main: {msg}", std::process::id());
    crate::exit::FAILURE
}

/// libibmad's `DEBUG`: an [`ibwarn`] line at `-d` and above.
pub fn debug(func: &str, args: fmt::Arguments<'_>) {
    if level() > 0 {
        ibwarn(func, &args.to_string());
    }
}

/// libibmad's `ERRS`: an [`ibwarn`] line with `-e` or `-d`.
pub fn errs(func: &str, args: fmt::Arguments<'_>) {
    if errors() {
        ibwarn(func, &args.to_string());
    }
}

/// infiniband-diags' own `DEBUG` (`IBDEBUG`: `ibdebug: [pid] func: msg`) at `-d` and above.
/// C prints it on stdout; here it goes to stderr (see the [module docs](self)).
pub fn ibdebug(func: &str, args: fmt::Arguments<'_>) {
    if level() > 0 {
        eprintln!("ibdebug: [{}] {func}: {args}", std::process::id());
    }
}

/// libibmad's `xdump(file, msg, p, size)` text: `msg`, then [`ibmad::dump::xdump`].
pub fn xdump(msg: &str, bytes: &[u8]) -> String {
    format!("{msg}{}", ibmad::dump::xdump(bytes))
}

/// Prints [`xdump`] on stderr at `-dd` and above (smpdump's `before send:`, saquery's
/// `SA Request:`/`SA Response:`).
pub fn dump(msg: &str, bytes: &[u8]) {
    if level() > 1 {
        let _ = std::io::stderr()
            .lock()
            .write_all(xdump(msg, bytes).as_bytes());
    }
}

/// libibmad's `IB_MAD_SIZE`: how much of a received MAD `_do_madrpc` dumps.
const MAD_SIZE: usize = 256;

/// At `-dd` and above, makes `rpc` print libibmad's `_do_madrpc` dumps of every MAD it sends
/// (the 64-byte user-MAD header as C has it when it dumps: only the address set, then the
/// MAD) and reads (the first 256 bytes of the MAD). Below `-dd`, does nothing: the engine
/// runs without an observer.
pub fn attach(rpc: &Rpc) {
    if level() < 2 {
        return;
    }
    rpc.set_observer(Some(Arc::new(|e: &MadEvent<'_>| {
        let _ = std::io::stderr().lock().write_all(dump_text(e).as_bytes());
    })));
}

/// `_do_madrpc`'s dump of `e` (`-dd`): a MAD sent (the 64-byte user-MAD header as C has it
/// when it dumps, only the address set, then the MAD) or read (its first 256 bytes). A
/// request the transport gives back unanswered is not dumped here: see [`timed_out`].
fn dump_text(e: &MadEvent<'_>) -> String {
    match *e {
        MadEvent::Sending { mad, addr } => {
            let mut h = UserMadHeader::from_prefix(&[], HeaderLayout::WithPkey);
            addr.emit(&mut h.addr_mut());
            let mut buf = vec![0u8; HeaderLayout::WithPkey.header_len()];
            h.write_prefix(&mut buf);
            buf.extend_from_slice(mad);
            format!(
                "ibwarn: [{}] _do_madrpc: >>> sending: len {} pktsz {}\n{}",
                std::process::id(),
                mad.len(),
                buf.len(),
                xdump("send buf\n", &buf)
            )
        }
        MadEvent::Received { mad, status: 0, .. } => rcv_dump(mad),
        MadEvent::Received { .. } => String::new(),
    }
}

/// `_do_madrpc`'s dump of a received MAD (its first 256 bytes).
fn rcv_dump(mad: &[u8]) -> String {
    format!(
        "ibwarn: [{}] _do_madrpc: rcv buf:\n{}",
        std::process::id(),
        xdump("rcv buf\n", &mad[..mad.len().min(MAD_SIZE)])
    )
}

/// For the tools that pipeline SMPs through `rpc` (discovery), which cannot print the
/// query functions' `DEBUG` lines where C does: at `-d` and above, the line C's
/// `smp_query_status_via`/`smp_set_status_via` prints, for every SMP the engine sends, when
/// it sends it; at `-dd` also [`attach`]'s dumps.
pub fn attach_pipelined(rpc: &Rpc) {
    if level() < 1 {
        return;
    }
    let dumps = level() > 1;
    rpc.set_observer(Some(Arc::new(move |e: &MadEvent<'_>| {
        let mut text = String::new();
        if let MadEvent::Sending { mad, addr } = *e {
            if let Ok(smp) = ibmad::Smp::new_checked(mad) {
                let func = if smp.method() == ibmad::Method::Set {
                    "smp_set_status_via"
                } else {
                    "smp_query_status_via"
                };
                let dest = if smp.is_directed_route() {
                    let hops = usize::from(smp.hop_count()).min(63);
                    crate::dest::Dest {
                        lid: 0,
                        dr: Some(crate::dest::DrRoute {
                            elems: smp.initial_path()[..=hops].to_vec(),
                            // C's discovery portids are zeroed: 0, which goes out as
                            // the permissive LID, is what its lines show.
                            slid: unpermissive(smp.dr_slid()),
                            dlid: unpermissive(smp.dr_dlid()),
                        }),
                    }
                } else {
                    crate::dest::Dest::lid(addr.lid)
                };
                text = format!(
                    "ibwarn: [{}] {func}: attr 0x{:x} mod 0x{:x} route {}\n",
                    std::process::id(),
                    smp.attr_id(),
                    smp.attr_mod(),
                    dest.to_c_string()
                );
            }
        }
        if dumps {
            text.push_str(&dump_text(e));
        }
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    })));
}

/// A DrSLID/DrDLID as a zeroed C portid holds it: 0 for the permissive LID.
fn unpermissive(lid: u16) -> u16 {
    if lid == 0xffff {
        0
    } else {
        lid
    }
}

/// libibmad's lines for request `mad` that got no answer in `attempts` attempts of
/// `timeout_ms` each, printed when it ends: at `-dd`, C's dump of the request the kernel
/// gives back after each attempt; with `-e` or `-d`, `retry <n> (timeout <ms> ms)` before
/// every attempt after the first, then `timeout after <attempts> retries, <total> ms`.
pub fn timed_out(mad: &[u8], attempts: u32, timeout_ms: u64) {
    if !errors() {
        return;
    }
    let dumps = level() > 1;
    for n in 0..attempts {
        if n > 0 {
            ibwarn(
                "_do_madrpc",
                &format!("retry {n} (timeout {timeout_ms} ms)"),
            );
        }
        if dumps {
            let _ = std::io::stderr().lock().write_all(rcv_dump(mad).as_bytes());
        }
    }
    ibwarn(
        "_do_madrpc",
        &format!(
            "timeout after {attempts} retries, {} ms",
            u64::from(attempts) * timeout_ms
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdump_with_a_title() {
        assert_eq!(xdump("m\n", &[]), "m\n");
        let twenty: Vec<u8> = (0..20).collect();
        assert_eq!(
            xdump("x\n", &twenty),
            "x\n0001 0203 0405 0607 0809 0a0b 0c0d 0e0f\n1011 1213 \n"
        );
    }
}
