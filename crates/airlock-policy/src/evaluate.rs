//! evaluate (being written)
