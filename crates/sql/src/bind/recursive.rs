//! WITH lists: CTEs bound again at each reference (so a CTE is inlined), and WITH
//! RECURSIVE's self-referencing CTEs bound as a Recursive Union (`plan::PlanKind::
//! RecursiveUnion`) whose recursive term reads the working table (`WorkTableScan`).
//!
//! PostgreSQL's rules, checked as its parse_cte.c does: a recursive CTE has the form
//! `non-recursive-term UNION [ALL] recursive-term` (42P19); its name may appear once
//! (42P19), in the recursive term only, not within a subquery in an expression, the
//! nullable side of an outer join, EXCEPT (its right side; either side of EXCEPT ALL) or
//! INTERSECT ALL, nor under an aggregate (42P19); ORDER BY, LIMIT, OFFSET and FOR UPDATE on
//! the CTE's query are 0A000; the columns' types come from the non-recursive term and the
//! union of both terms must keep them (42804); two CTEs referring to each other are 0A000.

use std::ops::ControlFlow;

use super::*;

/// One WITH list.
pub(crate) struct CteFrame {
    /// Unique in the statement: names the frame in `ActiveRecursion` and
    /// `Binder::ctes_in_progress`.
    pub(crate) id: usize,
    /// WITH RECURSIVE: a CTE may refer to itself and to any CTE of the list.
    recursive: bool,
    pub(crate) definitions: HashMap<String, Arc<CteDefinition>>,
}

pub(crate) struct CteDefinition {
    query: ast::Query,
    /// The column list after the name (may be empty).
    columns: Vec<String>,
    /// Its query names it (in a WITH RECURSIVE list this makes it recursive).
    self_referencing: bool,
    /// A data-modifying statement (allowed at the top level only): bound once, in the WITH
    /// list's order, by `Binder::statement_with` (`bind/modifying_with.rs`).
    pub(crate) modifying: Option<ModifyingCte>,
}

/// A data-modifying CTE: the working table its RETURNING rows are kept in, and their
/// columns once bound (None inside: no RETURNING).
pub(crate) struct ModifyingCte {
    pub(crate) work_table: usize,
    pub(crate) returning: std::sync::OnceLock<Option<Vec<OutputColumn>>>,
}

/// A recursive CTE whose terms are being bound.
pub(crate) struct ActiveRecursion {
    frame: usize,
    name: String,
    /// False while the non-recursive term is bound.
    recursive_term: bool,
    /// `Binder::outer`'s depth at the recursive term: deeper is within a subquery.
    outer_depth: usize,
    columns: Vec<OutputColumn>,
    work_table: usize,
}

fn invalid_recursion(message: String) -> SqlError {
    SqlError::new("42P19", message)
}

fn mutual_recursion() -> SqlError {
    SqlError::unsupported("mutual recursion between WITH items is not implemented")
}

/// Whether `query` names `name` as a relation anywhere (subqueries included).
fn names_relation(query: &ast::Query, name: &str) -> bool {
    let found = ast::visit_relations(query, |relation| {
        if relation.0.len() == 1 && object_name(relation).is_ok_and(|other| other == name) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found.is_break()
}

/// How many `WorkTableScan`s of `work_table` `plan` holds (expression subqueries aside:
/// a reference there is refused when it is bound).
fn work_table_scans(plan: &Plan, work_table: usize) -> usize {
    let own = usize::from(matches!(
        plan.kind,
        PlanKind::WorkTableScan { work_table: scanned, .. } if scanned == work_table
    ));
    own + plan.inputs().into_iter().map(|input| work_table_scans(input, work_table)).sum::<usize>()
}

/// 0A000 when a WITH query names a data-modifying query defined later in its list (or
/// itself): PostgreSQL resolves that name to a table, tierdb's frame has the later query
/// in scope, so it would read its RETURNING rows instead.
fn refuse_later_modifying_reference(
    with: &ast::With,
    position: usize,
    query: &ast::Query,
) -> Result<()> {
    for later in &with.cte_tables[position..] {
        let name = ident(&later.alias.name);
        if is_data_modifying(&later.query.body) && names_relation(query, &name) {
            return Err(SqlError::unsupported(format!(
                "a WITH query naming \"{name}\", a data-modifying WITH query defined after it, \
                 is not supported"
            )));
        }
    }
    Ok(())
}

impl Binder<'_> {
    /// The frame of a query's WITH list (an empty one without WITH).
    pub(crate) fn cte_frame(&mut self, with: Option<&ast::With>) -> Result<CteFrame> {
        self.cte_frame_at(with, false)
    }

    /// `cte_frame`; `top_level`: the statement's own WITH list, where data-modifying
    /// statements are allowed (PostgreSQL's 0A000 elsewhere).
    pub(crate) fn cte_frame_at(
        &mut self,
        with: Option<&ast::With>,
        top_level: bool,
    ) -> Result<CteFrame> {
        let mut frame = CteFrame { id: self.id(), recursive: false, definitions: HashMap::new() };
        let Some(with) = with else {
            return Ok(frame);
        };
        frame.recursive = with.recursive;
        for (position, cte) in with.cte_tables.iter().enumerate() {
            let modifying = is_data_modifying(&cte.query.body);
            if modifying && !top_level {
                return Err(data_modifying_with());
            }
            if modifying && with.recursive {
                // PostgreSQL orders such parts by their references (42P19 for one that
                // reads itself); tierdb binds in list order, so it refuses them.
                return Err(SqlError::unsupported(
                    "data-modifying statements in WITH RECURSIVE are not supported",
                ));
            }
            refuse_later_modifying_reference(with, position, &cte.query)?;
            let name = ident(&cte.alias.name);
            let modifying = match modifying {
                true => Some(ModifyingCte { work_table: self.id(), returning: Default::default() }),
                false => None,
            };
            let definition = CteDefinition {
                query: (*cte.query).clone(),
                columns: cte.alias.columns.iter().map(|column| ident(&column.name)).collect(),
                self_referencing: modifying.is_none()
                    && with.recursive
                    && names_relation(&cte.query, &name),
                modifying,
            };
            if frame.definitions.insert(name.clone(), Arc::new(definition)).is_some() {
                return Err(SqlError::new(
                    "42712",
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
        }
        Ok(frame)
    }

    /// The plan of a reference to the CTE `name`, or None when no CTE in scope has that
    /// name (it names a table).
    pub(crate) fn cte_reference(&mut self, name: &str) -> Result<Option<Plan>> {
        let Some(position) =
            self.ctes.iter().rposition(|frame| frame.definitions.contains_key(name))
        else {
            return Ok(None);
        };
        let frame = &self.ctes[position];
        let (frame_id, with_recursive) = (frame.id, frame.recursive);
        let definition = Arc::clone(&frame.definitions[name]);
        if let Some(modifying) = &definition.modifying {
            return self.modifying_cte_reference(name, &definition.columns, modifying);
        }
        let recursion = self
            .recursions
            .iter()
            .rev()
            .find(|recursion| recursion.frame == frame_id && recursion.name == name);
        if let Some(recursion) = recursion {
            if !recursion.recursive_term {
                return Err(invalid_recursion(format!(
                    "recursive reference to query \"{name}\" must not appear within its non-recursive term"
                )));
            }
            if self.ctes_in_progress.last().is_none_or(|(id, cte)| *id != frame_id || cte != name) {
                return Err(mutual_recursion());
            }
            if self.outer.len() > recursion.outer_depth {
                return Err(invalid_recursion(format!(
                    "recursive reference to query \"{name}\" must not appear within a subquery"
                )));
            }
            let kind = PlanKind::WorkTableScan {
                work_table: recursion.work_table,
                name: name.into(),
                cte: false,
            };
            let columns = recursion.columns.clone();
            return Ok(Some(self.plan(kind, columns)));
        }
        let in_progress =
            self.ctes_in_progress.iter().any(|(id, cte)| *id == frame_id && cte == name);
        if in_progress {
            // A CTE cannot see itself outside WITH RECURSIVE: the name is a table's there.
            return if with_recursive { Err(mutual_recursion()) } else { Ok(None) };
        }
        // The body sees the WITH lists around its definition, not those around the
        // reference.
        let inner_frames = self.ctes.split_off(position + 1);
        self.ctes_in_progress.push((frame_id, name.to_string()));
        let outcome = if definition.self_referencing {
            self.recursive_cte(frame_id, name, &definition)
        } else {
            self.query(&definition.query)
                .and_then(|plan| named_columns(plan, name, &definition.columns))
        };
        self.ctes_in_progress.pop();
        self.ctes.extend(inner_frames);
        outcome.map(Some)
    }

    /// A self-referencing CTE of WITH RECURSIVE: its Recursive Union.
    fn recursive_cte(
        &mut self,
        frame: usize,
        name: &str,
        definition: &CteDefinition,
    ) -> Result<Plan> {
        let query = &definition.query;
        let ast::SetExpr::SetOperation { left, op: ast::SetOperator::Union, set_quantifier, right } =
            query.body.as_ref()
        else {
            return Err(invalid_recursion(format!(
                "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
            )));
        };
        let all = match set_quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
            other => return Err(SqlError::unsupported(format!("UNION {other} is not supported"))),
        };
        refuse_decoration(query)?;
        let inner = self.cte_frame(query.with.as_ref())?;
        self.ctes.push(inner);
        let work_table = self.id();
        self.recursions.push(ActiveRecursion {
            frame,
            name: name.to_string(),
            recursive_term: false,
            outer_depth: self.outer.len(),
            columns: Vec::new(),
            work_table,
        });
        let outcome = self.recursive_terms(name, definition, (left, right), all, work_table);
        self.recursions.pop();
        self.ctes.pop();
        outcome
    }

    fn recursive_terms(
        &mut self,
        name: &str,
        definition: &CteDefinition,
        (left, right): (&ast::SetExpr, &ast::SetExpr),
        all: bool,
        work_table: usize,
    ) -> Result<Plan> {
        let non_recursive = self.set_expr(left)?;
        let written_types: Vec<SqlType> =
            non_recursive.columns.iter().map(|column| column.ty.clone()).collect();
        let mut columns = non_recursive.columns.clone();
        for column in &mut columns {
            if column.ty == SqlType::Unknown {
                column.ty = SqlType::Text;
            }
        }
        let non_recursive = self.cast_plan(non_recursive, &columns);
        let non_recursive = named_columns(non_recursive, name, &definition.columns)?;
        let columns = non_recursive.columns.clone();
        let recursion = self.recursions.last_mut().expect("pushed by recursive_cte");
        recursion.recursive_term = true;
        recursion.columns = columns.clone();
        let recursive = self.set_expr(right)?;
        if recursive.arity() != columns.len() {
            return Err(SqlError::syntax("each UNION query must have the same number of columns"));
        }
        for (index, (column, written)) in columns.iter().zip(&written_types).enumerate() {
            let other = &recursive.columns[index].ty;
            let overall = SqlType::common(written, other).ok_or_else(|| {
                SqlError::datatype_mismatch(format!(
                    "UNION types {} and {} cannot be matched",
                    written.display_name(),
                    other.display_name()
                ))
            })?;
            if overall != column.ty {
                return Err(SqlError::datatype_mismatch(format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    index + 1,
                    column.ty.display_name(),
                    overall.display_name()
                )));
            }
        }
        if work_table_scans(&recursive, work_table) > 1 {
            return Err(invalid_recursion(format!(
                "recursive reference to query \"{name}\" must not appear more than once"
            )));
        }
        let recursive = self.cast_plan(recursive, &columns);
        let kind = PlanKind::RecursiveUnion {
            non_recursive: Box::new(non_recursive),
            recursive: Box::new(recursive),
            all,
            work_table,
        };
        Ok(self.plan(kind, columns))
    }

    /// 42P19 when `plan` (a part of a recursive term where the working table may not be
    /// read) reads the working table of a recursion being bound; `place` names the part.
    pub(crate) fn refuse_recursive_reference(&self, plan: &Plan, place: &str) -> Result<()> {
        for recursion in self.recursions.iter().filter(|recursion| recursion.recursive_term) {
            if work_table_scans(plan, recursion.work_table) > 0 {
                return Err(invalid_recursion(format!(
                    "recursive reference to query \"{}\" must not appear within {place}",
                    recursion.name
                )));
            }
        }
        Ok(())
    }

    /// 42P19 when a SELECT whose FROM is `plan` aggregates over a working table.
    pub(crate) fn refuse_recursive_aggregate(&self, plan: &Plan) -> Result<()> {
        let reads_work_table = self.recursions.iter().any(|recursion| {
            recursion.recursive_term && work_table_scans(plan, recursion.work_table) > 0
        });
        if reads_work_table {
            return Err(invalid_recursion(
                "aggregate functions are not allowed in a recursive query's recursive term".into(),
            ));
        }
        Ok(())
    }
}

/// ORDER BY, LIMIT, OFFSET and FOR UPDATE on a recursive CTE's query (0A000, as PostgreSQL).
fn refuse_decoration(query: &ast::Query) -> Result<()> {
    let refuse = |what: &str| {
        Err(SqlError::unsupported(format!("{what} in a recursive query is not implemented")))
    };
    if query.order_by.is_some() {
        return refuse("ORDER BY");
    }
    match &query.limit_clause {
        Some(ast::LimitClause::LimitOffset { offset: Some(_), .. })
        | Some(ast::LimitClause::OffsetCommaLimit { .. }) => return refuse("OFFSET"),
        Some(ast::LimitClause::LimitOffset { limit: Some(_), .. }) => return refuse("LIMIT"),
        _ => {}
    }
    if query.fetch.is_some() {
        return refuse("LIMIT");
    }
    if !query.locks.is_empty() {
        return refuse("FOR UPDATE/SHARE");
    }
    Ok(())
}

/// `plan` with the CTE's column list as its column names (42P10 for a list longer than
/// the query's columns).
pub(crate) fn named_columns(mut plan: Plan, name: &str, columns: &[String]) -> Result<Plan> {
    if columns.len() > plan.arity() {
        return Err(SqlError::new(
            "42P10",
            format!(
                "WITH query \"{name}\" has {} columns available but {} columns specified",
                plan.arity(),
                columns.len()
            ),
        ));
    }
    rename_columns(&mut plan, columns);
    Ok(plan)
}
