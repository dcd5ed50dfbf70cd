//! Batched inserts of new keys (COPY, INSERT ... SELECT): one descent and one mtr (one WAL
//! record) per run of keys that lands in one leaf, instead of one per key.

use tierdb_storage::{Mtr, MtrSlot};

use super::{corrupt, write_payload, BTree, BTreeError, Result, TAG_INLINE};
use crate::node::{diff_ranges, NodeMut, INLINE_VALUE_BYTES_MAX};

/// What `insert_leaf_run` did: where the next run starts, and the entry (if any) that did not
/// fit the leaf and goes through the single-key path (which splits the leaf).
struct LeafRun {
    next: usize,
    overflowing: Option<usize>,
}

impl BTree {
    /// Inserts strictly ascending entries whose keys are new; returns the positions (in
    /// `entries`) of those whose key is already in the tree, which are left unchanged. Each run
    /// of keys that lands in one leaf is merged into it with one descent and one logged change
    /// of the leaf; a key that does not fit goes through `insert`, whose split of the rightmost
    /// leaf leaves the left node full (`append_split_point`), so an in-order load fills leaves.
    ///
    /// The check that a key is absent and its insertion are atomic for one leaf only: the
    /// caller keeps other writers off these keys for the call (the engine holds their row
    /// locks), so a key found absent stays absent until `insert` adds it.
    pub fn insert_batch(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<usize>> {
        for (index, (key, value)) in entries.iter().enumerate() {
            Self::check_sizes(key, Some(value))?;
            if index > 0 && entries[index - 1].0 >= *key {
                return Err(BTreeError::UnsortedInput { index });
            }
        }
        let mut present = Vec::new();
        let mut start = 0;
        while start < entries.len() {
            let run = self.insert_leaf_run(entries, start, &mut present)?;
            assert!(run.next > start, "every run places at least one entry");
            start = run.next;
            if let Some(position) = run.overflowing {
                let (key, value) = &entries[position];
                let (previous, _) = self.insert(key, value)?;
                assert!(previous.is_none(), "the caller keeps other writers off the batch's keys");
            }
        }
        Ok(present)
    }

    /// Merges the entries from `start` that belong to the leaf of `entries[start]` into it, in
    /// one mtr, until one does not fit (or its value goes to overflow pages).
    fn insert_leaf_run(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        start: usize,
        present: &mut Vec<usize>,
    ) -> Result<LeafRun> {
        let mut mtr: Mtr<'_> = self.store.mtr();
        let mut upper = None;
        let (slot, page_id, _) = self.latch_leaf(&mut mtr, &entries[start].0, Some(&mut upper))?;
        let mut after = mtr.page(slot).payload().to_vec();
        let mut changed = false;
        // Whether every key went after the leaf's last cell (an in-order load): the change is
        // then new slots and new cells only, with nothing on the page to move.
        let mut appended_only = true;
        let mut run = LeafRun { next: start, overflowing: None };
        {
            let mut node = NodeMut::open(&mut after).map_err(|error| corrupt(page_id, error.0))?;
            let mut stored = Vec::new();
            while let Some((key, value)) = entries.get(run.next) {
                if upper.as_ref().is_some_and(|upper: &Vec<u8>| key >= upper) {
                    break;
                }
                let index = match node.view().search(key) {
                    Ok(_) => {
                        present.push(run.next);
                        run.next += 1;
                        continue;
                    }
                    Err(index) => index,
                };
                stored.clear();
                stored.push(TAG_INLINE);
                stored.extend_from_slice(value);
                if value.len() >= INLINE_VALUE_BYTES_MAX || !node.insert_leaf(index, key, &stored) {
                    run.overflowing = Some(run.next);
                    run.next += 1;
                    break;
                }
                appended_only &= index == node.view().count() - 1;
                changed = true;
                run.next += 1;
            }
        }
        if changed && appended_only {
            write_new_bytes(&mut mtr, slot, &after);
        } else if changed {
            write_payload(&mut mtr, slot, &after);
        }
        mtr.commit()?;
        Ok(run)
    }
}

/// Logs a change that only added bytes (appended slots and cells, the header) as writes of
/// the differing ranges: `write_payload`'s search for moved bytes would find none and costs
/// a scan of the page per anchor (a fifth of a load's time in a profile).
fn write_new_bytes(mtr: &mut Mtr<'_>, slot: MtrSlot, after: &[u8]) {
    for range in diff_ranges(mtr.page(slot).payload(), after) {
        mtr.write(slot, range.start, &after[range]);
    }
    debug_assert!(mtr.page(slot).payload() == after, "the writes reproduce the node");
}
