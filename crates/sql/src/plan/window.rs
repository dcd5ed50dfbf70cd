//! Window functions: the calls a Window node computes over its sorted input.
//!
//! A Window node's input is sorted by the window's PARTITION BY then ORDER BY columns; its
//! output is the input row followed by one value per call. All calls of one node share the
//! window (partition, order and frame); a query with several windows stacks one node per
//! window, each over its own sort.

use super::{AggregateCall, Expr, SortKey};
use crate::types::SqlType;

/// One window function call.
#[derive(Clone, Debug)]
pub struct WindowCall {
    pub function: WindowFunction,
    /// Arguments over the node's input row (for aggregates: in `AggregateCall::args`).
    pub args: Vec<Expr>,
    pub output: SqlType,
}

#[derive(Clone, Debug)]
pub enum WindowFunction {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame (count, sum, avg, min, max, bool_and, bool_or, ...).
    Aggregate(AggregateCall),
}

impl WindowFunction {
    /// The function's name, for EXPLAIN.
    pub fn name(&self) -> String {
        match self {
            WindowFunction::RowNumber => "row_number".into(),
            WindowFunction::Rank => "rank".into(),
            WindowFunction::DenseRank => "dense_rank".into(),
            WindowFunction::PercentRank => "percent_rank".into(),
            WindowFunction::CumeDist => "cume_dist".into(),
            WindowFunction::Ntile => "ntile".into(),
            WindowFunction::Lag => "lag".into(),
            WindowFunction::Lead => "lead".into(),
            WindowFunction::FirstValue => "first_value".into(),
            WindowFunction::LastValue => "last_value".into(),
            WindowFunction::NthValue => "nth_value".into(),
            WindowFunction::Aggregate(call) => format!("{:?}", call.function).to_lowercase(),
        }
    }
}

/// One end of a frame. An offset is an expression without columns (a constant or a
/// parameter), evaluated once per partition: a bigint for ROWS and GROUPS, the in_range
/// offset type of the ORDER BY column for RANGE (bind/window_frame.rs).
#[derive(Clone, Debug)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

/// How a frame's offsets count: rows, ORDER BY values (peers together), or peer groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// `EXCLUDE ...`: rows of the frame left out around the current row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameExclusion {
    NoOthers,
    CurrentRow,
    /// The current row and its peers.
    Group,
    /// The current row's peers, not the row itself.
    Ties,
}

/// The rows an aggregate, first_value, last_value or nth_value sees for each row.
#[derive(Clone, Debug)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
    pub exclusion: FrameExclusion,
}

impl WindowFrame {
    /// PostgreSQL's default: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
    pub const DEFAULT: WindowFrame = WindowFrame {
        units: FrameUnits::Range,
        start: FrameBound::UnboundedPreceding,
        end: FrameBound::CurrentRow,
        exclusion: FrameExclusion::NoOthers,
    };
}

/// The window of a Window node: columns of its input.
#[derive(Clone, Debug)]
pub struct WindowSpec {
    pub partition: Vec<usize>,
    pub order: Vec<SortKey>,
    pub frame: WindowFrame,
}
