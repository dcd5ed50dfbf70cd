//! The advisory lock functions (pg_advisory_lock and its family): the key from one bigint or
//! two integers, and the call to the server's lock table (catalog/advisory.rs) through the
//! function context. Taking functions return void, trying ones whether they got the lock,
//! unlocking ones whether the session held it.

use super::{AdvisoryCall, Call};
use crate::catalog::{AdvisoryKey, AdvisoryMode};
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// The lock the arguments name: one bigint, or two integers (a separate key space).
fn key(call: &Call<'_>) -> Result<AdvisoryKey> {
    if call.args.len() == 2 {
        // The binder coerced both to integer.
        let half = |index: usize| {
            i32::try_from(call.int(index))
                .map_err(|_| SqlError::out_of_range(crate::types::SqlType::Int4.message_name()))
        };
        return Ok(AdvisoryKey::two(half(0)?, half(1)?));
    }
    Ok(AdvisoryKey::one(call.int(0)))
}

fn take(call: &Call<'_>, mode: AdvisoryMode, transaction: bool, wait: bool) -> Result<Datum> {
    let key = key(call)?;
    let granted = (call.context.advisory)(AdvisoryCall::Lock { key, mode, transaction, wait })?;
    Ok(if wait { Datum::Text(String::new()) } else { Datum::Bool(granted) })
}

fn release(call: &Call<'_>, mode: AdvisoryMode) -> Result<Datum> {
    let key = key(call)?;
    Ok(Datum::Bool((call.context.advisory)(AdvisoryCall::Unlock { key, mode })?))
}

pub(super) fn lock(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Exclusive, false, true)
}

pub(super) fn lock_shared(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Shared, false, true)
}

pub(super) fn xact_lock(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Exclusive, true, true)
}

pub(super) fn xact_lock_shared(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Shared, true, true)
}

pub(super) fn try_lock(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Exclusive, false, false)
}

pub(super) fn try_lock_shared(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Shared, false, false)
}

pub(super) fn try_xact_lock(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Exclusive, true, false)
}

pub(super) fn try_xact_lock_shared(call: Call<'_>) -> Result<Datum> {
    take(&call, AdvisoryMode::Shared, true, false)
}

pub(super) fn unlock(call: Call<'_>) -> Result<Datum> {
    release(&call, AdvisoryMode::Exclusive)
}

pub(super) fn unlock_shared(call: Call<'_>) -> Result<Datum> {
    release(&call, AdvisoryMode::Shared)
}

pub(super) fn unlock_all(call: Call<'_>) -> Result<Datum> {
    (call.context.advisory)(AdvisoryCall::UnlockAll)?;
    Ok(Datum::Text(String::new()))
}
