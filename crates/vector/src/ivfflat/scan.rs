//! ivfflat queries: the `probes` lists whose centers are nearest to the query, every entry of
//! them with its exact distance, nearest first; with an iterative scan, the next `probes`
//! lists when the consumer wants more, up to `max_probes` lists (pgvector 0.8's
//! `ivfflat.iterative_scan = relaxed_order`).

use super::{IvfFlat, Result, SearchResult};

/// pgvector's `ivfflat.iterative_scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterativeScan {
    /// One batch: the entries of the `probes` nearest lists.
    Off,
    /// Batch after batch of `probes` more lists; a later batch may hold an entry nearer than
    /// the end of an earlier one.
    RelaxedOrder,
}

/// How many lists a scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOptions {
    /// Lists per batch (`ivfflat.probes`).
    pub probes: usize,
    pub iterative: IterativeScan,
    /// Lists of all batches at most with an iterative scan (`ivfflat.max_probes`; never
    /// fewer than `probes`).
    pub max_probes: usize,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions {
            probes: super::PROBES_DEFAULT,
            iterative: IterativeScan::Off,
            max_probes: super::MAX_PROBES_DEFAULT,
        }
    }
}

/// A query's results, batch by batch, without the borrow of its index (the engine holds the
/// index behind an `Arc` and passes it to each call).
pub struct ScanState {
    query: Vec<f32>,
    /// Lists nearest first, cut to the lists the scan may read.
    order: Vec<usize>,
    /// Lists read so far (a prefix of `order`).
    probed: usize,
    probes: usize,
    /// Entries whose exact distance the scan computed.
    evaluated: usize,
}

impl ScanState {
    /// The next batch: the entries of the next `probes` lists, in exact distance order;
    /// empty once the lists the scan may read are read.
    pub fn next_batch(&mut self, index: &IvfFlat) -> Result<Vec<SearchResult>> {
        let end = (self.probed + self.probes).min(self.order.len());
        let mut batch = Vec::new();
        for &list in &self.order[self.probed..end] {
            index.read_list(list, |vector, key| {
                batch.push(SearchResult {
                    distance: index.metric.distance(&self.query, vector),
                    key: key.to_vec(),
                });
            })?;
        }
        self.probed = end;
        self.evaluated += batch.len();
        batch.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        Ok(batch)
    }

    /// Entries whose distance the scan has computed.
    pub fn evaluated(&self) -> usize {
        self.evaluated
    }

    /// Lists the scan has read.
    pub fn probed(&self) -> usize {
        self.probed
    }
}

impl IvfFlat {
    /// Starts a scan for the entries nearest to `query`; `ScanState::next_batch` reads them.
    pub fn scan_state(&self, query: &[f32], options: ScanOptions) -> Result<ScanState> {
        self.check_vector(query)?;
        let lists = self.lists();
        let probes = options.probes.clamp(1, lists);
        let max_probes = match options.iterative {
            IterativeScan::Off => probes,
            IterativeScan::RelaxedOrder => options.max_probes.max(probes).min(lists),
        };
        let distances = self.center_distances(query);
        let mut order: Vec<usize> = (0..lists).collect();
        order.sort_by(|a, b| distances[*a].total_cmp(&distances[*b]).then(a.cmp(b)));
        order.truncate(max_probes);
        Ok(ScanState { query: query.to_vec(), order, probed: 0, probes, evaluated: 0 })
    }

    /// The entries of the `probes` lists nearest to `query`, nearest first (one batch).
    pub fn search(&self, query: &[f32], probes: usize) -> Result<Vec<SearchResult>> {
        let options = ScanOptions { probes, ..ScanOptions::default() };
        self.scan_state(query, options)?.next_batch(self)
    }
}
