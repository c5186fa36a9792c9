//! sysfs readers (being written).
