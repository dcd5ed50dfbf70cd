//! Prometheus `/metrics`: buffer pool, tier, volume, WAL and session counters in the text
//! exposition format, served over a minimal HTTP/1.1 responder (one request per connection).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::handler::Shared;

/// Largest request head read before answering.
const REQUEST_BYTES_MAX: usize = 8192;

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

fn metric_float(out: &mut String, name: &str, kind: &str, help: &str, value: f64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
}

/// Statements shown on `/metrics` by their capacity share: the largest only, so the page's
/// size (and a Prometheus server's series count) stays bounded whatever the workload.
const STATEMENTS_ON_METRICS: usize = 20;
/// Bytes of a statement's normalized text kept in its label.
const STATEMENT_LABEL_BYTES_MAX: usize = 200;

/// Per-statement capacity share (design 015): capacity-unit-seconds attributed to each
/// statement, as `tierdb_stat_statements.capacity_unit_seconds`, for the
/// `STATEMENTS_ON_METRICS` largest, with their role OID and normalized text as labels.
fn render_statement_shares(out: &mut String, statistics: &tierdb_sql::StatementStats) {
    let name = "tierdb_statement_capacity_unit_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Capacity-unit-seconds attributed to a statement (the {STATEMENTS_ON_METRICS} largest).\n# TYPE {name} counter"
    );
    let mut entries = statistics.snapshot();
    entries.sort_by(|a, b| b.2.capacity_unit_seconds.total_cmp(&a.2.capacity_unit_seconds));
    for (userid, query, entry) in entries.into_iter().take(STATEMENTS_ON_METRICS) {
        let _ = writeln!(
            out,
            "{name}{{userid=\"{userid}\",query=\"{}\"}} {}",
            label_value(&query),
            entry.capacity_unit_seconds
        );
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped, at most
/// `STATEMENT_LABEL_BYTES_MAX` bytes of the text (cut at a character boundary).
fn label_value(text: &str) -> String {
    let mut end = text.len().min(STATEMENT_LABEL_BYTES_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Elastic capacity (design 015): the same figures as `tierdb_stat_capacity()`.
fn render_capacity(out: &mut String, status: &tierdb_storage::capacity::CapacityStatus) {
    for (name, help, value) in [
        ("tierdb_capacity_current_units", "Capacity in force, in units.", status.current.units()),
        ("tierdb_capacity_target_units", "Capacity the controller chose.", status.target.units()),
        ("tierdb_capacity_min_units", "Lowest capacity allowed.", status.bounds.min.units()),
        ("tierdb_capacity_max_units", "Highest capacity allowed.", status.bounds.max.units()),
        (
            "tierdb_capacity_resume_last_ms",
            "Time to first row of the last resume after an idle release.",
            status.resume.last_ms,
        ),
        (
            "tierdb_capacity_resume_p95_ms",
            "p95 time to first row over the last resumes after an idle release.",
            status.resume.p95_ms,
        ),
    ] {
        metric_float(out, name, "gauge", help, value);
    }
    for (name, help, value) in [
        ("tierdb_capacity_enabled", "1 when a controller sizes memory.", u64::from(status.enabled)),
        ("tierdb_capacity_unit_bytes", "DRAM of one capacity unit.", status.unit.bytes),
        (
            "tierdb_capacity_working_set_dram_pages",
            "Distinct pages hit in DRAM in the window.",
            status.working_set.dram_pages,
        ),
        (
            "tierdb_capacity_working_set_tier_pages",
            "Distinct pages loaded from the tier or volume in the window.",
            status.working_set.below_dram_pages,
        ),
        (
            "tierdb_capacity_working_set_pages",
            "Distinct pages touched in the window.",
            status.working_set.pages,
        ),
        (
            "tierdb_capacity_idle_released",
            "1 while memory is released for idleness.",
            u64::from(status.released),
        ),
    ] {
        metric(out, name, "gauge", help, value);
    }
    metric(
        out,
        "tierdb_capacity_decisions_total",
        "counter",
        "Capacity changes.",
        status.decisions,
    );
    metric(
        out,
        "tierdb_capacity_idle_releases_total",
        "counter",
        "Idle releases.",
        status.resume.releases,
    );
    metric(
        out,
        "tierdb_capacity_resumes_total",
        "counter",
        "Resumes after an idle release.",
        status.resume.count,
    );
    metric_float(
        out,
        "tierdb_capacity_unit_seconds_total",
        "counter",
        "Capacity units x seconds (the cost).",
        status.capacity_unit_seconds(),
    );
}

/// The metrics text.
/// What the page store writes, by cause: the figures behind write amplification.
fn render_store_writes(out: &mut String, stats: &tierdb_storage::StoreStats) {
    let writes = [
        (
            "tierdb_store_pages_flushed_total",
            "Dirty pages written into new segments.",
            &stats.pages_flushed,
        ),
        (
            "tierdb_store_foreground_pages_flushed_total",
            "Of those, pages written by a session that found no clean frame.",
            &stats.foreground_pages_flushed,
        ),
        (
            "tierdb_store_pages_compacted_total",
            "Live pages rewritten by compaction.",
            &stats.pages_compacted,
        ),
        (
            "tierdb_store_segment_bytes_written_total",
            "Bytes of segments written (flushes and compaction).",
            &stats.segment_bytes_written,
        ),
        ("tierdb_store_checkpoints_total", "Checkpoints.", &stats.checkpoints),
        (
            "tierdb_store_checkpoint_bytes_written_total",
            "Bytes of page-map chunks and manifests written.",
            &stats.checkpoint_bytes_written,
        ),
        (
            "tierdb_store_logical_bytes_changed_total",
            "Payload bytes changed by mini-transactions.",
            &stats.logical_bytes_changed,
        ),
    ];
    for (name, help, counter) in writes {
        metric(out, name, "counter", help, counter.get());
    }
}

pub fn render(shared: &Shared) -> String {
    let store = shared.catalog.engine().store();
    let mut out = String::new();
    render_capacity(&mut out, &store.capacity().status());
    render_statement_shares(&mut out, &shared.statistics);
    let pool = store.pool_stats();
    metric(
        &mut out,
        "tierdb_buffer_pool_hits_total",
        "counter",
        "Page requests served from DRAM.",
        pool.hits.get(),
    );
    metric(
        &mut out,
        "tierdb_buffer_pool_misses_total",
        "counter",
        "Page requests that missed DRAM.",
        pool.misses.get(),
    );
    metric(
        &mut out,
        "tierdb_buffer_pool_evictions_total",
        "counter",
        "Frames evicted.",
        pool.evictions.get(),
    );
    let (frames, _) = store.buffer_pool_frames();
    metric(
        &mut out,
        "tierdb_buffer_pool_frames",
        "gauge",
        "Frames in the buffer pool.",
        u64::try_from(frames).expect("usize fits u64 on 64-bit targets"),
    );
    if let Some(tier) = store.tier() {
        let stats = tier.stats();
        let (slots, used) = tier.usage();
        metric(
            &mut out,
            "tierdb_tier_hits_total",
            "counter",
            "DRAM misses served by the local tier.",
            stats.hits.get(),
        );
        metric(
            &mut out,
            "tierdb_tier_misses_total",
            "counter",
            "DRAM misses the tier did not hold.",
            stats.misses.get(),
        );
        metric(
            &mut out,
            "tierdb_tier_writes_total",
            "counter",
            "Pages written ahead to the tier.",
            stats.writes.get(),
        );
        metric(
            &mut out,
            "tierdb_tier_invalidations_total",
            "counter",
            "Tier copies invalidated by modification.",
            stats.invalidations.get(),
        );
        metric(
            &mut out,
            "tierdb_tier_dropped_admissions_total",
            "counter",
            "Admissions dropped under pressure.",
            stats.dropped_admissions.get(),
        );
        metric(
            &mut out,
            "tierdb_tier_corrupt_discards_total",
            "counter",
            "Tier entries discarded as corrupt.",
            stats.corrupt_discards.get(),
        );
        metric(&mut out, "tierdb_tier_capacity_bytes", "gauge", "Tier capacity.", slots * 8192);
        metric(
            &mut out,
            "tierdb_tier_used_bytes",
            "gauge",
            "Tier bytes holding pages.",
            used * 8192,
        );
    }
    let volume = store.volume_stats();
    metric(
        &mut out,
        "tierdb_volume_get_requests_total",
        "counter",
        "Object/file reads from durable storage.",
        volume.get_requests.get(),
    );
    metric(
        &mut out,
        "tierdb_volume_put_requests_total",
        "counter",
        "Object/file writes to durable storage.",
        volume.put_requests.get(),
    );
    metric(
        &mut out,
        "tierdb_volume_bytes_read_total",
        "counter",
        "Bytes read from durable storage.",
        volume.bytes_read.get(),
    );
    metric(
        &mut out,
        "tierdb_volume_bytes_written_total",
        "counter",
        "Bytes written to durable storage.",
        volume.bytes_written.get(),
    );
    metric(
        &mut out,
        "tierdb_volume_errors_total",
        "counter",
        "Durable storage errors.",
        volume.errors.get(),
    );
    let wal = store.wal_stats();
    metric(
        &mut out,
        "tierdb_wal_records_total",
        "counter",
        "WAL records appended.",
        wal.records.get(),
    );
    metric(&mut out, "tierdb_wal_bytes_total", "counter", "WAL bytes appended.", wal.bytes.get());
    metric(
        &mut out,
        "tierdb_wal_syncs_total",
        "counter",
        "WAL syncs (group commits).",
        wal.syncs.get(),
    );
    let stats = store.stats();
    metric(
        &mut out,
        "tierdb_store_dram_hits_total",
        "counter",
        "Page reads served from DRAM.",
        stats.dram_hits.get(),
    );
    metric(
        &mut out,
        "tierdb_store_tier_hits_total",
        "counter",
        "Page reads served from the tier.",
        stats.tier_hits.get(),
    );
    metric(
        &mut out,
        "tierdb_store_volume_reads_total",
        "counter",
        "Page reads from durable storage.",
        stats.volume_reads.get(),
    );
    render_store_writes(&mut out, stats);
    let temp_space = store.temp_space();
    let temp = temp_space.stats();
    let temp_metrics = [
        ("tierdb_temp_files_total", "counter", "Temporary files created.", temp.files_created),
        (
            "tierdb_temp_bytes_total",
            "counter",
            "Bytes written to temporary files.",
            temp.bytes_written,
        ),
        ("tierdb_temp_files", "gauge", "Temporary files open.", temp.files_open),
        ("tierdb_temp_bytes", "gauge", "Bytes temporary files hold.", temp.bytes_in_use),
        ("tierdb_temp_quota_bytes", "gauge", "Bytes temporary files may hold.", temp.quota_bytes),
        (
            "tierdb_temp_table_bytes",
            "gauge",
            "Bytes temp tables hold in the temp space.",
            temp.table_bytes,
        ),
        (
            "tierdb_operator_memory_bytes",
            "gauge",
            "Memory sorts and hash tables hold.",
            u64::try_from(temp_space.memory().used_bytes()).expect("usize fits u64"),
        ),
        (
            "tierdb_operator_memory_limit_bytes",
            "gauge",
            "Memory sorts and hash tables may hold together.",
            u64::try_from(temp_space.memory().limit_bytes()).expect("usize fits u64"),
        ),
    ];
    for (name, kind, help, value) in temp_metrics {
        metric(&mut out, name, kind, help, value);
    }
    metric(
        &mut out,
        "tierdb_connections",
        "gauge",
        "Open client connections.",
        u64::try_from(shared.connections.load(Ordering::Acquire))
            .expect("usize fits u64 on 64-bit targets"),
    );
    out
}

/// Serves `/metrics` until the listener fails.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else { continue };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut request = vec![0u8; REQUEST_BYTES_MAX];
            let read = socket.read(&mut request).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..read]);
            let path = head.strip_prefix("GET ").and_then(|rest| rest.split(' ').next());
            let text = "text/plain; version=0.0.4";
            let (status, content_type, body) = match path {
                Some("/metrics") => ("200 OK", text, render(&shared)),
                Some("/dashboard") => ("200 OK", "text/html; charset=utf-8", shared.history.page()),
                Some("/dashboard.json") => ("200 OK", "application/json", shared.history.json()),
                _ => ("404 Not Found", text, "not found: try /metrics or /dashboard\n".to_string()),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{label_value, STATEMENT_LABEL_BYTES_MAX};

    #[test]
    fn label_values_are_escaped_and_bounded() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let long = "é".repeat(STATEMENT_LABEL_BYTES_MAX);
        let value = label_value(&long);
        assert!(value.len() <= STATEMENT_LABEL_BYTES_MAX && value.chars().all(|c| c == 'é'));
    }
}
