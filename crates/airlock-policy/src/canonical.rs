//! canonical (being written)
