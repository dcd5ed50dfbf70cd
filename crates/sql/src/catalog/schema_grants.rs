//! Privileges on schema `public` (USAGE and CREATE), kept in the engine table
//! `tierdb_schema_grants` (one row per schema whose ACL differs from PostgreSQL 15's default,
//! keyed by schema name) beside the table grants. PostgreSQL 15's default ACL of `public`
//! is `{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}`: every role may use it,
//! only the database owner (tierdb: the bootstrap superuser) may create in it.

use super::*;

pub(super) const SCHEMA_GRANTS_TABLE: &str = "tierdb_schema_grants";

/// A schema privilege (PostgreSQL's letters in `nspacl`: U, C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaPrivilege {
    Usage,
    Create,
}

impl SchemaPrivilege {
    pub const ALL: [SchemaPrivilege; 2] = [SchemaPrivilege::Usage, SchemaPrivilege::Create];

    pub fn bit(self) -> u8 {
        match self {
            SchemaPrivilege::Usage => 1,
            SchemaPrivilege::Create => 2,
        }
    }
}

/// PostgreSQL 15's ACL of schema `public`: owned by the database owner, USAGE to PUBLIC.
pub fn default_schema_acl() -> TableAcl {
    TableAcl {
        owner: BOOTSTRAP_SUPERUSER_OID,
        grants: vec![(PUBLIC_GRANTEE, SchemaPrivilege::Usage.bit())],
    }
}

impl Catalog {
    pub(super) fn load_schema_grants(&self) -> Result<()> {
        *self.schema_grants.write() = self.load_acls(SCHEMA_GRANTS_TABLE)?;
        Ok(())
    }

    /// A schema's owner and grants.
    pub fn schema_acl(&self, schema: &str) -> TableAcl {
        self.schema_grants.read().get(schema).cloned().unwrap_or_else(default_schema_acl)
    }

    /// Whether role `oid` holds `privilege` on `schema` (itself, through PUBLIC, or as
    /// its owner).
    pub fn schema_allows(&self, schema: &str, oid: u32, privilege: SchemaPrivilege) -> bool {
        self.schema_acl(schema).allows_bits(oid, privilege.bit())
    }

    /// Every schema whose ACL names `oid` as a grantee (DROP ROLE's dependencies).
    pub fn schemas_mentioning(&self, oid: u32) -> Vec<String> {
        let grants = self.schema_grants.read();
        let mut schemas: Vec<String> = grants
            .iter()
            .filter(|(_, acl)| acl.mentions(oid))
            .map(|(schema, _)| schema.clone())
            .collect();
        schemas.sort();
        schemas
    }

    /// Stores a schema's ACL durably. The caller holds the DDL lock.
    pub fn set_schema_acl(&self, schema: &str, acl: TableAcl) -> Result<()> {
        self.upsert_text(SCHEMA_GRANTS_TABLE, schema, acl.encode())?;
        self.schema_grants.write().insert(schema.to_string(), acl);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}
