//! Arbitrary bytes through the storage decoder `tierdb_storage::fuzzing::wal_records`: an error is
//! fine, a panic is a bug (a torn or hostile object must not crash recovery).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tierdb_storage::fuzzing::wal_records(data);
});
