//! Device enumeration (being written).
