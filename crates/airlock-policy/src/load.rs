//! load (being written)
