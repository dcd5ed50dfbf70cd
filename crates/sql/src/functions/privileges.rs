//! has_table_privilege, has_schema_privilege and pg_has_role: whether a role holds privileges on a
//! relation or a schema, answered from the catalog's grants (exec/privilege_checks.rs).
//! Forms: (object, privileges) for the session's role, (role, object, privileges) with the
//! role by name or OID; the object by name or OID (an OID naming nothing gives NULL, a name
//! naming nothing PostgreSQL's error); `privileges` a comma-separated list, true when any
//! is held.

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// What a privilege function asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivilegeTarget {
    Table,
    Schema,
    /// pg_has_role: the object is a role.
    Role,
}

/// One privilege named in the list: PostgreSQL's names, and whether WITH GRANT OPTION
/// was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedPrivilege {
    pub name: &'static str,
    pub grant_option: bool,
}

/// A privilege question for the executor.
pub struct PrivilegeCall<'a> {
    pub target: PrivilegeTarget,
    /// None: the session's role.
    pub role: Option<&'a Datum>,
    pub object: &'a Datum,
    pub privileges: &'a [NamedPrivilege],
}

const TABLE_PRIVILEGES: &[&str] =
    &["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"];
const SCHEMA_PRIVILEGES: &[&str] = &["USAGE", "CREATE"];
/// PostgreSQL 15's pg_has_role privileges.
const ROLE_PRIVILEGES: &[&str] = &["MEMBER", "USAGE"];

pub(super) fn has_table_privilege(call: Call<'_>) -> Result<Datum> {
    has_privilege(call, PrivilegeTarget::Table)
}

pub(super) fn has_schema_privilege(call: Call<'_>) -> Result<Datum> {
    has_privilege(call, PrivilegeTarget::Schema)
}

/// pg_has_role([role,] role, privileges): whether a role is, or is a member of, another
/// (psql's `\l+` asks it of pg_read_all_stats).
pub(super) fn pg_has_role(call: Call<'_>) -> Result<Datum> {
    has_privilege(call, PrivilegeTarget::Role)
}

fn has_privilege(call: Call<'_>, target: PrivilegeTarget) -> Result<Datum> {
    let (role, object, list) = match call.args.as_slice() {
        [object, list] => (None, object, list),
        [role, object, list] => (Some(role), object, list),
        _ => unreachable!("the registry admits two or three arguments"),
    };
    let names = match target {
        PrivilegeTarget::Table => TABLE_PRIVILEGES,
        PrivilegeTarget::Schema => SCHEMA_PRIVILEGES,
        PrivilegeTarget::Role => ROLE_PRIVILEGES,
    };
    let privileges = parse_privileges(list.as_text().unwrap_or(""), names)?;
    let call_privileges = PrivilegeCall { target, role, object, privileges: &privileges };
    Ok((call.context.has_privilege)(call_privileges)?.map_or(Datum::Null, Datum::Bool))
}

const DATABASE_PRIVILEGES: &[&str] = &["CREATE", "CONNECT", "TEMPORARY", "TEMP"];

/// has_database_privilege([role,] database, privileges) over tierdb's one database: CONNECT
/// and TEMPORARY are PostgreSQL's defaults for PUBLIC and tierdb has no database GRANTs, so
/// they are held; CREATE (of schemas) is not built, so it is held by no one. A database by
/// OID that is not this one gives NULL, by name 3D000.
pub(super) fn has_database_privilege(call: Call<'_>) -> Result<Datum> {
    let (database, list) = match call.args.as_slice() {
        [database, list] | [_, database, list] => (database, list),
        _ => unreachable!("the registry admits two or three arguments"),
    };
    if !this_database(database, call.context.database)? {
        return Ok(Datum::Null);
    }
    let privileges = parse_privileges(list.as_text().unwrap_or(""), DATABASE_PRIVILEGES)?;
    Ok(Datum::Bool(privileges.iter().any(|privilege| privilege.name != "CREATE")))
}

/// Whether a database argument (a name or an OID) is the session's database: false for an
/// OID naming no database, 3D000 for a name naming none.
pub(super) fn this_database(database: &Datum, current: &str) -> Result<bool> {
    match database {
        Datum::Text(name) if name == current => Ok(true),
        Datum::Text(name) => {
            Err(SqlError::new("3D000", format!("database \"{name}\" does not exist")))
        }
        other => Ok(other.as_int() == Some(crate::types::DATABASE_OID)),
    }
}

/// PostgreSQL's convert_any_priv_string: comma-separated names, any case, blanks around
/// them, each optionally followed by WITH GRANT OPTION; 22023 for anything else.
fn parse_privileges(list: &str, names: &[&'static str]) -> Result<Vec<NamedPrivilege>> {
    let mut privileges = Vec::new();
    for item in list.split(',') {
        let words: Vec<String> = item.split_whitespace().map(str::to_ascii_uppercase).collect();
        let (name, grant_option) = match words.as_slice() {
            [name] => (name.as_str(), false),
            // A role's privileges take WITH ADMIN OPTION as well (pg_has_role).
            [name, with, grant, option]
                if with == "WITH"
                    && (grant == "GRANT" || (grant == "ADMIN" && names == ROLE_PRIVILEGES))
                    && option == "OPTION" =>
            {
                (name.as_str(), true)
            }
            _ => return Err(unrecognized(item)),
        };
        let Some(name) = names.iter().find(|known| **known == name) else {
            return Err(unrecognized(item));
        };
        privileges.push(NamedPrivilege { name, grant_option });
    }
    Ok(privileges)
}

fn unrecognized(item: &str) -> SqlError {
    SqlError::new("22023", format!("unrecognized privilege type: \"{}\"", item.trim()))
}

/// pg_size_pretty(bigint | numeric): bytes up to 10 kB, then kB, MB, GB, TB and PB, each
/// rounded half away from zero, as PostgreSQL 15's dbsize.c.
pub(super) fn size_pretty(call: Call<'_>) -> Result<Datum> {
    let size = match &call.args[0] {
        // A numeric under the first limit prints as itself (with its scale).
        Datum::Numeric(value) if value.abs() < rust_decimal::Decimal::from(SIZE_UNITS[0].1) => {
            return Ok(Datum::Text(format!("{value} bytes")));
        }
        Datum::Numeric(value) => value
            .trunc()
            .to_string()
            .parse::<i128>()
            .map_err(|_| SqlError::out_of_range("numeric"))?,
        other => i128::from(other.as_int().ok_or_else(|| SqlError::out_of_range("bigint"))?),
    };
    Ok(Datum::Text(pretty_size(size)))
}

/// The units of pg_size_pretty: name, the limit below which it is used, whether the value
/// is rounded, and its power of two.
const SIZE_UNITS: &[(&str, i128, bool, u32)] = &[
    ("bytes", 10 * 1024, false, 0),
    ("kB", 20 * 1024 - 1, true, 10),
    ("MB", 20 * 1024 - 1, true, 20),
    ("GB", 20 * 1024 - 1, true, 30),
    ("TB", 20 * 1024 - 1, true, 40),
    ("PB", 20 * 1024 - 1, true, 50),
];

fn pretty_size(mut size: i128) -> String {
    for (index, &(name, limit, round, bits)) in SIZE_UNITS.iter().enumerate() {
        let next = SIZE_UNITS.get(index + 1);
        if next.is_none() || size.abs() < limit {
            if round {
                size = (size + if size < 0 { -1 } else { 1 }) / 2;
            }
            return format!("{size} {name}");
        }
        let (_, _, next_round, next_bits) = *next.expect("checked above");
        // One bit less when the next unit halves with rounding (PostgreSQL's scheme).
        let shift = next_bits - bits - u32::from(next_round) + u32::from(round);
        size /= 1_i128 << shift;
    }
    unreachable!("the last unit always answers")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_postgresql_prints_them() {
        assert_eq!(pretty_size(0), "0 bytes");
        assert_eq!(pretty_size(10 * 1024 - 1), "10239 bytes");
        assert_eq!(pretty_size(10 * 1024), "10 kB");
        assert_eq!(pretty_size(123_456_789), "118 MB");
        assert_eq!(pretty_size(-123_456_789), "-118 MB");
        assert_eq!(pretty_size(i128::from(i64::MAX)), "8192 PB");
    }

    #[test]
    fn privilege_lists_parse_as_postgresql_parses_them() {
        let parsed = parse_privileges(" select , Insert WITH GRANT OPTION", TABLE_PRIVILEGES);
        let parsed = parsed.expect("valid");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0], NamedPrivilege { name: "SELECT", grant_option: false });
        assert_eq!(parsed[1], NamedPrivilege { name: "INSERT", grant_option: true });
        assert!(parse_privileges("usage", TABLE_PRIVILEGES).is_err());
        assert!(parse_privileges("", SCHEMA_PRIVILEGES).is_err());
    }
}
