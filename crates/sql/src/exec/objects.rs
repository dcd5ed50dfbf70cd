//! Input and output of the object identifier types against the catalog: a name as
//! regclass, regtype, regnamespace or regrole reads it (PostgreSQL's regclassin and the
//! others), and an oid's printed name (regclassout and the others).
//!
//! Relations are the user tables and indexes (schema `public`) and the system views
//! (`pg_catalog`, `information_schema`). A view that is one of PostgreSQL's catalogs has
//! the catalog's fixed OID (`pg_class` is 1259: clients compare `classoid` with
//! `'pg_catalog.pg_class'::regclass`); PostgreSQL's other system views have OIDs initdb
//! assigns, so tierdb numbers them from `SYSTEM_VIEW_OID_BASE`.

use std::sync::Arc;

use crate::bind::{view_schema, SCHEMAS, SCHEMA_CATALOG, SCHEMA_PUBLIC};
use crate::catalog::{column_sequences, sequence_oid, SequenceState};
use crate::error::{Result, SqlError};
use crate::plan::deparse::quote_identifier;
use crate::system::{SequenceRef, SessionInfo};
use crate::types::{
    cannot_cast, type_oid_by_name, type_output_name, Datum, ObjectKind, ObjectReference, SqlType,
};

/// The OIDs of pg_namespace's rows, in `SCHEMAS` order.
pub(crate) const SCHEMA_OIDS: [u32; 3] = [11, 2200, 13_000];

/// The system views as relations: (OID, name, schema).
fn system_relations() -> impl Iterator<Item = (u32, &'static str, &'static str)> {
    crate::system::view_oids().map(|(name, oid)| (oid, name, view_schema(name)))
}

/// Casts `datum` (of type `from`) to the object identifier type `kind`.
pub fn cast_to_object(
    datum: Datum,
    from: &SqlType,
    kind: ObjectKind,
    session: &SessionInfo<'_>,
) -> Result<Datum> {
    let oid = match &datum {
        Datum::Null => return Ok(Datum::Null),
        Datum::Object(object) => object.oid,
        Datum::Text(text) => {
            let object = object_by_name(kind, text, session)?;
            return object.map(Datum::Object).ok_or_else(|| missing(kind, text));
        }
        // int4 to oid reinterprets the bits (-1 is 4294967295); int8 checks the range.
        Datum::Int(number) if *from == SqlType::Int8 || *from == SqlType::Oid => {
            u32::try_from(*number).map_err(|_| SqlError::out_of_range("OID"))?
        }
        Datum::Int(number) => u32::try_from(number.rem_euclid(1 << 32))
            .map_err(|_| SqlError::internal("a remainder of 2^32 fits u32"))?,
        _ => return Err(cannot_cast(from, &SqlType::Object(kind))),
    };
    Ok(Datum::Object(reference(kind, oid, session)))
}

/// The value of `oid` as `kind`: the object's name, or no name when there is no object.
pub fn reference(kind: ObjectKind, oid: u32, session: &SessionInfo<'_>) -> ObjectReference {
    let text = if oid == 0 { None } else { output_name(kind, oid, session) };
    ObjectReference { oid, text: text.map(Arc::from) }
}

fn output_name(kind: ObjectKind, oid: u32, session: &SessionInfo<'_>) -> Option<String> {
    match kind {
        ObjectKind::Class => relation_name(oid, session),
        ObjectKind::Type => type_output_name(oid),
        // pg_proc has no rows in tierdb: every function oid prints as its digits.
        ObjectKind::Procedure => None,
        ObjectKind::Namespace => SCHEMA_OIDS
            .iter()
            .position(|schema| *schema == oid)
            .map(|index| quote_identifier(SCHEMAS[index])),
        ObjectKind::Role => session
            .catalog
            .roles()
            .into_iter()
            .find(|role| role.oid == oid)
            .map(|role| quote_identifier(&role.name)),
    }
}

/// A relation's name, qualified when its schema is not on the search path.
fn relation_name(oid: u32, session: &SessionInfo<'_>) -> Option<String> {
    if let Some((_, name, schema)) = system_relations().find(|(view, ..)| *view == oid) {
        let name = quote_identifier(name);
        return Some(if schema == SCHEMA_CATALOG { name } else { format!("{schema}.{name}") });
    }
    let name = user_relations(session).find(|(relation, _)| *relation == oid)?.1;
    if let Some((_, relation)) = crate::catalog::split_temp_name(&name) {
        // pg_temp is always searched: a temp table's name needs no schema.
        return Some(quote_identifier(relation));
    }
    let name = quote_identifier(&name);
    Some(if session.public_on_path { name } else { format!("{SCHEMA_PUBLIC}.{name}") })
}

/// The object `text` names as `kind` (a name, or an oid's digits); None when there is
/// none. A malformed name is an error (42602, 42601, 0A000).
pub fn object_by_name(
    kind: ObjectKind,
    text: &str,
    session: &SessionInfo<'_>,
) -> Result<Option<ObjectReference>> {
    let trimmed = text.trim();
    if trimmed == "-" {
        return Ok(Some(ObjectReference { oid: 0, text: None }));
    }
    if !trimmed.is_empty() && trimmed.bytes().all(|byte| byte.is_ascii_digit()) {
        let oid = trimmed.parse::<u32>().map_err(|_| {
            SqlError::new("22003", format!("value \"{text}\" is out of range for type oid"))
        })?;
        return Ok(Some(reference(kind, oid, session)));
    }
    let oid = match kind {
        ObjectKind::Class => relation_oid(&name_parts(text)?, session)?,
        ObjectKind::Type => type_oid_by_name(text),
        ObjectKind::Procedure => {
            return Err(SqlError::unsupported("regproc input of function names is not supported"))
        }
        ObjectKind::Namespace => {
            let name = single_name(text)?;
            SCHEMAS.iter().position(|schema| *schema == name).map(|index| SCHEMA_OIDS[index])
        }
        ObjectKind::Role => {
            let name = single_name(text)?;
            let roles = session.catalog.roles();
            roles.into_iter().find(|role| role.name == name).map(|role| role.oid)
        }
    };
    Ok(oid.map(|oid| reference(kind, oid, session)))
}

/// The OID of the relation `parts` names, as PostgreSQL's RangeVarGetRelid resolves it.
fn relation_oid(parts: &[String], session: &SessionInfo<'_>) -> Result<Option<u32>> {
    let (schema, name) = match parts {
        [name] => (None, name),
        [schema, name] => (Some(schema.as_str()), name),
        [database, schema, name] => {
            if database != session.database {
                return Err(SqlError::unsupported(format!(
                    "cross-database references are not implemented: \"{}\"",
                    parts.join(".")
                )));
            }
            (Some(schema.as_str()), name)
        }
        _ => {
            return Err(SqlError::syntax(format!(
                "improper relation name (too many dotted names): {}",
                parts.join(".")
            )))
        }
    };
    // The session's temp schema is searched first (PostgreSQL's pg_temp), then pg_catalog,
    // then public when it is on the path.
    let own_temp = crate::catalog::temp_schema(session.session_id);
    let temp_named = schema
        .is_some_and(|schema| schema == crate::catalog::TEMP_SCHEMA_ALIAS || schema == own_temp);
    if schema.is_none() || temp_named {
        let internal = crate::catalog::temp_table_name_in(&own_temp, name);
        let found = user_relations(session).find(|(_, relation)| *relation == internal);
        if found.is_some() || temp_named {
            return Ok(found.map(|(oid, _)| oid));
        }
    }
    let view = system_relations().find(|(_, view, view_schema)| {
        view == name
            && schema.map_or(*view_schema == SCHEMA_CATALOG, |schema| schema == *view_schema)
    });
    if let Some((oid, ..)) = view {
        return Ok(Some(oid));
    }
    match schema {
        Some(SCHEMA_PUBLIC) => {}
        None if session.public_on_path => {}
        Some(other) if !SCHEMAS.contains(&other) => {
            return Err(SqlError::new("3F000", format!("schema \"{other}\" does not exist")))
        }
        _ => return Ok(None),
    }
    Ok(user_relations(session).find(|(_, relation)| relation == name).map(|(oid, _)| oid))
}

/// pg_table_is_visible: false only for a permanent relation whose name a temp relation of
/// the session takes (pg_temp is searched first); true for every other OID, as before temp
/// tables (tierdb keeps user relations in public).
pub fn relation_visible(oid: i64, session: &SessionInfo<'_>) -> bool {
    let Ok(oid) = u32::try_from(oid) else { return true };
    if i64::from(oid) < crate::catalog::FIRST_USER_OID {
        return true;
    }
    let Some((_, name)) = user_relations(session).find(|(relation, _)| *relation == oid) else {
        return true;
    };
    if crate::catalog::split_temp_name(&name).is_some() {
        return true;
    }
    let own_temp = crate::catalog::temp_schema(session.session_id);
    let internal = crate::catalog::temp_table_name_in(&own_temp, &name);
    !user_relations(session).any(|(_, relation)| relation == internal)
}

/// The user relations the session sees, (OID, name): tables, their indexes and the
/// sequences of their serial and identity columns.
fn user_relations(session: &SessionInfo<'_>) -> impl Iterator<Item = (u32, String)> {
    let hidden = session.hidden_tables.clone();
    let tables = session.catalog.tables().into_iter();
    let tables = tables.filter(move |table| !hidden.contains(&table.name)).flat_map(|table| {
        let mut relations = vec![(table.oid, table.name.clone())];
        relations.extend(table.indexes.iter().map(|index| (index.oid, index.name.clone())));
        for (position, _, sequence) in column_sequences(&table) {
            if let Some(oid) = sequence_oid(table.oid, position) {
                relations.push((oid, sequence.to_string()));
            }
        }
        relations
    });
    let hidden = session.hidden_tables.clone();
    let sequences = session.catalog.sequence_objects().into_iter();
    let sequences = sequences.filter(move |sequence| !hidden.contains(&sequence.name));
    tables.chain(sequences.map(|sequence| (sequence.oid, sequence.name.clone())))
}

/// The error of a cast from a name that denotes no object.
pub fn missing(kind: ObjectKind, text: &str) -> SqlError {
    let name = name_parts(text).map(|parts| parts.join(".")).unwrap_or_else(|_| text.to_string());
    match kind {
        ObjectKind::Class => SqlError::undefined_table(&name),
        ObjectKind::Type => {
            SqlError::new("42704", format!("type \"{}\" does not exist", text.trim()))
        }
        ObjectKind::Procedure => SqlError::undefined_function(&name),
        ObjectKind::Namespace => {
            SqlError::new("3F000", format!("schema \"{name}\" does not exist"))
        }
        ObjectKind::Role => SqlError::new("42704", format!("role \"{name}\" does not exist")),
    }
}

/// A name that must be one identifier (regnamespace, regrole).
fn single_name(text: &str) -> Result<String> {
    let mut parts = name_parts(text)?;
    match parts.len() {
        1 => Ok(parts.remove(0)),
        _ => Err(invalid_name()),
    }
}

fn invalid_name() -> SqlError {
    SqlError::new("42602", "invalid name syntax")
}

/// A dotted name split into identifiers as PostgreSQL's SplitIdentifierString does:
/// unquoted parts folded to lower case, `"..."` parts kept with `""` as a quote,
/// whitespace around parts skipped.
pub fn name_parts(text: &str) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut part = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') if chars.next_if_eq(&'"').is_some() => part.push('"'),
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(invalid_name()),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != '.' && !c.is_whitespace()) {
                part.push(c.to_ascii_lowercase());
            }
        }
        if part.is_empty() {
            return Err(invalid_name());
        }
        parts.push(part);
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.next() {
            None => return Ok(parts),
            Some('.') => {}
            Some(_) => return Err(invalid_name()),
        }
    }
}

/// pg_sequence_last_value(sequence): the last value nextval returned, None before the
/// first call; 42809 for a relation that is not a sequence.
pub fn sequence_state(oid: i64, session: &SessionInfo<'_>) -> Result<SequenceState> {
    let sequence = sequence_by_oid(oid, session)?;
    if sequence.standalone {
        return session.catalog.sequence_state(&sequence.name);
    }
    let last_value = session.catalog.sequence_last_value(&sequence.name)?;
    Ok(SequenceState {
        last_value: last_value.unwrap_or(1),
        is_called: last_value.is_some(),
        log_count: 0,
    })
}

/// The sequence with OID `oid`: 42809 for a relation that is not a sequence, 42P01 for
/// no relation.
pub fn sequence_by_oid(oid: i64, session: &SessionInfo<'_>) -> Result<SequenceRef> {
    for sequence in session.catalog.sequence_objects() {
        let Some(options) = sequence.sequence.as_ref() else { continue };
        if i64::from(sequence.oid) == oid && !session.hidden_tables.contains(&sequence.name) {
            return Ok(SequenceRef {
                oid: sequence.oid,
                name: sequence.name.clone(),
                ty: options.ty.clone(),
                standalone: true,
                minimum: options.minimum,
                maximum: options.maximum,
            });
        }
    }
    for table in session.catalog.tables() {
        for (position, column, sequence) in column_sequences(&table) {
            let found = sequence_oid(table.oid, position);
            if let Some(found) = found.filter(|found| i64::from(*found) == oid) {
                let ty = column.ty.clone();
                let maximum = super::sequences::sequence_max(&ty);
                let name = sequence.to_string();
                let minimum = super::sequences::SEQUENCE_MIN;
                return Ok(SequenceRef {
                    oid: found,
                    name,
                    ty,
                    standalone: false,
                    minimum,
                    maximum,
                });
            }
        }
    }
    let name = u32::try_from(oid).ok().and_then(|oid| relation_name(oid, session));
    Err(match name {
        Some(name) => SqlError::new("42809", format!("\"{name}\" is not a sequence")),
        None => SqlError::new("42P01", format!("could not open relation with OID {oid}")),
    })
}

/// The sequence `text` names, read as regclass reads a name (nextval('public."s"')):
/// 42P01 for no such relation, 42809 for one that is not a sequence.
pub fn sequence_by_name(text: &str, session: &SessionInfo<'_>) -> Result<SequenceRef> {
    let parts = name_parts(text)?;
    match relation_oid(&parts, session)? {
        Some(oid) => sequence_by_oid(i64::from(oid), session),
        None => Err(missing(ObjectKind::Class, text)),
    }
}

/// `pg_get_serial_sequence(table, column)`: the sequence a serial or identity column takes
/// its values from, qualified; None for a column without one. The table name is read as
/// regclass reads it, the column name literally (PostgreSQL's rules).
pub fn serial_sequence(
    table: &str,
    column: &str,
    session: &SessionInfo<'_>,
) -> Result<Option<String>> {
    let parts = name_parts(table)?;
    let oid = relation_oid(&parts, session)?.ok_or_else(|| missing(ObjectKind::Class, table))?;
    let tables = session.catalog.tables();
    let Some(meta) = tables.iter().find(|meta| meta.oid == oid) else {
        // A system view or an index: no column has a sequence.
        return Ok(None);
    };
    let Some(column_meta) = meta.columns.iter().find(|meta| meta.name == column) else {
        return Err(SqlError::new(
            "42703",
            format!("column \"{column}\" of relation \"{}\" does not exist", meta.name),
        ));
    };
    let implicit = column_meta.default.as_deref().and_then(crate::catalog::sequence_of_default);
    // Else a sequence OWNED BY the column (PostgreSQL looks for the dependency).
    let owned = session.catalog.owned_sequences(&meta.name, Some(column));
    let owned = owned.iter().find(|sequence| !session.hidden_tables.contains(&sequence.name));
    let sequence = implicit.or(owned.map(|sequence| sequence.name.as_str()));
    Ok(sequence.map(|sequence| format!("{SCHEMA_PUBLIC}.{}", quote_identifier(sequence))))
}
