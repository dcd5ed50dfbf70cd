//! The real `psql` client against `tierdb serve`: its describe commands (`\d`, `\dt`, `\di`,
//! `\d table`) run psql's own catalog queries, so they exercise pg_catalog as psql uses it.
//!
//! Needs the `psql` binary (package postgresql-client); the test fails when it is missing.

use crate::server_support;

use std::process::{Command, Output};

use server_support::TestServer;

fn require_psql() {
    match Command::new("psql").arg("--version").output() {
        Ok(output) if output.status.success() => {}
        Ok(output) => panic!("psql --version failed: {output:?}"),
        Err(error) => panic!(
            "psql not found ({error}); these tests need the PostgreSQL client \
             (apt-get install postgresql-client)"
        ),
    }
}

fn run_psql(server: &TestServer, extra: &[&str], command: &str) -> Output {
    Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "tierdb"])
        .args(["-d", "tierdb", "-v", "ON_ERROR_STOP=1"])
        .args(extra)
        .args(["-c", command])
        .env("PGCONNECT_TIMEOUT", "30")
        .env("PAGER", "")
        .env("PSQL_PAGER", "")
        .env("COLUMNS", "200")
        .env_remove("PGSERVICE")
        .env_remove("PGOPTIONS")
        .output()
        .expect("run psql")
}

/// Runs `command`; asserts success and returns stdout. On failure, shows the catalog queries
/// psql sent (`-E`) with the server's answer.
fn psql(server: &TestServer, command: &str) -> String {
    let output = run_psql(server, &[], command);
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    if !output.status.success() || stderr.contains("ERROR") {
        let echoed = run_psql(server, &["-E"], command);
        panic!(
            "psql -c '{command}' failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}\n\
             --- with -E (the queries psql sent):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&echoed.stdout),
            String::from_utf8_lossy(&echoed.stderr)
        );
    }
    eprintln!("psql -c '{command}':\n{stdout}");
    stdout
}

/// The first output line whose `|`-separated cells include every one of `cells`.
fn line_with<'a>(output: &'a str, cells: &[&str]) -> Option<&'a str> {
    output.lines().find(|line| {
        let row: Vec<&str> = line.split('|').map(str::trim).collect();
        cells.iter().all(|cell| row.contains(cell))
    })
}

fn setup(server: &TestServer) {
    psql(
        server,
        "CREATE TABLE items (id int4 PRIMARY KEY, name text NOT NULL, price numeric(10, 2) \
         CHECK (price >= 0), created timestamp, code varchar(8), CHECK (name <> code))",
    );
    psql(server, "CREATE INDEX items_name_idx ON items (name)");
    psql(server, "CREATE UNIQUE INDEX items_code_key ON items (code)");
    psql(server, "CREATE TABLE other (k int8)");
}

#[test]
fn psql_connects_and_queries() {
    require_psql();
    let server = TestServer::start(&[]);
    let output = psql(&server, "SELECT 1 AS one, 'x'::text AS two");
    assert!(line_with(&output, &["one", "two"]).is_some(), "{output}");
    assert!(line_with(&output, &["1", "x"]).is_some(), "{output}");
    assert!(output.contains("(1 row)"), "{output}");
}

#[test]
fn psql_describe_relations() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    let output = psql(&server, "\\d");
    assert!(output.contains("List of relations"), "{output}");
    assert!(line_with(&output, &["public", "items", "table", "tierdb"]).is_some(), "{output}");
    assert!(line_with(&output, &["public", "other", "table", "tierdb"]).is_some(), "{output}");
    assert!(output.contains("(2 rows)"), "{output}");
}

#[test]
fn psql_describe_tables() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    let output = psql(&server, "\\dt");
    assert!(output.contains("List of relations") || output.contains("List of tables"), "{output}");
    assert!(line_with(&output, &["public", "items", "table", "tierdb"]).is_some(), "{output}");
    assert!(line_with(&output, &["public", "other", "table", "tierdb"]).is_some(), "{output}");
    assert!(!output.contains("items_pkey"), "\\dt lists no indexes: {output}");
}

#[test]
fn psql_describe_indexes() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    let output = psql(&server, "\\di");
    for index in ["items_pkey", "items_name_idx", "items_code_key"] {
        assert!(
            line_with(&output, &["public", index, "index", "tierdb", "items"]).is_some(),
            "\\di lists {index} as an index of items:\n{output}"
        );
    }
    assert!(output.contains("(3 rows)"), "{output}");
}

#[test]
fn psql_describe_one_table() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    let output = psql(&server, "\\d items");
    assert!(output.contains("Table \"public.items\""), "{output}");
    for (column, ty, nullable) in [
        ("id", "integer", "not null"),
        ("name", "text", "not null"),
        ("price", "numeric(10,2)", ""),
        ("created", "timestamp without time zone", ""),
        ("code", "character varying(8)", ""),
    ] {
        let line = line_with(&output, &[column, ty])
            .unwrap_or_else(|| panic!("\\d items shows column {column} of type {ty}:\n{output}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.get(3).copied(), Some(nullable), "nullability of {column}: {line}");
    }
    assert!(output.contains("Indexes:"), "{output}");
    for index in [
        "\"items_pkey\" PRIMARY KEY, btree (id)",
        "\"items_name_idx\" btree (name)",
        "\"items_code_key\" UNIQUE, btree (code)",
    ] {
        assert!(output.contains(index), "\\d items lists {index}:\n{output}");
    }
    // CHECK constraints as PostgreSQL's psql prints them (pg_class.relchecks, the pretty
    // pg_get_constraintdef).
    assert!(output.contains("Check constraints:"), "{output}");
    for check in [
        "\"items_check\" CHECK (name <> code::text)",
        "\"items_price_check\" CHECK (price >= 0::numeric)",
    ] {
        assert!(output.contains(check), "\\d items lists {check}:\n{output}");
    }
    // A table that does not exist: psql's message, exit status 1.
    let missing = run_psql(&server, &[], "\\d no_such_table");
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("Did not find any relation named \"no_such_table\""),
        "{stderr} {missing:?}"
    );
}

/// `\d` of a table with partial HNSW and ivfflat indexes: the lines pgvector 0.8.2 on
/// PostgreSQL shows, options then the pretty WHERE.
#[test]
fn psql_describe_partial_vector_indexes() {
    require_psql();
    let server = TestServer::start(&[]);
    psql(&server, "CREATE TABLE items (id integer PRIMARY KEY, category integer, v vector(3))");
    psql(
        &server,
        "CREATE INDEX items_c1 ON items USING hnsw (v vector_l2_ops) WITH (m = 4) \
         WHERE category = 1",
    );
    psql(
        &server,
        "CREATE INDEX items_c2 ON items USING ivfflat (v) WITH (lists = 2) \
         WHERE category = 2 AND id > 10",
    );
    let output = psql(&server, "\\d items");
    for index in [
        "\"items_c1\" hnsw (v vector_l2_ops) WITH (m='4') WHERE category = 1",
        "\"items_c2\" ivfflat (v) WITH (lists='2') WHERE category = 2 AND id > 10",
    ] {
        assert!(output.contains(index), "\\d items lists {index}:\n{output}");
    }
}

/// `\d` of a table with a FOREIGN KEY and of the table it references: PostgreSQL's sections
/// (pg_class.relhastriggers set, pg_partition_ancestors and pg_trigger read by psql).
#[test]
fn psql_describe_foreign_keys() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    psql(
        &server,
        "CREATE TABLE orders (id int PRIMARY KEY, item int REFERENCES items (id) ON DELETE CASCADE)",
    );
    let referencing = psql(&server, "\\d orders");
    assert!(referencing.contains("Foreign-key constraints:"), "{referencing}");
    assert!(
        referencing.contains(
            "\"orders_item_fkey\" FOREIGN KEY (item) REFERENCES items(id) ON DELETE CASCADE"
        ),
        "{referencing}"
    );
    let referenced = psql(&server, "\\d items");
    assert!(referenced.contains("Referenced by:"), "{referenced}");
    assert!(
        referenced.contains("TABLE \"orders\" CONSTRAINT \"orders_item_fkey\" FOREIGN KEY (item)"),
        "{referenced}"
    );
    let plain = psql(&server, "\\d other");
    assert!(!plain.contains("Referenced by:") && !plain.contains("Foreign-key"), "{plain}");
}

/// COPY's legacy option list (`DELIMITER AS '|'`, `NULL AS`, `CSV HEADER`, `E'\t'`) is read
/// as PostgreSQL reads it: the outputs below are PostgreSQL 15's for the same commands (the
/// delimiter was once taken from the word AS).
#[test]
fn psql_copy_legacy_options() {
    require_psql();
    let server = TestServer::start(&[]);
    psql(&server, "CREATE TABLE h (a int PRIMARY KEY, b text)");
    psql(&server, "INSERT INTO h VALUES (1, 'x'), (2, NULL)");
    let out = psql(&server, "COPY h TO STDOUT WITH DELIMITER AS '|' NULL AS 'nil'");
    assert_eq!(out, "1|x\n2|nil\n");
    let out = psql(&server, "COPY h TO STDOUT CSV HEADER DELIMITER ';'");
    assert_eq!(out, "a;b\n1;x\n2;\n");
    let out = psql(&server, "COPY h TO STDOUT (FORMAT csv, DELIMITER E'\\t', HEADER true)");
    assert_eq!(out, "a\tb\n1\tx\n2\t\n");
    let refused = run_psql(&server, &[], "COPY h TO STDOUT WITH (FORMAT csv, FORCE_QUOTE *)");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("COPY FORCE_QUOTE is not supported"), "{stderr}");
}

/// The startup packet's options (PGOPTIONS) are applied as SET applies them, a bad one
/// refuses the connection with FATAL, and RESET returns to the startup value: as in
/// PostgreSQL (they were ignored).
#[test]
fn psql_startup_options_are_applied() {
    require_psql();
    let server = TestServer::start(&[]);
    let with_options = |options: &str, command: &str| {
        Command::new("psql")
            .args(["-X", "-At", "-h", "127.0.0.1", "-p", &server.port.to_string()])
            .args(["-U", "tierdb", "-d", "tierdb", "-c", command])
            .env("PGOPTIONS", options)
            .env("PGCONNECT_TIMEOUT", "30")
            .output()
            .expect("run psql")
    };
    let output = with_options(
        "-c work_mem=8MB --search-path=public -c app.note=a\\ b",
        "SHOW work_mem; SHOW search_path; SHOW app.note; SET work_mem = '16MB'; RESET work_mem; SHOW work_mem",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout, "8MB\npublic\na b\nSET\nRESET\n8MB\n");
    for (options, expected) in [
        (
            "-c no_such_parameter=1",
            "FATAL:  unrecognized configuration parameter \"no_such_parameter\"",
        ),
        ("-c enable_seqscan=off", "FATAL:  parameter \"enable_seqscan\" is not supported"),
        ("-c work_mem=lots", "FATAL:  invalid value for parameter \"work_mem\": \"lots\""),
    ] {
        let output = with_options(options, "SELECT 1");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{options}: {stderr}");
    }
}

#[test]
fn psql_describe_views() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    psql(&server, "CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10");
    let output = psql(&server, "\\dv");
    assert!(line_with(&output, &["public", "cheap", "view", "tierdb"]).is_some(), "{output}");
    assert!(output.contains("(1 row)"), "\\dv lists views only: {output}");
    let output = psql(&server, "\\d");
    assert!(line_with(&output, &["public", "cheap", "view", "tierdb"]).is_some(), "{output}");
    let output = psql(&server, "\\d cheap");
    assert!(output.contains("View \"public.cheap\""), "{output}");
    assert!(line_with(&output, &["id", "integer"]).is_some(), "{output}");
    assert!(line_with(&output, &["name", "text"]).is_some(), "{output}");
    let output = psql(&server, "\\d+ cheap");
    assert!(output.contains("View definition:"), "{output}");
    assert!(output.contains("price < 10"), "{output}");
}

#[test]
fn psql_lists_databases_roles_and_tablespaces() {
    require_psql();
    let server = TestServer::start(&[]);
    // \l reads pg_database's PostgreSQL 15 columns (daticulocale, datlocprovider, datacl).
    let output = psql(&server, "\\l");
    assert!(
        line_with(&output, &["tierdb", "tierdb", "UTF8", "C", "C", "libc"]).is_some(),
        "{output}"
    );
    // \du reads pg_auth_members (no role is a member of another).
    psql(&server, "CREATE ROLE reader LOGIN");
    let output = psql(&server, "\\du");
    let attributes = "Superuser, Create role, Create DB, Replication, Bypass RLS";
    assert!(line_with(&output, &["tierdb", attributes, "{}"]).is_some(), "{output}");
    assert!(line_with(&output, &["reader", "{}"]).is_some(), "{output}");
    // \db lists PostgreSQL's two built-in tablespaces.
    let output = psql(&server, "\\db");
    assert!(line_with(&output, &["pg_default", "tierdb"]).is_some(), "{output}");
    assert!(line_with(&output, &["pg_global", "tierdb"]).is_some(), "{output}");
    // \drds reads pg_db_role_setting (no per-role or per-database settings): psql lists
    // nothing and says so on stderr; `psql` fails the test on an ERROR there.
    let output = psql(&server, "\\drds");
    assert!(output.trim().is_empty(), "{output}");
}

/// One value of a query, as psql prints it unaligned without headers.
fn scalar(server: &TestServer, query: &str) -> String {
    let output = run_psql(server, &["-t", "-A"], query);
    assert!(output.status.success(), "{query}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn psql_describe_sizes() {
    require_psql();
    let server = TestServer::start(&[]);
    setup(&server);
    psql(
        &server,
        "INSERT INTO items SELECT g, 'item ' || g, g, NULL, 'c' || g \
         FROM generate_series(1, 3000) g",
    );
    // The sizes are the pages the trees hold: an empty table's tree has its meta, free-list
    // anchor and root pages; 3,000 rows take more, and their indexes have pages of their own.
    assert_eq!(scalar(&server, "SELECT pg_table_size('other')"), "24576");
    let check = "SELECT pg_table_size('items') > 10 * pg_table_size('other'), \
                 pg_indexes_size('items') > 2 * 24576, \
                 pg_total_relation_size('items') = pg_table_size('items') + pg_indexes_size('items'), \
                 pg_relation_size('items') = pg_table_size('items'), \
                 pg_relation_size('items', 'fsm'), pg_indexes_size('items_pkey')";
    assert_eq!(scalar(&server, check), "t|t|t|t|0|0");
    let before = scalar(&server, "SELECT pg_relation_size('items_name_idx')");
    psql(&server, "INSERT INTO items SELECT g, repeat('n', 200) || g, g, NULL, NULL FROM generate_series(3001, 6000) g");
    let after = scalar(&server, "SELECT pg_relation_size('items_name_idx')");
    let parse = |text: &str| text.parse::<i64>().expect("a size");
    assert!(parse(&after) > parse(&before), "the index grew: {before} -> {after}");
    // psql's \dt+, \di+ and \l+ show them through pg_size_pretty.
    let output = psql(&server, "\\dt+");
    let items = scalar(&server, "SELECT pg_size_pretty(pg_table_size('items'))");
    assert!(line_with(&output, &["items", "table", "permanent", &items]).is_some(), "{output}");
    assert!(line_with(&output, &["other", "table", "permanent", "24 kB"]).is_some(), "{output}");
    let output = psql(&server, "\\di+");
    // The primary key is the table's own tree (clustered): its pages are the table's.
    assert!(line_with(&output, &["items_pkey", "index", "items", "0 bytes"]).is_some(), "{output}");
    let name = scalar(&server, "SELECT pg_size_pretty(pg_relation_size('items_name_idx'))");
    assert!(line_with(&output, &["items_name_idx", "index", "items", &name]).is_some(), "{output}");
    let output = psql(&server, "\\l+");
    let line = line_with(&output, &["tierdb", "UTF8", "pg_default"]).expect("\\l+ lists tierdb");
    assert!(line.contains(" kB") || line.contains(" MB"), "{output}");
}
