//! One conformance suite for the `Volume` contract (see `src/volume/mod.rs`), run against every
//! backend and wrapper: `LocalVolume`, `MeteredVolume`, a fault-free `FaultyVolume`, and, with
//! the `s3` feature, `S3Volume` against a real MinIO server started by the test.
//!
//! Why one suite: the rest of the engine is tested on local volumes and trusts that any other
//! volume behaves the same; this file is what makes that trust checked rather than assumed.
//!
//! The suite needs an empty volume, because it compares `list("")` with everything it wrote.
//! Without a MinIO binary the S3 tests fail (they never pass silently); `TIERDB_SKIP_S3=1`
//! skips them with a loud line on stderr.

use std::collections::BTreeMap;

use tierdb_storage::{
    FaultConfig, FaultyVolume, LocalVolume, MeteredVolume, ObjectInfo, StorageError, Volume,
    VolumeStatsSnapshot,
};

/// Objects the suite has written and not deleted: name to content.
type Model = BTreeMap<String, Vec<u8>>;

/// Checks every clause of the `Volume` contract. `volume` must be empty.
fn conformance(volume: &dyn Volume) {
    let mut model = Model::new();
    assert_lists(volume, "", &model);
    round_trip(volume, &mut model);
    ranged_reads(volume, &mut model);
    short_reads_fail(volume, &mut model);
    missing_objects_are_not_found(volume);
    invalid_names_are_rejected(volume);
    similar_names_stay_distinct(volume, &mut model);
    list_by_prefix(volume, &model);
    delete(volume, &mut model);
    large_object(volume, &mut model);
    concurrent_puts_and_gets(volume, &mut model);
    assert_lists(volume, "", &model);
}

/// Deterministic, seed-dependent content, so that mixed-up objects are caught.
fn pattern(seed: u64, length: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn put(volume: &dyn Volume, model: &mut Model, name: &str, data: Vec<u8>) {
    volume.put(name, &data).unwrap_or_else(|error| panic!("put name={name}: {error}"));
    assert!(model.insert(name.to_string(), data).is_none(), "suite reuses name={name}");
}

fn read(volume: &dyn Volume, name: &str, offset: u64, length: usize) -> Vec<u8> {
    let mut buffer = vec![0xAA; length];
    volume
        .read_range(name, offset, &mut buffer)
        .unwrap_or_else(|error| panic!("read_range name={name} offset={offset}: {error}"));
    buffer
}

fn slice(data: &[u8], offset: u64, length: usize) -> &[u8] {
    let start = usize::try_from(offset).expect("offset fits");
    &data[start..start + length]
}

fn size_of(data: &[u8]) -> u64 {
    u64::try_from(data.len()).expect("length fits")
}

/// `list(prefix)` returns exactly the model's objects under `prefix`, with their sizes.
fn assert_lists(volume: &dyn Volume, prefix: &str, model: &Model) {
    let mut listed =
        volume.list(prefix).unwrap_or_else(|error| panic!("list prefix={prefix}: {error}"));
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let expected: Vec<ObjectInfo> = model
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, data)| ObjectInfo { name: name.clone(), size: size_of(data) })
        .collect();
    assert_eq!(listed, expected, "list prefix={prefix:?} volume={}", volume.describe());
}

fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StorageError>, name: &str) {
    match result {
        Err(StorageError::NotFound { object }) => assert_eq!(object, name),
        other => panic!("expected NotFound object={name}, got {other:?}"),
    }
}

fn assert_volume_io<T: std::fmt::Debug>(result: Result<T, StorageError>, what: &str) {
    match result {
        Err(StorageError::VolumeIo { .. }) => {}
        other => panic!("expected VolumeIo for {what}, got {other:?}"),
    }
}

fn round_trip(volume: &dyn Volume, model: &mut Model) {
    put(volume, model, "segments/0001.seg", pattern(1, 1000));
    assert_eq!(volume.get("segments/0001.seg").expect("get"), model["segments/0001.seg"]);
    put(volume, model, "empty/0001", Vec::new());
    assert_eq!(volume.get("empty/0001").expect("get empty"), Vec::<u8>::new());
    put(volume, model, "top-level", pattern(2, 3));
    assert_eq!(volume.get("top-level").expect("get top-level"), model["top-level"]);
}

fn ranged_reads(volume: &dyn Volume, model: &mut Model) {
    let name = "segments/0002.seg";
    put(volume, model, name, pattern(3, 3 * 8192 + 17));
    let data = &model[name];
    let size = size_of(data);
    let cases = [
        (0, 8192),
        (8192, 8192),
        (5000, 300),
        (size - 1, 1),
        (size - 100, 100),
        (0, data.len()),
        (0, 1),
    ];
    for (offset, length) in cases {
        assert_eq!(
            read(volume, name, offset, length),
            slice(data, offset, length),
            "offset={offset}"
        );
    }
    // An empty read of an existing object succeeds without touching the buffer.
    assert_eq!(read(volume, name, 0, 0), Vec::<u8>::new());
}

fn short_reads_fail(volume: &dyn Volume, model: &mut Model) {
    let name = "segments/0003.seg";
    put(volume, model, name, pattern(4, 100));
    for (offset, length) in [(90, 20), (0, 101), (100, 1), (1000, 10)] {
        let mut buffer = vec![0; length];
        assert_volume_io(
            volume.read_range(name, offset, &mut buffer),
            &format!("short read offset={offset} length={length}"),
        );
    }
}

fn missing_objects_are_not_found(volume: &dyn Volume) {
    assert_not_found(volume.get("missing/0001"), "missing/0001");
    assert_not_found(volume.read_range("missing/0002", 0, &mut [0; 8]), "missing/0002");
    assert_not_found(volume.read_range("missing/0003", 0, &mut []), "missing/0003");
}

fn invalid_names_are_rejected(volume: &dyn Volume) {
    for name in ["", "/absolute", "a//b", "a/../b", "./a", "trailing/"] {
        match volume.put(name, b"x") {
            Err(StorageError::InvalidConfig { .. }) => {}
            other => panic!("put of bad name={name:?} gave {other:?}"),
        }
    }
}

/// Names that share prefixes or differ only by a suffix are separate objects.
fn similar_names_stay_distinct(volume: &dyn Volume, model: &mut Model) {
    let names =
        ["manifest/0002", "manifest/00020", "manifest/0002.tmp", "manifest/0003", "manifestx"];
    for (seed, name) in (10..).zip(names) {
        let length = usize::try_from(seed).expect("fits") * 7;
        put(volume, model, name, pattern(seed, length));
    }
    for name in names {
        assert_eq!(volume.get(name).expect("get"), model[name], "name={name}");
    }
}

fn list_by_prefix(volume: &dyn Volume, model: &Model) {
    for prefix in [
        "",
        "segments/",
        "segments/000",
        "segments/0002.seg",
        "seg",
        "manifest/",
        "manifest/0002",
        "manifest",
        "empty/",
        "top",
        "nothing/",
        "segments/9",
        "zzz",
        // Prefixes no valid name starts with.
        "/segments/",
        "segments//",
        "../",
    ] {
        assert_lists(volume, prefix, model);
    }
    assert!(volume.list("nothing/").expect("list").is_empty());
}

fn delete(volume: &dyn Volume, model: &mut Model) {
    let name = "manifest/0002.tmp";
    volume.delete(name).expect("delete");
    model.remove(name);
    assert_not_found(volume.get(name), name);
    assert_lists(volume, "manifest/", model);
    volume.delete(name).expect("delete again");
    volume.delete("never/existed").expect("delete of a missing object");
    assert_eq!(volume.get("manifest/0002").expect("neighbour survives"), model["manifest/0002"]);
}

fn large_object(volume: &dyn Volume, model: &mut Model) {
    let name = "segments/large.seg";
    put(volume, model, name, pattern(5, 4 * 1024 * 1024 + 3));
    let data = &model[name];
    assert!(volume.get(name).expect("get large") == *data, "large object differs");
    let size = size_of(data);
    for (offset, length) in [(size - 1, 1), (size / 2 - 7, 1024 * 1024), (size - 8192, 8192)] {
        assert!(
            read(volume, name, offset, length) == slice(data, offset, length),
            "offset={offset}"
        );
    }
}

fn concurrent_puts_and_gets(volume: &dyn Volume, model: &mut Model) {
    const THREADS: u64 = 8;
    const OBJECTS: u64 = 8;
    let written: Vec<Vec<(String, Vec<u8>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                scope.spawn(move || {
                    let mut written = Vec::new();
                    for object in 0..OBJECTS {
                        let name = format!("concurrent/t{thread}/{object:04}");
                        let seed = 1000 + thread * OBJECTS + object;
                        let data = pattern(seed, usize::try_from(100 + seed * 37).expect("fits"));
                        volume.put(&name, &data).expect("concurrent put");
                        assert_eq!(volume.get(&name).expect("concurrent get"), data);
                        assert_eq!(read(volume, &name, 10, 50), data[10..60]);
                        written.push((name, data));
                    }
                    // Read the objects of another thread that exist so far.
                    let other = (thread + 1) % THREADS;
                    for info in volume.list(&format!("concurrent/t{other}/")).expect("list") {
                        let data = volume.get(&info.name).expect("get other thread's object");
                        assert_eq!(size_of(&data), info.size);
                    }
                    written
                })
            })
            .collect();
        workers.into_iter().map(|worker| worker.join().expect("worker panicked")).collect()
    });
    for (name, data) in written.into_iter().flatten() {
        assert!(model.insert(name, data).is_none());
    }
    assert_lists(volume, "concurrent/", model);
    assert_eq!(volume.list("concurrent/").expect("list").len(), 64);
}

#[test]
fn local_volume_conforms() {
    let directory = tempfile::tempdir().expect("tempdir");
    let volume = LocalVolume::open(directory.path().join("volume")).expect("open");
    conformance(&volume);
}

#[test]
fn local_volume_names_are_relative_to_its_root() {
    let directory = tempfile::tempdir().expect("tempdir");
    let root = directory.path().join("volume");
    let volume = LocalVolume::open(&root).expect("open");
    volume.put("segments/0001.seg", b"abc").expect("put");
    assert_eq!(std::fs::read(root.join("segments/0001.seg")).expect("file"), b"abc");
    let listed = volume.list("").expect("list");
    assert_eq!(listed, vec![ObjectInfo { name: "segments/0001.seg".to_string(), size: 3 }]);
}

#[test]
fn metered_volume_conforms() {
    let directory = tempfile::tempdir().expect("tempdir");
    let volume = MeteredVolume::new(LocalVolume::open(directory.path()).expect("open"));
    conformance(&volume);
    let stats = volume.stats().snapshot();
    assert!(stats.put_requests > 0 && stats.get_requests > 0 && stats.list_requests > 0);
    assert!(stats.delete_requests > 0 && stats.errors > 0, "stats={stats:?}");
}

#[test]
fn metered_volume_counts_requests_and_bytes() {
    let directory = tempfile::tempdir().expect("tempdir");
    let volume = MeteredVolume::new(LocalVolume::open(directory.path()).expect("open"));
    let before = volume.stats().snapshot();
    volume.put("segments/a", &[1; 100]).expect("put a");
    volume.put("segments/b", &[2; 50]).expect("put b");
    assert_eq!(volume.get("segments/a").expect("get a").len(), 100);
    let mut buffer = [0; 20];
    volume.read_range("segments/b", 10, &mut buffer).expect("read b");
    assert_not_found(volume.get("segments/missing"), "segments/missing");
    assert_volume_io(volume.read_range("segments/b", 45, &mut [0; 10]), "short read");
    assert_eq!(volume.list("").expect("list").len(), 2);
    assert_eq!(volume.list("manifest/").expect("list").len(), 0);
    volume.delete("segments/a").expect("delete a");
    volume.delete("segments/missing").expect("delete missing");

    let expected = VolumeStatsSnapshot {
        get_requests: 4,
        put_requests: 2,
        list_requests: 2,
        delete_requests: 2,
        bytes_read: 120,
        bytes_written: 150,
        errors: 2,
    };
    let counted = volume.stats().snapshot().since(&before);
    assert_eq!(counted, expected);
    assert_eq!(counted.requests(), 10);
}

#[test]
fn faulty_volume_without_faults_conforms() {
    let directory = tempfile::tempdir().expect("tempdir");
    let inner = LocalVolume::open(directory.path()).expect("open");
    let volume = FaultyVolume::new(inner, FaultConfig::default(), 7);
    conformance(&volume);
}

#[cfg(feature = "s3")]
mod s3 {
    use std::sync::Arc;

    use super::*;
    use tierdb_storage::{S3Config, S3Volume};
    use tierdb_testkit::{MinioServer, ACCESS_KEY, BUCKET, REGION, SECRET_KEY};

    fn config(server: &MinioServer, prefix: &str) -> S3Config {
        S3Config {
            endpoint: Some(server.endpoint().to_string()),
            bucket: BUCKET.to_string(),
            prefix: prefix.to_string(),
            region: REGION.to_string(),
            access_key_id: ACCESS_KEY.to_string(),
            secret_access_key: SECRET_KEY.to_string(),
            allow_http: true,
        }
    }

    fn open(server: &MinioServer, prefix: &str) -> S3Volume {
        S3Volume::open(config(server, prefix)).expect("open s3 volume")
    }

    #[test]
    fn s3_volume_conforms() {
        let Some(server) = MinioServer::start("s3_volume_conforms") else {
            return;
        };
        let volume = open(&server, "conformance");
        conformance(&volume);
        // The whole-bucket view agrees: every object lives under the prefix.
        let everything = open(&server, "").list("").expect("list bucket");
        assert!(everything.iter().all(|info| info.name.starts_with("conformance/")));
    }

    #[test]
    fn s3_volume_names_are_relative_to_its_prefix() {
        let Some(server) = MinioServer::start("s3_volume_names_are_relative_to_its_prefix") else {
            return;
        };
        let tenant = open(&server, "/tenant/a/");
        assert_eq!(tenant.prefix(), "tenant/a");
        assert_eq!(
            tenant.describe(),
            format!("s3://{BUCKET}/tenant/a (endpoint={})", server.endpoint())
        );
        let sibling = open(&server, "tenant/ab");
        let bucket = open(&server, "");
        tenant.put("segments/0001.seg", b"tenant").expect("put");
        sibling.put("segments/0001.seg", b"sibling").expect("put");

        let names = |volume: &S3Volume, prefix: &str| {
            let mut names: Vec<String> =
                volume.list(prefix).expect("list").into_iter().map(|info| info.name).collect();
            names.sort();
            names
        };
        assert_eq!(names(&tenant, ""), ["segments/0001.seg"]);
        assert_eq!(names(&sibling, ""), ["segments/0001.seg"]);
        assert_eq!(
            names(&bucket, ""),
            ["tenant/a/segments/0001.seg", "tenant/ab/segments/0001.seg"]
        );
        assert_eq!(names(&bucket, "tenant/a"), names(&bucket, ""));
        assert_eq!(names(&bucket, "tenant/a/"), ["tenant/a/segments/0001.seg"]);
        assert_eq!(bucket.get("tenant/a/segments/0001.seg").expect("get"), b"tenant");
        assert_eq!(tenant.get("segments/0001.seg").expect("get"), b"tenant");

        tenant.delete("segments/0001.seg").expect("delete");
        assert_eq!(sibling.get("segments/0001.seg").expect("sibling survives"), b"sibling");
        assert_eq!(names(&bucket, ""), ["tenant/ab/segments/0001.seg"]);
    }

    #[test]
    fn s3_volume_works_from_spawn_blocking() {
        let Some(server) = MinioServer::start("s3_volume_works_from_spawn_blocking") else {
            return;
        };
        let volume = Arc::new(open(&server, "blocking"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("caller's runtime");
        runtime.block_on(async {
            let tasks: Vec<_> = (0..4u64)
                .map(|task| {
                    let volume = Arc::clone(&volume);
                    tokio::task::spawn_blocking(move || {
                        let name = format!("wal/{task:04}");
                        let data = pattern(task, 10_000);
                        volume.put(&name, &data).expect("put");
                        assert_eq!(volume.get(&name).expect("get"), data);
                        assert_eq!(read(&*volume, &name, 9_990, 10), data[9_990..]);
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("blocking task");
            }
        });
        assert_eq!(volume.list("wal/").expect("list").len(), 4);
        // Dropping the last handle inside an async task must not panic.
        runtime.block_on(async move { drop(volume) });
    }

    #[test]
    fn s3_volume_reports_bad_credentials_bucket_and_config() {
        let Some(server) =
            MinioServer::start("s3_volume_reports_bad_credentials_bucket_and_config")
        else {
            return;
        };
        let wrong_secret = S3Volume::open(S3Config {
            secret_access_key: "wrong-secret".to_string(),
            ..config(&server, "p")
        })
        .expect("open");
        assert_volume_io(wrong_secret.put("segments/0001.seg", b"x"), "wrong secret");
        assert_volume_io(wrong_secret.list(""), "wrong secret");

        // S3 answers 404 for a missing bucket too; that is a configuration error, never a
        // missing object (which the engine would treat as corruption) nor a successful delete.
        let missing_bucket = S3Volume::open(S3Config {
            bucket: "no-such-bucket".to_string(),
            ..config(&server, "p")
        })
        .expect("open");
        assert_volume_io(missing_bucket.get("segments/0001.seg"), "missing bucket get");
        assert_volume_io(
            missing_bucket.read_range("segments/0001.seg", 0, &mut [0; 4]),
            "missing bucket read_range",
        );
        assert_volume_io(missing_bucket.put("segments/0001.seg", b"x"), "missing bucket put");
        assert_volume_io(missing_bucket.list(""), "missing bucket list");
        assert_volume_io(missing_bucket.delete("segments/0001.seg"), "missing bucket delete");

        let empty_bucket =
            S3Volume::open(S3Config { bucket: String::new(), ..config(&server, "p") });
        assert!(matches!(empty_bucket, Err(StorageError::InvalidConfig { .. })));
        let bad_prefix = S3Volume::open(config(&server, "a/../b"));
        assert!(matches!(bad_prefix, Err(StorageError::InvalidConfig { .. })));
    }

    #[test]
    fn faulty_s3_volume_without_faults_behaves() {
        let Some(server) = MinioServer::start("faulty_s3_volume_without_faults_behaves") else {
            return;
        };
        let volume = FaultyVolume::new(open(&server, "faulty"), FaultConfig::default(), 11);
        let data = pattern(42, 20_000);
        volume.put("segments/0001.seg", &data).expect("put");
        assert_eq!(volume.get("segments/0001.seg").expect("get"), data);
        assert_eq!(read(&volume, "segments/0001.seg", 19_999, 1), data[19_999..]);
        assert_not_found(volume.get("segments/0002.seg"), "segments/0002.seg");
        let listed = volume.list("segments/").expect("list");
        assert_eq!(
            listed,
            vec![ObjectInfo { name: "segments/0001.seg".to_string(), size: 20_000 }]
        );
        volume.delete("segments/0001.seg").expect("delete");
        volume.delete("segments/0001.seg").expect("delete missing");
        assert!(volume.list("").expect("list").is_empty());
        assert_eq!(volume.describe(), format!("faulty({})", volume.inner().describe()));
    }
}
