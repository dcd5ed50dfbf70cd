//! tierdb's statistics views and PostgreSQL's pg_stat_* ones: the tier cache, statement
//! statistics, temp space, capacity and buffer pool figures, after information_schema's
//! views (system/mod.rs `all_views`, whose order numbers the views' OIDs).

use super::values::text;
use super::views::{counter, oid, ratio, DATABASE, PAGE_BYTES};
use super::{SystemView, ViewContext, ViewType};
use crate::types::Datum;
use tierdb_storage::capacity::controller::working_set_capacity;

/// The tier cache's slot size.
const TIER_SLOT_BYTES: u64 = 8192;

/// The views, after `INFORMATION_VIEWS`.
pub(super) static STAT_VIEWS: &[SystemView] = &[
    view!(&["tierdb_stat_tier_cache"], |c| [tier_cache(c)], |[total, used, hits, misses, writes, invalidations]| {
        total_size: Int8 = counter(total),
        used_size: Int8 = counter(used),
        hits: Int8 = counter(hits),
        misses: Int8 = counter(misses),
        writes: Int8 = counter(writes),
        invalidations: Int8 = counter(invalidations),
        hit_ratio: Float8 = ratio(hits, misses),
    }),
    // As pg_stat_statements without pg_read_all_stats: other roles' texts are hidden from a
    // role that is not a superuser.
    view!(&["tierdb_stat_statements"], |c| statement_rows(c), |(userid, query, entry)| {
        userid: Oid = oid(userid),
        query: Text = Datum::Text(query),
        calls: Int8 = counter(entry.calls),
        total_exec_time: Float8 = Datum::Float(milliseconds(entry.total_time_ns)),
        mean_exec_time: Float8 = Datum::Float(mean(milliseconds(entry.total_time_ns), entry.calls)),
        rows: Int8 = counter(entry.rows),
        shared_blks_hit: Int8 = counter(entry.shared_hits),
        tier_blks_hit: Int8 = counter(entry.tier_hits),
        storage_blks_read: Int8 = counter(entry.storage_reads),
        capacity_unit_seconds: Float8 = Datum::Float(entry.capacity_unit_seconds),
    }),
    view!(&["pg_stat_database"], |c| [(c.session, c.catalog.engine().store().temp_space().stats())], |(session, temp)| {
        datid: Oid = oid(DATABASE),
        datname: Name = text(session.database),
        temp_files: Int8 = counter(temp.files_created),
        temp_bytes: Int8 = counter(temp.bytes_written),
    }),
    // Columns PostgreSQL 15 fills for other phases or partitioned tables show 0, as it does
    // when they do not apply; the blocks of the scan are not counted.
    view!(&["pg_stat_progress_create_index"], |c| c.catalog.engine().index_build_progress().into_iter().map(|build| (c.session, build)), |(session, build)| {
        pid: Int4 = Datum::Int(i64::from(build.pid)),
        datid: Oid = oid(DATABASE),
        datname: Name = text(session.database),
        relid: Oid = oid(build.relid),
        index_relid: Oid = oid(build.index_relid),
        command: Text = text("CREATE INDEX"),
        phase: Text = text(build.phase.name()),
        lockers_total: Int8 = Datum::Int(0),
        lockers_done: Int8 = Datum::Int(0),
        current_locker_pid: Int8 = Datum::Int(0),
        blocks_total: Int8 = Datum::Int(0),
        blocks_done: Int8 = Datum::Int(0),
        tuples_total: Int8 = counter(build.tuples_total),
        tuples_done: Int8 = counter(build.tuples_done),
        partitions_total: Int8 = Datum::Int(0),
        partitions_done: Int8 = Datum::Int(0),
    }),
    view!(&["tierdb_stat_temp"], |c| [c.catalog.engine().store().temp_space()], |space| {
        temp_files: Int8 = counter(space.stats().files_created),
        temp_bytes: Int8 = counter(space.stats().bytes_written),
        files_open: Int8 = counter(space.stats().files_open),
        bytes_in_use: Int8 = counter(space.stats().bytes_in_use),
        quota_bytes: Int8 = counter(space.stats().quota_bytes),
        table_bytes: Int8 = counter(space.stats().table_bytes),
        operator_memory_bytes: Int8 = counter(crate::convert::count_u64(space.memory().used_bytes())),
        operator_memory_limit_bytes: Int8 = counter(crate::convert::count_u64(space.memory().limit_bytes())),
    }),
    view!(&["tierdb_stat_capacity"], |c| [c.catalog.engine().store().capacity().status()], |status| {
        enabled: Bool = Datum::Bool(status.enabled),
        current_capacity: Float8 = Datum::Float(status.current.units()),
        target_capacity: Float8 = Datum::Float(status.target.units()),
        min_capacity: Float8 = Datum::Float(status.bounds.min.units()),
        max_capacity: Float8 = Datum::Float(status.bounds.max.units()),
        capacity_unit_bytes: Int8 = counter(status.unit.bytes),
        buffer_pool_bytes: Int8 = counter(buffer_pool_bytes(c)),
        operator_memory_bytes: Int8 = counter(crate::convert::count_u64(c.catalog.engine().store().temp_space().memory().limit_bytes())),
        working_set_dram_pages: Int8 = counter(status.working_set.dram_pages),
        working_set_tier_pages: Int8 = counter(status.working_set.below_dram_pages),
        working_set_pages: Int8 = counter(status.working_set.pages),
        working_set_bytes: Int8 = counter(status.working_set.pages.saturating_mul(PAGE_BYTES)),
        working_set_capacity: Float8 = Datum::Float(working_set_capacity(status.working_set.pages, status.unit).units()),
        last_decision: Text = text(status.last_action.name()),
        last_reason: Text = text(&status.last_reason),
        latest_reason: Text = text(&status.latest_reason),
        decisions: Int8 = counter(status.decisions),
        capacity_unit_seconds: Float8 = Datum::Float(status.capacity_unit_seconds()),
        idle_released: Bool = Datum::Bool(status.released),
        idle_releases: Int8 = counter(status.resume.releases),
        resumes: Int8 = counter(status.resume.count),
        resume_last_ms: Float8 = Datum::Float(status.resume.last_ms),
        resume_p95_ms: Float8 = Datum::Float(status.resume.p95_ms),
    }),
    view!(&["tierdb_stat_buffer_pool"], |c| [c.catalog.engine().store().pool_stats()], |stats| {
        hits: Int8 = counter(stats.hits.get()),
        misses: Int8 = counter(stats.misses.get()),
        evictions: Int8 = counter(stats.evictions.get()),
        hit_ratio: Float8 = ratio(stats.hits.get(), stats.misses.get()),
    }),
];

/// Nanoseconds as fractional milliseconds, for display.
#[allow(clippy::cast_precision_loss)] // Display precision: the low bits do not matter.
fn milliseconds(nanoseconds: u64) -> f64 {
    nanoseconds as f64 / 1e6
}

/// `total / calls`, 0 before the first call.
#[allow(clippy::cast_precision_loss)] // Display precision: the low bits do not matter.
fn mean(total: f64, calls: u64) -> f64 {
    if calls == 0 {
        0.0
    } else {
        total / calls as f64
    }
}

/// The tier cache's figures: total and used bytes, hits, misses, writes, invalidations.
fn tier_cache(context: &ViewContext<'_>) -> [u64; 6] {
    let store = context.catalog.engine().store();
    match store.tier() {
        Some(tier) => {
            let (_, used_slots) = tier.usage();
            let stats = tier.stats();
            [
                tier.capacity_bytes(),
                used_slots.saturating_mul(TIER_SLOT_BYTES),
                stats.hits.get(),
                stats.misses.get(),
                stats.writes.get(),
                stats.invalidations.get(),
            ]
        }
        None => [0; 6],
    }
}

/// The buffer pool's allocated bytes.
fn buffer_pool_bytes(context: &ViewContext<'_>) -> u64 {
    let (allocated_frames, _) = context.catalog.engine().store().buffer_pool_frames();
    crate::convert::count_u64(allocated_frames).saturating_mul(PAGE_BYTES)
}

/// The statement statistics a session may see: every entry, the query text of other roles'
/// only for superusers (pg_stat_statements' `<insufficient privilege>`).
fn statement_rows(c: &ViewContext<'_>) -> Vec<(u32, String, crate::stats::StatementEntry)> {
    let role = c.catalog.role(c.session.user);
    let reads_all = role.as_ref().is_some_and(|role| role.superuser);
    let own = role.map_or(u32::MAX, |role| role.oid);
    let mut entries = c.catalog.statement_stats().snapshot();
    for (userid, query, _) in &mut entries {
        if !reads_all && *userid != own {
            *query = "<insufficient privilege>".to_string();
        }
    }
    entries
}
