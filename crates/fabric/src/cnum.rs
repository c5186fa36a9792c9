//! Numbers in text as C's `strtoull(s, &end, 0)` reads them: `ibmad`'s one scanner
//! ([`ibmad::cnum`]), which `ibnetfile`'s netfile parser, the node-name-map reader and the
//! `umad` tools' option parsing share; re-exported here for them.

pub use ibmad::cnum::*;
