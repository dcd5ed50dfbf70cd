//! Name scopes: the columns a clause can see, and column resolution (qualified names,
//! outer references of correlated subqueries).

use super::*;

/// A column visible to expressions at some point of a query.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    pub qualifier: Option<String>,
    pub name: String,
    pub ty: SqlType,
    pub table_oid: u32,
    pub attribute: i16,
    /// The right-hand column of a `JOIN ... USING`: merged into the left one, so only a
    /// qualified reference (or `alias.*`) reaches it.
    pub merged: bool,
    /// The OID of the table or system view this column belongs to when the scope reads
    /// that relation itself (its `tableoid`); 0 for a subquery's, a function's or a
    /// computed column.
    pub relation: u32,
    /// On the NULL-extended side of an outer join of this scope: a whole-row reference to
    /// its FROM item cannot be rewritten into its columns (bind/whole_row.rs).
    pub nullable: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// Set on an aggregating query's input scope while a subquery in its select list,
    /// HAVING or ORDER BY is bound: that subquery reads the aggregate's output row, where
    /// only the GROUP BY keys are, at their key positions (`resolve_column`).
    pub grouped_keys: Option<Vec<Expr>>,
}

impl Scope {
    pub(crate) fn from_plan(plan: &Plan, qualifier: Option<&str>) -> Scope {
        Scope {
            columns: plan
                .columns
                .iter()
                .map(|column| ScopeColumn {
                    qualifier: qualifier.map(str::to_string),
                    name: column.name.clone(),
                    ty: column.ty.clone(),
                    table_oid: column.table_oid,
                    attribute: column.attribute,
                    merged: false,
                    relation: 0,
                    nullable: false,
                })
                .collect(),
            grouped_keys: None,
        }
    }

    /// The scope of a scan of the relation with OID `oid` (a table or a system view).
    pub(crate) fn from_relation(plan: &Plan, qualifier: &str, oid: u32) -> Scope {
        let mut scope = Scope::from_plan(plan, Some(qualifier));
        for column in &mut scope.columns {
            column.relation = oid;
        }
        scope
    }

    pub(crate) fn concat(&self, other: &Scope) -> Scope {
        let mut columns = self.columns.clone();
        columns.extend(other.columns.iter().cloned());
        Scope { columns, grouped_keys: None }
    }

    pub(crate) fn find(&self, qualifier: Option<&str>, name: &str) -> Result<Option<usize>> {
        let mut found = None;
        for (index, column) in self.columns.iter().enumerate() {
            let qualifier_matches = match qualifier {
                Some(wanted) => column.qualifier.as_deref() == Some(wanted),
                None => !column.merged,
            };
            if qualifier_matches && column.name == name {
                if found.is_some() {
                    return Err(SqlError::new(
                        "42702",
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some(index);
            }
        }
        Ok(found)
    }

    /// The columns `*` (no qualifier) or `name.*` stands for: `*` every column but the
    /// hidden ones and those a USING join merged away; `name.*` every column of `name`
    /// (42P01 when there is none).
    pub(crate) fn wildcard_columns(&self, qualifier: Option<&str>) -> Result<Vec<usize>> {
        let positions: Vec<usize> = (0..self.columns.len())
            .filter(|&index| {
                let column = &self.columns[index];
                let hidden =
                    column.name == HIDDEN_SORT_COLUMN || column.merged && qualifier.is_none();
                !hidden && (qualifier.is_none() || column.qualifier.as_deref() == qualifier)
            })
            .collect();
        match qualifier {
            Some(qualifier) if positions.is_empty() => Err(SqlError::new(
                "42P01",
                format!("missing FROM-clause entry for table \"{qualifier}\""),
            )),
            _ => Ok(positions),
        }
    }

    /// The system column `tableoid`: the OID of the relation `qualifier` names, or without
    /// one of the only relation the scope reads (42702 for several, 42703 for none: a
    /// subquery's columns have no tableoid).
    fn relation_oid(&self, qualifier: Option<&str>) -> Result<u32> {
        let mut relations: Vec<(Option<&str>, u32)> = Vec::new();
        for column in &self.columns {
            let named = qualifier.is_none() || column.qualifier.as_deref() == qualifier;
            let relation = (column.qualifier.as_deref(), column.relation);
            if named && column.relation != 0 && !relations.contains(&relation) {
                relations.push(relation);
            }
        }
        match relations.as_slice() {
            [(_, oid)] => Ok(*oid),
            [] => Err(match qualifier {
                Some(qualifier) => SqlError::undefined_qualified_column(qualifier, "tableoid"),
                None => SqlError::undefined_column("tableoid"),
            }),
            _ => Err(SqlError::new("42702", "column reference \"tableoid\" is ambiguous")),
        }
    }

    pub(crate) fn has_qualifier(&self, qualifier: &str) -> bool {
        self.columns.iter().any(|column| column.qualifier.as_deref() == Some(qualifier))
    }
}

impl<'a> Binder<'a> {
    pub(crate) fn resolve_column(
        &mut self,
        qualifier: Option<&str>,
        name: &str,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        if let Some(grouping) = &self.grouping {
            // Above an aggregation a column must be a group key.
            let text = match qualifier {
                Some(qualifier) => format!("{qualifier}.{name}"),
                None => name.to_string(),
            };
            for (index, (key, _, ty)) in grouping.keys.iter().enumerate() {
                if key.to_lowercase() == text
                    || key.to_lowercase().rsplit('.').next() == Some(name)
                        && qualifier.is_none()
                        && key.to_lowercase() == name
                {
                    return Ok((Expr::Column(index), ty.clone()));
                }
            }
            // A key given qualified matches an unqualified use and vice versa.
            let input = grouping.input.clone();
            if let Some(position) = input.find(qualifier, name)? {
                for (index, (_, expr, ty)) in grouping.keys.iter().enumerate() {
                    if matches!(expr, Expr::Column(column) if *column == position) {
                        return Ok((Expr::Column(index), ty.clone()));
                    }
                }
                return Err(SqlError::new(
                    "42803",
                    format!(
                        "column \"{}.{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                        input.columns[position].qualifier.clone().unwrap_or_default(),
                        name
                    ),
                ));
            }
        } else if let Some(index) = scope.find(qualifier, name)? {
            return Ok((Expr::Column(index), scope.columns[index].ty.clone()));
        } else if let Some(oid) = (name == "tableoid").then(|| scope.relation_oid(qualifier)) {
            return Ok((Expr::Literal(Datum::Int(i64::from(oid?))), SqlType::Oid));
        }
        // Enclosing queries (correlated subqueries).
        for depth in 1..=self.outer.len() {
            let outer = &self.outer[self.outer.len() - depth];
            if let Some(found) = outer.find(qualifier, name)? {
                let index = match &outer.grouped_keys {
                    Some(keys) => grouped_outer_column(keys, found, outer, name)?,
                    None => found,
                };
                let ty = outer.columns[found].ty.clone();
                let levels = self.correlated.len();
                for level in 0..depth.min(levels) {
                    self.correlated[levels - 1 - level] = true;
                }
                self.count_outer_reference(self.outer.len() - depth);
                return Ok((Expr::Outer { depth, index }, ty));
            }
        }
        Err(match qualifier {
            Some(qualifier) => {
                let known = scope.has_qualifier(qualifier)
                    || self.grouping.as_ref().is_some_and(|g| g.input.has_qualifier(qualifier))
                    || self.outer.iter().any(|outer| outer.has_qualifier(qualifier));
                if known {
                    SqlError::undefined_qualified_column(qualifier, name)
                } else {
                    SqlError::new(
                        "42P01",
                        format!("missing FROM-clause entry for table \"{qualifier}\""),
                    )
                }
            }
            None => SqlError::undefined_column(name),
        })
    }

    /// A scope over one table's columns (UPDATE/DELETE expressions).
    pub fn table_scope(&mut self, table: &BoundTable, alias: Option<&str>) -> (Plan, Scope) {
        let plan = self.scan(table.clone());
        let scope = Scope::from_relation(&plan, alias.unwrap_or(&table.name), table.meta.oid);
        (plan, scope)
    }
}

pub(crate) fn alias_columns(alias: Option<&ast::TableAlias>) -> Vec<String> {
    alias
        .map(|alias| alias.columns.iter().map(|column| ident(&column.name)).collect())
        .unwrap_or_default()
}

pub(crate) fn rename_columns(plan: &mut Plan, names: &[String]) {
    for (column, name) in plan.columns.iter_mut().zip(names) {
        column.name = name.clone();
    }
}

pub(crate) fn column_origin(expr: &Expr, scope: &Scope, grouped: bool) -> Option<(u32, i16)> {
    match expr {
        Expr::Column(index) if !grouped => {
            scope.columns.get(*index).map(|column| (column.table_oid, column.attribute))
        }
        _ => None,
    }
}

/// Where an aggregating query's input column `position` is in the aggregate's output (its
/// GROUP BY key's position), or PostgreSQL's 42803 when no key is that column.
fn grouped_outer_column(
    keys: &[Expr],
    position: usize,
    outer: &Scope,
    name: &str,
) -> Result<usize> {
    match keys.iter().position(|key| matches!(key, Expr::Column(column) if *column == position)) {
        Some(key) => Ok(key),
        None => {
            let qualifier = outer.columns[position].qualifier.clone().unwrap_or_default();
            Err(SqlError::new(
                "42803",
                format!("subquery uses ungrouped column \"{qualifier}.{name}\" from outer query"),
            ))
        }
    }
}
