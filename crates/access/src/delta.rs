//! How a node change is logged: the smallest set of page-local copies and writes that turns
//! the page's payload into the new one (docs/design/013-wal-node-records.md).
//!
//! A node edit mostly moves bytes that are already on the page: an insert shifts the tail of
//! the slot array by one slot, a compaction slides runs of cells toward the end, and an update
//! of a row rewrites its cell as the new version followed by the old ones. Logging the
//! differing byte ranges logged all of those bytes again. `plan_payload_change` finds them on
//! the page instead and logs a `Move` (source, destination, length: 7 bytes) per run, then
//! writes whatever still differs. Redo stays physical and page-local: it copies bytes within
//! one page, needs no B+tree code, and is idempotent through the page LSN like a write.
//!
//! The plan is checked as it is made: every move is applied to a scratch copy of the page, and
//! the final writes are the differences that remain, so replaying the plan onto the old
//! payload gives exactly the new one whatever moves were chosen (the moves only make the
//! writes smaller).

use std::ops::Range;

use memchr::memmem;

use crate::node::diff_ranges;

/// A run shorter than this is written rather than moved: a move costs 7 bytes, and cutting a
/// write in two costs another 5-byte write header.
pub const MOVE_BYTES_MIN: usize = 24;
/// Bound on the moves of one change, so a pathological page cannot make planning slow; the
/// rest is written. A compaction of a full leaf has one run per freed hole.
const MOVES_MAX: usize = 64;
/// Length of the byte string searched for on the old page to find where a run came from.
const ANCHOR_BYTES: usize = 8;
/// Distance between the anchors tried in a differing range. With 8-byte anchors every 16
/// bytes, any common run of `MOVE_BYTES_MIN` (24) bytes or more contains a whole anchor.
const ANCHOR_STRIDE_BYTES: usize = 16;
/// Occurrences of an anchor tried as a run's source (the first ones on the page).
const CANDIDATES_PER_ANCHOR: usize = 4;
/// Searches of the whole page per change. An anchor in new bytes (a new version's header, a
/// new cell) is found nowhere, and each miss reads the whole page; shifts already found in
/// the change are tried first, without a search. The bound is as high as `MOVES_MAX`
/// because a compaction needs a search per run of cells: a bound of 6 more than doubled
/// sysbench's WAL per transaction.
const SEARCHES_MAX: usize = MOVES_MAX;
/// Shifts tried before a search: an inserted or removed slot shifts the slot array's tail by
/// one or two slots (2 bytes each).
const SMALL_SHIFTS: [isize; 4] = [2, -2, 4, -4];

// A common run of `MOVE_BYTES_MIN` bytes starting anywhere contains a whole anchor.
const _: () = assert!(ANCHOR_STRIDE_BYTES + ANCHOR_BYTES <= MOVE_BYTES_MIN);

/// One step of a logged payload change, applied in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PayloadChange {
    /// Copy `length` bytes from `source` to `destination` (memmove).
    Move { source: usize, destination: usize, length: usize },
    /// Write the new payload's bytes of `range` at the same offsets.
    Write(Range<usize>),
}

/// The changes that turn `before` into `after` (equal-length payloads): moves of runs found on
/// the page, then writes of what still differs.
pub fn plan_payload_change(before: &[u8], after: &[u8]) -> Vec<PayloadChange> {
    assert_eq!(before.len(), after.len(), "payloads of equal length");
    let mut search = Search { moves: Vec::new(), searches_left: SEARCHES_MAX };
    for range in diff_ranges(before, after) {
        search.find_moves(before, after, range);
    }
    let moves = search.moves;
    let mut current = before.to_vec();
    let mut changes = order_moves(&mut current, after, moves);
    for range in diff_ranges(&current, after) {
        changes.push(PayloadChange::Write(range));
    }
    changes
}

/// A run of the new payload found on the old page.
#[derive(Clone, Copy, Debug)]
struct Run {
    source: usize,
    destination: usize,
    length: usize,
}

impl Run {
    fn overwrites_source_of(&self, other: &Run) -> bool {
        self.destination < other.source + other.length
            && other.source < self.destination + self.length
    }
}

/// The runs found so far in one change, and the page searches it may still make.
struct Search {
    moves: Vec<Run>,
    searches_left: usize,
}

impl Search {
    /// Finds runs of `range` (of the new payload) on the old page, left to right.
    fn find_moves(&mut self, before: &[u8], after: &[u8], range: Range<usize>) {
        let mut lowest = range.start;
        let mut anchor = range.start;
        while anchor + MOVE_BYTES_MIN <= range.end && self.moves.len() < MOVES_MAX {
            match self.longest_run(before, after, lowest..range.end, anchor) {
                Some(run) => {
                    lowest = run.destination + run.length;
                    anchor = lowest;
                    self.moves.push(run);
                }
                None => anchor += ANCHOR_STRIDE_BYTES,
            }
        }
    }

    /// The longest run of `after` within `bounds` that contains the anchor at `anchor` and
    /// equals bytes of `before` at a constant shift, if it is at least `MOVE_BYTES_MIN` long
    /// and does not already sit in place. Tries the small shifts and the shifts of runs
    /// found before, then (while searches are left) the anchor's first occurrences.
    fn longest_run(
        &mut self,
        before: &[u8],
        after: &[u8],
        bounds: Range<usize>,
        anchor: usize,
    ) -> Option<Run> {
        let known = SMALL_SHIFTS
            .iter()
            .copied()
            .chain(self.moves.iter().map(shift_of))
            .filter_map(|shift| anchor.checked_add_signed(-shift));
        let mut best = best_run(before, after, &bounds, anchor, known);
        if best.is_none() && self.searches_left > 0 {
            self.searches_left -= 1;
            let needle = &after[anchor..anchor + ANCHOR_BYTES];
            let searched = memmem::find_iter(before, needle).take(CANDIDATES_PER_ANCHOR);
            best = best_run(before, after, &bounds, anchor, searched);
        }
        best
    }
}

/// How far a run moved, as a signed distance.
fn shift_of(run: &Run) -> isize {
    let destination = isize::try_from(run.destination).expect("offsets within a page");
    destination - isize::try_from(run.source).expect("offsets within a page")
}

/// Applies the runs to `current` in an order where no move overwrites the source of one still
/// to come (a compaction slides cells up the page: the highest must move first), and returns
/// them as changes. Runs caught in a cycle, whose source was overwritten after all, are left
/// to the writes: every applied move is checked against the new payload first.
fn order_moves(current: &mut [u8], after: &[u8], mut pending: Vec<Run>) -> Vec<PayloadChange> {
    let mut changes = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let ready = (0..pending.len()).find(|&index| {
            pending
                .iter()
                .enumerate()
                .all(|(other, run)| other == index || !pending[index].overwrites_source_of(run))
        });
        let Run { source, destination, length } = pending.swap_remove(ready.unwrap_or(0));
        if current[source..source + length] == after[destination..destination + length] {
            current.copy_within(source..source + length, destination);
            changes.push(PayloadChange::Move { source, destination, length });
        }
    }
    changes
}

/// The longest run through the anchor among the candidate sources, if it is at least
/// `MOVE_BYTES_MIN` long.
fn best_run(
    before: &[u8],
    after: &[u8],
    bounds: &Range<usize>,
    anchor: usize,
    sources: impl Iterator<Item = usize>,
) -> Option<Run> {
    let needle = &after[anchor..anchor + ANCHOR_BYTES];
    let mut best: Option<Run> = None;
    for source in sources {
        if source == anchor || source + ANCHOR_BYTES > before.len() {
            continue;
        }
        if before[source..source + ANCHOR_BYTES] != *needle {
            continue;
        }
        let run = extend_run(before, after, bounds, source, anchor);
        if best.is_none_or(|best| run.length > best.length) {
            best = Some(run);
        }
        if run.length >= bounds.end - bounds.start {
            break;
        }
    }
    best.filter(|run| run.length >= MOVE_BYTES_MIN)
}

/// Grows the match of `after[anchor..]` with `before[source..]` both ways within `bounds`.
fn extend_run(
    before: &[u8],
    after: &[u8],
    bounds: &Range<usize>,
    source: usize,
    anchor: usize,
) -> Run {
    let mut back = 0;
    while anchor - back > bounds.start
        && source > back
        && before[source - back - 1] == after[anchor - back - 1]
    {
        back += 1;
    }
    let mut forward = ANCHOR_BYTES;
    while anchor + forward < bounds.end
        && source + forward < before.len()
        && before[source + forward] == after[anchor + forward]
    {
        forward += 1;
    }
    Run { source: source - back, destination: anchor - back, length: back + forward }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes without repeats (a linear congruential sequence), so each run has one source.
    fn distinct_bytes(length: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        (0..length)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                state.to_le_bytes()[7]
            })
            .collect()
    }

    fn replay(before: &[u8], after: &[u8], changes: &[PayloadChange]) -> Vec<u8> {
        let mut bytes = before.to_vec();
        for change in changes {
            match change {
                PayloadChange::Move { source, destination, length } => {
                    bytes.copy_within(*source..source + length, *destination)
                }
                PayloadChange::Write(range) => {
                    bytes[range.clone()].copy_from_slice(&after[range.clone()])
                }
            }
        }
        bytes
    }

    #[test]
    fn a_shifted_slot_array_is_one_move() {
        let before = distinct_bytes(400);
        let mut after = before.clone();
        after.copy_within(100..300, 102);
        after[100] = 0xAA;
        after[101] = 0xBB;
        let changes = plan_payload_change(&before, &after);
        assert_eq!(
            changes,
            vec![
                PayloadChange::Move { source: 100, destination: 102, length: 200 },
                PayloadChange::Write(100..102),
            ]
        );
        assert_eq!(replay(&before, &after, &changes), after);
    }

    #[test]
    fn a_cell_that_keeps_old_bytes_moves_them() {
        let before = distinct_bytes(1000);
        let mut after = before.clone();
        // A new 40-byte version in front of the 200 old bytes, rewritten lower on the page.
        after[500..540].fill(0x5A);
        after.copy_within(800..1000, 540);
        let changes = plan_payload_change(&before, &after);
        assert!(changes.contains(&PayloadChange::Move {
            source: 800,
            destination: 540,
            length: 200
        }));
        assert_eq!(replay(&before, &after, &changes), after);
    }

    #[test]
    fn a_compaction_moves_the_highest_cells_first() {
        // Cells A (100..200) and B (250..400) slide to the end of a 500-byte payload: B by
        // 100 bytes, A by 150 into B's old place, so B must move before A.
        let before = distinct_bytes(500);
        let mut after = before.clone();
        after.copy_within(250..400, 350);
        after.copy_within(100..200, 250);
        let changes = plan_payload_change(&before, &after);
        assert_eq!(
            changes,
            vec![
                PayloadChange::Move { source: 250, destination: 350, length: 150 },
                PayloadChange::Move { source: 100, destination: 250, length: 100 },
            ]
        );
        assert_eq!(replay(&before, &after, &changes), after);
    }
}
