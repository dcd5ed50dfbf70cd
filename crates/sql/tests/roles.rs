//! CREATE/ALTER/DROP ROLE and CREATE USER in the SQL layer: what is stored (SCRAM verifiers
//! with their own salts, never the password), pg_roles and pg_user, who may do what, and
//! PostgreSQL 15's SQLSTATEs and messages (checked against a PostgreSQL 15 server).

mod support;

use std::sync::Arc;

use support::{rows, run, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, ScramVerifier, Session, StatementStats};

/// Another session on the same catalog, as role `user`.
fn session_as(session: &Session, user: &str) -> Session {
    let statistics = Arc::new(StatementStats::default());
    Session::new(Arc::clone(session.catalog()), statistics, "tierdb", user, 2)
}

fn message(session: &mut Session, sql: &str) -> (&'static str, String) {
    let error = run(session, sql).expect_err(sql);
    (error.sqlstate, error.message)
}

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
