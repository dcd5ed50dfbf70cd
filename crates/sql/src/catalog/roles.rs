//! Roles: kept in the engine table `tierdb_roles` (one row per role, keyed by name, its
//! definition as text) so that they are durable and recovered like any row, and in memory
//! for lookups at every login and statement. See docs/design/010-roles-and-privileges.md.

use super::*;

pub(super) const ROLES_TABLE: &str = "tierdb_roles";
/// The bootstrap superuser's OID (PostgreSQL's BOOTSTRAP_SUPERUSERID).
pub const BOOTSTRAP_SUPERUSER_OID: u32 = 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleMeta {
    pub name: String,
    pub oid: u32,
    pub superuser: bool,
    pub login: bool,
    /// The SCRAM verifier in PostgreSQL's text form; None: no password.
    pub verifier: Option<String>,
}

impl RoleMeta {
    /// A role with PostgreSQL's defaults (NOSUPERUSER, NOLOGIN, no password); its OID is
    /// assigned when it is created.
    pub fn new(name: &str) -> RoleMeta {
        RoleMeta { name: name.to_string(), oid: 0, superuser: false, login: false, verifier: None }
    }

    fn encode(&self) -> String {
        format!(
            "v1\t{}\t{}\t{}\t{}",
            self.oid,
            u8::from(self.superuser),
            u8::from(self.login),
            self.verifier.as_deref().map_or_else(|| "-".to_string(), escape)
        )
    }

    fn decode(name: &str, text: &str) -> Result<RoleMeta> {
        let bad = || SqlError::new("XX001", format!("corrupt role catalog entry for {name}"));
        let fields: Vec<&str> = text.split('\t').collect();
        let [version, oid, superuser, login, verifier] = fields.as_slice() else {
            return Err(bad());
        };
        if *version != "v1" {
            return Err(bad());
        }
        Ok(RoleMeta {
            name: name.to_string(),
            oid: oid.parse().map_err(|_| bad())?,
            superuser: *superuser == "1",
            login: *login == "1",
            verifier: (*verifier != "-").then(|| unescape(verifier)),
        })
    }
}

/// 42704, as PostgreSQL words it.
pub fn undefined_role(name: &str) -> SqlError {
    SqlError::new("42704", format!("role \"{name}\" does not exist"))
}

/// The roles in memory, by name and by OID (each statement finds its session's role by
/// OID: `Session::current_role`).
#[derive(Default)]
pub(super) struct RoleMaps {
    by_name: HashMap<String, Arc<RoleMeta>>,
    by_oid: HashMap<u32, Arc<RoleMeta>>,
}

impl RoleMaps {
    /// Adds or replaces a role (a rename replaces the entry of its old name).
    fn insert(&mut self, role: Arc<RoleMeta>) {
        if let Some(previous) = self.by_oid.insert(role.oid, Arc::clone(&role)) {
            if previous.name != role.name {
                self.by_name.remove(&previous.name);
            }
        }
        self.by_name.insert(role.name.clone(), role);
        debug_assert_eq!(self.by_name.len(), self.by_oid.len(), "one entry per role in each map");
    }

    fn remove(&mut self, name: &str) {
        if let Some(role) = self.by_name.remove(name) {
            self.by_oid.remove(&role.oid);
        }
    }
}

impl Catalog {
    pub(super) fn load_roles(&self) -> Result<()> {
        let rows = self.scan_internal(ROLES_TABLE)?;
        let mut roles = self.roles.write();
        for row in rows {
            let (Some(Value::Text(name)), Some(Value::Text(definition))) =
                (row.first(), row.get(1))
            else {
                return Err(SqlError::new("XX001", "corrupt role catalog row"));
            };
            roles.insert(Arc::new(RoleMeta::decode(name, definition)?));
        }
        Ok(())
    }

    pub fn role(&self, name: &str) -> Option<Arc<RoleMeta>> {
        self.roles.read().by_name.get(name).cloned()
    }

    pub fn role_by_oid(&self, oid: u32) -> Option<Arc<RoleMeta>> {
        self.roles.read().by_oid.get(&oid).cloned()
    }

    /// Every role, by OID.
    pub fn roles(&self) -> Vec<Arc<RoleMeta>> {
        let mut roles: Vec<Arc<RoleMeta>> = self.roles.read().by_oid.values().cloned().collect();
        roles.sort_by_key(|role| role.oid);
        roles
    }

    /// Creates a role (OID assigned here). The caller holds the DDL lock.
    pub fn create_role(&self, mut role: RoleMeta) -> Result<()> {
        if self.roles.read().by_name.contains_key(&role.name) {
            return Err(SqlError::new("42710", format!("role \"{}\" already exists", role.name)));
        }
        if role.oid == 0 {
            role.oid = self.next_oid()?;
        }
        self.store_role(&role)
    }

    /// Replaces a role's attributes (same name). The caller holds the DDL lock.
    pub fn alter_role(&self, role: RoleMeta) -> Result<()> {
        let Some(existing) = self.role(&role.name) else {
            return Err(undefined_role(&role.name));
        };
        debug_assert_eq!(existing.oid, role.oid, "ALTER ROLE keeps the OID");
        self.store_role(&role)
    }

    /// Renames a role (its OID stays). The caller holds the DDL lock.
    pub fn rename_role(&self, name: &str, new_name: &str) -> Result<()> {
        let Some(existing) = self.role(name) else { return Err(undefined_role(name)) };
        if self.role(new_name).is_some() {
            return Err(SqlError::new("42710", format!("role \"{new_name}\" already exists")));
        }
        let mut renamed = (*existing).clone();
        renamed.name = new_name.to_string();
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        transaction.delete(ROLES_TABLE, &[Value::Text(name.to_string())])?;
        transaction.insert(
            ROLES_TABLE,
            vec![Value::Text(new_name.to_string()), Value::Text(renamed.encode())],
        )?;
        transaction.commit()?;
        self.roles.write().insert(Arc::new(renamed));
        Ok(())
    }

    /// Drops a role. The caller holds the DDL lock and checked that nothing depends on it.
    pub fn drop_role(&self, name: &str) -> Result<()> {
        if self.role(name).is_none() {
            return Err(undefined_role(name));
        }
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        transaction.delete(ROLES_TABLE, &[Value::Text(name.to_string())])?;
        transaction.commit()?;
        self.roles.write().remove(name);
        Ok(())
    }

    /// At server start: creates the bootstrap superuser `name` when there is no role yet,
    /// and gives the bootstrap superuser (whatever its name now) `password` when one is
    /// configured (a fresh salt each start). Returns the bootstrap superuser's name.
    pub fn bootstrap_superuser(&self, name: &str, password: Option<&str>) -> Result<String> {
        if password.is_some_and(str::is_empty) {
            return Err(SqlError::new("28P01", "the bootstrap superuser's password is empty"));
        }
        let _guard = self.lock_ddl();
        let verifier = password.map(|text| ScramVerifier::generate(text).map(|v| v.encode()));
        let verifier = verifier.transpose()?;
        let existing = self.role_by_oid(BOOTSTRAP_SUPERUSER_OID);
        match existing {
            Some(role) => {
                if verifier.is_some() {
                    let mut updated = (*role).clone();
                    updated.verifier = verifier;
                    self.store_role(&updated)?;
                }
                Ok(role.name.clone())
            }
            None if self.roles.read().by_name.is_empty() => {
                let role = RoleMeta {
                    name: name.to_string(),
                    oid: BOOTSTRAP_SUPERUSER_OID,
                    superuser: true,
                    login: true,
                    verifier,
                };
                self.store_role(&role)?;
                Ok(name.to_string())
            }
            None => Err(SqlError::new("XX001", "the role catalog has no bootstrap superuser")),
        }
    }

    fn store_role(&self, role: &RoleMeta) -> Result<()> {
        self.upsert_text(ROLES_TABLE, &role.name, role.encode())?;
        self.roles.write().insert(Arc::new(role.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_round_trip() {
        let role = RoleMeta {
            name: "alice".into(),
            oid: 16_400,
            superuser: false,
            login: true,
            verifier: Some("SCRAM-SHA-256$4096:c2FsdA==$a:b".into()),
        };
        assert_eq!(RoleMeta::decode("alice", &role.encode()).expect("decodes"), role);
        let bare = RoleMeta::new("bob");
        assert_eq!(RoleMeta::decode("bob", &bare.encode()).expect("decodes"), bare);
        assert!(RoleMeta::decode("x", "v2\t1\t0\t0\t-").is_err());
    }
}
