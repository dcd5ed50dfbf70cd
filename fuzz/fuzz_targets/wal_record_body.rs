//! Arbitrary bytes as one WAL record body through `tierdb_storage::fuzzing::wal_record_body`:
//! decoded, re-encoded and its page ops applied to a page as redo does. An error is fine, a
//! panic is a bug (an op that decodes must be safe to redo).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tierdb_storage::fuzzing::wal_record_body(data);
});
