//! Identifier newtypes. Each is a plain `u64` on disk (little-endian); the newtype keeps a page
//! id from being passed where an LSN is expected.

use std::fmt;

/// Identity of an 8 KiB page, stable for its whole life. Page 0 is never allocated, so that a
/// zeroed header is recognisably "no page".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct PageId(pub u64);

/// Log sequence number: the byte position just past a WAL record in the logical log stream.
/// Zero means "before any record".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Lsn(pub u64);

/// Identity of an immutable segment on the volume. Segment ids only grow, and a page image's
/// version is the id of the segment it was written to, so a (page id, segment id) pair names
/// exactly one image for the life of the database.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct SegmentId(pub u64);

impl PageId {
    pub const INVALID: PageId = PageId(0);
}

impl Lsn {
    pub const ZERO: Lsn = Lsn(0);
}

impl SegmentId {
    /// The version of a page that has never been written to the volume.
    pub const NONE: SegmentId = SegmentId(0);
}

impl fmt::Display for PageId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:X}/{:08X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

impl fmt::Display for SegmentId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:016x}", self.0)
    }
}
