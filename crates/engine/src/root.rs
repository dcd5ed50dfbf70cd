//! The engine root page: the store's first page, where the engine finds everything else. Its
//! layout is defined here and nowhere else (docs/design/008-mvcc.md, "Engine pages").
//!
//! Payload offsets, little-endian:
//!
//! | offset | size | field                                                               |
//! |-------:|-----:|---------------------------------------------------------------------|
//! |      0 |    4 | magic `TDE1` (`ROOT_MAGIC`)                                          |
//! |      4 |    4 | flags: bit 0 `ROOT_FLAG_PURGED`; zero in roots written before them  |
//! |      8 |    8 | reserved transaction-id high-water mark (every id below may be used) |
//! |     16 |    8 | catalog B+tree meta page id (0 until bootstrap's last step)          |
//! |     24 |    8 | first commit-log directory page id                                   |

use tierdb_common::{PageId, PAGE_PAYLOAD_SIZE};
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};

/// The engine root is always the store's first page (bootstrap asserts it).
pub(crate) const ROOT_PAGE: PageId = PageId(1);

pub(crate) const ROOT_MAGIC: &[u8; 4] = b"TDE1";
pub(crate) const ROOT_MAGIC_OFFSET: usize = 0;
pub(crate) const ROOT_FLAGS_OFFSET: usize = 4;
pub(crate) const ROOT_RESERVED_TXN_OFFSET: usize = 8;
pub(crate) const ROOT_CATALOG_OFFSET: usize = 16;
pub(crate) const ROOT_CLOG_DIRECTORY_OFFSET: usize = 24;
/// The bytes of the root's payload in use; the rest is zero.
pub(crate) const ROOT_HEADER_BYTES: usize = 32;

/// The last clean shutdown left no version to purge (`Engine::close_purged`): the next start
/// skips its full purge pass, and clears the flag durably before any transaction runs.
pub(crate) const ROOT_FLAG_PURGED: u32 = 1;

// The fields follow each other without overlap, in the order of the table above, and the
// header fits a page payload.
const _: () = assert!(ROOT_MAGIC_OFFSET + ROOT_MAGIC.len() == ROOT_FLAGS_OFFSET);
const _: () = assert!(ROOT_FLAGS_OFFSET + 4 == ROOT_RESERVED_TXN_OFFSET);
const _: () = assert!(ROOT_RESERVED_TXN_OFFSET + 8 == ROOT_CATALOG_OFFSET);
const _: () = assert!(ROOT_CATALOG_OFFSET + 8 == ROOT_CLOG_DIRECTORY_OFFSET);
const _: () = assert!(ROOT_CLOG_DIRECTORY_OFFSET + 8 == ROOT_HEADER_BYTES);
const _: () = assert!(ROOT_HEADER_BYTES <= PAGE_PAYLOAD_SIZE);

/// The fields of the engine root page, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RootFields {
    pub flags: u32,
    pub reserved_txn: u64,
    /// `PageId::INVALID` after a crash between bootstrap's steps.
    pub catalog: PageId,
    pub clog_directory: PageId,
}

impl RootFields {
    /// Reads the root page; a root without the magic is corrupt (XX001).
    pub(crate) fn read(store: &PageStore) -> Result<RootFields> {
        let page = store.read(ROOT_PAGE)?;
        let payload = page.payload();
        if &payload[ROOT_MAGIC_OFFSET..ROOT_MAGIC_OFFSET + ROOT_MAGIC.len()] != ROOT_MAGIC {
            return Err(EngineError::Corrupt {
                what: "engine root page",
                detail: "bad magic".into(),
            });
        }
        Ok(RootFields {
            flags: u32::from_le_bytes(field(payload, ROOT_FLAGS_OFFSET)),
            reserved_txn: u64::from_le_bytes(field(payload, ROOT_RESERVED_TXN_OFFSET)),
            catalog: PageId(u64::from_le_bytes(field(payload, ROOT_CATALOG_OFFSET))),
            clog_directory: PageId(u64::from_le_bytes(field(payload, ROOT_CLOG_DIRECTORY_OFFSET))),
        })
    }
}

/// The header of a new root: the magic and the commit-log directory; the other fields are
/// zero (no flags, no id reserved, the catalog not created yet).
pub(crate) fn new_root_header(clog_directory: PageId) -> [u8; ROOT_HEADER_BYTES] {
    let mut header = [0u8; ROOT_HEADER_BYTES];
    header[ROOT_MAGIC_OFFSET..ROOT_MAGIC_OFFSET + ROOT_MAGIC.len()].copy_from_slice(ROOT_MAGIC);
    header[ROOT_CLOG_DIRECTORY_OFFSET..ROOT_CLOG_DIRECTORY_OFFSET + 8]
        .copy_from_slice(&clog_directory.0.to_le_bytes());
    header
}

/// The `N` bytes at `offset`, within the header by the layout's compile-time checks.
fn field<const N: usize>(payload: &[u8], offset: usize) -> [u8; N] {
    debug_assert!(offset + N <= ROOT_HEADER_BYTES, "a root field lies within the header");
    payload[offset..offset + N].try_into().expect("a slice of N bytes")
}
