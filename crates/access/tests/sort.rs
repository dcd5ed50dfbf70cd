//! The external merge sort against the standard library's sort: same records, same order,
//! in memory and through runs, merges of every depth, and temp space given back.

use std::sync::Arc;

use proptest::prelude::*;
use tierdb_access::{ExternalSort, SORT_FAN_IN_MIN};
use tierdb_storage::{MemoryGrant, MemoryPool, TempConfig, TempSpace, TempUsage};

type Record = (Vec<u8>, Vec<u8>);

fn sort_all(
    records: &[Record],
    limit_bytes: usize,
) -> (Vec<Record>, tierdb_access::SortStats, Arc<TempSpace>) {
    let dir = tempfile::tempdir().unwrap();
    let space = TempSpace::open(&TempConfig {
        dir: dir.path().join("temp"),
        quota_bytes: 1 << 32,
        operator_memory_bytes: 1 << 30,
    })
    .unwrap();
    let usage = Arc::new(TempUsage::new(None));
    let grant = MemoryGrant::new(&MemoryPool::unbounded(), limit_bytes);
    let mut sort = ExternalSort::new(&space, &usage, grant, |a: &Record, b: &Record| a.0.cmp(&b.0));
    for record in records {
        sort.push(record.clone()).unwrap();
    }
    let mut sorted = sort.finish().unwrap();
    let stats = sorted.stats();
    let mut out = Vec::new();
    while let Some(record) = sorted.next_record().unwrap() {
        out.push(record);
    }
    drop(sorted);
    (out, stats, space)
}

fn records(count: u32, seed: u64) -> Vec<Record> {
    let mut random = tierdb_common::SplitMix64::new(seed);
    (0..count)
        .map(|index| {
            let key = random.next_u64().to_be_bytes()
                [..usize::try_from(random.below(8) + 1).unwrap()]
                .to_vec();
            (key, index.to_le_bytes().to_vec())
        })
        .collect()
}

fn keys(records: &[Record]) -> Vec<Vec<u8>> {
    records.iter().map(|record| record.0.clone()).collect()
}

#[test]
fn a_sort_that_fits_stays_in_memory() {
    let input = records(1_000, 1);
    let (out, stats, space) = sort_all(&input, 64 << 20);
    let mut expected = keys(&input);
    expected.sort();
    assert_eq!(keys(&out), expected);
    assert_eq!(stats.runs, 0);
    assert_eq!(space.stats().files_created, 0);
}

#[test]
fn a_sort_past_memory_writes_runs_merges_levels_and_frees_them() {
    // 64 KiB of memory for ~14 MB of records: hundreds of runs, several merge levels.
    let input = records(200_000, 2);
    let (out, stats, space) = sort_all(&input, 64 * 1024);
    let mut expected = keys(&input);
    expected.sort();
    assert_eq!(keys(&out), expected);
    // Every value once (nothing lost or duplicated by merges).
    let mut values: Vec<Vec<u8>> = out.iter().map(|record| record.1.clone()).collect();
    values.sort();
    values.dedup();
    assert_eq!(values.len(), input.len());
    assert!(stats.runs > u64::try_from(SORT_FAN_IN_MIN * SORT_FAN_IN_MIN).unwrap(), "{stats:?}");
    assert!(stats.disk_bytes > 2 * stats.spilled_bytes, "merged levels rewrote runs: {stats:?}");
    let temp = space.stats();
    assert_eq!((temp.files_open, temp.bytes_in_use), (0, 0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_input_sorts_like_the_standard_sort(count in 0u32..20_000, seed in any::<u64>(), limit_kb in 64usize..512) {
        let input = records(count, seed);
        let (out, _, _) = sort_all(&input, limit_kb * 1024);
        let mut expected = keys(&input);
        expected.sort();
        prop_assert_eq!(keys(&out), expected);
    }
}
