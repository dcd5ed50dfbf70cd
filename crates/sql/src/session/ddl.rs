//! DDL: CREATE/DROP/ALTER TABLE, CREATE/DROP INDEX.

use super::checks::refuse_check_options;
use super::foreign_keys::refuse_referenced_index;
use super::*;
use crate::bind::{undefined_schema, Namespace, SCHEMAS};
use crate::catalog::{relation_name, Identity, COLUMNS_MAX};
use crate::output::CommandTag;
use crate::parse::sequences::SequenceOption;

impl Session {
    pub(crate) fn create_table(&mut self, create: &ast::CreateTable) -> Result<Output> {
        refuse_table_kinds(create)?;
        let (name, temporary) = self.new_table_name(create)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        self.drop_pending_now(&name)?;
        if self.catalog.table(&name).is_some() {
            if create.if_not_exists {
                return Ok(Output::command(CommandTag::CreateTable));
            }
            let shown = relation_name(&name);
            return Err(SqlError::new("42P07", format!("relation \"{shown}\" already exists")));
        }
        if temporary {
            self.note_temp_table(&name, create.on_commit.as_ref());
        }
        if let Some(query) = &create.query {
            drop(_guard);
            return self.create_table_as(&name, create, query);
        }
        if create.columns.len() > COLUMNS_MAX {
            return Err(SqlError::new(
                "54011",
                format!("tables can have at most {COLUMNS_MAX} columns"),
            ));
        }
        let mut columns = Vec::new();
        let mut constraints = NewConstraints::default();
        for (position, column) in create.columns.iter().enumerate() {
            let column_name = ident(&column.name);
            if columns.iter().any(|existing: &ColumnMeta| existing.name == column_name) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{column_name}\" specified more than once"),
                ));
            }
            columns.push(self.column_meta(&name, position, column, &mut constraints)?);
        }
        for constraint in &create.constraints {
            match constraint {
                ast::TableConstraint::PrimaryKey(key) => {
                    if constraints.primary.is_some() {
                        return Err(SqlError::new(
                            "42P16",
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    let positions = key_positions(&key.columns, &columns)?;
                    for &position in &positions {
                        columns[position].nullable = false;
                    }
                    constraints.primary = Some(positions);
                }
                ast::TableConstraint::Unique(unique) => {
                    constraints.uniques.push((
                        unique.name.as_ref().map(ident),
                        key_positions(&unique.columns, &columns)?,
                    ));
                }
                ast::TableConstraint::Check(check) => {
                    refuse_check_options(check)?;
                    constraints
                        .checks
                        .push((check.name.as_ref().map(ident), (*check.expr).clone()));
                }
                ast::TableConstraint::ForeignKey(key) => {
                    constraints.foreign_keys.push((None, key.clone()));
                }
                _ => return Err(SqlError::unsupported("this table constraint is not supported")),
            }
        }
        let NewConstraints { primary, uniques, mut sequences, identities, checks, foreign_keys } =
            constraints;
        let indexes = table_indexes(&name, primary, uniques, &columns);
        if !temporary {
            // Identity sequences are sequences of CREATE SEQUENCE's kind (session/identity.rs),
            // made below; serial columns and temporary tables keep implicit ones.
            sequences.retain(|sequence| {
                !identities.iter().any(|&(position, _)| {
                    *sequence == format!("{name}_{}_seq", columns[position].name)
                })
            });
        } else if identities.iter().any(|(_, options)| !options.is_empty()) {
            return Err(SqlError::unsupported("identity sequence options of a temporary table"));
        }
        for sequence in &sequences {
            self.catalog.create_sequence(sequence)?;
        }
        let mut meta = TableMeta {
            name: name.clone(),
            oid: 0,
            columns,
            indexes,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            layout: None,
            view: None,
            sequence: None,
        };
        meta.checks = self.new_checks(&meta, &checks)?;
        meta.foreign_keys = self.new_foreign_keys(&meta, &foreign_keys)?;
        for (position, options) in identities.iter().filter(|_| !temporary) {
            let sequence = self.unused_sequence_name(&name, &meta.columns[*position].name);
            meta.columns[*position].default =
                Some(self.create_identity_sequence(&meta, *position, &sequence, options)?);
        }
        let owner = self.temp_owner();
        Arc::clone(&self.catalog).create_table(self.ddl_transaction(), owner, meta)?;
        self.own_new_table(&name)?;
        Ok(Output::command(CommandTag::CreateTable))
    }

    /// One column of CREATE TABLE: its type, serial or identity sequence, options. Column
    /// PRIMARY KEY, UNIQUE and CHECK constraints are added to `constraints`.
    fn column_meta(
        &self,
        name: &str,
        position: usize,
        column: &ast::ColumnDef,
        constraints: &mut NewConstraints,
    ) -> Result<ColumnMeta> {
        let column_name = ident(&column.name);
        let ty = column_type(&column_name, &column.data_type)?;
        let mut meta = ColumnMeta {
            name: column_name.clone(),
            ty,
            nullable: true,
            default: None,
            identity: None,
        };
        let identity = identity_of(&column.options)?;
        if bind::is_serial(&column.data_type) || identity.is_some() {
            let sequence = format!("{name}_{column_name}_seq");
            meta.default = Some(format!("nextval('{sequence}')"));
            meta.nullable = false;
            if let Some((kind, options)) = identity {
                check_identity_column(name, &meta, &column.options)?;
                meta.identity = Some(kind);
                constraints.identities.push((position, options));
            }
            constraints.sequences.push(sequence);
        }
        for option in &column.options {
            match &option.option {
                ast::ColumnOption::NotNull => meta.nullable = false,
                ast::ColumnOption::Null => {}
                ast::ColumnOption::Default(expr) => {
                    // Checked now: bad defaults fail at CREATE, as in PostgreSQL.
                    meta.default = Some(self.checked_default(expr, &meta.ty)?);
                }
                ast::ColumnOption::PrimaryKey(_) => {
                    if constraints.primary.is_some() {
                        return Err(SqlError::new(
                            "42P16",
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    constraints.primary = Some(vec![position]);
                    meta.nullable = false;
                }
                ast::ColumnOption::Unique(_) => constraints.uniques.push((None, vec![position])),
                ast::ColumnOption::Check(check) => {
                    refuse_check_options(check)?;
                    let name = option.name.as_ref().or(check.name.as_ref()).map(ident);
                    constraints.checks.push((name, (*check.expr).clone()));
                }
                ast::ColumnOption::ForeignKey(key) => {
                    let mut key = key.clone();
                    key.name = option.name.clone().or(key.name);
                    constraints.foreign_keys.push((Some(column.name.clone()), key));
                }
                ast::ColumnOption::Generated { .. } => {} // identity_of
                ast::ColumnOption::Collation(collation) => check_collation(collation)?,
                other => {
                    return Err(SqlError::unsupported(format!(
                        "column option {other} is not supported"
                    )))
                }
            }
        }
        Ok(meta)
    }

    pub(crate) fn create_index(&mut self, create: &ast::CreateIndex) -> Result<Output> {
        if create.concurrently {
            // tierdb's build blocks writers (the DDL lock); PostgreSQL's CONCURRENTLY does not.
            return Err(SqlError::unsupported("CREATE INDEX CONCURRENTLY is not supported"));
        }
        if let Some(method) = super::vector_ddl::vector_access_method(create) {
            return self.create_vector_index(create, method);
        }
        refuse_index_clauses(create)?;
        let table_name = self.namespace().existing_table(&create.table_name)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let table = self
            .catalog
            .table(&table_name)
            .ok_or_else(|| SqlError::undefined_table(&table_name))?;
        if table.is_view() {
            return Err(SqlError::new(
                "42809",
                format!("cannot create index on relation \"{table_name}\""),
            ));
        }
        let mut positions = Vec::new();
        let mut column_names = Vec::new();
        for column in &create.columns {
            let name = match &column.column.expr {
                ast::Expr::Identifier(name) => ident(name),
                other => return Err(SqlError::unsupported(format!("index on expression {other}"))),
            };
            let position = table.column_index(&name).ok_or_else(|| {
                SqlError::new("42703", format!("column \"{name}\" does not exist"))
            })?;
            positions.push(position);
            column_names.push(name);
        }
        let name = match &create.name {
            Some(name) => object_name(name)?,
            None => format!("{}_{}_idx", table_name, column_names.join("_")),
        };
        if create.if_not_exists
            && self
                .catalog
                .tables()
                .iter()
                .any(|t| t.indexes.iter().any(|index| index.name == name))
        {
            return Ok(Output::command(CommandTag::CreateIndex));
        }
        let predicate = match &create.predicate {
            Some(expr) => {
                Some(super::partial_index::new_predicate(&catalog, self.namespace(), &table, expr)?)
            }
            None => None,
        };
        let index = IndexMeta {
            name: name.clone(),
            oid: 0,
            columns: positions,
            unique: create.unique,
            primary: false,
            constraint: false,
            kind: IndexKind::Secondary,
            predicate,
        };
        // The engine's build and every write after it filter rows by the predicate; registered
        // once the name is known to be free (registering replaces the predicate of an index
        // of that name, and a failure below removes it).
        self.catalog.refuse_taken_index_name(&name)?;
        super::partial_index::register(&catalog, &table, &index);
        let options = self.index_build_options();
        let created = Arc::clone(&self.catalog)
            .create_index(self.ddl_transaction(), &table_name, index, options)
            .map_err(|error| unique_index_error(error, &name));
        if created.is_err() && create.predicate.is_some() {
            self.catalog.engine().set_index_predicate(&name, None);
        }
        created?;
        Ok(Output::command(CommandTag::CreateIndex))
    }

    pub(crate) fn drop(
        &mut self,
        object_type: &ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
        cascade: bool,
    ) -> Result<Output> {
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        match object_type {
            ast::ObjectType::View => self.drop_views(if_exists, names, cascade),
            ast::ObjectType::Table => {
                let sequence = names
                    .iter()
                    .filter_map(|name| self.namespace().existing_table(name).ok())
                    .find(|name| self.catalog.sequence_object(name).is_some());
                if let Some(sequence) = sequence {
                    return Err(SqlError::new("42809", format!("\"{sequence}\" is not a table")));
                }
                let dropped: Vec<String> = names
                    .iter()
                    .filter_map(|name| self.namespace().existing_table(name).ok())
                    .filter(|name| self.catalog.table(name).is_some())
                    .collect();
                if let Some(view) = dropped
                    .iter()
                    .find(|name| self.catalog.table(name).is_some_and(|table| table.is_view()))
                {
                    return Err(SqlError::new("42809", format!("\"{view}\" is not a table")));
                }
                self.drop_referencing_keys(&dropped, cascade)?;
                self.drop_dependent_views(&dropped, "table", cascade)?;
                for name in names {
                    let name = match self.namespace().existing_table(name) {
                        Err(error) if error.sqlstate == "3F000" && if_exists => continue,
                        name => name?,
                    };
                    if self.catalog.table(&name).is_none() {
                        if if_exists {
                            continue;
                        }
                        return Err(SqlError::new(
                            "42P01",
                            format!("table \"{name}\" does not exist"),
                        ));
                    }
                    if self.state != BlockState::Idle {
                        self.drop_in_block(PendingDrop::Table(name));
                        continue;
                    }
                    self.catalog.drop_table(&name)?;
                }
                Ok(Output::command(CommandTag::DropTable))
            }
            ast::ObjectType::Index => {
                for name in names {
                    let name = match self.namespace().existing_table(name) {
                        Err(error) if error.sqlstate == "3F000" && if_exists => continue,
                        Err(error) if error.sqlstate == "42P01" => {
                            if if_exists {
                                continue;
                            }
                            let name = object_name(name)?;
                            return Err(SqlError::new(
                                "42704",
                                format!("index \"{name}\" does not exist"),
                            ));
                        }
                        name => self.temp_index_name(name?),
                    };
                    match self.catalog.index_table(&name) {
                        None if if_exists => {}
                        None => return Err(undefined_index(&name)),
                        Some(table) => {
                            refuse_constraint_index(&table, &name)?;
                            let what = format!("index {name}");
                            refuse_referenced_index(&self.catalog, &table, &name, &what)?;
                            self.drop_index_now_or_at_commit(&table, &name)?;
                        }
                    }
                }
                Ok(Output::command(CommandTag::DropIndex))
            }
            ast::ObjectType::Schema => {
                for name in names {
                    let schema = object_name(name)?;
                    if !SCHEMAS.contains(&schema.as_str()) {
                        if if_exists {
                            continue;
                        }
                        return Err(undefined_schema(&schema));
                    }
                    return Err(SqlError::unsupported(format!(
                        "DROP SCHEMA is not supported (tierdb has the fixed schemas pg_catalog, public and information_schema; \"{schema}\" stays)"
                    )));
                }
                Ok(Output::command(CommandTag::DropSchema))
            }
            other => Err(SqlError::unsupported(format!("DROP {other} is not supported"))),
        }
    }

    // ----- settings -----
}

pub(crate) fn unique_index_error(error: SqlError, name: &str) -> SqlError {
    if error.sqlstate == "23505" {
        SqlError::new("23505", format!("could not create unique index \"{name}\""))
    } else {
        error
    }
}

/// What CREATE TABLE's column and table constraints add to the table.
#[derive(Default)]
struct NewConstraints {
    primary: Option<Vec<usize>>,
    uniques: Vec<(Option<String>, Vec<usize>)>,
    /// The serial and identity columns' sequences.
    sequences: Vec<String>,
    /// The identity columns: their positions and sequence options.
    identities: Vec<(usize, Vec<SequenceOption>)>,
    /// CHECK constraints: the name given, if any, and the expression.
    checks: Vec<(Option<String>, ast::Expr)>,
    /// FOREIGN KEY constraints: the referencing column of a column constraint, and the
    /// constraint.
    foreign_keys: Vec<(Option<ast::Ident>, ast::ForeignKeyConstraint)>,
}

/// The columns a key constraint names, as positions (42703 for an unknown one).
fn key_positions(names: &[ast::IndexColumn], columns: &[ColumnMeta]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|column| {
            let name = match &column.column.expr {
                ast::Expr::Identifier(name) => ident(name),
                other => {
                    return Err(SqlError::unsupported(format!("constraint on expression {other}")))
                }
            };
            columns.iter().position(|c| c.name == name).ok_or_else(|| {
                SqlError::new("42703", format!("column \"{name}\" named in key does not exist"))
            })
        })
        .collect()
}

/// The indexes of a new table: its primary key (the clustering key) and its UNIQUE
/// constraints, named as PostgreSQL names them.
fn table_indexes(
    name: &str,
    primary: Option<Vec<usize>>,
    uniques: Vec<(Option<String>, Vec<usize>)>,
    columns: &[ColumnMeta],
) -> Vec<IndexMeta> {
    let mut indexes = Vec::new();
    if let Some(positions) = primary {
        indexes.push(IndexMeta {
            name: format!("{name}_pkey"),
            oid: 0,
            columns: positions,
            unique: true,
            primary: true,
            constraint: true,
            kind: IndexKind::Clustered,
            predicate: None,
        });
    }
    for (constraint_name, positions) in uniques {
        let index_name = constraint_name.unwrap_or_else(|| {
            let names: Vec<&str> = positions.iter().map(|&p| columns[p].name.as_str()).collect();
            format!("{name}_{}_key", names.join("_"))
        });
        indexes.push(IndexMeta {
            name: index_name,
            oid: 0,
            columns: positions,
            unique: true,
            primary: false,
            constraint: true,
            kind: IndexKind::Secondary,
            predicate: None,
        });
    }
    indexes
}

/// PostgreSQL's index access methods other than btree (and pgvector's hnsw and ivfflat):
/// refused by name.
const UNSUPPORTED_ACCESS_METHODS: [&str; 5] = ["hash", "gist", "gin", "spgist", "brin"];

/// Refuses what CREATE INDEX would otherwise ignore (each changes what the index is):
/// access methods other than btree, operator classes, INCLUDE, NULLS NOT DISTINCT and
/// storage parameters. A WHERE makes a partial index (session/partial_index.rs).
fn refuse_index_clauses(create: &ast::CreateIndex) -> Result<()> {
    let method = match &create.using {
        None | Some(ast::IndexType::BTree) => None,
        Some(ast::IndexType::Custom(name)) => Some(ident(name)),
        Some(other) => Some(other.to_string().to_lowercase()),
    };
    if let Some(method) = method.filter(|method| method != "btree") {
        if UNSUPPORTED_ACCESS_METHODS.contains(&method.as_str()) {
            return Err(SqlError::unsupported(format!(
                "index access method \"{method}\" is not supported"
            )));
        }
        return Err(SqlError::new("42704", format!("access method \"{method}\" does not exist")));
    }
    if let Some(class) = create.columns.iter().find_map(|column| column.operator_class.as_ref()) {
        return Err(SqlError::unsupported(format!(
            "index operator class {class} is not supported"
        )));
    }
    let refused = if !create.include.is_empty() {
        Some("CREATE INDEX ... INCLUDE is not supported")
    } else if create.nulls_distinct == Some(false) {
        Some("NULLS NOT DISTINCT indexes are not supported")
    } else if !create.with.is_empty() {
        Some("index storage parameters (CREATE INDEX ... WITH) are not supported")
    } else {
        None
    };
    match refused {
        Some(message) => Err(SqlError::unsupported(message)),
        None => Ok(()),
    }
}

/// PostgreSQL's 0A000 for a subquery in a column default (a default runs with the inserting
/// role's privileges: a subquery would read tables that role cannot).
pub(super) fn refuse_subquery_in_default(expr: &ast::Expr) -> Result<()> {
    let mut found = false;
    let _ = ast::visit_expressions(expr, |inner| {
        found |= matches!(
            inner,
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
        );
        std::ops::ControlFlow::<()>::Continue(())
    });
    match found {
        true => Err(SqlError::unsupported("cannot use subquery in DEFAULT expression")),
        false => Ok(()),
    }
}

/// Kinds of CREATE TABLE that tierdb does not build: refused by name (0A000), never
/// created as an ordinary table.
/// GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY among a column's options. Generated
/// columns (AS (expression) STORED) and identity sequence options are 0A000.
fn identity_of(
    options: &[ast::ColumnOptionDef],
) -> Result<Option<(Identity, Vec<SequenceOption>)>> {
    let mut identity = None;
    for option in options {
        let ast::ColumnOption::Generated {
            generated_as, sequence_options, generation_expr, ..
        } = &option.option
        else {
            continue;
        };
        if generation_expr.is_some() || matches!(generated_as, ast::GeneratedAs::ExpStored) {
            return Err(SqlError::unsupported("generated columns are not supported"));
        }
        if identity.is_some() {
            return Err(SqlError::syntax("multiple identity specifications for column"));
        }
        let kind = match generated_as {
            ast::GeneratedAs::Always => Identity::Always,
            _ => Identity::ByDefault,
        };
        let options =
            sequence_options.iter().flatten().map(identity_option).collect::<Result<_>>()?;
        identity = Some((kind, options));
    }
    Ok(identity)
}

/// One of sqlparser's identity sequence options as CREATE SEQUENCE's parser gives it.
fn identity_option(option: &ast::SequenceOptions) -> Result<SequenceOption> {
    let number = |expr: &ast::Expr| {
        let text = expr.to_string();
        text.parse::<i64>().map_err(|_| {
            SqlError::new("22003", format!("value \"{text}\" is out of range for type bigint"))
        })
    };
    Ok(match option {
        ast::SequenceOptions::IncrementBy(expr, _) => SequenceOption::Increment(number(expr)?),
        ast::SequenceOptions::MinValue(expr) => {
            SequenceOption::MinValue(expr.as_ref().map(number).transpose()?)
        }
        ast::SequenceOptions::MaxValue(expr) => {
            SequenceOption::MaxValue(expr.as_ref().map(number).transpose()?)
        }
        ast::SequenceOptions::StartWith(expr, _) => SequenceOption::Start(number(expr)?),
        ast::SequenceOptions::Cache(expr) => SequenceOption::Cache(number(expr)?),
        // sqlparser's flag is NO CYCLE.
        ast::SequenceOptions::Cycle(no_cycle) => SequenceOption::Cycle(!no_cycle),
    })
}

/// PostgreSQL's checks of an identity column: an integer type, no DEFAULT beside it.
fn check_identity_column(
    table: &str,
    meta: &ColumnMeta,
    options: &[ast::ColumnOptionDef],
) -> Result<()> {
    super::identity::refuse_identity_type(&meta.ty)?;
    if options.iter().any(|option| matches!(option.option, ast::ColumnOption::Default(_))) {
        return Err(SqlError::syntax(format!(
            "both default and identity specified for column \"{}\" of table \"{table}\"",
            meta.name
        )));
    }
    Ok(())
}

/// COLLATE on a column: tierdb compares text by code point, which is the "C" collation
/// (the database's, as pg_database shows); another collation would sort differently, so it
/// is refused rather than ignored.
pub(super) fn check_collation(collation: &ast::ObjectName) -> Result<()> {
    let name = collation.to_string().trim_matches('"').to_string();
    match name.as_str() {
        "C" | "POSIX" | "default" | "pg_catalog.\"C\"" | "pg_catalog.\"POSIX\"" => Ok(()),
        _ => Err(SqlError::unsupported(format!("collation \"{name}\" is not supported"))),
    }
}

fn refuse_table_kinds(create: &ast::CreateTable) -> Result<()> {
    let refused = [
        (create.global == Some(true), "GLOBAL TEMPORARY tables are not supported"),
        (create.unlogged, "unlogged tables are not supported"),
        (create.like.is_some(), "CREATE TABLE ... (LIKE ...) is not supported"),
        (create.clone.is_some(), "CREATE TABLE ... CLONE is not supported"),
        (create.inherits.is_some(), "table inheritance (INHERITS) is not supported"),
        (create.partition_by.is_some(), "partitioned tables (PARTITION BY) are not supported"),
        (create.partition_of.is_some(), "table partitions (PARTITION OF) are not supported"),
    ];
    match refused.into_iter().find(|(present, _)| *present) {
        Some((_, feature)) => Err(SqlError::unsupported(feature)),
        None => Ok(()),
    }
}

impl Session {
    /// CREATE SCHEMA: tierdb has only its fixed schemas (bind/namespace.rs), so a new one
    /// is refused (0A000) rather than accepted and ignored; an existing one is 42P06, or a
    /// no-op with IF NOT EXISTS, as in PostgreSQL.
    pub(crate) fn create_schema(
        &mut self,
        name: &ast::SchemaName,
        if_not_exists: bool,
    ) -> Result<Output> {
        let schema = match name {
            ast::SchemaName::Simple(name) => object_name(name)?,
            _ => return Err(SqlError::unsupported("CREATE SCHEMA AUTHORIZATION is not supported")),
        };
        if SCHEMAS.contains(&schema.as_str()) {
            if if_not_exists {
                return Ok(Output::command(CommandTag::CreateSchema));
            }
            return Err(SqlError::new("42P06", format!("schema \"{schema}\" already exists")));
        }
        Err(SqlError::unsupported(format!(
            "CREATE SCHEMA is not supported (tierdb keeps every table in schema public; \"{schema}\" was not created)"
        )))
    }

    /// The namespace this session's names resolve in: its database and search_path.
    pub(crate) fn namespace(&self) -> Namespace {
        let search_path = self.setting("search_path").unwrap_or_default();
        let hidden = self.hidden_tables();
        let restricted = self.setting("restrict_nonsystem_relation_kind").unwrap_or_default();
        let views_restricted =
            restricted.split(',').any(|kind| kind.trim().eq_ignore_ascii_case("view"));
        Namespace {
            hidden,
            views_restricted,
            temp_schema: self.temp_schema(),
            temp_tables: self.temp_relation_names(),
            ..Namespace::new(&self.database, &search_path)
        }
    }
}

/// A DROP inside a transaction block, done when the block commits.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum PendingDrop {
    Table(String),
    Index(String),
}

/// DROP INDEX of a constraint's index: PostgreSQL's 2BP01 (a clustering key has its own).
fn refuse_constraint_index(table: &TableMeta, name: &str) -> Result<()> {
    let constraint = table.indexes.iter().any(|index| index.name == name && index.constraint);
    if constraint && !table.is_clustering_index(name) {
        return Err(SqlError::new(
            "2BP01",
            format!(
                "cannot drop index {name} because constraint {name} on table {} requires it",
                table.name
            ),
        ));
    }
    Ok(())
}

fn undefined_index(name: &str) -> SqlError {
    SqlError::new("42704", format!("index \"{name}\" does not exist"))
}

impl Session {
    /// DROP TABLE or DROP INDEX inside a transaction block: a table is gone for this session
    /// at once; both are dropped when the block commits; ROLLBACK (or ROLLBACK TO a
    /// savepoint set before it) keeps them, a table with its rows, as in PostgreSQL. Other
    /// sessions use them until the commit (PostgreSQL would make them wait for the block's
    /// lock); an index stays maintained by every writer meanwhile.
    /// Drops `table`'s index `name` at once, or at COMMIT inside a block (DROP INDEX, ALTER
    /// TABLE ... DROP CONSTRAINT).
    pub(super) fn drop_index_now_or_at_commit(
        &mut self,
        table: &TableMeta,
        name: &str,
    ) -> Result<()> {
        if self.state == BlockState::Idle || table.is_clustering_index(name) {
            // A clustering key gives its 2BP01 now, as the drop would at COMMIT.
            return self.catalog.drop_index(name);
        }
        self.drop_in_block(PendingDrop::Index(name.to_string()));
        Ok(())
    }

    fn drop_in_block(&mut self, drop: PendingDrop) {
        debug_assert!(self.state != BlockState::Idle, "only inside a block");
        if !self.pending_drops.contains(&drop) {
            self.pending_drops.push(drop);
        }
        // This session's prepared statements naming the table must bind anew (42P01).
        self.catalog.invalidate_plans();
    }

    /// The tables this session does not see: dropped by its open block, or created by other
    /// sessions' open transactions. Without such DDL (the common case) this allocates nothing.
    pub(crate) fn hidden_tables(&self) -> Vec<String> {
        let mut hidden = self.dropped_tables();
        hidden.extend(self.catalog.hidden_tables(self.session_id));
        hidden
    }

    /// The tables this block dropped (hidden from it).
    pub(super) fn dropped_tables(&self) -> Vec<String> {
        self.pending_drops
            .iter()
            .filter_map(|drop| match drop {
                PendingDrop::Table(name) => Some(name.clone()),
                PendingDrop::Index(_) => None,
            })
            .collect()
    }

    /// DROP then CREATE of one name in a block (a migration that recreates a table): the
    /// drop cannot wait for COMMIT any longer, so it happens now and is no longer undone by
    /// ROLLBACK. The caller holds the DDL lock.
    fn drop_pending_now(&mut self, name: &str) -> Result<()> {
        let table = PendingDrop::Table(name.to_string());
        if let Some(position) = self.pending_drops.iter().position(|pending| *pending == table) {
            self.pending_drops.remove(position);
            self.catalog.drop_table(name)?;
        }
        Ok(())
    }

    /// After COMMIT: drops the tables and indexes the block dropped. A crash between the
    /// commit and these drops keeps them (the DROP is then lost, never data).
    pub(super) fn finish_pending_drops(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending_drops);
        if pending.is_empty() {
            return Ok(());
        }
        let _guard = self.catalog.lock_ddl();
        for drop in pending {
            match drop {
                PendingDrop::Table(name) => {
                    if self.catalog.table(&name).is_some() {
                        self.catalog.drop_table(&name)?;
                    }
                }
                PendingDrop::Index(name) => {
                    if self.catalog.index_table(&name).is_some() {
                        self.catalog.drop_index(&name)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// After ROLLBACK: the dropped tables and indexes stay.
    pub(super) fn forget_pending_drops(&mut self) {
        if !self.pending_drops.is_empty() {
            self.pending_drops.clear();
            self.catalog.invalidate_plans();
        }
    }
}

/// A column's SQL type. The catalog's int2vector and oidvector are not column types.
pub(super) fn column_type(column: &str, data_type: &ast::DataType) -> Result<SqlType> {
    let ty = bind::sql_type(data_type)?;
    if matches!(ty, SqlType::Int2Vector | SqlType::OidVector) {
        return Err(SqlError::unsupported(format!(
            "columns of type {} are not supported (column \"{column}\")",
            ty.display_name()
        )));
    }
    if let SqlType::Object(kind) = ty {
        // A stored value would be read back without the catalog that names it.
        return Err(SqlError::unsupported(format!(
            "columns of type {} are not supported (column \"{column}\")",
            kind.type_name()
        )));
    }
    Ok(ty)
}
