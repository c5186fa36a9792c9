//! The libibumad C ABI (being written).
