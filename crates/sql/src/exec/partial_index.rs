//! A partial index's predicate as the engine's filter of the index's rows
//! (`tierdb_engine::IndexPredicate`): the bound expression evaluated over a row outside any
//! session (it calls immutable functions only), NULL counting as false.

use std::sync::Weak;

use tierdb_engine::{EngineError, IndexPredicate, Value};

use crate::catalog::Catalog;
use crate::plan::Expr;
use crate::types::{Datum, SqlType};

pub(crate) struct BoundIndexPredicate {
    /// The predicate bound over the table's row, or the error its binding gave at load
    /// (writers then fail instead of indexing rows the predicate would reject).
    pub(crate) expr: std::result::Result<Expr, String>,
    /// The table's column types when the predicate was bound.
    pub(crate) types: Vec<SqlType>,
    /// For the evaluation context (weak: the catalog owns the engine that holds this).
    pub(crate) catalog: Weak<Catalog>,
}

impl IndexPredicate for BoundIndexPredicate {
    fn matches(&self, row: &[Value]) -> tierdb_engine::Result<bool> {
        let expr = self
            .expr
            .as_ref()
            .map_err(|message| EngineError::DataException { message: message.clone() })?;
        let catalog = self.catalog.upgrade().ok_or(EngineError::ShuttingDown)?;
        let datums: Vec<Datum> =
            row.iter().zip(&self.types).map(|(value, ty)| Datum::from_value(value, ty)).collect();
        let outcome =
            super::rows::with_planning_ctx(&catalog, |ctx| super::eval(expr, &datums, ctx));
        match outcome {
            Ok(datum) => Ok(matches!(datum, Datum::Bool(true))),
            Err(error) => Err(EngineError::DataException { message: error.message }),
        }
    }
}
