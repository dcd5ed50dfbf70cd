//! Table, column, index and CHECK constraint descriptions, and their stored text encoding.
//!
//! A table's entry is lines of tab-separated fields (text fields escaped: `\\`, `\t`, `\n`):
//!
//! | line | fields |
//! |---|---|
//! | header | `v1`, table oid, table name |
//! | `c` (column) | name, type, nullable 0/1, `-` or `=`default, [identity a/d] |
//! | `i` (index) | name, oid, column positions `0,2`, unique 0/1, primary 0/1, kind, [`u`] |
//! | `k` (CHECK) | name, oid, expression, definition, pretty definition |
//! | `f` (FOREIGN KEY) | name, oid, columns `0,2`, referenced table, its columns, ON UPDATE and ON DELETE codes (`a r c n d`), MATCH code (`s f`) |
//! | `w` (view) | the query's SQL text |
//! | `u` (view dependency, after `w`) | a table or view the query names, then each column of it the query may read |
//! | `q` (sequence) | type, start, increment, min, max, cache, cycle 0/1, [owner table, column] |
//! | `l` (layout) | each column's engine slot `0,3`, the columns' missing values (hex of the engine's row encoding) |
//!
//! Optional trailing fields are written only when set, so entries written before they
//! existed decode unchanged. The `l` line too: a table whose columns never changed (ADD /
//! DROP COLUMN, docs/design/016) has none.

use super::*;
use crate::types::Datum;

/// PostgreSQL's most columns in a table (MaxHeapAttributeNumber); CREATE TABLE refuses
/// more (54011), so attribute numbers fit i16.
pub const COLUMNS_MAX: usize = 1600;

/// The 1-based attribute number of the column at `position` (pg_attribute.attnum).
pub fn attribute_number(position: usize) -> i16 {
    assert!(position < COLUMNS_MAX, "tables have at most {COLUMNS_MAX} columns");
    i16::try_from(position + 1).expect("COLUMNS_MAX fits i16")
}

/// The OID of the sequence of the column at `position` of the table with OID `table`.
///
/// tierdb's sequences are not catalog objects with OIDs of their own: a serial or identity
/// column's sequence is numbered from its table and column, above every OID the catalog's
/// counter hands out (it would take 2^31 objects to reach them), so that
/// `'t_id_seq'::regclass` and pg_sequence.seqrelid agree. None for a table whose OID is
/// past 2^20 (no room left in the range).
pub fn sequence_oid(table: u32, position: usize) -> Option<u32> {
    const SEQUENCE_OID_BASE: u32 = 1 << 31;
    const TABLES_MAX: u32 = 1 << 20;
    let position = u32::try_from(position).ok()?;
    // COLUMNS_MAX < 2048: a column's position fits the low 11 bits.
    (table < TABLES_MAX).then_some(SEQUENCE_OID_BASE | (table << 11) | position)
}

/// The OID of the DEFAULT (pg_attrdef row) of the column at `position` of the table with
/// OID `table`: numbered as `sequence_oid` in the range below it (2^30 up), which the
/// catalog's counter would reach after 2^30 objects. None for a table whose OID is past
/// 2^19.
pub fn default_oid(table: u32, position: usize) -> Option<u32> {
    const DEFAULT_OID_BASE: u32 = 1 << 30;
    const TABLES_MAX: u32 = 1 << 19;
    let position = u32::try_from(position).ok()?;
    (table < TABLES_MAX).then_some(DEFAULT_OID_BASE | (table << 11) | position)
}

/// Each sequence of a table's columns: (the column's position, the column, the sequence).
pub fn column_sequences(table: &TableMeta) -> impl Iterator<Item = (usize, &ColumnMeta, &str)> {
    table.columns.iter().enumerate().filter_map(|(position, column)| {
        let sequence = column.default.as_deref().and_then(super::sequence_of_default)?;
        Some((position, column, sequence))
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnMeta {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// The DEFAULT expression as SQL text (serial and identity columns:
    /// `nextval('<sequence>')`).
    pub default: Option<String>,
    /// GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY: the values come from `default`'s
    /// sequence; ALWAYS refuses other values (428C9).
    pub identity: Option<Identity>,
}

impl ColumnMeta {
    /// The sequence an identity column's DEFAULT calls (None for other columns).
    pub fn identity_sequence(&self) -> Option<String> {
        self.identity?;
        let default = self.default.as_deref()?;
        super::default_sequences(default).into_iter().next()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    Always,
    ByDefault,
}

impl Identity {
    /// pg_attribute.attidentity's code.
    pub fn code(self) -> &'static str {
        match self {
            Identity::Always => "a",
            Identity::ByDefault => "d",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// The table's clustering key (its engine primary key).
    Clustered,
    /// An engine secondary index.
    Secondary,
    /// A vector index (pgvector's `USING hnsw` or `USING ivfflat`) on one vector column.
    Hnsw(HnswOptions),
}

/// A vector index's access method, operator class and the options given in WITH (None:
/// pgvector's default, which `pg_get_indexdef` then does not print): `m` and
/// `ef_construction` for HNSW, `lists` for ivfflat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HnswOptions {
    pub metric: tierdb_vector::hnsw::Metric,
    pub m: Option<usize>,
    pub ef_construction: Option<usize>,
    /// Whether the index is ivfflat (else HNSW).
    pub ivfflat: bool,
    pub lists: Option<usize>,
}

impl HnswOptions {
    /// The access method's name: `hnsw` or `ivfflat`.
    pub fn access_method(&self) -> &'static str {
        if self.ivfflat {
            "ivfflat"
        } else {
            "hnsw"
        }
    }

    /// The operator class's name.
    pub fn operator_class(&self) -> &'static str {
        match self.metric {
            tierdb_vector::hnsw::Metric::L2 => "vector_l2_ops",
            tierdb_vector::hnsw::Metric::InnerProduct => "vector_ip_ops",
            tierdb_vector::hnsw::Metric::Cosine => "vector_cosine_ops",
            tierdb_vector::hnsw::Metric::L1 => "vector_l1_ops",
            tierdb_vector::hnsw::Metric::HalfL2 => "halfvec_l2_ops",
            tierdb_vector::hnsw::Metric::HalfInnerProduct => "halfvec_ip_ops",
            tierdb_vector::hnsw::Metric::HalfCosine => "halfvec_cosine_ops",
            tierdb_vector::hnsw::Metric::HalfL1 => "halfvec_l1_ops",
            tierdb_vector::hnsw::Metric::BitHamming => "bit_hamming_ops",
            tierdb_vector::hnsw::Metric::BitJaccard => "bit_jaccard_ops",
        }
    }

    /// The stored form: `hnsw:<metric code>:<m or ->:<ef_construction or ->`.
    /// An ivfflat index's: `ivfflat:<metric code>:<lists or ->`.
    fn encode(&self) -> String {
        let option =
            |value: Option<usize>| value.map_or_else(|| "-".to_string(), |value| value.to_string());
        if self.ivfflat {
            return format!("ivfflat:{}:{}", self.metric.code(), option(self.lists));
        }
        format!("hnsw:{}:{}:{}", self.metric.code(), option(self.m), option(self.ef_construction))
    }

    fn decode(text: &str) -> Option<HnswOptions> {
        if let Some(rest) = text.strip_prefix("ivfflat:") {
            let (metric, lists) = rest.split_once(':')?;
            let metric = tierdb_vector::hnsw::Metric::from_code(metric.parse().ok()?)?;
            let lists = if lists == "-" { None } else { Some(lists.parse().ok()?) };
            return Some(HnswOptions {
                metric,
                m: None,
                ef_construction: None,
                ivfflat: true,
                lists,
            });
        }
        let mut fields = text.strip_prefix("hnsw:")?.split(':');
        let metric = tierdb_vector::hnsw::Metric::from_code(fields.next()?.parse().ok()?)?;
        let mut option = || -> Option<Option<usize>> {
            match fields.next()? {
                "-" => Some(None),
                number => number.parse().ok().map(Some),
            }
        };
        let (m, ef_construction) = (option()?, option()?);
        Some(HnswOptions { metric, m, ef_construction, ivfflat: false, lists: None })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct IndexMeta {
    pub name: String,
    pub oid: u32,
    pub columns: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
    /// The index of a PRIMARY KEY or UNIQUE constraint (CREATE TABLE, ALTER TABLE ... ADD):
    /// pg_constraint lists it and ALTER TABLE ... DROP CONSTRAINT drops it; DROP INDEX
    /// refuses it (2BP01). An index of CREATE [UNIQUE] INDEX is not a constraint.
    pub constraint: bool,
    pub kind: IndexKind,
    /// A partial index's predicate (CREATE INDEX ... WHERE): only rows it makes true are
    /// indexed (docs/design/017-constraints.md, "Partial indexes").
    pub predicate: Option<PredicateMeta>,
}

/// The predicate of a partial index, stored as a CHECK constraint's expression is: SQL text
/// over the columns' current names, bound again at load, with PostgreSQL's deparsed forms.
#[derive(Clone, Debug, PartialEq)]
pub struct PredicateMeta {
    /// The expression as written (`parse_stored_expression` reads it back).
    pub expression: String,
    /// `pg_get_indexdef`'s form: `(deleted_at IS NULL)`.
    pub definition: String,
    /// The pretty form (`pg_get_indexdef(oid, 0, true)`, psql's `\d`): `deleted_at IS NULL`.
    pub pretty: String,
    /// The deparsed form of each of its top-level AND conjuncts: a query may use the index
    /// when every one of them is among its own conjuncts (plan/access.rs).
    pub conjuncts: Vec<String>,
}

/// A CHECK constraint: a boolean expression over the row's columns that every row written
/// must not make false (NULL passes, as in PostgreSQL).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckMeta {
    pub name: String,
    pub oid: u32,
    /// The expression as SQL text over the columns' current names (bound again by each
    /// statement that writes the table; rewritten by RENAME COLUMN).
    pub expression: String,
    /// PostgreSQL's deparsed form of the bound expression (`pg_get_constraintdef`,
    /// `information_schema.check_constraints`): `(a > 0)`, `(d > '2020-01-01'::date)`.
    pub definition: String,
    /// The same in PostgreSQL's "pretty" form (`pg_get_constraintdef(oid, true)`, psql's
    /// `\d`): `a > 0`.
    pub pretty: String,
}

/// What a FOREIGN KEY does to the referencing rows when a referenced row is deleted or its
/// key updated (pg_constraint.confdeltype / confupdtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferentialAction {
    /// The default: an error at the end of the statement if a referencing row remains.
    NoAction,
    /// An error at once if a referencing row exists.
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

/// PostgreSQL's 23503 for a row whose key the referenced table lacks.
pub fn foreign_key_violation(table: &str, constraint: &str) -> SqlError {
    SqlError::new(
        "23503",
        format!(
            "insert or update on table \"{table}\" violates foreign key constraint \"{constraint}\""
        ),
    )
}

impl ReferentialAction {
    /// PostgreSQL's one-letter code.
    pub fn code(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "a",
            ReferentialAction::Restrict => "r",
            ReferentialAction::Cascade => "c",
            ReferentialAction::SetNull => "n",
            ReferentialAction::SetDefault => "d",
        }
    }

    fn from_code(code: &str) -> Option<ReferentialAction> {
        Some(match code {
            "a" => ReferentialAction::NoAction,
            "r" => ReferentialAction::Restrict,
            "c" => ReferentialAction::Cascade,
            "n" => ReferentialAction::SetNull,
            "d" => ReferentialAction::SetDefault,
            _ => return None,
        })
    }

    /// The action in words: `pg_get_constraintdef` (which leaves NO ACTION out) and
    /// information_schema.referential_constraints.
    pub fn words(self) -> &'static str {
        match self {
            ReferentialAction::NoAction => "NO ACTION",
            ReferentialAction::Restrict => "RESTRICT",
            ReferentialAction::Cascade => "CASCADE",
            ReferentialAction::SetNull => "SET NULL",
            ReferentialAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY constraint, kept with the referencing table: the referencing columns'
/// values must be a key of a row of the referenced table (unless one is NULL, MATCH SIMPLE;
/// unless all are NULL, MATCH FULL). The referenced columns are those of a primary key or
/// UNIQUE constraint of the referenced table. Columns are positions, so that RENAME COLUMN
/// of either table leaves the constraint as it is.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignKeyMeta {
    pub name: String,
    pub oid: u32,
    pub columns: Vec<usize>,
    pub referenced_table: String,
    pub referenced_columns: Vec<usize>,
    pub on_update: ReferentialAction,
    pub on_delete: ReferentialAction,
    /// MATCH FULL (else MATCH SIMPLE, the default).
    pub match_full: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableMeta {
    pub name: String,
    pub oid: u32,
    pub columns: Vec<ColumnMeta>,
    pub indexes: Vec<IndexMeta>,
    /// The CHECK constraints, in name order (the order PostgreSQL evaluates them in, so
    /// that a row breaking two reports the same one).
    pub checks: Vec<CheckMeta>,
    /// The FOREIGN KEY constraints of this (referencing) table, in name order.
    pub foreign_keys: Vec<ForeignKeyMeta>,
    /// Where the engine stores each column (None: column `i` in slot `i`, no missing
    /// values): what a rollback hands back to the engine (`Engine::set_layout`).
    pub layout: Option<ColumnLayout>,
    /// Set for a view (pg_class.relkind 'v'): no engine table, its query is bound in place of
    /// a scan wherever the view is named (docs/design/018).
    pub view: Option<ViewMeta>,
    /// Set for a sequence made by CREATE SEQUENCE (pg_class.relkind 'S'): no engine table and
    /// no columns (catalog/sequences.rs).
    pub sequence: Option<SequenceMeta>,
}

/// A view's stored query and the relations it names (docs/design/018).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewMeta {
    /// The query as SQL text (sqlparser's rendering of the parsed query), bound again at each
    /// use; the view's columns are `TableMeta::columns`, its first ones.
    pub query: String,
    /// The tables and views the query names, in name order, with the columns it may read
    /// of each: what DROP and column changes of them look for.
    pub depends_on: Vec<ViewDependency>,
}

/// A relation a view's query names and the columns of it the query may read (docs/design/018:
/// those whose name the query uses as a word, all of them if it has a `*`; decided at CREATE
/// VIEW, so that columns added later are not read by the view).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDependency {
    pub relation: String,
    pub columns: Vec<String>,
}

/// The engine layout of a table's columns (docs/design/016): each column's physical slot
/// and the value it has in rows stored before the slot existed (PostgreSQL's
/// attmissingval: the DEFAULT of ADD COLUMN evaluated once, else NULL).
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnLayout {
    pub slots: Vec<usize>,
    pub missing: Vec<Value>,
}

impl TableMeta {
    /// A table of `columns` without indexes, constraints or a stored layout, its OID not yet
    /// given (CREATE TABLE AS, CREATE VIEW).
    pub fn with_columns(name: String, columns: Vec<ColumnMeta>) -> TableMeta {
        TableMeta {
            name,
            oid: 0,
            columns,
            indexes: Vec::new(),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            layout: None,
            view: None,
            sequence: None,
        }
    }

    /// Whether this is a view (no engine table; docs/design/018).
    pub fn is_view(&self) -> bool {
        self.view.is_some()
    }

    /// The table's column layout, the identity one when it has none stored.
    pub fn column_layout(&self) -> ColumnLayout {
        self.layout.clone().unwrap_or_else(|| ColumnLayout {
            slots: (0..self.columns.len()).collect(),
            missing: vec![Value::Null; self.columns.len()],
        })
    }

    /// Sets the column layout, storing none when it is the identity one, so that the
    /// entries of tables that never changed stay as they were.
    pub fn set_column_layout(&mut self, layout: ColumnLayout) {
        assert_eq!(layout.slots.len(), self.columns.len(), "a slot per column");
        assert_eq!(layout.missing.len(), self.columns.len(), "a missing value per column");
        let identity = layout.slots.iter().enumerate().all(|(column, &slot)| column == slot)
            && layout.missing.iter().all(|value| matches!(value, Value::Null));
        self.layout = if identity { None } else { Some(layout) };
    }

    /// Whether `index` is the table's clustering key (its engine primary key).
    pub fn is_clustering_index(&self, index: &str) -> bool {
        self.indexes.iter().any(|known| known.name == index && known.kind == IndexKind::Clustered)
    }
    /// The one NOT NULL check: 23502 when a value of a NOT NULL column is NULL. `stored`
    /// says whether the row is already in the table (ALTER TABLE ... SET NOT NULL finding
    /// one, PostgreSQL's "contains null values") or is being written (INSERT, UPDATE, COPY).
    pub fn check_not_null(&self, position: usize, is_null: bool, stored: bool) -> Result<()> {
        let column = &self.columns[position];
        if !is_null || (column.nullable && !stored) {
            return Ok(());
        }
        let message = if stored {
            format!("column \"{}\" of relation \"{}\" contains null values", column.name, self.name)
        } else {
            format!(
                "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                column.name, self.name
            )
        };
        Err(SqlError::new("23502", message))
    }

    /// Checks a row being written against every NOT NULL column.
    pub fn check_row_not_null(&self, row: &[Datum]) -> Result<()> {
        debug_assert_eq!(row.len(), self.columns.len(), "a whole row of {}", self.name);
        for (position, datum) in row.iter().enumerate() {
            self.check_not_null(position, datum.is_null(), false)?;
        }
        Ok(())
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|column| column.name == name)
    }

    /// The clustered primary key columns, if the table is clustered on one.
    pub fn clustered_key(&self) -> Option<&IndexMeta> {
        self.indexes.iter().find(|index| index.kind == IndexKind::Clustered)
    }

    pub fn primary_key(&self) -> Option<&IndexMeta> {
        self.indexes.iter().find(|index| index.primary)
    }

    /// The unique index over exactly `columns` (in any order) that a FOREIGN KEY
    /// referencing them relies on: the primary key's first, as PostgreSQL's lookup.
    pub fn referenced_index(&self, columns: &[usize]) -> Option<&IndexMeta> {
        let mut wanted = columns.to_vec();
        wanted.sort_unstable();
        if wanted.windows(2).any(|pair| pair[0] == pair[1]) {
            return None;
        }
        let matches = |index: &&IndexMeta| {
            let mut have = index.columns.clone();
            have.sort_unstable();
            index.unique && have == wanted
        };
        self.primary_key().filter(matches).or_else(|| self.indexes.iter().find(matches))
    }

    pub(crate) fn encode(&self) -> String {
        let mut out = format!("v1\t{}\t{}\n", self.oid, escape(&self.name));
        if let Some(sequence) = &self.sequence {
            out.push_str(&sequence.encode());
        }
        for column in &self.columns {
            out.push_str(&format!(
                "c\t{}\t{}\t{}\t{}",
                escape(&column.name),
                encode_type(&column.ty),
                u8::from(column.nullable),
                column
                    .default
                    .as_deref()
                    .map_or_else(|| "-".to_string(), |text| format!("={}", escape(text)))
            ));
            // A sixth field only for identity columns: entries written before it decode.
            if let Some(identity) = column.identity {
                out.push_str(&format!("\t{}", identity.code()));
            }
            out.push('\n');
        }
        for index in &self.indexes {
            let columns: Vec<String> = index.columns.iter().map(usize::to_string).collect();
            out.push_str(&format!(
                "i\t{}\t{}\t{}\t{}\t{}\t{}{}\n",
                escape(&index.name),
                index.oid,
                columns.join(","),
                u8::from(index.unique),
                u8::from(index.primary),
                match &index.kind {
                    IndexKind::Clustered => "clustered".to_string(),
                    IndexKind::Secondary => "secondary".to_string(),
                    IndexKind::Hnsw(options) => options.encode(),
                },
                // An eighth field only for UNIQUE constraints (a primary key is one by its
                // flag): entries written before it decode.
                if index.constraint && !index.primary { "\tu" } else { "" }
            ));
            // A partial index's predicate on its own line after the index's.
            if let Some(predicate) = &index.predicate {
                out.push_str(&format!(
                    "p\t{}\t{}\t{}",
                    escape(&predicate.expression),
                    escape(&predicate.definition),
                    escape(&predicate.pretty)
                ));
                for conjunct in &predicate.conjuncts {
                    out.push_str(&format!("\t{}", escape(conjunct)));
                }
                out.push('\n');
            }
        }
        if let Some(layout) = &self.layout {
            let slots: Vec<String> = layout.slots.iter().map(usize::to_string).collect();
            let mut missing = Vec::new();
            tierdb_engine::encode_row(&layout.missing, &mut missing);
            let hex: String = missing.iter().map(|byte| format!("{byte:02x}")).collect();
            out.push_str(&format!("l\t{}\t{hex}\n", slots.join(",")));
        }
        for check in &self.checks {
            out.push_str(&format!(
                "k\t{}\t{}\t{}\t{}\t{}\n",
                escape(&check.name),
                check.oid,
                escape(&check.expression),
                escape(&check.definition),
                escape(&check.pretty)
            ));
        }
        for key in &self.foreign_keys {
            let positions = |columns: &[usize]| {
                columns.iter().map(usize::to_string).collect::<Vec<String>>().join(",")
            };
            out.push_str(&format!(
                "f\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                escape(&key.name),
                key.oid,
                positions(&key.columns),
                escape(&key.referenced_table),
                positions(&key.referenced_columns),
                key.on_update.code(),
                key.on_delete.code(),
                if key.match_full { "f" } else { "s" }
            ));
        }
        if let Some(view) = &self.view {
            out.push_str(&format!("w\t{}\n", escape(&view.query)));
            for dependency in &view.depends_on {
                out.push_str(&format!("u\t{}", escape(&dependency.relation)));
                for column in &dependency.columns {
                    out.push_str(&format!("\t{}", escape(column)));
                }
                out.push('\n');
            }
        }
        out
    }

    pub(crate) fn decode(text: &str) -> Result<TableMeta> {
        let bad =
            |detail: &str| SqlError::new("XX001", format!("corrupt sql catalog entry: {detail}"));
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().ok_or_else(|| bad("empty"))?.split('\t').collect();
        if header.len() != 3 || header[0] != "v1" {
            return Err(bad("header"));
        }
        let mut meta = TableMeta {
            oid: header[1].parse().map_err(|_| bad("oid"))?,
            name: unescape(header[2]),
            columns: Vec::new(),
            indexes: Vec::new(),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            layout: None,
            view: None,
            sequence: None,
        };
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.first().copied() {
                Some("c") if fields.len() == 5 || fields.len() == 6 => {
                    meta.columns.push(ColumnMeta {
                        name: unescape(fields[1]),
                        ty: decode_type(fields[2]).ok_or_else(|| bad("column type"))?,
                        nullable: fields[3] == "1",
                        default: fields[4].strip_prefix('=').map(unescape),
                        identity: match fields.get(5).copied() {
                            None => None,
                            Some("a") => Some(Identity::Always),
                            Some("d") => Some(Identity::ByDefault),
                            Some(_) => return Err(bad("column identity")),
                        },
                    });
                }
                Some("i") if fields.len() == 7 || fields.len() == 8 => {
                    let columns = fields[3]
                        .split(',')
                        .map(|column| column.parse::<usize>().map_err(|_| bad("index column")))
                        .collect::<Result<Vec<usize>>>()?;
                    if columns.iter().any(|&column| column >= meta.columns.len()) {
                        return Err(bad("index column out of range"));
                    }
                    meta.indexes.push(IndexMeta {
                        name: unescape(fields[1]),
                        oid: fields[2].parse().map_err(|_| bad("index oid"))?,
                        columns,
                        unique: fields[4] == "1",
                        primary: fields[5] == "1",
                        constraint: match fields.get(7).copied() {
                            None => fields[5] == "1",
                            Some("u") => true,
                            Some(_) => return Err(bad("index constraint")),
                        },
                        kind: match fields[6] {
                            "clustered" => IndexKind::Clustered,
                            "secondary" => IndexKind::Secondary,
                            other => IndexKind::Hnsw(
                                HnswOptions::decode(other).ok_or_else(|| bad("index kind"))?,
                            ),
                        },
                        predicate: None,
                    });
                }
                Some("p") if fields.len() >= 5 => {
                    let index = meta.indexes.last_mut().ok_or_else(|| bad("predicate"))?;
                    index.predicate = Some(PredicateMeta {
                        expression: unescape(fields[1]),
                        definition: unescape(fields[2]),
                        pretty: unescape(fields[3]),
                        conjuncts: fields[4..].iter().map(|field| unescape(field)).collect(),
                    });
                }
                Some("k") if fields.len() == 6 => meta.checks.push(CheckMeta {
                    name: unescape(fields[1]),
                    oid: fields[2].parse().map_err(|_| bad("check oid"))?,
                    expression: unescape(fields[3]),
                    definition: unescape(fields[4]),
                    pretty: unescape(fields[5]),
                }),
                Some("f") if fields.len() == 9 => {
                    let positions = |text: &str| {
                        text.split(',')
                            .map(|column| column.parse::<usize>().map_err(|_| bad("key column")))
                            .collect::<Result<Vec<usize>>>()
                    };
                    let action = |code: &str| {
                        ReferentialAction::from_code(code).ok_or_else(|| bad("key action"))
                    };
                    let columns = positions(fields[3])?;
                    if columns.iter().any(|&column| column >= meta.columns.len()) {
                        return Err(bad("foreign key column out of range"));
                    }
                    meta.foreign_keys.push(ForeignKeyMeta {
                        name: unescape(fields[1]),
                        oid: fields[2].parse().map_err(|_| bad("foreign key oid"))?,
                        columns,
                        referenced_table: unescape(fields[4]),
                        referenced_columns: positions(fields[5])?,
                        on_update: action(fields[6])?,
                        on_delete: action(fields[7])?,
                        match_full: match fields[8] {
                            "s" => false,
                            "f" => true,
                            _ => return Err(bad("foreign key match")),
                        },
                    });
                }
                Some("w" | "u") if fields.len() >= 2 => {
                    decode_view_line(&mut meta, &fields).ok_or_else(|| bad("view"))?
                }
                Some("q") => {
                    meta.sequence =
                        Some(SequenceMeta::decode(&fields).ok_or_else(|| bad("sequence"))?);
                }
                Some("l") if fields.len() == 3 => {
                    meta.layout =
                        Some(decode_layout(fields[1], fields[2]).ok_or_else(|| bad("layout"))?);
                }
                _ => return Err(bad("line")),
            }
        }
        if meta.layout.as_ref().is_some_and(|layout| {
            layout.slots.len() != meta.columns.len() || layout.missing.len() != meta.columns.len()
        }) {
            return Err(bad("layout of another column count"));
        }
        Ok(meta)
    }
}

/// The `l` line's fields: slots `0,3` and the hex of the missing values' row encoding.
fn decode_layout(slots: &str, hex: &str) -> Option<ColumnLayout> {
    let slots = match slots {
        "" => Vec::new(),
        listed => {
            listed.split(',').map(|slot| slot.parse().ok()).collect::<Option<Vec<usize>>>()?
        }
    };
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|start| u8::from_str_radix(&hex[start..start + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let missing = tierdb_engine::decode_row(&bytes).ok()?;
    Some(ColumnLayout { slots, missing })
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n")
}

pub(crate) fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn encode_type(ty: &SqlType) -> String {
    match ty {
        SqlType::Numeric { precision, scale } => {
            format!("numeric:{}:{}", precision.map_or(-1, i64::from), scale.map_or(-1, i64::from))
        }
        SqlType::Varchar(length) => format!("varchar:{}", length.map_or(-1, i64::from)),
        SqlType::Char(length) => format!("char:{length}"),
        SqlType::Vector(dimensions) => format!("vector:{}", dimensions.map_or(-1, i64::from)),
        SqlType::HalfVec(dimensions) => format!("halfvec:{}", dimensions.map_or(-1, i64::from)),
        SqlType::SparseVec(dimensions) => {
            format!("sparsevec:{}", dimensions.map_or(-1, i64::from))
        }
        // The length is the type's (bit(n) holds exactly n bits); entries written before
        // as the bare OID decode without it.
        SqlType::Bit(length) => format!("bit:{}", length.map_or(-1, i64::from)),
        SqlType::VarBit(length) => format!("varbit:{}", length.map_or(-1, i64::from)),
        // The element's own encoding after the prefix (it may hold colons itself).
        SqlType::Array(element) => format!("array:{}", encode_type(element)),
        other => other.oid().to_string(),
    }
}

pub(crate) fn decode_type(text: &str) -> Option<SqlType> {
    if let Some(element) = text.strip_prefix("array:") {
        return crate::types::array_of(&decode_type(element)?).ok();
    }
    let parts: Vec<&str> = text.split(':').collect();
    let optional = |part: &str| -> Option<Option<u32>> {
        let value: i64 = part.parse().ok()?;
        Some(if value < 0 { None } else { Some(u32::try_from(value).ok()?) })
    };
    match parts.as_slice() {
        ["numeric", precision, scale] => {
            Some(SqlType::Numeric { precision: optional(precision)?, scale: optional(scale)? })
        }
        ["varchar", length] => Some(SqlType::Varchar(optional(length)?)),
        ["char", length] => Some(SqlType::Char(length.parse().ok()?)),
        ["vector", dimensions] => Some(SqlType::Vector(optional(dimensions)?)),
        ["halfvec", dimensions] => Some(SqlType::HalfVec(optional(dimensions)?)),
        ["sparsevec", dimensions] => Some(SqlType::SparseVec(optional(dimensions)?)),
        ["bit", length] => Some(SqlType::Bit(optional(length)?)),
        ["varbit", length] => Some(SqlType::VarBit(optional(length)?)),
        [oid] => SqlType::from_oid(oid.parse().ok()?),
        _ => None,
    }
}

/// A view's `w` (its query) or `u` (a dependency, after the `w`) line; None if malformed.
fn decode_view_line(meta: &mut TableMeta, fields: &[&str]) -> Option<()> {
    match fields[0] {
        "w" if fields.len() == 2 => {
            meta.view = Some(ViewMeta { query: unescape(fields[1]), depends_on: Vec::new() });
        }
        "u" => meta.view.as_mut()?.depends_on.push(ViewDependency {
            relation: unescape(fields[1]),
            columns: fields[2..].iter().map(|column| unescape(column)).collect(),
        }),
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod type_encoding_tests {
    use super::*;

    #[test]
    fn bit_lengths_survive_the_catalog() {
        for ty in [SqlType::Bit(Some(8)), SqlType::Bit(None), SqlType::VarBit(Some(70))] {
            assert_eq!(decode_type(&encode_type(&ty)), Some(ty.clone()), "{ty:?}");
        }
        // Entries written before the length was stored: the bare OID.
        assert_eq!(decode_type("1560"), Some(SqlType::Bit(None)));
        assert_eq!(decode_type("1562"), Some(SqlType::VarBit(None)));
    }
}
