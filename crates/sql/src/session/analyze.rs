//! ANALYZE: gathers the planner's statistics (catalog/statistics.rs, design 020) from a
//! uniform sample of each table's rows.
//!
//! The table is read once, page by page, through its own READ COMMITTED transaction: every
//! live row is counted and offered to a reservoir of `SAMPLE_ROWS_MAX` rows (Vitter's
//! algorithm R, seeded by the table's OID so that the same rows give the same statistics).
//! Per column, from the sample: the NULL fraction, the distinct count (exact when the
//! sample is the whole table, else the Haas-Stokes estimator PostgreSQL uses), the most
//! common values and an equi-depth histogram of the others. Memory is the sample's
//! (bounded by its row count), whatever the table's size.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;

use super::*;
use crate::catalog::{
    is_internal_table, ColumnStatistics, TableMeta, TableStatistics, COMMON_VALUES_MAX,
    HISTOGRAM_BOUNDS_MAX,
};
use crate::convert::{count_f64, rows_f64};
use crate::types::Datum;
use tierdb_common::SplitMix64;
use tierdb_engine::{Direction, IsolationLevel, Projection};

/// Rows sampled per table: PostgreSQL's 300 x default_statistics_target (100).
pub(crate) const SAMPLE_ROWS_MAX: usize = 30_000;
/// Rows read per engine call while sampling.
const SCAN_PAGE_ROWS: usize = 1024;

impl Session {
    /// ANALYZE [tables]: statistics of the named tables, or of every table the role owns.
    pub(super) fn analyze(&mut self, tables: &[String]) -> Result<()> {
        let mut targets = Vec::new();
        for table in tables {
            let name = self.temp_table_or(table);
            match self.catalog.table(&name) {
                None => return Err(SqlError::undefined_table(table)),
                Some(meta) if !meta.is_view() => targets.push(meta),
                Some(_) => {}
            }
        }
        if tables.is_empty() {
            let mut all: Vec<Arc<TableMeta>> = self
                .catalog
                .tables()
                .into_iter()
                .filter(|meta| !meta.is_view() && meta.sequence.is_none())
                .filter(|meta| !is_internal_table(&meta.name))
                .filter(|meta| !self.hidden_tables().contains(&meta.name))
                .collect();
            all.sort_by(|a, b| a.name.cmp(&b.name));
            targets = all;
        }
        let oid = self.role_oid();
        for meta in targets {
            if !self.is_superuser() && self.catalog.table_acl(&meta.name).owner != oid {
                self.warn(SqlError::new(
                    "01000",
                    format!(
                        "skipping \"{}\" --- only table or database owner can analyze it",
                        meta.name
                    ),
                ));
                continue;
            }
            let statistics = gather(&self.catalog, &meta)?;
            self.catalog.set_table_statistics(&meta.name, statistics)?;
        }
        Ok(())
    }
}

/// Reads `meta`'s rows and computes its statistics.
pub(crate) fn gather(catalog: &Catalog, meta: &TableMeta) -> Result<TableStatistics> {
    let (rows_seen, sample) = sample_rows(catalog, meta)?;
    let rows = rows_f64(rows_seen);
    let columns = meta
        .columns
        .iter()
        .enumerate()
        .map(|(position, column)| {
            let values: Vec<&Datum> = sample.iter().map(|row| &row[position]).collect();
            column_statistics(&column.name, &column.ty, &values, rows)
        })
        .collect();
    Ok(TableStatistics { table_oid: meta.oid, rows, columns })
}

/// Every live row counted, and a uniform sample of at most `SAMPLE_ROWS_MAX` of them.
fn sample_rows(catalog: &Catalog, meta: &TableMeta) -> Result<(u64, Vec<Vec<Datum>>)> {
    let mut random = SplitMix64::new(u64::from(meta.oid));
    let mut sample: Vec<Vec<Datum>> = Vec::new();
    let mut seen = 0u64;
    let mut transaction = catalog.engine().begin(IsolationLevel::ReadCommitted)?;
    let mut resume: Option<Vec<u8>> = None;
    loop {
        let page = transaction.scan_page_projected(
            meta.name.as_str(),
            Direction::Forward,
            (Bound::Unbounded, Bound::Unbounded),
            resume.as_deref(),
            SCAN_PAGE_ROWS,
            Projection { columns: None, keys: false, values: true },
        )?;
        for (_, values) in page.rows {
            seen += 1;
            let slot = if sample.len() < SAMPLE_ROWS_MAX {
                sample.len()
            } else {
                // Algorithm R: row `seen` replaces a random slot with probability max/seen.
                let pick = random.next_u64() % seen;
                match usize::try_from(pick) {
                    Ok(slot) if slot < SAMPLE_ROWS_MAX => slot,
                    _ => continue,
                }
            };
            let row = crate::exec::decode_row(meta, values);
            if slot == sample.len() {
                sample.push(row);
            } else {
                sample[slot] = row;
            }
        }
        match page.resume_after {
            Some(key) => resume = Some(key),
            None => break,
        }
    }
    transaction.commit()?;
    assert!(sample.len() <= SAMPLE_ROWS_MAX, "the sample is bounded");
    Ok((seen, sample))
}

/// One column's statistics from its sampled values, the table holding `rows` rows.
fn column_statistics(name: &str, ty: &SqlType, values: &[&Datum], rows: f64) -> ColumnStatistics {
    let sampled = count_f64(values.len());
    let mut counts: HashMap<Vec<u8>, (usize, &Datum)> = HashMap::new();
    let mut nulls = 0usize;
    let mut key = Vec::new();
    for value in values {
        if value.is_null() {
            nulls += 1;
            continue;
        }
        key.clear();
        value.group_key(&mut key);
        counts.entry(key.clone()).or_insert((0, value)).0 += 1;
    }
    let non_null = values.len() - nulls;
    let null_fraction = if values.is_empty() { 0.0 } else { count_f64(nulls) / sampled };
    let whole_table = sampled >= rows;
    let distinct = distinct_estimate(&counts, non_null, rows * (1.0 - null_fraction), whole_table);
    let mut by_count: Vec<(usize, &Datum)> = counts.into_values().collect();
    by_count.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.sort_compare(b.1, false)));
    let common_count = common_values_count(&by_count, non_null, whole_table);
    let common = by_count[..common_count]
        .iter()
        .map(|(count, value)| ((*value).clone(), count_f64(*count) / sampled))
        .collect();
    let histogram = histogram(&by_count[common_count..]);
    ColumnStatistics {
        name: name.to_string(),
        ty: ty.clone(),
        null_fraction,
        distinct,
        common,
        histogram,
    }
}

/// Distinct non-NULL values in the table: the sample's when it is the whole table, else
/// Haas and Stokes' Duj1 estimator (as PostgreSQL's analyze.c): n*d / (n - f1 + f1*n/N),
/// with d the distinct values in the n sampled, f1 those seen once, N the table's non-NULL
/// rows; all seen once reads as unique.
fn distinct_estimate(
    counts: &HashMap<Vec<u8>, (usize, &Datum)>,
    non_null: usize,
    table_non_null: f64,
    whole_table: bool,
) -> f64 {
    let seen = count_f64(counts.len());
    if whole_table || non_null == 0 {
        return seen;
    }
    let singles = count_f64(counts.values().filter(|(count, _)| *count == 1).count());
    let n = count_f64(non_null);
    if singles >= n {
        return table_non_null.max(seen);
    }
    let estimate = n * seen / (n - singles + singles * n / table_non_null.max(n));
    estimate.clamp(seen, table_non_null.max(seen))
}

/// How many of the values (most frequent first) are kept as most common: every value when
/// the whole table was read and they fit; else those seen more than once and at least 1.25
/// times as often as the average value (PostgreSQL's rule), at most `COMMON_VALUES_MAX`.
fn common_values_count(by_count: &[(usize, &Datum)], non_null: usize, whole_table: bool) -> usize {
    if by_count.is_empty() {
        return 0;
    }
    if whole_table && by_count.len() <= COMMON_VALUES_MAX {
        return by_count.len();
    }
    let average = count_f64(non_null) / count_f64(by_count.len());
    by_count
        .iter()
        .take(COMMON_VALUES_MAX)
        .take_while(|(count, _)| *count > 1 && count_f64(*count) >= 1.25 * average)
        .count()
}

/// Equi-depth bounds of the values (with their sample counts), or none when the type has
/// no order.
fn histogram(rest: &[(usize, &Datum)]) -> Vec<Datum> {
    if rest.len() < 2 {
        return Vec::new();
    }
    let mut ordered: Vec<(usize, &Datum)> = rest.to_vec();
    let mut comparable = true;
    ordered.sort_by(|a, b| {
        a.1.compare(b.1).unwrap_or_else(|| {
            comparable = false;
            Ordering::Equal
        })
    });
    if !comparable {
        return Vec::new();
    }
    let total: usize = ordered.iter().map(|(count, _)| count).sum();
    let bounds = HISTOGRAM_BOUNDS_MAX.min(ordered.len());
    let mut out = Vec::with_capacity(bounds);
    let mut cumulative = 0usize;
    let mut next_bound = 0usize;
    for (count, value) in &ordered {
        // The value at which the cumulative count reaches bound k's share of the total.
        let reached = cumulative + count;
        while next_bound < bounds && next_bound * (total - 1) <= (reached - 1) * (bounds - 1) {
            out.push((*value).clone());
            next_bound += 1;
        }
        cumulative = reached;
    }
    out.dedup_by(|a, b| a.compare(b) == Some(Ordering::Equal));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bounds_are_equi_depth_and_ascending() {
        let values: Vec<Datum> = (0..1000).rev().map(Datum::Int).collect();
        let rest: Vec<(usize, &Datum)> = values.iter().map(|value| (1, value)).collect();
        let bounds = histogram(&rest);
        assert_eq!(bounds.len(), HISTOGRAM_BOUNDS_MAX);
        assert_eq!(bounds.first(), Some(&Datum::Int(0)));
        assert_eq!(bounds.last(), Some(&Datum::Int(999)));
        assert!(bounds.windows(2).all(|pair| pair[0].compare(&pair[1]) == Some(Ordering::Less)));
        assert_eq!(bounds[50], Datum::Int(500), "the median bound");
    }

    #[test]
    fn columns_read_their_nulls_distinct_and_common_values() {
        let mut values: Vec<Datum> = (0..90).map(|index| Datum::Int(index % 3)).collect();
        values.extend((0..10).map(|_| Datum::Null));
        let refs: Vec<&Datum> = values.iter().collect();
        let column = column_statistics("c", &SqlType::Int4, &refs, 100.0);
        assert!((column.null_fraction - 0.1).abs() < 1e-9);
        assert!((column.distinct - 3.0).abs() < 1e-9);
        assert_eq!(column.common.len(), 3, "the whole table, three values: all common");
        assert!((column.common_fraction() - 0.9).abs() < 1e-9);
        assert!(column.histogram.is_empty());
    }

    #[test]
    fn a_sampled_unique_column_reads_as_unique() {
        let values: Vec<Datum> = (0..1000).map(Datum::Int).collect();
        let refs: Vec<&Datum> = values.iter().collect();
        let column = column_statistics("id", &SqlType::Int8, &refs, 1_000_000.0);
        assert!((column.distinct - 1_000_000.0).abs() < 1.0);
        assert!(column.common.is_empty());
        assert_eq!(column.histogram.len(), HISTOGRAM_BOUNDS_MAX);
    }
}
