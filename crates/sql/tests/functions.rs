//! The function registry: every entry binds and evaluates its example call under every
//! name, strict entries give NULL for a NULL argument, functions tierdb refuses are refused
//! at bind time, and a few results are checked against PostgreSQL's.

use crate::support;

use support::{setup, sqlstate, value, with_session};
use tierdb_sql::{functions, Datum, Session};

/// The arguments of an example call, split at top-level commas (quoted text and ARRAY[...]
/// may hold some).
fn split_arguments(example: &str) -> Vec<String> {
    let mut arguments = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut brackets = 0usize;
    for c in example.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                current.push(c);
            }
            '[' | ']' if !quoted => {
                brackets = if c == '[' { brackets + 1 } else { brackets.saturating_sub(1) };
                current.push(c);
            }
            ',' if !quoted && brackets == 0 => {
                arguments.push(std::mem::take(&mut current).trim().to_string())
            }
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        arguments.push(current.trim().to_string());
    }
    arguments
}

/// The sequence the registry's nextval example calls (registry_example_id_seq), and the
/// HNSW index tierdb_check_vector_index's example checks (registry_example_v_idx).
fn create_example_sequence(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE registry_example (id serial PRIMARY KEY, v vector(3))",
            "CREATE INDEX registry_example_v_idx ON registry_example USING hnsw (v vector_l2_ops)",
        ],
    );
}

#[test]
fn every_entry_evaluates_its_example_under_every_name() {
    with_session(|session| {
        create_example_sequence(session);
        for function in functions() {
            let arguments = split_arguments(function.example);
            assert!(
                function.arguments.contains(&arguments.len()),
                "{}: the example's argument count is one the entry takes",
                function.name()
            );
            for name in function.names {
                let mut sql = format!("SELECT {name}({})", function.example);
                let mut result = value(session, &sql);
                // current_user, current_date and the like are keywords, called without
                // parentheses (with them they are a syntax error, as in PostgreSQL).
                if arguments.is_empty() && result.as_ref().is_err_and(|e| e.sqlstate == "42601") {
                    sql = format!("SELECT {name}");
                    result = value(session, &sql);
                }
                assert!(result.is_ok(), "{sql}: {:?}", result.err());
            }
        }
    });
}

#[test]
fn strict_entries_return_null_on_a_null_argument() {
    with_session(|session| {
        create_example_sequence(session);
        let mut checked = 0;
        for function in functions().filter(|function| function.strict) {
            let arguments = split_arguments(function.example);
            for position in 0..arguments.len() {
                let mut with_null = arguments.clone();
                with_null[position] = "NULL".to_string();
                let sql = format!("SELECT {}({})", function.name(), with_null.join(", "));
                let result = value(session, &sql);
                // pgvector's functions overloaded for halfvec and sparsevec: with only
                // untyped arguments PostgreSQL cannot choose one (42725), nor can tierdb.
                if result.as_ref().is_err_and(|error| error.sqlstate == "42725") {
                    continue;
                }
                // Polymorphic array functions with only an untyped NULL for their arrays and
                // elements: PostgreSQL cannot resolve the element type either (42804).
                if result.as_ref().is_err_and(|error| {
                    error.sqlstate == "42804" && error.message.contains("polymorphic")
                }) {
                    continue;
                }
                let result = result.unwrap_or_else(|error| panic!("{sql}: {error}"));
                assert_eq!(result, Datum::Null, "{sql}");
                checked += 1;
            }
        }
        assert!(checked > 50, "most entries are strict and take arguments ({checked} checked)");
    });
}

#[test]
fn non_strict_entries_see_their_null_arguments() {
    with_session(|session| {
        assert_eq!(value(session, "SELECT coalesce(NULL, 2)").unwrap(), Datum::Int(2));
        assert_eq!(
            value(session, "SELECT concat('a', NULL, 'b')").unwrap(),
            Datum::Text("ab".into())
        );
        assert_eq!(value(session, "SELECT greatest(1, NULL, 3)").unwrap(), Datum::Int(3));
        assert_eq!(value(session, "SELECT nullif(1, 1)").unwrap(), Datum::Null);
        assert_eq!(value(session, "SELECT pg_type_is_visible(NULL)").unwrap(), Datum::Bool(true));
        // pg_table_is_visible looks the OID up (temp tables hide permanent ones): NULL for NULL.
        assert_eq!(value(session, "SELECT pg_table_is_visible(NULL)").unwrap(), Datum::Null);
    });
}

#[test]
fn quote_literal_is_postgresqls() {
    with_session(|session| {
        // PostgreSQL 15: SELECT quote_literal('it''s'), quote_literal(E'a\\b'), ...
        let cases = [
            ("quote_literal('it''s')", "'it''s'"),
            ("quote_literal(E'a\\\\b')", "E'a\\\\b'"),
            ("quote_literal(42)", "'42'"),
            ("quote_literal(true)", "'true'"),
            ("quote_literal(date '2024-01-02')", "'2024-01-02'"),
            ("quote_nullable(NULL)", "NULL"),
            ("quote_nullable(1.5)", "'1.5'"),
        ];
        for (call, expected) in cases {
            let result = value(session, &format!("SELECT {call}")).unwrap();
            assert_eq!(result, Datum::Text(expected.into()), "{call}");
        }
        assert_eq!(value(session, "SELECT quote_literal(NULL)").unwrap(), Datum::Null);
    });
}

#[test]
fn md5_is_postgres_digest() {
    with_session(|session| {
        // PostgreSQL 15: SELECT md5('abc'), md5('').
        let digest = value(session, "SELECT md5('abc')").unwrap();
        assert_eq!(digest, Datum::Text("900150983cd24fb0d6963f7d28e17f72".into()));
        let empty = value(session, "SELECT md5('')").unwrap();
        assert_eq!(empty, Datum::Text("d41d8cd98f00b204e9800998ecf8427e".into()));
    });
}

#[test]
fn refusals_happen_at_bind_time() {
    with_session(|session| {
        setup(session, &["CREATE TABLE empty (a int)"]);
        // No row reaches the call: the refusal is the binder's.
        assert_eq!(sqlstate(session, "SELECT pg_advisory_lock(1.5) FROM empty"), "42883");
        assert_eq!(
            sqlstate(session, "SELECT pg_try_advisory_xact_lock(1, 2::int8) FROM empty"),
            "42883"
        );
        // PostgreSQL's types tierdb has no values for are a missing feature; a name
        // PostgreSQL does not have either is 42704, as there.
        assert_eq!(sqlstate(session, "SELECT NULL::timetz FROM empty"), "0A000");
        // A sample is never answered by a full scan.
        assert_eq!(sqlstate(session, "SELECT a FROM empty TABLESAMPLE SYSTEM (50)"), "0A000");
        assert_eq!(sqlstate(session, "SELECT NULL::tinyint FROM empty"), "42704");
        assert_eq!(sqlstate(session, "SELECT tierdb_stat_tier_cache() FROM empty"), "0A000");
        assert_eq!(sqlstate(session, "SELECT no_such_function(a) FROM empty"), "42883");
        assert_eq!(sqlstate(session, "SELECT upper(a) FROM empty"), "42883");
        assert_eq!(sqlstate(session, "SELECT pg_get_indexdef() FROM empty"), "42883");
        assert_eq!(sqlstate(session, "SELECT coalesce(1, true) FROM empty"), "42804");
    });
}

#[test]
fn names_of_one_entry_share_its_typing() {
    with_session(|session| {
        assert_eq!(
            value(session, "SELECT ceiling(1.2)").unwrap(),
            value(session, "SELECT ceil(1.2)").unwrap()
        );
        assert_eq!(
            value(session, "SELECT substring('abcdef', 2, 3)").unwrap(),
            Datum::Text("bcd".into())
        );
        assert_eq!(value(session, "SELECT char_length('abc'::char(5))").unwrap(), Datum::Int(3));
        assert_eq!(value(session, "SELECT octet_length('abc'::char(5))").unwrap(), Datum::Int(5));
    });
}
