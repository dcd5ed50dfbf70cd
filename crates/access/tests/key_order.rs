//! The key encoding against a model: for random composite keys, byte order of the encodings
//! equals PostgreSQL's order of the values (NULL placement, DESC, NaN above infinity, -0 = 0,
//! "C" collation for text), and decoding returns the values.

use std::cmp::Ordering;

use proptest::prelude::*;
use tierdb_access::{decode_key, encode_key, KeyColumn, KeyKind, KeyValue};

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
            Just(KeyKind::Bytes)
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
