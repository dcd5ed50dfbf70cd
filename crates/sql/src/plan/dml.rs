//! Plans of INSERT, UPDATE and DELETE.

use crate::plan::{BoundTable, Expr, OutputColumn, Plan};

#[derive(Debug)]
pub(crate) struct InsertPlan {
    pub table: BoundTable,
    pub targets: Vec<usize>,
    pub source: Plan,
    pub defaults: Vec<Option<Expr>>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Debug)]
pub(crate) struct UpdatePlan {
    pub table: BoundTable,
    pub scan: Plan,
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Debug)]
pub(crate) struct DeletePlan {
    pub table: BoundTable,
    pub scan: Plan,
    /// The WHERE clause, re-checked on a row a concurrent update changed (READ COMMITTED).
    pub filter: Option<Expr>,
    pub returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}
