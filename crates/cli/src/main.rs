//! The `tierdb` command: the PostgreSQL-compatible server (`tierdb serve`), benchmarks
//! that print their figures, and drivers used by the test suite.

mod bank_worker;
mod bench_elastic;
mod crash_worker;
mod serve;

use clap::{Parser, Subcommand};

/// mimalloc: the server allocates many small rows and values per statement, where glibc's
/// allocator showed up as a sixth of the CPU time in profiles.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Gives the calling thread's free memory back to the operating system (mimalloc keeps it
/// for the thread's next allocations otherwise).
fn release_free_memory() {
    // SAFETY: mi_collect takes no pointers; it only walks the calling thread's heap.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[derive(Parser)]
#[command(
    name = "tierdb",
    version,
    about = "A PostgreSQL-compatible database for working sets larger than memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Runs the PostgreSQL-compatible server.
    Serve(Box<serve::ServeArgs>),
    /// Benchmarks that print their figures.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Drivers used by the test suite.
    #[command(subcommand, hide = true)]
    Debug(DebugCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Random 8 KiB page reads through DRAM, the tier and the volume.
    Pages(tierdb_bench::PagesArgs),
    /// Write amplification and space amplification after compaction.
    Writes(tierdb_bench::WritesArgs),
    /// Transactional point lookups and single-row updates per second.
    Kv(tierdb_bench::KvArgs),
    /// Elastic capacity over the wire: scale-up, resize cycles, idle release, resume.
    Elastic(bench_elastic::ElasticArgs),
}

#[derive(Subcommand)]
enum DebugCommand {
    /// Runs (or verifies) the crash-test write workload; killed by the crash test.
    CrashWorker(crash_worker::CrashWorkerArgs),
    /// Runs (or verifies) the bank-transfer workload on the engine; killed by its crash test.
    BankWorker(bank_worker::BankWorkerArgs),
}

/// mimalloc's option number of `allow_thp` (mimalloc 3's `mi_option_e`; libmimalloc-sys
/// names no constant for it).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Turns transparent huge pages off for this process. The server gives a statement's
/// memory back after it (`release_free_memory`), so the next large statement faults its
/// memory in again; with huge pages each fault zeroes 2 MiB, far more than the statement
/// touches: 46% of a 500,000-group GROUP BY's CPU time in `clear_page_erms` (perf, 1 M
/// rows), 4% without. mimalloc is the only part of tierdb that asks for huge pages (its
/// arenas, `madvise`), so this changes nothing else.
fn disable_transparent_huge_pages() {
    // SAFETY: mi_option_set takes no pointers; options may change at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
    // Arenas mimalloc reserved before main asked for huge pages already: the process-wide
    // flag covers them (checked at each page fault). SAFETY: integer arguments only.
    let outcome = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    // A kernel without the flag keeps huge pages: slower statements, nothing wrong.
    debug_assert!(outcome == 0 || outcome == -1, "prctl returns 0 or -1");
}

fn main() {
    disable_transparent_huge_pages();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TIERDB_LOG")
                // Capacity changes are rare and operators want each one with its reason.
                .unwrap_or_else(|_| "warn,tierdb_server::capacity=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    tierdb_server::set_memory_release_hook(release_free_memory);
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => serve::run(&args).map_err(Into::into),
        Command::Bench(BenchCommand::Pages(args)) => tierdb_bench::run_pages(&args),
        Command::Bench(BenchCommand::Writes(args)) => tierdb_bench::run_writes(&args),
        Command::Bench(BenchCommand::Kv(args)) => tierdb_bench::run_kv(&args),
        Command::Bench(BenchCommand::Elastic(args)) => bench_elastic::run(&args),
        Command::Debug(DebugCommand::CrashWorker(args)) => crash_worker::run(&args),
        Command::Debug(DebugCommand::BankWorker(args)) => bank_worker::run(&args),
    };
    if let Err(error) = outcome {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}
