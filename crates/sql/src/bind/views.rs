//! Views named in FROM (docs/design/018): the stored query is parsed and bound in place of a
//! scan, as PostgreSQL's rewriter puts the view's query in place of the relation. It is bound
//! by a binder of its own, so that it sees none of the statement's enclosing scopes, WITH
//! lists or parameters, only the catalog.

use super::*;

impl Binder<'_> {
    /// The plan of view `view`: its query's first columns, named and typed as the view's
    /// columns were when it was created. Those are its columns for good: a query with `*`
    /// over a table that gained columns since returns more, which are left out (PostgreSQL
    /// expands `*` at CREATE VIEW); a query that no longer yields the view's columns first
    /// fails instead of returning other data.
    pub(crate) fn view_reference(&mut self, view: &TableMeta) -> Result<Plan> {
        let definition = view.view.as_ref().expect("view_reference of a view");
        if self.namespace.views_restricted {
            return Err(SqlError::unsupported(format!(
                "access to non-system view \"{}\" is restricted",
                view.name
            )));
        }
        if self.views_in_progress.contains(&view.name) {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{}\"", view.name),
            ));
        }
        let query = crate::parse::parse_view_query(&definition.query)?;
        let mut inner = Binder::new(self.catalog, self.namespace.clone(), Vec::new());
        inner.next_id = self.next_id;
        inner.evaluator = self.evaluator;
        inner.views_in_progress = self.views_in_progress.clone();
        inner.views_in_progress.push(view.name.clone());
        let bound = inner.query(&query);
        self.next_id = inner.next_id;
        let plan = bound?;
        let changed = plan.columns.len() < view.columns.len()
            || plan.columns.iter().zip(&view.columns).any(|(bound, column)| bound.ty != column.ty);
        if changed {
            return Err(SqlError::unsupported(format!(
                "view \"{}\" no longer yields its columns (a table it reads changed); CREATE OR REPLACE VIEW it",
                view.name
            )));
        }
        let columns = super::from::relation_columns(view);
        let exprs = (0..view.columns.len()).map(Expr::Column).collect();
        Ok(self.plan(PlanKind::Project { input: Box::new(plan), exprs }, columns))
    }
}
