//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`): the decoders of
//! everything the store reads back from the volume and the WAL, on arbitrary bytes. Each
//! must return an error, never panic, whatever the input: a torn write, a bit flip or a
//! hostile bucket must not crash the server.

use tierdb_common::{Lsn, SegmentId};

/// WAL recovery's record parser over arbitrary log bytes, with every record it accepts
/// re-encoded and compared: what parses must be what was written.
pub fn wal_records(bytes: &[u8]) {
    let mut visit = |_start: Lsn, _end: Lsn, record: crate::wal::WalRecord| {
        let encoded = crate::wal::encode_record_body(&record).expect("a parsed record encodes");
        let decoded = crate::wal::WalRecord::decode_body(&encoded).expect("its encoding decodes");
        assert_eq!(decoded, record, "a record changed across encode and decode");
        Ok(())
    };
    let _ = crate::wal::parse_records(Lsn(0), bytes, &mut visit);
}

/// A record body (tag, then the body) as recovery decodes it, every accepted page op applied to
/// a page as redo would (`Compact` and `Move` read and write the payload at offsets the
/// decoder bounded: applying must never panic), and the record re-encoded and compared.
pub fn wal_record_body(bytes: &[u8]) {
    let Ok(record) = crate::wal::WalRecord::decode_body(bytes) else { return };
    let encoded = crate::wal::encode_record_body(&record).expect("a decoded record encodes");
    let decoded = crate::wal::WalRecord::decode_body(&encoded).expect("its encoding decodes");
    assert_eq!(decoded, record, "a record changed across encode and decode");
    if let crate::wal::WalRecord::PageOps(ops) = record {
        let mut page = tierdb_common::Page::new_boxed();
        for op in &ops {
            op.apply(&mut page);
        }
    }
}

/// A segment's header and footer (the page images are verified by `page` on use).
pub fn segment_index(bytes: &[u8]) {
    let _ = crate::segment::decode_segment_index(SegmentId(1), bytes);
}

/// A manifest object, as recovery reads the newest one.
pub fn manifest(bytes: &[u8]) {
    let _ = crate::manifest::Manifest::decode(bytes);
}
