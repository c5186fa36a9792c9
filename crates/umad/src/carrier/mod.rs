//! Packet carriers beneath the user-space MAD layer ([`crate::layer::Carrier`]): they move
//! single 256-byte MADs and know nothing of agents, TIDs, timeouts or RMPP, which the layer
//! does. Built in: [`ibsim`], a native client of the ibsim simulator's socket protocol.

pub mod ibsim;
