//! What crosses the kernel boundary and the wire, as data: the kernel's user-MAD ABI
//! ([`abi`]), MAD addresses ([`addr`]) and agent registrations ([`agent`]). No I/O here; the
//! crate root re-exports the three modules (`umad::abi`, `umad::addr`, `umad::agent`).

pub mod abi;
pub mod addr;
pub mod agent;
