//! Node catalog.
