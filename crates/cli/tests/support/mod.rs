//! Shared by the crash tests: run a worker process until a random moment after it reports
//! `running`, SIGKILL it, and return every line it printed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a worker may take to start (recovery included) before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Spawns `command`, waits for its `running` line, lets it run for `kill_after`, kills it
/// with SIGKILL and returns its stdout lines (the `running` line excluded).
pub fn run_until_killed(mut command: Command, kill_after: Duration) -> Vec<String> {
    let mut child =
        command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn worker");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let mut output = Vec::new();
    let mut running_since = None;
    loop {
        if running_since.is_some_and(|since: Instant| since.elapsed() >= kill_after) {
            break;
        }
        assert!(
            running_since.is_some() || started.elapsed() < START_TIMEOUT,
            "worker did not start in time"
        );
        match lines.recv_timeout(Duration::from_millis(5)) {
            Ok(line) if line == "running" => running_since = Some(Instant::now()),
            Ok(line) => output.push(line),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().expect("wait");
                panic!("worker exited before it was killed: {status}");
            }
        }
    }
    child.kill().expect("SIGKILL the worker");
    child.wait().expect("reap the worker");
    reader.join().expect("reader thread");
    output.extend(lines.try_iter().filter(|line| line != "running"));
    output
}

/// Cycles for a crash test: `TIERDB_CRASH_CYCLES` scaled by `divisor`, default 50 / divisor.
pub fn cycles(divisor: usize) -> usize {
    std::env::var("TIERDB_CRASH_CYCLES").ok().and_then(|value| value.parse().ok()).unwrap_or(50)
        / divisor
}
