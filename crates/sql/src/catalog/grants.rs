//! Table owners and privileges, kept in the engine table `tierdb_grants` (one row per table
//! that has an owner other than the bootstrap superuser or any grant, keyed by table name).
//! Roles are named by OID, so that renaming a role keeps its tables and grants.
//! See docs/design/010-roles-and-privileges.md.

use super::*;

pub(super) const GRANTS_TABLE: &str = "tierdb_grants";
/// The grantee OID standing for PUBLIC (every role), as in PostgreSQL's ACLs.
pub const PUBLIC_GRANTEE: u32 = 0;

/// A table privilege (PostgreSQL's letters in `relacl`: r, a, w, d, D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    Select,
    Insert,
    Update,
    Delete,
    Truncate,
}

impl Privilege {
    pub const ALL: [Privilege; 5] = [
        Privilege::Select,
        Privilege::Insert,
        Privilege::Update,
        Privilege::Delete,
        Privilege::Truncate,
    ];

    pub fn bit(self) -> u8 {
        match self {
            Privilege::Select => 1,
            Privilege::Insert => 2,
            Privilege::Update => 4,
            Privilege::Delete => 8,
            Privilege::Truncate => 16,
        }
    }
}

/// A table's owner and grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableAcl {
    pub owner: u32,
    /// (grantee OID or PUBLIC_GRANTEE, privilege bits), one entry per grantee.
    pub grants: Vec<(u32, u8)>,
}

impl Default for TableAcl {
    /// Tables from before roles existed belong to the bootstrap superuser.
    fn default() -> TableAcl {
        TableAcl { owner: BOOTSTRAP_SUPERUSER_OID, grants: Vec::new() }
    }
}

impl TableAcl {
    /// Whether role `oid` holds `privilege` (itself or through PUBLIC); owners hold all.
    pub fn allows(&self, oid: u32, privilege: Privilege) -> bool {
        self.allows_bits(oid, privilege.bit())
    }

    /// Whether role `oid` holds the privilege `bit` (itself or through PUBLIC); owners
    /// hold all.
    pub fn allows_bits(&self, oid: u32, bit: u8) -> bool {
        oid == self.owner
            || self.grants.iter().any(|&(grantee, bits)| {
                (grantee == oid || grantee == PUBLIC_GRANTEE) && bits & bit != 0
            })
    }

    /// Adds (`grant`) or removes privilege bits of one grantee.
    pub fn change(&mut self, grantee: u32, bits: u8, grant: bool) {
        match self.grants.iter_mut().find(|(existing, _)| *existing == grantee) {
            Some(entry) if grant => entry.1 |= bits,
            Some(entry) => entry.1 &= !bits,
            None if grant => self.grants.push((grantee, bits)),
            None => {}
        }
        self.grants.retain(|&(_, bits)| bits != 0);
    }

    /// Whether role `oid` owns the table or holds any grant on it (DROP ROLE's dependencies).
    pub fn mentions(&self, oid: u32) -> bool {
        self.owner == oid || self.grants.iter().any(|&(grantee, _)| grantee == oid)
    }

    pub(super) fn encode(&self) -> String {
        let grants: Vec<String> =
            self.grants.iter().map(|(grantee, bits)| format!("{grantee}={bits}")).collect();
        format!("v1\t{}\t{}", self.owner, grants.join(","))
    }

    pub(super) fn decode(table: &str, text: &str) -> Result<TableAcl> {
        let bad = || SqlError::new("XX001", format!("corrupt privileges entry for {table}"));
        let fields: Vec<&str> = text.split('\t').collect();
        let ["v1", owner, grants] = fields.as_slice() else { return Err(bad()) };
        let mut acl = TableAcl { owner: owner.parse().map_err(|_| bad())?, grants: Vec::new() };
        for entry in grants.split(',').filter(|entry| !entry.is_empty()) {
            let (grantee, bits) = entry.split_once('=').ok_or_else(bad)?;
            acl.grants
                .push((grantee.parse().map_err(|_| bad())?, bits.parse().map_err(|_| bad())?));
        }
        Ok(acl)
    }
}

impl Catalog {
    pub(super) fn load_grants(&self) -> Result<()> {
        *self.grants.write() = self.load_acls(GRANTS_TABLE)?;
        Ok(())
    }

    /// Every ACL stored in the internal table `internal`, by object name.
    pub(super) fn load_acls(&self, internal: &str) -> Result<HashMap<String, TableAcl>> {
        let mut acls = HashMap::new();
        for row in self.scan_internal(internal)? {
            let (Some(Value::Text(name)), Some(Value::Text(text))) = (row.first(), row.get(1))
            else {
                return Err(SqlError::new(
                    "XX001",
                    format!("corrupt privileges row in {internal}"),
                ));
            };
            acls.insert(name.clone(), TableAcl::decode(name, text)?);
        }
        Ok(acls)
    }

    /// A table's owner and grants.
    pub fn table_acl(&self, table: &str) -> TableAcl {
        self.grants.read().get(table).cloned().unwrap_or_default()
    }

    /// Every table's ACL that names `oid` (as owner or grantee), by table name.
    pub fn tables_mentioning(&self, oid: u32) -> Vec<String> {
        let mut tables: Vec<String> = self
            .grants
            .read()
            .iter()
            .filter(|(_, acl)| acl.mentions(oid))
            .map(|(table, _)| table.clone())
            .collect();
        tables.sort();
        tables
    }

    /// Stores a table's ACL durably. The caller holds the DDL lock.
    pub fn set_table_acl(&self, table: &str, acl: TableAcl) -> Result<()> {
        self.upsert_text(GRANTS_TABLE, table, acl.encode())?;
        self.grants.write().insert(table.to_string(), acl);
        Ok(())
    }

    /// Forgets a dropped table's ACL.
    pub(super) fn remove_table_acl(&self, table: &str) -> Result<()> {
        if self.grants.read().contains_key(table) {
            let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
            transaction.delete(GRANTS_TABLE, &[Value::Text(table.to_string())])?;
            transaction.commit()?;
            self.grants.write().remove(table);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_and_revokes_change_bits_and_round_trip() {
        let mut acl = TableAcl { owner: 16_400, grants: Vec::new() };
        acl.change(16_401, Privilege::Select.bit() | Privilege::Insert.bit(), true);
        acl.change(PUBLIC_GRANTEE, Privilege::Delete.bit(), true);
        assert!(acl.allows(16_401, Privilege::Insert));
        assert!(acl.allows(16_402, Privilege::Delete), "through PUBLIC");
        assert!(!acl.allows(16_402, Privilege::Select));
        assert!(acl.allows(16_400, Privilege::Truncate), "the owner");
        assert_eq!(TableAcl::decode("t", &acl.encode()).expect("decodes"), acl);
        acl.change(16_401, Privilege::Select.bit() | Privilege::Insert.bit(), false);
        assert!(!acl.mentions(16_401), "an entry without privileges is removed");
        assert!(TableAcl::decode("t", "v1\tx\t").is_err());
    }
}
