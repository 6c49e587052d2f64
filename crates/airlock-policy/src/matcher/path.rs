//! path matcher (being written)
