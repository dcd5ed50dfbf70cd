//! Per-statement statistics (`tierdb_stat_statements`): calls, time, rows and page accesses
//! per normalized statement (literals replaced by `?`), bounded to `STATEMENTS_MAX` entries
//! (new statements past the bound are counted in one `<other>` entry).

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use sqlparser::ast;
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
}

#[derive(Default)]
pub struct StatementStats {
    entries: Mutex<HashMap<String, StatementEntry>>,
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

impl StatementStats {
    pub fn record(
        &self,
        statement: &ast::Statement,
        elapsed: Duration,
        rows: u64,
        counters: &OpCounters,
    ) {
        let key = normalize(&statement.to_string());
        let mut entries = self.entries.lock();
        let full = entries.len() >= STATEMENTS_MAX && !entries.contains_key(&key);
        let entry = entries.entry(if full { "<other>".to_string() } else { key }).or_default();
        entry.calls += 1;
        entry.total_time_ns += u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        entry.rows += rows;
        entry.shared_hits += counters.dram_hits;
        entry.tier_hits += counters.tier_hits;
        entry.storage_reads += counters.volume_reads;
    }

    pub fn snapshot(&self) -> Vec<(String, StatementEntry)> {
        let mut entries: Vec<(String, StatementEntry)> =
            self.entries.lock().iter().map(|(key, entry)| (key.clone(), entry.clone())).collect();
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.1.total_time_ns));
        entries
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}
