//! CREATE, ALTER and DROP SEQUENCE (PostgreSQL's sequence.c `init_params` and
//! `process_owned_by`), in the statement's transaction like the other DDL.

use super::*;
use crate::catalog::SequenceMeta;
use crate::output::CommandTag;
use crate::parse::sequences::{AlterSequence, SequenceOption, SequenceStatement};

impl Session {
    pub(crate) fn sequence_statement(&mut self, statement: &SequenceStatement) -> Result<Output> {
        if self.read_only() {
            let command = match statement {
                SequenceStatement::Create { .. } => "CREATE SEQUENCE",
                SequenceStatement::Alter { .. } => "ALTER SEQUENCE",
                SequenceStatement::Drop { .. } => "DROP SEQUENCE",
            };
            return Err(txn_modes::read_only_error(command));
        }
        match statement {
            SequenceStatement::Create { name, temporary, if_not_exists, options } => {
                if *temporary {
                    return Err(SqlError::unsupported("temporary sequences are not supported"));
                }
                let name = self.namespace().new_table(&object_name_of(name))?;
                if *if_not_exists && self.catalog.relation_exists(&name) {
                    return Ok(Output::command(CommandTag::CreateSequence));
                }
                self.transactional_ddl(std::slice::from_ref(&name), |session| {
                    session.create_sequence(&name, options)
                })
            }
            SequenceStatement::Alter { name, if_exists, action } => {
                let name = match self.existing_sequence(name, "relation") {
                    Err(error) if *if_exists && matches!(error.sqlstate, "42P01" | "3F000") => {
                        return Ok(Output::command(CommandTag::AlterSequence))
                    }
                    name => name?,
                };
                let mut claimed = vec![name.clone()];
                if let AlterSequence::RenameTo(to) = action {
                    claimed.push(to.clone());
                }
                self.transactional_ddl(&claimed, |session| session.alter_sequence(&name, action))
            }
            SequenceStatement::Drop { names, if_exists, cascade } => {
                let mut found = Vec::new();
                for name in names {
                    match self.existing_sequence(name, "sequence") {
                        Err(error) if *if_exists && matches!(error.sqlstate, "42P01" | "3F000") => {
                        }
                        name => found.push(name?),
                    }
                }
                self.transactional_ddl(&found.clone(), |session| {
                    session.drop_sequences(&found, *cascade)
                })
            }
        }
    }

    /// The catalog name of the sequence `name` names: 42P01 for none (PostgreSQL's
    /// `<kind> "s" does not exist`), 42809 for a relation that is no sequence.
    fn existing_sequence(&self, name: &[String], kind: &str) -> Result<String> {
        let relation = self.namespace().existing_table(&object_name_of(name))?;
        if self.catalog.sequence_object(&relation).is_some()
            || self.catalog.is_column_sequence(&relation)
        {
            return Ok(relation);
        }
        if self.catalog.relation_exists(&relation) {
            return Err(SqlError::new("42809", format!("\"{relation}\" is not a sequence")));
        }
        Err(SqlError::new("42P01", format!("{kind} \"{relation}\" does not exist")))
    }

    fn create_sequence(&mut self, name: &str, options: &[SequenceOption]) -> Result<Output> {
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let (sequence, _) = sequence_options(None, options)?;
        let mut meta = TableMeta::with_columns(name.to_string(), Vec::new());
        meta.sequence = Some(SequenceMeta { owner: self.owned_by(options, None)?, ..sequence });
        self.create_owned_sequence_object(meta)?;
        Ok(Output::command(CommandTag::CreateSequence))
    }

    /// Makes sequence `meta` in the statement's transaction, owned by the session's role.
    pub(super) fn create_owned_sequence_object(&mut self, meta: TableMeta) -> Result<()> {
        let name = meta.name.clone();
        let session_id = self.session_id;
        Arc::clone(&self.catalog).create_sequence_object(
            self.ddl_transaction(),
            session_id,
            meta,
        )?;
        self.own_new_table(&name)
    }

    pub(super) fn alter_sequence(&mut self, name: &str, action: &AlterSequence) -> Result<Output> {
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let Some(existing) = self.catalog.sequence_object(name) else {
            return self.alter_column_sequence(name, action);
        };
        let mut meta = (*existing).clone();
        let current = meta.sequence.clone().expect("a sequence");
        match action {
            AlterSequence::Options(options) => {
                let state = self.catalog.sequence_state(name)?;
                let (sequence, restart) =
                    sequence_options(Some((&current, state.last_value)), options)?;
                let owner = self.owned_by(options, current.owner.clone())?;
                meta.sequence = Some(SequenceMeta { owner, ..sequence });
                Arc::clone(&self.catalog).alter_sequence_object(self.ddl_transaction(), meta)?;
                if let Some(value) = restart {
                    self.catalog.write_state(name, value, false)?;
                }
            }
            AlterSequence::RenameTo(to) => {
                if self.catalog.relation_exists(to) {
                    return Err(SqlError::new(
                        "42P07",
                        format!("relation \"{to}\" already exists"),
                    ));
                }
                if !self.columns_using_sequence(name).is_empty() {
                    return Err(SqlError::unsupported(
                        "ALTER SEQUENCE ... RENAME TO of a sequence a column DEFAULT uses is not supported",
                    ));
                }
                meta.name = to.clone();
                Arc::clone(&self.catalog).rename_sequence_object(
                    self.ddl_transaction(),
                    name,
                    meta,
                )?;
            }
            AlterSequence::SetSchema(schema) => {
                if schema != crate::bind::SCHEMA_PUBLIC {
                    return Err(SqlError::unsupported(
                        "ALTER SEQUENCE ... SET SCHEMA is not supported (tierdb keeps sequences in public)",
                    ));
                }
            }
            AlterSequence::Other(form) => {
                return Err(SqlError::unsupported(format!("{form} is not supported")))
            }
        }
        Ok(Output::command(CommandTag::AlterSequence))
    }

    /// ALTER SEQUENCE of a serial or identity column's sequence: RESTART only.
    fn alter_column_sequence(&mut self, name: &str, action: &AlterSequence) -> Result<Output> {
        let AlterSequence::Options(options) = action else {
            return Err(SqlError::unsupported(format!(
                "ALTER SEQUENCE of the sequence \"{name}\" of a serial or identity column is not supported but for RESTART"
            )));
        };
        let [SequenceOption::Restart(value)] = options.as_slice() else {
            return Err(SqlError::unsupported(format!(
                "ALTER SEQUENCE of the sequence \"{name}\" of a serial or identity column is not supported but for RESTART"
            )));
        };
        let value = value.unwrap_or(1);
        if value < 1 {
            return Err(SqlError::new(
                "22023",
                format!("RESTART value ({value}) cannot be less than MINVALUE (1)"),
            ));
        }
        self.catalog.setval(name, value, false)?;
        Ok(Output::command(CommandTag::AlterSequence))
    }

    /// The owner OWNED BY in `options` gives (`current` without one): the table's column
    /// must exist (42P01, 42703); a view's is 0A000.
    fn owned_by(
        &self,
        options: &[SequenceOption],
        current: Option<(String, String)>,
    ) -> Result<Option<(String, String)>> {
        let Some(owned_by) = options.iter().find_map(|option| match option {
            SequenceOption::OwnedBy(target) => Some(target),
            _ => None,
        }) else {
            return Ok(current);
        };
        let Some(parts) = owned_by else { return Ok(None) };
        if parts.len() < 2 {
            return Err(SqlError::syntax("invalid OWNED BY option"));
        }
        let (table_parts, column) = parts.split_at(parts.len() - 1);
        let table = self.namespace().existing_table(&object_name_of(table_parts))?;
        let Some(meta) = self.catalog.table(&table) else {
            if self.catalog.relation_exists(&table) {
                return Err(SqlError::new(
                    "42809",
                    format!("sequence cannot be owned by relation \"{table}\""),
                ));
            }
            return Err(SqlError::undefined_table(&table));
        };
        if meta.is_view() {
            return Err(SqlError::unsupported("OWNED BY a view's column is not supported"));
        }
        if meta.column_index(&column[0]).is_none() {
            return Err(SqlError::new(
                "42703",
                format!("column \"{}\" of relation \"{table}\" does not exist", column[0]),
            ));
        }
        Ok(Some((table, column[0].clone())))
    }

    /// The columns (table, column) whose DEFAULT calls nextval of sequence `name`.
    pub(super) fn columns_using_sequence(&self, name: &str) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for table in self.catalog.tables() {
            for column in &table.columns {
                let default = column.default.as_deref().unwrap_or_default();
                if crate::catalog::sequence_of_default(default).is_none()
                    && crate::catalog::default_sequences(default).iter().any(|used| used == name)
                {
                    found.push((table.name.clone(), column.name.clone()));
                }
            }
        }
        found
    }

    /// DROP SEQUENCE: a sequence a column DEFAULT uses is 2BP01 without CASCADE; with it
    /// the DEFAULT goes too (PostgreSQL's "drop cascades to default value").
    fn drop_sequences(&mut self, names: &[String], cascade: bool) -> Result<Output> {
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        for name in names {
            if self.catalog.sequence_object(name).is_none() {
                // A serial or identity column's sequence: its DEFAULT depends on it.
                let (table, column) = self.column_of_implicit_sequence(name);
                if cascade {
                    return Err(SqlError::unsupported(format!(
                        "DROP SEQUENCE ... CASCADE of the sequence \"{name}\" of a serial or identity column is not supported"
                    )));
                }
                return Err(dependents_error(name, &[(table, column)]));
            }
            if let Some((table, column)) = self.identity_owner(name) {
                // An identity column's sequence is part of the column (deptype 'i'): not
                // even CASCADE drops it.
                return Err(SqlError::new(
                    "2BP01",
                    format!(
                        "cannot drop sequence {name} because column {column} of table {table} requires it"
                    ),
                ));
            }
            let users = self.columns_using_sequence(name);
            if !users.is_empty() && !cascade {
                return Err(dependents_error(name, &users));
            }
            for (table, column) in users {
                let Some(meta) = self.catalog.table(&table) else { continue };
                let mut updated = (*meta).clone();
                let position = updated.column_index(&column).expect("a listed column");
                updated.columns[position].default = None;
                self.claim_for_ddl(std::slice::from_ref(&table))?;
                Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
            }
            Arc::clone(&self.catalog).drop_sequence_object(self.ddl_transaction(), name)?;
        }
        Ok(Output::command(CommandTag::DropSequence))
    }

    /// The identity column (table, column) that owns sequence `name`, if one does.
    fn identity_owner(&self, name: &str) -> Option<(String, String)> {
        let sequence = self.catalog.sequence_object(name)?;
        let (table, column) = sequence.sequence.as_ref()?.owner.clone()?;
        let meta = self.catalog.table(&table)?;
        let position = meta.column_index(&column)?;
        meta.columns[position].identity.map(|_| (table, column))
    }

    fn column_of_implicit_sequence(&self, name: &str) -> (String, String) {
        for table in self.catalog.tables() {
            for (_, column, sequence) in crate::catalog::column_sequences(&table) {
                if sequence == name {
                    return (table.name.clone(), column.name.clone());
                }
            }
        }
        (String::new(), String::new())
    }
}

/// 2BP01 for dropping sequence `name` that the DEFAULTs of `columns` use.
fn dependents_error(name: &str, columns: &[(String, String)]) -> SqlError {
    assert!(!columns.is_empty());
    SqlError::new(
        "2BP01",
        format!("cannot drop sequence {name} because other objects depend on it"),
    )
}

pub(super) fn object_name_of(parts: &[String]) -> ast::ObjectName {
    ast::ObjectName::from(
        parts.iter().map(|part| ast::Ident::with_quote('"', part.clone())).collect::<Vec<_>>(),
    )
}

/// The type a sequence's AS names: 22023 for one that is not smallint, integer or bigint.
fn sequence_type(name: &str) -> Result<SqlType> {
    match name {
        "smallint" | "int2" => Ok(SqlType::Int2),
        "integer" | "int" | "int4" => Ok(SqlType::Int4),
        "bigint" | "int8" => Ok(SqlType::Int8),
        _ => Err(SqlError::new("22023", "sequence type must be smallint, integer, or bigint")),
    }
}

/// The range of a sequence type: (min, max) and its name.
fn type_range(ty: &SqlType) -> (i64, i64, &'static str) {
    match ty {
        SqlType::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX), "smallint"),
        SqlType::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX), "integer"),
        _ => (i64::MIN, i64::MAX, "bigint"),
    }
}

/// PostgreSQL's init_params: the options of a new sequence (`current` None) or of one with
/// definition `current` and last value altered by `options`, and the value RESTART sets.
pub(super) fn sequence_options(
    current: Option<(&SequenceMeta, i64)>,
    options: &[SequenceOption],
) -> Result<(SequenceMeta, Option<i64>)> {
    let is_init = current.is_none();
    let mut meta = current.map(|(meta, _)| meta.clone()).unwrap_or(SequenceMeta {
        ty: SqlType::Int8,
        start: 0,
        increment: 1,
        minimum: 0,
        maximum: 0,
        cache: 1,
        cycle: false,
        owner: None,
    });
    let option = |wanted: &str| options.iter().find(|option| option.keyword() == wanted);
    let (mut reset_max, mut reset_min) = (false, false);
    if let Some(SequenceOption::As(name)) = option("as") {
        let ty = sequence_type(name)?;
        if !is_init {
            let (old_min, old_max, _) = type_range(&meta.ty);
            reset_max = meta.maximum == old_max;
            reset_min = meta.minimum == old_min;
        }
        meta.ty = ty;
    }
    let (type_min, type_max, type_name) = type_range(&meta.ty);
    if let Some(SequenceOption::Increment(increment)) = option("increment") {
        if *increment == 0 {
            return Err(SqlError::new("22023", "INCREMENT must not be zero"));
        }
        meta.increment = *increment;
    }
    if let Some(SequenceOption::Cycle(cycle)) = option("cycle") {
        meta.cycle = *cycle;
    }
    match option("maxvalue") {
        Some(SequenceOption::MaxValue(Some(value))) => meta.maximum = *value,
        found if is_init || found.is_some() || reset_max => {
            meta.maximum = if meta.increment > 0 || reset_max { type_max } else { -1 };
        }
        _ => {}
    }
    if meta.maximum < type_min || meta.maximum > type_max {
        return Err(SqlError::new(
            "22023",
            format!(
                "MAXVALUE ({}) is out of range for sequence data type {type_name}",
                meta.maximum
            ),
        ));
    }
    match option("minvalue") {
        Some(SequenceOption::MinValue(Some(value))) => meta.minimum = *value,
        found if is_init || found.is_some() || reset_min => {
            meta.minimum = if meta.increment < 0 || reset_min { type_min } else { 1 };
        }
        _ => {}
    }
    if meta.minimum < type_min || meta.minimum > type_max {
        return Err(SqlError::new(
            "22023",
            format!(
                "MINVALUE ({}) is out of range for sequence data type {type_name}",
                meta.minimum
            ),
        ));
    }
    if meta.minimum >= meta.maximum {
        return Err(SqlError::new(
            "22023",
            format!("MINVALUE ({}) must be less than MAXVALUE ({})", meta.minimum, meta.maximum),
        ));
    }
    let current_last = current.map(|(_, last_value)| last_value);
    let restart = start_and_restart(&mut meta, options, is_init, current_last)?;
    Ok((meta, restart))
}

/// The option of `options` whose keyword is `wanted`.
fn option_of<'a>(options: &'a [SequenceOption], wanted: &str) -> Option<&'a SequenceOption> {
    options.iter().find(|option| option.keyword() == wanted)
}

/// init_params' START, RESTART and CACHE: checked against the bounds (22023). The last value
/// (`current_last`, None for a new sequence) must lie within them too. Returns the value
/// RESTART sets.
fn start_and_restart(
    meta: &mut SequenceMeta,
    options: &[SequenceOption],
    is_init: bool,
    current_last: Option<i64>,
) -> Result<Option<i64>> {
    match option_of(options, "start") {
        Some(SequenceOption::Start(value)) => meta.start = *value,
        _ if is_init => meta.start = if meta.increment > 0 { meta.minimum } else { meta.maximum },
        _ => {}
    }
    if meta.start < meta.minimum {
        return Err(SqlError::new(
            "22023",
            format!("START value ({}) cannot be less than MINVALUE ({})", meta.start, meta.minimum),
        ));
    }
    if meta.start > meta.maximum {
        return Err(SqlError::new(
            "22023",
            format!(
                "START value ({}) cannot be greater than MAXVALUE ({})",
                meta.start, meta.maximum
            ),
        ));
    }
    let restart = match option_of(options, "restart") {
        Some(SequenceOption::Restart(value)) => Some(value.unwrap_or(meta.start)),
        _ => None,
    };
    let last_value = restart.or(current_last).unwrap_or(meta.start);
    if last_value < meta.minimum {
        return Err(SqlError::new(
            "22023",
            format!("RESTART value ({last_value}) cannot be less than MINVALUE ({})", meta.minimum),
        ));
    }
    if last_value > meta.maximum {
        return Err(SqlError::new(
            "22023",
            format!(
                "RESTART value ({last_value}) cannot be greater than MAXVALUE ({})",
                meta.maximum
            ),
        ));
    }
    if let Some(SequenceOption::Cache(cache)) = option_of(options, "cache") {
        if *cache <= 0 {
            return Err(SqlError::new(
                "22023",
                format!("CACHE ({cache}) must be greater than zero"),
            ));
        }
        meta.cache = *cache;
    }
    Ok(restart)
}
