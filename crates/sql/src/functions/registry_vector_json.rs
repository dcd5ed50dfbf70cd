//! The registry's pgvector and json functions.

use super::typing::*;
use super::vector::{self, l2_norm_signature, subvector_signature, vectors};
use super::{halfvec, sparsevec};
use super::{info, json, Function, Signature};
use crate::types::{ObjectKind, SqlType};

/// pgvector's functions (the distance operators bind to these) and the json functions.
pub(super) static VECTOR_JSON: &[Function] = &[
    // pgvector (the operators bind to these; `vector_*` names are pgvector's own).
    function!(
        &["l2_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l2_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_l2_squared_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l2_squared_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["inner_product"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::inner_product,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_negative_inner_product"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::negative_inner_product,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["cosine_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::cosine_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["l1_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l1_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_dims"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Int4),
        vector::dimensions,
        "'[1,2]'::vector"
    ),
    function!(
        &["vector_norm"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::norm,
        "'[3,4]'::vector"
    ),
    function!(
        &["l2_norm"],
        1..=1,
        l2_norm_signature,
        |call| if sparsevec::is_sparsevec(&call) {
            sparsevec::l2_norm(&call)
        } else {
            halfvec::l2_norm(call)
        },
        "'[3,4]'::halfvec"
    ),
    function!(
        &["l2_normalize"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::l2_normalize,
        "'[3,4]'::vector"
    ),
    function!(
        &["vector_add"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::add,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_sub"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::subtract,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_mul"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::multiply,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_concat"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::concatenate,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["subvector"],
        3..=3,
        subvector_signature,
        vector::subvector,
        "'[1,2,3]'::vector, 2, 1"
    ),
    // json and jsonb (the operators `->`, `->>`, `@>`, `<@`, `?` bind to the first five).
    function!(
        &["json_get"],
        2..=2,
        |n, t| json::get_signature(n, t, false),
        |c| json::get(c, false),
        "'[1,2]'::jsonb, 1"
    ),
    function!(
        &["json_get_text"],
        2..=2,
        |n, t| json::get_signature(n, t, true),
        |c| json::get(c, true),
        "'{\"a\":1}'::json, 'a'"
    ),
    function!(
        &["jsonb_contains"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb),
        json::contains,
        "'[1,2]'::jsonb, '[1]'"
    ),
    function!(
        &["jsonb_contained"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb),
        json::contained,
        "'[1]'::jsonb, '[1,2]'"
    ),
    function!(
        &["jsonb_concat"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb)
            .map(|signature| Signature { output: SqlType::Jsonb, ..signature }),
        json::concatenate,
        "'[1]'::jsonb, '[2]'"
    ),
    function!(
        &["jsonb_exists"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, TEXT),
        json::exists,
        "'{\"a\":1}'::jsonb, 'a'"
    ),
    function!(
        &["json_typeof"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Json, TEXT),
        json::type_name,
        "'[]'"
    ),
    function!(
        &["jsonb_typeof"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, TEXT),
        json::type_name,
        "'[]'"
    ),
    function!(
        &["json_array_length"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Json, SqlType::Int4),
        json::array_length,
        "'[1,2]'"
    ),
    function!(
        &["jsonb_array_length"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, SqlType::Int4),
        json::array_length,
        "'[1,2]'"
    ),
    function!(
        &["jsonb_pretty"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, TEXT),
        json::pretty,
        "'{\"a\":[1]}'"
    ),
    function!(
        &["pg_typeof"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Object(ObjectKind::Type))),
        info::type_of,
        "1",
        non_strict
    ),
    function!(&["to_json"], 1..=1, |_, t| Ok(any(t, false, SqlType::Json)), json::to_json, "'a'"),
    function!(
        &["to_jsonb"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::to_jsonb_value,
        "1.5"
    ),
    function!(
        &["json_build_array"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Json)),
        json::build_array,
        "1, 'a', NULL",
        non_strict
    ),
    function!(
        &["jsonb_build_array"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::build_array_jsonb,
        "1, 'a', NULL",
        non_strict
    ),
    function!(
        &["json_build_object"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Json)),
        json::build_object,
        "'a', 1",
        non_strict
    ),
    function!(
        &["json_row_fields"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Json)),
        json::row_fields,
        "'a', 1",
        non_strict
    ),
    function!(
        &["jsonb_build_object"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::build_object_jsonb,
        "'a', 1",
        non_strict
    ),
];
