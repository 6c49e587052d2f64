//! shell matcher (being written)
