//! Distances between bit strings (pgvector's functions over PostgreSQL's `bit(n)`): bytes
//! hold bits most significant first, as PostgreSQL stores them; padding bits are zero.

/// The number of differing bits.
pub fn hamming_distance(a: &[u8], b: &[u8]) -> u64 {
    assert_eq!(a.len(), b.len(), "the caller checks lengths");
    let mut count = 0u64;
    let mut chunks_a = a.chunks_exact(8);
    let mut chunks_b = b.chunks_exact(8);
    for (chunk_a, chunk_b) in chunks_a.by_ref().zip(chunks_b.by_ref()) {
        let word_a = u64::from_ne_bytes(chunk_a.try_into().expect("chunks of 8"));
        let word_b = u64::from_ne_bytes(chunk_b.try_into().expect("chunks of 8"));
        count += u64::from((word_a ^ word_b).count_ones());
    }
    for (byte_a, byte_b) in chunks_a.remainder().iter().zip(chunks_b.remainder()) {
        count += u64::from((byte_a ^ byte_b).count_ones());
    }
    count
}

/// Jaccard distance `1 - |a ∧ b| / |a ∨ b|`, in double as pgvector returns it; two strings
/// without set bits are at distance 1, as in pgvector.
pub fn jaccard_distance(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len(), "the caller checks lengths");
    let (mut both, mut count_a, mut count_b) = (0u64, 0u64, 0u64);
    for (byte_a, byte_b) in a.iter().zip(b) {
        both += u64::from((byte_a & byte_b).count_ones());
        count_a += u64::from(byte_a.count_ones());
        count_b += u64::from(byte_b.count_ones());
    }
    jaccard_from_counts(both, count_a, count_b)
}

/// pgvector's Jaccard distance from the bits set in both strings and in each: the byte and
/// the word kernels share it, so an index's distance is the SQL operator's bit for bit.
fn jaccard_from_counts(both: u64, count_a: u64, count_b: u64) -> f64 {
    if both == 0 {
        return 1.0;
    }
    // Bit counts stay far below 2^53, so the conversions are exact.
    let to_f64 = |count: u64| count as f64;
    1.0 - to_f64(both) / (to_f64(count_a) + to_f64(count_b) - to_f64(both))
}

/// Bits one index word holds. A bit index (`Metric::BitHamming`, `Metric::BitJaccard`) keeps
/// a bit string as the f32 slots the other metrics use, each slot carrying 32 bits as its bit
/// pattern (never computed with as a float), so the graph, list and page code is shared:
/// slot `i` is `u32::from_le_bytes` of bytes `4i..4i + 4` of the packed bits (zero padded),
/// so its little-endian bytes on a page are the packed bits themselves.
pub const BITS_PER_WORD: usize = 32;

/// Index words holding `bits` bits.
pub fn bit_words(bits: usize) -> usize {
    bits.div_ceil(BITS_PER_WORD)
}

/// The index words of a packed bit string (most significant bit first, padding zero).
pub fn bits_to_words(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks(4)
        .map(|chunk| {
            let mut word = [0u8; 4];
            word[..chunk.len()].copy_from_slice(chunk);
            f32::from_bits(u32::from_le_bytes(word))
        })
        .collect()
}

/// The packed bytes of index words (`bits_to_words` reversed, padding included).
pub fn words_to_bits(words: &[f32]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_bits().to_le_bytes()).collect()
}

/// Pairs of index words as u64s (the last one alone if odd), for popcount.
#[inline(always)]
fn wide_words<'a>(words: &'a [f32]) -> impl Iterator<Item = u64> + 'a {
    words.chunks(2).map(|pair| {
        let low = u64::from(pair[0].to_bits());
        let high = pair.get(1).map_or(0, |word| u64::from(word.to_bits()));
        low | (high << 32)
    })
}

#[inline(always)]
fn word_counts(a: &[f32], b: &[f32]) -> (u64, u64, u64, u64) {
    assert_eq!(a.len(), b.len(), "the index checks lengths");
    let (mut differ, mut both, mut count_a, mut count_b) = (0u64, 0u64, 0u64, 0u64);
    for (word_a, word_b) in wide_words(a).zip(wide_words(b)) {
        differ += u64::from((word_a ^ word_b).count_ones());
        both += u64::from((word_a & word_b).count_ones());
        count_a += u64::from(word_a.count_ones());
        count_b += u64::from(word_b.count_ones());
    }
    (differ, both, count_a, count_b)
}

#[cfg(target_arch = "x86_64")]
mod popcnt {
    // SAFETY (all): callers check the feature first.
    #[target_feature(enable = "popcnt")]
    pub unsafe fn counts(a: &[f32], b: &[f32]) -> (u64, u64, u64, u64) {
        super::word_counts(a, b)
    }
}

/// (differing bits, bits in both, bits in a, bits in b) of two word strings, with the
/// POPCNT instruction when the CPU has it (the baseline target counts bits in software).
fn counts(a: &[f32], b: &[f32]) -> (u64, u64, u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the feature the function is compiled for (checked above).
        return unsafe { popcnt::counts(a, b) };
    }
    word_counts(a, b)
}

/// `hamming_distance` over index words.
pub fn hamming_distance_words(a: &[f32], b: &[f32]) -> u64 {
    counts(a, b).0
}

/// `jaccard_distance` over index words.
pub fn jaccard_distance_words(a: &[f32], b: &[f32]) -> f64 {
    let (_, both, count_a, count_b) = counts(a, b);
    jaccard_from_counts(both, count_a, count_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_pgvector() {
        // bit '110' and '011' (padded to a byte): pgvector gives 2 and 0.6666666666666667.
        assert_eq!(hamming_distance(&[0b1100_0000], &[0b0110_0000]), 2);
        assert_eq!(jaccard_distance(&[0b1100_0000], &[0b0110_0000]), 1.0 - 1.0 / 3.0);
        assert_eq!(jaccard_distance(&[0], &[0]), 1.0);
        assert_eq!(jaccard_distance(&[0b1000_0000], &[0]), 1.0);
        let long_a = [0xffu8; 20];
        let long_b = [0x0fu8; 20];
        assert_eq!(hamming_distance(&long_a, &long_b), 80);
    }

    #[test]
    fn word_kernels_equal_byte_kernels() {
        let mut random = tierdb_common::SplitMix64::new(7);
        for bytes in [1usize, 3, 4, 5, 8, 9, 17, 100] {
            for _ in 0..20 {
                let mut draw = || -> Vec<u8> {
                    (0..bytes).map(|_| u8::try_from(random.below(256)).expect("a byte")).collect()
                };
                let (a, b) = (draw(), draw());
                let (words_a, words_b) = (bits_to_words(&a), bits_to_words(&b));
                assert_eq!(words_a.len(), bit_words(8 * bytes));
                assert_eq!(&words_to_bits(&words_a)[..bytes], &a[..]);
                assert_eq!(hamming_distance_words(&words_a, &words_b), hamming_distance(&a, &b));
                assert_eq!(
                    jaccard_distance_words(&words_a, &words_b).to_bits(),
                    jaccard_distance(&a, &b).to_bits()
                );
                assert_eq!(word_counts(&words_a, &words_b), counts(&words_a, &words_b));
            }
        }
    }
}
