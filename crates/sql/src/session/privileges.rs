//! Table privileges: GRANT and REVOKE, and the one check every statement passes before it
//! runs (docs/design/010-roles-and-privileges.md). Superusers bypass the check; a table's
//! owner holds every privilege on it and alone may drop or alter it.
//!
//! What a statement needs, as in PostgreSQL: SELECT on every table it reads (including an
//! UPDATE's or DELETE's target when its WHERE clause, RETURNING or SET values read columns),
//! INSERT, UPDATE or DELETE on its target, TRUNCATE for TRUNCATE, ownership for DDL.

use super::schema_privileges::CreateCheck;
use super::*;
use crate::catalog::{undefined_role, Privilege, SchemaPrivilege, TableAcl, PUBLIC_GRANTEE};
use crate::output::CommandTag;

fn permission_denied(table: &str) -> SqlError {
    SqlError::new("42501", format!("permission denied for table {table}"))
}

fn not_owner(table: &str) -> SqlError {
    SqlError::new("42501", format!("must be owner of table {table}"))
}

/// Every table name a statement mentions (views, CTE names and unknown names included:
/// the check skips names that are not tables).
fn relations(statement: &ast::Statement) -> Vec<String> {
    let mut names = Vec::new();
    let _ = ast::visit_relations(statement, |name| {
        if let Ok(name) = object_name(name) {
            names.push(name);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    names
}

/// Whether an expression reads a column.
fn reads_columns(expr: &ast::Expr) -> bool {
    let mut found = false;
    let _ = ast::visit_expressions(expr, |inner| {
        found |= matches!(inner, ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_));
        std::ops::ControlFlow::<()>::Continue(())
    });
    found
}

fn table_factor_name(factor: &ast::TableFactor) -> Option<String> {
    match factor {
        ast::TableFactor::Table { name, .. } => object_name(name).ok(),
        _ => None,
    }
}

/// The privileges a DML statement or query needs, by table.
fn required(statement: &ast::Statement) -> Vec<(String, Privilege)> {
    let mut reads = relations(statement);
    let mut needs = Vec::new();
    let mut target = |name: Option<String>, privilege: Privilege, reads_target: bool| {
        let Some(name) = name else { return };
        // The target's own mention, once (ON CONFLICT DO UPDATE's second privilege aside).
        let first = !needs.iter().any(|(known, _): &(String, Privilege)| *known == name);
        if let Some(position) = reads.iter().position(|read| *read == name).filter(|_| first) {
            reads.remove(position);
        }
        if reads_target {
            needs.push((name.clone(), Privilege::Select));
        }
        needs.push((name, privilege));
    };
    match statement {
        // A WITH list's data-modifying statements and a data-modifying main statement need
        // their privileges as they would alone.
        ast::Statement::Query(query) => {
            let ctes = query.with.iter().flat_map(|with| &with.cte_tables);
            let bodies = ctes.map(|cte| cte.query.body.as_ref()).chain([query.body.as_ref()]);
            for body in bodies {
                if let ast::SetExpr::Insert(inner)
                | ast::SetExpr::Update(inner)
                | ast::SetExpr::Delete(inner) = body
                {
                    modify_needs(inner, &mut target);
                }
            }
        }
        other => modify_needs(other, &mut target),
    }
    if has_locking_clause(statement) {
        // FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE also need UPDATE (PostgreSQL asks
        // it of the locked tables; here of every table read: stricter, never looser).
        needs.extend(reads.iter().map(|name| (name.clone(), Privilege::Update)));
    }
    needs.extend(reads.into_iter().map(|name| (name, Privilege::Select)));
    needs
}

/// The privileges an INSERT, UPDATE or DELETE needs on its target, given to `target` (name,
/// privilege, whether it also reads the target).
fn modify_needs(
    statement: &ast::Statement,
    target: &mut impl FnMut(Option<String>, Privilege, bool),
) {
    match statement {
        ast::Statement::Insert(insert) => {
            let name = match &insert.table {
                ast::TableObject::TableName(name) => object_name(name).ok(),
                _ => None,
            };
            let upsert = matches!(
                &insert.on,
                Some(ast::OnInsert::OnConflict(ast::OnConflict {
                    action: ast::OnConflictAction::DoUpdate(_),
                    ..
                }))
            );
            target(name.clone(), Privilege::Insert, insert.returning.is_some());
            if upsert {
                target(name, Privilege::Update, false);
            }
        }
        ast::Statement::Update(update) => {
            let reads_target = update.selection.is_some()
                || update.returning.is_some()
                || update.assignments.iter().any(|assignment| reads_columns(&assignment.value));
            target(table_factor_name(&update.table.relation), Privilege::Update, reads_target);
        }
        ast::Statement::Delete(delete) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &delete.from;
            let name = from.first().and_then(|table| table_factor_name(&table.relation));
            let reads_target = delete.selection.is_some() || delete.returning.is_some();
            target(name, Privilege::Delete, reads_target);
        }
        _ => {}
    }
}

/// Whether any query of the statement has a locking clause (FOR UPDATE ...).
fn has_locking_clause(statement: &ast::Statement) -> bool {
    struct Finder;
    impl ast::Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, query: &ast::Query) -> std::ops::ControlFlow<()> {
            match query.locks.is_empty() {
                true => std::ops::ControlFlow::Continue(()),
                false => std::ops::ControlFlow::Break(()),
            }
        }
    }
    ast::Visit::visit(statement, &mut Finder).is_break()
}

impl Session {
    /// The session role's OID; a dropped role holds nothing (u32::MAX names no role).
    pub(super) fn role_oid(&self) -> u32 {
        self.current_role().map_or(u32::MAX, |role| role.oid)
    }

    /// The check of every statement: 42501 when the session's role lacks a privilege the
    /// statement needs on a table.
    pub(crate) fn check_privileges(&self, statement: &Statement) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        let needs: Vec<(String, Option<Privilege>)> = match statement {
            Statement::Front(FrontStatement::Copy(copy)) => match &copy.source {
                CopySource::Table { name, .. } => {
                    let privilege = if copy.from { Privilege::Insert } else { Privilege::Select };
                    vec![(name.clone(), Some(privilege))]
                }
                // The query is checked once, as it runs (Session::copy: it is parsed there).
                CopySource::Query(_) => Vec::new(),
            },
            // ALTER TABLE's identity actions: the table's owner only.
            Statement::Front(FrontStatement::AlterIdentity(alter)) => {
                vec![(alter.table.last().cloned().unwrap_or_default(), None)]
            }
            Statement::Front(_) => Vec::new(),
            Statement::Sql(sql) => sql_needs(&self.catalog, sql)?,
        };
        let create_check = self.create_check(statement);
        if create_check == CreateCheck::First {
            self.require_public(SchemaPrivilege::Create)?;
        }
        let oid = self.role_oid();
        for (table, privilege) in needs {
            if self.catalog.table(&table).is_none() {
                continue;
            }
            // Every user table is in public: reaching it needs USAGE there.
            self.require_public(SchemaPrivilege::Usage)?;
            let acl = self.catalog.table_acl(&table);
            match privilege {
                Some(privilege) if !acl.allows(oid, privilege) => {
                    return Err(permission_denied(&table))
                }
                None if acl.owner != oid => return Err(not_owner(&table)),
                _ => {}
            }
        }
        if create_check == CreateCheck::AfterOwnership {
            self.require_public(SchemaPrivilege::Create)?;
        }
        Ok(())
    }

    /// A new table belongs to the role that created it.
    pub(crate) fn own_new_table(&self, table: &str) -> Result<()> {
        let Some(role) = self.current_role() else { return Ok(()) };
        // Written for the bootstrap superuser too: a row left by a dropped table of the same
        // name (the drop removes it in a second transaction) must not survive.
        self.catalog.set_table_acl(table, TableAcl { owner: role.oid, grants: Vec::new() })
    }

    /// ALTER TABLE ... OWNER TO: the table's ACL names the new owner, its grants kept (the
    /// statement's ownership check ran before). The ACL row is written at once, as GRANT's
    /// is, so inside a transaction block, where a ROLLBACK could not undo it, it is refused
    /// (0A000). A role that is not a superuser can give a table only to itself (tierdb has
    /// no role membership; PostgreSQL 15's 42501 otherwise).
    pub(crate) fn change_owner(&mut self, table: &str, owner: &ast::Owner) -> Result<()> {
        if self.state != BlockState::Idle {
            return Err(SqlError::unsupported(
                "ALTER TABLE ... OWNER TO inside a transaction block is not supported",
            ));
        }
        let role = match owner {
            ast::Owner::Ident(name) => {
                let name = ident(name);
                self.catalog.role(&name).ok_or_else(|| undefined_role(&name))?
            }
            ast::Owner::CurrentRole | ast::Owner::CurrentUser | ast::Owner::SessionUser => self
                .current_role()
                .ok_or_else(|| SqlError::new("42704", "the session's role does not exist"))?,
        };
        if !self.is_superuser() && role.oid != self.role_oid() {
            return Err(SqlError::new(
                "42501",
                format!("must be member of role \"{}\"", role.name),
            ));
        }
        let mut acl = self.catalog.table_acl(table);
        acl.owner = role.oid;
        self.catalog.set_table_acl(table, acl)
    }

    /// GRANT (`grant`) or REVOKE of table privileges; `unsupported_clauses` names clauses
    /// the statement used that tierdb does not support (0A000).
    pub(crate) fn grant_or_revoke(
        &mut self,
        privileges: &ast::Privileges,
        objects: Option<&ast::GrantObjects>,
        grantees: &[ast::Grantee],
        grant: bool,
        unsupported_clauses: Option<&str>,
    ) -> Result<Output> {
        if let Some(clauses) = unsupported_clauses {
            return Err(SqlError::unsupported(format!("{clauses} not supported")));
        }
        let tables = match objects {
            Some(ast::GrantObjects::Tables(tables)) => tables,
            Some(ast::GrantObjects::Sequences(_)) => {
                return Err(SqlError::unsupported("privileges on sequences are not supported"))
            }
            Some(ast::GrantObjects::Schemas(schemas)) => {
                return self.grant_on_schemas(privileges, schemas, grantees, grant)
            }
            Some(ast::GrantObjects::Databases(_)) => {
                return Err(SqlError::unsupported("privileges on databases are not supported"))
            }
            Some(ast::GrantObjects::AllTablesInSchema { .. }) => {
                return Err(SqlError::unsupported("ON ALL TABLES IN SCHEMA is not supported"))
            }
            None => return Err(SqlError::unsupported("role membership is not supported")),
            Some(other) => {
                return Err(SqlError::unsupported(format!(
                    "privileges on {other} are not supported"
                )))
            }
        };
        let bits = privilege_bits(privileges)?;
        let _guard = self.catalog.lock_ddl();
        let mut acls = Vec::new();
        for table in tables {
            let name = self.namespace().existing_table(table)?;
            if self.catalog.table(&name).is_none() {
                return Err(SqlError::undefined_table(&name));
            }
            let acl = self.catalog.table_acl(&name);
            acls.push((name, acl));
        }
        for (name, acl) in self.changed_acls(acls, grantees, bits, grant, permission_denied)? {
            self.catalog.set_table_acl(&name, acl)?;
        }
        Ok(Output::command(if grant { CommandTag::Grant } else { CommandTag::Revoke }))
    }

    /// The objects' ACLs after granting (or revoking) `bits` to `grantees`: 42501 from
    /// `denied` unless the session's role is a superuser or owns every object. The caller
    /// holds the DDL lock.
    pub(super) fn changed_acls(
        &self,
        acls: Vec<(String, TableAcl)>,
        grantees: &[ast::Grantee],
        bits: u8,
        grant: bool,
        denied: fn(&str) -> SqlError,
    ) -> Result<Vec<(String, TableAcl)>> {
        let grantees = grantees
            .iter()
            .map(|grantee| self.grantee_oid(grantee))
            .collect::<Result<Vec<u32>>>()?;
        let mut changed = Vec::with_capacity(acls.len());
        for (name, mut acl) in acls {
            if !self.is_superuser() && acl.owner != self.role_oid() {
                return Err(denied(&name));
            }
            for &grantee in &grantees {
                acl.change(grantee, bits, grant);
            }
            changed.push((name, acl));
        }
        Ok(changed)
    }

    pub(super) fn grantee_oid(&self, grantee: &ast::Grantee) -> Result<u32> {
        match (&grantee.grantee_type, &grantee.name) {
            (ast::GranteesType::Public, _) => Ok(PUBLIC_GRANTEE),
            (
                ast::GranteesType::Role | ast::GranteesType::None,
                Some(ast::GranteeName::ObjectName(name)),
            ) => {
                let name = object_name(name)?;
                if name == "public" {
                    return Ok(PUBLIC_GRANTEE);
                }
                self.catalog.role(&name).map(|role| role.oid).ok_or_else(|| undefined_role(&name))
            }
            _ => Err(SqlError::unsupported(format!("grantee {grantee} is not supported"))),
        }
    }
}

/// The privileges a non-DML statement needs: None is ownership.
fn sql_needs(catalog: &Catalog, sql: &ast::Statement) -> Result<Vec<(String, Option<Privilege>)>> {
    let owned = |name: &ast::ObjectName| object_name(name).map(|name| (name, None));
    Ok(match sql {
        ast::Statement::Explain { statement, .. } => sql_needs(catalog, statement)?,
        ast::Statement::Truncate(truncate) => truncate
            .table_names
            .iter()
            .map(|target| object_name(&target.name).map(|name| (name, Some(Privilege::Truncate))))
            .collect::<Result<_>>()?,
        ast::Statement::AlterTable(alter) => vec![owned(&alter.name)?],
        ast::Statement::CreateIndex(create) => vec![owned(&create.table_name)?],
        ast::Statement::Drop {
            object_type: ast::ObjectType::Table | ast::ObjectType::View,
            names,
            ..
        } => names.iter().map(owned).collect::<Result<_>>()?,
        ast::Statement::Drop { object_type: ast::ObjectType::Index, names, .. } => {
            let mut tables = Vec::new();
            for name in names {
                let index = object_name(name)?;
                let table = catalog
                    .tables()
                    .into_iter()
                    .find(|table| table.indexes.iter().any(|existing| existing.name == index));
                tables.extend(table.map(|table| (table.name.clone(), None)));
            }
            tables
        }
        // The creator reads the tables the query names (their privileges are not checked
        // again when the view is used: docs/design/018); OR REPLACE needs the view's owner.
        ast::Statement::CreateView(create) => {
            let query = ast::Statement::Query(create.query.clone());
            let reads =
                required(&query).into_iter().map(|(name, privilege)| (name, Some(privilege)));
            let mut needs: Vec<(String, Option<Privilege>)> = reads.collect();
            if create.or_replace {
                needs.push(owned(&create.name)?);
            }
            needs
        }
        other => {
            required(other).into_iter().map(|(name, privilege)| (name, Some(privilege))).collect()
        }
    })
}

/// The privilege bits a GRANT or REVOKE names; 0A000 for column lists and other kinds.
fn privilege_bits(privileges: &ast::Privileges) -> Result<u8> {
    let actions = match privileges {
        ast::Privileges::All { .. } => return Ok(Privilege::ALL.iter().map(|p| p.bit()).sum()),
        ast::Privileges::Actions(actions) => actions,
    };
    let mut bits = 0;
    for action in actions {
        let privilege = match action {
            ast::Action::Select { columns: None } => Privilege::Select,
            ast::Action::Insert { columns: None } => Privilege::Insert,
            ast::Action::Update { columns: None } => Privilege::Update,
            ast::Action::Delete => Privilege::Delete,
            ast::Action::Truncate => Privilege::Truncate,
            ast::Action::Select { .. }
            | ast::Action::Insert { .. }
            | ast::Action::Update { .. } => {
                return Err(SqlError::unsupported("column privileges are not supported"))
            }
            other => {
                return Err(SqlError::unsupported(format!("privilege {other} is not supported")))
            }
        };
        bits |= privilege.bit();
    }
    Ok(bits)
}
