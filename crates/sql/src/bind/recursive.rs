//! WITH RECURSIVE: a CTE whose query is `non-recursive term UNION [ALL] recursive term`
//! and whose recursive term reads the CTE itself becomes a RecursiveUnion over a work
//! table (exec/recursive.rs); a CTE of a WITH RECURSIVE that does not read itself is an
//! ordinary CTE. PostgreSQL's checks and messages (42P19, 42804, 0A000) apply.

use super::*;

/// A CTE of a WITH clause; its query is bound where the CTE is referenced.
#[derive(Clone)]
pub(crate) struct CteDefinition {
    pub query: ast::Query,
    /// The column names of `name (a, b) AS (...)`.
    pub columns: Vec<String>,
    /// Declared under WITH RECURSIVE: it may read itself.
    pub recursive: bool,
}

/// What a reference to a recursive CTE's own name means while its query is bound.
#[derive(Clone)]
enum SelfReference {
    /// Inside the non-recursive term: an error.
    NonRecursiveTerm,
    /// The query is not a UNION: an error.
    NotUnion,
    /// Inside the recursive term at subquery level `level`: the work table.
    RecursiveTerm { work_table: usize, columns: Vec<OutputColumn>, level: usize },
}

/// A recursive CTE whose query is being bound.
#[derive(Clone)]
pub(crate) struct WorkTableBinding {
    name: String,
    state: SelfReference,
    /// The recursive term read the CTE.
    referenced: bool,
}

fn recursion_error(message: String) -> SqlError {
    SqlError::new("42P19", message)
}

impl Binder<'_> {
    /// A FROM reference to `name` inside the query of the recursive CTE of that name: its
    /// work table (None: no recursive CTE of that name is being bound).
    pub(crate) fn work_table_reference(&mut self, name: &str) -> Option<Result<Plan>> {
        let level = self.correlated.len();
        let binding = self.work_tables.iter_mut().rev().find(|binding| binding.name == name)?;
        let (work_table, columns) = match &binding.state {
            SelfReference::NonRecursiveTerm => {
                return Some(Err(recursion_error(format!(
                    "recursive reference to query \"{name}\" must not appear within its non-recursive term"
                ))))
            }
            SelfReference::NotUnion => {
                return Some(Err(recursion_error(format!(
                    "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
                ))))
            }
            SelfReference::RecursiveTerm { level: bound_level, .. } if *bound_level != level => {
                return Some(Err(recursion_error(format!(
                    "recursive reference to query \"{name}\" must not appear within a subquery"
                ))))
            }
            SelfReference::RecursiveTerm { work_table, columns, .. } => {
                (*work_table, columns.clone())
            }
        };
        if binding.referenced {
            return Some(Err(recursion_error(format!(
                "recursive reference to query \"{name}\" must not appear more than once"
            ))));
        }
        binding.referenced = true;
        Some(Ok(self.plan(PlanKind::WorkTable { work_table }, columns)))
    }

    /// Binds the CTE `name` declared under WITH RECURSIVE: a RecursiveUnion when its
    /// recursive term reads it, None when it does not read itself (an ordinary CTE).
    pub(crate) fn recursive_cte(
        &mut self,
        name: &str,
        cte: &CteDefinition,
    ) -> Result<Option<Plan>> {
        let ast::SetExpr::SetOperation { left, op: ast::SetOperator::Union, set_quantifier, right } =
            cte.query.body.as_ref()
        else {
            self.with_self_reference(name, SelfReference::NotUnion, |binder| {
                binder.query(&cte.query)
            })?;
            return Ok(None);
        };
        let (base, _) =
            self.with_self_reference(name, SelfReference::NonRecursiveTerm, |binder| {
                binder.set_expr(left)
            })?;
        let mut columns = base.columns.clone();
        for column in &mut columns {
            if column.ty == SqlType::Unknown {
                column.ty = SqlType::Text;
            }
        }
        let base = self.cast_plan(base, &columns);
        let mut columns = base.columns.clone();
        rename_columns_of(&mut columns, &cte.columns);
        let work_table = self.id();
        let state = SelfReference::RecursiveTerm {
            work_table,
            columns: columns.clone(),
            level: self.correlated.len(),
        };
        let (step, referenced) =
            self.with_self_reference(name, state, |binder| binder.set_expr(right))?;
        if !referenced {
            return Ok(None);
        }
        if cte.query.order_by.is_some() {
            return Err(SqlError::unsupported("ORDER BY in a recursive query is not implemented"));
        }
        if cte.query.limit_clause.is_some() {
            return Err(SqlError::unsupported("LIMIT in a recursive query is not implemented"));
        }
        if step.arity() != base.arity() {
            return Err(SqlError::syntax("each UNION query must have the same number of columns"));
        }
        for (position, (column, other)) in columns.iter().zip(&step.columns).enumerate() {
            let overall = SqlType::common(&column.ty, &other.ty);
            if overall.as_ref() != Some(&column.ty) {
                let overall = overall.unwrap_or_else(|| other.ty.clone());
                return Err(SqlError::datatype_mismatch(format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    position + 1,
                    column.ty.display_name(),
                    overall.display_name()
                )));
            }
        }
        let step = self.cast_plan(step, &columns);
        let all = matches!(set_quantifier, ast::SetQuantifier::All);
        let kind = PlanKind::RecursiveUnion {
            base: Box::new(base),
            step: Box::new(step),
            all,
            work_table,
        };
        Ok(Some(self.plan(kind, columns)))
    }

    /// Runs `bind` with references to `name` meaning `state`; returns its result and
    /// whether it referenced `name`.
    fn with_self_reference<T>(
        &mut self,
        name: &str,
        state: SelfReference,
        bind: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<(T, bool)> {
        self.work_tables.push(WorkTableBinding {
            name: name.to_string(),
            state,
            referenced: false,
        });
        let outcome = bind(self);
        let binding = self.work_tables.pop().expect("pushed above");
        Ok((outcome?, binding.referenced))
    }
}

fn rename_columns_of(columns: &mut [OutputColumn], names: &[String]) {
    for (column, name) in columns.iter_mut().zip(names) {
        column.name = name.clone();
    }
}
