//! Role and privilege behaviours that once differed from PostgreSQL 15 (issue 10's list),
//! each checked against a PostgreSQL 15 server: VACUUM by a non-owner, other roles'
//! statement texts in tierdb_stat_statements.

use crate::support;

use support::{message, rows, run, session_as, setup, with_session};
use tierdb_sql::Datum;

/// PostgreSQL 15 (vacuum_is_relation_owner): a non-owner's VACUUM skips each table it does
/// not own with WARNING 01000, named or reached by a bare VACUUM, and succeeds.
#[test]
fn vacuum_by_a_non_owner_skips_other_tables_with_a_warning() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE USER alice",
                "CREATE TABLE boss (a int)",
                "GRANT CREATE ON SCHEMA public TO alice",
            ],
        );
        let mut alice = session_as(session, "alice");
        setup(&mut alice, &["CREATE TABLE mine (a int)"]);
        let skipped = |table: &str| {
            (
                "01000",
                format!("skipping \"{table}\" --- only table or database owner can vacuum it"),
            )
        };
        let warnings = |session: &mut tierdb_sql::Session| -> Vec<(&'static str, String)> {
            session.take_warnings().into_iter().map(|w| (w.sqlstate, w.message)).collect()
        };
        run(&mut alice, "VACUUM boss").expect("a skipped table is no error");
        assert_eq!(warnings(&mut alice), [skipped("boss")]);
        run(&mut alice, "VACUUM mine").expect("its own table");
        assert_eq!(warnings(&mut alice), []);
        run(&mut alice, "VACUUM").expect("a bare VACUUM");
        assert_eq!(warnings(&mut alice), [skipped("boss")]);
        run(&mut alice, "VACUUM mine, boss").expect("both");
        assert_eq!(warnings(&mut alice), [skipped("boss")]);
        assert_eq!(message(&mut alice, "VACUUM nosuch").0, "42P01");
        run(session, "VACUUM").expect("the superuser vacuums everything");
        assert_eq!(warnings(session), []);
    });
}

/// As pg_stat_statements read without pg_read_all_stats: entries are kept per role
/// (`userid`), and other roles' texts read `<insufficient privilege>` to a non-superuser.
#[test]
fn other_roles_statement_texts_are_hidden_from_non_superusers() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE TABLE boss (a int)"]);
        setup(session, &["GRANT SELECT ON boss TO alice", "SELECT a FROM boss WHERE a = 1"]);
        let mut alice = session_as(session, "alice");
        setup(&mut alice, &["SELECT a FROM boss WHERE a = 2"]);
        let alice_oid = i64::from(session.catalog().role("alice").unwrap().oid);
        let sql = "SELECT userid, query FROM tierdb_stat_statements \
                   WHERE query LIKE '%boss%' OR query LIKE '<insuff%' ORDER BY userid";
        let text = |text: &str| Datum::Text(text.to_string());
        let own = text("SELECT a FROM boss WHERE a = ?");
        let seen_by_alice = rows(&mut alice, sql).unwrap();
        assert!(
            seen_by_alice.contains(&vec![Datum::Int(alice_oid), own.clone()]),
            "{seen_by_alice:?}"
        );
        assert!(
            seen_by_alice.contains(&vec![Datum::Int(10), text("<insufficient privilege>")]),
            "{seen_by_alice:?}"
        );
        assert!(!seen_by_alice.contains(&vec![Datum::Int(10), own.clone()]), "{seen_by_alice:?}");
        let seen_by_superuser = rows(session, sql).unwrap();
        assert!(seen_by_superuser.contains(&vec![Datum::Int(10), own.clone()]));
        assert!(seen_by_superuser.contains(&vec![Datum::Int(alice_oid), own]));
    });
}

/// Role DDL, GRANT and REVOKE write their catalog rows at once: inside a transaction block
/// they are refused (0A000 naming the command), never done beyond a ROLLBACK's reach.
#[test]
fn role_ddl_inside_a_transaction_block_is_refused_not_made_permanent() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE TABLE t (a int)"]);
        for (sql, command) in [
            ("CREATE ROLE bob", "CREATE ROLE"),
            ("CREATE USER bob", "CREATE ROLE"),
            ("ALTER ROLE alice SUPERUSER", "ALTER ROLE"),
            ("DROP ROLE alice", "DROP ROLE"),
            ("GRANT SELECT ON t TO alice", "GRANT"),
            ("REVOKE CREATE ON SCHEMA public FROM alice", "REVOKE"),
        ] {
            setup(session, &["BEGIN"]);
            let refused = format!("{command} inside a transaction block is not supported");
            assert_eq!(message(session, sql), ("0A000", refused), "{sql}");
            setup(session, &["ROLLBACK"]);
        }
        assert!(session.catalog().role("bob").is_none());
        let alice = session.catalog().role("alice").expect("alice stays");
        assert!(!alice.superuser);
        let mut alice_session = session_as(session, "alice");
        assert_eq!(message(&mut alice_session, "SELECT a FROM t").0, "42501");
    });
}

/// `TO PUBLIC, role` is read as PostgreSQL reads it (sqlparser alone: a syntax error).
#[test]
fn public_may_come_first_in_a_grantee_list() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE USER bob", "CREATE TABLE t (a int)"]);
        setup(
            session,
            &["GRANT SELECT ON t TO PUBLIC, alice", "GRANT INSERT ON t TO bob, PUBLIC, alice"],
        );
        let mut bob = session_as(session, "bob");
        setup(&mut bob, &["SELECT a FROM t", "INSERT INTO t VALUES (1)"]);
        let outcomes = session
            .execute("REVOKE ALL ON t FROM PUBLIC, alice; REVOKE INSERT ON t FROM public , bob");
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        assert_eq!(message(&mut bob, "SELECT a FROM t").0, "42501");
        assert_eq!(message(&mut bob, "INSERT INTO t VALUES (1)").0, "42501");
        setup(session, &["DROP ROLE alice, bob"]);
        // A quoted "public" is a role name, not PUBLIC.
        assert_eq!(message(session, "GRANT SELECT ON t TO \"public\", x").0, "42704");
    });
}

/// As PostgreSQL, a session follows its role's OID: after ALTER ROLE ... RENAME,
/// current_user and session_user show the new name, and its privileges stay.
#[test]
fn current_user_shows_a_renamed_roles_new_name() {
    with_session(|session| {
        setup(
            session,
            &["CREATE USER alice", "CREATE TABLE t (a int)", "GRANT SELECT ON t TO alice"],
        );
        let mut alice = session_as(session, "alice");
        setup(&mut alice, &["SELECT a FROM t"]);
        setup(session, &["ALTER ROLE alice RENAME TO alicia"]);
        let names = rows(&mut alice, "SELECT current_user, session_user").unwrap();
        let alicia = Datum::Text("alicia".to_string());
        assert_eq!(names, [vec![alicia.clone(), alicia]]);
        setup(&mut alice, &["SELECT a FROM t"]);
        assert_eq!(message(&mut alice, "INSERT INTO t VALUES (1)").0, "42501");
    });
}

/// COPY (query) TO checks the query once, as it runs: SELECT on what it reads.
#[test]
fn copy_of_a_query_needs_select_on_what_it_reads() {
    with_session(|session| {
        setup(session, &["CREATE USER alice", "CREATE TABLE t (a int)", "CREATE TABLE u (a int)"]);
        setup(session, &["GRANT SELECT ON u TO alice"]);
        let mut alice = session_as(session, "alice");
        let denied = ("42501", "permission denied for table t".to_string());
        assert_eq!(message(&mut alice, "COPY (SELECT a FROM t) TO STDOUT"), denied);
        let joined = "COPY (SELECT u.a FROM u JOIN t ON t.a = u.a) TO STDOUT";
        assert_eq!(message(&mut alice, joined), denied);
        setup(&mut alice, &["COPY (SELECT a FROM u) TO STDOUT"]);
        // The role found by OID follows a drop: the session holds nothing any more.
        setup(session, &["REVOKE ALL ON u FROM alice", "DROP ROLE alice"]);
        assert_eq!(message(&mut alice, "COPY (SELECT a FROM u) TO STDOUT").0, "42501");
    });
}
