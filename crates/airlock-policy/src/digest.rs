//! digest (being written)
