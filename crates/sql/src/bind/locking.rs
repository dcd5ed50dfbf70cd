//! Locking clauses (`SELECT ... FOR UPDATE / FOR SHARE [OF t] [NOWAIT | SKIP LOCKED]`): what
//! the binder accepts, as PostgreSQL does, and the executor's LockRows step.
//!
//! The locks themselves are the engine's (`Transaction::lock_row`, crates/engine/src/locks.rs).
//! PostgreSQL's FOR NO KEY UPDATE and FOR KEY SHARE exist in the engine but sqlparser 0.63
//! does not parse them: they fail as syntax errors (42601), never silently.

use sqlparser::ast;
use tierdb_engine::{LockMode, WaitPolicy};

use crate::error::{Result, SqlError};

/// The locking clauses of one query, combined as PostgreSQL combines clauses naming the same
/// table: the strongest mode and the strongest wait policy (NOWAIT over SKIP LOCKED).
#[derive(Clone, Debug)]
pub(crate) struct LockSpec {
    pub mode: LockMode,
    pub policy: WaitPolicy,
    /// The `OF` tables named (empty: every table of the FROM clause).
    pub of: Vec<String>,
}

impl LockSpec {
    /// The clauses of `query`, or None without any.
    pub fn of_query(query: &ast::Query) -> Result<Option<LockSpec>> {
        let mut spec: Option<LockSpec> = None;
        for clause in &query.locks {
            let mode = match clause.lock_type {
                ast::LockType::Update => LockMode::Update,
                ast::LockType::Share => LockMode::Share,
            };
            let policy = match clause.nonblock {
                None => WaitPolicy::Block,
                Some(ast::NonBlock::SkipLocked) => WaitPolicy::SkipLocked,
                Some(ast::NonBlock::Nowait) => WaitPolicy::NoWait,
            };
            let spec = spec.get_or_insert(LockSpec { mode, policy, of: Vec::new() });
            spec.mode = spec.mode.max(mode);
            spec.policy = spec.policy.max(policy);
            if let Some(name) = &clause.of {
                spec.of.push(crate::bind::object_name(name)?);
            }
        }
        if let Some(spec) = &spec {
            spec.check_query(query)?;
        }
        Ok(spec)
    }

    fn not_allowed(&self, with: &str) -> SqlError {
        SqlError::unsupported(format!("{} is not allowed with {with}", self.mode.clause()))
    }

    /// PostgreSQL's CheckSelectLocking, in its order.
    fn check_query(&self, query: &ast::Query) -> Result<()> {
        let ast::SetExpr::Select(select) = query.body.as_ref() else {
            return Err(self.not_allowed("UNION/INTERSECT/EXCEPT"));
        };
        if select.distinct.is_some() {
            return Err(self.not_allowed("DISTINCT clause"));
        }
        let grouped = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
            ast::GroupByExpr::All(_) => true,
        };
        if grouped {
            return Err(self.not_allowed("GROUP BY clause"));
        }
        if select.having.is_some() {
            return Err(self.not_allowed("HAVING clause"));
        }
        let aggregates = select.projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. } => {
                crate::bind::contains_aggregate(expr)
            }
            _ => false,
        });
        if aggregates {
            return Err(self.not_allowed("aggregate functions"));
        }
        Ok(())
    }

    /// Checks that the FROM clause is one that tierdb can lock: one table, which any `OF`
    /// names (by alias if it has one). 42P01 for an `OF` name not in FROM, 0A000 for joins
    /// and derived tables.
    pub fn check_from(&self, from: &[ast::TableWithJoins]) -> Result<()> {
        let names: Vec<String> = match from {
            [] => Vec::new(),
            [only] if only.joins.is_empty() => match &only.relation {
                ast::TableFactor::Table { name, alias, args: None, .. } => {
                    vec![match alias {
                        Some(alias) => crate::bind::ident(&alias.name),
                        None => crate::bind::object_name(name)?,
                    }]
                }
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "{} on a derived table or function is not supported",
                        self.mode.clause()
                    )))
                }
            },
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{} with joins or several tables is not supported",
                    self.mode.clause()
                )))
            }
        };
        for named in &self.of {
            if !names.contains(named) {
                return Err(SqlError::new(
                    "42P01",
                    format!(
                        "relation \"{named}\" in {} clause not found in FROM clause",
                        self.mode.clause()
                    ),
                ));
            }
        }
        Ok(())
    }
}
