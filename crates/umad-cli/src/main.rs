//! `umad`: the multi-call binary. Everything lives in the `umad_cli` library.
#![forbid(unsafe_code)]

fn main() {
    std::process::exit(umad_cli::main_from_env());
}
