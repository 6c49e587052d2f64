//! One module per top-level command.

pub mod policy;
