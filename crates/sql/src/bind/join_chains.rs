//! Explicit inner JOIN chains joined by cost, like a FROM list.
//!
//! `a JOIN b ON p JOIN c ON q` returns the rows of `a, b, c WHERE p AND q`: an inner join's
//! condition is a filter over its inputs, so PostgreSQL flattens such chains into the FROM
//! list (up to join_collapse_limit items) and orders them by cost. ORMs write every join
//! this way, so without this their queries would run in the order written. A chain is
//! flattened when every join is [INNER] JOIN ... ON or CROSS JOIN and every item is a
//! plain table or a non-LATERAL subquery; USING and NATURAL (which merge columns), outer
//! joins, LATERAL items, table functions and parenthesized joins keep the chain as it is.

use super::*;

/// A chain flattened into FROM items: their plans and scopes, and its ON conditions over
/// the chain's columns side by side.
pub(crate) struct FlatChain {
    pub items: Vec<(Plan, Scope)>,
    pub conditions: Vec<Expr>,
}

impl Binder<'_> {
    /// `item` as separate FROM items and conditions, when it is a chain of inner joins
    /// that can be flattened (see the module comment); None otherwise.
    pub(crate) fn flatten_inner_chain(
        &mut self,
        item: &ast::TableWithJoins,
    ) -> Result<Option<FlatChain>> {
        if item.joins.is_empty() || !flattenable_factor(&item.relation) {
            return Ok(None);
        }
        let mut constraints = Vec::with_capacity(item.joins.len());
        for join in &item.joins {
            let constraint = match &join.join_operator {
                ast::JoinOperator::Join(ast::JoinConstraint::On(on))
                | ast::JoinOperator::Inner(ast::JoinConstraint::On(on)) => Some(on),
                ast::JoinOperator::CrossJoin(_) => None,
                _ => return Ok(None),
            };
            if !flattenable_factor(&join.relation) {
                return Ok(None);
            }
            constraints.push(constraint);
        }
        // An error is left to the regular binding of the chain, which reports it with the
        // chain's context (a subquery reading an item to its left is an "invalid reference",
        // not a missing one).
        match self.bind_flat_chain(item, constraints) {
            Ok(chain) => Ok(Some(chain)),
            Err(_) => Ok(None),
        }
    }

    fn bind_flat_chain(
        &mut self,
        item: &ast::TableWithJoins,
        constraints: Vec<Option<&ast::Expr>>,
    ) -> Result<FlatChain> {
        let mut items = vec![self.table_factor(&item.relation)?];
        let mut scope = items[0].1.clone();
        let mut conditions = Vec::new();
        for (join, constraint) in item.joins.iter().zip(constraints) {
            let (plan, right_scope) = self.table_factor(&join.relation)?;
            scope = scope.concat(&right_scope);
            items.push((plan, right_scope));
            // Bound over the items joined so far, as the ON clause sees them.
            if let Some(on) = constraint {
                let condition =
                    self.clause_coerced("JOIN conditions", on, &scope, &SqlType::Bool)?;
                split_conjuncts(condition, &mut conditions);
            }
        }
        Ok(FlatChain { items, conditions })
    }
}

/// Whether a join item can be moved among the FROM list's items: a table (not a table
/// function, whose arguments may read the items to its left) or a subquery that is not
/// LATERAL.
fn flattenable_factor(factor: &ast::TableFactor) -> bool {
    match factor {
        ast::TableFactor::Table { args, .. } => args.is_none(),
        ast::TableFactor::Derived { lateral, .. } => !lateral,
        _ => false,
    }
}
