//! The key encoding against a model: for random composite keys, byte order of the encodings
//! equals PostgreSQL's order of the values (NULL placement, DESC, NaN above infinity, -0 = 0,
//! "C" collation for text, numerics by value whatever their scale), and decoding returns the
//! values.

use std::cmp::Ordering;

use proptest::prelude::*;
use tierdb_access::{decode_key, encode_key, Decimal, KeyColumn, KeyKind, KeyValue};

/// Decimal's mantissa bound: |mantissa| < 2^96.
const MANTISSA_MAX: i128 = (1 << 96) - 1;

fn model_compare_value(kind: KeyKind, left: &KeyValue, right: &KeyValue) -> Ordering {
    match (left, right) {
        (KeyValue::Bool(a), KeyValue::Bool(b)) => a.cmp(b),
        (KeyValue::Int(a), KeyValue::Int(b)) => a.cmp(b),
        (KeyValue::Float(a), KeyValue::Float(b)) => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => a.partial_cmp(b).unwrap(),
        },
        (KeyValue::Text(a), KeyValue::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
        (KeyValue::Bytes(a), KeyValue::Bytes(b)) => a.cmp(b),
        // Decimal's order is by value, ignoring scale, as numeric's in PostgreSQL.
        (KeyValue::Numeric(a), KeyValue::Numeric(b)) => a.cmp(b),
        _ => panic!("model given mismatched kinds for {kind:?}"),
    }
}

/// PostgreSQL's ORDER BY semantics for one tuple against another.
fn model_compare(columns: &[KeyColumn], left: &[KeyValue], right: &[KeyValue]) -> Ordering {
    for (column, (a, b)) in columns.iter().zip(left.iter().zip(right)) {
        let ordering = match (a, b) {
            (KeyValue::Null, KeyValue::Null) => Ordering::Equal,
            // NULL position is independent of direction.
            (KeyValue::Null, _) => {
                return if column.nulls_first { Ordering::Less } else { Ordering::Greater }
            }
            (_, KeyValue::Null) => {
                return if column.nulls_first { Ordering::Greater } else { Ordering::Less }
            }
            _ => {
                let ordering = model_compare_value(column.kind, a, b);
                if column.descending {
                    ordering.reverse()
                } else {
                    ordering
                }
            }
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Numerics of every magnitude in Decimal's range: random 96-bit mantissas at random scales,
/// small mantissas at mixed scales (so that equal values with different scales meet), zeros
/// (-0 too) and the extremes.
fn decimal_strategy() -> BoxedStrategy<Decimal> {
    prop_oneof![
        (-MANTISSA_MAX..=MANTISSA_MAX, 0u32..=28),
        (-2000i128..2000, 0u32..5),
        (
            prop_oneof![
                Just(1i128),
                Just(-1),
                Just(10),
                Just(-10),
                Just(MANTISSA_MAX),
                Just(-MANTISSA_MAX)
            ],
            0u32..=28
        ),
        (
            prop_oneof![-99i128..100, Just(10_000), Just(-1_000_000)],
            prop_oneof![Just(0u32), Just(1), Just(2), Just(27), Just(28)]
        ),
    ]
    .prop_map(|(mantissa, scale)| Decimal::from_i128_with_scale(mantissa, scale))
    .boxed()
}

fn value_of(kind: KeyKind) -> BoxedStrategy<KeyValue> {
    let present = match kind {
        KeyKind::Bool => any::<bool>().prop_map(KeyValue::Bool).boxed(),
        KeyKind::Int => prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)]
            .prop_map(KeyValue::Int)
            .boxed(),
        KeyKind::Float => prop_oneof![
            any::<f64>(),
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            -2.0f64..2.0
        ]
        .prop_map(KeyValue::Float)
        .boxed(),
        KeyKind::Text => prop_oneof!["[a-c\\x00]{0,4}", ".{0,6}"].prop_map(KeyValue::Text).boxed(),
        KeyKind::Bytes => {
            prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..5)
                .prop_map(KeyValue::Bytes)
                .boxed()
        }
        KeyKind::Numeric => decimal_strategy().prop_map(KeyValue::Numeric).boxed(),
    };
    prop_oneof![1 => Just(KeyValue::Null), 6 => present].boxed()
}

fn column_strategy() -> impl Strategy<Value = KeyColumn> {
    (
        prop_oneof![
            Just(KeyKind::Bool),
            Just(KeyKind::Int),
            Just(KeyKind::Float),
            Just(KeyKind::Text),
            Just(KeyKind::Bytes),
            Just(KeyKind::Numeric)
        ],
        any::<bool>(),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(kind, descending, nulls_first)| KeyColumn {
            kind,
            descending,
            nulls_first: nulls_first.unwrap_or(descending),
        })
}

fn keys_strategy() -> impl Strategy<Value = (Vec<KeyColumn>, Vec<Vec<KeyValue>>)> {
    prop::collection::vec(column_strategy(), 1..4).prop_flat_map(|columns| {
        let tuple = columns.iter().map(|column| value_of(column.kind)).collect::<Vec<_>>();
        (Just(columns), prop::collection::vec(tuple, 2..12))
    })
}

fn encode(columns: &[KeyColumn], values: &[KeyValue]) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_key(columns, values, &mut bytes).unwrap();
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn byte_order_is_postgres_order((columns, tuples) in keys_strategy()) {
        for left in &tuples {
            for right in &tuples {
                let expected = model_compare(&columns, left, right);
                let actual = encode(&columns, left).cmp(&encode(&columns, right));
                prop_assert_eq!(actual, expected, "columns={:?} left={:?} right={:?}", columns, left, right);
            }
        }
    }

    #[test]
    fn decode_inverts_encode((columns, tuples) in keys_strategy()) {
        for tuple in &tuples {
            let bytes = encode(&columns, tuple);
            let decoded = decode_key(&columns, &bytes).unwrap();
            prop_assert_eq!(&decoded, tuple);
            // Any strict prefix is rejected, never misread.
            for cut in 0..bytes.len() {
                prop_assert!(decode_key(&columns, &bytes[..cut]).is_err());
            }
        }
    }

    /// Numerics alone, many per case, so that close and equal values (mixed scales) meet:
    /// encodings order as the values, equal values have identical bytes, and decoding gives an
    /// equal value with the smallest scale, which encodes to the same bytes.
    #[test]
    fn numeric_keys_order_by_value(
        column in (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_first)| KeyColumn { kind: KeyKind::Numeric, descending, nulls_first }),
        values in prop::collection::vec(value_of(KeyKind::Numeric), 2..40),
    ) {
        let columns = [column];
        for left in &values {
            let left_bytes = encode(&columns, std::slice::from_ref(left));
            for right in &values {
                let expected = model_compare(&columns, std::slice::from_ref(left), std::slice::from_ref(right));
                let actual = left_bytes.cmp(&encode(&columns, std::slice::from_ref(right)));
                prop_assert_eq!(actual, expected, "column={:?} left={:?} right={:?}", column, left, right);
            }
            let decoded = decode_key(&columns, &left_bytes).unwrap();
            prop_assert_eq!(&decoded[..], std::slice::from_ref(left));
            if let (KeyValue::Numeric(original), KeyValue::Numeric(back)) = (left, &decoded[0]) {
                prop_assert_eq!(back.scale(), original.normalize().scale());
            }
            prop_assert_eq!(encode(&columns, &decoded), left_bytes);
        }
    }

    /// Numeric-shaped garbage (any sign, exponent and group bytes, terminated) either fails to
    /// decode or decodes to a value whose encoding is exactly those bytes: no two encodings
    /// decode to equal values.
    #[test]
    fn numeric_decode_accepts_only_canonical_bytes(
        descending in any::<bool>(),
        sign in 0u8..4,
        exponent in prop_oneof![0x70u8..0x92, any::<u8>()],
        groups in prop::collection::vec(prop_oneof![6 => 1u8..=0x64, 1 => any::<u8>()], 0..18),
    ) {
        let negative = sign == 0;
        let flip = |byte: u8| if negative { !byte } else { byte };
        let mut bytes = vec![0x01, sign];
        if sign != 1 {
            bytes.push(flip(exponent));
            bytes.extend(groups.iter().map(|&group| flip(group)));
            bytes.push(flip(0x00));
        }
        if descending {
            bytes.iter_mut().for_each(|byte| *byte = !*byte);
        }
        let columns = [KeyColumn { kind: KeyKind::Numeric, descending, nulls_first: descending }];
        if let Ok(decoded) = decode_key(&columns, &bytes) {
            prop_assert_eq!(encode(&columns, &decoded), bytes);
        }
    }

    #[test]
    fn garbage_never_panics(columns in prop::collection::vec(column_strategy(), 1..4), bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = decode_key(&columns, &bytes);
    }
}

#[test]
fn postgres_defaults_put_nulls_last_ascending_and_first_descending() {
    let ascending = [KeyColumn::ascending(KeyKind::Int)];
    let descending = [KeyColumn::descending(KeyKind::Int)];
    assert!(encode(&ascending, &[KeyValue::Int(i64::MAX)]) < encode(&ascending, &[KeyValue::Null]));
    assert!(
        encode(&descending, &[KeyValue::Null]) < encode(&descending, &[KeyValue::Int(i64::MAX)])
    );
    assert!(encode(&descending, &[KeyValue::Int(2)]) < encode(&descending, &[KeyValue::Int(1)]));
}

#[test]
fn wrong_kind_and_arity_are_errors() {
    let columns = [KeyColumn::ascending(KeyKind::Int)];
    let mut out = Vec::new();
    assert!(encode_key(&columns, &[KeyValue::Text("x".into())], &mut out).is_err());
    assert!(encode_key(&columns, &[], &mut out).is_err());
}

fn numeric(text: &str) -> KeyValue {
    KeyValue::Numeric(text.parse().unwrap())
}

#[test]
fn numeric_scale_is_not_part_of_the_key() {
    let columns = [KeyColumn::ascending(KeyKind::Numeric)];
    let one = encode(&columns, &[numeric("1")]);
    assert_eq!(encode(&columns, &[numeric("1.0")]), one);
    assert_eq!(encode(&columns, &[numeric("1.00")]), one);
    assert_eq!(encode(&columns, &[numeric("-0.00")]), encode(&columns, &[numeric("0")]));
    let decoded = decode_key(&columns, &encode(&columns, &[numeric("1.50")])).unwrap();
    match &decoded[..] {
        [KeyValue::Numeric(number)] => assert_eq!(number.to_string(), "1.5"),
        other => panic!("decoded {other:?}"),
    }
    assert_eq!(numeric("1.0"), numeric("1.00"));
}

#[test]
fn numeric_layout_matches_the_design_doc() {
    let ascending = [KeyColumn::ascending(KeyKind::Numeric)];
    let descending = [KeyColumn::descending(KeyKind::Numeric)];
    let cases: [(&str, &[u8]); 9] = [
        ("0", &[0x01, 0x01]),
        ("1", &[0x01, 0x02, 0x81, 0x02, 0x00]),
        ("1.5", &[0x01, 0x02, 0x81, 0x02, 0x33, 0x00]),
        ("100", &[0x01, 0x02, 0x82, 0x02, 0x00]),
        ("123.45", &[0x01, 0x02, 0x82, 0x02, 0x18, 0x2E, 0x00]),
        ("0.01", &[0x01, 0x02, 0x80, 0x02, 0x00]),
        ("0.001", &[0x01, 0x02, 0x7F, 0x0B, 0x00]),
        ("-1", &[0x01, 0x00, 0x7E, 0xFD, 0xFF]),
        ("-1.5", &[0x01, 0x00, 0x7E, 0xFD, 0xCC, 0xFF]),
    ];
    for (text, expected) in cases {
        assert_eq!(encode(&ascending, &[numeric(text)]), expected, "{text}");
        let inverted: Vec<u8> = expected.iter().map(|byte| !byte).collect();
        assert_eq!(encode(&descending, &[numeric(text)]), inverted, "{text} DESC");
    }
    // Decimal's extremes.
    for number in [Decimal::MAX, Decimal::MIN, Decimal::new(1, 28), Decimal::new(-1, 28)] {
        let bytes = encode(&ascending, &[KeyValue::Numeric(number)]);
        assert!(bytes.len() <= 19, "{number} takes {} bytes", bytes.len());
        assert_eq!(decode_key(&ascending, &bytes).unwrap(), [KeyValue::Numeric(number)]);
    }
}

#[test]
fn corrupt_numeric_keys_are_errors() {
    let columns = [KeyColumn::ascending(KeyKind::Numeric)];
    let cases: [(&[u8], &str); 9] = [
        (&[0x01, 0x03], "bad numeric sign"),
        (&[0x01, 0x02, 0x81, 0x02], "truncated"),
        (&[0x01, 0x02, 0x81, 0x00], "numeric not canonical"),
        (&[0x01, 0x02, 0x81, 0x01, 0x02, 0x00], "numeric not canonical"),
        (&[0x01, 0x02, 0x81, 0x02, 0x01, 0x00], "numeric not canonical"),
        (&[0x01, 0x02, 0x81, 0x65, 0x00], "bad numeric group"),
        (&[0x01, 0x02, 0xFF, 0x02, 0x00], "numeric out of range"),
        (&[0x01, 0x02, 0x00, 0x02, 0x00], "numeric out of range"),
        (&[0x01, 0x02, 0x90, 0x02, 0x00], "numeric out of range"),
    ];
    for (bytes, detail) in cases {
        assert_eq!(
            decode_key(&columns, bytes),
            Err(tierdb_access::KeyError::Corrupt { column: 0, detail }),
            "{bytes:x?}"
        );
    }
    let sixteen_groups: Vec<u8> =
        [0x01, 0x02, 0x90].into_iter().chain([0x02; 16]).chain([0x00]).collect();
    assert!(decode_key(&columns, &sixteen_groups).is_err());
}
