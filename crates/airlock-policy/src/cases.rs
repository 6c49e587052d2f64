//! cases (being written)
