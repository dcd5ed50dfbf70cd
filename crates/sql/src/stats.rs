//! Per-statement statistics (`tierdb_stat_statements`): calls, time, rows and page accesses
//! per role and normalized statement (literals replaced by `?`), as pg_stat_statements keys
//! them by userid; bounded to `STATEMENTS_MAX` entries (new statements past the bound are
//! counted in one `<other>` entry of their role).

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tierdb_common::OpCounters;

/// Distinct normalized statements tracked.
pub const STATEMENTS_MAX: usize = 5_000;

#[derive(Clone, Debug, Default)]
pub struct StatementEntry {
    pub calls: u64,
    pub total_time_ns: u64,
    pub rows: u64,
    pub shared_hits: u64,
    pub tier_hits: u64,
    pub storage_reads: u64,
    /// Capacity-unit-seconds attributed to the statement (design 015): each call's time x
    /// the capacity in force / the statements running at its end.
    pub capacity_unit_seconds: f64,
}

impl StatementEntry {
    fn add(&mut self, elapsed: Duration, rows: u64, counters: &OpCounters, capacity_share: f64) {
        self.calls += 1;
        self.total_time_ns =
            self.total_time_ns.saturating_add(crate::convert::duration_ns(elapsed));
        self.rows += rows;
        self.shared_hits += counters.dram_hits;
        self.tier_hits += counters.tier_hits;
        self.storage_reads += counters.volume_reads;
        self.capacity_unit_seconds += capacity_share;
    }
}

#[derive(Default)]
pub struct StatementStats {
    /// By role OID, then statement.
    entries: Mutex<HashMap<u32, HashMap<String, StatementEntry>>>,
}

/// Replaces quoted strings and numbers with `?`.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c == '\'' {
            index += 1;
            while index < chars.len() {
                if chars[index] == '\'' {
                    if chars.get(index + 1) == Some(&'\'') {
                        index += 2;
                        continue;
                    }
                    break;
                }
                index += 1;
            }
            index += 1;
            out.push('?');
            continue;
        }
        let previous_is_word =
            out.chars().last().is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$');
        if c.is_ascii_digit() && !previous_is_word {
            while index < chars.len() && (chars[index].is_ascii_digit() || chars[index] == '.') {
                index += 1;
            }
            out.push('?');
            continue;
        }
        out.push(c);
        index += 1;
    }
    out
}

/// The longest statement text kept as a key: longer ones keep this much and a hash of the
/// rest, so that `STATEMENTS_MAX` entries take a bounded amount of memory (as PostgreSQL's
/// track_activity_query_size bounds pg_stat_activity's text).
pub const STATEMENT_KEY_BYTES_MAX: usize = 2 << 10;

/// `key`, or for a longer one its first `STATEMENT_KEY_BYTES_MAX` bytes (on a character
/// boundary) and a hash of the whole text.
fn bounded_key(key: &str) -> std::borrow::Cow<'_, str> {
    use std::hash::{Hash, Hasher};
    if key.len() <= STATEMENT_KEY_BYTES_MAX {
        return std::borrow::Cow::Borrowed(key);
    }
    let end = (0..=STATEMENT_KEY_BYTES_MAX).rev().find(|&end| key.is_char_boundary(end));
    let prefix = &key[..end.expect("0 is a character boundary")];
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    std::borrow::Cow::Owned(format!(
        "{prefix}... [{} bytes, hash {:016x}]",
        key.len(),
        hasher.finish()
    ))
}

impl StatementStats {
    /// Counts one run of statement `key` by role `userid`.
    pub fn record(
        &self,
        userid: u32,
        key: &str,
        elapsed: Duration,
        rows: u64,
        counters: &OpCounters,
        capacity_share: f64,
    ) {
        let key = &*bounded_key(key);
        let mut entries = self.entries.lock();
        // A known statement (nearly every call) costs two lookups.
        if let Some(entry) = entries.get_mut(&userid).and_then(|role| role.get_mut(key)) {
            entry.add(elapsed, rows, counters, capacity_share);
            return;
        }
        let tracked: usize = entries.values().map(HashMap::len).sum();
        let name = if tracked >= STATEMENTS_MAX { "<other>" } else { key };
        let role = entries.entry(userid).or_default();
        role.entry(name.to_string()).or_default().add(elapsed, rows, counters, capacity_share);
    }

    /// (calls, total time in ns) over every statement, without copying the entries.
    pub fn totals(&self) -> (u64, u64) {
        self.entries.lock().values().flat_map(HashMap::values).fold(
            (0, 0),
            |(calls, time_ns), entry| {
                (calls + entry.calls, time_ns.saturating_add(entry.total_time_ns))
            },
        )
    }

    /// Every (role OID, statement, counts), the most time first.
    pub fn snapshot(&self) -> Vec<(u32, String, StatementEntry)> {
        let mut entries: Vec<(u32, String, StatementEntry)> = self
            .entries
            .lock()
            .iter()
            .flat_map(|(userid, role)| {
                role.iter().map(|(key, entry)| (*userid, key.clone(), entry.clone()))
            })
            .collect();
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.2.total_time_ns));
        entries
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_statement_keys_are_bounded_and_still_distinct() {
        let stats = StatementStats::default();
        let long = |last: &str| format!("SELECT {}{last}", "é".repeat(STATEMENT_KEY_BYTES_MAX));
        let counters = OpCounters::default();
        stats.record(10, &long("a"), Duration::ZERO, 1, &counters, 0.0);
        stats.record(10, &long("a"), Duration::ZERO, 1, &counters, 0.0);
        stats.record(10, &long("b"), Duration::ZERO, 1, &counters, 0.0);
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.len(), 2, "two statements, told apart by their hash");
        for (_, key, entry) in &snapshot {
            assert!(key.len() < STATEMENT_KEY_BYTES_MAX + 64, "{} bytes", key.len());
            assert!(entry.calls == 1 || entry.calls == 2);
        }
    }
}
