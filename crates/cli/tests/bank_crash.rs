//! The bank-transfer workload on the engine, killed with SIGKILL at random moments and
//! recovered: every acknowledged transfer must be present, the total balance unchanged, and
//! every balance equal to its initial amount plus the logged transfers (no half transfer
//! visible). `TIERDB_CRASH_CYCLES` scales the cycles (20 per isolation level by default).

mod support;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tierdb_common::SplitMix64;

fn worker(data_dir: &Path, isolation: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tierdb"));
    command.args(["debug", "bank-worker", "--data-dir"]).arg(data_dir).args([
        "--isolation",
        isolation,
        "--threads",
        "8",
    ]);
    command
}

fn bank_crash_cycles(isolation: &str, cycles: usize, seed: u64) {
    let directory = tempfile::tempdir().expect("tempdir");
    let acknowledged_path = directory.path().join("acknowledged.txt");
    let data_dir = directory.path().join("data");
    let mut random = SplitMix64::new(seed);
    let mut acknowledged = std::fs::File::create(&acknowledged_path).expect("create ack file");
    let mut total_acknowledged = 0usize;
    let mut last_count = 0usize;
    for cycle in 0..cycles {
        let kill_after = Duration::from_millis(50 + random.below(400));
        for line in support::run_until_killed(worker(&data_dir, isolation), kill_after) {
            let id = line
                .strip_prefix("ack ")
                .unwrap_or_else(|| panic!("unexpected worker output: {line}"));
            writeln!(acknowledged, "{id}").expect("record ack");
            total_acknowledged += 1;
        }
        acknowledged.flush().expect("flush acks");
        let output = worker(&data_dir, isolation)
            .arg("--verify")
            .arg(&acknowledged_path)
            .output()
            .expect("run verifier");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "cycle {cycle}: verification failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            stdout
        );
        let count: usize = stdout
            .trim()
            .strip_prefix("transfers ")
            .expect("transfers line")
            .parse()
            .expect("count");
        assert!(
            count >= last_count,
            "cycle {cycle}: committed transfers disappeared {last_count} -> {count}"
        );
        last_count = count;
    }
    eprintln!("bank crash {isolation}: {cycles} SIGKILL cycles, {total_acknowledged} acknowledged transfers, {last_count} in the log");
    assert!(total_acknowledged > 0, "the workload made no progress");
}

#[test]
fn sigkill_during_bank_transfers_read_committed() {
    bank_crash_cycles("rc", support::cycles(1) * 2 / 5, 11);
}

#[test]
fn sigkill_during_bank_transfers_repeatable_read() {
    bank_crash_cycles("rr", support::cycles(1) * 2 / 5, 12);
}
