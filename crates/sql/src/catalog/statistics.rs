//! Planner statistics gathered by ANALYZE (design 020): per table the live row count, per
//! column the fraction of NULLs, the number of distinct values, the most common values
//! with their frequencies and an equi-depth histogram of the rest, as PostgreSQL's
//! pg_statistic holds them. The planner's estimates (optimize/estimate.rs) read them.
//!
//! Stored in the internal table `tierdb_sql_statistics`, one row per table keyed by name,
//! the table's OID inside: statistics of a dropped table never describe a new table of the
//! same name (the OIDs differ). Text format, one record per line, fields tab-separated and
//! escaped as the table definitions are (meta.rs):
//!
//! ```text
//! s2  <table oid>  <rows>
//! c   <column name>  <type>  <null fraction>  <distinct>
//! m   <frequency>  <value as text>          most common values of the column above
//! h   <value as text>                       histogram bounds of the column above, ascending
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use super::meta::{decode_type, encode_type, escape, unescape};
use super::{is_internal_table, split_temp_name, Catalog, TableMeta};
use crate::error::{Result, SqlError};
use crate::types::{Datum, SqlType};
use tierdb_engine::Value;

pub(super) const STATISTICS_TABLE: &str = "tierdb_sql_statistics";

/// Most common values kept per column (PostgreSQL's default_statistics_target).
pub const COMMON_VALUES_MAX: usize = 100;
/// Histogram bounds kept per column (buckets + 1).
pub const HISTOGRAM_BOUNDS_MAX: usize = 101;

/// One table's statistics as of its last ANALYZE.
#[derive(Clone, Debug, PartialEq)]
pub struct TableStatistics {
    pub table_oid: u32,
    /// Live rows counted by the ANALYZE.
    pub rows: f64,
    pub columns: Vec<ColumnStatistics>,
}

/// One column's statistics; frequencies and fractions are of all the table's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnStatistics {
    pub name: String,
    pub ty: SqlType,
    pub null_fraction: f64,
    /// Distinct non-NULL values (an estimate when the table was sampled), at least 1 when
    /// any value is not NULL.
    pub distinct: f64,
    /// The most common values, most frequent first, with the fraction of rows holding each.
    pub common: Vec<(Datum, f64)>,
    /// Equi-depth bounds of the values that are not among `common`, ascending (empty for
    /// types without an order, or when `common` holds every value).
    pub histogram: Vec<Datum>,
}

impl ColumnStatistics {
    /// The fraction of rows holding one of `common`.
    pub fn common_fraction(&self) -> f64 {
        self.common.iter().map(|(_, frequency)| frequency).sum()
    }
}

impl TableStatistics {
    /// The statistics of the column named `name`, if it has the type `ty` (a column
    /// dropped and added again under the name with another type has none).
    pub fn column(&self, name: &str, ty: &SqlType) -> Option<&ColumnStatistics> {
        self.columns.iter().find(|column| column.name == name && &column.ty == ty)
    }

    pub(crate) fn encode(&self) -> String {
        let mut out = format!("s2\t{}\t{}\n", self.table_oid, self.rows);
        for column in &self.columns {
            out.push_str(&format!(
                "c\t{}\t{}\t{}\t{}\n",
                escape(&column.name),
                encode_type(&column.ty),
                column.null_fraction,
                column.distinct
            ));
            for (value, frequency) in &column.common {
                let text = value.to_text(&column.ty).unwrap_or_default();
                out.push_str(&format!("m\t{frequency}\t{}\n", escape(&text)));
            }
            for value in &column.histogram {
                let text = value.to_text(&column.ty).unwrap_or_default();
                out.push_str(&format!("h\t{}\n", escape(&text)));
            }
        }
        out
    }

    pub(crate) fn decode(text: &str) -> Result<TableStatistics> {
        let corrupt = || SqlError::new("XX001", "corrupt statistics row");
        let number = |field: Option<&str>| -> Result<f64> {
            field.and_then(|field| field.parse::<f64>().ok()).ok_or_else(corrupt)
        };
        let mut lines = text.lines();
        let mut header = lines.next().ok_or_else(corrupt)?.split('\t');
        if header.next() != Some("s2") {
            return Err(corrupt());
        }
        let table_oid =
            header.next().and_then(|oid| oid.parse::<u32>().ok()).ok_or_else(corrupt)?;
        let rows = number(header.next())?;
        let mut columns: Vec<ColumnStatistics> = Vec::new();
        for line in lines {
            let mut fields = line.split('\t');
            let tag = fields.next();
            if tag == Some("c") {
                let name = unescape(fields.next().ok_or_else(corrupt)?);
                let ty = fields.next().and_then(decode_type).ok_or_else(corrupt)?;
                let null_fraction = number(fields.next())?;
                let distinct = number(fields.next())?;
                let (common, histogram) = (Vec::new(), Vec::new());
                columns.push(ColumnStatistics {
                    name,
                    ty,
                    null_fraction,
                    distinct,
                    common,
                    histogram,
                });
                continue;
            }
            let column = columns.last_mut().ok_or_else(corrupt)?;
            let parse = |text: &str| crate::types::parse_text(&unescape(text), &column.ty);
            match tag {
                Some("m") => {
                    let frequency = number(fields.next())?;
                    let value = parse(fields.next().ok_or_else(corrupt)?)?;
                    column.common.push((value, frequency));
                }
                Some("h") => {
                    let value = parse(fields.next().ok_or_else(corrupt)?)?;
                    column.histogram.push(value);
                }
                _ => return Err(corrupt()),
            }
        }
        Ok(TableStatistics { table_oid, rows, columns })
    }
}

/// Rows a table may change before autoanalyze gathers its statistics again: PostgreSQL's
/// autovacuum_analyze_threshold (50) plus autovacuum_analyze_scale_factor (0.1) of the rows
/// its last statistics counted.
pub const AUTOANALYZE_THRESHOLD_ROWS: f64 = 50.0;
pub const AUTOANALYZE_SCALE_FACTOR: f64 = 0.1;
/// A table never analyzed is analyzed automatically once it holds this many pages, however
/// few of its rows this server run changed (a table loaded before a restart).
pub const AUTOANALYZE_UNANALYZED_PAGES_MIN: u64 = 8;

impl Catalog {
    /// Counts rows a statement inserted, updated or deleted in table `table_oid`.
    pub fn note_modified_rows(&self, table_oid: u32, rows: u64) {
        if rows > 0 {
            let mut modified = self.modified_rows.lock();
            let count = modified.entry(table_oid).or_default();
            *count = count.saturating_add(rows);
        }
    }

    /// The tables autoanalyze should gather statistics of now: committed user tables (not
    /// views, sequences, temp or internal tables) changed by more than the threshold since
    /// their last ANALYZE, or never analyzed and holding rows.
    pub fn autoanalyze_candidates(&self) -> Vec<Arc<TableMeta>> {
        let uncommitted = self.uncommitted.read().clone();
        let mut candidates: Vec<Arc<TableMeta>> = self
            .tables()
            .into_iter()
            .filter(|meta| !meta.is_view() && meta.sequence.is_none())
            .filter(|meta| !is_internal_table(&meta.name) && split_temp_name(&meta.name).is_none())
            .filter(|meta| !uncommitted.contains_key(&meta.name))
            .filter(|meta| self.wants_analyze(meta))
            .collect();
        candidates.sort_by(|a, b| a.name.cmp(&b.name));
        candidates
    }

    fn wants_analyze(&self, meta: &TableMeta) -> bool {
        let changed = self.modified_rows.lock().get(&meta.oid).copied().unwrap_or(0);
        let changed = crate::convert::rows_f64(changed);
        match self.table_statistics(&meta.name) {
            Some(statistics) => {
                changed > AUTOANALYZE_THRESHOLD_ROWS + AUTOANALYZE_SCALE_FACTOR * statistics.rows
            }
            None => {
                let pages = self
                    .engine
                    .table_handle(&meta.name)
                    .and_then(|handle| handle.relation_pages())
                    .map_or(0, |pages| pages.table.unwrap_or(0));
                changed > AUTOANALYZE_THRESHOLD_ROWS || pages >= AUTOANALYZE_UNANALYZED_PAGES_MIN
            }
        }
    }

    /// The statistics of table `name` from its last ANALYZE, if they describe the table of
    /// that name now (same OID).
    pub fn table_statistics(&self, name: &str) -> Option<Arc<TableStatistics>> {
        let oid = self.table(name)?.oid;
        self.statistics.read().get(name).filter(|statistics| statistics.table_oid == oid).cloned()
    }

    /// Stores a table's statistics durably and publishes them to the planner. Plans bound
    /// before keep their join order; new statements see the new statistics.
    pub fn set_table_statistics(&self, name: &str, statistics: TableStatistics) -> Result<()> {
        self.upsert_text(STATISTICS_TABLE, name, statistics.encode())?;
        self.modified_rows.lock().remove(&statistics.table_oid);
        self.statistics.write().insert(name.to_string(), Arc::new(statistics));
        self.invalidate_plans();
        Ok(())
    }

    /// Forgets a dropped table's statistics.
    pub(super) fn remove_table_statistics(&self, name: &str) -> Result<()> {
        if self.statistics.write().remove(name).is_some() {
            let mut transaction =
                self.engine.begin(tierdb_engine::IsolationLevel::ReadCommitted)?;
            transaction.delete(STATISTICS_TABLE, &[Value::Text(name.to_string())])?;
            transaction.commit()?;
        }
        Ok(())
    }

    pub(super) fn load_statistics(&self) -> Result<()> {
        let mut loaded = HashMap::new();
        for row in self.scan_internal(STATISTICS_TABLE)? {
            let (Some(Value::Text(name)), Some(Value::Text(text))) = (row.first(), row.get(1))
            else {
                return Err(SqlError::new("XX001", "corrupt statistics row"));
            };
            loaded.insert(name.clone(), Arc::new(TableStatistics::decode(text)?));
        }
        *self.statistics.write() = loaded;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_round_trip_through_their_text() {
        let statistics = TableStatistics {
            table_oid: 16_400,
            rows: 1234.0,
            columns: vec![
                ColumnStatistics {
                    name: "tab\tname".into(),
                    ty: SqlType::Text,
                    null_fraction: 0.25,
                    distinct: 17.5,
                    common: vec![(Datum::Text("a\nb".into()), 0.5)],
                    histogram: vec![Datum::Text("c".into()), Datum::Text("z".into())],
                },
                ColumnStatistics {
                    name: "n".into(),
                    ty: SqlType::Int8,
                    null_fraction: 0.0,
                    distinct: 1234.0,
                    common: Vec::new(),
                    histogram: vec![Datum::Int(-5), Datum::Int(99)],
                },
            ],
        };
        let decoded = TableStatistics::decode(&statistics.encode()).expect("decodes");
        assert_eq!(decoded, statistics);
        assert!(TableStatistics::decode("s1\t1\t2").is_err(), "an unknown version");
        assert!(TableStatistics::decode("s2\t1\t2\nm\t0.5\tx").is_err(), "a value before a column");
    }
}
