//! FOREIGN KEY constraints in DDL: CREATE TABLE's column `REFERENCES` and table `FOREIGN
//! KEY` constraints, ALTER TABLE ... ADD [CONSTRAINT name] FOREIGN KEY (the rows already
//! there checked in the statement's transaction), DROP CONSTRAINT, and what a referenced
//! table refuses while it is referenced: DROP TABLE (2BP01; CASCADE drops the constraints),
//! TRUNCATE (0A000 unless the referencing tables are truncated too, or CASCADE), dropping
//! the unique index the constraint relies on (2BP01). Rows are checked by the statements
//! that write them (exec/foreign_keys.rs).
//!
//! Names are chosen as PostgreSQL's ChooseConstraintName does for a foreign key:
//! `<table>_<column>[_<column>...]_fkey`, with a number appended until the name is free.

use std::collections::HashSet;

use super::checks::{duplicate_constraint, table_constraint_names};
use super::*;
use crate::catalog::{foreign_key_violation, ForeignKeyMeta, ReferentialAction};
use crate::plan::deparse::quote_identifier;

impl Session {
    /// A FOREIGN KEY of `table` (for CREATE TABLE, the new table: its columns and indexes
    /// are those a self-reference finds) resolved and named, its OID not yet given.
    /// `local` is the referencing column of a column constraint (`a int REFERENCES p`).
    pub(super) fn foreign_key_meta(
        &self,
        table: &TableMeta,
        key: &ast::ForeignKeyConstraint,
        local: Option<&ast::Ident>,
        taken: &HashSet<String>,
    ) -> Result<ForeignKeyMeta> {
        refuse_key_options(key)?;
        let referenced_name = self.namespace().existing_table(&key.foreign_table)?;
        refuse_mixed_persistence(&table.name, &referenced_name)?;
        let stored;
        let referenced: &TableMeta = if referenced_name == table.name {
            table
        } else {
            stored = self
                .catalog
                .table(&referenced_name)
                .ok_or_else(|| SqlError::undefined_table(&referenced_name))?;
            &stored
        };
        let names: Vec<&ast::Ident> = match local {
            Some(column) => vec![column],
            None => key.columns.iter().collect(),
        };
        let columns = referencing_positions(table, &names)?;
        let referenced_columns = if key.referred_columns.is_empty() {
            let primary = referenced.primary_key().ok_or_else(|| {
                SqlError::new(
                    "42830",
                    format!("there is no primary key for referenced table \"{}\"", referenced.name),
                )
            })?;
            primary.columns.clone()
        } else {
            let names: Vec<&ast::Ident> = key.referred_columns.iter().collect();
            referencing_positions(referenced, &names)?
        };
        if columns.len() != referenced_columns.len() {
            return Err(SqlError::new(
                "42830",
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        if referenced.referenced_index(&referenced_columns).is_none() {
            return Err(SqlError::new(
                "42830",
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    referenced.name
                ),
            ));
        }
        let name = match &key.name {
            Some(name) => ident(name),
            None => choose_key_name(table, &columns, taken),
        };
        for (&column, &target) in columns.iter().zip(&referenced_columns) {
            let (from, to) = (&table.columns[column].ty, &referenced.columns[target].ty);
            if !comparable(from, to) {
                return Err(SqlError::new(
                    "42804",
                    format!("foreign key constraint \"{name}\" cannot be implemented"),
                ));
            }
        }
        Ok(ForeignKeyMeta {
            name,
            oid: 0,
            columns,
            referenced_table: referenced.name.clone(),
            referenced_columns,
            on_update: action(key.on_update),
            on_delete: action(key.on_delete),
            match_full: key.match_kind == Some(ast::ConstraintReferenceMatchKind::Full),
        })
    }

    /// The FOREIGN KEYs of a new table (`meta` holds its columns and indexes), in name
    /// order; 42710 for a name given twice.
    pub(super) fn new_foreign_keys(
        &self,
        meta: &TableMeta,
        keys: &[(Option<ast::Ident>, ast::ForeignKeyConstraint)],
    ) -> Result<Vec<ForeignKeyMeta>> {
        let mut taken = self.all_constraint_names();
        taken.extend(meta.checks.iter().map(|check| check.name.clone()));
        let mut made: Vec<ForeignKeyMeta> = Vec::with_capacity(keys.len());
        for (local, key) in keys {
            let key_meta = self.foreign_key_meta(meta, key, local.as_ref(), &taken)?;
            if !taken.insert(key_meta.name.clone()) {
                return Err(duplicate_constraint(&key_meta.name, &meta.name));
            }
            made.push(key_meta);
        }
        made.sort_by(|left, right| left.name.cmp(&right.name));
        Ok(made)
    }

    /// ALTER TABLE ... ADD [CONSTRAINT name] FOREIGN KEY: 23503 if a row the statement's
    /// transaction sees has no referenced row.
    pub(super) fn add_foreign_key(
        &mut self,
        table: &TableMeta,
        key: &ast::ForeignKeyConstraint,
    ) -> Result<()> {
        let taken = self.all_constraint_names();
        let mut made = self.foreign_key_meta(table, key, None, &taken)?;
        if key.name.is_some() && table_constraint_names(table).any(|name| name == made.name) {
            return Err(duplicate_constraint(&made.name, &table.name));
        }
        if self.some_row_unreferenced(table, &made)? {
            return Err(foreign_key_violation(&table.name, &made.name));
        }
        made.oid = self.catalog.next_oid()?;
        let mut updated = table.clone();
        updated.foreign_keys.push(made);
        updated.foreign_keys.sort_by(|left, right| left.name.cmp(&right.name));
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }

    /// Whether a row of `table` has a key (no NULL in it; MATCH FULL: not all NULL) that the
    /// referenced table does not hold, as the statement's transaction sees them.
    fn some_row_unreferenced(&mut self, table: &TableMeta, key: &ForeignKeyMeta) -> Result<bool> {
        let referenced = if key.referenced_table == table.name {
            Arc::new(table.clone())
        } else {
            self.catalog
                .table(&key.referenced_table)
                .ok_or_else(|| SqlError::undefined_table(&key.referenced_table))?
        };
        let local =
            |position: usize| format!("x.{}", quote_identifier(&table.columns[position].name));
        let equalities: Vec<String> = key
            .columns
            .iter()
            .zip(&key.referenced_columns)
            .map(|(&column, &target)| {
                let target = quote_identifier(&referenced.columns[target].name);
                format!("y.{target} = {}", local(column))
            })
            .collect();
        let all_set: Vec<String> =
            key.columns.iter().map(|&column| format!("{} IS NOT NULL", local(column))).collect();
        let missing = format!(
            "NOT EXISTS (SELECT 1 FROM public.{} y WHERE {})",
            quote_identifier(&referenced.name),
            equalities.join(" AND ")
        );
        let condition = if key.match_full {
            let any_set: Vec<String> = key
                .columns
                .iter()
                .map(|&column| format!("{} IS NOT NULL", local(column)))
                .collect();
            format!("({}) AND (NOT ({}) OR {missing})", any_set.join(" OR "), all_set.join(" AND "))
        } else {
            format!("{} AND {missing}", all_set.join(" AND "))
        };
        let sql = format!(
            "SELECT 1 FROM public.{} x WHERE {condition} LIMIT 1",
            quote_identifier(&table.name)
        );
        self.query_finds_a_row(&sql)
    }

    /// Runs an internal query in the statement's transaction: whether it returns a row.
    pub(super) fn query_finds_a_row(&mut self, sql: &str) -> Result<bool> {
        let statement = crate::parse::parse_internal_statement(sql)?;
        let (bound, _) = self
            .bind(&statement, &[])?
            .ok_or_else(|| SqlError::internal("internal query did not bind"))?;
        let (output, _) = self.run_bound(&bound, &[], false)?;
        match output {
            Output::Rows { rows, .. } => Ok(!rows.is_empty()),
            other => Err(SqlError::internal(format!("internal query gave {other:?}"))),
        }
    }

    /// ALTER TABLE ... DROP CONSTRAINT of a FOREIGN KEY; false when `table` has none of
    /// that name.
    pub(super) fn drop_foreign_key(&mut self, table: &TableMeta, name: &str) -> Result<bool> {
        let Some(position) = table.foreign_keys.iter().position(|key| key.name == name) else {
            return Ok(false);
        };
        let mut updated = table.clone();
        updated.foreign_keys.remove(position);
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        Ok(true)
    }

    /// DROP TABLE of `dropped` (all the statement's tables): 2BP01 while another table's
    /// FOREIGN KEY references one of them; with CASCADE those constraints go first.
    pub(super) fn drop_referencing_keys(
        &mut self,
        dropped: &[String],
        cascade: bool,
    ) -> Result<()> {
        // Tables this block dropped already (at COMMIT) reference nothing any more.
        let gone = self.dropped_tables();
        for table in self.catalog.tables() {
            if dropped.contains(&table.name) || gone.contains(&table.name) {
                continue;
            }
            let referencing: Vec<&ForeignKeyMeta> = table
                .foreign_keys
                .iter()
                .filter(|key| dropped.contains(&key.referenced_table))
                .collect();
            let Some(first) = referencing.first() else { continue };
            if !cascade {
                return Err(SqlError::new(
                    "2BP01",
                    format!(
                        "cannot drop table {} because other objects depend on it",
                        first.referenced_table
                    ),
                ));
            }
            let mut updated = (*table).clone();
            updated.foreign_keys.retain(|key| !dropped.contains(&key.referenced_table));
            Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        }
        Ok(())
    }

    /// TRUNCATE of `names`: the tables whose FOREIGN KEYs reference them must be truncated
    /// too (0A000), or are added with CASCADE. Returns the tables to truncate.
    pub(super) fn truncate_targets(&self, names: &[String], cascade: bool) -> Result<Vec<String>> {
        if let Some(view) =
            names.iter().find(|name| self.catalog.table(name).is_some_and(|table| table.is_view()))
        {
            return Err(SqlError::new("42809", format!("\"{view}\" is not a table")));
        }
        let mut targets = names.to_vec();
        let gone = self.dropped_tables();
        let mut tables = self.catalog.tables();
        tables.retain(|table| !gone.contains(&table.name));
        let mut grew = true;
        while grew {
            grew = false;
            for table in &tables {
                if targets.contains(&table.name) {
                    continue;
                }
                if !table.foreign_keys.iter().any(|key| targets.contains(&key.referenced_table)) {
                    continue;
                }
                if !cascade {
                    return Err(SqlError::unsupported(
                        "cannot truncate a table referenced in a foreign key constraint",
                    ));
                }
                targets.push(table.name.clone());
                grew = true;
            }
        }
        Ok(targets)
    }

    /// Every constraint name in use (PostgreSQL chooses a new one free in the schema).
    pub(super) fn all_constraint_names(&self) -> HashSet<String> {
        let mut names = HashSet::new();
        for table in self.catalog.tables() {
            names.extend(
                table
                    .indexes
                    .iter()
                    .filter(|index| index.constraint)
                    .map(|index| index.name.clone()),
            );
            names.extend(table.checks.iter().map(|check| check.name.clone()));
            names.extend(table.foreign_keys.iter().map(|key| key.name.clone()));
        }
        names
    }
}

/// 2BP01 when dropping the unique index `index` of `table` would leave a FOREIGN KEY
/// without the index it relies on (`what` names the object: `index x` or `constraint x on
/// table t`).
pub(super) fn refuse_referenced_index(
    catalog: &Catalog,
    table: &TableMeta,
    index: &str,
    what: &str,
) -> Result<()> {
    let Some(dropped) = table.indexes.iter().find(|known| known.name == index) else {
        return Ok(());
    };
    for referencing in catalog.tables() {
        for key in referencing.foreign_keys.iter().filter(|key| key.referenced_table == table.name)
        {
            let relied_on = table.referenced_index(&key.referenced_columns);
            if relied_on.is_some_and(|relied_on| relied_on.name == dropped.name) {
                return Err(SqlError::new(
                    "2BP01",
                    format!("cannot drop {what} because other objects depend on it"),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses what tierdb does not build rather than ignoring it.
fn refuse_key_options(key: &ast::ForeignKeyConstraint) -> Result<()> {
    if key.match_kind == Some(ast::ConstraintReferenceMatchKind::Partial) {
        return Err(SqlError::unsupported("MATCH PARTIAL not yet implemented"));
    }
    if let Some(characteristics) = &key.characteristics {
        if characteristics.deferrable == Some(true)
            || characteristics.initially == Some(ast::DeferrableInitial::Deferred)
        {
            return Err(SqlError::unsupported("DEFERRABLE constraints are not supported"));
        }
        if characteristics.enforced.is_some() {
            return Err(SqlError::syntax("syntax error at or near \"ENFORCED\""));
        }
    }
    Ok(())
}

fn action(action: Option<ast::ReferentialAction>) -> ReferentialAction {
    match action {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// The positions of a FOREIGN KEY's columns in `table` (42703; 42701 for one named twice).
fn referencing_positions(table: &TableMeta, names: &[&ast::Ident]) -> Result<Vec<usize>> {
    let mut positions = Vec::with_capacity(names.len());
    for name in names {
        let name = ident(name);
        let position = table.column_index(&name).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{name}\" referenced in foreign key constraint does not exist"),
            )
        })?;
        if positions.contains(&position) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" appears twice in foreign key constraint"),
            ));
        }
        positions.push(position);
    }
    Ok(positions)
}

/// Whether values of `from` can reference values of `to` with PostgreSQL's equality
/// operators (the same type category: numbers with numbers, strings with strings).
fn comparable(from: &SqlType, to: &SqlType) -> bool {
    let category = |ty: &SqlType| match ty {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => 1,
        SqlType::Float4 | SqlType::Float8 | SqlType::Numeric { .. } => 1,
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Name => 2,
        SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz => 3,
        SqlType::Bool => 4,
        SqlType::Bytea => 5,
        SqlType::Vector(_) | SqlType::HalfVec(_) | SqlType::SparseVec(_) => 6,
        SqlType::Unknown => 7,
        SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector => 8,
        // Columns of these types are refused at CREATE TABLE.
        SqlType::Object(_) | SqlType::Void => 8,
        SqlType::Json => 9,
        SqlType::Jsonb => 10,
        SqlType::Uuid => 11,
        SqlType::Interval => 12,
        SqlType::Time => 13,
        SqlType::Bit(_) | SqlType::VarBit(_) => 14,
        SqlType::JsonPath => 15,
    };
    category(from) == category(to)
}

/// PostgreSQL's name for an unnamed FOREIGN KEY: `<table>_<columns>_fkey`, then `...1`,
/// `...2` until free.
fn choose_key_name(table: &TableMeta, columns: &[usize], taken: &HashSet<String>) -> String {
    let names: Vec<&str> =
        columns.iter().map(|&column| table.columns[column].name.as_str()).collect();
    let base = format!("{}_{}_fkey", table.name, names.join("_"));
    if !taken.contains(&base) {
        return base;
    }
    (1..)
        .map(|suffix| format!("{base}{suffix}"))
        .find(|name| !taken.contains(name))
        .expect("a free name")
}

/// A FOREIGN KEY between a temp and a permanent table: PostgreSQL's 42P16 (a permanent
/// row must not depend on a row that goes with a session, nor the reverse across sessions).
fn refuse_mixed_persistence(table: &str, referenced: &str) -> Result<()> {
    let temporary = crate::catalog::split_temp_name(table).is_some();
    if temporary == crate::catalog::split_temp_name(referenced).is_some() {
        return Ok(());
    }
    let message = if temporary {
        "constraints on temporary tables may reference only temporary tables"
    } else {
        "constraints on permanent tables may reference only permanent tables"
    };
    Err(SqlError::new("42P16", message))
}
