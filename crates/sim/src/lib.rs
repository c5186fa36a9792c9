#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod deliver;
pub mod faults;
pub mod generate;
pub mod lid;
pub mod load;
mod mkey;
pub mod model;
pub mod net;
mod pkey;
pub mod pma;
pub mod pma_other;
pub mod smi;
pub mod state;
mod tables;
#[cfg(test)]
mod tests;
pub mod trap;

pub use deliver::{Delivery, Reply, Unanswered};
pub use faults::{Fate, FaultError, Faults};
pub use model::{Builder, Fabric, Node, NodeIdx, NodeSpec, Origin, Port};
pub use net::{Arrival, Net};
pub use smi::{Answer, Dropped};
pub use state::{LinkChange, LinkError};
pub use trap::Trap;

/// What the simulator refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A fabric that breaks an IBA rule or is inconsistent, with where it was defined.
    #[error("{origin}: {what}")]
    Invalid {
        /// Where the offending node or link was defined.
        origin: Origin,
        /// What is wrong.
        what: String,
    },
    /// A netfile that does not parse (the error names the file and line).
    #[error(transparent)]
    Netfile(#[from] ibnetfile::NetfileError),
}

/// The simulator's result type.
pub type Result<T> = std::result::Result<T, Error>;
