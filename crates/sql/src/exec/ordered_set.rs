//! The ordered-set aggregates' state and results (bind/ordered_set.rs binds them): a
//! group's input arrives sorted by the WITHIN GROUP key (exec/aggregate.rs `Group` sorts
//! the call's buffered input before folding it in), so the state is the non-NULL values in
//! that order, and the result is picked from them as PostgreSQL's orderedsetaggs.c does.

use super::*;

/// The values of one group, in the WITHIN GROUP order, and the fraction the call was given
/// (the same on every row of a group: PostgreSQL allows only grouped columns in it).
#[derive(Clone, Default)]
pub(crate) struct SortedValues {
    values: Vec<Datum>,
    /// The fraction of the first row (percentile_cont and percentile_disc); None before a
    /// row, or for mode.
    fraction: Option<Datum>,
}

impl SortedValues {
    /// Folds in one row's (value, fraction): NULL values are skipped, as PostgreSQL's
    /// ordered-set aggregates skip them.
    pub(crate) fn add(&mut self, args: &[Datum]) -> Result<()> {
        debug_assert!(!args.is_empty() && args.len() <= 2);
        if self.fraction.is_none() {
            self.fraction = args.get(1).cloned();
        }
        let value = &args[0];
        if value.is_null() {
            return Ok(());
        }
        if self.values.len() >= types::ARRAY_ELEMENTS_MAX {
            return Err(SqlError::new("54000", "too many values in an ordered-set aggregate"));
        }
        self.values.push(value.clone());
        Ok(())
    }

    /// The aggregate's result: NULL for a NULL fraction or no values.
    pub(crate) fn finish(&self, kind: OrderedSet) -> Result<Datum> {
        if kind == OrderedSet::Mode {
            return Ok(self.mode());
        }
        if let Some(Datum::Array(fractions)) = &self.fraction {
            return self.finish_many(kind, fractions);
        }
        let fraction = match &self.fraction {
            None | Some(Datum::Null) => return Ok(Datum::Null),
            Some(fraction) => fraction
                .as_f64()
                .ok_or_else(|| SqlError::internal("a percentile's fraction is double precision"))?,
        };
        OrderedSet::check_fraction(fraction)?;
        if self.values.is_empty() {
            return Ok(Datum::Null);
        }
        self.percentile(kind, fraction)
    }

    /// The result for an array of fractions (percentile_cont_multi_final and
    /// percentile_disc_multi_final): NULL without values, else an array of the same bounds
    /// with each fraction's value (NULL for a NULL fraction), every fraction checked first.
    fn finish_many(&self, kind: OrderedSet, fractions: &types::ArrayValue) -> Result<Datum> {
        if self.values.is_empty() {
            return Ok(Datum::Null);
        }
        let fractions: Vec<Option<f64>> =
            fractions.elements.iter().map(|fraction| fraction.as_f64()).collect();
        for fraction in fractions.iter().flatten() {
            OrderedSet::check_fraction(*fraction)?;
        }
        let mut results = Vec::with_capacity(fractions.len());
        for fraction in &fractions {
            results.push(match fraction {
                Some(fraction) => self.percentile(kind, *fraction)?,
                None => Datum::Null,
            });
        }
        let lower = match &self.fraction {
            Some(Datum::Array(array)) => array.lower,
            _ => 1,
        };
        Ok(Datum::Array(std::sync::Arc::new(types::ArrayValue { lower, elements: results })))
    }

    fn percentile(&self, kind: OrderedSet, fraction: f64) -> Result<Datum> {
        match kind {
            OrderedSet::PercentileDiscrete => Ok(self.discrete(fraction)),
            _ => self.continuous(fraction),
        }
    }

    /// The first value whose 1-based position reaches `fraction` of the count.
    fn discrete(&self, fraction: f64) -> Datum {
        let count = crate::convert::count_f64(self.values.len());
        let position = (fraction * count).ceil();
        // In [0, count] as the fraction is in [0, 1]: position 0 and 1 both take the first.
        let index = self.values.len().min(position_index(position));
        self.values[index.saturating_sub(1)].clone()
    }

    /// The value at `fraction` of the way from the first to the last, interpolated
    /// linearly between its two neighbours (PostgreSQL's float8_lerp and interval_lerp).
    fn continuous(&self, fraction: f64) -> Result<Datum> {
        let last = crate::convert::count_f64(self.values.len() - 1);
        let position = fraction * last;
        let (lower, upper) = (position.floor(), position.ceil());
        let low = &self.values[position_index(lower)];
        let high = &self.values[position_index(upper)];
        if lower == upper {
            return Ok(low.clone());
        }
        let proportion = position - lower;
        match (low, high) {
            (Datum::Float(low), Datum::Float(high)) => {
                Ok(Datum::Float(low + proportion * (high - low)))
            }
            (Datum::Interval(low), Datum::Interval(high)) => {
                let step = high.checked_sub(low)?.multiply(proportion)?;
                Ok(Datum::Interval(low.checked_add(&step)?))
            }
            _ => Err(SqlError::internal("percentile_cont reads double precision or interval")),
        }
    }

    /// The most frequent value; among equally frequent ones the first in the order.
    fn mode(&self) -> Datum {
        let mut best: Option<(&Datum, usize)> = None;
        let mut run: Option<(&Datum, usize)> = None;
        for value in &self.values {
            run = match run {
                Some((current, length)) if current.compare(value) == Some(Ordering::Equal) => {
                    Some((current, length + 1))
                }
                _ => Some((value, 1)),
            };
            let (current, length) = run.expect("set above");
            if best.is_none_or(|(_, most)| length > most) {
                best = Some((current, length));
            }
        }
        best.map_or(Datum::Null, |(value, _)| value.clone())
    }
}

/// A row position computed in floating point (the floor or ceiling of a fraction in [0, 1]
/// times a count, so a whole number within [0, count]) as an index.
fn position_index(position: f64) -> usize {
    debug_assert!(position >= 0.0 && position.fract() == 0.0, "{position}");
    // A whole, non-negative value below the count of values in memory: exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = position as usize;
    index
}
