//! The bank workload for the engine crash test. `tierdb debug bank-worker` moves money
//! between accounts from several threads, each transfer a transaction that debits, credits and
//! logs it; it prints `ack ID` once the transfer's commit has returned (durable). The test
//! kills it with SIGKILL at a random moment. With `--verify FILE` it recovers instead, checks
//! that every id listed in FILE is in the log, that the total balance is unchanged and that
//! every balance equals its initial amount plus the logged transfers (so no half transfer is
//! visible), and prints `transfers N`.

use std::collections::HashSet;
use std::io::Write;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tierdb_common::SplitMix64;
use tierdb_engine::{ColumnDef, Engine, EngineError, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

const ACCOUNTS: i64 = 50;
const INITIAL_BALANCE: i64 = 1_000;
/// Transfer ids of thread t are t * ID_SPACE + sequence.
const ID_SPACE: i64 = 1_000_000_000;

#[derive(clap::Args)]
pub struct BankWorkerArgs {
    #[arg(long)]
    data_dir: PathBuf,
    #[arg(long, default_value_t = 8)]
    threads: i64,
    /// rc (READ COMMITTED) or rr (REPEATABLE READ).
    #[arg(long, default_value = "rc")]
    isolation: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Verify against the acknowledged ids listed in this file instead of running.
    #[arg(long)]
    verify: Option<PathBuf>,
}

fn int_column(name: &str) -> ColumnDef {
    ColumnDef { name: name.to_string(), kind: KeyKind::Int, nullable: false }
}

fn int(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(number) => Ok(*number),
        other => Err(format!("expected an integer, found {other:?}")),
    }
}

fn setup(engine: &Arc<Engine>) -> Result<(), EngineError> {
    if engine.table_names().iter().any(|name| name == "accounts") {
        return Ok(());
    }
    engine.create_table(TableDef {
        name: "accounts".into(),
        columns: vec![int_column("id"), int_column("balance")],
        primary_key: Some(vec![0]),
        indexes: vec![],
    })?;
    engine.create_table(TableDef {
        name: "transfers".into(),
        columns: vec![
            int_column("id"),
            int_column("source"),
            int_column("target"),
            int_column("amount"),
        ],
        primary_key: Some(vec![0]),
        indexes: vec![],
    })?;
    let mut txn = engine.begin(IsolationLevel::ReadCommitted)?;
    for id in 0..ACCOUNTS {
        txn.insert("accounts", vec![Value::Int(id), Value::Int(INITIAL_BALANCE)])?;
    }
    txn.commit()
}

fn transfer(
    engine: &Arc<Engine>,
    isolation: IsolationLevel,
    id: i64,
    source: i64,
    target: i64,
    amount: i64,
) -> Result<(), String> {
    loop {
        let mut txn = engine.begin(isolation).map_err(|error| error.to_string())?;
        let outcome = (|| -> Result<(), EngineError> {
            for (account, delta) in [(source, -amount), (target, amount)] {
                let updated =
                    txn.update("accounts", &[Value::Int(account)], &mut |row| match row[1] {
                        Value::Int(balance) => {
                            Some(vec![row[0].clone(), Value::Int(balance + delta)])
                        }
                        _ => None,
                    })?;
                if !updated {
                    return Err(EngineError::InvalidRow {
                        detail: format!("account={account} not found"),
                    });
                }
            }
            txn.insert(
                "transfers",
                vec![Value::Int(id), Value::Int(source), Value::Int(target), Value::Int(amount)],
            )
        })();
        match outcome {
            Ok(()) => return txn.commit().map_err(|error| error.to_string()),
            Err(error) if error.is_retryable() => {
                txn.rollback().map_err(|error| error.to_string())?
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}

fn run_thread(
    engine: &Arc<Engine>,
    args: &BankWorkerArgs,
    isolation: IsolationLevel,
    thread: i64,
) -> Result<(), String> {
    // Continue after the highest id this thread logged before the last crash.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).map_err(|error| error.to_string())?;
    let logged = txn
        .scan(
            "transfers",
            Bound::Included(&[Value::Int(thread * ID_SPACE)]),
            Bound::Excluded(&[Value::Int((thread + 1) * ID_SPACE)]),
        )
        .map_err(|error| error.to_string())?;
    txn.commit().map_err(|error| error.to_string())?;
    let mut sequence = match logged.last() {
        Some(row) => int(&row[0])? - thread * ID_SPACE + 1,
        None => 0,
    };
    let mut random = SplitMix64::new(
        args.seed
            ^ (u64::try_from(thread).expect("small") << 32)
            ^ u64::try_from(sequence).expect("small"),
    );
    loop {
        let source =
            i64::try_from(random.below(u64::try_from(ACCOUNTS).expect("small"))).expect("small");
        let target = (source
            + 1
            + i64::try_from(random.below(u64::try_from(ACCOUNTS - 1).expect("small")))
                .expect("small"))
            % ACCOUNTS;
        let amount = 1 + i64::try_from(random.below(20)).expect("small");
        let id = thread * ID_SPACE + sequence;
        transfer(engine, isolation, id, source, target, amount)?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ack {id}").map_err(|error| error.to_string())?;
        stdout.flush().map_err(|error| error.to_string())?;
        sequence += 1;
    }
}

fn verify(
    engine: &Arc<Engine>,
    acknowledged_file: &PathBuf,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead)?;
    let accounts = txn.scan("accounts", Bound::Unbounded, Bound::Unbounded)?;
    let log = txn.scan("transfers", Bound::Unbounded, Bound::Unbounded)?;
    txn.commit()?;
    let mut expected = vec![INITIAL_BALANCE; usize::try_from(ACCOUNTS)?];
    let mut present = HashSet::new();
    for row in &log {
        present.insert(int(&row[0])?);
        expected[usize::try_from(int(&row[1])?)?] -= int(&row[3])?;
        expected[usize::try_from(int(&row[2])?)?] += int(&row[3])?;
    }
    let actual: Vec<i64> = accounts.iter().map(|row| int(&row[1])).collect::<Result<_, _>>()?;
    if actual.iter().sum::<i64>() != ACCOUNTS * INITIAL_BALANCE {
        return Err(format!("total balance changed: {}", actual.iter().sum::<i64>()).into());
    }
    if actual != expected {
        return Err("balances disagree with the transfer log: a partial transfer is visible".into());
    }
    for line in std::fs::read_to_string(acknowledged_file)?.lines() {
        let id: i64 = line.trim().parse()?;
        if !present.contains(&id) {
            return Err(format!("acknowledged transfer id={id} is missing").into());
        }
    }
    println!("transfers {}", log.len());
    Ok(())
}

pub fn run(args: &BankWorkerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = StoreConfig::local(&args.data_dir)?;
    config.buffer_pool_bytes = 64 * 8192;
    config.checkpoint_interval = Duration::from_millis(200);
    config.checkpoint_wal_bytes = 256 << 10;
    let store = Arc::new(PageStore::open(config)?);
    let engine = Engine::open(Arc::clone(&store))?;
    setup(&engine)?;
    if let Some(file) = &args.verify {
        return verify(&engine, file);
    }
    let isolation = if args.isolation == "rr" {
        IsolationLevel::RepeatableRead
    } else {
        IsolationLevel::ReadCommitted
    };
    println!("running");
    std::io::stdout().flush()?;
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..args.threads)
            .map(|thread| {
                let engine = &engine;
                scope.spawn(move || run_thread(engine, args, isolation, thread))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().expect("worker thread").err())
            .collect()
    });
    Err(failures.join("; ").into())
}
