//! Row locks taken while a SELECT ... FOR UPDATE/SHARE runs.

use tierdb_engine::{LockMode, LockOutcome, WaitPolicy};

use crate::error::{Result, SqlError};
use crate::exec::{self, Ctx, Row, Sink};
use crate::plan::BoundTable;
use crate::plan::Expr;
use crate::types::Datum;

/// The executor's side of LockRows (`PlanKind::LockRows`).
pub(crate) struct RowLocker<'p> {
    pub table: &'p BoundTable,
    pub mode: LockMode,
    pub policy: WaitPolicy,
    pub recheck: &'p Option<Expr>,
}

impl RowLocker<'_> {
    /// Locks the row (its key is the last column) and passes it, or its latest version, on.
    pub fn pass(&self, ctx: &mut Ctx<'_>, mut row: Row, sink: &mut Sink<'_>) -> Result<bool> {
        let Some(Datum::Bytes(key)) = row.pop() else {
            return Err(SqlError::internal("the locked scan lost the row key"));
        };
        let transaction = ctx.txn.as_deref_mut().ok_or_else(|| {
            SqlError::unsupported("a locking clause is not supported in this position")
        })?;
        match transaction.lock_row(&self.table.handle, &key, self.mode, self.policy)? {
            LockOutcome::Locked { changed: false, .. } => sink(ctx, row),
            LockOutcome::Locked { row: latest, changed: true } => {
                let current: Row = latest
                    .iter()
                    .zip(&self.table.columns)
                    .map(|(value, column)| Datum::from_value(value, &column.ty))
                    .collect();
                if let Some(recheck) = self.recheck {
                    if !exec::holds(recheck, &current, ctx)? {
                        return Ok(true);
                    }
                }
                sink(ctx, current)
            }
            LockOutcome::Skipped | LockOutcome::Gone => Ok(true),
        }
    }
}
