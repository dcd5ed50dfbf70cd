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
    if both == 0 {
        return 1.0;
    }
    // Bit counts stay far below 2^53, so the conversions are exact.
    let to_f64 = |count: u64| count as f64;
    1.0 - to_f64(both) / (to_f64(count_a) + to_f64(count_b) - to_f64(both))
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
}
