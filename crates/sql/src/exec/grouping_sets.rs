//! Expand: the rows of GROUPING SETS, ROLLUP and CUBE. The Aggregate above groups by every
//! key and the set's number, so one hash table (which spills like any other) computes all
//! sets in one pass over the input, as Spark's Expand does; PostgreSQL instead sorts once
//! per rollup chain or keeps one hash table per set.
//!
//! Row layout (the input has `width` columns, there are `k` keys):
//!
//! | positions            | value                                                |
//! |----------------------|------------------------------------------------------|
//! | `0 .. width`         | the input row (NULL in an empty set's first row)     |
//! | `width .. width + k` | each key, NULL where the set does not group by it    |
//! | `width + k`          | the set's number (int4), which GROUPING() decodes    |
//! | `width + k + 1`      | true for input rows, false for an empty set's first row |

use super::{eval, run, Ctx, Sink};
use crate::error::Result;
use crate::plan::{Expr, Plan};
use crate::types::Datum;

/// Runs an Expand node: see the module comment.
pub(super) fn expand(
    input: &Plan,
    keys: &[Expr],
    sets: &[Vec<usize>],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let width = input.arity();
    // An empty set has one row even over no input (as an aggregate without GROUP BY): this
    // row makes its group exist; the aggregates' filters keep it out of every value.
    for (number, set) in sets.iter().enumerate() {
        if set.is_empty() {
            let mut row = vec![Datum::Null; width + keys.len()];
            row.push(set_number(number));
            row.push(Datum::Bool(false));
            if !sink(ctx, row)? {
                return Ok(false);
            }
        }
    }
    run(input, ctx, probe, &mut |ctx, row| {
        debug_assert_eq!(row.len(), width, "an input row has the input's width");
        let values = keys.iter().map(|key| eval(key, &row, ctx)).collect::<Result<Vec<_>>>()?;
        for (number, set) in sets.iter().enumerate() {
            let mut expanded = Vec::with_capacity(width + keys.len() + 2);
            expanded.extend_from_slice(&row);
            expanded.resize(width + keys.len(), Datum::Null);
            for &key in set {
                expanded[width + key] = values[key].clone();
            }
            expanded.push(set_number(number));
            expanded.push(Datum::Bool(true));
            if !sink(ctx, expanded)? {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// A set's number as the int4 datum GROUPING() decodes (at most `GROUPING_SETS_MAX` sets).
fn set_number(number: usize) -> Datum {
    assert!(number < crate::plan::GROUPING_SETS_MAX, "set numbers are bounded at bind time");
    Datum::Int(i64::try_from(number).expect("below GROUPING_SETS_MAX"))
}
