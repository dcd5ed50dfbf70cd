//! PostgreSQL 15's `pg_dump` against `tierdb serve`: the plain dump of a database with a
//! serial column, NOT NULL and DEFAULT columns, a CHECK, UNIQUE and primary keys, an index,
//! arrays and jsonb restores into a private PostgreSQL 15 with the same rows, and its
//! sequence continues where tierdb's stood; a view on a table restores after it with the same
//! rows; a FOREIGN KEY restores (pg_dump reads them for tables whose relhastriggers is set);
//! identity columns with their options restore both ways.
//!
//! Needs PostgreSQL 15's binaries (`pg_dump`, `initdb`, `pg_ctl`, `postgres` under
//! /usr/lib/postgresql/15/bin or `$TIERDB_PG_BIN`) and `psql`; fails when they are missing.

use crate::server_support;
use crate::slt_support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use server_support::TestServer;
use slt_support::Postgres;

const SETUP: &str = "
CREATE TABLE dump_item (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    price numeric(10,2) CHECK (price >= 0),
    tags text[],
    doc jsonb,
    created date DEFAULT '2024-01-02',
    note varchar(20)
);
CREATE INDEX dump_item_note_idx ON dump_item (note);
INSERT INTO dump_item (name, price, tags, doc, note) VALUES
    ('first', 1.50, '{a,b}', '{\"k\": [1, 2]}', 'x'),
    ('second', NULL, NULL, NULL, NULL),
    ('it''s \"quoted\"', 0, '{\"with space\",NULL}', '{\"nested\": {\"a\": null}}', E'tab\\there');
CREATE TABLE dump_pair (a integer, b text, PRIMARY KEY (a, b));
INSERT INTO dump_pair SELECT g, 'v' || g FROM generate_series(1, 50) AS g;
CREATE VIEW dump_cheap (item, cost) AS SELECT id, price FROM dump_item WHERE price < 5;
CREATE TABLE dump_line (id int PRIMARY KEY, item int REFERENCES dump_item (id) ON DELETE CASCADE);
INSERT INTO dump_line VALUES (1, 1), (2, 1), (3, NULL);
";

/// Queries whose text output must be the same on both servers.
const COMPARED: [&str; 8] = [
    "SELECT item, cost FROM dump_cheap ORDER BY item",
    "SELECT id, name, price, tags, doc, created, note FROM dump_item ORDER BY id",
    "SELECT count(*), sum(a), min(b), max(b) FROM dump_pair",
    "SELECT conname, contype FROM pg_constraint WHERE conrelid = 'dump_item'::regclass ORDER BY 1",
    "SELECT indexname FROM pg_indexes WHERE tablename = 'dump_item' ORDER BY 1",
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint \
     WHERE conrelid = 'dump_line'::regclass ORDER BY 1",
    "SELECT id, item FROM dump_line ORDER BY id",
    "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
     WHERE table_name = 'dump_item' ORDER BY ordinal_position",
];

fn pg_bin() -> PathBuf {
    PathBuf::from(
        std::env::var("TIERDB_PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into()),
    )
}

/// Runs psql with `args` against `conninfo`; panics with its output when it fails.
fn psql(conninfo: &str, args: &[&str], input: Option<&[u8]>) -> String {
    let mut child = Command::new("psql")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql runs (apt-get install postgresql-client)");
    let mut stdin = child.stdin.take().expect("piped");
    if let Some(input) = input {
        stdin.write_all(input).expect("psql reads its input");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("psql finishes");
    assert!(
        output.status.success(),
        "psql {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn a_pg_dump_of_tierdb_restores_into_postgresql_with_the_same_rows() {
    let pg_dump = pg_bin().join("pg_dump");
    assert!(pg_dump.is_file(), "{} is missing (apt-get install postgresql-15)", pg_dump.display());
    let server = TestServer::start(&[]);
    let tierdb = server.connection_string();
    psql(&tierdb, &["-c", SETUP], None);
    // Three values taken: the dump must carry the sequence's position.
    assert_eq!(psql(&tierdb, &["-c", "SELECT last_value FROM dump_item_id_seq"], None), "3\n");

    let dump =
        Command::new(&pg_dump).args(["--no-owner", "-d", &tierdb]).output().expect("pg_dump runs");
    assert!(dump.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&dump.stderr));
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(text.contains("CREATE TABLE public.dump_item"), "{text}");
    assert!(text.contains("COPY public.dump_pair (a, b) FROM stdin;"), "{text}");

    let postgres = Postgres::start();
    let restored = postgres.connection_string();
    psql(&restored, &["-f", "-"], Some(&dump.stdout));
    for query in COMPARED {
        let expected = psql(&tierdb, &["-c", query], None);
        assert!(!expected.is_empty(), "{query} returns rows");
        assert_eq!(psql(&restored, &["-c", query], None), expected, "{query}");
    }
    // The restored sequence continues after tierdb's last value.
    let next = "INSERT INTO dump_item (name) VALUES ('fourth') RETURNING id";
    assert_eq!(psql(&restored, &["-c", next], None), "4\n");
}

/// tierdb's sequences of every kind: one of CREATE SEQUENCE with options and values taken,
/// one OWNED BY a column whose DEFAULT calls it, a serial column's, an identity column's
/// with options, one never called.
const SEQUENCES_SETUP: &str = "
CREATE SEQUENCE dump_standalone INCREMENT BY 5 START 100 MAXVALUE 1000 CACHE 10 CYCLE;
SELECT nextval('dump_standalone');
SELECT nextval('dump_standalone');
CREATE TABLE dump_owner (id integer NOT NULL, v text);
CREATE SEQUENCE dump_owner_id_seq AS integer OWNED BY dump_owner.id;
ALTER TABLE dump_owner ALTER COLUMN id SET DEFAULT nextval('dump_owner_id_seq'::regclass);
INSERT INTO dump_owner (v) VALUES ('a'), ('b');
CREATE TABLE dump_serial (id serial, v text);
INSERT INTO dump_serial (v) VALUES ('x');
CREATE SEQUENCE dump_unused START 7;
CREATE SEQUENCE dump_descending INCREMENT -3 MINVALUE -50 MAXVALUE -1;
SELECT setval('dump_descending', -20, false);
CREATE TABLE dump_ident (id bigint GENERATED ALWAYS AS IDENTITY (START 50 INCREMENT 5), v text);
INSERT INTO dump_ident (v) VALUES ('i'), ('j');
";

/// What the sequences must agree on after a restore: definitions, values, the rows taken
/// from them and the owner pg_get_serial_sequence finds.
const SEQUENCES_COMPARED: [&str; 5] = [
    "SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, \
     cache_size, last_value FROM pg_sequences ORDER BY 1",
    "SELECT relname FROM pg_class WHERE relkind = 'S' ORDER BY 1",
    "SELECT id, v FROM dump_owner ORDER BY id",
    "SELECT pg_get_serial_sequence('dump_owner', 'id'), pg_get_serial_sequence('dump_serial', 'id')",
    "SELECT id, v FROM dump_ident ORDER BY id",
];

/// Takes the next value of each sequence: the same on both servers after a restore.
const SEQUENCES_NEXT: &str = "SELECT nextval('dump_standalone'), nextval('dump_owner_id_seq'), \
     nextval('dump_serial_id_seq'), nextval('dump_unused'), nextval('dump_descending'), \
     nextval('dump_ident_id_seq')";

#[test]
fn a_pg_dump_of_tierdb_sequences_restores_into_postgresql_with_the_same_values() {
    let pg_dump = pg_bin().join("pg_dump");
    assert!(pg_dump.is_file(), "{} is missing (apt-get install postgresql-15)", pg_dump.display());
    let server = TestServer::start(&[]);
    let tierdb = server.connection_string();
    psql(&tierdb, &["-c", SEQUENCES_SETUP], None);
    let dump =
        Command::new(&pg_dump).args(["--no-owner", "-d", &tierdb]).output().expect("pg_dump runs");
    assert!(dump.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&dump.stderr));
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(text.contains("CREATE SEQUENCE public.dump_standalone"), "{text}");
    assert!(text.contains("OWNED BY public.dump_owner.id"), "{text}");

    let postgres = Postgres::start();
    let restored = postgres.connection_string();
    psql(&restored, &["-f", "-"], Some(&dump.stdout));
    for query in SEQUENCES_COMPARED {
        let expected = psql(&tierdb, &["-c", query], None);
        assert!(!expected.is_empty(), "{query} returns rows");
        assert_eq!(psql(&restored, &["-c", query], None), expected, "{query}");
    }
    let expected = psql(&tierdb, &["-c", SEQUENCES_NEXT], None);
    assert_eq!(psql(&restored, &["-c", SEQUENCES_NEXT], None), expected);
}

/// A PostgreSQL 15 database with serial and bigserial columns, sequences of CREATE SEQUENCE
/// (one counting down with CYCLE, one never called) and setval calls.
const POSTGRES_SETUP: &str = "
CREATE TABLE src_serial (id serial PRIMARY KEY, v text);
INSERT INTO src_serial (v) VALUES ('a'), ('b'), ('c');
CREATE TABLE src_big (id bigserial, note text);
INSERT INTO src_big (note) VALUES ('n1');
SELECT setval('src_big_id_seq', 70);
CREATE SEQUENCE src_standalone AS integer INCREMENT BY -2 MINVALUE -100 MAXVALUE 50 START 40 CYCLE;
SELECT nextval('src_standalone');
SELECT nextval('src_standalone');
CREATE SEQUENCE src_fresh;
CREATE SEQUENCE src_unset START 9;
SELECT setval('src_unset', 12, false);
CREATE TABLE src_ident (id int GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 3), v text);
INSERT INTO src_ident (v) VALUES ('a'), ('b');
CREATE TABLE src_ident_small (id smallint GENERATED BY DEFAULT AS IDENTITY (MAXVALUE 100 CYCLE) PRIMARY KEY, v text);
INSERT INTO src_ident_small (v) VALUES ('z');
";

const POSTGRES_COMPARED: [&str; 6] = [
    "SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, \
     cache_size, last_value FROM pg_sequences ORDER BY 1",
    "SELECT id, v FROM src_serial ORDER BY id",
    "SELECT id, note FROM src_big ORDER BY id",
    "SELECT pg_get_serial_sequence('src_serial', 'id'), pg_get_serial_sequence('src_big', 'id'), \
     pg_get_serial_sequence('src_ident', 'id')",
    "SELECT id, v FROM src_ident ORDER BY id",
    "SELECT table_name, column_name, is_identity, identity_generation, identity_start, \
     identity_increment, identity_maximum, identity_cycle FROM information_schema.columns \
     WHERE is_identity = 'YES' ORDER BY 1",
];

const POSTGRES_NEXT: &str = "SELECT nextval('src_standalone'), nextval('src_fresh'), \
     nextval('src_unset'), nextval('src_serial_id_seq'), nextval('src_big_id_seq')";

#[test]
fn a_pg_dump_of_postgresql_sequences_restores_into_tierdb_with_the_same_values() {
    let pg_dump = pg_bin().join("pg_dump");
    assert!(pg_dump.is_file(), "{} is missing (apt-get install postgresql-15)", pg_dump.display());
    let postgres = Postgres::start();
    let source = postgres.connection_string();
    psql(&source, &["-c", POSTGRES_SETUP], None);
    let dump =
        Command::new(&pg_dump).args(["--no-owner", "-d", &source]).output().expect("pg_dump runs");
    assert!(dump.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&dump.stderr));
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(text.contains("CREATE SEQUENCE public.src_standalone"), "{text}");

    let server = TestServer::start(&[]);
    let tierdb = server.connection_string();
    psql(&tierdb, &["-f", "-"], Some(&dump.stdout));
    for query in POSTGRES_COMPARED {
        let expected = psql(&source, &["-c", query], None);
        assert!(!expected.is_empty(), "{query} returns rows");
        assert_eq!(psql(&tierdb, &["-c", query], None), expected, "{query}");
    }
    let expected = psql(&source, &["-c", POSTGRES_NEXT], None);
    assert_eq!(psql(&tierdb, &["-c", POSTGRES_NEXT], None), expected);
    // The restored serial and identity columns take their values from the restored
    // sequences.
    for insert in [
        "INSERT INTO src_serial (v) VALUES ('d') RETURNING id",
        "INSERT INTO src_ident (v) VALUES ('c') RETURNING id",
        "INSERT INTO src_ident_small (v) VALUES ('y') RETURNING id",
    ] {
        assert_eq!(psql(&tierdb, &["-c", insert], None), psql(&source, &["-c", insert], None));
    }
    // pg_dump -t (its pattern query uses `OPERATOR(pg_catalog.=) ANY`) dumps the identity
    // column as PostgreSQL's own dump does.
    let one_table = Command::new(&pg_dump)
        .args(["--no-owner", "-t", "src_ident", "-d", &tierdb])
        .output()
        .expect("pg_dump runs");
    assert!(one_table.status.success(), "{}", String::from_utf8_lossy(&one_table.stderr));
    let text = String::from_utf8_lossy(&one_table.stdout);
    assert!(text.contains("ADD GENERATED ALWAYS AS IDENTITY"), "{text}");
    assert!(text.contains("START WITH 5") && !text.contains("src_serial"), "{text}");
}
