//! document (being written)
