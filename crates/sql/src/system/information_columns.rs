//! information_schema.columns with PostgreSQL 15's 44 columns in their order: tools read
//! `udt_name` (the pg_type name, `_int4` for integer[]), the numeric precision and radix of
//! every number type, the octet lengths of character types, the datetime precision and an
//! identity column's bounds. Character sets, domains, scopes and intervals do not exist in
//! tierdb: their columns are NULL, as PostgreSQL's are for columns without them.

use super::values::{columns, default_text, optional, text};
use super::{SystemView, ViewType};
use crate::catalog::{ColumnMeta, Identity, SequenceMeta};
use crate::types::{Datum, SqlType};

/// PostgreSQL's character_octet_length of an unbounded character type (1 GB).
const UNBOUNDED_OCTET_LENGTH: i64 = 1_073_741_824;
/// The most bytes one character takes in the server encoding (UTF8).
const ENCODING_MAX_CHARACTER_BYTES: i64 = 4;
/// The precision of PostgreSQL's timestamps (microseconds).
const TIMESTAMP_PRECISION: i64 = 6;

/// The `columns` view (listed in `INFORMATION_VIEWS` in its place: the order numbers the
/// views' OIDs).
pub(super) const COLUMNS: SystemView = view!(&["columns"], |c| columns(&c.tables).map(|(table, position, column)| (c.session.database, table, position, column, TypeFacts::of(&column.ty), identity_sequence(c, column))), |(database, table, position, column, facts, sequence)| {
    table_catalog: Text = text(database),
    table_schema: Text = text(&crate::catalog::relation_schema(&table.name)),
    table_name: Text = text(crate::catalog::relation_name(&table.name)),
    column_name: Text = text(&column.name),
    ordinal_position: Int4 = ordinal(position),
    column_default: Text = column.default.as_deref().filter(|_| column.identity.is_none()).map_or(Datum::Null, |default| default_text(default, &column.ty, true)),
    is_nullable: Text = yes_or_no(column.nullable),
    data_type: Text = data_type(&column.ty),
    character_maximum_length: Int4 = optional(facts.maximum_length),
    character_octet_length: Int4 = optional(facts.octet_length),
    numeric_precision: Int4 = optional(facts.precision),
    numeric_precision_radix: Int4 = optional(facts.radix),
    numeric_scale: Int4 = optional(facts.scale),
    datetime_precision: Int4 = optional(facts.datetime_precision),
    interval_type: Text = Datum::Null,
    interval_precision: Int4 = Datum::Null,
    character_set_catalog: Text = Datum::Null,
    character_set_schema: Text = Datum::Null,
    character_set_name: Text = Datum::Null,
    collation_catalog: Text = collation(&column.ty).map_or(Datum::Null, |_| text(database)),
    collation_schema: Text = collation(&column.ty).map_or(Datum::Null, |_| text("pg_catalog")),
    collation_name: Text = collation(&column.ty).map_or(Datum::Null, text),
    domain_catalog: Text = Datum::Null,
    domain_schema: Text = Datum::Null,
    domain_name: Text = Datum::Null,
    udt_catalog: Text = text(database),
    udt_schema: Text = text("pg_catalog"),
    udt_name: Text = udt_name(&column.ty),
    scope_catalog: Text = Datum::Null,
    scope_schema: Text = Datum::Null,
    scope_name: Text = Datum::Null,
    maximum_cardinality: Int4 = Datum::Null,
    dtd_identifier: Text = text(&(position + 1).to_string()),
    is_self_referencing: Text = text("NO"),
    is_identity: Text = yes_or_no(column.identity.is_some()),
    identity_generation: Text = match column.identity {
        Some(Identity::Always) => text("ALWAYS"),
        Some(Identity::ByDefault) => text("BY DEFAULT"),
        None => Datum::Null,
    },
    identity_start: Text = identity_bound(&sequence, |options| options.start),
    identity_increment: Text = identity_bound(&sequence, |options| options.increment),
    identity_maximum: Text = identity_bound(&sequence, |options| options.maximum),
    identity_minimum: Text = identity_bound(&sequence, |options| options.minimum),
    identity_cycle: Text = yes_or_no(sequence.as_ref().is_some_and(|options| options.cycle)),
    is_generated: Text = text("NEVER"),
    generation_expression: Text = Datum::Null,
    // tierdb does not write through views (0A000).
    is_updatable: Text = yes_or_no(!table.is_view()),
});

fn ordinal(position: usize) -> Datum {
    Datum::Int(i64::try_from(position + 1).expect("a table has at most 1,600 columns"))
}

fn yes_or_no(flag: bool) -> Datum {
    text(if flag { "YES" } else { "NO" })
}

/// data_type: the type's SQL name without modifiers, `ARRAY` for every array type.
fn data_type(ty: &SqlType) -> Datum {
    if ty.array_element().is_some() {
        return text("ARRAY");
    }
    text(ty.display_name().split('(').next().unwrap_or_default())
}

/// udt_name: the type's pg_type name (`int4`, `varchar`, `_text`).
fn udt_name(ty: &SqlType) -> Datum {
    let name = crate::types::BUILTIN_TYPES
        .iter()
        .find(|(oid, _, _)| *oid == i64::from(ty.oid()))
        .map(|(_, name, _)| *name);
    debug_assert!(name.is_some(), "a column's type is in pg_type: {ty:?}");
    name.map_or(Datum::Null, text)
}

/// The explicit collation of a column's type: `name` is collated "C"; the other character
/// types take the database default, which information_schema shows as NULL.
fn collation(ty: &SqlType) -> Option<&'static str> {
    (*ty == SqlType::Name).then_some("C")
}

/// An identity column's sequence options: its sequence's (session/identity.rs), or an
/// implicit sequence's (made by earlier versions: from 1 by 1 to the type's maximum).
fn identity_sequence(c: &super::ViewContext<'_>, column: &ColumnMeta) -> Option<SequenceMeta> {
    column.identity?;
    let named = column.identity_sequence();
    if let Some(object) = named.and_then(|name| c.catalog.sequence_object(&name)) {
        return object.sequence.clone();
    }
    Some(SequenceMeta::implicit(&column.ty, None))
}

/// One of an identity column's sequence options, as text; NULL for other columns.
fn identity_bound(sequence: &Option<SequenceMeta>, bound: impl Fn(&SequenceMeta) -> i64) -> Datum {
    sequence.as_ref().map_or(Datum::Null, |options| text(&bound(options).to_string()))
}

/// The lengths, precisions and scale information_schema reports for a type.
struct TypeFacts {
    maximum_length: Option<i64>,
    octet_length: Option<i64>,
    precision: Option<i64>,
    radix: Option<i64>,
    scale: Option<i64>,
    datetime_precision: Option<i64>,
}

impl TypeFacts {
    fn of(ty: &SqlType) -> TypeFacts {
        let mut facts = TypeFacts {
            maximum_length: None,
            octet_length: None,
            precision: None,
            radix: None,
            scale: None,
            datetime_precision: None,
        };
        let binary = |facts: &mut TypeFacts, bits: i64, scale: Option<i64>| {
            facts.precision = Some(bits);
            facts.radix = Some(2);
            facts.scale = scale;
        };
        match ty {
            SqlType::Int2 => binary(&mut facts, 16, Some(0)),
            SqlType::Int4 => binary(&mut facts, 32, Some(0)),
            SqlType::Int8 => binary(&mut facts, 64, Some(0)),
            SqlType::Float4 => binary(&mut facts, 24, None),
            SqlType::Float8 => binary(&mut facts, 53, None),
            SqlType::Numeric { precision, scale } => {
                facts.precision = precision.map(i64::from);
                facts.radix = Some(10);
                facts.scale = precision.map(|_| scale.map_or(0, i64::from));
            }
            SqlType::Text | SqlType::Varchar(None) => {
                facts.octet_length = Some(UNBOUNDED_OCTET_LENGTH)
            }
            SqlType::Varchar(Some(length)) | SqlType::Char(length) => {
                facts.maximum_length = Some(i64::from(*length));
                facts.octet_length = Some(i64::from(*length) * ENCODING_MAX_CHARACTER_BYTES);
            }
            // A bit string's length in bits (its octet length is NULL, as in PostgreSQL).
            SqlType::Bit(Some(length)) | SqlType::VarBit(Some(length)) => {
                facts.maximum_length = Some(i64::from(*length));
            }
            SqlType::Date => facts.datetime_precision = Some(0),
            SqlType::Timestamp | SqlType::TimestampTz => {
                facts.datetime_precision = Some(TIMESTAMP_PRECISION);
            }
            _ => {}
        }
        facts
    }
}
