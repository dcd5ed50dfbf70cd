//! PostgreSQL's object identifier types (regclass, regtype, regproc, regnamespace, regrole):
//! an oid that reads and prints as the name of the object it identifies.
//!
//! A value is `Datum::Object`: the oid with the text its output function prints, resolved
//! when the value is made (the cast from text or from an oid needs the catalog, which the
//! executor has: `system::objects`). Comparisons, hashing and the binary format use the oid
//! alone, as PostgreSQL's oideq and oidsend do.

/// The OID of tierdb's one database (pg_database.oid; has_database_privilege and
/// pg_database_size take it).
pub const DATABASE_OID: i64 = 16_384;

use super::*;

/// Which object identifier type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    Class,
    Type,
    Procedure,
    Namespace,
    Role,
}

impl ObjectKind {
    /// The type's OID in pg_type.
    pub fn type_oid(self) -> u32 {
        match self {
            ObjectKind::Class => 2205,
            ObjectKind::Type => 2206,
            ObjectKind::Procedure => 24,
            ObjectKind::Namespace => 4089,
            ObjectKind::Role => 4096,
        }
    }

    /// The type's name (pg_type.typname and format_type).
    pub fn type_name(self) -> &'static str {
        match self {
            ObjectKind::Class => "regclass",
            ObjectKind::Type => "regtype",
            ObjectKind::Procedure => "regproc",
            ObjectKind::Namespace => "regnamespace",
            ObjectKind::Role => "regrole",
        }
    }

    /// Every kind.
    pub const ALL: [ObjectKind; 5] = [
        ObjectKind::Class,
        ObjectKind::Type,
        ObjectKind::Procedure,
        ObjectKind::Namespace,
        ObjectKind::Role,
    ];

    /// The kind whose type has `oid`.
    pub fn from_type_oid(oid: u32) -> Option<ObjectKind> {
        ObjectKind::ALL.into_iter().find(|kind| kind.type_oid() == oid)
    }

    /// The kind a type name denotes (`regclass`, ...).
    pub fn from_type_name(name: &str) -> Option<ObjectKind> {
        ObjectKind::ALL.into_iter().find(|kind| kind.type_name() == name)
    }
}

/// A value of an object identifier type: the oid, and the text its output function prints
/// (`None`: no such object, the oid's digits are printed, as PostgreSQL does).
#[derive(Clone, Debug)]
pub struct ObjectReference {
    pub oid: u32,
    pub text: Option<Arc<str>>,
}

impl ObjectReference {
    /// PostgreSQL's output: the name, `-` for the invalid oid 0, else the oid's digits.
    pub fn output(&self) -> String {
        match &self.text {
            Some(text) => text.to_string(),
            None if self.oid == 0 => "-".to_string(),
            None => self.oid.to_string(),
        }
    }
}

/// The OID of the type a name denotes (`integer`, `int4`, `character varying(10)`,
/// `pg_catalog.int4`, `vector(3)`): PostgreSQL's regtype input, the type modifier ignored.
pub fn type_oid_by_name(name: &str) -> Option<u32> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    let name = name.trim();
    let unqualified = ["pg_catalog.", "public."]
        .iter()
        .find_map(|schema| name.strip_prefix(schema))
        .unwrap_or(name);
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(unqualified)
        .and_then(|mut parser| parser.parse_data_type());
    if let Some(ty) = parsed.ok().and_then(|data_type| sql_type(&data_type).ok()) {
        return Some(ty.oid());
    }
    // Types listed in pg_type that tierdb does not bind (bit, varbit, _vector).
    BUILTIN_TYPES
        .iter()
        .find(|(_, type_name, _)| *type_name == unqualified)
        .and_then(|(oid, _, _)| u32::try_from(*oid).ok())
}

/// The name regtype's output prints for a type OID (format_type without a modifier):
/// `integer`, `character varying`, `character`; None for an OID that is no type.
pub fn type_output_name(oid: u32) -> Option<String> {
    if let Some(ty) = SqlType::from_oid(oid) {
        return Some(match ty {
            SqlType::Char(_) => "character".to_string(),
            other => other.display_name(),
        });
    }
    let name = BUILTIN_TYPES.iter().find(|(type_oid, _, _)| *type_oid == i64::from(oid))?.1;
    Some(match name {
        "varbit" => "bit varying".to_string(),
        "_vector" => "vector[]".to_string(),
        "_halfvec" => "halfvec[]".to_string(),
        "_sparsevec" => "sparsevec[]".to_string(),
        other => other.to_string(),
    })
}
