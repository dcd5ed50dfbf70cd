//! The server `tierdb bench elastic` starts (a `tierdb serve` child on a temporary data
//! directory) and the `/metrics` sampler behind the timeline. The sampler reads `/metrics`,
//! not `tierdb_stat_capacity()`: a statement every 250 ms would keep the server from ever
//! being idle, and the figures are the same.

use std::collections::HashMap;
use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Samples kept for the timeline: 250 ms apart, about 7 hours.
pub const SAMPLES_MAX: usize = 100_000;
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(250);
/// How long the server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const PAGE_BYTES: f64 = 8192.0;

pub type BenchResult<T> = Result<T, Box<dyn Error>>;

/// A `tierdb serve` child process, killed on drop.
pub struct BenchServer {
    child: Child,
    pub port: u16,
    pub metrics_port: u16,
    _data_dir: tempfile::TempDir,
}

impl BenchServer {
    pub fn start(flags: &[String]) -> BenchResult<BenchServer> {
        let data_dir = tempfile::tempdir()?;
        let mut child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir.path())
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .args(flags)
            // Capacity changes are logged at info: thousands of lines during the cycles.
            .env("TIERDB_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr from tierdb serve")?;
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("listening on") {
                    let _ = sender.send(line);
                } else {
                    eprintln!("[tierdb] {line}");
                }
            }
        });
        let Ok(line) = receiver.recv_timeout(START_TIMEOUT) else {
            let _ = child.kill();
            return Err("tierdb serve did not print its address".into());
        };
        let port = |after: &str| -> BenchResult<u16> {
            let start = line.find(after).ok_or("no address")? + after.len();
            let address = line[start..].split([' ', ')', '/']).next().ok_or("no address")?;
            Ok(address.rsplit(':').next().ok_or("no port")?.parse()?)
        };
        let metrics_port = port("http://")?;
        let port = port("listening on ")?;
        Ok(BenchServer { child, port, metrics_port, _data_dir: data_dir })
    }

    pub fn connection_string(&self) -> String {
        format!("host=127.0.0.1 port={} user=tierdb dbname=tierdb", self.port)
    }

    /// The server's `/metrics`, name (with labels) to value.
    pub fn metrics(&self) -> BenchResult<HashMap<String, f64>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.metrics_port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: tierdb\r\n\r\n")?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        let body = reply.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let mut values = HashMap::new();
        for line in body.lines().filter(|line| !line.starts_with('#')) {
            if let Some((name, value)) = line.rsplit_once(' ') {
                if let Ok(value) = value.parse::<f64>() {
                    values.insert(name.to_string(), value);
                }
            }
        }
        Ok(values)
    }

    /// One `/metrics` value (0 when absent).
    pub fn metric(&self, name: &str) -> BenchResult<f64> {
        Ok(self.metrics()?.get(name).copied().unwrap_or(0.0))
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `/metrics` reading for the timeline and the hit ratios.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub at_s: f64,
    pub current_units: f64,
    pub target_units: f64,
    /// The working-set estimate, in units of buffer pool (5/8 of a unit holds pages).
    pub working_set_units: f64,
    pub pool_hits: f64,
    pub pool_misses: f64,
}

impl Sample {
    fn read(server: &BenchServer, started: Instant) -> BenchResult<Sample> {
        let values = server.metrics()?;
        let value = |name: &str| values.get(name).copied().unwrap_or(0.0);
        let pool_bytes_per_unit = value("tierdb_capacity_unit_bytes") * 5.0 / 8.0;
        let working_set_bytes = value("tierdb_capacity_working_set_pages") * PAGE_BYTES;
        Ok(Sample {
            at_s: started.elapsed().as_secs_f64(),
            current_units: value("tierdb_capacity_current_units"),
            target_units: value("tierdb_capacity_target_units"),
            working_set_units: working_set_bytes / pool_bytes_per_unit.max(1.0),
            pool_hits: value("tierdb_buffer_pool_hits_total"),
            pool_misses: value("tierdb_buffer_pool_misses_total"),
        })
    }
}

/// Reads `/metrics` every `SAMPLE_INTERVAL` on its own thread until stopped.
pub struct Sampler {
    pub samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    pub fn start(server: &Arc<BenchServer>, started: Instant) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (server, kept, stopped) = (Arc::clone(server), Arc::clone(&samples), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(sample) = Sample::read(&server, started) {
                    let mut kept = kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if kept.len() < SAMPLES_MAX {
                        kept.push(sample);
                    }
                }
                std::thread::sleep(SAMPLE_INTERVAL);
            }
        });
        Sampler { samples, stop, thread: Some(thread) }
    }

    /// The samples taken so far.
    pub fn snapshot(&self) -> Vec<Sample> {
        self.samples.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    pub fn stop(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.snapshot()
    }
}
