//! Rewrites of a bound plan that keep its result and lower its cost. Binding already chose
//! access paths and join methods (plan/); these passes run once per bound query, after it.
//!
//! - `prune_columns`: each table scan decodes only the columns read above it.
//! - `fold_constants`: operators over constants are computed once, not per row.
//!
//! And the estimates the binder plans joins by (design 020):
//!
//! - `Estimator`: rows of a plan and selectivities from ANALYZE's statistics.
//! - `choose_join_order`: the cheapest order of a FROM list's joins.
//! - `Estimator::full_scan_is_cheaper`: index or full scan, by cost (access_choice.rs).

mod access_choice;
mod columns;
mod estimate;
mod fold;
mod join_order;

pub use columns::prune_columns;
pub use estimate::{Estimator, Evaluate};
pub use fold::fold_constants;
pub use join_order::{choose as choose_join_order, relations_read, Relation as JoinRelation};
