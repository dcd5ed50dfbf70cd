//! CREATE/ALTER/DROP ROLE and CREATE USER in the SQL layer: what is stored (SCRAM verifiers
//! with their own salts, never the password), pg_roles and pg_user, who may do what, and
//! PostgreSQL 15's SQLSTATEs and messages (checked against a PostgreSQL 15 server).

use crate::support;

use std::sync::Arc;

use support::{message, rows, session_as, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, ScramVerifier, Session};

fn verifier_of(session: &Session, role: &str) -> Option<String> {
    session.catalog().role(role).expect("role exists").verifier.clone()
}

#[test]
fn create_role_stores_a_salted_verifier_and_lists_it_hidden() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE ROLE alice WITH LOGIN PASSWORD 'secret'",
                "CREATE ROLE bob LOGIN PASSWORD 'secret'",
                "CREATE USER carol",
                "CREATE ROLE admin SUPERUSER NOLOGIN",
            ],
        );
        let alice = verifier_of(session, "alice").expect("a verifier");
        let bob = verifier_of(session, "bob").expect("a verifier");
        assert!(!alice.contains("secret"), "{alice}");
        let (alice, bob) =
            (ScramVerifier::parse(&alice).unwrap(), ScramVerifier::parse(&bob).unwrap());
        assert_ne!(alice.salt, bob.salt, "each password gets its own salt");
        assert_eq!(alice, ScramVerifier::from_password("secret", &alice.salt, alice.iterations));
        assert_eq!(verifier_of(session, "carol"), None);

        let listed = rows(
            session,
            "SELECT rolname, rolsuper, rolcanlogin, rolpassword FROM pg_roles ORDER BY rolname",
        )
        .unwrap();
        let expected = [
            ("admin", true, false),
            ("alice", false, true),
            ("bob", false, true),
            ("carol", false, true),
            ("tierdb", true, true),
        ];
        let expected: Vec<Vec<Datum>> = expected
            .iter()
            .map(|(name, superuser, login)| {
                vec![
                    Datum::Text(name.to_string()),
                    Datum::Bool(*superuser),
                    Datum::Bool(*login),
                    Datum::Text("********".into()),
                ]
            })
            .collect();
        assert_eq!(listed, expected);
        let users = rows(session, "SELECT usename FROM pg_user ORDER BY usename").unwrap();
        assert_eq!(users.len(), 4, "NOLOGIN roles are not users: {users:?}");
        let bootstrap = value(session, "SELECT oid FROM pg_roles WHERE rolname = 'tierdb'");
        assert_eq!(bootstrap.unwrap(), Datum::Int(10));
    });
}

#[test]
fn passwords_given_as_verifiers_md5_and_null() {
    with_session(|session| {
        let verifier = ScramVerifier::from_password("pw", b"0123456789abcdef", 4096).encode();
        setup(session, &[&format!("CREATE ROLE v LOGIN PASSWORD '{verifier}'")]);
        assert_eq!(verifier_of(session, "v"), Some(verifier), "stored as given");
        let md5 = "CREATE ROLE m PASSWORD 'md5d8578edf8458ce06fbc5bb76a58c5ca4'";
        assert_eq!(sqlstate(session, md5), "0A000");
        assert_eq!(sqlstate(session, "CREATE ROLE m PASSWORD 'SCRAM-SHA-256$1:x'"), "22023");
        setup(session, &["ALTER ROLE v PASSWORD NULL"]);
        assert_eq!(verifier_of(session, "v"), None);
        setup(session, &["ALTER ROLE v PASSWORD 'x'", "ALTER ROLE v WITH PASSWORD ''"]);
        assert_eq!(verifier_of(session, "v"), None, "an empty password clears it");
    });
}

#[test]
fn postgresql_errors_for_role_ddl() {
    with_session(|session| {
        setup(session, &["CREATE ROLE alice"]);
        let cases: &[(&str, &str, &str)] = &[
            ("CREATE ROLE alice", "42710", "role \"alice\" already exists"),
            ("DROP ROLE nobody", "42704", "role \"nobody\" does not exist"),
            ("ALTER ROLE nobody LOGIN", "42704", "role \"nobody\" does not exist"),
            ("CREATE ROLE public", "42939", "role name \"public\" is reserved"),
            ("CREATE ROLE pg_x", "42939", "role name \"pg_x\" is reserved"),
            ("DROP ROLE tierdb", "55006", "current user cannot be dropped"),
            ("ALTER ROLE alice LOGIN NOLOGIN", "42601", "conflicting or redundant options"),
            ("ALTER ROLE tierdb RENAME TO boss", "0A000", "session user cannot be renamed"),
            ("CREATE ROLE c CREATEDB", "0A000", "role option CREATEDB is not supported"),
            (
                "CREATE ROLE c CONNECTION LIMIT 3",
                "0A000",
                "role option CONNECTION LIMIT is not supported",
            ),
            ("CREATE ROLE c IN ROLE alice", "0A000", "role option IN ROLE is not supported"),
            ("ALTER ROLE alice CREATEROLE", "0A000", "role option CREATEROLE is not supported"),
            (
                "ALTER ROLE alice VALID UNTIL 'infinity'",
                "0A000",
                "role option VALID UNTIL is not supported",
            ),
        ];
        for (sql, code, text) in cases {
            assert_eq!(message(session, sql), (*code, text.to_string()), "{sql}");
        }
        setup(session, &["DROP ROLE IF EXISTS nobody, alice", "CREATE ROLE alice"]);
        setup(session, &["ALTER ROLE alice RENAME TO alicia", "DROP USER alicia"]);
        assert!(session.catalog().roles().iter().all(|role| role.name == "tierdb"));
    });
}

#[test]
fn only_superusers_manage_roles_and_users_change_their_own_password() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE USER alice PASSWORD 'a'",
                "CREATE USER bob",
                "CREATE ROLE boss SUPERUSER LOGIN",
            ],
        );
        let mut alice = session_as(session, "alice");
        assert_eq!(value(&mut alice, "SELECT current_user").unwrap(), Datum::Text("alice".into()));
        assert_eq!(value(&mut alice, "SELECT current_role").unwrap(), Datum::Text("alice".into()));
        assert_eq!(value(&mut alice, "SHOW is_superuser").unwrap(), Datum::Text("off".into()));
        assert_eq!(value(session, "SHOW is_superuser").unwrap(), Datum::Text("on".into()));
        let denied: &[(&str, &str)] = &[
            ("CREATE ROLE x", "permission denied to create role"),
            ("ALTER ROLE bob PASSWORD 'b'", "permission denied"),
            ("ALTER ROLE alice NOLOGIN", "permission denied"),
            (
                "ALTER ROLE alice SUPERUSER",
                "must be superuser to alter superuser roles or change superuser attribute",
            ),
            (
                "ALTER ROLE boss PASSWORD 'b'",
                "must be superuser to alter superuser roles or change superuser attribute",
            ),
            ("DROP ROLE bob", "permission denied to drop role"),
            ("ALTER ROLE bob RENAME TO robert", "permission denied to rename role"),
        ];
        for (sql, text) in denied {
            assert_eq!(message(&mut alice, sql), ("42501", text.to_string()), "{sql}");
        }
        let before = verifier_of(session, "alice");
        setup(&mut alice, &["ALTER ROLE alice WITH PASSWORD 'new'"]);
        let after = ScramVerifier::parse(&verifier_of(session, "alice").unwrap()).unwrap();
        assert_ne!(Some(after.encode()), before);
        assert_eq!(after, ScramVerifier::from_password("new", &after.salt, after.iterations));

        // A second superuser manages roles, but cannot drop the bootstrap superuser.
        let mut boss = session_as(session, "boss");
        setup(&mut boss, &["ALTER ROLE bob SUPERUSER", "DROP ROLE alice"]);
        assert_eq!(
            message(&mut boss, "DROP ROLE tierdb"),
            (
                "2BP01",
                "cannot drop role tierdb because it is required by the database system".into()
            )
        );
        assert!(session.catalog().role("bob").unwrap().superuser);
        // The dropped role's session has no privileges left.
        assert_eq!(sqlstate(&mut alice, "CREATE ROLE y"), "42501");
    });
}

/// The SQLSTATE and message of a statement run as `session`'s role.
fn denied(session: &mut Session, sql: &str) -> String {
    let (code, text) = message(session, sql);
    assert_eq!(code, "42501", "{sql}: {text}");
    text
}

/// Asserts that every statement fails with 42501 on table t.
fn all_denied_on_t(session: &mut Session, statements: &[&str]) {
    for sql in statements {
        assert_eq!(denied(session, sql), "permission denied for table t", "{sql}");
    }
}

#[test]
fn grant_and_revoke_are_checked_on_every_statement() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t (a int PRIMARY KEY, b int)",
                "INSERT INTO t VALUES (1, 10)",
                "CREATE USER alice",
                "CREATE USER bob",
            ],
        );
        let mut alice = session_as(session, "alice");
        let table_denied = "permission denied for table t".to_string();
        let statements = [
            "SELECT * FROM t",
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM t)",
            "WITH x AS (SELECT a FROM t) SELECT * FROM x",
            "INSERT INTO t VALUES (2, 20)",
            "UPDATE t SET b = 0",
            "DELETE FROM t",
            "TRUNCATE t",
            "EXPLAIN SELECT * FROM t",
            "COPY t TO STDOUT",
        ];
        all_denied_on_t(&mut alice, &statements);
        // Each privilege lets in exactly its statements.
        setup(session, &["GRANT INSERT, UPDATE ON TABLE t TO alice"]);
        setup(&mut alice, &["INSERT INTO t VALUES (2, 20)", "UPDATE t SET b = 0"]);
        // UPDATE reading columns (WHERE, SET from columns, RETURNING) also needs SELECT.
        let statements = [
            "UPDATE t SET b = 1 WHERE a = 1",
            "UPDATE t SET b = b + 1",
            "UPDATE t SET b = 1 RETURNING a",
            "INSERT INTO t VALUES (3, 30) RETURNING a",
            "INSERT INTO t SELECT a + 10, b FROM t",
            "SELECT a FROM t",
        ];
        all_denied_on_t(&mut alice, &statements);
        setup(session, &["GRANT SELECT, DELETE ON t TO alice"]);
        setup(&mut alice, &["UPDATE t SET b = b + 1 WHERE a = 1", "DELETE FROM t WHERE a = 2"]);
        assert_eq!(denied(&mut alice, "TRUNCATE t"), table_denied);
        assert_eq!(denied(&mut alice, "DROP TABLE t"), "must be owner of table t");
        assert_eq!(denied(&mut alice, "CREATE INDEX t_b ON t (b)"), "must be owner of table t");
        assert_eq!(denied(&mut alice, "GRANT SELECT ON t TO bob"), table_denied);
        setup(session, &["REVOKE SELECT, INSERT, UPDATE ON t FROM alice"]);
        assert_eq!(denied(&mut alice, "SELECT a FROM t"), table_denied);
        setup(&mut alice, &["DELETE FROM t"]);

        // PUBLIC and ALL PRIVILEGES.
        let mut bob = session_as(session, "bob");
        setup(session, &["GRANT ALL PRIVILEGES ON t TO PUBLIC", "INSERT INTO t VALUES (5, 50)"]);
        assert_eq!(rows(&mut bob, "SELECT a FROM t").unwrap(), vec![vec![Datum::Int(5)]]);
        setup(&mut bob, &["TRUNCATE t"]);
        setup(session, &["REVOKE ALL ON t FROM public"]);
        assert_eq!(denied(&mut bob, "SELECT a FROM t"), table_denied);
    });
}

#[test]
fn owners_manage_their_tables_and_owning_roles_cannot_be_dropped() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE USER bob"]);
        let mut alice = session_as(session, "alice");
        let mut bob = session_as(session, "bob");
        setup(session, &["GRANT CREATE ON SCHEMA public TO alice"]);
        setup(&mut alice, &["CREATE TABLE mine (a int)", "INSERT INTO mine VALUES (1)"]);
        assert_eq!(denied(&mut bob, "SELECT * FROM mine"), "permission denied for table mine");
        setup(&mut alice, &["GRANT SELECT ON mine TO bob"]);
        assert_eq!(rows(&mut bob, "SELECT a FROM mine").unwrap().len(), 1);
        assert_eq!(rows(session, "SELECT a FROM mine").unwrap().len(), 1, "superusers bypass");
        let depends =
            ("2BP01", "role \"alice\" cannot be dropped because some objects depend on it");
        assert_eq!(message(session, "DROP ROLE alice"), (depends.0, depends.1.to_string()));
        let bob_depends = "role \"bob\" cannot be dropped because some objects depend on it";
        assert_eq!(message(session, "DROP ROLE bob"), ("2BP01", bob_depends.to_string()));
        setup(&mut alice, &["CREATE INDEX mine_a ON mine (a)", "DROP TABLE mine"]);
        // Its privilege on schema public is a dependency too, as in PostgreSQL.
        assert_eq!(message(session, "DROP ROLE alice"), (depends.0, depends.1.to_string()));
        setup(session, &["REVOKE CREATE ON SCHEMA public FROM alice", "DROP ROLE alice, bob"]);
    });
}

#[test]
fn unsupported_grants_are_0a000_and_unknown_grantees_42704() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (a int)", "CREATE USER alice"]);
        for sql in [
            "GRANT SELECT (a) ON t TO alice",
            "GRANT SELECT ON t TO alice WITH GRANT OPTION",
            "GRANT SELECT ON ALL TABLES IN SCHEMA public TO alice",
            "GRANT USAGE ON SEQUENCE s TO alice",
            "GRANT CREATE ON SCHEMA pg_catalog TO alice",
            "GRANT REFERENCES ON t TO alice",
        ] {
            assert_eq!(sqlstate(session, sql), "0A000", "{sql}");
        }
        assert_eq!(
            message(session, "GRANT SELECT ON t TO nobody"),
            ("42704", "role \"nobody\" does not exist".to_string())
        );
        assert_eq!(sqlstate(session, "GRANT SELECT ON missing TO alice"), "42P01");
    });
}

#[test]
fn pg_class_and_pg_tables_show_owners() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE USER alice",
                "CREATE TABLE boss_table (a int)",
                "GRANT CREATE ON SCHEMA public TO alice",
            ],
        );
        let mut alice = session_as(session, "alice");
        setup(&mut alice, &["CREATE TABLE alice_table (a int PRIMARY KEY)"]);
        let owners = rows(
            session,
            "SELECT tablename, tableowner FROM pg_tables WHERE tablename LIKE '%_table' ORDER BY tablename",
        )
        .unwrap();
        let expected = [["alice_table", "alice"], ["boss_table", "tierdb"]]
            .map(|row| row.map(|value| Datum::Text(value.to_string())).to_vec())
            .to_vec();
        assert_eq!(owners, expected);
        let alice_oid = value(session, "SELECT oid FROM pg_roles WHERE rolname = 'alice'").unwrap();
        let relowner = "SELECT relowner FROM pg_class WHERE relname = 'alice_table'";
        assert_eq!(value(session, relowner).unwrap(), alice_oid);
    });
}

#[test]
fn set_role_and_session_authorization_are_refused() {
    with_session(|session| {
        setup(session, &["CREATE USER alice"]);
        for sql in ["SET ROLE alice", "SET SESSION AUTHORIZATION alice", "SET role = 'alice'"] {
            let (code, text) = message(session, sql);
            assert_eq!(code, "0A000", "{sql}: {text}");
        }
        setup(session, &["SET ROLE NONE"]);
        assert_eq!(value(session, "SELECT current_user").unwrap(), Datum::Text("tierdb".into()));
    });
}

/// Findings of the security review of the first version: each shape below read or changed
/// what the role may not (or diverged from PostgreSQL 15).
#[test]
fn review_findings_stay_closed() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE secret (s text PRIMARY KEY)",
                "INSERT INTO secret VALUES ('hidden')",
                "CREATE USER mallory",
            ],
        );
        let mut mallory = session_as(session, "mallory");
        // COPY's table and column names are quoted into the query it runs, and that query
        // is checked too: no name can smuggle in another table.
        let (code, _) = message(&mut mallory, "COPY \"secret s\" TO STDOUT");
        assert_eq!(code, "42P01");
        assert_eq!(
            denied(&mut mallory, "COPY secret TO STDOUT"),
            "permission denied for table secret"
        );
        // Locking rows needs UPDATE as well as SELECT.
        setup(session, &["GRANT SELECT ON secret TO mallory"]);
        assert_eq!(rows(&mut mallory, "SELECT s FROM secret").unwrap().len(), 1);
        assert_eq!(
            denied(&mut mallory, "SELECT s FROM secret FOR UPDATE"),
            "permission denied for table secret"
        );
        assert_eq!(
            denied(&mut mallory, "CHECKPOINT"),
            "must be superuser or have privileges of pg_checkpoint to do CHECKPOINT"
        );
        // Defaults cannot hold subqueries (they would read with the inserter's rights).
        setup(session, &["GRANT CREATE ON SCHEMA public TO mallory"]);
        let (code, text) =
            message(&mut mallory, "CREATE TABLE leak (x text DEFAULT (SELECT max(s) FROM secret))");
        assert_eq!((code, text.as_str()), ("0A000", "cannot use subquery in DEFAULT expression"));
        // The catalog's OID counter is not a sequence SQL may advance.
        assert_eq!(message(&mut mallory, "SELECT nextval('tierdb_oid')").0, "42P01");
        // CREATE USER makes only itself LOGIN.
        let outcomes = session.execute("CREATE USER app; CREATE ROLE readers");
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        let logins = rows(
            session,
            "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname IN ('app', 'readers') ORDER BY 1",
        )
        .unwrap();
        assert_eq!(
            logins,
            vec![
                vec![Datum::Text("app".into()), Datum::Bool(true)],
                vec![Datum::Text("readers".into()), Datum::Bool(false)],
            ]
        );
        // A session follows its role's OID: a new superuser role of the same name does not
        // make an old session a superuser.
        assert_eq!(rows(&mut mallory, "SELECT 1").unwrap().len(), 1);
        setup(
            session,
            &[
                "REVOKE ALL ON secret FROM mallory",
                "REVOKE ALL ON SCHEMA public FROM mallory",
                "DROP ROLE mallory",
                "CREATE ROLE mallory SUPERUSER LOGIN",
            ],
        );
        assert!(!mallory.is_superuser(), "the old session became the new role");
        let (code, _) = message(&mut mallory, "CREATE ROLE escalated SUPERUSER");
        assert_eq!(code, "42501");
    });
}

/// PostgreSQL 15 revoked CREATE on schema public from PUBLIC: a role that is neither a
/// superuser nor the database owner creates tables and indexes there only once granted
/// CREATE, and reaches public's tables only while it holds USAGE (PUBLIC has it).
#[test]
fn create_in_public_needs_the_schema_privilege_as_in_postgresql_15() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE TABLE shared (a int)"]);
        setup(session, &["GRANT SELECT ON shared TO alice"]);
        let mut alice = session_as(session, "alice");
        let schema_denied = "permission denied for schema public";
        for sql in [
            "CREATE TABLE mine (a int)",
            "CREATE TABLE public.mine (a int)",
            "CREATE TABLE IF NOT EXISTS shared (a int)",
        ] {
            assert_eq!(denied(&mut alice, sql), schema_denied, "{sql}");
        }
        assert_eq!(message(&mut alice, "CREATE TABLE pg_catalog.mine (a int)").0, "42501");
        setup(session, &["GRANT CREATE ON SCHEMA public TO alice"]);
        setup(&mut alice, &["CREATE TABLE mine (a int)", "CREATE INDEX mine_a ON mine (a)"]);
        setup(session, &["REVOKE CREATE ON SCHEMA public FROM alice"]);
        // Ownership is checked first, then CREATE in the table's schema (DefineIndex).
        let index_on_shared = "CREATE INDEX shared_a ON shared (a)";
        assert_eq!(denied(&mut alice, index_on_shared), "must be owner of table shared");
        assert_eq!(denied(&mut alice, "CREATE INDEX mine_b ON mine (a)"), schema_denied);
        assert_eq!(denied(&mut alice, "ALTER TABLE mine ADD PRIMARY KEY (a)"), schema_denied);
        setup(&mut alice, &["INSERT INTO mine VALUES (1)", "DROP INDEX mine_a"]);

        // USAGE: PUBLIC holds it; without it no table of public is reachable (PostgreSQL
        // answers 42P01 for the unqualified name: a difference SECURITY.md states).
        setup(session, &["REVOKE USAGE ON SCHEMA public FROM PUBLIC"]);
        assert_eq!(denied(&mut alice, "SELECT a FROM public.shared"), schema_denied);
        assert_eq!(denied(&mut alice, "SELECT a FROM mine"), schema_denied);
        assert_eq!(rows(session, "SELECT a FROM mine").unwrap().len(), 1, "superusers bypass");
        setup(session, &["GRANT USAGE ON SCHEMA public TO alice"]);
        assert_eq!(rows(&mut alice, "SELECT a FROM shared").unwrap().len(), 0);
        setup(session, &["GRANT ALL ON SCHEMA public TO PUBLIC"]);
        setup(&mut alice, &["CREATE TABLE again (a int)"]);

        // Only the owner (the database owner) or a superuser grants; errors as PostgreSQL's.
        let cases: &[(&str, &str, &str)] = &[
            ("GRANT CREATE ON SCHEMA public TO alice", "42501", schema_denied),
            (
                "GRANT SELECT ON SCHEMA public TO alice",
                "0LP01",
                "invalid privilege type SELECT for schema",
            ),
            ("GRANT USAGE ON SCHEMA nosuch TO alice", "3F000", "schema \"nosuch\" does not exist"),
        ];
        for (sql, code, text) in cases {
            assert_eq!(message(&mut alice, sql), (*code, text.to_string()), "{sql}");
        }
        // The ACL survives a restart of the catalog.
        let reopened = tierdb_sql::Catalog::open(Arc::clone(session.catalog().engine())).unwrap();
        let acl = reopened.schema_acl("public");
        assert!(acl.allows_bits(16_999, tierdb_sql::SchemaPrivilege::Create.bit()), "{acl:?}");
    });
}
