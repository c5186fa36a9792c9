#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod cache;
pub mod chassis;
pub mod cnum;
pub mod diff;
#[cfg(feature = "discover")]
pub mod discover;
pub mod ibnetdiscover;
pub mod json;
pub mod model;
pub mod netfile;
#[doc(hidden)]
pub mod test_fabrics;

pub use ibnetdiscover::{Format, NodeNameMap, NodeNameMapError, ParseError, WriteOptions};
pub use json::FabricJson;
pub use model::{
    Chassis, Fabric, Link, Node, NodeChassis, Origin, Port, PortRef, Progress, Queried, RawNode,
    Route,
};
