//! The table of system views. Each column is written as `name: Type = value`, the value
//! computed from the row's source item (`|item| { ... }` over the view's items).

use super::values::{columns, default_text, text};
use super::{index_definition, SystemView, ViewContext, ViewType};
use crate::catalog::{
    Catalog, CheckMeta, ForeignKeyMeta, IndexKind, IndexMeta, RoleMeta, TableMeta,
    BOOTSTRAP_SUPERUSER_OID,
};
use crate::types::{Datum, SqlType};

const NAMESPACE_CATALOG: i64 = 11;
pub(super) const NAMESPACE_PUBLIC: i64 = 2200;
const NAMESPACE_INFORMATION: i64 = 13_000;
const AM_BTREE: i64 = 403;
/// pgvector's access method has an extension's OID; tierdb's built-in one a fixed one.
const AM_HNSW: i64 = 16_400;
const AM_IVFFLAT: i64 = 16_401;
const AM_HEAP: i64 = 2;
/// pg_class's own OID: pg_depend's classid and refclassid for relations.
const PG_CLASS_OID: i64 = 1259;
/// The bootstrap superuser's OID, the owner of everything.
const OWNER: i64 = 10;
/// What pg_roles and pg_user show for a password.
const HIDDEN_PASSWORD: &str = "********";
/// The database's OID.
pub(super) const DATABASE: i64 = crate::types::DATABASE_OID;
/// PostgreSQL's encoding number of UTF8.
const ENCODING_UTF8: i64 = 6;
/// PostgreSQL's OIDs of its built-in tablespaces.
const TABLESPACE_DEFAULT: i64 = 1663;
const TABLESPACE_GLOBAL: i64 = 1664;
/// A page's bytes (working-set sizes).
pub(super) const PAGE_BYTES: u64 = 8192;

/// pgvector's version whose behaviour the built-in vector types follow.
const PGVECTOR_VERSION: &str = "0.8.2";
/// pg_extension OID of the built-in `vector` extension (next to its types' OIDs).
const VECTOR_EXTENSION_OID: i64 = 8402;

pub(super) fn oid(value: impl Into<i64>) -> Datum {
    Datum::Int(value.into())
}

/// The name of the role owning `table` (NULL once that role is gone, as PostgreSQL's
/// pg_get_userbyid shows an unknown OID).
pub(super) fn owner_name(catalog: &Catalog, table: &str) -> Datum {
    let owner = catalog.table_acl(table).owner;
    let role = catalog.roles().into_iter().find(|role| role.oid == owner);
    role.map_or(Datum::Null, |role| text(&role.name))
}

/// Whether `role` is the bootstrap superuser, which has every attribute in PostgreSQL
/// (CREATEDB, CREATEROLE, REPLICATION, BYPASSRLS); tierdb gives no other role those.
fn bootstrap(role: &RoleMeta) -> bool {
    role.oid == BOOTSTRAP_SUPERUSER_OID
}

/// A count or 1-based position of things in memory: a `Vec` holds at most `isize::MAX`
/// items, so it always fits i64.
pub(super) fn count(value: usize) -> Datum {
    let converted = i64::try_from(value);
    debug_assert!(converted.is_ok(), "a count of items in memory fits i64");
    Datum::Int(converted.unwrap_or(i64::MAX))
}

/// A statistics counter: it counts events one at a time, and 2^63 of them would take
/// centuries at a billion a second, so it always fits PostgreSQL's bigint.
pub(super) fn counter(value: u64) -> Datum {
    let converted = i64::try_from(value);
    debug_assert!(converted.is_ok(), "a statistics counter fits i64");
    Datum::Int(converted.unwrap_or(i64::MAX))
}

/// `hits / (hits + misses)`, 0 before the first lookup.
pub(super) fn ratio(hits: u64, misses: u64) -> Datum {
    let lookups = hits.saturating_add(misses);
    #[allow(clippy::cast_precision_loss)] // A ratio: the low bits of large counts do not matter.
    let ratio = if lookups == 0 { 0.0 } else { hits as f64 / lookups as f64 };
    Datum::Float(ratio)
}

/// PostgreSQL's collations tierdb has: (OID, name, provider, collcollate); the database's
/// collation is C (`datcollate`), so `default` sorts as C does.
const COLLATIONS: [(i64, &str, &str, Option<&str>); 3] = [
    (COLLATION_DEFAULT, "default", "d", None),
    (950, "C", "c", Some("C")),
    (951, "POSIX", "c", Some("POSIX")),
];
const COLLATION_DEFAULT: i64 = 100;
/// `name`'s collation since PostgreSQL 12 (C).
const COLLATION_C: i64 = 950;

/// A type's collation (pg_type.typcollation, and pg_attribute.attcollation of a column of
/// it): the default for the character types, C for name, none for the others.
fn collation_of(type_oid: i64) -> i64 {
    match type_oid {
        25 | 1042 | 1043 => COLLATION_DEFAULT,
        19 => COLLATION_C,
        _ => 0,
    }
}

/// B-tree's default operator classes of the types tierdb indexes, as PostgreSQL 15 numbers
/// them: (OID, name, family, input type, default), plus pgvector's (tierdb's own OIDs).
const OPERATOR_CLASSES: &[(i64, i64, &str, i64, i64, bool)] = &[
    (10003, AM_BTREE, "bool_ops", 424, 16, true),
    (10006, AM_BTREE, "bytea_ops", 428, 17, true),
    (10028, AM_BTREE, "name_ops", 1994, 19, true),
    (3124, AM_BTREE, "int8_ops", 1976, 20, true),
    (1979, AM_BTREE, "int2_ops", 1976, 21, true),
    (1978, AM_BTREE, "int4_ops", 1976, 23, true),
    (3126, AM_BTREE, "text_ops", 1994, 25, true),
    (1981, AM_BTREE, "oid_ops", 1989, 26, true),
    (10012, AM_BTREE, "float4_ops", 1970, 700, true),
    (3123, AM_BTREE, "float8_ops", 1970, 701, true),
    (10004, AM_BTREE, "bpchar_ops", 426, 1042, true),
    (3122, AM_BTREE, "date_ops", 434, 1082, true),
    (3128, AM_BTREE, "timestamp_ops", 434, 1114, true),
    (3127, AM_BTREE, "timestamptz_ops", 434, 1184, true),
    (3125, AM_BTREE, "numeric_ops", 1988, 1700, true),
    (8410, AM_BTREE, "vector_ops", 8411, crate::types::VECTOR_OID_I64, true),
    (8412, AM_HNSW, "vector_l2_ops", 8413, crate::types::VECTOR_OID_I64, false),
    (8414, AM_HNSW, "vector_ip_ops", 8415, crate::types::VECTOR_OID_I64, false),
    (8416, AM_HNSW, "vector_cosine_ops", 8417, crate::types::VECTOR_OID_I64, false),
    (8418, AM_HNSW, "vector_l1_ops", 8419, crate::types::VECTOR_OID_I64, false),
    (8420, AM_IVFFLAT, "vector_l2_ops", 8421, crate::types::VECTOR_OID_I64, true),
    (8422, AM_IVFFLAT, "vector_ip_ops", 8423, crate::types::VECTOR_OID_I64, false),
    (8424, AM_IVFFLAT, "vector_cosine_ops", 8425, crate::types::VECTOR_OID_I64, false),
];

/// The array types pg_type lists: (element type, array type).
fn array_types() -> impl Iterator<Item = (i64, i64)> {
    let arrays =
        crate::types::BUILTIN_TYPES.iter().filter_map(
            |&(array_oid, _, _)| match SqlType::from_oid(u32::try_from(array_oid).ok()?)? {
                SqlType::Array(element) => Some((i64::from(element.oid()), array_oid)),
                _ => None,
            },
        );
    // pgvector's array types are listed, not usable (no arrays of them).
    arrays.chain([
        (crate::types::VECTOR_OID_I64, crate::types::VECTOR_ARRAY_OID_I64),
        (crate::types::HALFVEC_OID_I64, crate::types::HALFVEC_ARRAY_OID_I64),
        (crate::types::SPARSEVEC_OID_I64, crate::types::SPARSEVEC_ARRAY_OID_I64),
    ])
}

/// An index's key columns as 1-based attribute numbers.
fn key_attributes(index: &IndexMeta) -> Vec<String> {
    positions_attributes(&index.columns)
}

/// An int2vector (lower bound 0) or int2[] (lower bound 1) of attribute numbers.
fn attribute_vector(numbers: impl Iterator<Item = usize>, lower: i32) -> Datum {
    let elements = numbers.map(count).collect();
    Datum::Array(std::sync::Arc::new(crate::types::ArrayValue { lower, elements }))
}

/// NULL for "" (pg_settings' unit and bounds of a parameter without them).
fn text_or_null(value: &str) -> Datum {
    if value.is_empty() {
        Datum::Null
    } else {
        text(value)
    }
}

/// A text[] of `values`, NULL when there are none (pg_settings.enumvals).
fn text_array(values: &[&str]) -> Datum {
    if values.is_empty() {
        return Datum::Null;
    }
    let elements = values.iter().map(|value| text(value)).collect();
    Datum::Array(std::sync::Arc::new(crate::types::ArrayValue { lower: 1, elements }))
}

/// An oidvector (lower bound 0) of OIDs.
fn oid_vector(oids: impl Iterator<Item = i64>) -> Datum {
    let elements = oids.map(Datum::Int).collect();
    Datum::Array(std::sync::Arc::new(crate::types::ArrayValue { lower: 0, elements }))
}

/// Column positions as 1-based attribute numbers, in their order.
fn positions_attributes(columns: &[usize]) -> Vec<String> {
    columns.iter().map(|column| (column + 1).to_string()).collect()
}

/// Whether values of a type `length` bytes long (-1 variable) are passed by value.
fn by_value(length: i16) -> bool {
    matches!(length, 1 | 2 | 4 | 8)
}

/// pg_type.typalign / pg_attribute.attalign for a type `length` bytes long.
fn alignment(length: i16) -> &'static str {
    match length {
        // uuid (16 bytes) is byte-aligned in PostgreSQL.
        1 | 16 | -2 => "c",
        2 => "s",
        8 => "d",
        _ => "i",
    }
}

/// pg_type.typstorage / pg_attribute.attstorage: fixed-length types plain, numeric main,
/// other variable-length types extended (PostgreSQL's defaults).
fn storage(type_oid: i64, length: i16) -> &'static str {
    const NUMERIC: i64 = 1700;
    match (type_oid, length) {
        (NUMERIC, _) => "m",
        (_, length) if length > 0 => "p",
        _ => "x",
    }
}

/// pg_type.typcategory by PostgreSQL's letters (array types start with `_`).
fn type_category(name: &str) -> &'static str {
    match name {
        "bool" => "B",
        "int2" | "int4" | "int8" | "float4" | "float8" | "numeric" | "oid" | "regclass"
        | "regtype" | "regproc" | "regnamespace" | "regrole" => "N",
        "text" | "varchar" | "bpchar" | "name" | "char" => "S",
        "date" | "time" | "timetz" | "timestamp" | "timestamptz" => "D",
        "interval" => "T",
        "bit" | "varbit" => "V",
        "int2vector" | "oidvector" => "A",
        name if name.starts_with('_') => "A",
        _ => "U",
    }
}

/// A relation of pg_class: a table or an index.
struct Relation<'a> {
    oid: u32,
    name: &'a str,
    kind: &'static str,
    access_method: i64,
    has_index: bool,
    attributes: usize,
    /// The owning role's OID (an index's is its table's).
    owner: u32,
    /// The table's CHECK constraints (pg_class.relchecks: psql's `\d` lists them when not 0).
    checks: usize,
    /// Whether it is (or belongs to) a temp table: in the session's pg_temp_N namespace.
    temp: Option<u64>,
    /// pg_class.relhastriggers: a table with or referenced by a FOREIGN KEY (PostgreSQL's
    /// RI triggers; tierdb enforces the key without triggers, so pg_trigger stays empty).
    has_triggers: bool,
    /// pg_class.reltuples: the live rows ANALYZE counted, for a table and each of its
    /// indexes; -1 for a table never analyzed and 0 for its indexes (PostgreSQL's values
    /// for a table created empty); 1 for a sequence (its one row).
    tuples: f64,
}

/// pg_class.relpages of a sequence (its one page); tierdb leaves the other relations' at 0.
const SEQUENCE_PAGES: i64 = 1;

/// pg_namespace OID of a relation of a table named `table` (a temp table's: its session's
/// pg_temp_N).
fn namespace_oid(temp: Option<u64>) -> i64 {
    temp.map_or(NAMESPACE_PUBLIC, |session| i64::from(crate::catalog::temp_namespace_oid(session)))
}

/// The session's temp schema as a pg_namespace row, while it has a temp table.
fn temp_namespaces(context: &ViewContext<'_>) -> Option<(i64, String)> {
    let session = context.session.session_id;
    let has_temp = context.tables.iter().any(|table| {
        crate::catalog::split_temp_name(&table.name).is_some_and(|(owner, _)| owner == session)
    });
    has_temp.then(|| (namespace_oid(Some(session)), crate::catalog::temp_schema(session)))
}

fn relations<'a>(
    catalog: &Catalog,
    tables: &'a [std::sync::Arc<TableMeta>],
    sequences: &'a [std::sync::Arc<TableMeta>],
) -> Vec<Relation<'a>> {
    let mut relations = Vec::new();
    // CREATE SEQUENCE's sequences (three columns: last_value, log_cnt, is_called).
    relations.extend(sequences.iter().map(|sequence| Relation {
        oid: sequence.oid,
        name: &sequence.name,
        kind: "S",
        access_method: 0,
        has_index: false,
        attributes: 3,
        owner: catalog.table_acl(&sequence.name).owner,
        checks: 0,
        temp: None,
        has_triggers: false,
        tuples: 1.0,
    }));
    // The tables some FOREIGN KEY references (read once, not per table).
    let referenced: std::collections::HashSet<&str> = tables
        .iter()
        .flat_map(|table| table.foreign_keys.iter().map(|key| key.referenced_table.as_str()))
        .collect();
    for table in tables {
        let owner = catalog.table_acl(&table.name).owner;
        let analyzed_rows = catalog.table_statistics(&table.name).map(|statistics| statistics.rows);
        let temp = crate::catalog::split_temp_name(&table.name).map(|(session, _)| session);
        relations.push(Relation {
            oid: table.oid,
            name: &table.name,
            kind: if table.is_view() { "v" } else { "r" },
            access_method: if table.is_view() { 0 } else { AM_HEAP },
            has_index: !table.indexes.is_empty(),
            attributes: table.columns.len(),
            owner,
            checks: table.checks.len(),
            temp,
            has_triggers: !table.foreign_keys.is_empty()
                || referenced.contains(table.name.as_str()),
            tuples: analyzed_rows.unwrap_or(-1.0),
        });
        relations.extend(table.indexes.iter().map(|index| Relation {
            oid: index.oid,
            name: &index.name,
            kind: "i",
            access_method: match index.kind {
                IndexKind::Hnsw(options) if options.ivfflat => AM_IVFFLAT,
                IndexKind::Hnsw(_) => AM_HNSW,
                _ => AM_BTREE,
            },
            has_index: false,
            attributes: index.columns.len(),
            owner,
            checks: 0,
            temp,
            has_triggers: false,
            tuples: analyzed_rows.unwrap_or(0.0),
        }));
        // A serial or identity column's sequence (its three columns: last_value, log_cnt,
        // is_called).
        relations.extend(crate::catalog::column_sequences(table).filter_map(
            |(position, _, sequence)| {
                Some(Relation {
                    oid: crate::catalog::sequence_oid(table.oid, position)?,
                    name: sequence,
                    kind: "S",
                    access_method: 0,
                    has_index: false,
                    attributes: 3,
                    owner,
                    checks: 0,
                    temp,
                    has_triggers: false,
                    tuples: 1.0,
                })
            },
        ));
    }
    relations
}

/// One pg_depend row: (classid, objid, objsubid) depends on (refclassid, refobjid,
/// refobjsubid) with `kind`.
struct Dependency {
    object: (i64, i64, usize),
    referenced: (i64, i64, usize),
    kind: &'static str,
}

/// The catalogs pg_depend rows name.
const PG_TYPE_OID: i64 = 1247;
const PG_AM_OID: i64 = 2601;
const PG_ATTRDEF_OID: i64 = 2604;
const PG_NAMESPACE_OID: i64 = 2615;
const PG_OPCLASS_OID: i64 = 2616;
const PG_EXTENSION_OID: i64 = 3079;

/// pg_depend's rows. An index depends on each column it covers ('a', automatic); a
/// column's sequence on its column ('a' for serial, 'i' internal for identity), which is
/// how psql and Alembic find a sequence's owner; the built-in vector extension's types,
/// access method and operator classes are its members ('e'), which pg_dump does not dump
/// one by one.
fn dependencies(
    tables: &[std::sync::Arc<TableMeta>],
    sequences: &[std::sync::Arc<TableMeta>],
) -> Vec<Dependency> {
    let relation = |oid: u32, sub: usize| (PG_CLASS_OID, i64::from(oid), sub);
    let mut rows = Vec::new();
    // CREATE SEQUENCE's sequences: OWNED BY ('a', as PostgreSQL's), and the DEFAULTs that
    // call their nextval ('n': pg_dump creates the sequence first).
    for sequence in sequences {
        let owner = sequence.sequence.as_ref().and_then(|options| options.owner.as_ref());
        if let Some((table, column)) = owner {
            let owning = tables.iter().find(|meta| meta.name == *table);
            if let Some((owning, position)) =
                owning.and_then(|meta| Some((meta, meta.column_index(column)?)))
            {
                // An identity column's sequence is its internal part ('i').
                let identity = owning.columns[position].identity.is_some();
                rows.push(Dependency {
                    object: relation(sequence.oid, 0),
                    referenced: relation(owning.oid, position + 1),
                    kind: if identity { "i" } else { "a" },
                });
            }
        }
        for table in tables {
            for (position, column) in table.columns.iter().enumerate() {
                let default = column.default.as_deref().unwrap_or_default();
                let uses = crate::catalog::default_sequences(default);
                if let (true, Some(default)) = (
                    uses.contains(&sequence.name),
                    crate::catalog::default_oid(table.oid, position),
                ) {
                    rows.push(Dependency {
                        object: (PG_ATTRDEF_OID, i64::from(default), 0),
                        referenced: relation(sequence.oid, 0),
                        kind: "n",
                    });
                }
            }
        }
    }
    for table in tables {
        for index in &table.indexes {
            rows.extend(index.columns.iter().map(|&column| Dependency {
                object: relation(index.oid, 0),
                referenced: relation(table.oid, column + 1),
                kind: "a",
            }));
        }
        for (position, column, _) in crate::catalog::column_sequences(table) {
            if let Some(sequence) = crate::catalog::sequence_oid(table.oid, position) {
                let kind = if column.identity.is_some() { "i" } else { "a" };
                rows.push(Dependency {
                    object: relation(sequence, 0),
                    referenced: relation(table.oid, position + 1),
                    kind,
                });
                // A serial's DEFAULT calls nextval of the sequence (pg_dump then sets the
                // DEFAULT after it creates the sequence).
                let default = crate::catalog::default_oid(table.oid, position);
                if let (None, Some(default)) = (column.identity, default) {
                    rows.push(Dependency {
                        object: (PG_ATTRDEF_OID, i64::from(default), 0),
                        referenced: relation(sequence, 0),
                        kind: "n",
                    });
                }
            }
        }
        // A view on what its query names (PostgreSQL records this from the view's pg_rewrite
        // rule, which tierdb does not list): pg_dump orders the view after them.
        let names = table.view.iter().flat_map(|view| view.depends_on.iter());
        for referenced in names.filter_map(|name| tables.iter().find(|t| t.name == name.relation)) {
            let (object, referenced) = (relation(table.oid, 0), relation(referenced.oid, 0));
            rows.push(Dependency { object, referenced, kind: "n" });
        }
        for (position, column) in table.columns.iter().enumerate() {
            let default = crate::catalog::default_oid(table.oid, position);
            if let (Some(_), None, Some(default)) = (&column.default, column.identity, default) {
                rows.push(Dependency {
                    object: (PG_ATTRDEF_OID, i64::from(default), 0),
                    referenced: relation(table.oid, position + 1),
                    kind: "a",
                });
            }
        }
    }
    let extension = (PG_EXTENSION_OID, VECTOR_EXTENSION_OID, 0);
    let member = |object| Dependency { object, referenced: extension, kind: "e" };
    let vector_types = crate::types::BUILTIN_TYPES.iter().filter(|(_, name, _)| {
        matches!(name.trim_start_matches('_'), "vector" | "halfvec" | "sparsevec")
    });
    rows.extend(vector_types.map(|&(type_oid, _, _)| member((PG_TYPE_OID, type_oid, 0))));
    rows.push(member((PG_AM_OID, AM_HNSW, 0)));
    rows.push(member((PG_AM_OID, AM_IVFFLAT, 0)));
    let classes =
        OPERATOR_CLASSES.iter().filter(|class| class.1 == AM_HNSW || class.1 == AM_IVFFLAT);
    rows.extend(classes.map(|class| member((PG_OPCLASS_OID, class.0, 0))));
    rows
}

/// Each table's indexes.
fn indexes(tables: &[std::sync::Arc<TableMeta>]) -> impl Iterator<Item = (&TableMeta, &IndexMeta)> {
    tables.iter().flat_map(|table| table.indexes.iter().map(move |index| (&**table, index)))
}

/// Each table's CHECK constraints.
fn checks(tables: &[std::sync::Arc<TableMeta>]) -> impl Iterator<Item = (&TableMeta, &CheckMeta)> {
    tables.iter().flat_map(|table| table.checks.iter().map(move |check| (&**table, check)))
}

/// A row of pg_constraint: a key constraint's index or a CHECK constraint.
pub(super) enum Constraint<'a> {
    Key(&'a TableMeta, &'a IndexMeta),
    Check(&'a TableMeta, &'a CheckMeta),
    /// A FOREIGN KEY of the table, with the table it references (None: not visible).
    Foreign(&'a TableMeta, &'a ForeignKeyMeta, Option<&'a TableMeta>),
}

impl<'a> Constraint<'a> {
    pub(super) fn table(&self) -> &'a TableMeta {
        match self {
            Constraint::Key(table, _)
            | Constraint::Check(table, _)
            | Constraint::Foreign(table, ..) => table,
        }
    }
    fn oid(&self) -> u32 {
        match self {
            Constraint::Key(_, index) => index.oid,
            Constraint::Check(_, check) => check.oid,
            Constraint::Foreign(_, key, _) => key.oid,
        }
    }
    pub(super) fn name(&self) -> &'a str {
        match self {
            Constraint::Key(_, index) => &index.name,
            Constraint::Check(_, check) => &check.name,
            Constraint::Foreign(_, key, _) => &key.name,
        }
    }
    /// pg_constraint.contype.
    fn kind(&self) -> &'static str {
        match self {
            Constraint::Key(_, index) if index.primary => "p",
            Constraint::Key(..) => "u",
            Constraint::Check(..) => "c",
            Constraint::Foreign(..) => "f",
        }
    }
    /// information_schema.table_constraints.constraint_type.
    pub(super) fn type_name(&self) -> &'static str {
        match self.kind() {
            "p" => "PRIMARY KEY",
            "u" => "UNIQUE",
            "f" => "FOREIGN KEY",
            _ => "CHECK",
        }
    }
    fn index_oid(&self) -> u32 {
        match self {
            Constraint::Key(_, index) => index.oid,
            Constraint::Check(..) => 0,
            Constraint::Foreign(_, key, referenced) => referenced
                .and_then(|referenced| referenced.referenced_index(&key.referenced_columns))
                .map_or(0, |index| index.oid),
        }
    }
    pub(super) fn check(&self) -> Option<&'a CheckMeta> {
        match self {
            Constraint::Check(_, check) => Some(check),
            _ => None,
        }
    }
    pub(super) fn foreign(&self) -> Option<(&'a ForeignKeyMeta, Option<&'a TableMeta>)> {
        match self {
            Constraint::Foreign(_, key, referenced) => Some((key, *referenced)),
            _ => None,
        }
    }
    /// The 1-based attribute numbers of the key, or of the columns a CHECK reads.
    /// conkey: the constrained columns' attribute numbers as an int2[].
    fn attribute_array(&self) -> Datum {
        let numbers: Vec<usize> =
            self.attributes().iter().filter_map(|number| number.parse().ok()).collect();
        attribute_vector(numbers.into_iter(), 1)
    }

    fn attributes(&self) -> Vec<String> {
        match self {
            Constraint::Key(_, index) => key_attributes(index),
            Constraint::Check(table, check) => check_attributes(table, check),
            Constraint::Foreign(_, key, _) => positions_attributes(&key.columns),
        }
    }
}

/// Every table's key and CHECK constraints.
pub(super) fn constraints(tables: &[std::sync::Arc<TableMeta>]) -> Vec<Constraint<'_>> {
    let keys = indexes(tables)
        .filter(|(_, index)| index.constraint)
        .map(|(table, index)| Constraint::Key(table, index));
    let foreign = tables.iter().flat_map(|table| {
        table.foreign_keys.iter().map(move |key| {
            let referenced = tables.iter().find(|other| other.name == key.referenced_table);
            Constraint::Foreign(table, key, referenced.map(|referenced| &**referenced))
        })
    });
    keys.chain(checks(tables).map(|(table, check)| Constraint::Check(table, check)))
        .chain(foreign)
        .collect()
}

/// The columns a CHECK expression reads, as sorted attribute numbers (pg_constraint.conkey).
fn check_attributes(table: &TableMeta, check: &CheckMeta) -> Vec<String> {
    let names = crate::parse::parse_stored_expression(&check.expression)
        .map(|expr| crate::parse::column_names(&expr))
        .unwrap_or_default();
    let mut positions: Vec<usize> =
        names.iter().filter_map(|name| table.column_index(name)).collect();
    positions.sort_unstable();
    positions.iter().map(|position| (position + 1).to_string()).collect()
}

/// A view: `view!(names, |context| items, |item| { column: Type = value, ... })`, or with
/// no rows `view!(names, { column: Type, ... })`.
/// The pg_catalog views, first in `all_views` (system/mod.rs).
pub(super) static VIEWS: &[SystemView] = &[
    view!(&["pg_namespace"], |c| [
        (NAMESPACE_CATALOG, "pg_catalog".to_string()),
        (NAMESPACE_PUBLIC, "public".to_string()),
        (NAMESPACE_INFORMATION, "information_schema".to_string()),
    ].into_iter().chain(temp_namespaces(c)), |(namespace, name)| {
        oid: Oid = oid(namespace),
        nspname: Name = text(&name),
        nspowner: Oid = oid(OWNER),
        nspacl: TextArray = Datum::Null,
    }),
    view!(&["pg_class"], |c| relations(c.catalog, &c.tables, &super::sequence_views::visible_sequences(c)), |relation| {
        oid: Oid = oid(relation.oid),
        relname: Name = text(crate::catalog::relation_name(relation.name)),
        relnamespace: Oid = oid(namespace_oid(relation.temp)),
        reltype: Oid = oid(0),
        relowner: Oid = oid(relation.owner),
        relam: Oid = oid(relation.access_method),
        relkind: Text = text(relation.kind),
        relpersistence: Text = text(if relation.temp.is_some() { "t" } else { "p" }),
        reltuples: Float4 = Datum::Float(relation.tuples),
        relhasindex: Bool = Datum::Bool(relation.has_index),
        relispartition: Bool = Datum::Bool(false),
        relchecks: Int2 = count(relation.checks),
        relhasrules: Bool = Datum::Bool(false),
        // Set for a table with or referenced by a FOREIGN KEY, as PostgreSQL's RI triggers
        // set it: pg_dump reads a table's FOREIGN KEYs only when it is, and psql's `\d`
        // lists them and the tables referencing it (design 017).
        relhastriggers: Bool = Datum::Bool(relation.has_triggers),
        relrowsecurity: Bool = Datum::Bool(false),
        relforcerowsecurity: Bool = Datum::Bool(false),
        reltablespace: Oid = oid(0),
        reloftype: Oid = oid(0),
        relreplident: Text = text("d"),
        reltoastrelid: Oid = oid(0),
        relpages: Int4 = Datum::Int(if relation.kind == "S" { SEQUENCE_PAGES } else { 0 }),
        relnatts: Int2 = count(relation.attributes),
        relpartbound: Text = Datum::Null,
        reloptions: TextArray = Datum::Null,
        relacl: Text = Datum::Null,
        relfilenode: Oid = oid(relation.oid),
        relallvisible: Int4 = Datum::Int(0),
        relisshared: Bool = Datum::Bool(false),
        relhassubclass: Bool = Datum::Bool(false),
        relispopulated: Bool = Datum::Bool(true),
        relrewrite: Oid = oid(0),
        relfrozenxid: Oid = oid(0),
        relminmxid: Oid = oid(0),
    }),
    view!(&["pg_attribute"], |c| columns(&c.tables), |(table, position, column)| {
        attrelid: Oid = oid(table.oid),
        attname: Name = text(&column.name),
        atttypid: Oid = oid(column.ty.oid()),
        attnum: Int2 = count(position + 1),
        atttypmod: Int4 = Datum::Int(i64::from(column.ty.typmod())),
        attnotnull: Bool = Datum::Bool(!column.nullable),
        atthasdef: Bool = Datum::Bool(column.default.is_some() && column.identity.is_none()),
        attisdropped: Bool = Datum::Bool(false),
        attidentity: Text = text(column.identity.map_or("", |identity| identity.code())),
        attgenerated: Text = text(""),
        attcollation: Oid = oid(collation_of(i64::from(column.ty.oid()))),
        attlen: Int2 = Datum::Int(i64::from(column.ty.length())),
        attstattarget: Int4 = Datum::Int(-1),
        attndims: Int4 = Datum::Int(i64::from(matches!(column.ty, SqlType::Array(_)))),
        attcacheoff: Int4 = Datum::Int(-1),
        attbyval: Bool = Datum::Bool(by_value(column.ty.length())),
        attalign: Text = text(alignment(column.ty.length())),
        attstorage: Text = text(storage(i64::from(column.ty.oid()), column.ty.length())),
        attcompression: Text = text(""),
        atthasmissing: Bool = Datum::Bool(false),
        attislocal: Bool = Datum::Bool(true),
        attinhcount: Int4 = Datum::Int(0),
        attacl: TextArray = Datum::Null,
        attoptions: TextArray = Datum::Null,
        attfdwoptions: TextArray = Datum::Null,
        attmissingval: Text = Datum::Null,
    }),
    view!(&["pg_type"], |_c| crate::types::BUILTIN_TYPES, |&(type_oid, name, length)| {
        oid: Oid = oid(type_oid),
        typname: Name = text(name),
        typnamespace: Oid = oid(NAMESPACE_CATALOG),
        typlen: Int2 = Datum::Int(i64::from(length)),
        // unknown and void are pseudo-types; the others are base types.
        typtype: Text = text(if matches!(type_oid, 705 | 2278) { "p" } else { "b" }),
        typdelim: Text = text(","),
        typbasetype: Oid = oid(0),
        typelem: Oid = oid(array_types().find(|(_, array)| *array == type_oid).map_or(0, |(element, _)| element)),
        typrelid: Oid = oid(0),
        typcollation: Oid = oid(collation_of(type_oid)),
        typarray: Oid = oid(array_types().find(|(element, _)| *element == type_oid).map_or(0, |(_, array)| array)),
        typowner: Oid = oid(OWNER),
        typbyval: Bool = Datum::Bool(by_value(length)),
        typcategory: Text = text(type_category(name)),
        typispreferred: Bool = Datum::Bool(matches!(name, "bool" | "text" | "oid" | "float8" | "timestamptz" | "varbit")),
        typisdefined: Bool = Datum::Bool(true),
        typsubscript: Oid = oid(0),
        typinput: Oid = oid(0),
        typoutput: Oid = oid(0),
        typreceive: Oid = oid(0),
        typsend: Oid = oid(0),
        typmodin: Oid = oid(0),
        typmodout: Oid = oid(0),
        typanalyze: Oid = oid(0),
        typalign: Text = text(alignment(length)),
        typstorage: Text = text(storage(type_oid, length)),
        typnotnull: Bool = Datum::Bool(false),
        typtypmod: Int4 = Datum::Int(-1),
        typndims: Int4 = Datum::Int(0),
        typdefaultbin: Text = Datum::Null,
        typdefault: Text = Datum::Null,
        typacl: TextArray = Datum::Null,
    }),
    view!(&["pg_index"], |c| indexes(&c.tables), |(table, index)| {
        indexrelid: Oid = oid(index.oid),
        indrelid: Oid = oid(table.oid),
        indnatts: Int2 = count(index.columns.len()),
        // tierdb's indexes have no INCLUDE columns: every column is a key column.
        indnkeyatts: Int2 = count(index.columns.len()),
        indisunique: Bool = Datum::Bool(index.unique),
        indnullsnotdistinct: Bool = Datum::Bool(false),
        indisprimary: Bool = Datum::Bool(index.primary),
        indisexclusion: Bool = Datum::Bool(false),
        indimmediate: Bool = Datum::Bool(true),
        // indisclustered is CLUSTER's mark; tierdb's clustering key is not that.
        indisclustered: Bool = Datum::Bool(false),
        indisvalid: Bool = Datum::Bool(true),
        indcheckxmin: Bool = Datum::Bool(false),
        indisready: Bool = Datum::Bool(true),
        indislive: Bool = Datum::Bool(true),
        indisreplident: Bool = Datum::Bool(false),
        indkey: Int2Vector = attribute_vector(index.columns.iter().map(|&column| column + 1), 0),
        indclass: OidVector = attribute_vector(index.columns.iter().map(|_| 0), 0),
        indoption: Int2Vector = attribute_vector(index.columns.iter().map(|_| 0), 0),
        indexprs: Text = Datum::Null,
        // PostgreSQL stores a node tree here; tierdb the predicate's deparsed text.
        indpred: Text = index.predicate.as_ref().map_or(Datum::Null, |predicate| text(&predicate.definition)),
        indcollation: OidVector = oid_vector(index.columns.iter().map(|&column| collation_of(i64::from(table.columns[column].ty.oid())))),
    }),
    view!(&["pg_am"], |_c| [(AM_HEAP, "heap", "t"), (AM_BTREE, "btree", "i"), (AM_HNSW, "hnsw", "i"), (AM_IVFFLAT, "ivfflat", "i")], |(am, name, kind)| {
        oid: Oid = oid(am),
        amname: Name = text(name),
        amtype: Text = text(kind),
        // The handler functions are not in pg_proc (catalog_views.rs).
        amhandler: Oid = oid(0),
    }),
    view!(&["pg_database"], |c| [c.session], |session| {
        oid: Oid = oid(DATABASE),
        datname: Name = text(session.database),
        datdba: Oid = oid(OWNER),
        encoding: Int4 = Datum::Int(ENCODING_UTF8),
        datlocprovider: Text = text("c"),
        datistemplate: Bool = Datum::Bool(false),
        datallowconn: Bool = Datum::Bool(true),
        datconnlimit: Int4 = Datum::Int(-1),
        dattablespace: Oid = oid(TABLESPACE_DEFAULT),
        datcollate: Text = text("C"),
        datctype: Text = text("C"),
        daticulocale: Text = Datum::Null,
        datcollversion: Text = Datum::Null,
        datacl: TextArray = Datum::Null,
    }),
    // Every PostgreSQL 15 parameter, with the session's value (session/settings_rows.rs).
    view!(&["pg_settings"], |c| c.session.settings.rows(), |row| {
        name: Text = text(row.name),
        setting: Text = text(&row.setting),
        unit: Text = text_or_null(row.unit),
        category: Text = text(row.category),
        short_desc: Text = text(row.short_description),
        extra_desc: Text = Datum::Null,
        context: Text = text(row.context),
        vartype: Text = text(row.kind),
        source: Text = text(row.source),
        min_val: Text = text_or_null(row.minimum),
        max_val: Text = text_or_null(row.maximum),
        enumvals: TextArray = text_array(row.enum_values),
        boot_val: Text = text(row.boot_value),
        reset_val: Text = text(&row.reset_value),
        sourcefile: Text = Datum::Null,
        sourceline: Int4 = Datum::Null,
        pending_restart: Bool = Datum::Bool(false),
    }),
    // Passwords are never shown: PostgreSQL's views show this constant whatever is stored.
    view!(&["pg_roles"], |c| c.catalog.roles(), |role| {
        rolname: Name = text(&role.name),
        rolsuper: Bool = Datum::Bool(role.superuser),
        rolinherit: Bool = Datum::Bool(true),
        rolcreaterole: Bool = Datum::Bool(bootstrap(&role)),
        rolcreatedb: Bool = Datum::Bool(bootstrap(&role)),
        rolcanlogin: Bool = Datum::Bool(role.login),
        rolreplication: Bool = Datum::Bool(bootstrap(&role)),
        rolconnlimit: Int4 = Datum::Int(-1),
        rolpassword: Text = text(HIDDEN_PASSWORD),
        rolvaliduntil: TimestampTz = Datum::Null,
        rolbypassrls: Bool = Datum::Bool(bootstrap(&role)),
        rolconfig: TextArray = Datum::Null,
        oid: Oid = oid(role.oid),
    }),
    view!(&["pg_user"], |c| c.catalog.roles().into_iter().filter(|role| role.login), |role| {
        usename: Name = text(&role.name),
        usesysid: Oid = oid(role.oid),
        usecreatedb: Bool = Datum::Bool(bootstrap(&role)),
        usesuper: Bool = Datum::Bool(role.superuser),
        userepl: Bool = Datum::Bool(bootstrap(&role)),
        usebypassrls: Bool = Datum::Bool(bootstrap(&role)),
        passwd: Text = text(HIDDEN_PASSWORD),
        valuntil: TimestampTz = Datum::Null,
        useconfig: TextArray = Datum::Null,
    }),
    view!(&["pg_attrdef"], |c| columns(&c.tables).filter(|(_, _, column)| column.default.is_some() && column.identity.is_none()).map(|item| (item, c.session.public_on_path)), |((table, position, column), public_on_path)| {
        oid: Oid = oid(crate::catalog::default_oid(table.oid, position).unwrap_or(0)),
        adrelid: Oid = oid(table.oid),
        adnum: Int2 = count(position + 1),
        adbin: Text = column.default.as_deref().map_or(Datum::Null, |default| default_text(default, &column.ty, public_on_path)),
    }),
    // Constraints: primary keys, UNIQUE and CHECK constraints (unique indexes made by CREATE
    // UNIQUE INDEX are not constraints in PostgreSQL either).
    view!(&["pg_constraint"], |c| constraints(&c.tables), |constraint| {
        oid: Oid = oid(constraint.oid()),
        conname: Name = text(constraint.name()),
        connamespace: Oid = oid(NAMESPACE_PUBLIC),
        contype: Text = text(constraint.kind()),
        condeferrable: Bool = Datum::Bool(false),
        condeferred: Bool = Datum::Bool(false),
        convalidated: Bool = Datum::Bool(true),
        conrelid: Oid = oid(constraint.table().oid),
        contypid: Oid = oid(0),
        conindid: Oid = oid(constraint.index_oid()),
        conparentid: Oid = oid(0),
        confrelid: Oid = oid(constraint.foreign().and_then(|(_, referenced)| referenced).map_or(0, |referenced| referenced.oid)),
        confupdtype: Text = text(constraint.foreign().map_or(" ", |(key, _)| key.on_update.code())),
        confdeltype: Text = text(constraint.foreign().map_or(" ", |(key, _)| key.on_delete.code())),
        confmatchtype: Text = text(constraint.foreign().map_or(" ", |(key, _)| if key.match_full { "f" } else { "s" })),
        conislocal: Bool = Datum::Bool(true),
        coninhcount: Int2 = Datum::Int(0),
        connoinherit: Bool = Datum::Bool(false),
        conkey: Int2Array = constraint.attribute_array(),
        confkey: Int2Array = constraint.foreign().map_or(Datum::Null, |(key, _)| attribute_vector(key.referenced_columns.iter().map(|&column| column + 1), 1)),
        conbin: Text = constraint.check().map_or(Datum::Null, |check| text(&check.definition)),
        conpfeqop: OidArray = Datum::Null,
        conppeqop: OidArray = Datum::Null,
        conffeqop: OidArray = Datum::Null,
        confdelsetcols: Int2Array = Datum::Null,
        conexclop: OidArray = Datum::Null,
    }),
    view!(&["pg_inherits"], { inhrelid: Oid, inhparent: Oid, inhseqno: Int4, inhdetachpending: Bool }),
    view!(&["pg_collation"], |_c| COLLATIONS, |(collation, name, provider, locale)| {
        oid: Oid = oid(collation),
        collname: Name = text(name),
        collnamespace: Oid = oid(NAMESPACE_CATALOG),
        collowner: Oid = oid(OWNER),
        collprovider: Text = text(provider),
        collisdeterministic: Bool = Datum::Bool(true),
        collencoding: Int4 = Datum::Int(-1),
        collcollate: Text = locale.map_or(Datum::Null, text),
        collctype: Text = locale.map_or(Datum::Null, text),
        colliculocale: Text = Datum::Null,
        collversion: Text = Datum::Null,
    }),
    view!(&["pg_opclass"], |_c| OPERATOR_CLASSES, |&(class, method, name, family, input, default)| {
        oid: Oid = oid(class),
        opcmethod: Oid = oid(method),
        opcname: Name = text(name),
        opcnamespace: Oid = oid(if method == AM_HNSW || method == AM_IVFFLAT { NAMESPACE_PUBLIC } else { NAMESPACE_CATALOG }),
        opcowner: Oid = oid(OWNER),
        opcfamily: Oid = oid(family),
        opcintype: Oid = oid(input),
        opcdefault: Bool = Datum::Bool(default),
        // name_ops stores cstring keys; the others store their input type.
        opckeytype: Oid = oid(if name == "name_ops" { 2275 } else { 0 }),
    }),
    view!(&["pg_policy"], {
        oid: Oid,
        polname: Name,
        polrelid: Oid,
        polcmd: Text,
        polpermissive: Bool,
        polroles: OidArray,
        polqual: Text,
        polwithcheck: Text,
    }),
    view!(&["pg_publication_rel"], { oid: Oid, prpubid: Oid, prrelid: Oid, prqual: Text, prattrs: Int2Vector }),
    view!(&["pg_publication_namespace"], { oid: Oid, pnpubid: Oid, pnnspid: Oid }),
    // PostgreSQL's two built-in tablespaces; every relation is in pg_default.
    view!(&["pg_tablespace"], |_c| [(TABLESPACE_DEFAULT, "pg_default"), (TABLESPACE_GLOBAL, "pg_global")], |(tablespace, name)| {
        oid: Oid = oid(tablespace),
        spcname: Name = text(name),
        spcowner: Oid = oid(OWNER),
        spcacl: TextArray = Datum::Null,
        spcoptions: TextArray = Datum::Null,
    }),
    view!(&["pg_foreign_table"], { ftrelid: Oid, ftserver: Oid }),
    view!(&["pg_extension"], |_c| [(VECTOR_EXTENSION_OID, "vector")], |(extension, name)| {
        oid: Oid = oid(extension),
        extname: Name = text(name),
        extversion: Text = text(PGVECTOR_VERSION),
        extowner: Oid = oid(OWNER),
        extnamespace: Oid = oid(NAMESPACE_PUBLIC),
        extrelocatable: Bool = Datum::Bool(true),
        extconfig: OidArray = Datum::Null,
        extcondition: TextArray = Datum::Null,
    }),
    // Serial and identity columns' sequences start at 1 and count up by 1 (sequence_views.rs).
    view!(&["pg_sequence"], |c| super::sequence_views::sequence_rows(c), |row| {
        seqrelid: Oid = oid(row.oid),
        seqtypid: Oid = oid(row.options.ty.oid()),
        seqstart: Int8 = Datum::Int(row.options.start),
        seqincrement: Int8 = Datum::Int(row.options.increment),
        seqmax: Int8 = Datum::Int(row.options.maximum),
        seqmin: Int8 = Datum::Int(row.options.minimum),
        seqcache: Int8 = Datum::Int(row.options.cache),
        seqcycle: Bool = Datum::Bool(row.options.cycle),
    }),
    view!(&["pg_depend"], |c| dependencies(&c.tables, &super::sequence_views::visible_sequences(c)), |dependency| {
        classid: Oid = oid(dependency.object.0),
        objid: Oid = oid(dependency.object.1),
        objsubid: Int4 = count(dependency.object.2),
        refclassid: Oid = oid(dependency.referenced.0),
        refobjid: Oid = oid(dependency.referenced.1),
        refobjsubid: Int4 = count(dependency.referenced.2),
        deptype: Text = text(dependency.kind),
    }),
    // The public schema's comment, as initdb writes it (the other objects have none).
    view!(&["pg_description"], |_c| [(NAMESPACE_PUBLIC, PG_NAMESPACE_OID, "standard public schema")], |(object, class, description)| {
        objoid: Oid = oid(object),
        classoid: Oid = oid(class),
        objsubid: Int4 = Datum::Int(0),
        description: Text = text(description),
    }),
    view!(&["pg_tables"], |c| c.tables.iter().filter(|table| !table.is_view()).map(|table| (c.catalog, table)), |(catalog, table)| {
        schemaname: Name = text(&crate::catalog::relation_schema(&table.name)),
        tablename: Name = text(crate::catalog::relation_name(&table.name)),
        tableowner: Name = owner_name(catalog, &table.name),
        hasindexes: Bool = Datum::Bool(!table.indexes.is_empty()),
    }),
    view!(&["pg_indexes"], |c| indexes(&c.tables).map(|(table, index)| (c.catalog, table, index)), |(catalog, table, index)| {
        schemaname: Name = text(&crate::catalog::relation_schema(&table.name)),
        tablename: Name = text(crate::catalog::relation_name(&table.name)),
        indexname: Name = text(crate::catalog::relation_name(&index.name)),
        indexdef: Text = index_definition(catalog, i64::from(index.oid), false).map_or(Datum::Null, Datum::Text),
    }),
];
