//! Row locks of locking reads (`lock_row`): PostgreSQL's conflict table between the four
//! modes and against writers, NOWAIT, SKIP LOCKED, release at commit, rollback and rollback
//! to a savepoint, the READ COMMITTED re-read and the REPEATABLE READ 40001, and the limits on
//! a wait (lock timeout, statement timeout, cancel).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use tierdb_engine::{
    ColumnDef, Engine, EngineError, IsolationLevel, KeyKind, LockMode, LockOutcome, RowKey,
    TableDef, Transaction, Value, WaitLimits, WaitPolicy,
};
use tierdb_storage::{PageStore, StoreConfig};

const MODES: [LockMode; 4] =
    [LockMode::KeyShare, LockMode::Share, LockMode::NoKeyUpdate, LockMode::Update];

fn open(directory: &Path) -> Arc<Engine> {
    let store = Arc::new(PageStore::open(StoreConfig::local(directory).unwrap()).unwrap());
    let engine = Engine::open(store).unwrap();
    let int = |name: &str| ColumnDef { name: name.into(), kind: KeyKind::Int, nullable: false };
    engine
        .create_table(TableDef {
            name: "counter".into(),
            columns: vec![int("id"), int("n")],
            primary_key: Some(vec![0]),
            indexes: vec![],
        })
        .unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 1..=3 {
        txn.insert("counter", vec![Value::Int(id), Value::Int(0)]).unwrap();
    }
    txn.commit().unwrap();
    engine
}

fn key_of(engine: &Engine, id: i64) -> RowKey {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let (key, _) = txn.get_keyed("counter", &[Value::Int(id)]).unwrap().unwrap();
    txn.commit().unwrap();
    key
}

fn lock(txn: &mut Transaction, key: &[u8], mode: LockMode, policy: WaitPolicy) -> LockOutcome {
    txn.lock_row("counter", key, mode, policy).unwrap()
}

fn timeout_ms(milliseconds: u64) -> WaitLimits {
    WaitLimits { lock_timeout_ms: milliseconds, ..WaitLimits::default() }
}

fn set_n(txn: &mut Transaction, id: i64, n: i64) -> Result<bool, EngineError> {
    txn.update("counter", &[Value::Int(id)], &mut |row| Some(vec![row[0].clone(), Value::Int(n)]))
}

/// Every pair of modes held and requested behaves as PostgreSQL's table says: a conflicting
/// request with NOWAIT fails with 55P03 naming the relation, a compatible one succeeds.
#[test]
fn conflict_table_between_lock_modes() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let key = key_of(&engine, 1);
    for held in MODES {
        for requested in MODES {
            let mut holder = engine.begin(IsolationLevel::ReadCommitted).unwrap();
            assert!(matches!(
                lock(&mut holder, &key, held, WaitPolicy::Block),
                LockOutcome::Locked { changed: false, .. }
            ));
            let mut other = engine.begin(IsolationLevel::ReadCommitted).unwrap();
            let outcome = other.lock_row("counter", &key, requested, WaitPolicy::NoWait);
            if requested.conflicts_with(held) {
                let error = outcome.unwrap_err();
                assert_eq!(error.sqlstate(), "55P03", "{held:?} then {requested:?}");
                assert_eq!(
                    error.to_string(),
                    "could not obtain lock on row in relation \"counter\""
                );
            } else {
                assert!(
                    matches!(outcome.unwrap(), LockOutcome::Locked { .. }),
                    "{held:?} then {requested:?}"
                );
            }
            other.rollback().unwrap();
            holder.commit().unwrap();
        }
    }
}

/// Writers against locks: an UPDATE conflicts with FOR SHARE and stronger, not with FOR KEY
/// SHARE; a DELETE conflicts with every mode; a locker waits for a running writer.
#[test]
fn writers_conflict_with_locks() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let key = key_of(&engine, 1);
    for held in MODES {
        let mut holder = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        lock(&mut holder, &key, held, WaitPolicy::Block);
        let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        writer.set_wait_limits(timeout_ms(50));
        let updated = set_n(&mut writer, 1, 5);
        if held == LockMode::KeyShare {
            assert!(updated.unwrap());
        } else {
            let error = updated.unwrap_err();
            assert_eq!(error.sqlstate(), "55P03");
            assert_eq!(error.to_string(), "canceling statement due to lock timeout");
        }
        writer.rollback().unwrap();
        let mut deleter = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        deleter.set_wait_limits(timeout_ms(50));
        assert_eq!(deleter.delete("counter", &[Value::Int(1)]).unwrap_err().sqlstate(), "55P03");
        deleter.rollback().unwrap();
        holder.commit().unwrap();
    }
    // A running writer's row cannot be locked (NOWAIT), nor skipped over by SKIP LOCKED.
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    set_n(&mut writer, 2, 7).unwrap();
    let key = key_of(&engine, 2);
    let mut locker = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error = locker.lock_row("counter", &key, LockMode::KeyShare, WaitPolicy::NoWait);
    assert_eq!(error.unwrap_err().sqlstate(), "55P03");
    locker.rollback().unwrap();
    let mut locker = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(
        lock(&mut locker, &key, LockMode::Share, WaitPolicy::SkipLocked),
        LockOutcome::Skipped
    );
    locker.rollback().unwrap();
    writer.rollback().unwrap();
}

/// Locks go at commit, at rollback and (those taken after it) at a rollback to a savepoint;
/// a lock taken before the savepoint stays.
#[test]
fn locks_are_released_at_the_end_and_at_savepoint_rollback() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let (first, second) = (key_of(&engine, 1), key_of(&engine, 2));
    let probe = |key: &[u8]| {
        let mut other = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        let outcome = other.lock_row("counter", key, LockMode::Update, WaitPolicy::SkipLocked);
        other.rollback().unwrap();
        outcome.unwrap() != LockOutcome::Skipped
    };
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    lock(&mut txn, &first, LockMode::Update, WaitPolicy::Block);
    txn.savepoint("s").unwrap();
    lock(&mut txn, &second, LockMode::Share, WaitPolicy::Block);
    // An upgrade after the savepoint goes back to the mode held before it.
    lock(&mut txn, &first, LockMode::Update, WaitPolicy::Block);
    assert!(!probe(&first) && !probe(&second));
    txn.rollback_to_savepoint("s").unwrap();
    assert!(!probe(&first), "taken before the savepoint: kept");
    assert!(probe(&second), "taken after the savepoint: released");
    txn.commit().unwrap();
    assert!(probe(&first));
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    lock(&mut txn, &first, LockMode::Share, WaitPolicy::Block);
    assert!(!probe(&first));
    txn.rollback().unwrap();
    assert!(probe(&first));
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    lock(&mut txn, &first, LockMode::Share, WaitPolicy::Block);
    drop(txn);
    assert!(probe(&first), "dropping a transaction releases its locks");
}

/// A locker that waited for a concurrent update gets the new version under READ COMMITTED
/// (`changed`), and 40001 under REPEATABLE READ; a concurrently deleted row is `Gone`.
#[test]
fn waiting_locker_sees_the_committed_update() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let key = key_of(&engine, 1);
    for isolation in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        set_n(&mut writer, 1, 10).unwrap();
        let mut locker = engine.begin(isolation).unwrap();
        locker.begin_statement().unwrap();
        let key = key.clone();
        let waiting = thread::spawn(move || {
            let outcome = locker.lock_row("counter", &key, LockMode::Update, WaitPolicy::Block);
            let _ = locker.rollback();
            outcome
        });
        thread::sleep(Duration::from_millis(100));
        writer.commit().unwrap();
        let outcome = waiting.join().unwrap();
        match isolation {
            IsolationLevel::ReadCommitted => assert_eq!(
                outcome.unwrap(),
                LockOutcome::Locked { row: vec![Value::Int(1), Value::Int(10)], changed: true }
            ),
            IsolationLevel::RepeatableRead => {
                assert_eq!(outcome.unwrap_err().sqlstate(), "40001")
            }
        }
    }
    let mut deleter = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    deleter.delete("counter", &[Value::Int(1)]).unwrap();
    deleter.commit().unwrap();
    let mut locker = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(lock(&mut locker, &key, LockMode::Update, WaitPolicy::Block), LockOutcome::Gone);
    locker.commit().unwrap();
}

/// A blocked lock wait ends with 57014 on a cancel request or at the statement deadline, and
/// with 55P03 at the lock timeout; the transaction is then failed (25P02) until rollback.
#[test]
fn lock_waits_end_on_cancel_and_timeouts() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let key = key_of(&engine, 3);
    let mut holder = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    lock(&mut holder, &key, LockMode::Update, WaitPolicy::Block);
    let cancel = Arc::new(AtomicBool::new(false));
    let cases = [
        (
            WaitLimits { cancel: Some(Arc::clone(&cancel)), ..WaitLimits::default() },
            "57014",
            "canceling statement due to user request",
        ),
        (
            WaitLimits {
                statement_deadline: Some(Instant::now() + Duration::from_millis(100)),
                ..WaitLimits::default()
            },
            "57014",
            "canceling statement due to statement timeout",
        ),
        (timeout_ms(100), "55P03", "canceling statement due to lock timeout"),
    ];
    for (limits, sqlstate, message) in cases {
        let mut waiter = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        waiter.set_wait_limits(limits);
        let flag = Arc::clone(&cancel);
        let canceler = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let started = Instant::now();
        let error =
            waiter.lock_row("counter", &key, LockMode::Share, WaitPolicy::Block).unwrap_err();
        canceler.join().unwrap();
        cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        assert_eq!((error.sqlstate(), error.to_string().as_str()), (sqlstate, message));
        assert!(started.elapsed() < Duration::from_secs(10), "the wait ended");
        assert_eq!(set_n(&mut waiter, 2, 1).unwrap_err().sqlstate(), "25P02");
        waiter.rollback().unwrap();
    }
    holder.commit().unwrap();
}

/// `delete_by_key_if` deletes only when the check passes on the latest version.
#[test]
fn conditional_delete_checks_the_latest_version() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let key = key_of(&engine, 1);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let zero = |row: &Vec<Value>| row[1] == Value::Int(0);
    set_n(&mut txn, 1, 4).unwrap();
    assert!(!txn.delete_by_key_if("counter", &key, &mut |row| zero(row)).unwrap());
    set_n(&mut txn, 1, 0).unwrap();
    assert!(txn.delete_by_key_if("counter", &key, &mut |row| zero(row)).unwrap());
    txn.commit().unwrap();
}
