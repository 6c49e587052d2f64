//! preview (being written)
