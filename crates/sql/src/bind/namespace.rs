//! Schema-qualified names, resolved as PostgreSQL resolves them against the schemas tierdb
//! has: `public` (every user table), `pg_catalog` (the system views) and
//! `information_schema` (its views). tierdb has no other schema: CREATE SCHEMA is refused
//! with 0A000, and a name qualified with any other schema fails as PostgreSQL fails for a
//! schema that does not exist, never resolving to a table of another schema.
//!
//! | name form            | resolves to                                                   |
//! |----------------------|---------------------------------------------------------------|
//! | `t`                  | a `pg_catalog` view, else `public.t` if public is on the path  |
//! | `public.t`           | the user table `t`                                             |
//! | `pg_catalog.v`       | the system view `v` if it is one of pg_catalog's               |
//! | `information_schema.v` | the view `v` if it is one of information_schema's            |
//! | `db.schema.t`        | as `schema.t` when `db` is the session's database, else 0A000  |
//!
//! PostgreSQL's wording: a relation in a schema that does not exist is 42P01 `relation
//! "s.t" does not exist` in queries and DML, and 3F000 `schema "s" does not exist` in DDL.

use sqlparser::ast;

use crate::catalog::{looks_temporary, TEMP_SCHEMA_ALIAS};
use crate::error::{Result, SqlError};
use crate::parse::names::ident;

pub const SCHEMA_PUBLIC: &str = "public";
pub const SCHEMA_CATALOG: &str = "pg_catalog";
pub const SCHEMA_INFORMATION: &str = "information_schema";
/// The schemas that exist, in pg_namespace's order.
pub const SCHEMAS: [&str; 3] = [SCHEMA_CATALOG, SCHEMA_PUBLIC, SCHEMA_INFORMATION];

/// The views of information_schema; every other system view is pg_catalog's.
const INFORMATION_VIEWS: [&str; 9] = [
    "tables",
    "sequences",
    "views",
    "columns",
    "schemata",
    "table_constraints",
    "check_constraints",
    "key_column_usage",
    "referential_constraints",
];

/// The schema a system view lives in.
pub fn view_schema(view: &str) -> &'static str {
    if INFORMATION_VIEWS.contains(&view) {
        SCHEMA_INFORMATION
    } else {
        SCHEMA_CATALOG
    }
}

/// What a session's names resolve against: its database and whether `public` is on its
/// search_path (pg_catalog always is, implicitly first, as in PostgreSQL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespace {
    pub database: String,
    pub public_on_path: bool,
    /// Tables the session dropped in its open transaction block: gone for it (42P01)
    /// though the drop happens at COMMIT.
    pub hidden: Vec<String>,
    /// restrict_nonsystem_relation_kind names `view`: a view named in a query is 0A000
    /// (PostgreSQL's rewriter refuses to expand one; pg_dump sets it for its session).
    pub views_restricted: bool,
    /// The session's temp schema (`pg_temp_N`) and its temp tables' names there (design
    /// 019): searched first for an unqualified name, as PostgreSQL searches pg_temp.
    pub temp_schema: String,
    pub temp_tables: Vec<String>,
}

/// The schemas of `search_path` that exist, in its order (current_schemas): with
/// `implicit`, pg_catalog first when the path does not name it (PostgreSQL searches it
/// first then).
pub fn search_path_schemas(search_path: &str, implicit: bool) -> Vec<String> {
    let named: Vec<String> = search_path
        .split(',')
        .map(|part| part.trim().trim_matches('"').to_string())
        .filter(|name| SCHEMAS.contains(&name.as_str()))
        .collect();
    let mut schemas = Vec::with_capacity(named.len() + 1);
    if implicit && !named.iter().any(|name| name == SCHEMA_CATALOG) {
        schemas.push(SCHEMA_CATALOG.to_string());
    }
    schemas.extend(named);
    schemas
}

/// A name split into its optional schema and its object name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualifiedName {
    pub schema: Option<String>,
    pub name: String,
}

impl QualifiedName {
    fn into_table(self, hidden: &[String]) -> Result<Relation> {
        let display = self.display();
        if hidden.contains(&self.name) || looks_temporary(&self.name) {
            return Err(SqlError::undefined_table(&display));
        }
        Ok(Relation::Table { name: self.name, display })
    }

    /// `schema.name` as PostgreSQL prints it in errors, or just `name`.
    pub fn display(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A resolved relation: a system view or a user table (by its name in `public`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relation {
    View(String),
    /// A user table: its name, and the name as written for a 42P01 (`public.t`).
    Table {
        name: String,
        display: String,
    },
}

impl Namespace {
    /// The namespace of a session with this search_path value (PostgreSQL's list syntax:
    /// comma-separated, optionally quoted; schemas that do not exist are skipped).
    pub fn new(database: &str, search_path: &str) -> Namespace {
        let public_on_path = search_path
            .split(',')
            .map(|part| part.trim().trim_matches('"'))
            .any(|schema| schema == SCHEMA_PUBLIC);
        Namespace {
            database: database.to_string(),
            public_on_path,
            hidden: Vec::new(),
            views_restricted: false,
            temp_schema: String::new(),
            temp_tables: Vec::new(),
        }
    }

    /// Splits `name` into schema and object name: 0A000 for another database, 42601 for
    /// more than three parts.
    pub fn split(&self, name: &ast::ObjectName) -> Result<QualifiedName> {
        let mut parts = Vec::with_capacity(name.0.len());
        for part in &name.0 {
            match part {
                ast::ObjectNamePart::Identifier(part) => parts.push(ident(part)),
                _ => return Err(SqlError::syntax(format!("invalid name {name}"))),
            }
        }
        match parts.as_slice() {
            [object] => Ok(QualifiedName { schema: None, name: object.clone() }),
            [schema, object] => {
                Ok(QualifiedName { schema: Some(schema.clone()), name: object.clone() })
            }
            [database, schema, object] => {
                if *database != self.database {
                    return Err(SqlError::unsupported(format!(
                        "cross-database references are not implemented: \"{}\"",
                        parts.join(".")
                    )));
                }
                Ok(QualifiedName { schema: Some(schema.clone()), name: object.clone() })
            }
            _ => Err(SqlError::syntax(format!(
                "improper qualified name (too many dotted names): {}",
                parts.join(".")
            ))),
        }
    }

    /// Resolves a relation read or written by a query or DML (FROM, INSERT INTO, UPDATE,
    /// DELETE FROM, COPY): 42P01 when nothing by that name is visible.
    pub fn relation(&self, name: &ast::ObjectName) -> Result<Relation> {
        let qualified = self.split(name)?;
        if let Some(table) = self.temp_table(&qualified)? {
            let display = qualified.display();
            return Ok(Relation::Table { name: table, display });
        }
        let missing = || SqlError::undefined_table(&qualified.display());
        let is_view = |schema: &str| {
            crate::system::view_columns(&qualified.name).is_some()
                && view_schema(&qualified.name) == schema
        };
        match qualified.schema.as_deref() {
            None if is_view(SCHEMA_CATALOG) => Ok(Relation::View(qualified.name)),
            None if self.public_on_path => qualified.into_table(&self.hidden),
            None => Err(missing()),
            Some(SCHEMA_PUBLIC) => qualified.into_table(&self.hidden),
            Some(schema @ (SCHEMA_CATALOG | SCHEMA_INFORMATION)) if is_view(schema) => {
                Ok(Relation::View(qualified.name))
            }
            Some(_) => Err(missing()),
        }
    }

    /// The user table an existing-object DDL statement names (DROP, ALTER, TRUNCATE,
    /// CREATE INDEX ON, GRANT): 3F000 for a schema that does not exist, 42P01 for a name in
    /// pg_catalog or information_schema (tierdb's views there are not tables).
    pub fn existing_table(&self, name: &ast::ObjectName) -> Result<String> {
        let qualified = self.split(name)?;
        if let Some(table) = self.temp_table(&qualified)? {
            return Ok(table);
        }
        if (self.hidden.contains(&qualified.name) || looks_temporary(&qualified.name))
            && self.is_public(&qualified)
        {
            return Err(SqlError::undefined_table(&qualified.display()));
        }
        match qualified.schema.as_deref() {
            None if self.public_on_path => Ok(qualified.name),
            Some(SCHEMA_PUBLIC) => Ok(qualified.name),
            None | Some(SCHEMA_CATALOG | SCHEMA_INFORMATION) => {
                Err(SqlError::undefined_table(&qualified.display()))
            }
            Some(schema) => Err(undefined_schema(schema)),
        }
    }

    /// Whether `qualified` names a table of public (explicitly or through the path).
    fn is_public(&self, qualified: &QualifiedName) -> bool {
        match qualified.schema.as_deref() {
            None => self.public_on_path,
            Some(schema) => schema == SCHEMA_PUBLIC,
        }
    }

    /// The name of a table or index to create: in public (the first schema on the path that
    /// exists and may hold tables). 3F000 for a schema that does not exist or an empty path,
    /// 42501 for pg_catalog, 0A000 for information_schema (PostgreSQL allows tables there).
    pub fn new_table(&self, name: &ast::ObjectName) -> Result<String> {
        let qualified = self.split(name)?;
        if looks_temporary(&qualified.name) {
            return Err(SqlError::unsupported(format!(
                "table names of the form pg_temp_N.name are not supported (\"{}\": tierdb names temporary tables so)",
                qualified.name
            )));
        }
        match qualified.schema.as_deref() {
            None if self.public_on_path => Ok(qualified.name),
            None => Err(SqlError::new("3F000", "no schema has been selected to create in")),
            Some(SCHEMA_PUBLIC) => Ok(qualified.name),
            Some(SCHEMA_CATALOG) => Err(SqlError::new(
                "42501",
                format!("permission denied to create \"{}\"", qualified.display()),
            )),
            Some(SCHEMA_INFORMATION) => Err(SqlError::unsupported(
                "tables in schema information_schema are not supported (tierdb keeps user tables in public)",
            )),
            Some(schema) => Err(undefined_schema(schema)),
        }
    }
}

impl Namespace {
    /// The catalog name of the session's temp table `qualified` names: unqualified (pg_temp
    /// is searched first) or qualified with pg_temp or the session's pg_temp_N. 42P01 for a
    /// name in a temp schema that is not a temp table of the session.
    fn temp_table(&self, qualified: &QualifiedName) -> Result<Option<String>> {
        let internal = || crate::catalog::temp_table_name_in(&self.temp_schema, &qualified.name);
        let listed = self.temp_tables.contains(&qualified.name);
        match qualified.schema.as_deref() {
            None if listed && !self.hidden.contains(&internal()) => Ok(Some(internal())),
            None => Ok(None),
            Some(schema) if self.is_temp_schema(schema) => {
                if listed && !self.hidden.contains(&internal()) {
                    return Ok(Some(internal()));
                }
                Err(SqlError::undefined_table(&qualified.display()))
            }
            Some(_) => Ok(None),
        }
    }

    /// Whether `schema` names a temp schema (the session's, by its alias or its name, or
    /// another session's: nothing there is visible).
    pub fn is_temp_schema(&self, schema: &str) -> bool {
        schema == TEMP_SCHEMA_ALIAS || schema.starts_with(crate::catalog::TEMP_SCHEMA_PREFIX)
    }

    /// The catalog name of a temp table to create (CREATE TEMP TABLE, or CREATE TABLE in
    /// pg_temp): in the session's temp schema. PostgreSQL's 42P16 for another schema.
    pub fn new_temp_table(&self, name: &ast::ObjectName) -> Result<String> {
        let qualified = self.split(name)?;
        match qualified.schema.as_deref() {
            None => {}
            Some(schema) if schema == TEMP_SCHEMA_ALIAS || schema == self.temp_schema => {}
            Some(schema) if SCHEMAS.contains(&schema) || self.is_temp_schema(schema) => {
                return Err(SqlError::new(
                    "42P16",
                    "cannot create temporary relation in non-temporary schema",
                ))
            }
            Some(schema) => return Err(undefined_schema(schema)),
        }
        Ok(crate::catalog::temp_table_name_in(&self.temp_schema, &qualified.name))
    }

    /// Whether CREATE TABLE `name` (without TEMP) makes a temp table: it names pg_temp.
    pub fn names_temp_schema(&self, name: &ast::ObjectName) -> Result<bool> {
        let qualified = self.split(name)?;
        Ok(qualified.schema.is_some_and(|schema| self.is_temp_schema(&schema)))
    }
}

/// The functions pgvector creates in the schema it is installed in (`public`, where
/// `CREATE EXTENSION vector` puts them); every other built-in function is pg_catalog's.
const EXTENSION_FUNCTIONS: [&str; 14] = [
    "l2_distance",
    "inner_product",
    "cosine_distance",
    "l1_distance",
    "vector_dims",
    "vector_norm",
    "l2_norm",
    "l2_normalize",
    "subvector",
    "binary_quantize",
    "hamming_distance",
    "jaccard_distance",
    "avg",
    "sum",
];

impl Namespace {
    /// The name of a called function: unqualified, or qualified with the schema it lives
    /// in (42883 elsewhere, 3F000 for a schema that does not exist).
    pub fn function(&self, name: &ast::ObjectName) -> Result<String> {
        let qualified = self.split(name)?;
        match qualified.schema.as_deref() {
            None | Some(SCHEMA_CATALOG) => Ok(qualified.name),
            Some(SCHEMA_PUBLIC) if EXTENSION_FUNCTIONS.contains(&qualified.name.as_str()) => {
                Ok(qualified.name)
            }
            Some(SCHEMA_PUBLIC | SCHEMA_INFORMATION) => Err(SqlError::new(
                "42883",
                format!("function {} does not exist", qualified.display()),
            )),
            Some(schema) => Err(undefined_schema(schema)),
        }
    }
}

/// 3F000, PostgreSQL's wording.
pub fn undefined_schema(schema: &str) -> SqlError {
    SqlError::new("3F000", format!("schema \"{schema}\" does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(parts: &[&str]) -> ast::ObjectName {
        ast::ObjectName(
            parts
                .iter()
                .map(|part| ast::ObjectNamePart::Identifier(ast::Ident::new(*part)))
                .collect(),
        )
    }

    fn table(display: &str) -> Relation {
        let name = display.rsplit('.').next().unwrap().to_string();
        Relation::Table { name, display: display.to_string() }
    }

    #[test]
    fn qualified_names_resolve_only_in_schemas_that_hold_them() {
        let namespace = Namespace::new("tierdb", "\"$user\", public");
        assert_eq!(namespace.relation(&name(&["t"])).unwrap(), table("t"));
        assert_eq!(namespace.relation(&name(&["public", "t"])).unwrap(), table("public.t"));
        assert_eq!(
            namespace.relation(&name(&["pg_class"])).unwrap(),
            Relation::View("pg_class".into())
        );
        assert_eq!(namespace.relation(&name(&["nosuch", "t"])).unwrap_err().sqlstate, "42P01");
        assert_eq!(namespace.relation(&name(&["pg_catalog", "t"])).unwrap_err().sqlstate, "42P01");
        // information_schema is not on the path: its views need the schema name.
        assert_eq!(namespace.relation(&name(&["tables"])).unwrap(), table("tables"));
        assert_eq!(
            namespace.relation(&name(&["information_schema", "tables"])).unwrap(),
            Relation::View("tables".into())
        );
        assert_eq!(
            namespace.relation(&name(&["tierdb", "public", "t"])).unwrap(),
            table("public.t")
        );
        assert_eq!(
            namespace.relation(&name(&["other", "public", "t"])).unwrap_err().sqlstate,
            "0A000"
        );
        assert_eq!(namespace.relation(&name(&["a", "b", "c", "d"])).unwrap_err().sqlstate, "42601");
        assert_eq!(
            namespace.existing_table(&name(&["nosuch", "t"])).unwrap_err().sqlstate,
            "3F000"
        );
        assert_eq!(namespace.new_table(&name(&["pg_catalog", "t"])).unwrap_err().sqlstate, "42501");
    }

    #[test]
    fn a_path_without_public_hides_user_tables() {
        let namespace = Namespace::new("tierdb", "nosuch");
        assert_eq!(namespace.relation(&name(&["t"])).unwrap_err().sqlstate, "42P01");
        assert_eq!(namespace.new_table(&name(&["t"])).unwrap_err().sqlstate, "3F000");
        assert_eq!(
            namespace.relation(&name(&["pg_class"])).unwrap(),
            Relation::View("pg_class".into())
        );
        assert!(Namespace::new("tierdb", "").relation(&name(&["public", "t"])).is_ok());
    }
}
