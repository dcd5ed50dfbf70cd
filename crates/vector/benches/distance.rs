//! ns per distance at 128, 768 and 1536 dimensions: the portable kernels against the path
//! this CPU detects (`simd_path_name`). Run: `cargo bench -p tierdb-vector --bench distance`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use tierdb_vector::{
    cosine_distance, halfvec_l2_squared_distance, inner_product, l2_squared_distance, portable,
    simd_path_name,
};

fn sample(dimensions: usize, seed: u32) -> Vec<f32> {
    let mut state = seed;
    (0..dimensions)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            f32::from(u16::try_from(state >> 16).expect("16 bits")) / 65_536.0 - 0.5
        })
        .collect()
}

fn distances(criterion: &mut Criterion) {
    let detected = simd_path_name();
    for dimensions in [128usize, 768, 1536] {
        let a = sample(dimensions, 1);
        let b = sample(dimensions, 2);
        let half_a: Vec<half::f16> = a.iter().map(|value| half::f16::from_f32(*value)).collect();
        let half_b: Vec<half::f16> = b.iter().map(|value| half::f16::from_f32(*value)).collect();
        let mut group = criterion.benchmark_group(format!("{dimensions}d"));
        group.bench_function("l2_squared/portable", |bench| {
            bench.iter(|| portable::l2_squared_distance(black_box(&a), black_box(&b)))
        });
        group.bench_function(format!("l2_squared/{detected}"), |bench| {
            bench.iter(|| l2_squared_distance(black_box(&a), black_box(&b)))
        });
        group.bench_function("inner_product/portable", |bench| {
            bench.iter(|| portable::inner_product(black_box(&a), black_box(&b)))
        });
        group.bench_function(format!("inner_product/{detected}"), |bench| {
            bench.iter(|| inner_product(black_box(&a), black_box(&b)))
        });
        group.bench_function(format!("cosine/{detected}"), |bench| {
            bench.iter(|| cosine_distance(black_box(&a), black_box(&b)))
        });
        group.bench_function(format!("halfvec_l2_squared/{detected}"), |bench| {
            bench.iter(|| halfvec_l2_squared_distance(black_box(&half_a), black_box(&half_b)))
        });
        group.finish();
    }
}

criterion_group!(benches, distances);
criterion_main!(benches);
