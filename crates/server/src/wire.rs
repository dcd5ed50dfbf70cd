//! Values on the wire: PostgreSQL's text and binary formats for every supported type, for
//! results (encoded by us, handed to pgwire as opaque bytes) and for parameters.
//!
//! The binary forms themselves are tierdb-sql's (`binary_send`, `binary_receive` in its
//! types/binary.rs), which COPY's binary format shares.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{IsNull, ToSql};
use tierdb_sql::{Datum, OutputColumn, SqlError, SqlType};

/// A value already encoded in the format of its field; pgwire writes the bytes as they are.
#[derive(Debug)]
pub struct Encoded(pub Option<Vec<u8>>);

impl ToSql for Encoded {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match &self.0 {
            Some(bytes) => {
                out.put_slice(bytes);
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    postgres_types::to_sql_checked!();
}

impl ToSqlText for Encoded {
    fn to_sql_text(
        &self,
        ty: &Type,
        out: &mut BytesMut,
        _options: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        self.to_sql(ty, out)
    }
}

pub fn pg_type(ty: &SqlType) -> Type {
    // pgvector's types are not PostgreSQL's built-in types, so not in postgres-types' table.
    static PGVECTOR_TYPES: std::sync::LazyLock<[Type; 3]> = std::sync::LazyLock::new(|| {
        [
            ("vector", tierdb_sql::VECTOR_OID),
            ("halfvec", tierdb_sql::HALFVEC_OID),
            ("sparsevec", tierdb_sql::SPARSEVEC_OID),
        ]
        .map(|(name, oid)| {
            Type::new(name.into(), oid, postgres_types::Kind::Simple, "public".into())
        })
    });
    match ty {
        SqlType::Vector(_) => return PGVECTOR_TYPES[0].clone(),
        SqlType::HalfVec(_) => return PGVECTOR_TYPES[1].clone(),
        SqlType::SparseVec(_) => return PGVECTOR_TYPES[2].clone(),
        _ => {}
    }
    Type::from_oid(ty.oid()).unwrap_or(Type::TEXT)
}

/// Field descriptions for a result.
pub fn fields(columns: &[OutputColumn], binary: &dyn Fn(usize) -> bool) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(index, column)| {
            let format = if binary(index) { FieldFormat::Binary } else { FieldFormat::Text };
            let table =
                if column.table_oid == 0 { None } else { i32::try_from(column.table_oid).ok() };
            let attribute = if column.attribute == 0 { None } else { Some(column.attribute) };
            FieldInfo::new(column.name.clone(), table, attribute, pg_type(&column.ty), format)
                .with_type_size(column.ty.length())
                .with_type_modifier(column.ty.typmod())
        })
        .collect()
}

/// Encodes a value of type `ty` in text or binary (types/binary.rs in tierdb-sql has the
/// binary forms, which COPY's binary format shares).
pub fn encode(datum: &Datum, ty: &SqlType, binary: bool) -> Result<Encoded, SqlError> {
    if datum.is_null() {
        return Ok(Encoded(None));
    }
    if !binary {
        return Ok(Encoded(datum.to_text(ty).map(String::into_bytes)));
    }
    Ok(Encoded(tierdb_sql::binary_send(datum, ty)?))
}

/// Decodes a parameter sent in binary for type `ty`.
pub fn decode_binary(bytes: &[u8], ty: &SqlType) -> Result<Datum, SqlError> {
    tierdb_sql::binary_receive(bytes, ty)
}
