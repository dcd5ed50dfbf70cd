//! Crash safety by killing a real process: `tierdb debug crash-worker` runs a multi-threaded
//! write workload (small buffer pool, tier on, frequent checkpoints and compaction); the test
//! sends SIGKILL at a random moment, then runs the worker in `--verify` mode, which recovers
//! the store and checks that each thread's state is exactly its first `c` transactions.
//! The test checks that `c` covers every acknowledged transaction and that at most the one
//! in-flight transaction per thread went beyond (`c <= acked + 1`).
//!
//! `TIERDB_CRASH_CYCLES` sets the number of cycles (default 50); the soak in CI's long mode
//! uses more.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tierdb_common::SplitMix64;

const THREADS: u64 = 4;

fn worker(data_dir: &Path, seed: u64, wal_in_volume: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tierdb"));
    command.args(["debug", "crash-worker", "--data-dir"]).arg(data_dir).args([
        "--seed",
        &seed.to_string(),
        "--threads",
        &THREADS.to_string(),
    ]);
    if wal_in_volume {
        command.arg("--wal-in-volume");
    }
    command
}

/// Runs the workload until a random kill; returns the highest acknowledged transaction per
/// thread seen on stdout.
fn run_and_kill(
    data_dir: &Path,
    seed: u64,
    wal_in_volume: bool,
    kill_after: Duration,
) -> HashMap<u64, u64> {
    let mut acked: HashMap<u64, u64> = HashMap::new();
    for line in support::run_until_killed(worker(data_dir, seed, wal_in_volume), kill_after) {
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some("ack"), "unexpected worker output: {line}");
        let thread: u64 = words.next().expect("thread").parse().expect("thread number");
        let transaction: u64 = words.next().expect("transaction").parse().expect("number");
        let entry = acked.entry(thread).or_default();
        *entry = (*entry).max(transaction);
    }
    acked
}

/// Recovers and verifies; returns the recovered transaction count per thread.
fn verify(data_dir: &Path, seed: u64, wal_in_volume: bool) -> HashMap<u64, u64> {
    let output =
        worker(data_dir, seed, wal_in_volume).arg("--verify").output().expect("run verifier");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "verification failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[0], "state", "unexpected verifier output: {line}");
            (words[1].parse().expect("thread"), words[2].parse().expect("count"))
        })
        .collect()
}

fn crash_cycles(cycles: usize, seed: u64, wal_in_volume: bool) {
    let directory = tempfile::tempdir().expect("tempdir");
    let mut random = SplitMix64::new(seed);
    let mut durable: HashMap<u64, u64> = HashMap::new();
    let mut total_acked = 0;
    for cycle in 0..cycles {
        let kill_after = Duration::from_millis(20 + random.below(380));
        let acked = run_and_kill(directory.path(), seed, wal_in_volume, kill_after);
        let recovered = verify(directory.path(), seed, wal_in_volume);
        assert_eq!(recovered.len(), usize::try_from(THREADS).unwrap(), "cycle {cycle}: threads");
        for thread in 0..THREADS {
            let floor = acked
                .get(&thread)
                .copied()
                .unwrap_or(0)
                .max(durable.get(&thread).copied().unwrap_or(0));
            let count = recovered[&thread];
            assert!(
                count >= floor,
                "cycle {cycle} thread {thread}: acknowledged {floor} but recovered {count}"
            );
            assert!(count <= floor + 1, "cycle {cycle} thread {thread}: recovered {count} beyond acknowledged {floor} + 1 in flight");
            total_acked += count - durable.get(&thread).copied().unwrap_or(0);
            durable.insert(thread, count);
        }
    }
    eprintln!(
        "crash test: {cycles} SIGKILL cycles, {total_acked} transactions recovered and verified"
    );
    assert!(total_acked > 0, "the workload made no progress");
}

#[test]
fn sigkill_during_writes_loses_no_acknowledged_commit() {
    crash_cycles(support::cycles(1), 0x5EED, false);
}

#[test]
fn sigkill_with_wal_on_the_volume() {
    crash_cycles(support::cycles(5), 0xBEEF, true);
}
