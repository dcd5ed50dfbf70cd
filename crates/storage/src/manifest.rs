//! The manifest: the root of the durable state, written at each checkpoint under a new name
//! `manifest/{sequence:016x}`. Opening a store lists `manifest/` and takes the valid manifest
//! with the highest sequence; older ones are deleted once a newer one is durable.
//!
//! Layout (little-endian):
//!
//! | size    | field                                                          |
//! |--------:|----------------------------------------------------------------|
//! | 8       | magic `TDBMAN05` (02: adds the wal lsn; 03: the log may hold     |
//! |         | compact page-op records, 04: `Compact` ops, 05: `PagesFreed`   |
//! |         | records; binaries before a magic cannot read its log)          |
//! | 8       | sequence                                                       |
//! | 8       | redo lsn: replay starts at min(redo lsn, map lsn)               |
//! | 8       | map lsn: end of the last MapUpdate reflected in the chunks     |
//! | 8       | wal lsn: the log end made durable before this manifest; a log   |
//! |         | that ends earlier at recovery has lost records                  |
//! | 8       | next segment id                                                |
//! | 8       | next page id                                                   |
//! | 4       | chunk count c                                                  |
//! | 16 c    | (chunk index u64, checkpoint sequence that wrote it u64)       |
//! | 4       | segment count s                                                |
//! | 12 s    | (segment id u64, slot count u32)                               |
//! | 4       | CRC32C of everything before                                    |

use tierdb_common::{Lsn, PageId, SegmentId};

use crate::codec::{u64_to_usize, usize_to_u32, usize_to_u64, verify_sealed, Reader, Writer};

const MANIFEST_MAGIC: &[u8; 8] = b"TDBMAN05";
/// The magic of manifests written before `PagesFreed` records (same layout). Still read: the
/// log behind such a manifest decodes unchanged. The magic changed so that a binary from
/// before refuses a store whose log holds a record it would take for a torn tail.
const MANIFEST_MAGIC_BEFORE_FREES: &[u8; 8] = b"TDBMAN04";
/// The magic of manifests written before `Compact` page ops (same layout). Still read: the
/// log behind such a manifest decodes unchanged. The magic changed so that a binary from
/// before refuses a store whose log holds an op it would take for a torn tail.
const MANIFEST_MAGIC_COMPACT_WAL: &[u8; 8] = b"TDBMAN03";
/// The magic of manifests written before compact page-op records (same layout). Still read:
/// the log behind such a manifest holds only fixed-width records, which decode unchanged.
/// The magic changed so that a binary from before refuses a store whose log it would cut
/// as a torn tail (`bad magic expected=TDBMAN02 found=TDBMAN03`).
const MANIFEST_MAGIC_FIXED_WAL: &[u8; 8] = b"TDBMAN02";
pub(crate) const MANIFEST_PREFIX: &str = "manifest/";

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Manifest {
    pub sequence: u64,
    pub redo_lsn: Lsn,
    pub map_lsn: Lsn,
    pub wal_lsn: Lsn,
    pub next_segment: SegmentId,
    pub next_page: PageId,
    /// (chunk index, sequence of the checkpoint that wrote the chunk object)
    pub chunks: Vec<(usize, u64)>,
    /// (segment id, slot count)
    pub segments: Vec<(SegmentId, u32)>,
}

pub(crate) fn manifest_name(sequence: u64) -> String {
    format!("{MANIFEST_PREFIX}{sequence:016x}")
}

pub(crate) fn parse_manifest_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(MANIFEST_PREFIX)?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

/// The magic of a sealed manifest (its checksum holds, so it is no torn or damaged PUT) that
/// this binary does not know: one written by a newer binary. Recovery refuses such a store
/// instead of falling back to an older manifest as it does for damage: the log behind a newer
/// manifest may hold records this binary would take for a torn tail and cut, losing commits.
pub(crate) fn unknown_magic(bytes: &[u8]) -> Option<String> {
    let magic = verify_sealed(bytes).ok()?.get(..MANIFEST_MAGIC.len())?;
    let known = [
        MANIFEST_MAGIC,
        MANIFEST_MAGIC_BEFORE_FREES,
        MANIFEST_MAGIC_COMPACT_WAL,
        MANIFEST_MAGIC_FIXED_WAL,
    ];
    (magic.starts_with(b"TDBMAN") && !known.iter().any(|known| magic == known.as_slice()))
        .then(|| String::from_utf8_lossy(magic).escape_debug().to_string())
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let mut writer =
            Writer::with_capacity(64 + 16 * self.chunks.len() + 12 * self.segments.len());
        writer.raw(MANIFEST_MAGIC);
        writer.u64(self.sequence);
        writer.u64(self.redo_lsn.0);
        writer.u64(self.map_lsn.0);
        writer.u64(self.wal_lsn.0);
        writer.u64(self.next_segment.0);
        writer.u64(self.next_page.0);
        writer.u32(usize_to_u32(self.chunks.len()));
        for (chunk, sequence) in &self.chunks {
            writer.u64(usize_to_u64(*chunk));
            writer.u64(*sequence);
        }
        writer.u32(usize_to_u32(self.segments.len()));
        for (segment, slots) in &self.segments {
            writer.u64(segment.0);
            writer.u32(*slots);
        }
        writer.seal();
        writer.bytes
    }

    pub fn decode(bytes: &[u8]) -> Result<Manifest, String> {
        let body = verify_sealed(bytes)?;
        let mut reader = Reader::new(body);
        let magic =
            [MANIFEST_MAGIC_FIXED_WAL, MANIFEST_MAGIC_COMPACT_WAL, MANIFEST_MAGIC_BEFORE_FREES]
                .into_iter()
                .find(|magic| body.starts_with(*magic))
                .unwrap_or(MANIFEST_MAGIC);
        reader.expect_magic(magic)?;
        let mut manifest = Manifest {
            sequence: reader.u64()?,
            redo_lsn: Lsn(reader.u64()?),
            map_lsn: Lsn(reader.u64()?),
            wal_lsn: Lsn(reader.u64()?),
            next_segment: SegmentId(reader.u64()?),
            next_page: PageId(reader.u64()?),
            ..Manifest::default()
        };
        let chunk_count = reader.u32()?;
        for _ in 0..chunk_count {
            let chunk = u64_to_usize(reader.u64()?);
            manifest.chunks.push((chunk, reader.u64()?));
        }
        let segment_count = reader.u32()?;
        for _ in 0..segment_count {
            let segment = SegmentId(reader.u64()?);
            manifest.segments.push((segment, reader.u32()?));
        }
        if reader.remaining() != 0 {
            return Err(format!("trailing bytes={}", reader.remaining()));
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn manifest_round_trips_and_detects_damage(
            sequence in any::<u64>(),
            lsns in (any::<u64>(), any::<u64>()),
            chunks in prop::collection::vec((0usize..1000, any::<u64>()), 0..20),
            segments in prop::collection::vec((any::<u64>(), any::<u32>()), 0..50),
            bit_seed in any::<u64>(),
        ) {
            let manifest = Manifest {
                sequence,
                redo_lsn: Lsn(lsns.0),
                map_lsn: Lsn(lsns.1),
                wal_lsn: Lsn(lsns.0.max(lsns.1)),
                next_segment: SegmentId(5),
                next_page: PageId(9),
                chunks,
                segments: segments.into_iter().map(|(segment, slots)| (SegmentId(segment), slots)).collect(),
            };
            let bytes = manifest.encode();
            prop_assert_eq!(Manifest::decode(&bytes).unwrap(), manifest.clone());
            let bit = usize::try_from(bit_seed % u64::try_from(bytes.len() * 8).unwrap()).unwrap();
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(Manifest::decode(&damaged).is_err());
            prop_assert!(Manifest::decode(&bytes[..bytes.len() - 1]).is_err());
            prop_assert_eq!(parse_manifest_name(&manifest_name(sequence)), Some(sequence));
            // Manifests written before compact page-op records, before `Compact` ops and
            // before `PagesFreed` records read the same.
            for magic in [MANIFEST_MAGIC_FIXED_WAL, MANIFEST_MAGIC_COMPACT_WAL, MANIFEST_MAGIC_BEFORE_FREES] {
                let mut older = bytes[..bytes.len() - 4].to_vec();
                older[..8].copy_from_slice(magic);
                let checksum = crc32c::crc32c(&older);
                older.extend_from_slice(&checksum.to_le_bytes());
                prop_assert_eq!(Manifest::decode(&older).unwrap(), manifest.clone());
            }
        }
    }
}
