//! Identity columns' sequences (PostgreSQL's tablecmds.c ATExecAddIdentity,
//! ATExecSetIdentity, ATExecDropIdentity and sequence.c's identity options).
//!
//! An identity column made by this version owns a sequence of CREATE SEQUENCE's kind
//! (catalog/sequences.rs) named `<table>_<column>_seq` (or as SEQUENCE NAME says), made in
//! the statement's transaction with the options given, and its DEFAULT calls nextval of it.
//! pg_depend lists the sequence as the column's internal dependent ('i'), so pg_dump dumps
//! it inside `ALTER TABLE ... ADD GENERATED ... AS IDENTITY (SEQUENCE NAME ...)`. Identity
//! columns made by earlier versions (and those of temporary tables) keep an implicit column
//! sequence (options of CREATE SEQUENCE's defaults; RESTART only).

use super::sequences::object_name_of;
use super::*;
use crate::catalog::{Identity, SequenceMeta};
use crate::output::CommandTag;
use crate::parse::identity::{AlterIdentity, IdentityAction};
use crate::parse::sequences::{AlterSequence, SequenceOption};

impl Session {
    /// ALTER TABLE ... ALTER COLUMN ... ADD GENERATED / SET GENERATED / SET option /
    /// RESTART / DROP IDENTITY, in the statement's transaction.
    pub(crate) fn alter_identity_statement(&mut self, alter: &AlterIdentity) -> Result<Output> {
        if self.read_only() {
            return Err(txn_modes::read_only_error("ALTER TABLE"));
        }
        let table = match self.namespace().existing_table(&object_name_of(&alter.table)) {
            Err(error) if alter.if_exists && error.sqlstate == "42P01" => {
                return Ok(Output::command(CommandTag::AlterTable))
            }
            table => table?,
        };
        if alter.if_exists && self.catalog.table(&table).is_none() {
            // Nothing to do (PostgreSQL adds a NOTICE).
            return Ok(Output::command(CommandTag::AlterTable));
        }
        self.transactional_ddl(std::slice::from_ref(&table), |session| {
            session.alter_identity(&table, alter)
        })
    }

    fn alter_identity(&mut self, table_name: &str, alter: &AlterIdentity) -> Result<Output> {
        let table =
            self.catalog.table(table_name).ok_or_else(|| SqlError::undefined_table(table_name))?;
        if table.is_view() {
            return Err(SqlError::new(
                "42809",
                format!(
                    "ALTER TABLE ... cannot be performed on relation \"{table_name}\" (a view)"
                ),
            ));
        }
        let position = table.column_index(&alter.column).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{}\" of relation \"{table_name}\" does not exist", alter.column),
            )
        })?;
        match &alter.action {
            IdentityAction::Add { always, options } => {
                self.add_identity(&table, position, *always, options)
            }
            IdentityAction::Alter { generated_always, options } => {
                self.set_identity(&table, position, *generated_always, options)
            }
            IdentityAction::Drop { if_exists } => self.drop_identity(&table, position, *if_exists),
        }?;
        Ok(Output::command(CommandTag::AlterTable))
    }

    fn add_identity(
        &mut self,
        table: &TableMeta,
        position: usize,
        always: bool,
        options: &[SequenceOption],
    ) -> Result<()> {
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let column = &table.columns[position];
        refuse_identity_type(&column.ty)?;
        let refusal = if column.identity.is_some() {
            Some("is already an identity column")
        } else if column.default.is_some() {
            Some("already has a default value")
        } else if column.nullable {
            Some("must be declared NOT NULL before identity can be added")
        } else {
            None
        };
        if let Some(refusal) = refusal {
            return Err(SqlError::new(
                "55000",
                format!("column \"{}\" of relation \"{}\" {refusal}", column.name, table.name),
            ));
        }
        let sequence = match options.iter().find_map(|option| match option {
            SequenceOption::SequenceName(parts) => Some(parts),
            _ => None,
        }) {
            Some(parts) => self.namespace().new_table(&object_name_of(parts))?,
            None => self.unused_sequence_name(&table.name, &column.name),
        };
        let mut updated = table.clone();
        updated.columns[position].default =
            Some(self.create_identity_sequence(table, position, &sequence, options)?);
        updated.columns[position].identity =
            Some(if always { Identity::Always } else { Identity::ByDefault });
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }

    /// The identity sequence of column `position` of `table` (CREATE TABLE's or ADD
    /// GENERATED's), made in the statement's transaction; the caller holds the DDL lock.
    /// Returns the column's DEFAULT.
    pub(super) fn create_identity_sequence(
        &mut self,
        table: &TableMeta,
        position: usize,
        sequence: &str,
        options: &[SequenceOption],
    ) -> Result<String> {
        let column = &table.columns[position];
        let mut with_type: Vec<SequenceOption> = options
            .iter()
            .filter(|option| !matches!(option, SequenceOption::SequenceName(_)))
            .cloned()
            .collect();
        if with_type.iter().any(|option| matches!(option, SequenceOption::As(_))) {
            // PostgreSQL's grammar has no AS among identity options.
            return Err(SqlError::syntax("syntax error at or near \"AS\""));
        }
        with_type.push(SequenceOption::As(identity_type_name(&column.ty)?.to_string()));
        let (options, _) = super::sequences::sequence_options(None, &with_type)?;
        let mut meta = TableMeta::with_columns(sequence.to_string(), Vec::new());
        meta.sequence = Some(SequenceMeta {
            owner: Some((table.name.clone(), column.name.clone())),
            ..options
        });
        // Claimed as the statement's: a rollback forgets it with the table's change.
        self.claim_for_ddl(&[sequence.to_string()])?;
        self.create_owned_sequence_object(meta)?;
        let quoted = crate::identifiers::quote_identifier(sequence).replace('\'', "''");
        Ok(format!("nextval('{quoted}'::regclass)"))
    }

    /// PostgreSQL's ChooseRelationName: `<table>_<column>_seq`, else with 1, 2, ... after it.
    pub(super) fn unused_sequence_name(&self, table: &str, column: &str) -> String {
        let base = format!("{table}_{column}_seq");
        let mut candidate = base.clone();
        let mut suffix = 0u32;
        while self.catalog.relation_exists(&candidate) {
            suffix += 1;
            candidate = format!("{base}{suffix}");
        }
        candidate
    }

    fn set_identity(
        &mut self,
        table: &TableMeta,
        position: usize,
        generated_always: Option<bool>,
        options: &[SequenceOption],
    ) -> Result<()> {
        let column = &table.columns[position];
        let sequence = identity_sequence(table, position)?;
        if !options.is_empty() {
            // ALTER SEQUENCE's path: a sequence of CREATE SEQUENCE's kind takes every
            // option, an implicit one RESTART only.
            self.alter_sequence(&sequence, &AlterSequence::Options(options.to_vec()))?;
        }
        let Some(always) = generated_always else { return Ok(()) };
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let mut updated = table.clone();
        updated.columns[position].identity =
            Some(if always { Identity::Always } else { Identity::ByDefault });
        if column.identity == updated.columns[position].identity {
            return Ok(());
        }
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)
    }

    fn drop_identity(&mut self, table: &TableMeta, position: usize, if_exists: bool) -> Result<()> {
        let sequence = match identity_sequence(table, position) {
            // PostgreSQL adds a NOTICE ("... is not an identity column, skipping").
            Err(_) if if_exists => return Ok(()),
            sequence => sequence?,
        };
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let mut updated = table.clone();
        updated.columns[position].identity = None;
        updated.columns[position].default = None;
        Arc::clone(&self.catalog).replace_meta(self.ddl_transaction(), updated)?;
        if self.catalog.sequence_object(&sequence).is_some() {
            Arc::clone(&self.catalog).drop_sequence_object(self.ddl_transaction(), &sequence)?;
        }
        Ok(())
    }
}

/// The sequence of identity column `position` of `table`: 55000 when it is no identity
/// column.
fn identity_sequence(table: &TableMeta, position: usize) -> Result<String> {
    let column = &table.columns[position];
    column.identity_sequence().ok_or_else(|| {
        SqlError::new(
            "55000",
            format!(
                "column \"{}\" of relation \"{}\" is not an identity column",
                column.name, table.name
            ),
        )
    })
}

/// PostgreSQL's check of an identity column's type (22023).
pub(super) fn refuse_identity_type(ty: &SqlType) -> Result<()> {
    identity_type_name(ty).map(|_| ())
}

fn identity_type_name(ty: &SqlType) -> Result<&'static str> {
    match ty {
        SqlType::Int2 => Ok("smallint"),
        SqlType::Int4 => Ok("integer"),
        SqlType::Int8 => Ok("bigint"),
        _ => {
            Err(SqlError::new("22023", "identity column type must be smallint, integer, or bigint"))
        }
    }
}
