//! ibsim harness (being written).
