//! Aggregation: accumulators per aggregate call, grouped by key; hash aggregation that
//! spills, and sorted aggregation for DISTINCT aggregates.

use tierdb_access::{ExternalSort, SortRecord};

use super::aggregate_stats::{FloatMoments, NumericMoments, RegressionSums};
use super::ordered_set::SortedValues;
use super::spill::{decode_row, encode_row, storage_error, GroupKeySet, SpillTarget};
use super::*;

pub(crate) fn group_key(row: &[Datum]) -> Vec<u8> {
    let mut key = Vec::new();
    for datum in row {
        datum.group_key(&mut key);
    }
    key
}

/// `group_key` of the values of `exprs` over `row`, written into `out` (cleared first), so
/// that a hash operator reuses one buffer instead of allocating a key per row; a column is
/// encoded in place, not copied out of the row. Returns whether every value was non-NULL
/// (a NULL join key matches nothing).
pub(crate) fn encode_keys(
    exprs: &[Expr],
    row: &[Datum],
    ctx: &mut Ctx<'_>,
    out: &mut Vec<u8>,
) -> Result<bool> {
    out.clear();
    let mut all_present = true;
    for expr in exprs {
        if let Expr::Column(index) = expr {
            let datum = &row[*index];
            all_present &= !datum.is_null();
            datum.group_key(out);
        } else {
            let datum = eval(expr, row, ctx)?;
            all_present &= !datum.is_null();
            datum.group_key(out);
        }
    }
    Ok(all_present)
}

/// Running state of one aggregate in one group.
#[derive(Clone)]
pub(crate) enum Accumulator {
    Count(i64),
    SumInt(i128, bool),
    SumDecimal(Decimal, bool),
    SumFloat(f64, bool),
    AvgDecimal(Decimal, i64),
    AvgFloat(f64, i64),
    Extreme(Option<Datum>),
    Bool(Option<bool>),
    Strings(Option<String>),
    /// array_agg: the values so far (NULLs too).
    Elements(Option<Vec<Datum>>),
    /// json_agg and json_object_agg: each value's json text, with its key (json_agg: none).
    Json(Option<Vec<(Option<String>, String)>>),
    /// jsonb_agg and jsonb_object_agg: each value, with its key.
    Jsonb(Option<Vec<(Option<String>, types::Jsonb)>>),
    /// pgvector's sum(vector): float sums.
    VectorSum(Option<Vec<f32>>),
    /// pgvector's avg(vector): double sums and the count.
    VectorAverage(Option<Vec<f64>>, i64),
    /// pgvector's sum(halfvec): half sums (`halfvec_add`).
    HalfVecSum(Option<Vec<types::f16>>),
    /// pgvector's avg(halfvec): double sums and the count, as for vector.
    HalfVecAverage(Option<Vec<f64>>, i64),
    /// sum(interval) and avg(interval): the field-wise sum and the count.
    IntervalSum(types::Interval, i64),
    /// variance and stddev of integers and numeric (boxed: two decimals and a count).
    NumericMoments(Box<NumericMoments>),
    /// variance and stddev of float4 and float8.
    FloatMoments(FloatMoments),
    /// corr, covar_* and regr_* (boxed: six floats).
    Regression(Box<RegressionSums>),
    /// bit_and, bit_or, bit_xor: the bits so far.
    Bits(Option<i64>),
    /// percentile_cont, percentile_disc, mode: the values in the WITHIN GROUP order.
    Sorted(Box<SortedValues>),
}

pub(crate) fn accumulator(call: &AggregateCall) -> Accumulator {
    match call.function {
        AggregateFunction::CountStar | AggregateFunction::Count => Accumulator::Count(0),
        AggregateFunction::Sum | AggregateFunction::Avg if call.input == SqlType::Interval => {
            Accumulator::IntervalSum(types::Interval::default(), 0)
        }
        AggregateFunction::Sum => match call.input {
            SqlType::Vector(_) => Accumulator::VectorSum(None),
            SqlType::HalfVec(_) => Accumulator::HalfVecSum(None),
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Accumulator::SumInt(0, false),
            SqlType::Float4 | SqlType::Float8 => Accumulator::SumFloat(0.0, false),
            _ => Accumulator::SumDecimal(Decimal::ZERO, false),
        },
        AggregateFunction::Avg => match call.input {
            SqlType::Vector(_) => Accumulator::VectorAverage(None, 0),
            SqlType::HalfVec(_) => Accumulator::HalfVecAverage(None, 0),
            SqlType::Float4 | SqlType::Float8 => Accumulator::AvgFloat(0.0, 0),
            _ => Accumulator::AvgDecimal(Decimal::ZERO, 0),
        },
        AggregateFunction::Min | AggregateFunction::Max => Accumulator::Extreme(None),
        AggregateFunction::BoolAnd | AggregateFunction::BoolOr => Accumulator::Bool(None),
        AggregateFunction::StringAgg => Accumulator::Strings(None),
        AggregateFunction::ArrayAgg => Accumulator::Elements(None),
        AggregateFunction::JsonAgg { binary: false, .. }
        | AggregateFunction::JsonObjectAgg { binary: false } => Accumulator::Json(None),
        AggregateFunction::JsonAgg { binary: true, .. }
        | AggregateFunction::JsonObjectAgg { binary: true } => Accumulator::Jsonb(None),
        AggregateFunction::Variance { .. } => match call.input {
            SqlType::Float4 | SqlType::Float8 => Accumulator::FloatMoments(FloatMoments::default()),
            _ => Accumulator::NumericMoments(Box::default()),
        },
        AggregateFunction::Regression(_) => Accumulator::Regression(Box::default()),
        AggregateFunction::Bitwise(_) => Accumulator::Bits(None),
        AggregateFunction::OrderedSet(_) => Accumulator::Sorted(Box::default()),
    }
}

pub(crate) fn accumulate(
    state: &mut Accumulator,
    call: &AggregateCall,
    args: &[Datum],
) -> Result<()> {
    if call.function == AggregateFunction::CountStar {
        if let Accumulator::Count(count) = state {
            *count += 1;
        }
        return Ok(());
    }
    if matches!(state, Accumulator::Json(_) | Accumulator::Jsonb(_)) {
        return accumulate_json(state, call, args);
    }
    if let Accumulator::Regression(sums) = state {
        // Strict in both arguments: a row with either NULL is skipped.
        return match (args[0].as_f64(), args[1].as_f64()) {
            (Some(y), Some(x)) if !args[0].is_null() && !args[1].is_null() => sums.add(y, x),
            _ => Ok(()),
        };
    }
    let value = &args[0];
    if let Accumulator::Elements(elements) = state {
        let elements = elements.get_or_insert_with(Vec::new);
        if elements.len() >= types::ARRAY_ELEMENTS_MAX {
            return Err(types::array_too_large());
        }
        elements.push(value.clone());
        return Ok(());
    }
    if value.is_null() {
        return Ok(());
    }
    match state {
        Accumulator::Count(count) => *count += 1,
        Accumulator::SumInt(sum, any) => {
            *sum += i128::from(value.as_int().unwrap_or(0));
            *any = true;
        }
        Accumulator::SumDecimal(sum, any) => {
            *sum = sum
                .checked_add(value.as_decimal().unwrap_or_default())
                .ok_or_else(|| SqlError::out_of_range("numeric"))?;
            *any = true;
        }
        Accumulator::SumFloat(sum, any) => {
            *sum += value.as_f64().unwrap_or(0.0);
            *any = true;
        }
        Accumulator::AvgDecimal(sum, count) => {
            *sum = sum
                .checked_add(value.as_decimal().unwrap_or_default())
                .ok_or_else(|| SqlError::out_of_range("numeric"))?;
            *count += 1;
        }
        Accumulator::AvgFloat(sum, count) => {
            *sum += value.as_f64().unwrap_or(0.0);
            *count += 1;
        }
        Accumulator::VectorSum(sums) => {
            types::vector_sum_step(sums, types::vector_elements(value)?)?
        }
        Accumulator::VectorAverage(sums, count) => {
            types::vector_average_step(sums, types::vector_elements(value)?)?;
            *count += 1;
        }
        Accumulator::HalfVecSum(sums) => {
            types::halfvec_sum_step(sums, types::halfvec_elements(value)?)?
        }
        Accumulator::HalfVecAverage(sums, count) => {
            let widened = types::halves_to_floats(types::halfvec_elements(value)?);
            types::vector_average_step(sums, &widened)?;
            *count += 1;
        }
        Accumulator::IntervalSum(sum, count) => {
            if let Datum::Interval(interval) = value {
                *sum = sum.checked_add(interval)?;
                *count += 1;
            }
        }
        Accumulator::Extreme(best) => accumulate_extreme(best, call, value),
        Accumulator::Bool(current) => {
            let flag = value.as_bool().unwrap_or(false);
            *current = Some(match (*current, call.function) {
                (None, _) => flag,
                (Some(previous), AggregateFunction::BoolAnd) => previous && flag,
                (Some(previous), _) => previous || flag,
            });
        }
        Accumulator::Elements(_) => unreachable!("array_agg is folded in above"),
        Accumulator::Strings(current) => {
            let text = value.as_text().unwrap_or("").to_string();
            match current {
                None => *current = Some(text),
                Some(existing) => {
                    let separator = args.get(1).and_then(Datum::as_text).unwrap_or("");
                    functions::check_text_bytes(
                        existing.len().saturating_add(separator.len()).saturating_add(text.len()),
                    )?;
                    existing.push_str(separator);
                    existing.push_str(&text);
                }
            }
        }
        Accumulator::Json(_) | Accumulator::Jsonb(_) => accumulate_json(state, call, args)?,
        Accumulator::Sorted(values) => values.add(args)?,
        Accumulator::NumericMoments(_)
        | Accumulator::FloatMoments(_)
        | Accumulator::Regression(_)
        | Accumulator::Bits(_) => accumulate_statistic(state, call, value)?,
    }
    Ok(())
}

/// min / max: `value` replaces the best so far when it is smaller (larger).
fn accumulate_extreme(best: &mut Option<Datum>, call: &AggregateCall, value: &Datum) {
    let replace = match best {
        None => true,
        Some(current) => {
            let ordering = value.compare(current).unwrap_or(Ordering::Equal);
            // interval_smaller / interval_larger keep the later of equal values
            // ('1 mon' and '30 days' are equal but print differently).
            if ordering.is_eq() && matches!(value, Datum::Interval(_)) {
                true
            } else if call.function == AggregateFunction::Min {
                ordering.is_lt()
            } else {
                ordering.is_gt()
            }
        }
    };
    if replace {
        *best = Some(value.clone());
    }
}

/// One non-NULL value of variance, stddev or a bitwise aggregate.
fn accumulate_statistic(
    state: &mut Accumulator,
    call: &AggregateCall,
    value: &Datum,
) -> Result<()> {
    match state {
        Accumulator::NumericMoments(moments) => {
            let AggregateFunction::Variance { sample, root } = call.function else {
                return Err(SqlError::internal("a variance's moments"));
            };
            let number = value.as_decimal().ok_or_else(|| SqlError::internal("a numeric"))?;
            moments.add(number, variance_name(sample, root))?;
        }
        Accumulator::FloatMoments(moments) => {
            moments.add(value.as_f64().ok_or_else(|| SqlError::internal("a float"))?)?
        }
        Accumulator::Bits(bits) => {
            let number = value.as_int().ok_or_else(|| SqlError::internal("an integer"))?;
            *bits = Some(match (*bits, call.function) {
                (None, _) => number,
                (Some(previous), AggregateFunction::Bitwise(BitOperation::And)) => {
                    previous & number
                }
                (Some(previous), AggregateFunction::Bitwise(BitOperation::Or)) => previous | number,
                (Some(previous), _) => previous ^ number,
            });
        }
        _ => return Err(SqlError::internal("a statistical aggregate's state")),
    }
    Ok(())
}

/// One row of a json aggregate: NULL values are json nulls (an object's NULL key an error).
fn accumulate_json(state: &mut Accumulator, call: &AggregateCall, args: &[Datum]) -> Result<()> {
    let (key, value) = match call.function {
        AggregateFunction::JsonObjectAgg { .. } => {
            let Some(key) = args[0].as_text() else {
                return Err(SqlError::new("22023", "field name must not be null"));
            };
            (Some(key.to_string()), &args[1])
        }
        _ => (None, &args[0]),
    };
    match state {
        Accumulator::Json(items) => {
            let text = value.as_text().unwrap_or("null").to_string();
            items.get_or_insert_with(Vec::new).push((key, text));
        }
        Accumulator::Jsonb(items) => {
            let value = match value {
                Datum::Jsonb(value) => (**value).clone(),
                _ => types::Jsonb::Null,
            };
            items.get_or_insert_with(Vec::new).push((key, value));
        }
        _ => return Err(SqlError::internal("a json aggregate's accumulator")),
    }
    Ok(())
}

/// A json aggregate's result: `[1, 2]`, `{ "a" : 1, "b" : 2 }`, or the jsonb value.
fn finish_json(state: &Accumulator, call: &AggregateCall) -> Datum {
    let object = matches!(call.function, AggregateFunction::JsonObjectAgg { .. });
    match state {
        Accumulator::Json(Some(items)) if object => {
            let pairs: Vec<String> = items
                .iter()
                .map(|(key, value)| {
                    let mut pair = String::new();
                    types::escape_json(key.as_deref().unwrap_or_default(), &mut pair);
                    format!("{pair} : {value}")
                })
                .collect();
            Datum::Text(format!("{{ {} }}", pairs.join(", ")))
        }
        Accumulator::Json(Some(items)) => {
            let structured =
                matches!(call.function, AggregateFunction::JsonAgg { structured: true, .. });
            let mut out = String::from("[");
            for (index, (_, value)) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                    // json_agg_transfn: a new line before a structured value, not a NULL.
                    if structured && value != "null" {
                        out.push_str("\n ");
                    }
                }
                out.push_str(value);
            }
            out.push(']');
            Datum::Text(out)
        }
        Accumulator::Jsonb(Some(items)) if object => {
            let pairs =
                items.iter().map(|(key, value)| (key.clone().unwrap_or_default(), value.clone()));
            Datum::Jsonb(std::sync::Arc::new(types::Jsonb::object(pairs.collect())))
        }
        Accumulator::Jsonb(Some(items)) => {
            let values = items.iter().map(|(_, value)| value.clone()).collect();
            Datum::Jsonb(std::sync::Arc::new(types::Jsonb::Array(values)))
        }
        _ => Datum::Null,
    }
}

pub(crate) fn finish(state: &Accumulator, call: &AggregateCall) -> Result<Datum> {
    Ok(match state {
        Accumulator::Count(count) => Datum::Int(*count),
        Accumulator::SumInt(sum, any) => {
            if !*any {
                Datum::Null
            } else if call.output == SqlType::Int8 {
                Datum::Int(i64::try_from(*sum).map_err(|_| SqlError::out_of_range("bigint"))?)
            } else {
                Datum::Numeric(Decimal::from_i128_with_scale(*sum, 0))
            }
        }
        Accumulator::SumDecimal(sum, any) => {
            if *any {
                Datum::Numeric(*sum)
            } else {
                Datum::Null
            }
        }
        Accumulator::SumFloat(sum, any) => {
            if *any {
                Datum::Float(*sum)
            } else {
                Datum::Null
            }
        }
        Accumulator::AvgDecimal(sum, count) => {
            if *count == 0 {
                Datum::Null
            } else {
                Datum::Numeric(types::numeric_divide(*sum, Decimal::from(*count))?)
            }
        }
        Accumulator::AvgFloat(sum, count) => {
            if *count == 0 {
                Datum::Null
            } else {
                Datum::Float(sum / count.to_f64().unwrap_or(1.0))
            }
        }
        Accumulator::Extreme(best) => best.clone().unwrap_or(Datum::Null),
        Accumulator::Bool(value) => value.map_or(Datum::Null, Datum::Bool),
        Accumulator::Strings(value) => value.clone().map_or(Datum::Null, Datum::Text),
        Accumulator::Elements(elements) => elements.clone().map_or(Datum::Null, types::array_datum),
        Accumulator::Json(_) | Accumulator::Jsonb(_) => finish_json(state, call),
        Accumulator::VectorSum(sums) => {
            sums.as_ref().map_or(Datum::Null, |sums| Datum::Vector(sums.as_slice().into()))
        }
        Accumulator::VectorAverage(sums, count) => match sums {
            Some(sums) => types::vector_average_finish(sums, *count)?,
            None => Datum::Null,
        },
        Accumulator::HalfVecSum(sums) => {
            sums.as_ref().map_or(Datum::Null, |sums| Datum::HalfVec(sums.as_slice().into()))
        }
        Accumulator::HalfVecAverage(sums, count) => match sums {
            Some(sums) => types::halfvec_average_finish(sums, *count)?,
            None => Datum::Null,
        },
        Accumulator::IntervalSum(_, 0) => Datum::Null,
        Accumulator::IntervalSum(sum, count) if call.function == AggregateFunction::Avg => {
            Datum::Interval(sum.divide(count.to_f64().unwrap_or(1.0))?)
        }
        Accumulator::IntervalSum(sum, _) => Datum::Interval(*sum),
        Accumulator::NumericMoments(moments) => match call.function {
            AggregateFunction::Variance { sample, root } => {
                moments.finish(sample, root, variance_name(sample, root))?
            }
            _ => return Err(SqlError::internal("a variance's moments")),
        },
        Accumulator::FloatMoments(moments) => match call.function {
            AggregateFunction::Variance { sample, root } => moments.finish(sample, root),
            _ => return Err(SqlError::internal("a variance's moments")),
        },
        Accumulator::Regression(sums) => match call.function {
            AggregateFunction::Regression(result) => sums.finish(result),
            _ => return Err(SqlError::internal("a regression's sums")),
        },
        Accumulator::Bits(bits) => bits.map_or(Datum::Null, Datum::Int),
        Accumulator::Sorted(values) => match call.function {
            AggregateFunction::OrderedSet(kind) => values.finish(kind)?,
            _ => return Err(SqlError::internal("sorted values of an ordered-set aggregate")),
        },
    })
}

/// One group: its key values and each aggregate's running state.
pub(crate) struct Group {
    keys: Row,
    states: Vec<Accumulator>,
    /// The values each DISTINCT aggregate has seen (None for the others).
    distinct: Vec<Option<DistinctFilter>>,
    /// Each ordered aggregate's input as (sort keys, arguments), folded in at the end in
    /// the call's order (None for the others).
    ordered: Vec<Option<Vec<(Row, Row)>>>,
}

impl Group {
    fn new(keys: Row, aggregates: &[AggregateCall], ctx: &Ctx<'_>) -> Group {
        // A DISTINCT aggregate with an order keeps its input in the ordered buffer and drops
        // repeated values when it folds them in (`finish`).
        let distinct = aggregates
            .iter()
            .map(|call| (call.distinct && call.order.is_empty()).then(|| DistinctFilter::new(ctx)))
            .collect();
        let ordered =
            aggregates.iter().map(|call| (!call.order.is_empty()).then(Vec::new)).collect();
        Group { keys, states: aggregates.iter().map(accumulator).collect(), distinct, ordered }
    }

    /// Folds one input row in (a DISTINCT aggregate's value only the first time).
    fn add(&mut self, aggregates: &[AggregateCall], row: &Row, ctx: &mut Ctx<'_>) -> Result<()> {
        for (index, call) in aggregates.iter().enumerate() {
            if let Some(filter) = &call.filter {
                if !matches!(eval(filter, row, ctx)?, Datum::Bool(true)) {
                    continue;
                }
            }
            let state = &mut self.states[index];
            if let Some(buffer) = &mut self.ordered[index] {
                let keys = call
                    .order
                    .iter()
                    .map(|key| eval(&key.expr, row, ctx))
                    .collect::<Result<Row>>()?;
                let args =
                    call.args.iter().map(|expr| eval(expr, row, ctx)).collect::<Result<Row>>()?;
                buffer.push((keys, args));
                continue;
            }
            let Some(filter) = &mut self.distinct[index] else {
                // No argument or one (count(*), sum(x)): no vector per input row.
                match call.args.as_slice() {
                    [] => accumulate(state, call, &[])?,
                    [only] => accumulate(state, call, &[eval(only, row, ctx)?])?,
                    args => {
                        let args = args
                            .iter()
                            .map(|expr| eval(expr, row, ctx))
                            .collect::<Result<Row>>()?;
                        accumulate(state, call, &args)?;
                    }
                }
                continue;
            };
            let args =
                call.args.iter().map(|expr| eval(expr, row, ctx)).collect::<Result<Row>>()?;
            if args.first().is_some_and(Datum::is_null) {
                continue;
            }
            if let Some(args) = filter.offer(args)? {
                accumulate(state, call, &args)?;
            }
        }
        Ok(())
    }

    /// The output row: keys, then each aggregate's result.
    fn finish(mut self, aggregates: &[AggregateCall]) -> Result<Row> {
        for (index, call) in aggregates.iter().enumerate() {
            if let Some(mut buffer) = self.ordered[index].take() {
                buffer.sort_by(|(a, _), (b, _)| compare_order_keys(&call.order, a, b));
                let mut seen = std::collections::HashSet::new();
                for (_, args) in buffer {
                    if call.distinct && !seen.insert(group_key(&args)) {
                        continue;
                    }
                    accumulate(&mut self.states[index], call, &args)?;
                }
            }
            if let Some(filter) = self.distinct[index].take() {
                let state = &mut self.states[index];
                filter.drain(&mut |args| accumulate(state, call, &args))?;
            }
        }
        let mut row = self.keys;
        for (state, call) in self.states.iter().zip(aggregates) {
            row.push(finish(state, call)?);
        }
        Ok(row)
    }
}

/// GROUP BY and aggregates. Without GROUP BY: one group. With it: hash aggregation that
/// spills (`hash.rs`), or, when an aggregate is DISTINCT, sorted by group so that one
/// group's DISTINCT values are held at a time (PostgreSQL sorts for these too).
#[allow(clippy::too_many_arguments)]
pub(crate) fn aggregate(
    input: &Plan,
    groups: &[Expr],
    aggregates: &[AggregateCall],
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    if groups.is_empty() {
        let mut group = Group::new(Vec::new(), aggregates, ctx);
        run(input, ctx, probe, &mut |ctx, row| group.add(aggregates, &row, ctx).map(|()| true))?;
        let row = group.finish(aggregates)?;
        return sink(ctx, row);
    }
    if aggregates.iter().any(|call| call.distinct || !call.order.is_empty()) {
        return sorted_aggregate(input, groups, aggregates, plan_id, ctx, probe, sink);
    }
    let mut op = AggregateOp { groups, aggregates };
    let mut stats = HashStats::default();
    let mut feed = |ctx: &mut Ctx<'_>, each: &mut Sink<'_>| run(input, ctx, probe, each);
    let outcome = run_hash(&mut op, 0, &mut stats, ctx, &mut feed, sink);
    record_memory(ctx, plan_id, stats.memory());
    outcome
}

/// Hash aggregation's groups for `run_hash`.
struct AggregateOp<'p> {
    groups: &'p [Expr],
    aggregates: &'p [AggregateCall],
}

impl AggregateOp<'_> {
    fn group_values(&self, ctx: &mut Ctx<'_>, row: &Row) -> Result<Row> {
        self.groups.iter().map(|expr| eval(expr, row, ctx)).collect()
    }
}

impl HashOp for AggregateOp<'_> {
    type State = Group;
    fn key(&mut self, ctx: &mut Ctx<'_>, row: &Row, out: &mut Vec<u8>) -> Result<()> {
        encode_keys(self.groups, row, ctx, out).map(|_| ())
    }
    fn group_bytes(&self, key: &[u8], _: &Row) -> usize {
        // The group's values take about what their encoding does.
        key.len() + self.groups.len() * DATUM_BYTES + self.aggregates.len() * ACCUMULATOR_BYTES
    }
    fn first(&mut self, ctx: &mut Ctx<'_>, row: Row, _: &mut Sink<'_>) -> Result<(Group, bool)> {
        // Evaluated again, once per group: cheaper than keeping every row's values.
        let keys = self.group_values(ctx, &row)?;
        let mut group = Group::new(keys, self.aggregates, ctx);
        group.add(self.aggregates, &row, ctx)?;
        Ok((group, true))
    }
    fn next(&mut self, ctx: &mut Ctx<'_>, group: &mut Group, row: Row) -> Result<usize> {
        group.add(self.aggregates, &row, ctx)?;
        Ok(0)
    }
    fn finish(&mut self, ctx: &mut Ctx<'_>, group: Group, sink: &mut Sink<'_>) -> Result<bool> {
        let row = group.finish(self.aggregates)?;
        sink(ctx, row)
    }
}

/// The order of an aggregate's ORDER BY keys (a stable sort keeps input order for ties).
fn compare_order_keys(order: &[AggregateOrder], a: &[Datum], b: &[Datum]) -> Ordering {
    for ((key, left), right) in order.iter().zip(a).zip(b) {
        // NULLs go where nulls_first says whatever the direction.
        let ordering = match (left.is_null(), right.is_null(), key.descending) {
            (false, false, true) => right.sort_compare(left, key.nulls_first),
            _ => left.sort_compare(right, key.nulls_first),
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Bytes of one value in a row, besides what it points to.
const DATUM_BYTES: usize = std::mem::size_of::<Datum>();

/// Bytes of one aggregate's running state (an `Accumulator`).
const ACCUMULATOR_BYTES: usize = 48;

/// Aggregates with DISTINCT under GROUP BY: the input sorted by group key (externally past
/// work_mem), then one group at a time.
#[allow(clippy::too_many_arguments)]
fn sorted_aggregate(
    input: &Plan,
    groups: &[Expr],
    aggregates: &[AggregateCall],
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let target = SpillTarget::of(ctx);
    let grant = target.grant(ctx.budget.work_mem_bytes);
    let mut sort = ExternalSort::new(&target.space, &target.usage, grant, KeyedRow::compare);
    run(input, ctx, probe, &mut |ctx, row| {
        let keys = groups.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
        let key = group_key(&keys);
        sort.push(KeyedRow { key, flag: 0, row }).map_err(storage_error)?;
        Ok(true)
    })?;
    let mut sorted = sort.finish().map_err(storage_error)?;
    record_memory(ctx, plan_id, sort_memory(sorted.stats()));
    let mut current: Option<(Vec<u8>, Group)> = None;
    while let Some(KeyedRow { key, row, .. }) = sorted.next_record().map_err(storage_error)? {
        if current.as_ref().is_none_or(|(current_key, _)| *current_key != key) {
            if let Some((_, group)) = current.take() {
                if !sink(ctx, group.finish(aggregates)?)? {
                    return Ok(false);
                }
            }
            let keys = groups.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
            current = Some((key, Group::new(keys, aggregates, ctx)));
        }
        let (_, group) = current.as_mut().expect("set above");
        group.add(aggregates, &row, ctx)?;
    }
    match current {
        Some((_, group)) => sink(ctx, group.finish(aggregates)?),
        None => Ok(true),
    }
}

/// The order of `KeyedRow`s as a function pointer (a type that can be named).
type KeyedCompare = fn(&KeyedRow, &KeyedRow) -> Ordering;

/// A row with a key to sort by, and a flag that orders equal keys.
pub(crate) struct KeyedRow {
    pub key: Vec<u8>,
    pub flag: u8,
    pub row: Row,
}

impl KeyedRow {
    pub fn compare(a: &KeyedRow, b: &KeyedRow) -> Ordering {
        a.key.cmp(&b.key).then(a.flag.cmp(&b.flag))
    }
}

impl SortRecord for KeyedRow {
    fn encode(&self, out: &mut Vec<u8>) {
        let key_bytes = u32::try_from(self.key.len()).expect("keys are at most 1 GB");
        out.extend_from_slice(&key_bytes.to_le_bytes());
        out.extend_from_slice(&self.key);
        out.push(self.flag);
        encode_row(&self.row, out);
    }
    fn decode(bytes: &[u8]) -> std::result::Result<KeyedRow, String> {
        let header: [u8; 4] =
            bytes.get(..4).and_then(|b| b.try_into().ok()).ok_or("short keyed row")?;
        let key_bytes = usize::try_from(u32::from_le_bytes(header)).map_err(|e| e.to_string())?;
        let key = bytes.get(4..4 + key_bytes).ok_or("key past the record's end")?.to_vec();
        let flag = *bytes.get(4 + key_bytes).ok_or("no flag")?;
        let row = decode_row(&bytes[5 + key_bytes..])?;
        Ok(KeyedRow { key, flag, row })
    }
    fn memory_bytes(&self) -> usize {
        self.key.len() + row_size(&self.row)
    }
}

/// The values one DISTINCT aggregate of one group has seen: a hash set while it fits
/// work_mem; past it, an external sort of (value, flag) records: flag 0 for a value
/// already folded in, 1 for one to fold in at the end unless a 0 or an earlier 1 has it.
pub(crate) struct DistinctFilter {
    seen: GroupKeySet,
    /// The current value's key (one buffer for every value: a key is copied only when it
    /// is new).
    key: Vec<u8>,
    target: SpillTarget,
    /// Memory of `seen` while it is in memory; then the sort's.
    grant: tierdb_storage::MemoryGrant,
    spill: Option<ExternalSort<KeyedRow, KeyedCompare>>,
}

impl DistinctFilter {
    fn new(ctx: &Ctx<'_>) -> DistinctFilter {
        let target = SpillTarget::of(ctx);
        let grant = target.grant(ctx.budget.hash_mem_bytes);
        DistinctFilter { seen: GroupKeySet::default(), key: Vec::new(), target, grant, spill: None }
    }

    /// `Some(args)` when the value is new and fits: fold it in now.
    fn offer(&mut self, args: Row) -> Result<Option<Row>> {
        self.key.clear();
        for datum in &args {
            datum.group_key(&mut self.key);
        }
        if let Some(sort) = &mut self.spill {
            let key = self.key.clone();
            sort.push(KeyedRow { key, flag: 1, row: args }).map_err(storage_error)?;
            return Ok(None);
        }
        if self.seen.contains(self.key.as_slice()) {
            return Ok(None);
        }
        if self.grant.try_grow(self.key.len() + 48) {
            self.seen.insert(self.key.as_slice().into());
            return Ok(Some(args));
        }
        // The sort takes over the memory the set held.
        self.grant.reset();
        let grant = std::mem::replace(&mut self.grant, self.target.grant(0));
        let compare: KeyedCompare = KeyedRow::compare;
        let mut sort = ExternalSort::new(&self.target.space, &self.target.usage, grant, compare);
        for seen in std::mem::take(&mut self.seen) {
            let key = seen.as_slice().to_vec();
            sort.push(KeyedRow { key, flag: 0, row: Vec::new() }).map_err(storage_error)?;
        }
        let key = self.key.clone();
        sort.push(KeyedRow { key, flag: 1, row: args }).map_err(storage_error)?;
        self.spill = Some(sort);
        Ok(None)
    }

    /// Calls `fold` with each value kept for the end.
    fn drain(self, fold: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let Some(sort) = self.spill else {
            return Ok(());
        };
        let mut sorted = sort.finish().map_err(storage_error)?;
        let mut previous: Option<Vec<u8>> = None;
        while let Some(record) = sorted.next_record().map_err(storage_error)? {
            if previous.as_ref() == Some(&record.key) {
                continue;
            }
            if record.flag == 1 {
                fold(record.row)?;
            }
            previous = Some(record.key);
        }
        Ok(())
    }
}
