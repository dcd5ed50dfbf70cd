//! Sequences made by CREATE SEQUENCE (PostgreSQL's sequence.c), beside the implicit ones of
//! serial and identity columns (`column_sequences`).
//!
//! A sequence is a `TableMeta` with a `SequenceMeta` and no engine table, like a view: its
//! definition row lives in `tierdb_sql_tables`, written by the statement's transaction, so
//! CREATE, ALTER and DROP SEQUENCE commit or roll back with it (`reconcile`). `table()` and
//! `tables()` leave sequences out; `sequence_objects()` lists them.
//!
//! Its values are not transactional, as in PostgreSQL: the state (last value, is_called)
//! lives in `tierdb_sql_sequence_states`, written by transactions of its own. nextval
//! reserves `SEQUENCE_LOG_VALUES` values ahead durably before it hands out the first of
//! them (PostgreSQL's SEQ_LOG_VALS and log_cnt), so that after a crash nextval continues
//! past every value it may have returned.

use super::*;

/// Values nextval reserves durably ahead (PostgreSQL's SEQ_LOG_VALS).
const SEQUENCE_LOG_VALUES: i64 = 32;
pub(super) const SEQUENCE_STATES_TABLE: &str = "tierdb_sql_sequence_states";

/// A sequence's options (pg_sequence's row) and owner.
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceMeta {
    /// smallint, integer or bigint.
    pub ty: SqlType,
    pub start: i64,
    pub increment: i64,
    pub minimum: i64,
    pub maximum: i64,
    /// Stored and shown; every value comes from the shared state whatever it is, so a
    /// session sees the values PostgreSQL's CACHE 1 gives.
    pub cache: i64,
    pub cycle: bool,
    /// OWNED BY (table, column): dropped with them.
    pub owner: Option<(String, String)>,
}

impl SequenceMeta {
    /// The options of a serial column's implicit sequence (and of identity columns made
    /// before session 22): from 1 by 1 to the type's maximum.
    pub fn implicit(ty: &SqlType, owner: Option<(String, String)>) -> SequenceMeta {
        let maximum = match ty {
            SqlType::Int2 => i64::from(i16::MAX),
            SqlType::Int4 => i64::from(i32::MAX),
            _ => i64::MAX,
        };
        SequenceMeta {
            ty: ty.clone(),
            start: 1,
            increment: 1,
            minimum: 1,
            maximum,
            cache: 1,
            cycle: false,
            owner,
        }
    }

    /// The stored line (`q`) of a sequence's definition.
    pub(super) fn encode(&self) -> String {
        let mut line = format!(
            "q\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            encode_type(&self.ty),
            self.start,
            self.increment,
            self.minimum,
            self.maximum,
            self.cache,
            u8::from(self.cycle)
        );
        if let Some((table, column)) = &self.owner {
            line.push_str(&format!("\t{}\t{}", escape(table), escape(column)));
        }
        line.push('\n');
        line
    }

    pub(super) fn decode(fields: &[&str]) -> Option<SequenceMeta> {
        if fields.len() != 8 && fields.len() != 10 {
            return None;
        }
        let number = |index: usize| fields[index].parse::<i64>().ok();
        Some(SequenceMeta {
            ty: decode_type(fields[1])?,
            start: number(2)?,
            increment: number(3)?,
            minimum: number(4)?,
            maximum: number(5)?,
            cache: number(6)?,
            cycle: fields[7] == "1",
            owner: (fields.len() == 10).then(|| (unescape(fields[8]), unescape(fields[9]))),
        })
    }
}

/// A sequence's values: the last one handed out (or set), whether nextval returned it
/// (else the next nextval returns it), and how many values after it are reserved durably.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceState {
    pub last_value: i64,
    pub is_called: bool,
    /// PostgreSQL's log_cnt.
    pub log_count: i64,
}

impl Catalog {
    /// Every sequence made by CREATE SEQUENCE, in name order.
    pub fn sequence_objects(&self) -> Vec<Arc<TableMeta>> {
        let mut found: Vec<Arc<TableMeta>> =
            self.tables.read().values().filter(|meta| meta.sequence.is_some()).cloned().collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// The sequence made by CREATE SEQUENCE named `name`.
    pub fn sequence_object(&self, name: &str) -> Option<Arc<TableMeta>> {
        self.tables.read().get(name).filter(|meta| meta.sequence.is_some()).cloned()
    }

    /// Whether a relation of any kind (table, view, index, sequence) is named `name`.
    pub fn relation_exists(&self, name: &str) -> bool {
        self.tables.read().contains_key(name)
            || self.index_table(name).is_some()
            || self.is_column_sequence(name)
    }

    /// CREATE SEQUENCE `meta` in `transaction`: hidden from other sessions until it commits.
    /// Its state starts at once (a rollback deletes it: `forget_table`). The caller holds
    /// the DDL lock and the claim on the name, and checked the options.
    pub fn create_sequence_object(
        &self,
        transaction: &mut Transaction,
        session: u64,
        mut meta: TableMeta,
    ) -> Result<()> {
        let options = meta.sequence.clone().expect("create_sequence_object of a sequence");
        if self.relation_exists(&meta.name) {
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        meta.oid = self.next_oid()?;
        self.write_state(&meta.name, options.start, false)?;
        self.store_meta_in(transaction, &meta)?;
        self.uncommitted.write().insert(meta.name.clone(), session);
        self.publish(meta);
        Ok(())
    }

    /// ALTER SEQUENCE: the new definition in `transaction`; the values handed out so far
    /// stay (the reservation ahead is given back, since the step may have changed).
    pub fn alter_sequence_object(
        &self,
        transaction: &mut Transaction,
        meta: TableMeta,
    ) -> Result<()> {
        let state = self.sequence_state(&meta.name)?;
        self.write_state(&meta.name, state.last_value, state.is_called)?;
        self.replace_meta(transaction, meta)
    }

    /// DROP SEQUENCE in `transaction`. Its state row stays until the drop commits: a
    /// rollback brings the sequence back with its values (the state row of a dropped
    /// sequence is deleted when a sequence of its name is created again, or never read).
    pub fn drop_sequence_object(&self, transaction: &mut Transaction, name: &str) -> Result<()> {
        self.drop_view(transaction, name)
    }

    /// Renames sequence `from` to `to` in `transaction` (its state moves at once).
    pub fn rename_sequence_object(
        &self,
        transaction: &mut Transaction,
        from: &str,
        meta: TableMeta,
    ) -> Result<()> {
        let state = self.sequence_state(from)?;
        self.write_state(&meta.name, state.last_value, state.is_called)?;
        transaction.delete(TABLES_TABLE, &[Value::Text(from.to_string())])?;
        self.tables.write().remove(from);
        self.store_meta_in(transaction, &meta)?;
        self.publish(meta);
        Ok(())
    }

    /// The sequences owned by a column of `table` (all of its columns: `column` None).
    pub fn owned_sequences(&self, table: &str, column: Option<&str>) -> Vec<Arc<TableMeta>> {
        self.sequence_objects()
            .into_iter()
            .filter(|meta| {
                meta.sequence.as_ref().and_then(|options| options.owner.as_ref()).is_some_and(
                    |(owner, owner_column)| {
                        owner == table && column.is_none_or(|column| column == owner_column)
                    },
                )
            })
            .collect()
    }

    /// The state of sequence `name`: in memory, else the durable row.
    pub fn sequence_state(&self, name: &str) -> Result<SequenceState> {
        if let Some(state) = self.sequence_states.lock().get(name) {
            return Ok(*state);
        }
        self.durable_state(name)
    }

    fn durable_state(&self, name: &str) -> Result<SequenceState> {
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let row = transaction.get(SEQUENCE_STATES_TABLE, &[Value::Text(name.to_string())])?;
        transaction.commit()?;
        match row.as_deref() {
            Some([_, Value::Int(last_value), Value::Int(called)]) => {
                Ok(SequenceState { last_value: *last_value, is_called: *called != 0, log_count: 0 })
            }
            None => Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist"))),
            Some(other) => Err(SqlError::internal(format!("sequence {name} holds {other:?}"))),
        }
    }

    /// Makes (`last_value`, `is_called`) the durable state of sequence `name` and its state
    /// in memory, nothing reserved ahead (setval, RESTART, CREATE).
    pub fn write_state(&self, name: &str, last_value: i64, is_called: bool) -> Result<()> {
        let mut states = self.sequence_states.lock();
        self.write_durable_state(name, last_value, is_called)?;
        states.insert(name.to_string(), SequenceState { last_value, is_called, log_count: 0 });
        Ok(())
    }

    fn write_durable_state(&self, name: &str, last_value: i64, is_called: bool) -> Result<()> {
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let key = Value::Text(name.to_string());
        transaction.delete(SEQUENCE_STATES_TABLE, std::slice::from_ref(&key))?;
        let row = vec![key, Value::Int(last_value), Value::Int(i64::from(is_called))];
        transaction.insert(SEQUENCE_STATES_TABLE, row)?;
        transaction.commit()?;
        Ok(())
    }

    /// nextval of a sequence made by CREATE SEQUENCE: the value after the last one within
    /// its bounds, wrapping with CYCLE, else 2200H (nothing handed out). When no value is
    /// reserved, `SEQUENCE_LOG_VALUES` more are made durable before this one is returned.
    pub fn nextval_object(&self, name: &str, options: &SequenceMeta) -> Result<i64> {
        let mut states = self.sequence_states.lock();
        let state = match states.get(name) {
            Some(state) => *state,
            None => self.durable_state(name)?,
        };
        let value = next_value(name, options, &state)?;
        let mut log_count = state.log_count - 1;
        if log_count < 0 || !state.is_called {
            let reserved = advance_within(value, options, SEQUENCE_LOG_VALUES);
            self.write_durable_state(name, reserved, true)?;
            let steps = (i128::from(reserved) - i128::from(value)) / i128::from(options.increment);
            log_count = i64::try_from(steps).expect("at most SEQUENCE_LOG_VALUES steps");
        }
        assert!(log_count >= 0);
        states.insert(
            name.to_string(),
            SequenceState { last_value: value, is_called: true, log_count },
        );
        Ok(value)
    }

    /// Forgets the state of sequence `name` (deleted after its DROP or a rolled-back CREATE).
    pub(super) fn delete_sequence_state(
        &self,
        transaction: &mut Transaction,
        name: &str,
    ) -> Result<()> {
        transaction.delete(SEQUENCE_STATES_TABLE, &[Value::Text(name.to_string())])?;
        self.sequence_states.lock().remove(name);
        Ok(())
    }
}

/// The value nextval returns after `state`.
fn next_value(name: &str, options: &SequenceMeta, state: &SequenceState) -> Result<i64> {
    if !state.is_called {
        return Ok(state.last_value);
    }
    let next = i128::from(state.last_value) + i128::from(options.increment);
    if next > i128::from(options.maximum) {
        if !options.cycle {
            return Err(SqlError::new(
                "2200H",
                format!(
                    "nextval: reached maximum value of sequence \"{name}\" ({})",
                    options.maximum
                ),
            ));
        }
        return Ok(options.minimum);
    }
    if next < i128::from(options.minimum) {
        if !options.cycle {
            return Err(SqlError::new(
                "2200H",
                format!(
                    "nextval: reached minimum value of sequence \"{name}\" ({})",
                    options.minimum
                ),
            ));
        }
        return Ok(options.maximum);
    }
    Ok(i64::try_from(next).expect("within the sequence's bounds"))
}

/// `value` advanced by up to `steps` increments, stopping at the sequence's bound.
fn advance_within(value: i64, options: &SequenceMeta, steps: i64) -> i64 {
    let mut reached = i128::from(value) + i128::from(options.increment) * i128::from(steps);
    let (minimum, maximum) = (i128::from(options.minimum), i128::from(options.maximum));
    if reached > maximum {
        let fit = (maximum - i128::from(value)) / i128::from(options.increment);
        reached = i128::from(value) + fit * i128::from(options.increment);
    } else if reached < minimum {
        let fit = (minimum - i128::from(value)) / i128::from(options.increment);
        reached = i128::from(value) + fit * i128::from(options.increment);
    }
    i64::try_from(reached).expect("within the sequence's bounds")
}

/// The sequences of public a stored DEFAULT's `nextval('name'...)` calls name, read as
/// regclass reads a name (`public.s`, `"S"`).
pub fn default_sequences(default: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = default;
    while let Some(at) = rest.find("nextval('") {
        rest = &rest[at + "nextval('".len()..];
        let Some(end) = rest.find('\'') else { break };
        let parts = regclass_parts(&rest[..end]);
        match parts.as_slice() {
            [name] => found.push(name.clone()),
            [schema, name] if schema == "public" => found.push(name.clone()),
            _ => {}
        }
        rest = &rest[end..];
    }
    found
}

/// A dotted name's parts: unquoted ones folded to lower case, `"..."` ones kept.
fn regclass_parts(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                parts.last_mut().expect("one part").push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            other if quoted => parts.last_mut().expect("one part").push(other),
            other => parts.last_mut().expect("one part").push(other.to_ascii_lowercase()),
        }
    }
    parts
}
