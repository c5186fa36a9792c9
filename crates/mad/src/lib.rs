//! InfiniBand MAD wire formats (being written).
#![forbid(unsafe_code)]
