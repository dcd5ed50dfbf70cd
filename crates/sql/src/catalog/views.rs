//! Views in the catalog (docs/design/018): a view is a `TableMeta` with a `ViewMeta` and no
//! engine table. Its definition row lives in `tierdb_sql_tables` like a table's and is written
//! and deleted by the statement's transaction, so CREATE, CREATE OR REPLACE and DROP VIEW
//! commit or roll back with it (`reconcile` brings the in-memory definitions back) and are
//! recovered after a crash exactly as tables' definitions are.

use super::*;

impl Catalog {
    /// Creates view `meta` (or replaces the view of its name, `replace`) in `transaction`:
    /// hidden from other sessions until the transaction commits, as a new table is. The
    /// caller holds the DDL lock and the claim on the name, and checked the replacement.
    pub fn create_view(
        &self,
        transaction: &mut Transaction,
        session: u64,
        mut meta: TableMeta,
        replace: bool,
    ) -> Result<()> {
        assert!(meta.view.is_some(), "create_view of a view");
        match self.table(&meta.name) {
            Some(existing) if replace && existing.view.is_some() => meta.oid = existing.oid,
            Some(_) => {
                return Err(SqlError::new(
                    "42P07",
                    format!("relation \"{}\" already exists", meta.name),
                ))
            }
            None => {
                meta.oid = self.next_oid()?;
                self.uncommitted.write().insert(meta.name.clone(), session);
            }
        }
        self.store_meta_in(transaction, &meta)?;
        self.publish(meta);
        Ok(())
    }

    /// Drops view `name` in `transaction`: its definition row and privileges go with the
    /// transaction (a rollback brings both back through `reconcile`). The caller holds the
    /// DDL lock and the claim on the name.
    pub fn drop_view(&self, transaction: &mut Transaction, name: &str) -> Result<()> {
        let key = [Value::Text(name.to_string())];
        transaction.delete(TABLES_TABLE, &key)?;
        if self.grants.read().contains_key(name) {
            transaction.delete(GRANTS_TABLE, &key)?;
            self.grants.write().remove(name);
        }
        self.tables.write().remove(name);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// After a rollback restored view `name`'s definition row: its privileges row as
    /// `transaction` sees it comes back too.
    pub(super) fn restore_view_acl(&self, transaction: &mut Transaction, name: &str) -> Result<()> {
        let row = transaction.get(GRANTS_TABLE, &[Value::Text(name.to_string())])?;
        if let Some(Value::Text(text)) = row.as_ref().and_then(|row| row.get(1)) {
            self.grants.write().insert(name.to_string(), TableAcl::decode(name, text)?);
        }
        Ok(())
    }

    /// The views whose queries name `relation`, in name order.
    pub fn dependent_views(&self, relation: &str) -> Vec<Arc<TableMeta>> {
        self.tables()
            .into_iter()
            .filter(|table| {
                table.view.as_ref().is_some_and(|view| {
                    view.depends_on.iter().any(|dependency| dependency.relation == relation)
                })
            })
            .collect()
    }

    /// `dependent_views` followed transitively (views on views), each once, dependents of a
    /// view after it: the order CASCADE drops them in is the reverse.
    pub fn dependent_views_transitively(&self, relations: &[String]) -> Vec<Arc<TableMeta>> {
        let mut found: Vec<Arc<TableMeta>> = Vec::new();
        let mut pending: Vec<String> = relations.to_vec();
        while let Some(relation) = pending.pop() {
            for view in self.dependent_views(&relation) {
                if relations.contains(&view.name)
                    || found.iter().any(|known| known.name == view.name)
                {
                    continue;
                }
                pending.push(view.name.clone());
                found.push(view);
            }
        }
        found
    }
}

/// Whether `view` reads column `column` of `relation` (as decided at CREATE VIEW).
pub fn view_uses_column(view: &ViewMeta, relation: &str, column: &str) -> bool {
    view.depends_on.iter().any(|dependency| {
        dependency.relation == relation && dependency.columns.iter().any(|name| name == column)
    })
}

/// The columns of `columns` that the query `text` may read: those it names as a word, all
/// if it has a `*` (which PostgreSQL expands to every column at CREATE VIEW). A word of the
/// same spelling elsewhere (an alias, another table's column) counts too: DDL is refused
/// where PostgreSQL's column-level dependency would allow it, never allowed where it would
/// refuse.
pub fn columns_read(text: &str, columns: &[ColumnMeta]) -> Vec<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let all = || columns.iter().map(|column| column.name.clone()).collect();
    let Ok(tokens) = Tokenizer::new(&dialect, text).tokenize() else { return all() };
    if tokens.iter().any(|token| matches!(token, Token::Mul)) {
        return all();
    }
    let words: Vec<String> = tokens
        .iter()
        .filter_map(|token| match token {
            Token::Word(word) if word.quote_style.is_none() => Some(word.value.to_lowercase()),
            Token::Word(word) => Some(word.value.clone()),
            _ => None,
        })
        .collect();
    columns
        .iter()
        .filter(|column| words.contains(&column.name))
        .map(|column| column.name.clone())
        .collect()
}
