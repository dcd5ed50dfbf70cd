//! Sorting: ORDER BY comparison, the bounded top-N sort of ORDER BY ... LIMIT, and the
//! external merge sort (`tierdb_access::ExternalSort`) that every sort becomes when its rows
//! pass work_mem, as PostgreSQL's tuplesort does.
//!
//! ```text
//! LIMIT n, 2n rows fit ──► top-N: keep 2n, sort, cut to n        (top-N heapsort)
//!                  │ (the next row does not fit)
//!                  ▼
//! no LIMIT ───────────► ExternalSort: in memory while it fits    (quicksort)
//!                                     runs on the temp space past it (external merge)
//! ```

use tierdb_access::{ExternalSort, SortRecord, SortStats};

use super::spill::{decode_row, encode_row, storage_error, SpillTarget};
use super::*;

/// A row being sorted, with an abbreviation of its first sort key (PostgreSQL's
/// abbreviated keys): most comparisons are decided by two integers held in the record,
/// without following a pointer to each row's values and text.
pub(crate) struct SortRow {
    prefix: Prefix,
    row: Row,
}

/// An order-preserving summary of one value: if two prefixes of the same key differ, their
/// values compare the same way; if they are equal, the values must be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prefix {
    /// NULL, or a type without an abbreviation: compare the values.
    None,
    Value(u64),
}

impl Prefix {
    const NONE_TAG: u8 = 0;
    const VALUE_TAG: u8 = 1;

    fn of(datum: &Datum) -> Prefix {
        match datum {
            // Flipping the sign bit orders two's complement integers as unsigned ones.
            Datum::Int(number) => {
                Prefix::Value(u64::from_be_bytes(number.to_be_bytes()) ^ (1 << 63))
            }
            Datum::Text(text) => Prefix::Value(bytes_prefix(text.as_bytes())),
            Datum::Bytes(bytes) => Prefix::Value(bytes_prefix(bytes)),
            _ => Prefix::None,
        }
    }
}

/// The first 8 bytes, big-endian, zero-padded: byte order (text compares by bytes). A shorter
/// string pads with zeros, below any byte it could have there, so it sorts first.
fn bytes_prefix(bytes: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let length = bytes.len().min(8);
    head[..length].copy_from_slice(&bytes[..length]);
    u64::from_be_bytes(head)
}

impl SortRow {
    fn new(row: Row, keys: &[SortKey]) -> SortRow {
        let prefix = keys.first().map_or(Prefix::None, |key| Prefix::of(&row[key.column]));
        SortRow { prefix, row }
    }

    fn compare(a: &SortRow, b: &SortRow, keys: &[SortKey]) -> Ordering {
        if let (Prefix::Value(left), Prefix::Value(right), Some(first)) =
            (a.prefix, b.prefix, keys.first())
        {
            let ordering = left.cmp(&right);
            if ordering != Ordering::Equal {
                return if first.descending { ordering.reverse() } else { ordering };
            }
        }
        compare_rows(&a.row, &b.row, keys)
    }
}

/// Record layout: prefix tag u8, prefix u64 little-endian (0 for `None`), then the row
/// (`spill::encode_row`).
impl SortRecord for SortRow {
    fn encode(&self, out: &mut Vec<u8>) {
        let (tag, value) = match self.prefix {
            Prefix::None => (Prefix::NONE_TAG, 0),
            Prefix::Value(value) => (Prefix::VALUE_TAG, value),
        };
        out.push(tag);
        out.extend_from_slice(&value.to_le_bytes());
        encode_row(&self.row, out);
    }

    fn decode(bytes: &[u8]) -> std::result::Result<SortRow, String> {
        let (head, rest) = bytes.split_at_checked(9).ok_or("short sort record")?;
        let value = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
        let prefix = match head[0] {
            Prefix::NONE_TAG => Prefix::None,
            Prefix::VALUE_TAG => Prefix::Value(value),
            other => return Err(format!("bad sort prefix tag={other}")),
        };
        Ok(SortRow { prefix, row: decode_row(rest)? })
    }

    fn memory_bytes(&self) -> usize {
        row_size(&self.row) + std::mem::size_of::<Prefix>()
    }
}

/// How a sort node ran, for EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMethod {
    TopN,
    Quicksort,
    ExternalMerge,
}

/// What a memory-bounded operator did, for EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorMemory {
    Sort {
        method: SortMethod,
        memory_bytes: usize,
        disk_bytes: u64,
    },
    /// Hash aggregate, hash join, DISTINCT and set operations: batches 1 means no spill.
    Hash {
        batches: u64,
        memory_bytes: usize,
        disk_bytes: u64,
    },
}

enum SortState<F> {
    /// ORDER BY ... LIMIT: at most 2 x `keep` rows, cut back to `keep` when full.
    TopN {
        rows: Vec<Row>,
        keep: usize,
        grant: tierdb_storage::MemoryGrant,
    },
    External(ExternalSort<SortRow, F>),
}

/// Calls `sink` with the rows of `input` in `keys` order, only the first `keep` if given.
pub(crate) fn run_sorted(
    input: &Plan,
    keys: &[SortKey],
    keep: Option<usize>,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let compare = |a: &SortRow, b: &SortRow| SortRow::compare(a, b, keys);
    let target = SpillTarget::of(ctx);
    let grant = target.grant(ctx.budget.work_mem_bytes);
    let mut state = Some(match keep {
        Some(keep) => SortState::TopN { rows: Vec::new(), keep, grant },
        None => {
            SortState::External(ExternalSort::new(&target.space, &target.usage, grant, compare))
        }
    });
    run(input, ctx, probe, &mut |_, row| {
        let current = state.take().expect("the state is put back after every row");
        state = Some(push(current, row, &target, keys, compare)?);
        Ok(true)
    })?;
    match state.expect("the input ran to its end") {
        SortState::TopN { mut rows, keep, grant } => {
            rows.sort_by(|a, b| compare_rows(a, b, keys));
            rows.truncate(keep);
            let memory = OperatorMemory::Sort {
                method: SortMethod::TopN,
                memory_bytes: grant.peak_bytes(),
                disk_bytes: 0,
            };
            record_memory(ctx, plan_id, memory);
            for row in rows {
                if !sink(ctx, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        SortState::External(sort) => {
            let mut sorted = sort.finish().map_err(storage_error)?;
            record_memory(ctx, plan_id, sort_memory(sorted.stats()));
            let mut left = keep.unwrap_or(usize::MAX);
            while left > 0 {
                let Some(SortRow { row, .. }) = sorted.next_record().map_err(storage_error)? else {
                    break;
                };
                left -= 1;
                if !sink(ctx, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

fn push<F: Fn(&SortRow, &SortRow) -> Ordering + Copy>(
    state: SortState<F>,
    row: Row,
    target: &SpillTarget,
    keys: &[SortKey],
    compare: F,
) -> Result<SortState<F>> {
    match state {
        SortState::External(mut sort) => {
            sort.push(SortRow::new(row, keys)).map_err(storage_error)?;
            Ok(SortState::External(sort))
        }
        SortState::TopN { mut rows, keep, mut grant } => {
            let size = row_size(&row);
            if !grant.try_grow(size) {
                // 2 x LIMIT rows do not fit: an external sort of everything, cut at the end.
                let limit_bytes = grant.limit_bytes();
                drop(grant);
                let grant = target.grant(limit_bytes);
                let mut sort = ExternalSort::new(&target.space, &target.usage, grant, compare);
                for held in rows.into_iter().chain(std::iter::once(row)) {
                    sort.push(SortRow::new(held, keys)).map_err(storage_error)?;
                }
                return Ok(SortState::External(sort));
            }
            rows.push(row);
            if rows.len() >= keep.saturating_mul(2).max(16) {
                rows.sort_by(|a, b| compare_rows(a, b, keys));
                for dropped in rows.drain(keep.min(rows.len())..) {
                    grant.shrink(row_size(&dropped));
                }
            }
            Ok(SortState::TopN { rows, keep, grant })
        }
    }
}

pub(crate) fn sort_memory(stats: SortStats) -> OperatorMemory {
    if stats.runs == 0 {
        OperatorMemory::Sort {
            method: SortMethod::Quicksort,
            memory_bytes: stats.peak_memory_bytes,
            disk_bytes: 0,
        }
    } else {
        OperatorMemory::Sort {
            method: SortMethod::ExternalMerge,
            memory_bytes: stats.peak_memory_bytes,
            disk_bytes: stats.spilled_bytes,
        }
    }
}

/// Keeps what an operator did with memory for EXPLAIN ANALYZE.
pub(crate) fn record_memory(ctx: &mut Ctx<'_>, plan_id: usize, memory: OperatorMemory) {
    if ctx.analyze {
        ctx.stats_mut(plan_id).memory = Some(memory);
    }
}

pub fn compare_rows(a: &[Datum], b: &[Datum], keys: &[SortKey]) -> Ordering {
    for key in keys {
        let ordering = a[key.column].sort_compare(&b[key.column], key.nulls_first);
        let ordering = if key.descending && !(a[key.column].is_null() || b[key.column].is_null()) {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values that stress the prefix: shared 8-byte heads, prefixes of each
    /// other, high bytes, the integer extremes, NULLs.
    fn values() -> Vec<Datum> {
        let mut values = vec![Datum::Null];
        for text in
            ["", "a", "ab", "abcdefgh", "abcdefgh", "abcdefghi", "abcdefgha", "\u{ff}", "zz"]
        {
            values.push(Datum::Text(text.to_string()));
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let length = usize::try_from(state % 12).expect("small");
            let text: String = (0..length)
                .map(|position| {
                    char::from(b'a' + u8::try_from((state >> (position * 3)) % 3).expect("small"))
                })
                .collect();
            values.push(Datum::Text(text));
        }
        values
    }

    fn integers() -> Vec<Datum> {
        let mut values: Vec<Datum> =
            [i64::MIN, i64::MIN + 1, -256, -1, 0, 1, 255, 256, i64::MAX].map(Datum::Int).to_vec();
        values.push(Datum::Null);
        values
    }

    /// The abbreviated comparison orders every pair as the full comparison does, in both
    /// directions and with NULLs first or last.
    #[test]
    fn abbreviated_keys_order_as_the_values_do() {
        for column_values in [values(), integers()] {
            for (descending, nulls_first) in
                [(false, false), (false, true), (true, false), (true, true)]
            {
                let keys = [SortKey { column: 0, descending, nulls_first }];
                for a in &column_values {
                    for b in &column_values {
                        let (left, right) = (vec![a.clone()], vec![b.clone()]);
                        let expected = compare_rows(&left, &right, &keys);
                        let abbreviated = SortRow::compare(
                            &SortRow::new(left, &keys),
                            &SortRow::new(right, &keys),
                            &keys,
                        );
                        assert_eq!(abbreviated, expected, "{a:?} vs {b:?} desc={descending}");
                    }
                }
            }
        }
    }

    #[test]
    fn sort_records_round_trip() {
        let keys = [SortKey { column: 1, descending: false, nulls_first: false }];
        for row in [
            vec![Datum::Int(1), Datum::Text("abcdefghij".to_string())],
            vec![Datum::Int(2), Datum::Null],
        ] {
            let record = SortRow::new(row.clone(), &keys);
            let mut bytes = Vec::new();
            record.encode(&mut bytes);
            let back = SortRow::decode(&bytes).expect("decodes");
            assert_eq!(back.prefix, record.prefix);
            assert_eq!(back.row, row);
        }
        assert!(SortRow::decode(&[7; 9]).is_err(), "an unknown prefix tag is refused");
    }
}
