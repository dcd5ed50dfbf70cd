//! Scalar functions: one registry entry per function ({names, argument count, typing,
//! strictness, evaluation}). Binding resolves a call to its entry once
//! (`bind::signatures`); the bound call holds the entry and execution evaluates through it,
//! so a function the binder accepts is always one the executor can run.

/// Shorthand for an entry; `resolve`, `evaluate` and the flags are set per entry.
macro_rules! function {
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr) => {
        Function {
            names: $names,
            arguments: $arguments,
            strict: true,
            volatile: false,
            resolve: $resolve,
            evaluate: $evaluate,
            example: $example,
        }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, non_strict) => {
        Function { strict: false, ..function!($names, $arguments, $resolve, $evaluate, $example) }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, volatile) => {
        Function { volatile: true, ..function!($names, $arguments, $resolve, $evaluate, $example) }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, volatile_non_strict) => {
        Function {
            volatile: true,
            strict: false,
            ..function!($names, $arguments, $resolve, $evaluate, $example)
        }
    };
}

mod advisory;
mod arithmetic;
mod array;
mod bit;
mod datetime;
mod digests;
mod encoding;
mod format;
mod halfvec;
mod info;
mod integer_bits;
mod json;
mod json_sets;
mod jsonb_edit;
mod jsonb_object;
mod jsonpath;
mod math;
mod numeric_math;
pub(crate) use numeric_math::{round_to_scale, sqrt_at_scale};
mod privileges;
mod random;
mod regex;
mod registry_arrays_catalog;
mod registry_core;
mod registry_vector_json;
mod sparsevec;
mod text;
mod trigonometry;
mod typing;
mod unicode;
mod vector;

pub use json_sets::{json_record_rows, json_set_rows, JsonRows};
pub use jsonpath::jsonb_path_rows;
pub(crate) use jsonpath::path_signature as jsonpath_signature;
pub use privileges::{NamedPrivilege, PrivilegeCall, PrivilegeTarget};
pub(crate) use random::{install_random_state, new_random_state, random_state};
pub use regex::{regexp_matches, regexp_split_to_table};

/// The registry's tables, in the order the registry's tests call their examples (the
/// sequence functions need nextval's before currval's).
static TABLES: [&[Function]; 10] = [
    jsonpath::JSONPATH,
    registry_vector_json::VECTOR_JSON,
    jsonb_edit::JSONB_EDIT,
    jsonb_object::JSONB_OBJECT,
    registry_core::CORE,
    registry_arrays_catalog::ARRAYS_CATALOG,
    regex::REGEX,
    datetime::DATETIME_FUNCTIONS,
    bit::BIT_FUNCTIONS,
    integer_bits::INTEGER_BITS,
];

/// Every scalar function tierdb runs. Names are matched after identifier folding.
pub fn functions() -> impl Iterator<Item = &'static Function> {
    TABLES.iter().flat_map(|table| table.iter())
}

use std::ops::RangeInclusive;

use crate::catalog::{AdvisoryKey, AdvisoryMode};
use crate::error::{Result, SqlError};
use crate::types::{Datum, SqlType};

/// PostgreSQL's largest text value: an allocation is at most 1 GB less one byte
/// (MaxAllocSize), of which 4 bytes are the value's header.
pub const TEXT_BYTES_MAX: usize = (1 << 30) - 1 - 4;

/// PostgreSQL's error for a text value that would exceed `TEXT_BYTES_MAX`.
pub fn text_too_large() -> SqlError {
    SqlError::new("54000", "requested length too large")
}

/// Fails with 54000 when a text value of `bytes` would exceed `TEXT_BYTES_MAX`.
pub fn check_text_bytes(bytes: usize) -> Result<()> {
    if bytes > TEXT_BYTES_MAX {
        return Err(text_too_large());
    }
    Ok(())
}

/// How the binder converts one argument before the call.
#[derive(Clone, Debug, PartialEq)]
pub enum Coercion {
    /// Passed as bound (functions over "any" type).
    Keep,
    /// An implicit cast (assignment rules: an integer widens, text does not become one).
    Implicit(SqlType),
    /// An explicit cast (character types and untyped literals to text).
    Explicit(SqlType),
}

/// A resolved call: how each argument converts and what the call returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub arguments: Vec<Coercion>,
    pub output: SqlType,
}

/// Chooses the signature of a call from the argument types as bound (`name` is the name
/// called, for messages): `Err` when no such function exists (42883) or the arguments'
/// types cannot be matched (42804).
pub type Resolve = fn(name: &str, types: &[SqlType]) -> Result<Signature>;

/// Evaluates a call on its evaluated arguments.
pub type Evaluate = fn(call: Call<'_>) -> Result<Datum>;

/// One scalar function.
#[derive(Debug)]
pub struct Function {
    /// The names it is called by; the first is canonical.
    pub names: &'static [&'static str],
    /// How many arguments it takes.
    pub arguments: RangeInclusive<usize>,
    /// NULL in any argument gives NULL without calling `evaluate` (PostgreSQL's STRICT).
    pub strict: bool,
    /// Its result may differ between calls with the same arguments (random, nextval): not
    /// computed once per statement.
    pub volatile: bool,
    pub resolve: Resolve,
    pub evaluate: Evaluate,
    /// A call that binds and evaluates, as documentation and for the registry's tests.
    pub example: &'static str,
}

impl Function {
    pub fn name(&self) -> &'static str {
        self.names[0]
    }

    /// Evaluates the function, applying its strictness first.
    pub fn call(
        &self,
        args: Vec<Datum>,
        arg_types: &[SqlType],
        output: &SqlType,
        context: &FunctionContext<'_>,
    ) -> Result<Datum> {
        debug_assert!(self.arguments.contains(&args.len()), "{} bound with its arity", self.name());
        if self.strict && args.iter().any(Datum::is_null) {
            return Ok(Datum::Null);
        }
        (self.evaluate)(Call { args, arg_types, output, context })
    }
}

/// The registry entry called `name`, if any.
pub fn lookup(name: &str) -> Option<&'static Function> {
    functions().find(|function| function.names.contains(&name))
}

/// PostgreSQL's 42883 for a call with these argument types.
pub fn no_function(name: &str, types: &[SqlType]) -> SqlError {
    let types: Vec<String> = types.iter().map(SqlType::display_name).collect();
    SqlError::undefined_function(&format!("{}({})", name, types.join(", ")))
}

/// The arguments of one evaluation, with the call's types as bound.
pub struct Call<'a> {
    pub args: Vec<Datum>,
    /// Argument types after the binder's coercions.
    pub arg_types: &'a [SqlType],
    pub output: &'a SqlType,
    pub context: &'a FunctionContext<'a>,
}

impl Call<'_> {
    /// Argument `index` as text (the binder coerced it; NULL only in non-strict functions).
    fn text(&self, index: usize) -> &str {
        self.args.get(index).and_then(Datum::as_text).unwrap_or("")
    }

    /// Argument `index` as an integer (the binder coerced it to an integer type).
    fn int(&self, index: usize) -> i64 {
        self.args.get(index).and_then(Datum::as_int).unwrap_or(0)
    }
}

/// One call of the sequence functions.
#[derive(Clone, Copy, Debug)]
pub enum SequenceCall<'a> {
    /// `nextval(name)`.
    Next(&'a str),
    /// `currval(name)`.
    Current(&'a str),
    /// `lastval()`.
    Last,
    /// `setval(name, value, is_called)`.
    Set { name: &'a str, value: i64, is_called: bool },
}

/// One call of the advisory lock functions (catalog/advisory.rs).
#[derive(Clone, Copy, Debug)]
pub enum AdvisoryCall {
    /// pg_[try_]advisory_[xact_]lock[_shared]: true when granted.
    Lock { key: AdvisoryKey, mode: AdvisoryMode, transaction: bool, wait: bool },
    /// pg_advisory_unlock[_shared]: true when a session-level hold was released.
    Unlock { key: AdvisoryKey, mode: AdvisoryMode },
    /// pg_advisory_unlock_all.
    UnlockAll,
}

/// Facts about the session that some functions report.
/// set_config's effect on the session: (name, value or None to reset, is_local).
pub type ChangeSetting<'a> = dyn Fn(&str, Option<&str>, bool) -> Result<String> + 'a;

pub struct FunctionContext<'a> {
    pub database: &'a str,
    pub user: &'a str,
    pub backend_pid: i32,
    pub statement_time_micros: i64,
    /// nextval, currval, lastval and setval (exec/sequences.rs).
    pub sequence: &'a dyn Fn(SequenceCall<'_>) -> Result<i64>,
    /// The advisory lock functions (exec/advisory.rs).
    pub advisory: &'a dyn Fn(AdvisoryCall) -> Result<bool>,
    pub format_type: &'a dyn Fn(i64, i64) -> Option<String>,
    pub index_definition: &'a dyn Fn(i64, bool) -> Option<String>,
    /// `pg_get_viewdef(oid)`: None for an OID that is not a view's.
    pub view_definition: &'a dyn Fn(i64) -> Option<String>,
    /// `pg_get_constraintdef(oid, pretty)`.
    pub constraint_definition: &'a dyn Fn(i64, bool) -> Option<String>,
    /// The object a name denotes (`to_regclass`), None when there is none.
    pub object_by_name: &'a dyn Fn(crate::types::ObjectKind, &str) -> Result<Option<Datum>>,
    /// `pg_get_serial_sequence(table, column)`.
    pub serial_sequence: &'a dyn Fn(&str, &str) -> Result<Option<String>>,
    /// current_setting(name): as SHOW prints it, None for a name that is not a parameter.
    pub setting: &'a dyn Fn(&str) -> Option<String>,
    /// set_config(name, value, is_local): the new value as SHOW prints it (value None: the
    /// default), applied when the statement succeeds.
    pub change_setting: &'a ChangeSetting<'a>,
    /// The name of the role with an OID (pg_get_userbyid, acldefault), None for none.
    pub role_name: &'a dyn Fn(i64) -> Option<String>,
    /// current_schemas(include_implicit): the search_path's existing schemas, in order
    /// (with `true`, pg_catalog first when the path does not name it).
    pub current_schemas: &'a dyn Fn(bool) -> Vec<String>,
    /// A sequence's state by OID: (last_value, log_cnt, is_called).
    pub sequence_state: &'a dyn Fn(i64) -> Result<(i64, i64, bool)>,
    /// tierdb_check_vector_index(oid): the check of an HNSW index as a jsonb report.
    pub check_vector_index: &'a dyn Fn(i64) -> Result<Datum>,
    /// has_table_privilege and has_schema_privilege: None when the object's OID names
    /// nothing (exec/privilege_checks.rs).
    pub has_privilege: &'a dyn Fn(PrivilegeCall<'_>) -> Result<Option<bool>>,
    /// pg_table_is_visible(oid): false for a permanent relation a temp one of the session
    /// hides (design 019).
    pub relation_visible: &'a dyn Fn(i64) -> bool,
    /// pg_relation_size and its kin: the bytes of the pages a relation's trees hold, None
    /// when the OID names no table or index (exec/objects.rs).
    pub relation_size: &'a dyn Fn(i64, RelationSize) -> Result<Option<i64>>,
    /// The pages in use in the store (pg_database_size).
    pub database_pages: &'a dyn Fn() -> u64,
}

/// Which pages a relation size function counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelationSize {
    /// pg_relation_size: the relation's own tree (a table's or an index's).
    Relation,
    /// pg_table_size: a table's tree (tierdb has no TOAST, free space or visibility map
    /// forks: overflow pages are in the tree).
    Table,
    /// pg_indexes_size: a table's indexes.
    Indexes,
    /// pg_total_relation_size: a table and its indexes.
    Total,
}

/// A count (characters, items) as an integer result: counts of values in memory fit i64.
fn count(value: usize) -> Result<Datum> {
    i64::try_from(value).map(Datum::Int).map_err(|_| SqlError::out_of_range("integer"))
}
