//! `umad`: the multi-call binary. Everything lives in the `umad_cli` library.
#![forbid(unsafe_code)]

fn main() {
    // Killed by SIGHUP/SIGINT/SIGTERM, a tool still gives its ibsim client slot back (ibsim has
    // ten) and then dies of the signal, as C's tools die.
    if let Err(e) = umad::disconnect_on_signals() {
        eprintln!("umad: warning: {e}");
    }
    std::process::exit(umad_cli::main_from_env());
}
