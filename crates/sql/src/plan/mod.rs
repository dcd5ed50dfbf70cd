//! Bound expressions and physical plans: what the binder produces and the executor runs.
//!
//! Expressions refer to input columns by position (`Column`), to enclosing rows of
//! correlated subqueries by depth (`Outer`), and to statement parameters by number.
//! Plans are trees of operators; every node has an id for EXPLAIN ANALYZE statistics.

mod access;
pub(crate) mod deparse;
mod dml;
mod join;
mod json_keys;
mod key_lists;
pub(crate) use json_keys::refuse_json_keys;
mod nearest;
mod or_factoring;
mod reads;
mod size;
mod window;

pub use window::{
    FrameBound, FrameExclusion, FrameUnits, WindowCall, WindowFrame, WindowFunction, WindowSpec,
};

pub(crate) use access::*;
pub(crate) use dml::*;
pub(crate) use join::*;
pub(crate) use key_lists::*;
pub(crate) use nearest::use_vector_indexes;
pub(crate) use or_factoring::split_factored;
pub(crate) use reads::{modifying_reads, plan_reads, Reads};
pub(crate) use size::is_small_result;

use std::ops::Bound;
use std::sync::Arc;

use crate::catalog::{ForeignKeyMeta, TableMeta};
use crate::functions::Function;
use crate::types::{Datum, SqlType};
use tierdb_engine::TableHandle;

/// An output column of a plan.
#[derive(Clone, Debug)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
    /// Source table OID and attribute number (RowDescription), 0 when computed.
    pub table_oid: u32,
    pub attribute: i16,
}

pub use crate::types::ArithmeticOp;

/// A set-returning function of the select list or FROM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetFunction {
    /// generate_series(start, stop [, step]) over integers or numeric.
    Series,
    /// unnest(array): the elements in order.
    Unnest,
    /// generate_subscripts(array, dimension [, reverse]).
    Subscripts,
    /// regexp_matches(string, pattern [, flags]): each match's groups as text[].
    RegexpMatches,
    /// regexp_split_to_table(string, pattern [, flags]): the pieces between matches.
    RegexpSplit,
    /// pg_partition_ancestors(regclass): a partition and the partitioned tables above it;
    /// tierdb has no partitions, so no rows (psql's `\d` of a table with FOREIGN KEYs
    /// asks).
    PartitionAncestors,
    /// The json and jsonb set-returning functions over one json (`json` true) or jsonb
    /// value.
    Json { rows: JsonRows, json: bool },
    /// One column of json[b]_to_record (`set` false) or json[b]_to_recordset: arguments
    /// (value, the column's name), the call's type the column's.
    JsonRecord { set: bool, json: bool },
    /// jsonb_path_query(target, path [, vars [, silent]]): the items the path yields.
    JsonPathQuery,
}

pub use crate::functions::JsonRows;

/// One call of a set-returning function, with its bound arguments and result type.
#[derive(Clone, Debug)]
pub struct SetCall {
    pub function: SetFunction,
    pub args: Vec<Expr>,
    pub ty: SqlType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CompareOp {
    /// The operator as SQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::NotEq => "<>",
            CompareOp::Lt => "<",
            CompareOp::LtEq => "<=",
            CompareOp::Gt => ">",
            CompareOp::GtEq => ">=",
        }
    }

    pub fn flip(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtEq => CompareOp::GtEq,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtEq => CompareOp::LtEq,
            other => other,
        }
    }
}

/// How a comparison with a subquery's rows combines them (`Expr::InSubquery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    /// True when the comparison holds for some row (`IN`, `op ANY`).
    Any,
    /// True when it holds for every row (`op ALL`).
    All,
    /// The one row of a row subquery: NULL without rows, 21000 with more.
    Single,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateFunction {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BoolAnd,
    BoolOr,
    StringAgg,
    /// json_agg (`binary` false) and jsonb_agg: the argument is bound through to_json or
    /// to_jsonb, so the accumulator collects json text or jsonb values.
    JsonAgg {
        binary: bool,
        /// json_agg of arrays or records: each element after the first that is not NULL
        /// starts on a new line (`[[1], \n [2]]`), as PostgreSQL's json_agg_transfn writes.
        structured: bool,
    },
    /// json_object_agg and jsonb_object_agg: (key as text, value through to_json[b]).
    JsonObjectAgg {
        binary: bool,
    },
    /// array_agg(value): the values (NULLs too) in input order, or the call's ORDER BY.
    ArrayAgg,
    /// var_samp / variance, var_pop, stddev_samp / stddev, stddev_pop: numeric over
    /// integers and numeric, float8 over float4 and float8 (exec/aggregate_stats.rs).
    Variance {
        /// Divided by n - 1 (NULL for fewer than two values) rather than n.
        sample: bool,
        /// The square root of the variance (stddev).
        root: bool,
    },
    /// bit_and, bit_or, bit_xor over smallint, integer and bigint.
    Bitwise(BitOperation),
    /// corr, covar_*, regr_*: two float8 arguments (Y, X), rows with either NULL skipped.
    Regression(Regression),
    /// percentile_cont, percentile_disc and mode with `WITHIN GROUP (ORDER BY value)`:
    /// arguments (value, fraction), the call's order the WITHIN GROUP key
    /// (bind/ordered_set.rs, exec/ordered_set.rs).
    OrderedSet(OrderedSet),
}

/// An ordered-set aggregate: what it picks from its group's sorted, non-NULL values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedSet {
    /// The value at a fraction of the way, interpolated between its two neighbours
    /// (double precision or interval).
    PercentileContinuous,
    /// The first value whose position reaches the fraction.
    PercentileDiscrete,
    /// The most frequent value (the first in the order among equally frequent ones).
    Mode,
}

impl OrderedSet {
    pub fn of_name(name: &str) -> Option<OrderedSet> {
        Some(match name {
            "percentile_cont" => OrderedSet::PercentileContinuous,
            "percentile_disc" => OrderedSet::PercentileDiscrete,
            "mode" => OrderedSet::Mode,
            _ => return None,
        })
    }

    /// PostgreSQL's check of a percentile's fraction (22003 outside [0, 1], NaN too).
    pub fn check_fraction(fraction: f64) -> crate::error::Result<()> {
        if (0.0..=1.0).contains(&fraction) {
            return Ok(());
        }
        let message = format!("percentile value {fraction} is not between 0 and 1");
        Err(crate::error::SqlError::new("22003", message))
    }

    pub fn name(self) -> &'static str {
        match self {
            OrderedSet::PercentileContinuous => "percentile_cont",
            OrderedSet::PercentileDiscrete => "percentile_disc",
            OrderedSet::Mode => "mode",
        }
    }
}

/// The name PostgreSQL's errors give a variance aggregate (variance and stddev are the
/// sample ones under their other names): the binder's 42883 and the executor's 22003.
pub fn variance_name(sample: bool, root: bool) -> &'static str {
    match (sample, root) {
        (true, true) => "stddev_samp",
        (false, true) => "stddev_pop",
        (true, false) => "var_samp",
        (false, false) => "var_pop",
    }
}

/// The operation of a bitwise aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOperation {
    And,
    Or,
    Xor,
}

/// The result of a two-argument (Y, X) statistical aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regression {
    Count,
    AverageX,
    AverageY,
    SumSquaresX,
    SumSquaresY,
    SumProducts,
    Slope,
    Intercept,
    DeterminationCoefficient,
    Correlation,
    CovariancePopulation,
    CovarianceSample,
}

/// One key of an aggregate's own ORDER BY (`string_agg(x, ',' ORDER BY y DESC)`).
#[derive(Clone, Debug)]
pub struct AggregateOrder {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug)]
pub struct AggregateCall {
    pub function: AggregateFunction,
    pub args: Vec<Expr>,
    pub distinct: bool,
    /// The call's ORDER BY: its input is sorted by these before it is folded in.
    pub order: Vec<AggregateOrder>,
    /// The call's `FILTER (WHERE ...)`: rows for which it is not true are not folded in.
    pub filter: Option<Expr>,
    /// Type of the argument (first), for sum/avg result rules.
    pub input: SqlType,
    pub output: SqlType,
}

/// A scalar function call: the registry entry resolved at bind time, the arguments coerced
/// as its signature says.
#[derive(Clone, Debug)]
pub struct FunctionCall {
    pub function: &'static Function,
    pub args: Vec<Expr>,
    /// Argument types after coercion (bpchar's padding and concat's output functions).
    pub arg_types: Vec<SqlType>,
    pub output: SqlType,
    /// The operator written, when the call came from one (pgvector's `<->`, `<#>`, `<=>`,
    /// `<+>`): an HNSW index orders by the operator, never by the function call.
    pub operator: Option<&'static str>,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Column(usize),
    Outer {
        depth: usize,
        index: usize,
    },
    Literal(Datum),
    Parameter(usize),
    Arithmetic {
        op: ArithmeticOp,
        left: Box<Expr>,
        right: Box<Expr>,
        ty: SqlType,
    },
    Negate {
        expr: Box<Expr>,
        ty: SqlType,
    },
    Compare {
        op: CompareOp,
        left: Box<Expr>,
        right: Box<Expr>,
        bpchar: bool,
    },
    Concat(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    IsDistinct {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    Cast {
        expr: Box<Expr>,
        from: SqlType,
        to: SqlType,
        explicit: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// A value or a row compared with a subquery's rows (PostgreSQL's ANY, ALL and
    /// ROWCOMPARE sublinks): `IN` is `= ANY`, `NOT IN` is `NOT (= ANY)` (`negated`), and
    /// `(a, b) = (SELECT x, y)` compares with the one row (`Quantifier::Single`).
    InSubquery {
        /// The left operand: one expression, or a row constructor's elements.
        exprs: Vec<Expr>,
        /// Over the subquery's row: its values as compared, `Column(i)` cast to the pair's
        /// common type where the two types differ (so equal values hash alike).
        subquery_exprs: Vec<Expr>,
        op: CompareOp,
        quantifier: Quantifier,
        plan: Arc<Plan>,
        negated: bool,
        correlated: bool,
        id: usize,
    },
    Exists {
        plan: Arc<Plan>,
        negated: bool,
        correlated: bool,
        id: usize,
    },
    ScalarSubquery {
        plan: Arc<Plan>,
        correlated: bool,
        id: usize,
    },
    /// ARRAY(subquery): the rows' one column as an array.
    ArraySubquery {
        plan: Arc<Plan>,
        correlated: bool,
        id: usize,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Function(FunctionCall),
    /// ARRAY[a, b, ...]: a one-dimensional array of the elements (coerced to one type).
    MakeArray(Vec<Expr>),
    /// `array[index]` (`upper` None) or the slice `array[lower:upper]` (`slice`; a missing
    /// bound is the array's own).
    Subscript {
        array: Box<Expr>,
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        slice: bool,
    },
    /// `left op ANY (array)` / `left op ALL (array)`, with SQL's NULL rules.
    AnyAll {
        op: CompareOp,
        left: Box<Expr>,
        array: Box<Expr>,
        all: bool,
    },
}

/// The body of `Expr::children` and `Expr::children_mut`: `$iter` is `iter` or `iter_mut`,
/// `$as` is `as_ref` or `as_mut`.
macro_rules! expr_children {
    ($expr:expr, $iter:ident, $as:ident) => {
        match $expr {
            Expr::Column(_) | Expr::Outer { .. } | Expr::Literal(_) | Expr::Parameter(_) => {
                Vec::new()
            }
            Expr::Exists { .. } | Expr::ScalarSubquery { .. } | Expr::ArraySubquery { .. } => {
                Vec::new()
            }
            Expr::Arithmetic { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::Concat(left, right)
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinct { left, right, .. }
            | Expr::Like { expr: left, pattern: right, .. } => vec![left.$as(), right.$as()],
            Expr::Negate { expr, .. }
            | Expr::Not(expr)
            | Expr::IsNull { expr, .. }
            | Expr::IsBool { expr, .. }
            | Expr::Cast { expr, .. } => vec![expr.$as()],
            Expr::InSubquery { exprs, .. } => exprs.$iter().collect(),
            Expr::Case { operand, branches, otherwise } => operand
                .$iter()
                .map(|operand| operand.$as())
                .chain(branches.$iter().flat_map(|(condition, result)| [condition, result]))
                .chain(otherwise.$iter().map(|otherwise| otherwise.$as()))
                .collect(),
            Expr::InList { expr, list, .. } => {
                std::iter::once(expr.$as()).chain(list.$iter()).collect()
            }
            Expr::Function(call) => call.args.$iter().collect(),
            Expr::MakeArray(elements) => elements.$iter().collect(),
            Expr::Subscript { array, lower, upper, .. } => std::iter::once(array.$as())
                .chain(lower.$iter().map(|bound| bound.$as()))
                .chain(upper.$iter().map(|bound| bound.$as()))
                .collect(),
            Expr::AnyAll { left, array, .. } => vec![left.$as(), array.$as()],
        }
    };
}

impl Expr {
    /// Whether the expression reads no input column (constant for one execution).
    pub fn is_row_independent(&self) -> bool {
        match self {
            Expr::Column(_) => false,
            Expr::Outer { .. } | Expr::Literal(_) | Expr::Parameter(_) => true,
            Expr::Arithmetic { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::Concat(left, right)
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinct { left, right, .. } => {
                left.is_row_independent() && right.is_row_independent()
            }
            Expr::Negate { expr, .. }
            | Expr::Not(expr)
            | Expr::IsNull { expr, .. }
            | Expr::IsBool { expr, .. }
            | Expr::Cast { expr, .. } => expr.is_row_independent(),
            Expr::Function(call) => {
                call.args.iter().all(Expr::is_row_independent) && !call.function.volatile
            }
            _ => false,
        }
    }

    /// The direct sub-expressions (not those inside subquery plans, which read their own
    /// rows). With `children_mut`, the one place that knows the shape of every variant for
    /// the walks below (one macro, so that a new variant is described once).
    /// Whether the expression calls a volatile function (random(), nextval, ...).
    pub(crate) fn is_volatile(&self) -> bool {
        matches!(self, Expr::Function(call) if call.function.volatile)
            || self.children().into_iter().any(Expr::is_volatile)
    }

    pub(crate) fn children(&self) -> Vec<&Expr> {
        expr_children!(self, iter, as_ref)
    }

    /// `children`, mutably.
    pub(crate) fn children_mut(&mut self) -> Vec<&mut Expr> {
        expr_children!(self, iter_mut, as_mut)
    }

    /// Column positions read by the expression (not inside subqueries).
    pub fn columns(&self, out: &mut Vec<usize>) {
        if let Expr::Column(index) = self {
            out.push(*index);
        }
        for child in self.children() {
            child.columns(out);
        }
    }

    /// Whether it contains a correlated subquery (which reads the current row).
    pub fn has_correlated_subquery(&self) -> bool {
        let here = match self {
            Expr::InSubquery { correlated, .. }
            | Expr::Exists { correlated, .. }
            | Expr::ScalarSubquery { correlated, .. }
            | Expr::ArraySubquery { correlated, .. } => *correlated,
            _ => false,
        };
        here || self.children().into_iter().any(Expr::has_correlated_subquery)
    }

    /// Shifts column references by `offset` (a predicate moved above a join's left side).
    pub fn shift_columns(&mut self, offset: isize) {
        self.map_columns(&mut |index| {
            index.checked_add_signed(offset).expect("column shift in range")
        });
    }

    pub fn map_columns(&mut self, map: &mut dyn FnMut(usize) -> usize) {
        if let Expr::Column(index) = self {
            *index = map(*index);
        }
        for child in self.children_mut() {
            child.map_columns(map);
        }
    }
}

/// How a scan reaches its rows.
#[derive(Clone, Debug)]
pub enum Access {
    Full,
    /// A range (or point, when both bounds are equal and complete) on the clustering key.
    Primary {
        lower: Bound<Vec<Expr>>,
        upper: Bound<Vec<Expr>>,
    },
    /// A range on a secondary index.
    Index {
        name: String,
        lower: Bound<Vec<Expr>>,
        upper: Bound<Vec<Expr>>,
    },
    /// Equality lookups of a list of keys: an IN list or an OR of equalities on the leading
    /// columns of the clustering key (`name` None) or of the secondary index `name`. Every
    /// key pins the same number of leading columns; each distinct key is read once, so a
    /// repeated list value returns its rows once. The conjunct stays in the scan's filter.
    /// With `array` (`col = ANY (array)`, the drivers' batch lookup), `keys` is one key: the
    /// values of the columns before `col` that equalities pin (perhaps none); each element
    /// of the array, evaluated when the scan starts, completes it.
    Keys {
        name: Option<String>,
        keys: Vec<Vec<Expr>>,
        array: Option<Box<Expr>>,
    },
    /// The rows nearest to `query` by an HNSW index's operator, nearest first (at most
    /// `hnsw.ef_search` of them, as pgvector without iterative scans; with
    /// `hnsw.iterative_scan`, more until the consumer stops or `hnsw.max_scan_tuples`).
    Nearest {
        name: String,
        column: usize,
        operator: &'static str,
        query: Expr,
    },
}

/// The columns a scan decodes and returns, when not all (`optimize::prune_columns`).
#[derive(Clone, Debug)]
pub struct ScanProjection {
    /// By table column position: decode it (read above the scan, or by its filter).
    pub decode: Vec<bool>,
    /// The output row: these table column positions, in order.
    pub output: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    /// FULL [OUTER] JOIN: the unmatched rows of both sides, padded with NULLs.
    Full,
}

impl JoinKind {
    /// Whether a left row without a match is emitted with NULLs for the right side.
    pub fn keeps_left(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// Whether a right row without a match is emitted with NULLs for the left side.
    pub fn keeps_right(self) -> bool {
        self == JoinKind::Full
    }
}

#[derive(Clone, Debug)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A table a plan reads or writes: its SQL description and its engine handle, resolved once
/// when the statement is bound, so execution never looks the table up by name (not per scan
/// page, not per row written). A prepared statement is bound again when DDL changed the
/// catalog; a handle whose table was dropped meanwhile fails its next use with 42P01.
#[derive(Clone, Debug)]
pub struct BoundTable {
    pub meta: Arc<TableMeta>,
    pub handle: TableHandle,
    /// The CHECK constraints bound over the table's row, for a table the statement writes
    /// (empty for a table it only reads).
    pub checks: Arc<[BoundCheck]>,
    /// For a table the statement writes: the FOREIGN KEYs of other tables (or of this one)
    /// that reference it, with the referencing table's description when bound (empty for a
    /// table it only reads). The table's own FOREIGN KEYs are in `meta.foreign_keys`.
    pub referenced_by: Arc<[(Arc<TableMeta>, ForeignKeyMeta)]>,
    /// For a table the statement writes: each of its FOREIGN KEYs' referenced table, in
    /// the order of `meta.foreign_keys`.
    pub references: Arc<[Arc<TableMeta>]>,
}

/// A CHECK constraint bound over its table's row (columns in table order).
#[derive(Clone, Debug)]
pub struct BoundCheck {
    pub name: String,
    pub expr: Expr,
}

impl std::ops::Deref for BoundTable {
    type Target = TableMeta;

    fn deref(&self) -> &TableMeta {
        &self.meta
    }
}

/// PostgreSQL's bound on the grouping sets of one GROUP BY (54001 past it).
pub const GROUPING_SETS_MAX: usize = 4096;

#[derive(Clone, Debug)]
pub enum PlanKind {
    /// One row of no columns (SELECT without FROM).
    OneRow,
    Values {
        rows: Vec<Vec<Expr>>,
    },
    Scan {
        table: BoundTable,
        access: Access,
        filter: Option<Expr>,
        /// Append the row's engine key as a last (bytea) column, for UPDATE and DELETE.
        emit_key: bool,
        /// Read backwards (ORDER BY the key DESC).
        backward: bool,
        /// The table columns the plan above reads (`optimize::prune_columns`): the scan
        /// decodes only those (and its filter's) and returns only those. None: every column.
        projection: Option<ScanProjection>,
    },
    /// A system view computed from the catalog (pg_catalog, information_schema, statistics).
    SystemView {
        name: String,
    },
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
    },
    /// The input's columns, then one column per set-returning call: each input row gives
    /// as many rows as its longest call, the shorter calls NULL once they end (PostgreSQL's
    /// ProjectSet); a row whose calls give no rows gives none.
    ProjectSet {
        input: Box<Plan>,
        calls: Vec<SetCall>,
    },
    /// A FROM function's rows WITH ORDINALITY: the input's columns, then its row's number
    /// (bigint, from 1; again from 1 each time a LATERAL join runs it).
    Ordinality {
        input: Box<Plan>,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    /// SELECT ... FOR UPDATE and the other locking clauses: locks each row of `input` (a
    /// table scan that emits the row key) and passes it on, or its latest version when a
    /// concurrent update committed (READ COMMITTED) and it still passes `recheck` (the
    /// WHERE clause). Below sorting and LIMIT, as PostgreSQL's LockRows.
    LockRows {
        input: Box<Plan>,
        table: BoundTable,
        mode: tierdb_engine::LockMode,
        policy: tierdb_engine::WaitPolicy,
        recheck: Option<Expr>,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    NestedLoopJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
    },
    HashJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        residual: Option<Expr>,
    },
    /// A LATERAL item: `right` run again for each left row, which its `Expr::Outer`
    /// references of depth 1 read (the left row pushed as the innermost outer row); `on`
    /// over the combined row. Inner or LEFT only (PostgreSQL refuses RIGHT and FULL).
    LateralJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
    },
    /// For each left row, look up the right table with keys computed from the left row.
    IndexJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        residual: Option<Expr>,
    },
    Aggregate {
        input: Box<Plan>,
        groups: Vec<Expr>,
        aggregates: Vec<AggregateCall>,
    },
    /// GROUPING SETS, ROLLUP and CUBE below their Aggregate: each input row once per set,
    /// the input's columns followed by every key (NULL where the set does not group by
    /// it), the set's number (int4) and `true`. Before any input, one row per empty set
    /// (`()`): NULL columns, the set's number and `false`, so that the set has its one row
    /// even over no input; the aggregates above skip the `false` rows (their filters).
    /// `sets` holds, per set, the positions in `keys` it groups by.
    Expand {
        input: Box<Plan>,
        keys: Vec<Expr>,
        sets: Vec<Vec<usize>>,
    },
    /// Window functions over `input` sorted by the spec's partition and order columns: the
    /// input row, then one value per call.
    Window {
        input: Box<Plan>,
        spec: WindowSpec,
        calls: Vec<WindowCall>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    Distinct {
        input: Box<Plan>,
    },
    Union {
        inputs: Vec<Plan>,
        all: bool,
    },
    SetDifference {
        left: Box<Plan>,
        right: Box<Plan>,
        intersect: bool,
        all: bool,
    },
    /// WITH RECURSIVE's iteration (PostgreSQL's Recursive Union): the non-recursive term's
    /// rows, then the recursive term run again and again over the rows the previous run
    /// produced (the working table, read by `WorkTableScan`) until a run produces none.
    /// Without ALL a row already produced is dropped.
    RecursiveUnion {
        non_recursive: Box<Plan>,
        recursive: Box<Plan>,
        all: bool,
        /// Names the working table its `WorkTableScan`s read.
        work_table: usize,
    },
    /// The working table of the enclosing `RecursiveUnion` with the same `work_table`; or,
    /// with `cte`, the RETURNING rows of a data-modifying statement in WITH, which the
    /// statement ran before its main query (`bind/modifying_with.rs`).
    WorkTableScan {
        work_table: usize,
        /// The CTE's name (EXPLAIN).
        name: String,
        /// A data-modifying CTE's rows (EXPLAIN's "CTE Scan").
        cte: bool,
    },
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: PlanKind,
    pub columns: Vec<OutputColumn>,
    /// Node id, unique in its statement (EXPLAIN ANALYZE statistics).
    pub id: usize,
}

/// The body of `Plan::inputs` and `Plan::inputs_mut`: `$iter` is `iter` or `iter_mut`,
/// `$mutability` is absent or `mut`.
macro_rules! plan_inputs {
    ($kind:expr, $iter:ident $(, $mutability:ident)?) => {
            match $kind {
                PlanKind::Filter { input, .. }
                | PlanKind::LockRows { input, .. }
                | PlanKind::Project { input, .. }
                | PlanKind::ProjectSet { input, .. }
                | PlanKind::Ordinality { input }
                | PlanKind::Aggregate { input, .. }
                | PlanKind::Expand { input, .. }
                | PlanKind::Window { input, .. }
                | PlanKind::Sort { input, .. }
                | PlanKind::Limit { input, .. }
                | PlanKind::Distinct { input } => vec![&$($mutability)? **input],
                PlanKind::NestedLoopJoin { left, right, .. }
                | PlanKind::HashJoin { left, right, .. }
                | PlanKind::IndexJoin { left, right, .. }
                | PlanKind::LateralJoin { left, right, .. }
                | PlanKind::SetDifference { left, right, .. }
                | PlanKind::RecursiveUnion { non_recursive: left, recursive: right, .. } => {
                    vec![&$($mutability)? **left, &$($mutability)? **right]
                }
                PlanKind::Union { inputs, .. } => inputs.$iter().collect(),
                PlanKind::OneRow
                | PlanKind::Values { .. }
                | PlanKind::Scan { .. }
                | PlanKind::SystemView { .. }
                | PlanKind::Series { .. }
                | PlanKind::WorkTableScan { .. } => Vec::new(),
            }
    };
}

impl Plan {
    pub fn arity(&self) -> usize {
        self.columns.len()
    }

    /// The plans this one reads rows from (expression subqueries aside).
    pub fn inputs(&self) -> Vec<&Plan> {
        plan_inputs!(&self.kind, iter)
    }

    /// `inputs`, mutably.
    pub(crate) fn inputs_mut(&mut self) -> Vec<&mut Plan> {
        plan_inputs!(&mut self.kind, iter_mut, mut)
    }
}

pub fn computed_column(name: &str, ty: SqlType) -> OutputColumn {
    OutputColumn { name: name.to_string(), ty, table_oid: 0, attribute: 0 }
}
