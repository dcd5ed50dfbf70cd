//! The 8 KiB page: the unit that every tier stores and every layer above reads and writes.
//!
//! Header layout (all integers little-endian; full table in docs/design/001-page-format.md):
//!
//! | offset | size | field          | meaning                                                  |
//! |-------:|-----:|----------------|----------------------------------------------------------|
//! |      0 |    4 | checksum       | CRC32C of bytes 4..8192                                  |
//! |      4 |    2 | format_version | `PAGE_FORMAT_VERSION`                                    |
//! |      6 |    1 | page_type      | `PageType` code                                          |
//! |      7 |    1 | flags          | reserved, zero                                           |
//! |      8 |    8 | page_id        | the page's own id: a misdirected read fails verification |
//! |     16 |    8 | lsn            | LSN of the last WAL record applied to this image         |
//! |     24 |    8 | image_version  | id of the segment this image was written to              |
//! |     32 | 8160 | payload        | owned by the access method                               |
//!
//! The checksum covers the page id and the image version, so a tier slot or segment slot that
//! holds another page, or an older image of this page, is caught by `verify`.

use std::fmt;

use crate::ids::{Lsn, PageId, SegmentId};

pub const PAGE_SIZE: usize = 8192;
pub const PAGE_HEADER_SIZE: usize = 32;
pub const PAGE_PAYLOAD_SIZE: usize = PAGE_SIZE - PAGE_HEADER_SIZE;
pub const PAGE_FORMAT_VERSION: u16 = 1;

const CHECKSUM_OFFSET: usize = 0;
const FORMAT_VERSION_OFFSET: usize = 4;
const PAGE_TYPE_OFFSET: usize = 6;
const FLAGS_OFFSET: usize = 7;
const PAGE_ID_OFFSET: usize = 8;
const LSN_OFFSET: usize = 16;
const IMAGE_VERSION_OFFSET: usize = 24;

// The header fields follow each other as in the table above and end where the payload
// starts; the checksum covers everything after itself.
const _: () = assert!(CHECKSUM_OFFSET == 0 && CHECKSUM_OFFSET + 4 == FORMAT_VERSION_OFFSET);
const _: () = assert!(FORMAT_VERSION_OFFSET + 2 == PAGE_TYPE_OFFSET);
const _: () = assert!(PAGE_TYPE_OFFSET + 1 == FLAGS_OFFSET && FLAGS_OFFSET + 1 == PAGE_ID_OFFSET);
const _: () = assert!(PAGE_ID_OFFSET + 8 == LSN_OFFSET && LSN_OFFSET + 8 == IMAGE_VERSION_OFFSET);
const _: () = assert!(IMAGE_VERSION_OFFSET + 8 == PAGE_HEADER_SIZE);
// Pages are written at 4 KiB-aligned offsets of segments and tier files (direct I/O).
const _: () = assert!(PAGE_SIZE.is_multiple_of(4096));

/// What a page holds. The page store only needs `Free` and `Raw`; access methods add theirs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PageType {
    Free,
    Raw,
    BtreeLeaf,
    BtreeInternal,
    Overflow,
    Meta,
    Other(u8),
}

impl PageType {
    pub fn code(self) -> u8 {
        match self {
            PageType::Free => 0,
            PageType::Raw => 1,
            PageType::BtreeLeaf => 2,
            PageType::BtreeInternal => 3,
            PageType::Overflow => 4,
            PageType::Meta => 5,
            PageType::Other(code) => code,
        }
    }

    pub fn from_code(code: u8) -> PageType {
        match code {
            0 => PageType::Free,
            1 => PageType::Raw,
            2 => PageType::BtreeLeaf,
            3 => PageType::BtreeInternal,
            4 => PageType::Overflow,
            5 => PageType::Meta,
            other => PageType::Other(other),
        }
    }
}

/// Why a page image was rejected.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PageCorruption {
    Checksum { stored: u32, computed: u32 },
    FormatVersion { found: u16 },
    Flags { found: u8 },
    PageId { expected: PageId, found: PageId },
    ImageVersion { expected: SegmentId, found: SegmentId },
}

impl fmt::Display for PageCorruption {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageCorruption::Checksum { stored, computed } => write!(
                formatter,
                "checksum mismatch stored={stored:#010x} computed={computed:#010x}"
            ),
            PageCorruption::FormatVersion { found } => {
                write!(formatter, "unknown page format version={found}")
            }
            PageCorruption::Flags { found } => {
                write!(formatter, "reserved flags set flags={found:#04x}")
            }
            PageCorruption::PageId { expected, found } => {
                write!(formatter, "wrong page id expected={expected} found={found}")
            }
            PageCorruption::ImageVersion { expected, found } => {
                write!(formatter, "wrong image version expected={expected} found={found}")
            }
        }
    }
}

/// An 8 KiB page buffer aligned to 4 KiB, so that it can be the target of direct I/O.
#[repr(C, align(4096))]
#[derive(Clone)]
pub struct Page {
    bytes: [u8; PAGE_SIZE],
}

impl Page {
    /// A zeroed page on the heap. Its header is not valid until `init` and `seal`.
    pub fn new_boxed() -> Box<Page> {
        Box::new(Page { bytes: [0; PAGE_SIZE] })
    }

    /// A fresh page of `page_type` with an empty payload and a sealed header.
    pub fn new_initialized(page_id: PageId, page_type: PageType) -> Box<Page> {
        let mut page = Page::new_boxed();
        page.init(page_id, page_type);
        page.seal();
        page
    }

    /// Resets the page to an empty one of `page_type`: zero payload, zero LSN, no version.
    pub fn init(&mut self, page_id: PageId, page_type: PageType) {
        assert!(page_id != PageId::INVALID, "page id 0 is never allocated");
        self.bytes.fill(0);
        self.put_u16(FORMAT_VERSION_OFFSET, PAGE_FORMAT_VERSION);
        self.bytes[PAGE_TYPE_OFFSET] = page_type.code();
        self.put_u64(PAGE_ID_OFFSET, page_id.0);
    }

    pub fn as_bytes(&self) -> &[u8; PAGE_SIZE] {
        &self.bytes
    }

    /// Raw access for reading an image in from a device. Call `verify` before trusting it.
    pub fn as_bytes_mut(&mut self) -> &mut [u8; PAGE_SIZE] {
        &mut self.bytes
    }

    pub fn payload(&self) -> &[u8] {
        &self.bytes[PAGE_HEADER_SIZE..]
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[PAGE_HEADER_SIZE..]
    }

    pub fn page_id(&self) -> PageId {
        PageId(self.get_u64(PAGE_ID_OFFSET))
    }

    pub fn page_type(&self) -> PageType {
        PageType::from_code(self.bytes[PAGE_TYPE_OFFSET])
    }

    pub fn set_page_type(&mut self, page_type: PageType) {
        self.bytes[PAGE_TYPE_OFFSET] = page_type.code();
    }

    pub fn lsn(&self) -> Lsn {
        Lsn(self.get_u64(LSN_OFFSET))
    }

    pub fn set_lsn(&mut self, lsn: Lsn) {
        self.put_u64(LSN_OFFSET, lsn.0);
    }

    pub fn image_version(&self) -> SegmentId {
        SegmentId(self.get_u64(IMAGE_VERSION_OFFSET))
    }

    pub fn set_image_version(&mut self, version: SegmentId) {
        self.put_u64(IMAGE_VERSION_OFFSET, version.0);
    }

    pub fn stored_checksum(&self) -> u32 {
        u32::from_le_bytes(self.bytes[CHECKSUM_OFFSET..4].try_into().expect("4 bytes"))
    }

    pub fn computed_checksum(&self) -> u32 {
        crc32c::crc32c(&self.bytes[4..])
    }

    /// Sets the checksum over the current contents. Call after the last change before the
    /// image leaves DRAM.
    pub fn seal(&mut self) {
        let checksum = self.computed_checksum();
        self.bytes[CHECKSUM_OFFSET..4].copy_from_slice(&checksum.to_le_bytes());
    }

    /// Checks the checksum, the format version and that this is page `expected`.
    pub fn verify(&self, expected: PageId) -> Result<(), PageCorruption> {
        let stored = self.stored_checksum();
        let computed = self.computed_checksum();
        if stored != computed {
            return Err(PageCorruption::Checksum { stored, computed });
        }
        let found_version = self.get_u16(FORMAT_VERSION_OFFSET);
        if found_version != PAGE_FORMAT_VERSION {
            return Err(PageCorruption::FormatVersion { found: found_version });
        }
        if self.bytes[FLAGS_OFFSET] != 0 {
            return Err(PageCorruption::Flags { found: self.bytes[FLAGS_OFFSET] });
        }
        let found = self.page_id();
        if found != expected {
            return Err(PageCorruption::PageId { expected, found });
        }
        Ok(())
    }

    /// `verify`, and also that this is image `version` of the page.
    pub fn verify_version(
        &self,
        expected: PageId,
        version: SegmentId,
    ) -> Result<(), PageCorruption> {
        self.verify(expected)?;
        let found = self.image_version();
        if found != version {
            return Err(PageCorruption::ImageVersion { expected: version, found });
        }
        Ok(())
    }

    fn get_u16(&self, offset: usize) -> u16 {
        u16::from_le_bytes(self.bytes[offset..offset + 2].try_into().expect("2 bytes"))
    }

    fn get_u64(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.bytes[offset..offset + 8].try_into().expect("8 bytes"))
    }

    fn put_u16(&mut self, offset: usize, value: u16) {
        self.bytes[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
    }

    fn put_u64(&mut self, offset: usize, value: u64) {
        self.bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
    }
}

impl fmt::Debug for Page {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Page")
            .field("page_id", &self.page_id())
            .field("page_type", &self.page_type())
            .field("lsn", &self.lsn())
            .field("image_version", &self.image_version())
            .finish_non_exhaustive()
    }
}
