//! Rewrites of a bound plan that keep its result and lower its cost. Binding already chose
//! access paths and join methods (plan/); these passes run once per bound query, after it.
//!
//! - `prune_columns`: each table scan decodes only the columns read above it.

mod columns;

pub use columns::prune_columns;
