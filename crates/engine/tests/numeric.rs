//! Numeric columns: a numeric primary key finds rows by value whatever the scale (PostgreSQL:
//! 1.5 = 1.50), rows keep the scale they were written with, scans and a secondary index
//! return numeric order, and the catalog keeps the column kind across a restart.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use tierdb_engine::{
    ColumnDef, Decimal, Engine, EngineError, IndexDef, IsolationLevel, KeyKind, TableDef, Value,
};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 128 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

fn numeric(text: &str) -> Value {
    Value::Numeric(text.parse::<Decimal>().unwrap())
}

fn text_of(value: &Value) -> String {
    match value {
        Value::Numeric(number) => number.to_string(),
        other => panic!("numeric expected, got {other:?}"),
    }
}

fn prices(engine: &Arc<Engine>) {
    engine
        .create_table(TableDef {
            name: "prices".into(),
            columns: vec![
                ColumnDef { name: "amount".into(), kind: KeyKind::Numeric, nullable: false },
                ColumnDef { name: "rate".into(), kind: KeyKind::Numeric, nullable: true },
            ],
            primary_key: Some(vec![0]),
            indexes: vec![IndexDef {
                name: "prices_rate_idx".into(),
                columns: vec![1],
                unique: false,
            }],
        })
        .unwrap();
}

#[test]
fn numeric_primary_key_finds_rows_by_value() {
    let directory = tempfile::tempdir().unwrap();
    {
        let (store, engine) = open(directory.path());
        prices(&engine);
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        txn.insert("prices", vec![numeric("1.50"), numeric("0.250")]).unwrap();
        for (amount, rate) in [("-2", "3"), ("0.001", "-1.0"), ("10", "0.25"), ("0", "1e-28")] {
            let rate =
                if rate == "1e-28" { Value::Numeric(Decimal::new(1, 28)) } else { numeric(rate) };
            txn.insert("prices", vec![numeric(amount), rate]).unwrap();
        }
        txn.insert("prices", vec![Value::Numeric(Decimal::MAX), Value::Null]).unwrap();
        txn.commit().unwrap();

        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for probe in ["1.5", "1.50", "1.5000"] {
            let row = txn.get("prices", &[numeric(probe)]).unwrap().expect("found by value");
            assert_eq!(text_of(&row[0]), "1.50", "the row keeps its scale");
            assert_eq!(text_of(&row[1]), "0.250");
        }
        assert!(txn.get("prices", &[numeric("1.51")]).unwrap().is_none());
        // The same value at another scale is the same key.
        let duplicate = txn.insert("prices", vec![numeric("1.5"), Value::Null]).unwrap_err();
        assert!(matches!(duplicate, EngineError::UniqueViolation { .. }), "{duplicate:?}");
        txn.rollback().unwrap();
        store.flush_all().unwrap();
    }
    // After a restart the catalog still says numeric, and the rows keep their scale.
    let (_store, engine) = open(directory.path());
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let row = txn.get("prices", &[numeric("1.5")]).unwrap().expect("found after restart");
    assert_eq!(text_of(&row[0]), "1.50");
    let all = txn.scan("prices", Bound::Unbounded, Bound::Unbounded).unwrap();
    let amounts: Vec<String> = all.iter().map(|row| text_of(&row[0])).collect();
    assert_eq!(amounts, ["-2", "0", "0.001", "1.50", "10", &Decimal::MAX.to_string()]);
    let low = [numeric("0")];
    let high = [numeric("1.5")];
    let range = txn.scan("prices", Bound::Excluded(&low[..]), Bound::Included(&high[..])).unwrap();
    let amounts: Vec<String> = range.iter().map(|row| text_of(&row[0])).collect();
    assert_eq!(amounts, ["0.001", "1.50"]);
    // The secondary index on rate: 0.25 and 0.250 are equal; NULL sorts last.
    let low = [numeric("0.25")];
    let high = [numeric("0.2500")];
    let rates = txn
        .index_scan(
            "prices",
            "prices_rate_idx",
            Bound::Included(&low[..]),
            Bound::Included(&high[..]),
        )
        .unwrap();
    let mut amounts: Vec<String> = rates.iter().map(|row| text_of(&row[0])).collect();
    amounts.sort();
    assert_eq!(amounts, ["1.50", "10"]);
    let ordered =
        txn.index_scan("prices", "prices_rate_idx", Bound::Unbounded, Bound::Unbounded).unwrap();
    let rates: Vec<Option<Decimal>> = ordered
        .iter()
        .map(|row| match &row[1] {
            Value::Numeric(number) => Some(*number),
            _ => None,
        })
        .collect();
    let mut expected = rates.clone();
    expected.sort_by(|left, right| match (left, right) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(left), Some(right)) => left.cmp(right),
    });
    assert_eq!(rates, expected);
    assert_eq!(rates.len(), 6);
    txn.commit().unwrap();
}
