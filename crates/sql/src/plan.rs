//! Bound expressions and physical plans: what the binder produces and the executor runs.
//!
//! Expressions refer to input columns by position (`Column`), to enclosing rows of
//! correlated subqueries by depth (`Outer`), and to statement parameters by number.
//! Plans are trees of operators; every node has an id for EXPLAIN ANALYZE statistics.

use std::ops::Bound;
use std::sync::Arc;

use crate::catalog::TableMeta;
use crate::types::{Datum, SqlType};

/// An output column of a plan.
#[derive(Clone, Debug)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
    /// Source table OID and attribute number (RowDescription), 0 when computed.
    pub table_oid: u32,
    pub attribute: i16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithmeticOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Power,
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
}

#[derive(Clone, Debug)]
pub struct AggregateCall {
    pub function: AggregateFunction,
    pub args: Vec<Expr>,
    pub distinct: bool,
    /// Type of the argument (first), for sum/avg result rules.
    pub input: SqlType,
    pub output: SqlType,
}

/// A scalar function (by name, resolved at bind time to a known one).
#[derive(Clone, Debug)]
pub struct FunctionCall {
    pub name: String,
    pub args: Vec<Expr>,
    pub arg_types: Vec<SqlType>,
    pub output: SqlType,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Column(usize),
    Outer { depth: usize, index: usize },
    Literal(Datum),
    Parameter(usize),
    Arithmetic { op: ArithmeticOp, left: Box<Expr>, right: Box<Expr>, ty: SqlType },
    Negate { expr: Box<Expr>, ty: SqlType },
    Compare { op: CompareOp, left: Box<Expr>, right: Box<Expr>, bpchar: bool },
    Concat(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull { expr: Box<Expr>, negated: bool },
    IsBool { expr: Box<Expr>, value: bool, negated: bool },
    IsDistinct { left: Box<Expr>, right: Box<Expr>, negated: bool },
    Cast { expr: Box<Expr>, from: SqlType, to: SqlType, explicit: bool },
    Case { operand: Option<Box<Expr>>, branches: Vec<(Expr, Expr)>, otherwise: Option<Box<Expr>> },
    InList { expr: Box<Expr>, list: Vec<Expr>, negated: bool },
    InSubquery { expr: Box<Expr>, plan: Arc<Plan>, negated: bool, correlated: bool, id: usize },
    Exists { plan: Arc<Plan>, negated: bool, correlated: bool, id: usize },
    ScalarSubquery { plan: Arc<Plan>, correlated: bool, id: usize },
    Like { expr: Box<Expr>, pattern: Box<Expr>, negated: bool, case_insensitive: bool },
    Function(FunctionCall),
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
                call.args.iter().all(Expr::is_row_independent)
                    && !matches!(call.name.as_str(), "nextval" | "random")
            }
            _ => false,
        }
    }

    /// Column positions read by the expression (not inside subqueries).
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Column(index) => out.push(*index),
            Expr::Outer { .. } | Expr::Literal(_) | Expr::Parameter(_) => {}
            Expr::Arithmetic { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::Concat(left, right)
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinct { left, right, .. }
            | Expr::Like { expr: left, pattern: right, .. } => {
                left.columns(out);
                right.columns(out);
            }
            Expr::Negate { expr, .. }
            | Expr::Not(expr)
            | Expr::IsNull { expr, .. }
            | Expr::IsBool { expr, .. }
            | Expr::Cast { expr, .. }
            | Expr::InSubquery { expr, .. } => expr.columns(out),
            Expr::Case { operand, branches, otherwise } => {
                if let Some(operand) = operand {
                    operand.columns(out);
                }
                for (condition, result) in branches {
                    condition.columns(out);
                    result.columns(out);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.columns(out);
                }
            }
            Expr::InList { expr, list, .. } => {
                expr.columns(out);
                for item in list {
                    item.columns(out);
                }
            }
            Expr::Exists { .. } | Expr::ScalarSubquery { .. } => {}
            Expr::Function(call) => {
                for arg in &call.args {
                    arg.columns(out);
                }
            }
        }
    }

    /// Whether it contains a correlated subquery (which reads the current row).
    pub fn has_correlated_subquery(&self) -> bool {
        match self {
            Expr::InSubquery { correlated, expr, .. } => {
                *correlated || expr.has_correlated_subquery()
            }
            Expr::Exists { correlated, .. } | Expr::ScalarSubquery { correlated, .. } => {
                *correlated
            }
            Expr::Arithmetic { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::Concat(left, right)
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinct { left, right, .. }
            | Expr::Like { expr: left, pattern: right, .. } => {
                left.has_correlated_subquery() || right.has_correlated_subquery()
            }
            Expr::Negate { expr, .. }
            | Expr::Not(expr)
            | Expr::IsNull { expr, .. }
            | Expr::IsBool { expr, .. }
            | Expr::Cast { expr, .. } => expr.has_correlated_subquery(),
            Expr::Case { operand, branches, otherwise } => {
                operand.as_ref().is_some_and(|operand| operand.has_correlated_subquery())
                    || branches.iter().any(|(condition, result)| {
                        condition.has_correlated_subquery() || result.has_correlated_subquery()
                    })
                    || otherwise
                        .as_ref()
                        .is_some_and(|otherwise| otherwise.has_correlated_subquery())
            }
            Expr::InList { expr, list, .. } => {
                expr.has_correlated_subquery() || list.iter().any(Expr::has_correlated_subquery)
            }
            Expr::Function(call) => call.args.iter().any(Expr::has_correlated_subquery),
            _ => false,
        }
    }

    /// Shifts column references by `offset` (a predicate moved above a join's left side).
    pub fn shift_columns(&mut self, offset: isize) {
        self.map_columns(&mut |index| {
            index.checked_add_signed(offset).expect("column shift in range")
        });
    }

    pub fn map_columns(&mut self, map: &mut dyn FnMut(usize) -> usize) {
        match self {
            Expr::Column(index) => *index = map(*index),
            Expr::Outer { .. } | Expr::Literal(_) | Expr::Parameter(_) => {}
            Expr::Arithmetic { left, right, .. }
            | Expr::Compare { left, right, .. }
            | Expr::Concat(left, right)
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinct { left, right, .. }
            | Expr::Like { expr: left, pattern: right, .. } => {
                left.map_columns(map);
                right.map_columns(map);
            }
            Expr::Negate { expr, .. }
            | Expr::Not(expr)
            | Expr::IsNull { expr, .. }
            | Expr::IsBool { expr, .. }
            | Expr::Cast { expr, .. }
            | Expr::InSubquery { expr, .. } => expr.map_columns(map),
            Expr::Case { operand, branches, otherwise } => {
                if let Some(operand) = operand {
                    operand.map_columns(map);
                }
                for (condition, result) in branches {
                    condition.map_columns(map);
                    result.map_columns(map);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.map_columns(map);
                }
            }
            Expr::InList { expr, list, .. } => {
                expr.map_columns(map);
                for item in list {
                    item.map_columns(map);
                }
            }
            Expr::Exists { .. } | Expr::ScalarSubquery { .. } => {}
            Expr::Function(call) => {
                for arg in &mut call.args {
                    arg.map_columns(map);
                }
            }
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
}

#[derive(Clone, Debug)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug)]
pub enum PlanKind {
    /// One row of no columns (SELECT without FROM).
    OneRow,
    Values {
        rows: Vec<Vec<Expr>>,
    },
    Scan {
        table: Arc<TableMeta>,
        access: Access,
        filter: Option<Expr>,
        /// Append the row's engine key as a last (bytea) column, for UPDATE and DELETE.
        emit_key: bool,
        /// Read backwards (ORDER BY the key DESC).
        backward: bool,
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
    Filter {
        input: Box<Plan>,
        predicate: Expr,
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
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: PlanKind,
    pub columns: Vec<OutputColumn>,
    /// Node id, unique in its statement (EXPLAIN ANALYZE statistics).
    pub id: usize,
}

impl Plan {
    pub fn arity(&self) -> usize {
        self.columns.len()
    }
}
