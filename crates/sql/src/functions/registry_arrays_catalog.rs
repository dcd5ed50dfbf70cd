//! The registry's array and catalog functions.

use super::array::{self, polymorphic, Kind, Output};
use super::typing::*;
use super::{info, privileges, Coercion, Function, Signature};
use crate::types::{ObjectKind, SqlType};

/// Array functions and the catalog functions clients call.
pub(super) static ARRAYS_CATALOG: &[Function] = &[
    // Arrays (functions/array.rs).
    function!(
        &["array_append"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::Array),
        array::array_append,
        "ARRAY[1,2], 3",
        non_strict
    ),
    function!(
        &["array_prepend"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Element, Kind::Array], Output::Array),
        array::array_prepend,
        "0, ARRAY[1,2]",
        non_strict
    ),
    function!(
        &["array_cat"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Array),
        array::array_cat,
        "ARRAY[1], ARRAY[2]",
        non_strict
    ),
    function!(
        &["array_length"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_length,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["array_upper"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_upper,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["array_lower"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_lower,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["cardinality"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Int),
        array::cardinality,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_ndims"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Int),
        array::array_ndims,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_dims"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Text),
        array::array_dims,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_position"],
        2..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element, Kind::Int], Output::Int),
        array::array_position,
        "ARRAY[1,2], 2",
        non_strict
    ),
    function!(
        &["array_positions"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::IntArray),
        array::array_positions,
        "ARRAY[1,2,1], 1",
        non_strict
    ),
    function!(
        &["array_remove"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::Array),
        array::array_remove,
        "ARRAY[1,2,1], 1",
        non_strict
    ),
    function!(
        &["array_replace"],
        3..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element, Kind::Element], Output::Array),
        array::array_replace,
        "ARRAY[1,2,1], 1, 3",
        non_strict
    ),
    function!(
        &["array_to_string"],
        2..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Text, Kind::Text], Output::Text),
        array::array_to_string,
        "ARRAY[1,NULL,2], '-', '*'",
        non_strict
    ),
    function!(
        &["string_to_array"],
        2..=3,
        |n, t| Ok(Signature {
            arguments: vec![Coercion::Explicit(TEXT); t.len()],
            output: SqlType::Array(Box::new(TEXT)),
        })
        .and_then(|signature| texts(n, t, TEXT).map(|_| signature)),
        array::string_to_array,
        "'a,b,,c', ',', ''",
        non_strict
    ),
    function!(
        &["arraycontains"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::contains,
        "ARRAY[1,2], ARRAY[2]"
    ),
    function!(
        &["arraycontained"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::contained,
        "ARRAY[2], ARRAY[1,2]"
    ),
    function!(
        &["arrayoverlap"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::overlap,
        "ARRAY[1,2], ARRAY[2,3]"
    ),
    // Catalog functions clients call (psql's \d, drivers' metadata queries).
    function!(
        &["format_type"],
        2..=2,
        |_, t| Ok(all(t, SqlType::Int8, TEXT)),
        info::format_type,
        "23, -1",
        non_strict
    ),
    function!(
        &["pg_table_is_visible"],
        1..=1,
        |_, t| Ok(all(t, SqlType::Int8, SqlType::Bool)),
        info::relation_visible,
        "1259",
        non_strict
    ),
    function!(
        &["pg_type_is_visible", "pg_function_is_visible", "pg_collation_is_visible"],
        1..=1,
        |_, t| Ok(all(t, SqlType::Int8, SqlType::Bool)),
        info::constant_true,
        "1259",
        non_strict
    ),
    function!(
        &["pg_relation_is_publishable"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        info::constant_false,
        "1259",
        non_strict
    ),
    function!(
        &["pg_get_indexdef"],
        1..=3,
        |_, t| Ok(any(t, false, TEXT)),
        info::index_definition,
        "0"
    ),
    function!(
        &["pg_get_viewdef"],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::view_definition,
        "0"
    ),
    function!(
        &["pg_get_constraintdef"],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::constraint_definition,
        "0"
    ),
    function!(
        &["pg_get_userbyid"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Name)),
        info::role_name,
        "10"
    ),
    function!(
        &["acldefault"],
        2..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Oid)], SqlType::Array(Box::new(TEXT))),
        info::default_privileges,
        "'n', 10"
    ),
    function!(
        &["current_schemas"],
        1..=1,
        |n, t| mixed(n, t, &[Some(SqlType::Bool)], SqlType::Array(Box::new(SqlType::Name))),
        info::current_schemas,
        "true"
    ),
    function!(
        &["pg_sequence_last_value"],
        1..=1,
        |_, t| Ok(Signature {
            arguments: vec![match t.first() {
                Some(SqlType::Unknown) => Coercion::Explicit(SqlType::Object(ObjectKind::Class)),
                _ => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
            }],
            output: SqlType::Int8,
        }),
        info::sequence_last_value,
        "'registry_example_id_seq'",
        volatile
    ),
    function!(
        &["tierdb_sequence_state"],
        2..=2,
        |_, t| Ok(Signature {
            arguments: vec![
                match t.first() {
                    Some(SqlType::Unknown) => {
                        Coercion::Explicit(SqlType::Object(ObjectKind::Class))
                    }
                    _ => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
                },
                Coercion::Implicit(SqlType::Int4),
            ],
            output: SqlType::Int8,
        }),
        info::sequence_state,
        "'registry_example_id_seq', 0",
        volatile
    ),
    function!(
        &["pg_relation_size"],
        1..=2,
        |_, t| Ok(relation_size_signature(t)),
        info::relation_size,
        "'registry_example'",
        volatile
    ),
    function!(
        &["pg_database_size"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Int8)),
        info::database_size,
        "16384",
        volatile
    ),
    function!(
        &["has_database_privilege"],
        2..=3,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        privileges::has_database_privilege,
        "16384, 'CONNECT'"
    ),
    function!(
        &["pg_table_size"],
        1..=1,
        |_, t| Ok(relation_size_signature(t)),
        info::table_size,
        "'registry_example'",
        volatile
    ),
    function!(
        &["pg_indexes_size"],
        1..=1,
        |_, t| Ok(relation_size_signature(t)),
        info::indexes_size,
        "'registry_example_pkey'",
        volatile
    ),
    function!(
        &["pg_total_relation_size"],
        1..=1,
        |_, t| Ok(relation_size_signature(t)),
        info::total_relation_size,
        "'registry_example_pkey'",
        volatile
    ),
    // tierdb's check of an HNSW index against its table (exec/vector_check.rs).
    function!(
        &["tierdb_check_vector_index"],
        1..=1,
        |_, t| Ok(Signature {
            arguments: vec![match t.first() {
                Some(SqlType::Unknown) => Coercion::Explicit(SqlType::Object(ObjectKind::Class)),
                _ => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
            }],
            output: SqlType::Jsonb,
        }),
        info::check_vector_index,
        "'registry_example_v_idx'",
        volatile
    ),
    function!(
        &["pg_is_in_recovery"],
        0..=0,
        |_, _| Ok(none(SqlType::Bool)),
        info::constant_false,
        ""
    ),
    function!(
        &["pg_get_expr"],
        2..=3,
        |_, t| Ok(any(t, false, TEXT)),
        info::first_argument,
        "'x', 0"
    ),
    function!(
        &[
            "pg_get_triggerdef",
            "pg_get_statisticsobjdef_columns",
            "pg_get_partkeydef",
            "pg_get_partition_constraintdef",
            "pg_get_ruledef",
            "pg_get_function_arguments",
            "pg_get_function_result",
            "pg_get_viewdef",
            "obj_description",
            "shobj_description",
            "pg_tablespace_location",
        ],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::null,
        "0"
    ),
    function!(&["col_description"], 2..=2, |_, t| Ok(any(t, false, TEXT)), info::null, "'t', 'c'"),
    function!(
        &["pg_get_serial_sequence"],
        2..=2,
        |n, t| texts(n, t, TEXT),
        info::serial_sequence,
        "'registry_example', 'id'"
    ),
    function!(
        &["pg_size_pretty"],
        1..=1,
        |_, t| Ok(any(t, false, TEXT)),
        privileges::size_pretty,
        "8192"
    ),
    function!(
        &["pg_encoding_to_char"],
        1..=1,
        |_, t| Ok(any(t, false, TEXT)),
        info::encoding_name,
        "6"
    ),
    function!(
        &["has_table_privilege"],
        2..=3,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        privileges::has_table_privilege,
        "'pg_class', 'SELECT'"
    ),
    function!(
        &["has_schema_privilege"],
        2..=3,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        privileges::has_schema_privilege,
        "'public', 'USAGE'"
    ),
    function!(
        &["pg_has_role"],
        2..=3,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        privileges::pg_has_role,
        "'pg_read_all_stats', 'USAGE'"
    ),
];

/// A relation size function's arguments: a regclass (an untyped literal read as one), then
/// pg_relation_size's fork name.
fn relation_size_signature(types: &[SqlType]) -> Signature {
    let arguments = types
        .iter()
        .enumerate()
        .map(|(index, ty)| match (index, ty) {
            (0, SqlType::Unknown) => Coercion::Explicit(SqlType::Object(ObjectKind::Class)),
            (0, _) => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
            _ => Coercion::Implicit(TEXT),
        })
        .collect();
    Signature { arguments, output: SqlType::Int8 }
}
