//! Helpers for the compatibility tests (being written).
