//! InfiniBand fabric topology: a model of what a fabric discovery finds (the facts rdma-core's
//! libibnetdisc records), the `ibnetdiscover` text format — written byte for byte as
//! infiniband-diags 44 prints it in each of its modes, and parsed back — and a JSON form.
//!
//! * [`model`]: [`Fabric`], [`Node`], [`Port`], links; nodes kept in libibnetdisc's
//!   iteration order, so writing in `Vec` order reproduces the C tool.
//! * [`ibnetdiscover`]: [`WriteOptions`] / [`Format`] and [`Fabric::write_ibnetdiscover`];
//!   [`Fabric::parse_ibnetdiscover`]; [`NodeNameMap`] (`--node-name-map`).
//! * [`chassis`]: libibnetdisc's SystemImageGUID chassis grouping ([`Fabric::group_chassis`]).
//! * [`diff`]: [`diff::diff`] compares two fabrics (nodes, links, port state, width, speed,
//!   LID, description).
//! * [`json`]: [`FabricJson`], [`Fabric::to_json`], [`Fabric::from_json`].
//! * [`cache`]: libibnetdisc's binary cache file (`ibnetdiscover --cache`):
//!   [`Fabric::from_ibnetdisc_cache`], [`Fabric::to_ibnetdisc_cache`].
//!
//! Discovery itself (SMPs over `umad`) lives elsewhere and fills this model.
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

/// The crate README's example, compiled as a doctest so that it stays true.
#[cfg(all(doctest, feature = "discover"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
