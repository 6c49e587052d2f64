//! domain matcher (being written)
