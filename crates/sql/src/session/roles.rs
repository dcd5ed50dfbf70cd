//! CREATE ROLE / CREATE USER, ALTER ROLE, DROP ROLE (docs/design/010-roles-and-privileges.md).
//!
//! Only a superuser creates, alters and drops roles (CREATEROLE is not supported); any role
//! may change its own password. Options tierdb does not implement fail with 0A000 naming
//! them. Like all of tierdb's DDL, role changes are durable when the statement completes.

use super::*;
use crate::catalog::{
    is_md5_text, is_scram_text, undefined_role, RoleMeta, ScramVerifier, BOOTSTRAP_SUPERUSER_OID,
};
use crate::output::CommandTag;

/// The attributes a statement sets; None: not mentioned.
#[derive(Default)]
struct RoleOptions {
    login: Option<bool>,
    superuser: Option<bool>,
    /// Some(None): PASSWORD NULL.
    password: Option<Option<String>>,
}

impl RoleOptions {
    /// Applies the options to `role`, turning a password into a verifier.
    fn apply(self, role: &mut RoleMeta) -> Result<()> {
        if let Some(login) = self.login {
            role.login = login;
        }
        if let Some(superuser) = self.superuser {
            role.superuser = superuser;
        }
        if let Some(password) = self.password {
            role.verifier = password.map(|text| stored_password(&text)).transpose()?.flatten();
        }
        Ok(())
    }
}

/// What is stored for a password given in SQL: its verifier (fresh salt), a verifier given
/// as such, or nothing for an empty password (PostgreSQL clears it too).
fn stored_password(text: &str) -> Result<Option<String>> {
    if text.is_empty() {
        return Ok(None);
    }
    if is_md5_text(text) {
        return Err(SqlError::unsupported("md5 password hashes are not supported"));
    }
    if is_scram_text(text) {
        return match ScramVerifier::parse(text) {
            Some(verifier) => Ok(Some(verifier.encode())),
            None => Err(SqlError::new("22023", "invalid SCRAM secret")),
        };
    }
    Ok(Some(ScramVerifier::generate(text)?.encode()))
}

fn conflicting_options() -> SqlError {
    SqlError::syntax("conflicting or redundant options")
}

fn set_once<T>(slot: &mut Option<T>, value: T) -> Result<()> {
    if slot.replace(value).is_some() {
        return Err(conflicting_options());
    }
    Ok(())
}

fn password_text(password: &ast::Password) -> Result<Option<String>> {
    match password {
        ast::Password::NullPassword => Ok(None),
        ast::Password::Password(ast::Expr::Value(value)) => match &value.value {
            ast::Value::SingleQuotedString(text) => Ok(Some(text.clone())),
            other => Err(SqlError::syntax(format!("syntax error at or near \"{other}\""))),
        },
        ast::Password::Password(other) => {
            Err(SqlError::syntax(format!("syntax error at or near \"{other}\"")))
        }
    }
}

/// The options of ALTER ROLE ... WITH, and the ones CREATE ROLE shares.
fn role_options(options: &[ast::RoleOption]) -> Result<RoleOptions> {
    let mut parsed = RoleOptions::default();
    for option in options {
        match option {
            ast::RoleOption::Login(login) => set_once(&mut parsed.login, *login)?,
            ast::RoleOption::SuperUser(superuser) => set_once(&mut parsed.superuser, *superuser)?,
            ast::RoleOption::Password(password) => {
                set_once(&mut parsed.password, password_text(password)?)?
            }
            ast::RoleOption::BypassRLS(_) => return Err(unsupported_option("BYPASSRLS")),
            ast::RoleOption::ConnectionLimit(_) => {
                return Err(unsupported_option("CONNECTION LIMIT"))
            }
            ast::RoleOption::CreateDB(_) => return Err(unsupported_option("CREATEDB")),
            ast::RoleOption::CreateRole(_) => return Err(unsupported_option("CREATEROLE")),
            ast::RoleOption::Inherit(_) => return Err(unsupported_option("INHERIT")),
            ast::RoleOption::Replication(_) => return Err(unsupported_option("REPLICATION")),
            ast::RoleOption::ValidUntil(_) => return Err(unsupported_option("VALID UNTIL")),
        }
    }
    Ok(parsed)
}

fn unsupported_option(name: &str) -> SqlError {
    SqlError::unsupported(format!("role option {name} is not supported"))
}

/// CREATE ROLE's options (sqlparser gives them as fields).
fn create_options(create: &ast::CreateRole) -> Result<RoleOptions> {
    let unsupported = [
        ("INHERIT", create.inherit.is_some()),
        ("BYPASSRLS", create.bypassrls.is_some()),
        ("CREATEDB", create.create_db.is_some()),
        ("CREATEROLE", create.create_role.is_some()),
        ("REPLICATION", create.replication.is_some()),
        ("CONNECTION LIMIT", create.connection_limit.is_some()),
        ("VALID UNTIL", create.valid_until.is_some()),
        ("IN ROLE", !create.in_role.is_empty()),
        ("IN GROUP", !create.in_group.is_empty()),
        ("ROLE", !create.role.is_empty()),
        ("USER", !create.user.is_empty()),
        ("ADMIN", !create.admin.is_empty()),
        ("AUTHORIZATION", create.authorization_owner.is_some()),
    ];
    if let Some((name, _)) = unsupported.iter().find(|(_, given)| *given) {
        return Err(unsupported_option(name));
    }
    Ok(RoleOptions {
        login: create.login,
        superuser: create.superuser,
        password: create.password.as_ref().map(password_text).transpose()?,
    })
}

/// PostgreSQL reserves `public`, `none` and names starting with `pg_` (42939).
fn check_role_name(name: &str) -> Result<()> {
    if name == "public" || name == "none" || name.starts_with("pg_") {
        return Err(SqlError::new("42939", format!("role name \"{name}\" is reserved")));
    }
    Ok(())
}

fn permission_denied(message: &str) -> SqlError {
    SqlError::new("42501", message)
}

impl Session {
    /// The session's role, if it (still) exists.
    pub(crate) fn current_role(&self) -> Option<Arc<RoleMeta>> {
        if let Some(&oid) = self.role_oid.get() {
            return self.catalog.role_by_oid(oid);
        }
        let role = self.catalog.role(&self.user)?;
        Some(match self.role_oid.set(role.oid) {
            Ok(()) => role,
            // Fixed meanwhile: follow what was fixed.
            Err(_) => self.catalog.role_by_oid(*self.role_oid.get()?)?,
        })
    }

    /// Whether `role` is the session's own role.
    fn is_session_role(&self, role: &RoleMeta) -> bool {
        self.current_role().is_some_and(|own| own.oid == role.oid)
    }

    /// Whether the session's role is a superuser (a dropped role is not).
    pub fn is_superuser(&self) -> bool {
        self.current_role().is_some_and(|role| role.superuser)
    }

    pub(crate) fn create_role(&mut self, create: &ast::CreateRole) -> Result<Output> {
        if create.if_not_exists {
            return Err(SqlError::syntax("syntax error at or near \"NOT\""));
        }
        let [name] = create.names.as_slice() else {
            return Err(SqlError::syntax("syntax error at or near \",\""));
        };
        let name = object_name(name)?;
        if !self.is_superuser() {
            return Err(permission_denied("permission denied to create role"));
        }
        check_role_name(&name)?;
        let options = create_options(create)?;
        let _guard = self.catalog.lock_ddl();
        if self.catalog.role(&name).is_some() {
            return Err(SqlError::new("42710", format!("role \"{name}\" already exists")));
        }
        let mut role = RoleMeta::new(&name);
        options.apply(&mut role)?;
        self.catalog.create_role(role)?;
        Ok(Output::command(CommandTag::CreateRole))
    }

    pub(crate) fn alter_role(
        &mut self,
        name: &ast::Ident,
        operation: &ast::AlterRoleOperation,
    ) -> Result<Output> {
        let name = ident(name);
        let options = match operation {
            ast::AlterRoleOperation::WithOptions { options } => role_options(options)?,
            ast::AlterRoleOperation::RenameRole { role_name } => {
                return self.rename_role(&name, &ident(role_name))
            }
            ast::AlterRoleOperation::Set { .. } | ast::AlterRoleOperation::Reset { .. } => {
                return Err(SqlError::unsupported("ALTER ROLE ... SET and RESET are not supported"))
            }
            ast::AlterRoleOperation::AddMember { .. }
            | ast::AlterRoleOperation::DropMember { .. } => {
                return Err(SqlError::unsupported("role membership is not supported"))
            }
        };
        let _guard = self.catalog.lock_ddl();
        let Some(role) = self.catalog.role(&name) else { return Err(undefined_role(&name)) };
        if !self.is_superuser() {
            if role.superuser || options.superuser.is_some() {
                return Err(permission_denied(
                    "must be superuser to alter superuser roles or change superuser attribute",
                ));
            }
            // A role may change its own password, and nothing else.
            if !self.is_session_role(&role) || options.login.is_some() {
                return Err(permission_denied("permission denied"));
            }
        }
        let mut updated = (*role).clone();
        options.apply(&mut updated)?;
        self.catalog.alter_role(updated)?;
        Ok(Output::command(CommandTag::AlterRole))
    }

    fn rename_role(&mut self, name: &str, new_name: &str) -> Result<Output> {
        let _guard = self.catalog.lock_ddl();
        let Some(role) = self.catalog.role(name) else { return Err(undefined_role(name)) };
        if self.is_session_role(&role) {
            return Err(SqlError::unsupported("session user cannot be renamed"));
        }
        if !self.is_superuser() {
            return Err(permission_denied("permission denied to rename role"));
        }
        check_role_name(new_name)?;
        self.catalog.rename_role(name, new_name)?;
        Ok(Output::command(CommandTag::AlterRole))
    }

    /// DROP ROLE / DROP USER: every name is checked before any is dropped.
    pub(crate) fn drop_roles(
        &mut self,
        if_exists: bool,
        names: &[ast::ObjectName],
    ) -> Result<Output> {
        if !self.is_superuser() {
            return Err(permission_denied("permission denied to drop role"));
        }
        let _guard = self.catalog.lock_ddl();
        let mut doomed = Vec::new();
        for name in names {
            let name = object_name(name)?;
            let Some(role) = self.catalog.role(&name) else {
                if if_exists {
                    continue;
                }
                return Err(undefined_role(&name));
            };
            if self.is_session_role(&role) {
                return Err(SqlError::new("55006", "current user cannot be dropped"));
            }
            if role.oid == BOOTSTRAP_SUPERUSER_OID {
                return Err(SqlError::new(
                    "2BP01",
                    format!(
                        "cannot drop role {name} because it is required by the database system"
                    ),
                ));
            }
            self.refuse_schema_dependencies(&name, role.oid)?;
            if !self.catalog.tables_mentioning(role.oid).is_empty() {
                return Err(SqlError::new(
                    "2BP01",
                    format!("role \"{name}\" cannot be dropped because some objects depend on it"),
                ));
            }
            doomed.push(name);
        }
        for name in doomed {
            self.catalog.drop_role(&name)?;
        }
        Ok(Output::command(CommandTag::DropRole))
    }
}

/// Role and privilege changes are written at once, outside the session's transaction (their
/// catalog rows are not MVCC-versioned with it): inside a transaction block, where a
/// ROLLBACK could not undo them, they are refused (0A000) rather than done for good. (A
/// multi-statement string's implicit block runs them: PostgreSQL accepts them there too.)
pub(super) fn refuse_role_ddl_in_block(statement: &ast::Statement) -> Result<()> {
    let command = match statement {
        ast::Statement::CreateRole(_) => "CREATE ROLE",
        ast::Statement::AlterRole { .. } => "ALTER ROLE",
        ast::Statement::Drop { object_type: ast::ObjectType::Role, .. } => "DROP ROLE",
        ast::Statement::Drop { object_type: ast::ObjectType::User, .. } => "DROP USER",
        ast::Statement::Grant(_) => "GRANT",
        ast::Statement::Revoke(_) => "REVOKE",
        _ => return Ok(()),
    };
    Err(SqlError::unsupported(format!("{command} inside a transaction block is not supported")))
}
