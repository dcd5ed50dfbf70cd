//! The binder: turns a parsed query (sqlparser AST) into a physical plan against the catalog.
//!
//! It resolves names (42P01, 42703, 42702), types every expression with PostgreSQL's implicit
//! coercions (untyped literals and parameters take their type from context), resolves each
//! function call to its registry entry once, and places aggregation, DISTINCT, ORDER BY and
//! LIMIT. The access paths (`plan/access.rs`: clustering-key or index ranges from WHERE
//! conjuncts) and join strategies (`plan/join.rs`: index nested loop when the inner side has
//! a usable key, else hash join on equality conjuncts, else nested loop) are the planner's.

mod arrays;
mod assignments;
mod call;
mod checks;
mod coerce;
mod datetime;
mod decorrelate;
mod dml;
mod expr;
mod from;
mod grouping_sets;
mod index_predicate;
mod join_chains;
mod join_order;
pub(crate) mod locking;
mod modifying_with;
mod named_windows;
mod namespace;
mod on_conflict;
mod operators;
mod ordered_set;
mod query;
mod recursive;
mod scope;
mod select;
mod set_functions;
mod signatures;
mod subquery_comparison;
mod views;
mod whole_row;
mod window;
mod window_frame;

pub(crate) use crate::parse::group_by_quantifier::is_distinct_mark;
pub(crate) use crate::parse::names::{ident, object_name};
pub(crate) use crate::types::{is_serial, sql_type};
pub(crate) use assignments::bind_defaults;
pub(crate) use call::*;
pub(crate) use checks::{check_meta, parse_check};
pub(crate) use coerce::*;
pub(crate) use dml::*;
pub(crate) use expr::*;
pub(crate) use index_predicate::{bind_stored_predicate, predicate_meta};
pub(crate) use modifying_with::{needs_statement_with, MainStatement};
pub(crate) use namespace::*;
pub(crate) use operators::*;
pub(crate) use query::*;
pub(crate) use scope::*;
pub(crate) use select::*;
pub(crate) use set_functions::is_set_function;
pub(crate) use signatures::*;
pub(crate) use window::{check_distinct_on_order, has_window, place_windows};

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast;

use crate::catalog::{Catalog, TableMeta};
use crate::depth;
use crate::error::{Result, SqlError};

/// The most parameters a statement can have: the protocol counts them in 16 bits (Bind's
/// and ParameterDescription's counts), so PostgreSQL allows at most 65,535.
pub const PARAMETERS_MAX: usize = 65_535;
use crate::plan::*;
use crate::system;
use crate::types::{self, Datum, SqlType};

/// State for binding expressions above an aggregation.
struct Grouping {
    /// The input scope (rows before aggregation).
    input: Scope,
    /// GROUP BY expressions, as text (for matching) and bound.
    keys: Vec<(String, Expr, SqlType)>,
    aggregates: Vec<(String, AggregateCall)>,
    /// With GROUPING SETS, ROLLUP or CUBE naming more than one set: per set, the positions
    /// in `keys` it groups by; the last key is then the set's number (`grouping_sets.rs`).
    sets: Option<Vec<Vec<usize>>>,
}

pub struct Binder<'a> {
    catalog: &'a Catalog,
    /// The session's database and search_path, for qualified names.
    namespace: Namespace,
    /// Parameter types ($1 is index 0); Unknown until inferred.
    pub parameters: Vec<SqlType>,
    /// Enclosing scopes (innermost last) for correlated subqueries.
    outer: Vec<Scope>,
    /// Per subquery nesting level: whether it read an enclosing scope.
    correlated: Vec<bool>,
    /// The plan ids of FROM list items that read the items before them (LATERAL): joined
    /// to those by a LateralJoin (`join_relations`).
    lateral_items: Vec<usize>,
    /// The WITH lists in scope, innermost last (CTEs are bound again at each reference).
    ctes: Vec<recursive::CteFrame>,
    /// The CTEs whose bodies are being bound, innermost last (frame id, name).
    ctes_in_progress: Vec<(usize, String)>,
    /// The WITH RECURSIVE terms being bound, innermost last.
    recursions: Vec<recursive::ActiveRecursion>,
    grouping: Option<Grouping>,
    /// The window calls of the select list being bound (None where they are not allowed).
    windows: Option<Vec<window::PendingWindow>>,
    /// The set-returning calls of the select list being bound (None where they are not
    /// allowed); each stands for a placeholder column (bind/set_functions.rs).
    set_calls: Option<Vec<SetCall>>,
    /// An aggregate's arguments are being bound (a set-returning call there is 0A000).
    aggregate_arguments: bool,
    /// Binding a window call's arguments or window (calls cannot nest).
    in_window_call: bool,
    /// The next SELECT bound leaves its untyped literal outputs (`'5'`, NULL) untyped, for
    /// the statement around it to type: a set operation with its other side, INSERT with
    /// its target columns (PostgreSQL's p_resolve_unknowns false). Taken by that SELECT, so
    /// subqueries inside it resolve theirs to text as usual.
    keep_unknown_outputs: bool,
    next_id: usize,
    /// The clause being bound where aggregates are not allowed ("WHERE", "JOIN conditions"),
    /// for PostgreSQL's error message.
    clause: Option<&'static str>,
    /// The locking clause of the query whose SELECT is bound next (taken by `select`).
    locking: Option<locking::LockSpec>,
    /// The views whose queries are being bound, outermost first (a view reaching itself
    /// through others is PostgreSQL's 42P17).
    views_in_progress: Vec<String>,
    /// The text of each correlated scalar or EXISTS subquery by its expression id, to be
    /// bound again grouped by its correlation (bind/decorrelate.rs).
    correlated_queries: HashMap<usize, ast::Query>,
    /// The subquery being bound again grouped, if any.
    decorrelation: Option<decorrelate::Target>,
    /// References to scopes enclosing `decorrelation` resolved while it is bound.
    outer_references: usize,
    /// Evaluates predicates on statistics for the join order's estimates (the session
    /// sets the executor's; without one, default selectivities).
    pub evaluator: Option<&'a dyn crate::optimize::Evaluate>,
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog, namespace: Namespace, parameters: Vec<SqlType>) -> Binder<'a> {
        // Declared object identifier parameters are read as text: their names resolve in
        // the cast to the declared type, where the catalog is at hand.
        let parameters = parameters
            .into_iter()
            .map(|ty| if let SqlType::Object(_) = ty { SqlType::Text } else { ty })
            .collect();
        Binder {
            catalog,
            namespace,
            parameters,
            outer: Vec::new(),
            correlated: Vec::new(),
            lateral_items: Vec::new(),
            ctes: Vec::new(),
            ctes_in_progress: Vec::new(),
            recursions: Vec::new(),
            grouping: None,
            windows: None,
            set_calls: None,
            aggregate_arguments: false,
            in_window_call: false,
            keep_unknown_outputs: false,
            next_id: 0,
            locking: None,
            clause: None,
            views_in_progress: Vec::new(),
            correlated_queries: HashMap::new(),
            decorrelation: None,
            outer_references: 0,
            evaluator: None,
        }
    }

    fn id(&mut self) -> usize {
        self.next_id += 1;
        self.next_id
    }

    /// The last node and subquery id given out.
    pub(crate) fn last_id(&self) -> usize {
        self.next_id
    }

    /// Gives out ids after `id`: a second binder of one statement (CREATE TABLE AS binds
    /// its INSERT after the table exists) keeps the ids unique in the statement.
    pub(crate) fn start_ids_after(&mut self, id: usize) {
        assert!(self.next_id <= id, "ids are only ever moved forward");
        self.next_id = id;
    }

    pub fn plan(&mut self, kind: PlanKind, columns: Vec<OutputColumn>) -> Plan {
        let id = self.id();
        Plan { kind, columns, id }
    }

    /// Parameters whose type is still unknown become text.
    pub fn finish_parameters(&mut self) -> Vec<SqlType> {
        for parameter in &mut self.parameters {
            if *parameter == SqlType::Unknown {
                *parameter = SqlType::Text;
            }
        }
        self.parameters.clone()
    }

    /// The user table a DML statement writes (42P01 for a system view or a name in a
    /// schema that does not exist).
    pub fn table(&self, name: &ast::ObjectName) -> Result<Arc<TableMeta>> {
        match self.namespace.relation(name)? {
            Relation::Table { name, display } => {
                self.catalog.table(&name).ok_or_else(|| SqlError::undefined_table(&display))
            }
            Relation::View(view) => Err(SqlError::undefined_table(&view)),
        }
    }

    /// `table` with its engine handle, resolved once for the statement (42P01 if the engine
    /// table is gone) and pinned to the table's columns: ADD / DROP COLUMN after binding
    /// makes the statement fail instead of reading or writing other columns.
    pub fn bind_table(&self, table: Arc<TableMeta>) -> Result<BoundTable> {
        if table.is_view() {
            return Err(SqlError::unsupported(format!(
                "writing to view \"{}\" is not supported (PostgreSQL's automatically updatable views)",
                table.name
            )));
        }
        let handle = self.catalog.engine().table_handle(&table.name)?.pinned()?;
        Ok(BoundTable {
            meta: table,
            handle,
            checks: Arc::from(Vec::new()),
            referenced_by: Arc::from(Vec::new()),
            references: Arc::from(Vec::new()),
        })
    }

    /// `bind_table` for a table the statement writes: with its CHECK constraints bound and
    /// the tables its FOREIGN KEYs reference, and that reference it.
    pub fn bind_target_table(&mut self, table: Arc<TableMeta>) -> Result<BoundTable> {
        let mut bound = self.bind_table(table)?;
        bound.checks = Arc::from(checks::bind_checks(self, &bound.meta)?);
        let mut referenced_by = self.catalog.referencing_keys(&bound.meta.name);
        // A table the session's block dropped (at COMMIT) references nothing any more.
        referenced_by.retain(|(referencing, _)| !self.namespace.hidden.contains(&referencing.name));
        let references = bound
            .meta
            .foreign_keys
            .iter()
            .map(|key| {
                self.catalog
                    .table(&key.referenced_table)
                    .ok_or_else(|| SqlError::undefined_table(&key.referenced_table))
            })
            .collect::<Result<Vec<Arc<TableMeta>>>>()?;
        bound.referenced_by = Arc::from(referenced_by);
        bound.references = Arc::from(references);
        Ok(bound)
    }

    // ----- queries -----

    /// RETURNING over `table` seen under `alias` (INSERT INTO t AS alias) or its name.
    pub fn returning_as(
        &mut self,
        items: &[ast::SelectItem],
        table: &BoundTable,
        alias: Option<&str>,
    ) -> Result<(Vec<Expr>, Vec<OutputColumn>)> {
        let scan = self.scan(table.clone());
        let scope = Scope::from_plan(&scan, Some(alias.unwrap_or(&table.name)));
        self.returning_in(items, &scope)
    }

    /// RETURNING over the columns of `scope` (UPDATE ... FROM and DELETE ... USING: the
    /// target's and the other tables'); `*` and `name.*` as in a select list.
    pub fn returning_in(
        &mut self,
        items: &[ast::SelectItem],
        scope: &Scope,
    ) -> Result<(Vec<Expr>, Vec<OutputColumn>)> {
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    let qualifier = match item {
                        ast::SelectItem::QualifiedWildcard(
                            ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                            _,
                        ) => Some(object_name(name)?),
                        ast::SelectItem::QualifiedWildcard(..) => {
                            return Err(SqlError::unsupported(format!(
                                "unsupported RETURNING item {item}"
                            )))
                        }
                        _ => None,
                    };
                    for index in scope.wildcard_columns(qualifier.as_deref())? {
                        let column = &scope.columns[index];
                        exprs.push(Expr::Column(index));
                        columns.push(OutputColumn {
                            name: column.name.clone(),
                            ty: column.ty.clone(),
                            table_oid: column.table_oid,
                            attribute: column.attribute,
                        });
                    }
                }
                ast::SelectItem::UnnamedExpr(expr)
                | ast::SelectItem::ExprWithAlias { expr, .. } => {
                    let (bound, ty) = self.expr(expr, scope, None)?;
                    let name = match item {
                        ast::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => default_name(expr),
                    };
                    let ty = if ty == SqlType::Unknown { SqlType::Text } else { ty };
                    columns.push(computed_column(&name, ty));
                    exprs.push(bound);
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "unsupported RETURNING item {other}"
                    )))
                }
            }
        }
        Ok((exprs, columns))
    }
}
