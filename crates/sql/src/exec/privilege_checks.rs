//! The answers of has_table_privilege and has_schema_privilege (functions/privileges.rs)
//! from the catalog: superusers hold everything; a table's owner holds every privilege
//! and its grant options; other roles hold what was granted to them or to PUBLIC
//! (`TableAcl::allows`), never REFERENCES, TRIGGER or a grant option (tierdb grants
//! none of those). pg_catalog and information_schema relations are readable by every
//! role; their schemas usable by every role. Schema `public` follows its own ACL.

use super::objects::{missing, object_by_name};
use crate::bind::SCHEMA_PUBLIC;
use crate::catalog::{column_sequences, sequence_oid, Privilege, SchemaPrivilege, TableAcl};
use crate::error::Result;
use crate::functions::{NamedPrivilege, PrivilegeCall, PrivilegeTarget};
use crate::system::SessionInfo;
use crate::types::{Datum, ObjectKind};

/// Answers one privilege function call (None: the object's OID names nothing).
pub(super) fn has_privilege(
    call: PrivilegeCall<'_>,
    session: &SessionInfo<'_>,
) -> Result<Option<bool>> {
    let role = role_oid(call.role, session)?;
    let superuser = session.catalog.role_by_oid(role).is_some_and(|role| role.superuser);
    let kind = match call.target {
        PrivilegeTarget::Table => ObjectKind::Class,
        PrivilegeTarget::Schema => ObjectKind::Namespace,
        PrivilegeTarget::Role => return role_privilege(role, superuser, &call, session),
    };
    let Some(object) = object_oid(kind, call.object, session)? else { return Ok(None) };
    if superuser {
        return Ok(Some(true));
    }
    let answer = match call.target {
        PrivilegeTarget::Table => table_privilege(object, role, call.privileges, session),
        PrivilegeTarget::Schema => schema_privilege(object, role, call.privileges, session),
        PrivilegeTarget::Role => unreachable!("answered above"),
    };
    Ok(Some(answer))
}

/// PostgreSQL's predefined roles. tierdb grants them to no one, so only superusers (members
/// of every role in PostgreSQL) hold them.
const PREDEFINED_ROLES: &[&str] = &[
    "pg_checkpoint",
    "pg_database_owner",
    "pg_execute_server_program",
    "pg_monitor",
    "pg_read_all_data",
    "pg_read_all_settings",
    "pg_read_all_stats",
    "pg_read_server_files",
    "pg_signal_backend",
    "pg_stat_scan_tables",
    "pg_write_all_data",
    "pg_write_server_files",
];

/// pg_has_role: a superuser is a member of every role; a role holds MEMBER and USAGE of
/// itself (not WITH ADMIN OPTION); tierdb has no role membership otherwise. The role asked
/// about by name must exist (42704), by OID gives NULL when it names none.
fn role_privilege(
    role: u32,
    superuser: bool,
    call: &PrivilegeCall<'_>,
    session: &SessionInfo<'_>,
) -> Result<Option<bool>> {
    let target = if let Some(oid) = call.object.as_int() {
        match u32::try_from(oid).ok().and_then(|oid| session.catalog.role_by_oid(oid)) {
            Some(found) => Some(found.oid),
            None => return Ok(None),
        }
    } else {
        let name = call.object.as_text().unwrap_or("");
        match session.catalog.role(name) {
            Some(found) => Some(found.oid),
            None if PREDEFINED_ROLES.contains(&name) => None,
            None => return Err(missing(ObjectKind::Role, name)),
        }
    };
    if superuser {
        return Ok(Some(true));
    }
    let itself = target == Some(role);
    Ok(Some(itself && call.privileges.iter().any(|privilege| !privilege.grant_option)))
}

/// The role asked about: the session's, or one by name (42704 when none) or by OID.
fn role_oid(role: Option<&Datum>, session: &SessionInfo<'_>) -> Result<u32> {
    let Some(role) = role else {
        let current = session.catalog.role(session.user);
        return Ok(current.map_or(u32::MAX, |role| role.oid));
    };
    if let Some(oid) = role.as_int() {
        return Ok(u32::try_from(oid).unwrap_or(u32::MAX));
    }
    let name = role.as_text().unwrap_or("");
    match session.catalog.role(name) {
        Some(role) => Ok(role.oid),
        None => Err(missing(ObjectKind::Role, name)),
    }
}

/// The object asked about by OID (None when it names nothing) or by name (PostgreSQL's
/// error when it names nothing).
fn object_oid(kind: ObjectKind, object: &Datum, session: &SessionInfo<'_>) -> Result<Option<u32>> {
    if let Some(oid) = object.as_int() {
        let oid = u32::try_from(oid).unwrap_or(u32::MAX);
        return Ok(object_exists(kind, oid, session).then_some(oid));
    }
    let name = object.as_text().unwrap_or("");
    match object_by_name(kind, name, session)? {
        Some(reference) if reference.oid != 0 => Ok(Some(reference.oid)),
        _ => Err(missing(kind, name)),
    }
}

fn object_exists(kind: ObjectKind, oid: u32, session: &SessionInfo<'_>) -> bool {
    super::objects::reference(kind, oid, session).text.is_some()
}

fn table_privilege(
    oid: u32,
    role: u32,
    asked: &[NamedPrivilege],
    session: &SessionInfo<'_>,
) -> bool {
    let Some(acl) = relation_acl(oid, session) else {
        // A system relation: SELECT is granted to PUBLIC, nothing else.
        return asked.iter().any(|privilege| privilege.name == "SELECT" && !privilege.grant_option);
    };
    asked.iter().any(|privilege| acl_allows(&acl, role, privilege))
}

/// The ACL of user relation `oid`: a table's or a sequence's own; an index or a serial
/// column's sequence has none of its own, so only its table's owner holds privileges
/// (PostgreSQL's default ACL). None for a system relation.
fn relation_acl(oid: u32, session: &SessionInfo<'_>) -> Option<TableAcl> {
    let catalog = session.catalog;
    if let Some(sequence) =
        catalog.sequence_objects().into_iter().find(|sequence| sequence.oid == oid)
    {
        return Some(catalog.table_acl(&sequence.name));
    }
    for table in catalog.tables() {
        if table.oid == oid {
            return Some(catalog.table_acl(&table.name));
        }
        let is_index = table.indexes.iter().any(|index| index.oid == oid);
        let is_serial_sequence = column_sequences(&table)
            .any(|(position, _, _)| sequence_oid(table.oid, position) == Some(oid));
        if is_index || is_serial_sequence {
            return Some(TableAcl {
                owner: catalog.table_acl(&table.name).owner,
                grants: Vec::new(),
            });
        }
    }
    None
}

fn acl_allows(acl: &TableAcl, role: u32, asked: &NamedPrivilege) -> bool {
    if acl.owner == role {
        return true;
    }
    if asked.grant_option {
        return false;
    }
    let privilege = match asked.name {
        "SELECT" => Privilege::Select,
        "INSERT" => Privilege::Insert,
        "UPDATE" => Privilege::Update,
        "DELETE" => Privilege::Delete,
        "TRUNCATE" => Privilege::Truncate,
        _ => return false,
    };
    acl.allows(role, privilege)
}

fn schema_privilege(
    oid: u32,
    role: u32,
    asked: &[NamedPrivilege],
    session: &SessionInfo<'_>,
) -> bool {
    let name = super::objects::reference(ObjectKind::Namespace, oid, session).text;
    if name.as_deref() != Some(SCHEMA_PUBLIC) {
        // pg_catalog and information_schema: USAGE to PUBLIC, CREATE to superusers.
        return asked.iter().any(|privilege| privilege.name == "USAGE" && !privilege.grant_option);
    }
    let acl = session.catalog.schema_acl(SCHEMA_PUBLIC);
    asked.iter().any(|asked| {
        if acl.owner == role {
            return true;
        }
        let privilege =
            if asked.name == "USAGE" { SchemaPrivilege::Usage } else { SchemaPrivilege::Create };
        !asked.grant_option && acl.allows_bits(role, privilege.bit())
    })
}
