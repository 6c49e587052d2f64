//! secrets (being written)
