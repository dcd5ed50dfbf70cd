//! Transactions: the bank-transfer invariant under READ COMMITTED and REPEATABLE READ,
//! isolation anomalies that must not occur, the errors PostgreSQL raises (40001, 40P01,
//! 23505, 25P02), savepoints, and recovery of committed versus uncommitted work.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{ColumnDef, Engine, EngineError, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 256 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

fn int_column(name: &str) -> ColumnDef {
    ColumnDef { name: name.to_string(), kind: KeyKind::Int, nullable: false }
}

fn accounts(engine: &Arc<Engine>, count: i64, balance: i64) {
    engine
        .create_table(TableDef {
            name: "accounts".into(),
            columns: vec![int_column("id"), int_column("balance")],
            primary_key: Some(vec![0]),
            indexes: vec![],
        })
        .unwrap();
    engine
        .create_table(TableDef {
            name: "transfers".into(),
            columns: vec![
                int_column("id"),
                int_column("source"),
                int_column("target"),
                int_column("amount"),
            ],
            primary_key: Some(vec![0]),
            indexes: vec![],
        })
        .unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..count {
        txn.insert("accounts", vec![Value::Int(id), Value::Int(balance)]).unwrap();
    }
    txn.commit().unwrap();
}

fn balance(row: &[Value]) -> i64 {
    match row[1] {
        Value::Int(balance) => balance,
        _ => panic!("balance is an integer"),
    }
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        _ => panic!("integer expected"),
    }
}

/// One transfer: debit, credit and a log row, committed together; retried on 40001/40P01.
fn transfer(
    engine: &Arc<Engine>,
    isolation: IsolationLevel,
    id: i64,
    source: i64,
    target: i64,
    amount: i64,
) -> u64 {
    let mut retries = 0;
    loop {
        let mut txn = engine.begin(isolation).unwrap();
        let outcome = (|| -> Result<(), EngineError> {
            for (account, delta) in [(source, -amount), (target, amount)] {
                let updated = txn.update("accounts", &[Value::Int(account)], &mut |row| {
                    Some(vec![row[0].clone(), Value::Int(balance(row) + delta)])
                })?;
                assert!(updated, "account {account} exists");
            }
            txn.insert(
                "transfers",
                vec![Value::Int(id), Value::Int(source), Value::Int(target), Value::Int(amount)],
            )
        })();
        match outcome {
            Ok(()) => {
                txn.commit().unwrap();
                return retries;
            }
            Err(error) if error.is_retryable() => {
                txn.rollback().unwrap();
                retries += 1;
            }
            Err(error) => panic!("transfer failed: {error}"),
        }
    }
}

fn bank(isolation: IsolationLevel) {
    const ACCOUNTS: i64 = 100;
    const THREADS: i64 = 8;
    const TRANSFERS_PER_THREAD: i64 = 12_500;
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    accounts(&engine, ACCOUNTS, 1_000);
    let retries = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (engine, retries) = (&engine, &retries);
            scope.spawn(move || {
                let mut random = SplitMix64::new(u64::try_from(thread).unwrap() + 7);
                for sequence in 0..TRANSFERS_PER_THREAD {
                    let source = i64::try_from(random.below(100)).unwrap();
                    let target = (source + 1 + i64::try_from(random.below(99)).unwrap()) % ACCOUNTS;
                    let amount = 1 + i64::try_from(random.below(50)).unwrap();
                    let id = thread * 1_000_000 + sequence;
                    retries.fetch_add(
                        transfer(engine, isolation, id, source, target, amount),
                        Ordering::Relaxed,
                    );
                }
            });
        }
    });
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.scan("accounts", Bound::Unbounded, Bound::Unbounded).unwrap();
    let total: i64 = rows.iter().map(|row| balance(row)).sum();
    assert_eq!(total, ACCOUNTS * 1_000, "money was created or destroyed");
    // Every committed transfer is present, and the balances are exactly their sum.
    let log = txn.scan("transfers", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(i64::try_from(log.len()).unwrap(), THREADS * TRANSFERS_PER_THREAD);
    let mut expected = vec![1_000i64; usize::try_from(ACCOUNTS).unwrap()];
    for row in &log {
        expected[usize::try_from(int(&row[1])).unwrap()] -= int(&row[3]);
        expected[usize::try_from(int(&row[2])).unwrap()] += int(&row[3]);
    }
    let actual: Vec<i64> = rows.iter().map(|row| balance(row)).collect();
    assert_eq!(actual, expected);
    txn.commit().unwrap();
    eprintln!(
        "bank {isolation:?}: {} transfers, {} retries",
        log.len(),
        retries.load(Ordering::Relaxed)
    );
}

#[test]
fn bank_transfers_read_committed() {
    bank(IsolationLevel::ReadCommitted);
}

#[test]
fn bank_transfers_repeatable_read() {
    bank(IsolationLevel::RepeatableRead);
}

fn single_row() -> (tempfile::TempDir, Arc<PageStore>, Arc<Engine>) {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    accounts(&engine, 2, 100);
    (directory, store, engine)
}

fn read_balance(txn: &mut tierdb_engine::Transaction, id: i64) -> i64 {
    balance(&txn.get("accounts", &[Value::Int(id)]).unwrap().unwrap())
}

fn set_balance(
    txn: &mut tierdb_engine::Transaction,
    id: i64,
    value: i64,
) -> Result<bool, EngineError> {
    txn.update("accounts", &[Value::Int(id)], &mut |row| {
        Some(vec![row[0].clone(), Value::Int(value)])
    })
}

#[test]
fn no_dirty_reads() {
    let (_directory, _store, engine) = single_row();
    for isolation in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let mut writer = engine.begin(isolation).unwrap();
        set_balance(&mut writer, 0, 555).unwrap();
        let mut reader = engine.begin(isolation).unwrap();
        assert_eq!(read_balance(&mut reader, 0), 100, "read an uncommitted change");
        writer.rollback().unwrap();
        assert_eq!(read_balance(&mut reader, 0), 100);
        reader.commit().unwrap();
    }
}

#[test]
fn read_committed_sees_new_commits_repeatable_read_does_not() {
    let (_directory, _store, engine) = single_row();
    let mut committed = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut repeatable = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert_eq!(read_balance(&mut committed, 0), 100);
    assert_eq!(read_balance(&mut repeatable, 0), 100);
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_balance(&mut writer, 0, 200).unwrap();
    writer.commit().unwrap();
    assert_eq!(read_balance(&mut committed, 0), 200, "READ COMMITTED sees the new commit");
    assert_eq!(read_balance(&mut repeatable, 0), 100, "non-repeatable read under REPEATABLE READ");
    committed.commit().unwrap();
    repeatable.commit().unwrap();
}

#[test]
fn repeatable_read_first_updater_wins() {
    let (_directory, _store, engine) = single_row();
    // The row changed after the snapshot was taken: 40001.
    let mut late = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert_eq!(read_balance(&mut late, 0), 100);
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_balance(&mut writer, 0, 150).unwrap();
    writer.commit().unwrap();
    let error = set_balance(&mut late, 0, 1).unwrap_err();
    assert_eq!(error.sqlstate(), "40001", "{error}");
    late.rollback().unwrap();

    // A concurrent updater that commits while we wait: 40001; one that aborts: we proceed.
    for commit_first in [true, false] {
        let mut first = engine.begin(IsolationLevel::RepeatableRead).unwrap();
        let mut second = engine.begin(IsolationLevel::RepeatableRead).unwrap();
        assert!(read_balance(&mut second, 1) > 0);
        set_balance(&mut first, 1, 7).unwrap();
        let outcome = std::thread::scope(|scope| {
            let waiter = scope.spawn(move || {
                let outcome = set_balance(&mut second, 1, 9);
                let _ = second.rollback();
                outcome
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            if commit_first {
                first.commit().unwrap()
            } else {
                first.rollback().unwrap()
            }
            waiter.join().unwrap()
        });
        if commit_first {
            assert_eq!(outcome.unwrap_err().sqlstate(), "40001");
        } else {
            assert!(outcome.unwrap());
        }
    }
}

#[test]
fn read_committed_update_rechecks_the_latest_version_no_lost_update() {
    let (_directory, _store, engine) = single_row();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let engine = &engine;
            scope.spawn(move || {
                for _ in 0..250 {
                    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    txn.update("accounts", &[Value::Int(0)], &mut |row| {
                        Some(vec![row[0].clone(), Value::Int(balance(row) + 1)])
                    })
                    .unwrap();
                    txn.commit().unwrap();
                }
            });
        }
    });
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(read_balance(&mut txn, 0), 1_100, "an increment was lost");
}

#[test]
fn deadlock_is_detected_with_40p01() {
    let (_directory, _store, engine) = single_row();
    let mut first = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut second = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_balance(&mut first, 0, 1).unwrap();
    set_balance(&mut second, 1, 2).unwrap();
    std::thread::scope(|scope| {
        let blocked = scope.spawn(move || {
            let outcome = set_balance(&mut first, 1, 3);
            (outcome.map(|_| ()), first)
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let started = std::time::Instant::now();
        let error = set_balance(&mut second, 0, 4).unwrap_err();
        assert_eq!(error.sqlstate(), "40P01", "{error}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "deadlock took {:?}",
            started.elapsed()
        );
        second.rollback().unwrap();
        let (outcome, first) = blocked.join().unwrap();
        outcome.unwrap();
        first.commit().unwrap();
    });
}

#[test]
fn errors_fail_the_transaction_until_rollback_and_savepoints_recover() {
    let (_directory, _store, engine) = single_row();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("accounts", vec![Value::Int(10), Value::Int(1)]).unwrap();
    txn.savepoint("before_duplicate").unwrap();
    txn.insert("accounts", vec![Value::Int(11), Value::Int(1)]).unwrap();
    let duplicate = txn.insert("accounts", vec![Value::Int(0), Value::Int(1)]).unwrap_err();
    assert_eq!(duplicate.sqlstate(), "23505");
    assert_eq!(txn.get("accounts", &[Value::Int(10)]).unwrap_err().sqlstate(), "25P02");
    txn.rollback_to_savepoint("before_duplicate").unwrap();
    assert!(
        txn.get("accounts", &[Value::Int(11)]).unwrap().is_none(),
        "rolled back to the savepoint"
    );
    assert!(txn.get("accounts", &[Value::Int(10)]).unwrap().is_some());
    txn.commit().unwrap();
    let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(check.get("accounts", &[Value::Int(10)]).unwrap().is_some());
    assert!(check.get("accounts", &[Value::Int(11)]).unwrap().is_none());
    let null = check.insert("accounts", vec![Value::Int(12), Value::Null]).unwrap_err();
    assert_eq!(null.sqlstate(), "23502");
    check.rollback().unwrap();
    let mut failed = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(failed.get("missing", &[Value::Int(1)]).unwrap_err().sqlstate(), "42P01");
    assert_eq!(failed.commit().unwrap_err().sqlstate(), "25P02");
}

#[test]
fn crash_keeps_committed_and_drops_uncommitted_work() {
    let directory = tempfile::tempdir().unwrap();
    {
        let (store, engine) = open(directory.path());
        accounts(&engine, 3, 100);
        let mut committed = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        set_balance(&mut committed, 0, 111).unwrap();
        committed.commit().unwrap();
        let mut uncommitted = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        set_balance(&mut uncommitted, 1, 999).unwrap();
        uncommitted.insert("accounts", vec![Value::Int(50), Value::Int(5)]).unwrap();
        store.flush_all().unwrap();
        // A crash: no rollback runs, nothing more is written.
        uncommitted.abandon_as_if_crashed();
        drop(engine);
        Arc::try_unwrap(store).ok().expect("sole owner").abandon();
    }
    let (_store, engine) = open(directory.path());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(read_balance(&mut txn, 0), 111, "a committed change was lost");
    assert_eq!(read_balance(&mut txn, 1), 100, "an uncommitted change survived the crash");
    assert!(
        txn.get("accounts", &[Value::Int(50)]).unwrap().is_none(),
        "an uncommitted insert survived"
    );
    // The dead transaction's row lock is gone, and its version does not hide the row from
    // writers: the row is found and updated.
    assert!(set_balance(&mut txn, 1, 101).unwrap(), "a dead transaction's version hid the row");
    let found = txn.update("accounts", &[Value::Int(50)], &mut |row| Some(row.clone())).unwrap();
    assert!(!found, "the dead transaction's insert is visible to writers");
    txn.commit().unwrap();
}

/// Regression: deleting a row this transaction inserted used to remove the version, and with
/// it the row lock: another transaction could take the key, and the first one's rollback then
/// destroyed its committed row.
#[test]
fn delete_of_own_insert_keeps_the_row_locked() {
    let (_directory, _store, engine) = single_row();
    let mut first = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    first.insert("accounts", vec![Value::Int(77), Value::Int(1)]).unwrap();
    assert!(first.delete("accounts", &[Value::Int(77)]).unwrap());
    std::thread::scope(|scope| {
        let engine = &engine;
        let second = scope.spawn(move || {
            let mut second = engine.begin(IsolationLevel::ReadCommitted).unwrap();
            let started = std::time::Instant::now();
            second.insert("accounts", vec![Value::Int(77), Value::Int(2)]).unwrap();
            second.commit().unwrap();
            started.elapsed()
        });
        std::thread::sleep(std::time::Duration::from_millis(150));
        first.rollback().unwrap();
        let waited = second.join().unwrap();
        assert!(
            waited >= std::time::Duration::from_millis(100),
            "the second insert did not wait: {waited:?}"
        );
    });
    let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(
        read_balance(&mut check, 77),
        2,
        "the rollback destroyed the other transaction's row"
    );
}

/// Read-only transactions get no id (PostgreSQL's virtual transactions): they cost no id,
/// no commit-log write and no fsync, so the id space lasts for writes only.
#[test]
fn read_only_transactions_consume_no_ids() {
    let (_directory, _store, engine) = single_row();
    let mut first = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_balance(&mut first, 0, 1).unwrap();
    let before = first.id();
    first.commit().unwrap();
    for _ in 0..10_000 {
        let mut reader = engine.begin(IsolationLevel::RepeatableRead).unwrap();
        assert_eq!(read_balance(&mut reader, 0), 1);
        assert_eq!(reader.id(), 0, "a reader got an id");
        reader.commit().unwrap();
    }
    let mut second = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_balance(&mut second, 0, 2).unwrap();
    assert_eq!(second.id(), before + 1);
    second.commit().unwrap();
}
