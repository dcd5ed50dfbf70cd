//! Aggregation: accumulators per aggregate call, grouped by key.

use super::*;

pub(crate) fn group_key(row: &[Datum]) -> Vec<u8> {
    let mut key = Vec::new();
    for datum in row {
        datum.group_key(&mut key);
    }
    key
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
}

pub(crate) fn accumulator(call: &AggregateCall) -> Accumulator {
    match call.function {
        AggregateFunction::CountStar | AggregateFunction::Count => Accumulator::Count(0),
        AggregateFunction::Sum => match call.input {
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Accumulator::SumInt(0, false),
            SqlType::Float4 | SqlType::Float8 => Accumulator::SumFloat(0.0, false),
            _ => Accumulator::SumDecimal(Decimal::ZERO, false),
        },
        AggregateFunction::Avg => match call.input {
            SqlType::Float4 | SqlType::Float8 => Accumulator::AvgFloat(0.0, 0),
            _ => Accumulator::AvgDecimal(Decimal::ZERO, 0),
        },
        AggregateFunction::Min | AggregateFunction::Max => Accumulator::Extreme(None),
        AggregateFunction::BoolAnd | AggregateFunction::BoolOr => Accumulator::Bool(None),
        AggregateFunction::StringAgg => Accumulator::Strings(None),
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
    let value = &args[0];
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
        Accumulator::Extreme(best) => {
            let replace = match best {
                None => true,
                Some(current) => {
                    let ordering = value.compare(current).unwrap_or(Ordering::Equal);
                    if call.function == AggregateFunction::Min {
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
        Accumulator::Bool(current) => {
            let flag = value.as_bool().unwrap_or(false);
            *current = Some(match (*current, call.function) {
                (None, _) => flag,
                (Some(previous), AggregateFunction::BoolAnd) => previous && flag,
                (Some(previous), _) => previous || flag,
            });
        }
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
    }
    Ok(())
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
    })
}

pub(crate) struct Group {
    keys: Row,
    states: Vec<Accumulator>,
    distinct_seen: Vec<HashSet<Vec<u8>>>,
}

pub(crate) fn aggregate(
    input: &Plan,
    groups: &[Expr],
    aggregates: &[AggregateCall],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut table: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut order: Vec<Group> = Vec::new();
    let mut bytes = 0usize;
    run(input, ctx, probe, &mut |ctx, row| {
        let keys = groups.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
        let encoded = group_key(&keys);
        let slot = match table.get(&encoded) {
            Some(&slot) => slot,
            None => {
                let size = encoded.len() + row_size(&keys) + aggregates.len() * 48;
                bytes += size;
                ctx.budget.reserve(size, "hash aggregate")?;
                order.push(Group {
                    keys,
                    states: aggregates.iter().map(accumulator).collect(),
                    distinct_seen: vec![HashSet::new(); aggregates.len()],
                });
                table.insert(encoded, order.len() - 1);
                order.len() - 1
            }
        };
        let group = &mut order[slot];
        for (index, call) in aggregates.iter().enumerate() {
            let args =
                call.args.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
            if call.distinct {
                if args.first().is_some_and(Datum::is_null) {
                    continue;
                }
                let key = group_key(&args);
                let size = key.len() + 32;
                if !group.distinct_seen[index].insert(key) {
                    continue;
                }
                bytes += size;
                ctx.budget.reserve(size, "hash aggregate")?;
            }
            accumulate(&mut group.states[index], call, &args)?;
        }
        Ok(true)
    })?;
    if order.is_empty() && groups.is_empty() {
        order.push(Group {
            keys: Vec::new(),
            states: aggregates.iter().map(accumulator).collect(),
            distinct_seen: Vec::new(),
        });
    }
    let mut outcome = true;
    for group in order {
        let mut row = group.keys;
        for (state, call) in group.states.iter().zip(aggregates) {
            row.push(finish(state, call)?);
        }
        if !sink(ctx, row)? {
            outcome = false;
            break;
        }
    }
    ctx.budget.release(bytes);
    Ok(outcome)
}
