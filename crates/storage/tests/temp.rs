//! Temporary files: records read back as written, space given back when files are dropped,
//! the quota (53100) and temp_file_limit (53400), leftovers removed at open.

use std::sync::Arc;

use tierdb_common::ErrorKind;
use tierdb_storage::{
    MemoryGrant, MemoryPool, TempConfig, TempSpace, TempUsage, MEMORY_GRANT_STEP_BYTES,
    TEMP_BLOCK_BYTES, TEMP_FILE_PREFIX,
};

fn space(dir: &std::path::Path, quota_bytes: u64) -> Arc<TempSpace> {
    TempSpace::open(&TempConfig {
        dir: dir.join("temp"),
        quota_bytes,
        operator_memory_bytes: 1 << 20,
    })
    .unwrap()
}

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn records_come_back_in_order_and_the_space_is_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path(), 1 << 30);
    let usage = Arc::new(TempUsage::new(None));
    let mut writer = space.create(&usage).unwrap();
    // Records of every size up to past a block, so that some span block boundaries.
    let records: Vec<Vec<u8>> = (0..2_000u32)
        .map(|index| {
            let length = usize::try_from(index * 397 % 300_000).unwrap();
            (0..length).map(|byte| u8::try_from((byte + length) % 251).unwrap()).collect()
        })
        .collect();
    for record in &records {
        writer.write(record).unwrap();
    }
    let run = writer.finish().unwrap();
    assert_eq!(run.records(), 2_000);
    assert!(run.bytes() > u64::try_from(TEMP_BLOCK_BYTES).unwrap());
    // The name is gone at once: only the descriptor holds the data.
    assert_eq!(files_in(space.dir()), 0);
    assert_eq!(space.stats().bytes_in_use, run.bytes());
    assert_eq!(usage.bytes_in_use(), run.bytes());
    for _ in 0..2 {
        let mut reader = run.reader(20_000);
        for record in &records {
            assert_eq!(reader.next_record().unwrap().unwrap(), record.as_slice());
        }
        assert!(reader.next_record().unwrap().is_none());
    }
    drop(run);
    let stats = space.stats();
    assert_eq!((stats.bytes_in_use, stats.files_open, stats.files_created), (0, 0, 1));
    assert_eq!(usage.bytes_in_use(), 0);
}

#[test]
fn temp_file_limit_and_quota_refuse_writes_with_their_sqlstates() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path(), 4 * u64::try_from(TEMP_BLOCK_BYTES).unwrap());
    let limited = Arc::new(TempUsage::new(Some(1 << 20)));
    let mut writer = space.create(&limited).unwrap();
    let block = vec![7u8; 64 * 1024];
    let error = (0..100).find_map(|_| writer.write(&block).err()).expect("the limit is reached");
    assert_eq!(error.kind(), ErrorKind::LimitExceeded);
    assert_eq!(error.kind().sqlstate(), "53400");
    assert!(error.to_string().contains("temp_file_limit (1024kB)"), "{error}");
    drop(writer);
    assert_eq!(limited.bytes_in_use(), 0);

    let unlimited = Arc::new(TempUsage::new(None));
    let mut writer = space.create(&unlimited).unwrap();
    let error = (0..100).find_map(|_| writer.write(&block).err()).expect("the quota is reached");
    assert_eq!(error.kind().sqlstate(), "53100");
    drop(writer);
    assert_eq!(space.stats().bytes_in_use, 0);
}

#[test]
fn open_removes_files_a_crashed_process_left() {
    let dir = tempfile::tempdir().unwrap();
    let temp_dir = dir.path().join("temp");
    std::fs::create_dir_all(&temp_dir).unwrap();
    std::fs::write(temp_dir.join(format!("{TEMP_FILE_PREFIX}123-4")), b"left over").unwrap();
    std::fs::write(temp_dir.join("somebody-elses-file"), b"kept").unwrap();
    let space = space(dir.path(), 1 << 20);
    let names: Vec<String> = std::fs::read_dir(space.dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["somebody-elses-file".to_string()]);
}

#[test]
fn grants_take_from_the_pool_in_steps_and_stop_at_its_limit() {
    let pool = MemoryPool::new(2 * MEMORY_GRANT_STEP_BYTES);
    let mut first = MemoryGrant::new(&pool, 10 << 20);
    let mut second = MemoryGrant::new(&pool, 10 << 20);
    let mut held = 0usize;
    while first.try_grow(1024) {
        held += 1024;
    }
    // The floor plus both steps of the pool.
    assert_eq!(held, 64 * 1024 + 2 * MEMORY_GRANT_STEP_BYTES);
    assert_eq!(pool.used_bytes(), 2 * MEMORY_GRANT_STEP_BYTES);
    // The second grant still has its floor, not more.
    assert!(second.try_grow(64 * 1024));
    assert!(!second.try_grow(1));
    first.reset();
    assert_eq!(pool.used_bytes(), 0);
    assert!(second.try_grow(1));
    drop(second);
    assert_eq!(pool.used_bytes(), 0);
    // An operator's own limit binds before the pool's.
    let mut small = MemoryGrant::new(&pool, 100 * 1024);
    assert!(small.try_grow(100 * 1024));
    assert!(!small.try_grow(1));
}
