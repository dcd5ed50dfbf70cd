//! `CREATE INDEX ... USING hnsw (column opclass) [WITH (m = .., ef_construction = ..)]` and
//! `CREATE INDEX ... USING ivfflat (column opclass) [WITH (lists = ..)]`: pgvector's HNSW and
//! ivfflat indexes, with their defaults, bounds and error messages (checked against pgvector
//! 0.8.2), built and maintained by the engine (docs/design/014-vector-indexes.md).

use tierdb_vector::hnsw::{
    bit_dimensions_max, dimensions_max, Metric, BIT_DIMENSIONS_MAX, EF_CONSTRUCTION_DEFAULT,
    EF_CONSTRUCTION_MAX, EF_CONSTRUCTION_MIN, M_DEFAULT, M_MAX, M_MIN,
};

use tierdb_vector::ivfflat::{LISTS_MAX, LISTS_MIN};

use super::*;
use crate::catalog::HnswOptions;
use crate::output::CommandTag;
use crate::types::SqlType;

/// pgvector's largest dimension count of an HNSW or ivfflat index on `vector`.
const VECTOR_INDEX_DIMENSIONS_MAX: u32 = 2000;
/// pgvector's limit for an indexed halfvec column.
const HALFVEC_INDEX_DIMENSIONS_MAX: u32 = 4000;

/// pgvector's vector access method the statement asks for: `hnsw` or `ivfflat`.
pub(crate) fn vector_access_method(create: &ast::CreateIndex) -> Option<&'static str> {
    match &create.using {
        Some(ast::IndexType::Custom(name)) => match ident(name).as_str() {
            "hnsw" => Some("hnsw"),
            "ivfflat" => Some("ivfflat"),
            _ => None,
        },
        _ => None,
    }
}

fn invalid(message: String) -> SqlError {
    SqlError::new("22023", message)
}

/// The metric of an operator class on a vector column, with pgvector's errors. ivfflat's
/// default class is vector_l2_ops (on a vector column); HNSW has none.
fn metric_of(
    method: &str,
    class: Option<&ast::ObjectName>,
    column_type: &SqlType,
) -> Result<Metric> {
    let name = match class {
        Some(class) => object_name(class)?,
        None if method == "ivfflat" && matches!(column_type, SqlType::Vector(_)) => {
            "vector_l2_ops".to_string()
        }
        None => {
            return Err(SqlError::new(
                "42704",
                format!(
                    "data type {} has no default operator class for access method \"{method}\"",
                    column_type.message_name()
                ),
            ))
        }
    };
    let ivfflat = method == "ivfflat";
    let metric = match name.as_str() {
        "vector_l2_ops" => Metric::L2,
        "vector_ip_ops" => Metric::InnerProduct,
        "vector_cosine_ops" => Metric::Cosine,
        "vector_l1_ops" if !ivfflat => Metric::L1,
        "halfvec_l2_ops" => Metric::HalfL2,
        "halfvec_ip_ops" => Metric::HalfInnerProduct,
        "halfvec_cosine_ops" => Metric::HalfCosine,
        "halfvec_l1_ops" if !ivfflat => Metric::HalfL1,
        "bit_hamming_ops" => Metric::BitHamming,
        "bit_jaccard_ops" if !ivfflat => Metric::BitJaccard,
        "sparsevec_l2_ops" | "sparsevec_ip_ops" | "sparsevec_cosine_ops" | "sparsevec_l1_ops"
            if !ivfflat =>
        {
            return Err(SqlError::unsupported(format!(
                "hnsw operator class \"{name}\" is not supported"
            )))
        }
        _ => {
            return Err(SqlError::new(
                "42704",
                format!("operator class \"{name}\" does not exist for access method \"{method}\""),
            ))
        }
    };
    // pgvector's bit classes take bit varying too (binary coercible to bit); the build
    // then refuses it (`index_dimensions`).
    let accepted = if metric.is_bits() {
        matches!(column_type, SqlType::Bit(_) | SqlType::VarBit(_))
    } else if metric.is_half() {
        matches!(column_type, SqlType::HalfVec(_))
    } else {
        matches!(column_type, SqlType::Vector(_))
    };
    if !accepted {
        return Err(SqlError::new(
            "42804",
            format!(
                "operator class \"{name}\" does not accept data type {}",
                column_type.message_name()
            ),
        ));
    }
    Ok(metric)
}

/// One integer option of WITH, as PostgreSQL's reloptions parse it (a fractional value is
/// rounded), within `bounds`.
fn integer_option(name: &str, value: &ast::Expr, bounds: (usize, usize)) -> Result<usize> {
    let text = match value {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::Number(number, _) => number.clone(),
            ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let parsed = text.trim().parse::<f64>().ok().filter(|value| value.is_finite());
    let Some(parsed) = parsed.map(f64::round_ties_even) else {
        return Err(invalid(format!("invalid value for integer option \"{name}\": {text}")));
    };
    let (low, high) = bounds;
    let exact = |candidate: usize| f64::from(u32::try_from(candidate).expect("small bounds"));
    let in_bounds = (low..=high).find(|&candidate| exact(candidate) == parsed);
    in_bounds.ok_or_else(|| invalid(format!("value {text} out of bounds for option \"{name}\"")))
}

/// `m` and `ef_construction` (HNSW) or `lists` (ivfflat) from WITH (None: not given).
fn index_options(method: &str, with: &[ast::Expr]) -> Result<[Option<usize>; 3]> {
    let (mut m, mut ef_construction, mut lists) = (None, None, None);
    for option in with {
        let ast::Expr::BinaryOp { left, op: ast::BinaryOperator::Eq, right } = option else {
            return Err(invalid(format!("invalid index option {option}")));
        };
        let name = match left.as_ref() {
            ast::Expr::Identifier(name) => ident(name),
            other => other.to_string(),
        };
        let (slot, bounds) = match (method, name.as_str()) {
            ("hnsw", "m") => (&mut m, (M_MIN, M_MAX)),
            ("hnsw", "ef_construction") => {
                (&mut ef_construction, (EF_CONSTRUCTION_MIN, EF_CONSTRUCTION_MAX))
            }
            ("ivfflat", "lists") => (&mut lists, (LISTS_MIN, LISTS_MAX)),
            _ => return Err(invalid(format!("unrecognized parameter \"{name}\""))),
        };
        if slot.is_some() {
            return Err(invalid(format!("parameter \"{name}\" specified more than once")));
        }
        *slot = Some(integer_option(&name, right, bounds)?);
    }
    Ok([m, ef_construction, lists])
}

/// What CREATE INDEX ... USING hnsw | ivfflat refuses before looking at the table:
/// UNIQUE, several columns and INCLUDE (0A000, PostgreSQL's words for an access method
/// without them). A WHERE clause makes a partial index (`partial_index.rs`).
fn refuse_vector_index_clauses(method: &str, create: &ast::CreateIndex) -> Result<()> {
    if create.unique {
        return Err(SqlError::unsupported(format!(
            "access method \"{method}\" does not support unique indexes"
        )));
    }
    if create.columns.len() != 1 {
        return Err(SqlError::unsupported(format!(
            "access method \"{method}\" does not support multicolumn indexes"
        )));
    }
    if !create.include.is_empty() {
        return Err(SqlError::unsupported(format!(
            "access method \"{method}\" does not support included columns"
        )));
    }
    Ok(())
}

/// The bits of an indexed bit(n) column, with pgvector's errors, and HNSW's own limit at
/// `m` (a node's words must fit a page).
fn bit_index_dimensions(method: &str, column_type: &SqlType, m: usize) -> Result<usize> {
    let bits = match column_type {
        SqlType::Bit(Some(bits)) => usize::try_from(*bits).expect("a typmod fits usize"),
        SqlType::Bit(None) => return Err(invalid("column does not have dimensions".into())),
        _ => return Err(SqlError::unsupported(format!("type not supported for {method} index"))),
    };
    if bits > BIT_DIMENSIONS_MAX {
        return Err(SqlError::new(
            "54000",
            format!(
                "column cannot have more than {BIT_DIMENSIONS_MAX} dimensions for {method} index"
            ),
        ));
    }
    if method == "hnsw" && bits > bit_dimensions_max(m) {
        return Err(SqlError::unsupported(format!(
            "hnsw indexes on bit columns of more than {} bits at m = {m} are not supported",
            bit_dimensions_max(m)
        )));
    }
    Ok(bits)
}

/// The dimensions of an indexed vector or halfvec column, with pgvector's errors, and
/// HNSW's own limit at `m` (a node must fit a page).
fn index_dimensions(method: &str, column_type: &SqlType, m: usize) -> Result<usize> {
    let (dimensions, maximum) = match column_type {
        SqlType::Vector(Some(dimensions)) => (*dimensions, VECTOR_INDEX_DIMENSIONS_MAX),
        SqlType::HalfVec(Some(dimensions)) => (*dimensions, HALFVEC_INDEX_DIMENSIONS_MAX),
        _ => return Err(invalid("column does not have dimensions".into())),
    };
    if dimensions > maximum {
        return Err(SqlError::new(
            "54000",
            format!("column cannot have more than {maximum} dimensions for {method} index"),
        ));
    }
    if method == "ivfflat" && dimensions > VECTOR_INDEX_DIMENSIONS_MAX {
        // An ivfflat entry holds halves widened to f32 (design 014) on one list page, which
        // fits vector's limit only (HNSW puts wide vectors on vector pages of their own).
        return Err(SqlError::unsupported(format!(
            "{method} indexes on halfvec columns of more than {VECTOR_INDEX_DIMENSIONS_MAX} \
             dimensions are not supported"
        )));
    }
    let dimensions = usize::try_from(dimensions).expect("at most 2000");
    if method == "hnsw" && dimensions > dimensions_max(m) {
        return Err(SqlError::unsupported(format!(
            "hnsw indexes on more than {} dimensions at m = {m} are not supported",
            dimensions_max(m)
        )));
    }
    Ok(dimensions)
}

impl Session {
    /// CREATE INDEX ... USING `method` (hnsw or ivfflat).
    pub(crate) fn create_vector_index(
        &mut self,
        create: &ast::CreateIndex,
        method: &'static str,
    ) -> Result<Output> {
        refuse_vector_index_clauses(method, create)?;
        let table_name = self.namespace().existing_table(&create.table_name)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        let table = self
            .catalog
            .table(&table_name)
            .ok_or_else(|| SqlError::undefined_table(&table_name))?;
        let column = &create.columns[0];
        let ast::Expr::Identifier(column_name) = &column.column.expr else {
            return Err(SqlError::unsupported(format!(
                "{method} index on an expression is not supported"
            )));
        };
        let column_name = ident(column_name);
        let position = table.column_index(&column_name).ok_or_else(|| {
            SqlError::new("42703", format!("column \"{column_name}\" does not exist"))
        })?;
        let column_type = &table.columns[position].ty;
        let metric = metric_of(method, column.operator_class.as_ref(), column_type)?;
        let [m, ef_construction, lists] = index_options(method, &create.with)?;
        let (m_value, ef_value) =
            (m.unwrap_or(M_DEFAULT), ef_construction.unwrap_or(EF_CONSTRUCTION_DEFAULT));
        if ef_value < 2 * m_value {
            return Err(invalid("ef_construction must be greater than or equal to 2 * m".into()));
        }
        let dimensions = if metric.is_bits() {
            bit_index_dimensions(method, column_type, m_value)?
        } else {
            index_dimensions(method, column_type, m_value)?
        };
        let name = match &create.name {
            Some(name) => object_name(name)?,
            None => format!("{table_name}_{column_name}_idx"),
        };
        let exists =
            self.catalog.tables().iter().any(|t| t.indexes.iter().any(|index| index.name == name));
        if create.if_not_exists && exists {
            return Ok(Output::command(CommandTag::CreateIndex));
        }
        let predicate = match &create.predicate {
            Some(expr) => {
                Some(super::partial_index::new_predicate(&catalog, self.namespace(), &table, expr)?)
            }
            None => None,
        };
        let ivfflat = method == "ivfflat";
        let options = HnswOptions { metric, m, ef_construction, ivfflat, lists };
        let index = IndexMeta {
            name,
            oid: 0,
            columns: vec![position],
            unique: false,
            primary: false,
            constraint: false,
            kind: IndexKind::Hnsw(options),
            predicate,
        };
        let parameters = tierdb_engine::VectorIndexParameters {
            dimensions,
            metric,
            m: m_value,
            ef_construction: ef_value,
        };
        // The engine's build (and its sample, and the NOTICE's count) and every write after
        // it filter rows by a partial index's predicate; registered once the name is known
        // to be free (registering replaces the predicate of an index of that name).
        self.catalog.refuse_taken_index_name(&index.name)?;
        super::partial_index::register(&catalog, &table, &index);
        let partial = index.predicate.is_some();
        let name = index.name.clone();
        let created = self.build_vector_index(&table_name, index, parameters, lists);
        if created.is_err() && partial {
            self.catalog.engine().set_index_predicate(&name, None);
        }
        created?;
        Ok(Output::command(CommandTag::CreateIndex))
    }

    /// The NOTICE of an ivfflat build with little data, then the build.
    fn build_vector_index(
        &mut self,
        table_name: &str,
        index: IndexMeta,
        parameters: tierdb_engine::VectorIndexParameters,
        lists: Option<usize>,
    ) -> Result<()> {
        if matches!(index.kind, IndexKind::Hnsw(options) if options.ivfflat) {
            self.warn_little_data(table_name, &index.name, index.columns[0], lists)?;
        }
        let memory_bytes = self.index_build_options().memory_bytes;
        Arc::clone(&self.catalog).create_vector_index(
            self.ddl_transaction(),
            table_name,
            index,
            parameters,
            memory_bytes,
        )
    }

    /// pgvector's NOTICE when an ivfflat build samples fewer rows than it has lists.
    fn warn_little_data(
        &mut self,
        table: &str,
        index: &str,
        column: usize,
        lists: Option<usize>,
    ) -> Result<()> {
        let lists = lists.unwrap_or(tierdb_vector::ivfflat::LISTS_DEFAULT);
        if self.catalog.engine().vector_rows_up_to(table, index, column, lists)? < lists {
            self.warn(SqlError::new("00000", "ivfflat index created with little data"));
        }
        Ok(())
    }
}
