//! A full disk under a real `tierdb serve`: its data directory is on a small tmpfs with a
//! ballast file beside it. Inserts run until the disk is full; the one that does not fit
//! must fail with 53100 (disk_full) and nothing else (not 58030, not a dropped connection),
//! every committed row must stay readable, and once the ballast is deleted the same server
//! (no restart) must take writes again. A SIGKILL and restart then finds every committed
//! row. Needs root (it mounts a tmpfs): without it the test fails, it does not skip.

use crate::server_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use server_support::{sqlstate, TestServer};
use tokio_postgres::Client;

/// The tmpfs: room for the log's two reserved files (2 x 64 MiB), the ballast and some data.
const TMPFS_BYTES: u64 = 320 << 20;
/// Taken from the tmpfs at the start and given back to show that writes resume: more than
/// a log file, so that the log can reserve its next one.
const BALLAST_BYTES: usize = 120 << 20;
const ROWS_PER_INSERT: i64 = 2_000;
/// Inserts tried before the test gives up on filling the disk (about 40 fill it).
const INSERTS_MAX: i64 = 1_000;
/// How long writes may take to resume after the ballast is deleted.
const RESUME_LIMIT: Duration = Duration::from_secs(60);

/// A tmpfs mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    mount_point: PathBuf,
    _directory: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Tmpfs {
        let directory = tempfile::tempdir().expect("tempdir");
        let mount_point = directory.path().to_path_buf();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(&mount_point)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs failed ({status}): this test needs root (scripts/test.sh runs as root in CI)"
        );
        Tmpfs { mount_point, _directory: directory }
    }

    fn path(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount_point).status();
    }
}

async fn count(client: &Client) -> i64 {
    client.query_one("SELECT count(*) FROM t", &[]).await.expect("count").get(0)
}

async fn insert_batch(client: &Client, batch: i64) -> Result<u64, tokio_postgres::Error> {
    let first = batch * ROWS_PER_INSERT;
    client
        .execute(
            "INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series($1::int8, $2::int8) g",
            &[&first, &(first + ROWS_PER_INSERT - 1)],
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_fails_with_53100_and_writes_resume_when_space_is_freed() {
    let tmpfs = Tmpfs::mount(TMPFS_BYTES);
    let ballast = tmpfs.path().join("ballast");
    std::fs::write(&ballast, vec![1u8; BALLAST_BYTES]).expect("write the ballast");
    let data_dir = tempfile::tempdir_in(tmpfs.path()).expect("data dir on the tmpfs");
    let server = TestServer::start_in(data_dir, &["--tier-size", "0"]);
    let client = server.connect().await;
    client.batch_execute("CREATE TABLE t (id int8 PRIMARY KEY, v text)").await.unwrap();

    let mut committed = 0i64;
    let mut batch = 0i64;
    let full = loop {
        assert!(batch < INSERTS_MAX, "{INSERTS_MAX} inserts never filled the disk");
        match insert_batch(&client, batch).await {
            Ok(rows) => {
                assert_eq!(rows, u64::try_from(ROWS_PER_INSERT).unwrap());
                committed += ROWS_PER_INSERT;
            }
            Err(error) => break error,
        }
        batch += 1;
    };
    assert_eq!(sqlstate(&full), "53100", "the insert that did not fit: {full:?}");
    let message = full.as_db_error().map(|db| db.message().to_string()).unwrap_or_default();
    assert!(message.contains("No space left on device"), "{message}");
    assert!(!message.contains(&tmpfs.path().display().to_string()), "path leaked: {message}");
    assert!(committed > 0, "the disk was full before the first insert");
    // The same connection goes on: reads work and see exactly the committed rows.
    assert_eq!(count(&client).await, committed);
    // Refused again, or accepted if the writer has freed log space meanwhile: never another
    // error, and the row count follows.
    batch += 1;
    match insert_batch(&client, batch).await {
        Ok(_) => committed += ROWS_PER_INSERT,
        Err(error) => assert_eq!(sqlstate(&error), "53100", "{error:?}"),
    }
    assert_eq!(count(&client).await, committed);

    std::fs::remove_file(&ballast).expect("delete the ballast");
    let started = Instant::now();
    loop {
        batch += 1;
        match insert_batch(&client, batch).await {
            Ok(_) => {
                committed += ROWS_PER_INSERT;
                break;
            }
            Err(error) => {
                assert_eq!(sqlstate(&error), "53100", "{error:?}");
                assert!(
                    started.elapsed() < RESUME_LIMIT,
                    "writes did not resume within {RESUME_LIMIT:?} of freeing space"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    assert_eq!(count(&client).await, committed);
    println!(
        "disk full after {} rows; writes resumed {:?} after the ballast was deleted",
        committed - ROWS_PER_INSERT,
        started.elapsed()
    );
    drop(client);

    let data_dir = server.kill();
    let server = TestServer::start_in(data_dir, &["--tier-size", "0"]);
    let client = server.connect().await;
    assert_eq!(count(&client).await, committed, "committed rows after SIGKILL and restart");
    drop(client);
    drop(server);
}
