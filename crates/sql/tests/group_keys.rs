//! Grouping keys: values that compare equal group together (an integer and a numeric of the
//! same value, numerics of different scales), and different values never collide.

use rust_decimal::Decimal;
use tierdb_sql::Datum;

fn key(datum: &Datum) -> Vec<u8> {
    let mut out = Vec::new();
    datum.group_key(&mut out);
    out
}

#[test]
fn equal_numbers_have_equal_keys_and_different_ones_do_not() {
    for number in [0i64, 1, -1, 42, -9_000, i64::MAX, i64::MIN, 10, 100, -100] {
        let integer = key(&Datum::Int(number));
        assert_eq!(integer, key(&Datum::Numeric(Decimal::from(number))), "{number}");
        let scaled = Decimal::from_i128_with_scale(i128::from(number) * 1000, 3);
        assert_eq!(integer, key(&Datum::Numeric(scaled)), "{number} as {scaled}");
    }
    let values = [
        Datum::Int(1),
        Datum::Int(10),
        Datum::Int(-1),
        Datum::Numeric(Decimal::new(15, 1)),
        Datum::Numeric(Decimal::new(-15, 1)),
        Datum::Numeric(Decimal::new(105, 1)),
        Datum::Text("1".into()),
        Datum::Float(1.0),
    ];
    for (index, left) in values.iter().enumerate() {
        for right in &values[index + 1..] {
            assert_ne!(key(left), key(right), "{left:?} and {right:?}");
        }
    }
}
