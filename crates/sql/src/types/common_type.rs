//! PostgreSQL's select_common_type for CASE, COALESCE, GREATEST and LEAST, and NULLIF's
//! result type. Inputs of one type keep it (`varchar` stays character varying); otherwise
//! the first input's type is kept unless a later one of its category is one it casts to
//! implicitly and not back, and it is not its category's preferred type (so
//! `COALESCE(varchar, text)` is varchar, `COALESCE(text, varchar)` text,
//! `COALESCE(integer, real)` real). Untyped literals take the others' type. NULLIF's
//! type is functions/typing.rs's.

use super::SqlType;

/// The common type of `types` in PostgreSQL's order (CASE lists ELSE first), or the pair
/// that cannot be matched. All untyped: text. A type modifier stays when every input has
/// it. bpchar of differing (or unknown) lengths, which tierdb cannot hold without a length,
/// is text as before.
pub fn select_common_type(types: &[SqlType]) -> Result<SqlType, (SqlType, SqlType)> {
    let known: Vec<&SqlType> = types.iter().filter(|ty| **ty != SqlType::Unknown).collect();
    let Some(&first) = known.first() else { return Ok(SqlType::Text) };
    if known.iter().all(|ty| same_base(ty, first)) {
        let all_equal = known.len() == types.len() && known.iter().all(|ty| *ty == first);
        return Ok(if all_equal { first.clone() } else { without_typmod(first) });
    }
    let mut chosen = first;
    for &ty in &known[1..] {
        if same_base(ty, chosen) {
            continue;
        }
        let (Some(chosen_rank), Some(rank)) = (category_rank(chosen), category_rank(ty)) else {
            // Categories tierdb does not rank: the pairwise common type, as before.
            return known.iter().try_fold(SqlType::Unknown, |common, ty| {
                SqlType::common(&common, ty).ok_or_else(|| (common.clone(), (*ty).clone()))
            });
        };
        if chosen_rank.0 != rank.0 {
            return Err((chosen.clone(), ty.clone()));
        }
        if moves_to(chosen, ty) {
            chosen = ty;
        }
    }
    Ok(without_typmod(chosen))
}

fn same_base(a: &SqlType, b: &SqlType) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && without_typmod(a) == without_typmod(b)
}

fn without_typmod(ty: &SqlType) -> SqlType {
    match ty {
        SqlType::Varchar(_) => SqlType::Varchar(None),
        SqlType::Numeric { .. } => SqlType::numeric(),
        // bpchar without a length has no tierdb type: text (see select_common_type).
        SqlType::Char(_) => SqlType::Text,
        other => other.clone(),
    }
}

/// (category, position) for the categories ranked here; within numbers and date/times each
/// type casts implicitly to every later one and not back.
fn category_rank(ty: &SqlType) -> Option<(u8, u8)> {
    Some(match ty {
        SqlType::Int2 => (0, 0),
        SqlType::Int4 => (0, 1),
        SqlType::Int8 => (0, 2),
        SqlType::Numeric { .. } => (0, 3),
        SqlType::Float4 => (0, 4),
        SqlType::Float8 => (0, 5),
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Name => (1, 0),
        SqlType::Date => (2, 0),
        SqlType::Timestamp => (2, 1),
        SqlType::TimestampTz => (2, 2),
        _ => return None,
    })
}

/// Whether the common type moves from `chosen` to `next` (same category): `chosen` is not
/// the preferred type and casts implicitly to `next` but not back.
fn moves_to(chosen: &SqlType, next: &SqlType) -> bool {
    match (chosen, next) {
        (SqlType::Float8 | SqlType::TimestampTz | SqlType::Text, _) => false,
        // The strings cast implicitly to one another but name to varchar and bpchar
        // (assignment casts): only varchar and bpchar move, to name.
        (SqlType::Varchar(_) | SqlType::Char(_), SqlType::Name) => true,
        (a, _) if a.is_text() => false,
        (a, b) => matches!((category_rank(a), category_rank(b)), (Some(x), Some(y)) if y.1 > x.1),
    }
}
