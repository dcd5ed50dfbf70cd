//! Privileges on schema `public` (docs/design/010-roles-and-privileges.md): USAGE to reach
//! its tables, CREATE to create tables and indexes in it. As in PostgreSQL 15, PUBLIC holds
//! USAGE and only the database owner (the bootstrap superuser) CREATE until granted.

use super::*;
use crate::bind::{SCHEMAS, SCHEMA_PUBLIC};
use crate::catalog::SchemaPrivilege;
use crate::output::CommandTag;

/// 42501, PostgreSQL's wording for a missing schema privilege.
pub(super) fn schema_denied(schema: &str) -> SqlError {
    SqlError::new("42501", format!("permission denied for schema {schema}"))
}

/// When a statement needs CREATE on public: before anything else (CREATE TABLE, whose
/// namespace is checked as the name is resolved) or after table ownership (CREATE INDEX and
/// ALTER TABLE ... ADD PRIMARY KEY / UNIQUE, which build an index in the table's schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CreateCheck {
    None,
    First,
    AfterOwnership,
}

impl Session {
    /// Which CREATE check on public `statement` needs.
    pub(super) fn create_check(&self, statement: &Statement) -> CreateCheck {
        let Statement::Sql(sql) = statement else { return CreateCheck::None };
        match sql.as_ref() {
            // A name in pg_catalog or information_schema fails on its own (42501 / 0A000).
            ast::Statement::CreateTable(create)
                if self.namespace().new_table(&create.name).is_ok() =>
            {
                CreateCheck::First
            }
            ast::Statement::CreateView(create)
                if self.namespace().new_table(&create.name).is_ok() =>
            {
                CreateCheck::First
            }
            ast::Statement::CreateIndex(_) => CreateCheck::AfterOwnership,
            ast::Statement::AlterTable(alter) => {
                let adds_index = alter.operations.iter().any(|operation| {
                    matches!(
                        operation,
                        ast::AlterTableOperation::AddConstraint {
                            constraint: ast::TableConstraint::PrimaryKey(_)
                                | ast::TableConstraint::Unique(_),
                            ..
                        }
                    )
                });
                if adds_index {
                    CreateCheck::AfterOwnership
                } else {
                    CreateCheck::None
                }
            }
            _ => CreateCheck::None,
        }
    }

    /// 42501 unless the session's role holds `privilege` on public.
    pub(super) fn require_public(&self, privilege: SchemaPrivilege) -> Result<()> {
        if self.catalog.schema_allows(SCHEMA_PUBLIC, self.role_oid(), privilege) {
            return Ok(());
        }
        Err(schema_denied(SCHEMA_PUBLIC))
    }

    /// GRANT or REVOKE {USAGE | CREATE | ALL} ON SCHEMA s, ... TO|FROM role, ...|PUBLIC.
    pub(super) fn grant_on_schemas(
        &mut self,
        privileges: &ast::Privileges,
        schemas: &[ast::ObjectName],
        grantees: &[ast::Grantee],
        grant: bool,
    ) -> Result<Output> {
        let bits = schema_privilege_bits(privileges)?;
        let _guard = self.catalog.lock_ddl();
        let mut acls = Vec::new();
        for schema in schemas {
            let schema = object_name(schema)?;
            if !SCHEMAS.contains(&schema.as_str()) {
                return Err(crate::bind::undefined_schema(&schema));
            }
            if schema != SCHEMA_PUBLIC {
                return Err(SqlError::unsupported(format!(
                    "privileges on schema {schema} are not supported (only on schema public)"
                )));
            }
            let acl = self.catalog.schema_acl(&schema);
            acls.push((schema, acl));
        }
        for (schema, acl) in self.changed_acls(acls, grantees, bits, grant, schema_denied)? {
            self.catalog.set_schema_acl(&schema, acl)?;
        }
        Ok(Output::command(if grant { CommandTag::Grant } else { CommandTag::Revoke }))
    }

    /// 2BP01 when role `oid` holds privileges on a schema (PostgreSQL lists them as
    /// dependencies of the role).
    pub(super) fn refuse_schema_dependencies(&self, name: &str, oid: u32) -> Result<()> {
        if self.catalog.schemas_mentioning(oid).is_empty() {
            return Ok(());
        }
        Err(SqlError::new(
            "2BP01",
            format!("role \"{name}\" cannot be dropped because some objects depend on it"),
        ))
    }
}

/// The schema privilege bits a GRANT or REVOKE names: 0LP01 for privileges schemas do not
/// have, as PostgreSQL words it.
fn schema_privilege_bits(privileges: &ast::Privileges) -> Result<u8> {
    let actions = match privileges {
        ast::Privileges::All { .. } => {
            return Ok(SchemaPrivilege::ALL.iter().map(|privilege| privilege.bit()).sum())
        }
        ast::Privileges::Actions(actions) => actions,
    };
    let mut bits = 0;
    for action in actions {
        let privilege = match action {
            ast::Action::Usage => SchemaPrivilege::Usage,
            ast::Action::Create { obj_type: None } => SchemaPrivilege::Create,
            other => {
                let name = other.to_string().to_uppercase();
                return Err(SqlError::new(
                    "0LP01",
                    format!("invalid privilege type {name} for schema"),
                ));
            }
        };
        bits |= privilege.bit();
    }
    Ok(bits)
}
