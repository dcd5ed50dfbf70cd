//! `GroupKey`: a `group_key` encoding as a hash-table key that holds short keys inline.
//!
//! Hash aggregation, DISTINCT, set operations and the hash join's build side keep one key
//! per group. As a `Vec<u8>` each key was an allocation of its own and each lookup an extra
//! cache miss to compare it; most keys are short (an integer's key is its decimal digits
//! and two bytes), so up to `INLINE_KEY_BYTES` bytes are kept in the table's slot itself.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Key bytes held inline: the largest that keeps a `GroupKey` as small as a `Vec<u8>`.
pub(crate) const INLINE_KEY_BYTES: usize = 22;

/// A grouping key: inline up to `INLINE_KEY_BYTES` bytes, else on the heap. Hashes and
/// compares as its bytes (`[u8]`), so tables keyed by it are probed with a `&[u8]`.
#[derive(Clone)]
pub(crate) enum GroupKey {
    Inline { length: u8, bytes: [u8; INLINE_KEY_BYTES] },
    Heap(Box<[u8]>),
}

const _: () = assert!(std::mem::size_of::<GroupKey>() == std::mem::size_of::<Vec<u8>>());
const _: () = assert!(INLINE_KEY_BYTES <= u8::MAX as usize);

impl GroupKey {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            GroupKey::Inline { length, bytes } => &bytes[..usize::from(*length)],
            GroupKey::Heap(bytes) => bytes,
        }
    }
}

impl From<&[u8]> for GroupKey {
    fn from(key: &[u8]) -> GroupKey {
        if key.len() > INLINE_KEY_BYTES {
            return GroupKey::Heap(key.into());
        }
        let mut bytes = [0u8; INLINE_KEY_BYTES];
        bytes[..key.len()].copy_from_slice(key);
        let length = u8::try_from(key.len()).expect("at most INLINE_KEY_BYTES");
        GroupKey::Inline { length, bytes }
    }
}

impl Borrow<[u8]> for GroupKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

// Hash and Eq must agree with `[u8]`'s for lookups by `&[u8]` (the `Borrow` contract).
impl Hash for GroupKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq for GroupKey {
    fn eq(&self, other: &GroupKey) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for GroupKey {}

impl std::fmt::Debug for GroupKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_tuple("GroupKey").field(&self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn short_and_long_keys_keep_their_bytes_and_hash_as_slices() {
        let state = foldhash::fast::RandomState::default();
        let long: Vec<u8> = (0..=u8::try_from(INLINE_KEY_BYTES).expect("fits")).collect();
        let short = [2u8, b'4', b'2', 0];
        for bytes in [&[][..], &short[..], &long[..INLINE_KEY_BYTES], &long[..]] {
            let key = GroupKey::from(bytes);
            assert_eq!(key.as_slice(), bytes);
            let inline = matches!(key, GroupKey::Inline { .. });
            assert_eq!(inline, bytes.len() <= INLINE_KEY_BYTES, "inline exactly when short");
            assert_eq!(state.hash_one(&key), state.hash_one(bytes), "hash of the bytes");
        }
        assert_ne!(GroupKey::from(&short[..3]), GroupKey::from(&short[..]));
        let mut map: std::collections::HashMap<GroupKey, usize, _> =
            std::collections::HashMap::with_hasher(state);
        map.insert(GroupKey::from(&long[..]), 1);
        map.insert(GroupKey::from(&short[..]), 2);
        assert_eq!(map.get(&long[..]), Some(&1));
        assert_eq!(map.get(&short[..]), Some(&2));
        assert_eq!(map.get(&short[..2]), None);
    }
}
