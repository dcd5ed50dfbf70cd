//! `tierdb bench elastic` (design 015, issue 16): starts a server with small capacity units
//! and drives it over the wire through the phases, then prints its figures.
//!
//! 1. Working-set steps: point selects over 1x rows, then 4x, then 1x again (scale-up
//!    time, and the buffer pool's hit ratio of the 1x load before and after the shrink).
//! 2. Mixed read/write load, first at a fixed capacity (steady p99), then while a
//!    superuser forces grow/shrink cycles with `SET tierdb.min_capacity/max_capacity`
//!    (resize p99, failed queries, cycles).
//! 3. Idle: time until the server releases its memory, then resumes (time to first row).
//! 4. The same steps and idle time on a second server fixed at max capacity, for
//!    capacity-unit-seconds against the elastic run.

mod load;
mod report;
mod server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load::{Clients, Workload};
use report::{percentile, Figures};
use server::{BenchResult, BenchServer, Sampler};

/// Highest and lowest capacity of the forced cycles (units); the 1x working set fits the
/// lowest.
const CYCLE_HIGH: &str = "4";
const CYCLE_LOW: &str = "1";
/// How long one forced resize may take before it counts as timed out.
const RESIZE_LIMIT: Duration = Duration::from_secs(10);
/// The working-set sketch's window is the shrink delay, at least this long (the server's
/// WORKING_SET_WINDOW_MIN): a shrink waits for the window to age out, then the delay.
const WORKING_SET_WINDOW_MIN: Duration = Duration::from_secs(4);

#[derive(clap::Args)]
pub struct ElasticArgs {
    /// Print the figures as one JSON object (the default prints the same, one per line).
    #[arg(long)]
    json: bool,
    /// A short run (a minute or two): fewer cycles and shorter phases.
    #[arg(long)]
    quick: bool,
    /// Write the timeline (capacity, working set, hit ratio over time) as SVG here.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write the elastic run's samples as CSV here (seconds, current, target, working set
    /// in units, buffer pool hits, misses).
    #[arg(long)]
    samples_csv: Option<PathBuf>,
    /// DRAM of one capacity unit (capacity goes from 0 to 4 units).
    #[arg(long, default_value = "32MB")]
    capacity_unit: String,
    /// The shrink delay (also the working-set window: the load must touch the 4x working
    /// set within it).
    #[arg(long, default_value_t = 5000)]
    scale_down_delay_ms: u64,
    #[arg(long, default_value_t = 2000)]
    idle_release_ms: u64,
    /// Forced grow/shrink cycles (default 500; 20 with --quick).
    #[arg(long)]
    cycles: Option<u64>,
    /// Working-set step cycles (1x -> 4x -> 1x; default 2; 1 with --quick).
    #[arg(long)]
    steps: Option<u64>,
    /// Resumes after idle releases (default 10; 3 with --quick).
    #[arg(long)]
    resumes: Option<u64>,
    /// Statements a second of the load, over all connections.
    #[arg(long, default_value_t = 2000)]
    rate: u64,
    /// Client connections of the load.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// More `tierdb serve` flags for both servers (e.g. `--server-arg=--volume=s3://b/{server}`:
    /// `{server}` becomes `elastic` or `fixed`, so the two do not share a volume).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
}

impl ElasticArgs {
    fn phase(&self) -> Duration {
        Duration::from_secs(if self.quick { 6 } else { 15 })
    }

    fn server_flags(&self, min: &str, max: &str, name: &str) -> Vec<String> {
        let mut flags: Vec<String> = [
            "--min-capacity",
            min,
            "--max-capacity",
            max,
            "--capacity-unit",
            &self.capacity_unit,
            "--tier-size",
            "512MB",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        flags.push(format!("--scale-down-delay-ms={}", self.scale_down_delay_ms));
        flags.push(format!("--idle-release-ms={}", self.idle_release_ms));
        flags.extend(self.server_args.iter().map(|flag| flag.replace("{server}", name)));
        flags
    }
}

pub fn run(args: &ElasticArgs) -> BenchResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run_async(args))
}

/// What one server's run measured.
#[derive(Default)]
struct Run {
    scale_up_s: Vec<f64>,
    hit_ratios: Vec<(f64, f64)>,
    failed: u64,
    queries: u64,
    steady_p99_ms: f64,
    resize_p99_ms: f64,
    cycles: u64,
    resize_timeouts: u64,
    idle_release_s: Option<f64>,
    idle_s: f64,
    resume_client_ms: Vec<f64>,
    resume_p95_ms: f64,
    unit_seconds: f64,
    phases: Vec<(f64, String)>,
}

async fn run_async(args: &ElasticArgs) -> BenchResult<()> {
    let elastic = run_server(args, false, 0.0).await?;
    let fixed = run_server(args, true, elastic.idle_s).await?;
    let figures = figures(args, &elastic, &fixed);
    if args.json {
        println!("{}", figures.json());
    } else {
        for line in figures.json().lines().filter(|line| line.contains(':')) {
            println!("{}", line.trim().trim_end_matches(','));
        }
    }
    Ok(())
}

fn figures(args: &ElasticArgs, elastic: &Run, fixed: &Run) -> Figures {
    let mut figures = Figures::default();
    let scale_up_p95 = percentile(&mut elastic.scale_up_s.clone(), 95);
    let before: f64 = elastic.hit_ratios.iter().map(|pair| pair.0).fold(f64::INFINITY, f64::min);
    let after: f64 = elastic.hit_ratios.iter().map(|pair| pair.1).fold(f64::INFINITY, f64::min);
    let hit_vs = (!elastic.hit_ratios.is_empty()).then(|| after / before);
    let p99_ratio = elastic.resize_p99_ms / elastic.steady_p99_ms.max(f64::MIN_POSITIVE);
    let resume_p95_client = percentile(&mut elastic.resume_client_ms.clone(), 95);
    figures.number("scale_up_p95_s", scale_up_p95);
    figures.number("scale_ups", f64::from(u32::try_from(elastic.scale_up_s.len()).unwrap_or(0)));
    figures.number("resize_cycles", counter(elastic.cycles));
    figures.number("resize_timeouts", counter(elastic.resize_timeouts));
    figures.number("failed_queries", counter(elastic.failed + fixed.failed));
    figures.number("queries", counter(elastic.queries + fixed.queries));
    figures.number("p99_steady_ms", elastic.steady_p99_ms);
    figures.number("p99_resize_ms", elastic.resize_p99_ms);
    figures.number("p99_resize_vs_steady", p99_ratio);
    figures.optional("hit_ratio_before_shrink", before.is_finite().then_some(before));
    figures.optional("hit_ratio_after_shrink", after.is_finite().then_some(after));
    figures.optional("hit_ratio_after_shrink_vs_before", hit_vs);
    figures.optional("idle_release_s", elastic.idle_release_s);
    figures.number("idle_release_ms_setting", counter(args.idle_release_ms));
    figures.number("resume_p95_ms", elastic.resume_p95_ms);
    figures.number("resume_client_p95_ms", resume_p95_client);
    figures
        .number("resumes", f64::from(u32::try_from(elastic.resume_client_ms.len()).unwrap_or(0)));
    figures.number("capacity_unit_seconds", elastic.unit_seconds);
    figures.number("capacity_unit_seconds_fixed_max", fixed.unit_seconds);
    figures
        .boolean("goal_scale_up_p95_le_2s", scale_up_p95 <= 2.0 && !elastic.scale_up_s.is_empty());
    figures.boolean("goal_no_failed_queries", elastic.failed + fixed.failed == 0);
    figures.boolean("goal_p99_ratio_le_1_5", p99_ratio <= 1.5);
    figures.boolean("goal_hit_ratio_ge_95_percent", hit_vs.is_some_and(|ratio| ratio >= 0.95));
    figures.boolean("goal_idle_release_le_60s", elastic.idle_release_s.is_some_and(|s| s <= 60.0));
    figures.boolean("goal_resume_p95_le_500ms", elastic.resume_p95_ms <= 500.0);
    figures.boolean("goal_less_than_fixed_max", elastic.unit_seconds < fixed.unit_seconds);
    figures
}

#[allow(clippy::cast_precision_loss)] // Counts far below 2^52.
fn counter(value: u64) -> f64 {
    value as f64
}

/// One server's phases: elastic (min 0, max 4) or fixed at 4 (`idle_s`: the elastic run's
/// idle phase, slept through).
async fn run_server(args: &ElasticArgs, fixed: bool, idle_s: f64) -> BenchResult<Run> {
    let flags = if fixed {
        args.server_flags("4", "4", "fixed")
    } else {
        args.server_flags("0", "4", "elastic")
    };
    let server = Arc::new(BenchServer::start(&flags)?);
    let clients = Clients::connect(&server.connection_string(), args.clients).await?;
    let rows_1x = load::rows_for_one_unit(&server.metrics()?);
    eprintln!("loading {} rows ({} fixed at max)", rows_1x * 4, if fixed { "" } else { "not" });
    load::create_table(&clients.admin, rows_1x * 4).await?;
    let started = Instant::now();
    let sampler = Sampler::start(&server, started);
    let mut run = Run::default();
    let mark = |run: &mut Run, name: &str| {
        let last = sampler.snapshot().last().cloned().unwrap_or_default();
        eprintln!(
            "{:7.1} s  {name} (capacity {} units, working set {:.2} units)",
            started.elapsed().as_secs_f64(),
            last.current_units,
            last.working_set_units,
        );
        run.phases.push((started.elapsed().as_secs_f64(), name.to_string()));
    };
    let unit_seconds_start = server.metric("tierdb_capacity_unit_seconds_total")?;
    let steps = args.steps.unwrap_or(if args.quick { 1 } else { 2 });
    // The load left capacity at max: the 1x load first settles it at its own level.
    let delay = Duration::from_millis(args.scale_down_delay_ms);
    let shrink_wait = WORKING_SET_WINDOW_MIN.max(delay) + delay;
    mark(&mut run, "1x");
    let settle = shrink_wait * 2 + args.phase();
    run.add(&clients.run(Workload::reads(rows_1x, args.rate), settle).await);
    for _ in 0..steps {
        mark(&mut run, "4x");
        let step_s = started.elapsed().as_secs_f64();
        run.add(&clients.run(Workload::reads(rows_1x * 4, args.rate), args.phase() * 2).await);
        let samples = report::window(&sampler.snapshot(), step_s, f64::MAX);
        run.scale_up_s.extend(report::scale_up_seconds(&samples, step_s));
        mark(&mut run, "1x again");
        let down_s = started.elapsed().as_secs_f64();
        run.add(
            &clients.run(Workload::reads(rows_1x, args.rate), shrink_wait + args.phase()).await,
        );
        let samples = report::window(&sampler.snapshot(), down_s, f64::MAX);
        if let Some((began, ended)) = report::shrink_span(&samples) {
            let before = report::hit_ratio(&report::window(&samples, down_s + 1.0, began));
            let after = report::hit_ratio(&report::window(&samples, ended, f64::MAX));
            run.hit_ratios.extend(before.zip(after));
        }
    }
    let steps_unit_seconds = server.metric("tierdb_capacity_unit_seconds_total")?;
    if !fixed {
        mark(&mut run, "mixed steady");
        load::set_bounds(&clients.admin, CYCLE_HIGH, CYCLE_HIGH).await?;
        let steady = clients.run(Workload::mixed(rows_1x, args.rate), args.phase()).await;
        run.add(&steady);
        run.steady_p99_ms = steady.p99_ms();
        mark(&mut run, "mixed resizing");
        let cycles = args.cycles.unwrap_or(if args.quick { 20 } else { 500 });
        let resizing = clients
            .run_while(Workload::mixed(rows_1x, args.rate), cycle(&clients, cycles, args.phase()))
            .await;
        run.add(&resizing.0);
        run.resize_p99_ms = resizing.0.p99_ms();
        (run.cycles, run.resize_timeouts) = resizing.1?;
        load::set_bounds(&clients.admin, "0", CYCLE_HIGH).await?;
    }
    mark(&mut run, "idle");
    let idle_unit_seconds = server.metric("tierdb_capacity_unit_seconds_total")?;
    if fixed {
        tokio::time::sleep(Duration::from_secs_f64(idle_s)).await;
    } else {
        idle(args, &server, &clients, &mut run).await?;
    }
    let end_unit_seconds = server.metric("tierdb_capacity_unit_seconds_total")?;
    run.unit_seconds =
        (steps_unit_seconds - unit_seconds_start) + (end_unit_seconds - idle_unit_seconds);
    let samples = sampler.stop();
    if let (Some(path), false) = (&args.svg, fixed) {
        std::fs::write(path, report::timeline_svg(&samples, &run.phases, 4.0))?;
    }
    if let (Some(path), false) = (&args.samples_csv, fixed) {
        std::fs::write(path, report::samples_csv(&samples))?;
    }
    Ok(run)
}

/// Forced grow/shrink cycles between `CYCLE_LOW` and `CYCLE_HIGH` units, spread over
/// `length` (as long as the steady phase, so the two p99 see as many statements): (cycles
/// done, resizes that did not finish within `RESIZE_LIMIT`).
async fn cycle(clients: &Clients, cycles: u64, length: Duration) -> BenchResult<(u64, u64)> {
    let (mut done, mut timeouts) = (0, 0);
    let started = tokio::time::Instant::now();
    for index in 0..cycles {
        let share = counter(index) / counter(cycles.max(1));
        tokio::time::sleep_until(started + length.mul_f64(share)).await;
        let mut complete = true;
        for level in [CYCLE_LOW, CYCLE_HIGH] {
            load::set_bounds(&clients.admin, level, level).await?;
            let wanted: f64 = level.parse()?;
            if !load::wait_for_capacity(&clients.admin, wanted, RESIZE_LIMIT).await? {
                complete = false;
                timeouts += 1;
            }
        }
        done += u64::from(complete);
    }
    Ok((done, timeouts))
}

/// Waits for the idle release after the last statement, then resumes `resumes` times.
async fn idle(
    args: &ElasticArgs,
    server: &BenchServer,
    clients: &Clients,
    run: &mut Run,
) -> BenchResult<()> {
    let idle_started = Instant::now();
    let limit = Duration::from_millis(args.idle_release_ms) + Duration::from_secs(60);
    run.idle_release_s = wait_for_release(server, limit).await?;
    let resumes = args.resumes.unwrap_or(if args.quick { 3 } else { 10 });
    for resume in 0..resumes {
        if resume > 0 && wait_for_release(server, limit).await?.is_none() {
            break;
        }
        let started = Instant::now();
        load::first_row(&clients.admin, i32::try_from(resume + 1)?).await?;
        run.resume_client_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    run.resume_p95_ms = server.metric("tierdb_capacity_resume_p95_ms")?;
    run.idle_s = idle_started.elapsed().as_secs_f64();
    Ok(())
}

/// Seconds until `/metrics` shows the idle release; None after `limit`.
async fn wait_for_release(server: &BenchServer, limit: Duration) -> BenchResult<Option<f64>> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if server.metric("tierdb_capacity_idle_released")? >= 1.0 {
            return Ok(Some(started.elapsed().as_secs_f64()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(None)
}

impl Run {
    fn add(&mut self, outcome: &load::Outcome) {
        self.failed += outcome.failed;
        self.queries += outcome.queries;
    }
}
