//! tokio-postgres against a real `tierdb serve`: both query protocols, text and binary result
//! formats for every supported type, NULLs, transactions and savepoints, SQLSTATEs, COPY in
//! text and CSV, cancel, many concurrent connections, and a SIGTERM restart.
//!
//! Every expectation here is what PostgreSQL itself answers.

use crate::server_support;

use std::error::Error as StdError;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use futures_util::{SinkExt, TryStreamExt};
use server_support::{connect, sqlstate, TestServer};
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// How long one step may take before the test fails instead of hanging.
const STEP: Duration = Duration::from_secs(60);

/// The rows of a simple query as text (None = NULL).
async fn simple_rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let messages =
        client.simple_query(sql).await.unwrap_or_else(|error| panic!("{sql}: {error:?}"));
    messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|index| row.get(index).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// Asserts a simple query fails with `expected`.
async fn expect_simple_error(client: &Client, sql: &str, expected: &str) {
    match client.simple_query(sql).await {
        Ok(_) => panic!("{sql}: succeeded, expected SQLSTATE {expected}"),
        Err(error) => assert_eq!(sqlstate(&error), expected, "{sql}: {error:?}"),
    }
}

/// Asserts an extended-protocol statement (prepare + bind + execute) fails with `expected`.
async fn expect_extended_error(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    expected: &str,
) {
    match client.query(sql, params).await {
        Ok(_) => panic!("{sql} (extended): succeeded, expected SQLSTATE {expected}"),
        Err(error) => assert_eq!(sqlstate(&error), expected, "{sql} (extended): {error:?}"),
    }
}

/// A numeric in PostgreSQL's binary format, kept as PostgreSQL's canonical text
/// (`numeric_out`): digits with exactly `dscale` fraction digits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PgNumeric(String);

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;

impl<'a> FromSql<'a> for PgNumeric {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        let word = |index: usize| -> Result<u16, Box<dyn StdError + Sync + Send>> {
            let bytes = raw.get(index * 2..index * 2 + 2).ok_or("numeric: truncated")?;
            Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
        };
        let ndigits = usize::from(word(0)?);
        let weight = i64::from(i16::from_be_bytes(word(1)?.to_be_bytes()));
        let sign = word(2)?;
        let dscale = usize::from(word(3)?);
        if raw.len() != 8 + 2 * ndigits {
            return Err(format!("numeric: {} bytes for {ndigits} digits", raw.len()).into());
        }
        if sign == NUMERIC_NAN {
            return Ok(PgNumeric("NaN".into()));
        }
        if sign != NUMERIC_POS && sign != NUMERIC_NEG {
            return Err(format!("numeric: bad sign {sign:#x}").into());
        }
        let mut digits = Vec::with_capacity(ndigits);
        for index in 0..ndigits {
            let digit = word(4 + index)?;
            if digit >= 10_000 {
                return Err(format!("numeric: digit {digit} out of range").into());
            }
            digits.push(digit);
        }
        // Digit group i has weight `weight - i` (group 0 at 10000^weight).
        let group = |position: i64| -> u16 {
            let index = weight - position;
            usize::try_from(index).ok().and_then(|index| digits.get(index).copied()).unwrap_or(0)
        };
        let mut text = String::new();
        if sign == NUMERIC_NEG {
            text.push('-');
        }
        if weight < 0 {
            text.push('0');
        } else {
            text.push_str(&group(weight).to_string());
            for position in (0..weight).rev() {
                text.push_str(&format!("{:04}", group(position)));
            }
        }
        if dscale > 0 {
            let mut fraction = String::new();
            let mut position = -1;
            while fraction.len() < dscale {
                fraction.push_str(&format!("{:04}", group(position)));
                position -= 1;
            }
            fraction.truncate(dscale);
            text.push('.');
            text.push_str(&fraction);
        }
        Ok(PgNumeric(text))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

impl ToSql for PgNumeric {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        let (negative, unsigned) = match self.0.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, self.0.as_str()),
        };
        let (integer, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
        if !integer.chars().chain(fraction.chars()).all(|c| c.is_ascii_digit()) {
            return Err(format!("not a plain decimal: {}", self.0).into());
        }
        let integer = integer.trim_start_matches('0');
        let mut padded_integer = "0".repeat((4 - integer.len() % 4) % 4);
        padded_integer.push_str(integer);
        let mut padded_fraction = fraction.to_string();
        while padded_fraction.len() % 4 != 0 {
            padded_fraction.push('0');
        }
        let groups = |text: &str| -> Vec<u16> {
            text.as_bytes()
                .chunks(4)
                .map(|chunk| std::str::from_utf8(chunk).expect("ascii").parse().expect("digits"))
                .collect()
        };
        let integer_groups = groups(&padded_integer);
        let mut weight = i16::try_from(integer_groups.len()).expect("small") - 1;
        let mut digits = integer_groups;
        digits.extend(groups(&padded_fraction));
        while digits.first() == Some(&0) {
            digits.remove(0);
            weight -= 1;
        }
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            weight = 0;
        }
        out.put_u16(u16::try_from(digits.len()).expect("small"));
        out.put_i16(weight);
        out.put_u16(if negative && !digits.is_empty() { NUMERIC_NEG } else { NUMERIC_POS });
        out.put_u16(u16::try_from(fraction.len()).expect("small"));
        for digit in digits {
            out.put_u16(digit);
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    to_sql_checked!();
}

fn numeric(text: &str) -> PgNumeric {
    PgNumeric(text.to_string())
}

// ---------------------------------------------------------------------------------------------
// Query protocols

#[tokio::test(flavor = "multi_thread")]
async fn simple_query_protocol_runs_statement_lists() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    let messages = client
        .simple_query(
            "CREATE TABLE items (id int4 PRIMARY KEY, name text); \
             INSERT INTO items VALUES (1, 'one'), (2, 'two'), (3, NULL); \
             UPDATE items SET name = 'TWO' WHERE id = 2; \
             SELECT id, name FROM items ORDER BY id",
        )
        .await
        .expect("statement list");
    let completions: Vec<u64> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::CommandComplete(rows) => Some(*rows),
            _ => None,
        })
        .collect();
    // CREATE TABLE (0), INSERT 0 3, UPDATE 1, SELECT 3.
    assert_eq!(completions, vec![0, 3, 1, 3]);
    let rows: Vec<Vec<Option<String>>> = messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|index| row.get(index).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![Some("1".into()), Some("one".into())],
            vec![Some("2".into()), Some("TWO".into())],
            vec![Some("3".into()), None],
        ]
    );
    // Column names come with the rows.
    let names = messages.iter().find_map(|message| match message {
        SimpleQueryMessage::RowDescription(columns) => {
            Some(columns.iter().map(|column| column.name().to_string()).collect::<Vec<_>>())
        }
        _ => None,
    });
    assert_eq!(names, Some(vec!["id".to_string(), "name".to_string()]));
    // An empty query string answers with no rows and no error.
    let empty = client.simple_query("").await.expect("empty query");
    assert!(empty.iter().all(|message| !matches!(message, SimpleQueryMessage::Row(_))));
    // batch_execute is the simple protocol too.
    client
        .batch_execute("DELETE FROM items WHERE id = 3; DELETE FROM items WHERE id = 2")
        .await
        .expect("batch");
    assert_eq!(
        simple_rows(&client, "SELECT count(*) FROM items").await,
        vec![vec![Some("1".into())]]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn extended_protocol_named_and_unnamed_statements() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute("CREATE TABLE people (id int4 PRIMARY KEY, name text NOT NULL, age int8)")
        .await
        .expect("create");

    // A named statement, prepared once and executed many times.
    let insert = client
        .prepare("INSERT INTO people (id, name, age) VALUES ($1, $2, $3)")
        .await
        .expect("prepare insert");
    assert_eq!(
        insert.params(),
        &[Type::INT4, Type::TEXT, Type::INT8],
        "parameter types inferred from the columns"
    );
    assert!(insert.columns().is_empty());
    for (id, name, age) in [(1i32, "ann", Some(31i64)), (2, "bob", None), (3, "cy", Some(7))] {
        let count = client.execute(&insert, &[&id, &name, &age]).await.expect("execute insert");
        assert_eq!(count, 1);
    }

    let select = client
        .prepare("SELECT id, name, age FROM people WHERE id = $1")
        .await
        .expect("prepare select");
    assert_eq!(select.params(), &[Type::INT4]);
    let types: Vec<Type> = select.columns().iter().map(|column| column.type_().clone()).collect();
    assert_eq!(types, vec![Type::INT4, Type::TEXT, Type::INT8]);
    let names: Vec<&str> = select.columns().iter().map(|column| column.name()).collect();
    assert_eq!(names, vec!["id", "name", "age"]);
    for (id, name, age) in [(1i32, "ann", Some(31i64)), (2, "bob", None), (3, "cy", Some(7))] {
        let row = client.query_one(&select, &[&id]).await.expect("select by id");
        assert_eq!(row.get::<_, i32>(0), id);
        assert_eq!(row.get::<_, &str>(1), name);
        assert_eq!(row.get::<_, Option<i64>>(2), age);
    }
    assert!(client.query_opt(&select, &[&99i32]).await.expect("no row").is_none());

    // UPDATE/DELETE through the extended protocol report their row counts.
    let updated = client
        .execute("UPDATE people SET age = age + $1 WHERE age IS NOT NULL", &[&1i64])
        .await
        .expect("update");
    assert_eq!(updated, 2);
    let deleted =
        client.execute("DELETE FROM people WHERE name = $1", &[&"cy"]).await.expect("delete");
    assert_eq!(deleted, 1);

    // The unnamed statement: tokio-postgres's query_typed parses into "" with explicit types.
    let rows = client
        .query_typed("SELECT name FROM people WHERE age > $1 ORDER BY id", &[(&10i64, Type::INT8)])
        .await
        .expect("query_typed (unnamed statement)");
    let names: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(names, vec!["ann".to_string()]);
    let row = client
        .query_typed_one("SELECT $1::text || '!'", &[(&"hi", Type::TEXT)])
        .await
        .expect("unnamed with cast");
    assert_eq!(row.get::<_, String>(0), "hi!");

    // Closing a statement and preparing it again works (the name is reused by nobody).
    drop(select);
    let again = client.prepare("SELECT count(*) FROM people").await.expect("prepare count");
    assert_eq!(again.columns()[0].type_(), &Type::INT8);
    assert_eq!(client.query_one(&again, &[]).await.expect("count").get::<_, i64>(0), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn parameter_types_are_inferred_when_not_given() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;

    let statement = client.prepare("SELECT $1 + 1").await.expect("prepare $1 + 1");
    assert_eq!(statement.params(), &[Type::INT4], "SELECT $1 + 1 describes $1 as int4");
    assert_eq!(statement.columns()[0].type_(), &Type::INT4);
    assert_eq!(client.query_one(&statement, &[&41i32]).await.expect("run").get::<_, i32>(0), 42);

    let statement = client.prepare("SELECT $1::int8 * 2").await.expect("prepare cast");
    assert_eq!(statement.params(), &[Type::INT8]);

    let statement = client.prepare("SELECT $1 || 'x'").await.expect("prepare concat");
    assert_eq!(statement.params(), &[Type::TEXT], "unknown || text resolves to text");
    assert_eq!(client.query_one(&statement, &[&"a"]).await.expect("run").get::<_, String>(0), "ax");

    let statement = client.prepare("SELECT $1 = 2.5").await.expect("prepare numeric compare");
    assert_eq!(statement.params(), &[Type::NUMERIC]);

    let statement = client.prepare("SELECT 1 WHERE $1").await.expect("prepare where $1");
    assert_eq!(statement.params(), &[Type::BOOL]);

    // Explicit types win over inference.
    let statement = client.prepare_typed("SELECT $1", &[Type::INT8]).await.expect("prepare_typed");
    assert_eq!(statement.params(), &[Type::INT8]);
    assert_eq!(statement.columns()[0].type_(), &Type::INT8);
    assert_eq!(client.query_one(&statement, &[&7i64]).await.expect("run").get::<_, i64>(0), 7);

    // A bare untyped $1 in the select list resolves to text (PostgreSQL 10 and later).
    let statement = client.prepare("SELECT $1").await.expect("prepare bare $1");
    assert_eq!(statement.params(), &[Type::TEXT]);
    assert_eq!(statement.columns()[0].type_(), &Type::TEXT);
}

// ---------------------------------------------------------------------------------------------
// Types: binary (prepared) and text (simple) results

const TYPES_TABLE: &str = "CREATE TABLE typed (
    id int4 PRIMARY KEY,
    i2 int2, i4 int4, i8 int8,
    f4 float4, f8 float8,
    b bool,
    t text, vc varchar(10), c char(4),
    n numeric(12, 4), nn numeric,
    d date, ts timestamp, tz timestamptz
)";

#[tokio::test(flavor = "multi_thread")]
async fn binary_results_for_every_type() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client.batch_execute(TYPES_TABLE).await.expect("create");
    client
        .batch_execute(
            "INSERT INTO typed VALUES (1, -32768, -2147483648, -9223372036854775808, 1.5, -0.1, true, \
             'héllo', 'var', 'ab', -123.4500, 0.00012, '2024-02-29', '2024-02-29 13:45:10.123456', \
             '2024-02-29 13:45:10.123456+02'); \
             INSERT INTO typed VALUES (2, 32767, 2147483647, 9223372036854775807, 3.25, '1e300', false, \
             '', 'ten chars!', 'abcd', 12345678.9, 12345678901234567890.123456789, '1999-12-31', \
             '1970-01-01 00:00:00', '2000-01-01 00:00:00+00')",
        )
        .await
        .expect("insert");

    let statement = client
        .prepare(
            "SELECT i2, i4, i8, f4, f8, b, t, vc, c, n, nn, d, ts, tz FROM typed WHERE id = $1",
        )
        .await
        .expect("prepare");
    let types: Vec<Type> =
        statement.columns().iter().map(|column| column.type_().clone()).collect();
    assert_eq!(
        types,
        vec![
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::BOOL,
            Type::TEXT,
            Type::VARCHAR,
            Type::BPCHAR,
            Type::NUMERIC,
            Type::NUMERIC,
            Type::DATE,
            Type::TIMESTAMP,
            Type::TIMESTAMPTZ,
        ]
    );

    // tokio-postgres asks for binary results on every prepared query.
    let row = client.query_one(&statement, &[&1i32]).await.expect("row 1");
    assert_eq!(row.get::<_, i16>(0), i16::MIN);
    assert_eq!(row.get::<_, i32>(1), i32::MIN);
    assert_eq!(row.get::<_, i64>(2), i64::MIN);
    assert_eq!(row.get::<_, f32>(3), 1.5);
    assert_eq!(row.get::<_, f64>(4), -0.1);
    assert!(row.get::<_, bool>(5));
    assert_eq!(row.get::<_, String>(6), "héllo");
    assert_eq!(row.get::<_, String>(7), "var");
    assert_eq!(row.get::<_, String>(8), "ab  ", "char(4) keeps its blank padding");
    assert_eq!(row.get::<_, PgNumeric>(9), numeric("-123.4500"));
    assert_eq!(row.get::<_, PgNumeric>(10), numeric("0.00012"));
    assert_eq!(row.get::<_, NaiveDate>(11), NaiveDate::from_ymd_opt(2024, 2, 29).unwrap());
    let ts = NaiveDate::from_ymd_opt(2024, 2, 29)
        .unwrap()
        .and_hms_micro_opt(13, 45, 10, 123_456)
        .unwrap();
    assert_eq!(row.get::<_, NaiveDateTime>(12), ts);
    let tz = NaiveDate::from_ymd_opt(2024, 2, 29)
        .unwrap()
        .and_hms_micro_opt(11, 45, 10, 123_456)
        .unwrap()
        .and_utc();
    assert_eq!(row.get::<_, DateTime<Utc>>(13), tz);

    let row = client.query_one(&statement, &[&2i32]).await.expect("row 2");
    assert_eq!(row.get::<_, i16>(0), i16::MAX);
    assert_eq!(row.get::<_, i32>(1), i32::MAX);
    assert_eq!(row.get::<_, i64>(2), i64::MAX);
    assert_eq!(row.get::<_, f32>(3), 3.25);
    assert_eq!(row.get::<_, f64>(4), 1e300);
    assert!(!row.get::<_, bool>(5));
    assert_eq!(row.get::<_, String>(6), "");
    assert_eq!(row.get::<_, String>(7), "ten chars!");
    assert_eq!(row.get::<_, String>(8), "abcd");
    assert_eq!(row.get::<_, PgNumeric>(9), numeric("12345678.9000"));
    assert_eq!(row.get::<_, PgNumeric>(10), numeric("12345678901234567890.123456789"));
    assert_eq!(row.get::<_, NaiveDate>(11), NaiveDate::from_ymd_opt(1999, 12, 31).unwrap());
    assert_eq!(
        row.get::<_, NaiveDateTime>(12),
        NaiveDate::from_ymd_opt(1970, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap()
    );
    assert_eq!(
        row.get::<_, DateTime<Utc>>(13),
        NaiveDate::from_ymd_opt(2000, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc()
    );

    // Expressions have the types PostgreSQL gives them, in binary too.
    let row = client
        .query_one(
            "SELECT 1::int2 + 1::int2, 7 / 2, 7.0 / 2, 2::int8 * 3, 1.5::float4 * 2::float4, 0.5::float8, \
             'a'::char(3), 'x'::varchar(5) || 'y', 10.25::numeric(6, 3), 0::numeric, -0.5::numeric",
            &[],
        )
        .await
        .expect("expressions");
    assert_eq!(row.get::<_, i16>(0), 2);
    assert_eq!(row.get::<_, i32>(1), 3);
    assert_eq!(row.get::<_, PgNumeric>(2), numeric("3.5000000000000000"));
    assert_eq!(row.get::<_, i64>(3), 6);
    assert_eq!(row.get::<_, f32>(4), 3.0);
    assert_eq!(row.get::<_, f64>(5), 0.5);
    assert_eq!(row.get::<_, String>(6), "a  ");
    assert_eq!(row.get::<_, String>(7), "xy");
    assert_eq!(row.get::<_, PgNumeric>(8), numeric("10.250"));
    assert_eq!(row.get::<_, PgNumeric>(9), numeric("0"));
    assert_eq!(row.get::<_, PgNumeric>(10), numeric("-0.5"));
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_parameters_round_trip_every_type() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client.batch_execute(TYPES_TABLE).await.expect("create");
    let insert = client
        .prepare("INSERT INTO typed VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)")
        .await
        .expect("prepare insert");
    assert_eq!(
        insert.params(),
        &[
            Type::INT4,
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::BOOL,
            Type::TEXT,
            Type::VARCHAR,
            Type::BPCHAR,
            Type::NUMERIC,
            Type::NUMERIC,
            Type::DATE,
            Type::TIMESTAMP,
            Type::TIMESTAMPTZ,
        ]
    );
    let date = NaiveDate::from_ymd_opt(1987, 6, 5).unwrap();
    let ts = date.and_hms_micro_opt(4, 3, 2, 1).unwrap();
    let tz = NaiveDate::from_ymd_opt(2038, 1, 19).unwrap().and_hms_opt(3, 14, 8).unwrap().and_utc();
    client
        .execute(
            &insert,
            &[
                &1i32,
                &-7i16,
                &123_456i32,
                &-9_876_543_210i64,
                &0.25f32,
                &-1.0e-10f64,
                &true,
                &"text with 'quotes' and \\ backslash",
                &"vc",
                &"xyz",
                &numeric("-98765432.1234"),
                &numeric("1000000.000001"),
                &date,
                &ts,
                &tz,
            ],
        )
        .await
        .expect("insert with binary parameters");
    let nulls: [&(dyn ToSql + Sync); 15] = [
        &2i32,
        &None::<i16>,
        &None::<i32>,
        &None::<i64>,
        &None::<f32>,
        &None::<f64>,
        &None::<bool>,
        &None::<String>,
        &None::<String>,
        &None::<String>,
        &None::<PgNumeric>,
        &None::<PgNumeric>,
        &None::<NaiveDate>,
        &None::<NaiveDateTime>,
        &None::<DateTime<Utc>>,
    ];
    client.execute(&insert, &nulls).await.expect("insert NULL parameters");

    // Binary results.
    let row = client.query_one("SELECT * FROM typed WHERE id = 1", &[]).await.expect("select 1");
    assert_eq!(row.get::<_, i16>("i2"), -7);
    assert_eq!(row.get::<_, i32>("i4"), 123_456);
    assert_eq!(row.get::<_, i64>("i8"), -9_876_543_210);
    assert_eq!(row.get::<_, f32>("f4"), 0.25);
    assert_eq!(row.get::<_, f64>("f8"), -1.0e-10);
    assert!(row.get::<_, bool>("b"));
    assert_eq!(row.get::<_, String>("t"), "text with 'quotes' and \\ backslash");
    assert_eq!(row.get::<_, String>("vc"), "vc");
    assert_eq!(row.get::<_, PgNumeric>("n"), numeric("-98765432.1234"));
    assert_eq!(row.get::<_, PgNumeric>("nn"), numeric("1000000.000001"));
    assert_eq!(row.get::<_, NaiveDate>("d"), date);
    assert_eq!(row.get::<_, NaiveDateTime>("ts"), ts);
    assert_eq!(row.get::<_, DateTime<Utc>>("tz"), tz);
    let padded: String = row.get("c");

    // Text results of the same row (simple protocol).
    let rows = simple_rows(
        &client,
        "SELECT i2, i4, i8, f4, f8, b, t, vc, n, nn, d, ts, tz FROM typed ORDER BY id",
    )
    .await;
    let text = |value: &str| Some(value.to_string());
    assert_eq!(
        rows[0],
        vec![
            text("-7"),
            text("123456"),
            text("-9876543210"),
            text("0.25"),
            text("-1e-10"),
            text("t"),
            text("text with 'quotes' and \\ backslash"),
            text("vc"),
            text("-98765432.1234"),
            text("1000000.000001"),
            text("1987-06-05"),
            text("1987-06-05 04:03:02.000001"),
            text("2038-01-19 03:14:08+00"),
        ]
    );
    assert_eq!(rows[1], vec![None; 13], "every column NULL in text");

    // NULLs in binary.
    let row = client.query_one("SELECT * FROM typed WHERE id = 2", &[]).await.expect("select 2");
    assert_eq!(row.get::<_, Option<i16>>("i2"), None);
    assert_eq!(row.get::<_, Option<i32>>("i4"), None);
    assert_eq!(row.get::<_, Option<i64>>("i8"), None);
    assert_eq!(row.get::<_, Option<f32>>("f4"), None);
    assert_eq!(row.get::<_, Option<f64>>("f8"), None);
    assert_eq!(row.get::<_, Option<bool>>("b"), None);
    assert_eq!(row.get::<_, Option<String>>("t"), None);
    assert_eq!(row.get::<_, Option<String>>("vc"), None);
    assert_eq!(row.get::<_, Option<String>>("c"), None);
    assert_eq!(row.get::<_, Option<PgNumeric>>("n"), None);
    assert_eq!(row.get::<_, Option<PgNumeric>>("nn"), None);
    assert_eq!(row.get::<_, Option<NaiveDate>>("d"), None);
    assert_eq!(row.get::<_, Option<NaiveDateTime>>("ts"), None);
    assert_eq!(row.get::<_, Option<DateTime<Utc>>>("tz"), None);

    // NULL parameters compare as NULL.
    let count: i64 = client
        .query_one("SELECT count(*) FROM typed WHERE i4 = $1", &[&None::<i32>])
        .await
        .expect("NULL comparison")
        .get(0);
    assert_eq!(count, 0);
    let row = client
        .query_one(
            "SELECT $1::int4 IS NULL, coalesce($2::text, 'dflt')",
            &[&None::<i32>, &None::<&str>],
        )
        .await
        .expect("NULL params");
    assert!(row.get::<_, bool>(0));
    assert_eq!(row.get::<_, String>(1), "dflt");

    // A char(4) parameter (tokio-postgres sends it as bpchar, in binary) is blank-padded.
    assert_eq!(padded, "xyz ", "char(4) from a binary bpchar parameter");
    let text = simple_rows(&client, "SELECT c FROM typed WHERE id = 1").await;
    assert_eq!(text, vec![vec![Some("xyz ".to_string())]]);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_results_for_every_type() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    let rows = simple_rows(
        &client,
        "SELECT 1::int2, -2::int4, 3::int8, 1.5::float4, 0.1::float8, 3.14159::float4, true, false, \
         'x'::text, 'y'::varchar(3), 'z'::char(3), 1.50::numeric(5, 2), '2020-01-02'::date, \
         '2020-01-02 03:04:05'::timestamp, '2020-01-02 03:04:05.5+01'::timestamptz, NULL",
    )
    .await;
    let expected: Vec<Option<String>> = [
        Some("1"),
        Some("-2"),
        Some("3"),
        Some("1.5"),
        Some("0.1"),
        Some("3.14159"),
        Some("t"),
        Some("f"),
        Some("x"),
        Some("y"),
        Some("z  "),
        Some("1.50"),
        Some("2020-01-02"),
        Some("2020-01-02 03:04:05"),
        Some("2020-01-02 02:04:05.5+00"),
        None,
    ]
    .into_iter()
    .map(|value| value.map(str::to_string))
    .collect();
    assert_eq!(rows, vec![expected]);
    // Column types of a simple-query result.
    let messages = client
        .simple_query("SELECT 1::int2 AS a, 'b'::char(2) AS b, 1.0::numeric AS c")
        .await
        .expect("describe");
    let names = messages.iter().find_map(|message| match message {
        SimpleQueryMessage::RowDescription(columns) => {
            Some(columns.iter().map(|c| c.name().to_string()).collect::<Vec<_>>())
        }
        _ => None,
    });
    assert_eq!(names, Some(vec!["a".into(), "b".into(), "c".into()]));
}

#[tokio::test(flavor = "multi_thread")]
async fn numeric_literals_with_exponents() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    // A literal with an exponent is numeric, then cast as asked.
    let rows = simple_rows(&client, "SELECT 1.5e3, 2E-3, 1e300::float8, 1e27, -1e-27").await;
    let expected: Vec<Option<String>> = [
        "1500",
        "0.002",
        "1e+300",
        "1000000000000000000000000000",
        "-0.000000000000000000000000001",
    ]
    .into_iter()
    .map(|value| Some(value.to_string()))
    .collect();
    assert_eq!(rows, vec![expected]);
    // Known limitation (docs/design/009): tierdb's numeric holds 28 significant digits;
    // PostgreSQL returns 1e30 exactly. tierdb refuses with 22003 instead of rounding.
    for literal in ["1e30", "-1e-30"] {
        let error =
            client.simple_query(&format!("SELECT {literal}")).await.expect_err("out of range");
        assert_eq!(
            error.code(),
            Some(&tokio_postgres::error::SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
            "{literal}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Transactions

async fn ids(client: &Client, table: &str) -> Vec<i32> {
    client
        .query(&format!("SELECT id FROM {table} ORDER BY id"), &[])
        .await
        .expect("select ids")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn transactions_commit_rollback_and_isolation() {
    let server = TestServer::start(&[]);
    let a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute("CREATE TABLE acct (id int4 PRIMARY KEY, v int4)").await.expect("create");

    // COMMIT: invisible to the other connection until committed.
    a.batch_execute("BEGIN").await.expect("begin");
    a.execute("INSERT INTO acct VALUES ($1, $2)", &[&1i32, &10i32]).await.expect("insert 1");
    assert_eq!(ids(&a, "acct").await, vec![1], "own uncommitted write is visible");
    assert_eq!(
        ids(&b, "acct").await,
        Vec::<i32>::new(),
        "uncommitted write invisible to another connection"
    );
    a.batch_execute("COMMIT").await.expect("commit");
    assert_eq!(ids(&b, "acct").await, vec![1], "committed write visible");

    // ROLLBACK: never visible, gone afterwards.
    a.batch_execute("BEGIN; INSERT INTO acct VALUES (2, 20); UPDATE acct SET v = 11 WHERE id = 1")
        .await
        .expect("begin 2");
    assert_eq!(ids(&b, "acct").await, vec![1]);
    let v: i32 =
        b.query_one("SELECT v FROM acct WHERE id = 1", &[]).await.expect("b reads v").get(0);
    assert_eq!(v, 10, "uncommitted update invisible");
    a.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(ids(&a, "acct").await, vec![1]);
    let v: i32 =
        a.query_one("SELECT v FROM acct WHERE id = 1", &[]).await.expect("a reads v").get(0);
    assert_eq!(v, 10, "rolled-back update undone");

    // tokio-postgres's Transaction (BEGIN / COMMIT / ROLLBACK around extended-protocol statements).
    let mut a = a;
    {
        let transaction = a.transaction().await.expect("transaction");
        transaction
            .execute("INSERT INTO acct VALUES ($1, $2)", &[&3i32, &30i32])
            .await
            .expect("insert 3");
        assert_eq!(ids(&b, "acct").await, vec![1]);
        transaction.commit().await.expect("commit");
    }
    assert_eq!(ids(&b, "acct").await, vec![1, 3]);
    {
        let transaction = a.transaction().await.expect("transaction");
        transaction.execute("DELETE FROM acct", &[]).await.expect("delete");
        transaction.rollback().await.expect("rollback");
    }
    assert_eq!(ids(&b, "acct").await, vec![1, 3]);
    {
        // Dropped without commit: rolled back.
        let transaction = a.transaction().await.expect("transaction");
        transaction.execute("DELETE FROM acct WHERE id = 3", &[]).await.expect("delete");
    }
    assert_eq!(ids(&a, "acct").await, vec![1, 3]);

    // COMMIT / ROLLBACK outside a transaction are warnings, not errors; BEGIN inside one too.
    a.batch_execute("COMMIT").await.expect("COMMIT without a transaction is a warning");
    a.batch_execute("ROLLBACK").await.expect("ROLLBACK without a transaction is a warning");
    a.batch_execute("BEGIN; BEGIN; COMMIT").await.expect("BEGIN inside a transaction is a warning");

    // START TRANSACTION and END are synonyms.
    a.batch_execute("START TRANSACTION; INSERT INTO acct VALUES (4, 40); END")
        .await
        .expect("start/end");
    assert_eq!(ids(&b, "acct").await, vec![1, 3, 4]);
}

#[tokio::test(flavor = "multi_thread")]
async fn savepoints() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client.batch_execute("CREATE TABLE sp (id int4 PRIMARY KEY)").await.expect("create");
    client
        .batch_execute(
            "BEGIN; INSERT INTO sp VALUES (1); SAVEPOINT a; INSERT INTO sp VALUES (2); \
             SAVEPOINT b; INSERT INTO sp VALUES (3); ROLLBACK TO SAVEPOINT b; \
             INSERT INTO sp VALUES (4); RELEASE SAVEPOINT a; COMMIT",
        )
        .await
        .expect("savepoints");
    assert_eq!(ids(&client, "sp").await, vec![1, 2, 4]);

    // Rolling back to an outer savepoint undoes everything after it.
    client
        .batch_execute("BEGIN; SAVEPOINT a; INSERT INTO sp VALUES (5); SAVEPOINT b; INSERT INTO sp VALUES (6); ROLLBACK TO a; COMMIT")
        .await
        .expect("rollback to outer");
    assert_eq!(ids(&client, "sp").await, vec![1, 2, 4]);

    // A savepoint recovers from an error inside the transaction.
    client.batch_execute("BEGIN; INSERT INTO sp VALUES (7); SAVEPOINT s").await.expect("begin");
    expect_simple_error(&client, "INSERT INTO sp VALUES (1)", "23505").await;
    expect_simple_error(&client, "SELECT 1", "25P02").await;
    client.batch_execute("ROLLBACK TO SAVEPOINT s").await.expect("rollback to s");
    client
        .batch_execute("INSERT INTO sp VALUES (8); COMMIT")
        .await
        .expect("continue after savepoint");
    assert_eq!(ids(&client, "sp").await, vec![1, 2, 4, 7, 8]);

    // tokio-postgres nested transactions are savepoints.
    let mut client = client;
    let mut transaction = client.transaction().await.expect("outer");
    transaction.execute("INSERT INTO sp VALUES (9)", &[]).await.expect("insert 9");
    {
        let nested = transaction.transaction().await.expect("nested (SAVEPOINT)");
        nested.execute("INSERT INTO sp VALUES (10)", &[]).await.expect("insert 10");
        nested.rollback().await.expect("ROLLBACK TO SAVEPOINT");
    }
    {
        let nested = transaction.savepoint("named_sp").await.expect("named savepoint");
        nested.execute("INSERT INTO sp VALUES (11)", &[]).await.expect("insert 11");
        nested.commit().await.expect("RELEASE SAVEPOINT");
    }
    transaction.commit().await.expect("commit");
    assert_eq!(ids(&client, "sp").await, vec![1, 2, 4, 7, 8, 9, 11]);

    // Savepoint errors: no such savepoint (3B001); outside a transaction (25P01).
    client.batch_execute("BEGIN").await.expect("begin");
    expect_simple_error(&client, "ROLLBACK TO SAVEPOINT nope", "3B001").await;
    client.batch_execute("ROLLBACK").await.expect("rollback");
    expect_simple_error(&client, "SAVEPOINT outside", "25P01").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn error_aborts_the_transaction_until_rollback() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    let other = connect(&server).await;
    client.batch_execute("CREATE TABLE ab (id int4 PRIMARY KEY)").await.expect("create");

    // Simple protocol.
    client.batch_execute("BEGIN; INSERT INTO ab VALUES (1)").await.expect("begin");
    expect_simple_error(&client, "SELECT 1 / 0", "22012").await;
    expect_simple_error(&client, "SELECT 1", "25P02").await;
    expect_simple_error(&client, "INSERT INTO ab VALUES (2)", "25P02").await;
    // Extended protocol, same failed transaction.
    expect_extended_error(&client, "SELECT $1::int4", &[&1i32], "25P02").await;
    client.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(
        ids(&client, "ab").await,
        Vec::<i32>::new(),
        "the failed transaction's insert is gone"
    );
    assert_eq!(ids(&other, "ab").await, Vec::<i32>::new());

    // COMMIT of a failed transaction rolls back (no error in PostgreSQL).
    client.batch_execute("BEGIN; INSERT INTO ab VALUES (3)").await.expect("begin");
    expect_extended_error(&client, "SELECT * FROM missing_table", &[], "42P01").await;
    expect_simple_error(&client, "SELECT 2", "25P02").await;
    client.batch_execute("COMMIT").await.expect("COMMIT of a failed transaction");
    assert_eq!(
        ids(&client, "ab").await,
        Vec::<i32>::new(),
        "COMMIT of a failed transaction rolled back"
    );

    // An error in an implicit (single statement) transaction leaves nothing behind.
    expect_simple_error(&client, "INSERT INTO ab VALUES (4), (4)", "23505").await;
    assert_eq!(ids(&client, "ab").await, Vec::<i32>::new(), "statement atomicity");
    // An error in a multi-statement simple query aborts the rest of the string and its implicit
    // transaction.
    expect_simple_error(
        &client,
        "INSERT INTO ab VALUES (5); SELECT 1 / 0; INSERT INTO ab VALUES (6)",
        "22012",
    )
    .await;
    assert_eq!(
        ids(&client, "ab").await,
        Vec::<i32>::new(),
        "implicit transaction of a query string rolled back"
    );
}

// ---------------------------------------------------------------------------------------------
// Errors

#[tokio::test(flavor = "multi_thread")]
async fn error_codes() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE e (id int4 PRIMARY KEY, name text NOT NULL, small int2, u int4 UNIQUE)",
        )
        .await
        .expect("create");
    client.batch_execute("INSERT INTO e VALUES (1, 'a', 1, 1)").await.expect("insert");

    let cases: &[(&str, &str)] = &[
        ("SELEC 1", "42601"),
        ("SELECT * FROM no_such_table", "42P01"),
        ("SELECT no_such_column FROM e", "42703"),
        ("INSERT INTO e VALUES (1, 'b', 1, 2)", "23505"),
        ("INSERT INTO e VALUES (2, 'b', 1, 1)", "23505"),
        ("INSERT INTO e VALUES (2, NULL, 1, 2)", "23502"),
        ("INSERT INTO e (id) VALUES (3)", "23502"),
        ("UPDATE e SET name = NULL", "23502"),
        ("SELECT 'abc'::int4", "22P02"),
        ("SELECT 'not a date'::date", "22007"),
        ("SELECT '2024-13-01'::date", "22008"),
        ("SELECT '2024-01-01 25:00:00'::timestamp", "22008"),
        ("INSERT INTO e VALUES ('x', 'b', 1, 3)", "22P02"),
        ("SELECT 2147483647::int4 + 1", "22003"),
        ("SELECT 40000::int2", "22003"),
        ("INSERT INTO e VALUES (4, 'b', 40000, 4)", "22003"),
        ("SELECT 1 / 0", "22012"),
        ("SELECT 1.5 / 0", "22012"),
        ("SELECT 1 % 0", "22012"),
        ("SELECT no_such_function(1)", "42883"),
        ("CREATE TABLE e (x int4)", "42P07"),
        ("SELECT 1 + 'a'", "22P02"),
        ("SELECT id FROM e GROUP BY name", "42803"),
    ];
    let mut mismatches = Vec::new();
    for (sql, expected) in cases {
        let simple = match client.simple_query(sql).await {
            Ok(_) => "<succeeded>".to_string(),
            Err(error) => sqlstate(&error),
        };
        // The same statement through the extended protocol (errors at Parse or at Execute).
        let extended = match client.query(*sql, &[]).await {
            Ok(_) => "<succeeded>".to_string(),
            Err(error) => sqlstate(&error),
        };
        for (protocol, actual) in [("simple", simple), ("extended", extended)] {
            if actual != *expected {
                mismatches.push(format!("{sql} ({protocol}): expected {expected}, got {actual}"));
            }
        }
        // The connection is still usable.
        let one: i32 = client.query_one("SELECT 1", &[]).await.expect("usable after error").get(0);
        assert_eq!(one, 1);
    }
    assert!(mismatches.is_empty(), "wrong SQLSTATEs:\n{}", mismatches.join("\n"));
    // Errors from parameters: division by a zero parameter; out-of-range parameter into int2.
    expect_extended_error(&client, "SELECT 10 / $1::int4", &[&0i32], "22012").await;
    expect_extended_error(
        &client,
        "INSERT INTO e VALUES ($1, $2, $3, $4)",
        &[&5i32, &None::<&str>, &None::<i16>, &None::<i32>],
        "23502",
    )
    .await;
    // An error carries a message.
    let error =
        client.simple_query("SELECT * FROM no_such_table").await.expect_err("undefined table");
    let db = error.as_db_error().expect("a database error");
    assert_eq!(db.severity(), "ERROR");
    assert!(db.message().contains("no_such_table"), "message names the table: {}", db.message());
}

#[tokio::test(flavor = "multi_thread")]
async fn deadlock_between_two_connections() {
    let server = TestServer::start(&[]);
    let a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute(
        "CREATE TABLE dl (id int4 PRIMARY KEY, v int4); INSERT INTO dl VALUES (1, 0), (2, 0)",
    )
    .await
    .expect("setup");
    a.batch_execute("BEGIN; UPDATE dl SET v = v + 1 WHERE id = 1").await.expect("a locks 1");
    b.batch_execute("BEGIN; UPDATE dl SET v = v + 10 WHERE id = 2").await.expect("b locks 2");
    // a waits for b's row 2; b then waits for a's row 1: a deadlock.
    let a_waits = tokio::spawn(async move {
        let result = a.batch_execute("UPDATE dl SET v = v + 1 WHERE id = 2").await;
        (a, result)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b_result =
        tokio::time::timeout(STEP, b.batch_execute("UPDATE dl SET v = v + 10 WHERE id = 1"))
            .await
            .expect("b's update neither finished nor failed: no deadlock detection");
    // Exactly one side fails with 40P01; end the victim's transaction so the other proceeds.
    let a_committed = match b_result {
        Err(error) => {
            assert_eq!(sqlstate(&error), "40P01", "b: {error:?}");
            b.batch_execute("ROLLBACK").await.expect("b rollback");
            let (a, a_result) = tokio::time::timeout(STEP, a_waits)
                .await
                .expect("a proceeds after b's rollback")
                .expect("join");
            a_result.expect("a's update succeeds once b is the deadlock victim");
            a.batch_execute("COMMIT").await.expect("a commit");
            true
        }
        Ok(()) => {
            let (a, a_result) =
                tokio::time::timeout(STEP, a_waits).await.expect("a finished").expect("join");
            let error = a_result.expect_err("one of the two must be the deadlock victim");
            assert_eq!(sqlstate(&error), "40P01", "a: {error:?}");
            a.batch_execute("ROLLBACK").await.expect("a rollback");
            b.batch_execute("COMMIT").await.expect("b commit");
            false
        }
    };
    let check = connect(&server).await;
    let values: Vec<(i32, i32)> = check
        .query("SELECT id, v FROM dl ORDER BY id", &[])
        .await
        .expect("final values")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    if a_committed {
        assert_eq!(values, vec![(1, 1), (2, 1)], "only a's transaction committed");
    } else {
        assert_eq!(values, vec![(1, 10), (2, 10)], "only b's transaction committed");
    }
}

// ---------------------------------------------------------------------------------------------
// COPY

async fn copy_out_string(client: &Client, sql: &str) -> String {
    let stream = client.copy_out(sql).await.unwrap_or_else(|error| panic!("{sql}: {error:?}"));
    let chunks: Vec<bytes::Bytes> =
        stream.try_collect().await.unwrap_or_else(|error| panic!("{sql}: {error:?}"));
    String::from_utf8(chunks.concat()).expect("utf-8")
}

async fn copy_in_str(client: &Client, sql: &str, data: &str) -> u64 {
    let sink = client
        .copy_in::<_, bytes::Bytes>(sql)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error:?}"));
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::copy_from_slice(data.as_bytes()))
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error:?}"));
    sink.finish().await.unwrap_or_else(|error| panic!("{sql}: {error:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn copy_text_format() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE cp (id int4 PRIMARY KEY, name text, amount numeric(8, 2), day date)",
        )
        .await
        .expect("create");
    let rows = copy_in_str(
        &client,
        "COPY cp FROM STDIN",
        "1\tone\t1.50\t2024-01-01\n2\t\\N\t\\N\t\\N\n3\ttab\\there\\nnewline \\\\ backslash\t-3\t1999-12-31\n",
    )
    .await;
    assert_eq!(rows, 3);
    // A column list, data sent in several CopyData messages split mid-row.
    let sink =
        client.copy_in::<_, bytes::Bytes>("COPY cp (name, id) FROM STDIN").await.expect("copy in");
    futures_util::pin_mut!(sink);
    for chunk in ["fo", "ur\t4\nfive\t", "5\n"] {
        sink.send(bytes::Bytes::from_static(chunk.as_bytes())).await.expect("send");
    }
    assert_eq!(sink.finish().await.expect("finish"), 2);

    let text = copy_out_string(&client, "COPY cp TO STDOUT").await;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec![
            "1\tone\t1.50\t2024-01-01",
            "2\t\\N\t\\N\t\\N",
            "3\ttab\\there\\nnewline \\\\ backslash\t-3.00\t1999-12-31",
            "4\tfour\t\\N\t\\N",
            "5\tfive\t\\N\t\\N",
        ]
    );
    assert!(text.ends_with('\n'));
    // The embedded tab and newline came through as data.
    let name: String =
        client.query_one("SELECT name FROM cp WHERE id = 3", &[]).await.expect("row 3").get(0);
    assert_eq!(name, "tab\there\nnewline \\ backslash");

    let text = copy_out_string(
        &client,
        "COPY (SELECT id, name FROM cp WHERE id <= 2 ORDER BY id) TO STDOUT",
    )
    .await;
    assert_eq!(text, "1\tone\n2\t\\N\n");
    let text = copy_out_string(&client, "COPY cp (id) TO STDOUT").await;
    let mut ids: Vec<&str> = text.lines().collect();
    ids.sort_unstable();
    assert_eq!(ids, vec!["1", "2", "3", "4", "5"]);

    // Bad COPY data fails the COPY with the type's error and inserts nothing.
    let sink =
        client.copy_in::<_, bytes::Bytes>("COPY cp (id, name) FROM STDIN").await.expect("copy in");
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"6\tok\nnot_a_number\tbad\n")).await.expect("send");
    let error = sink.finish().await.expect_err("bad COPY data");
    assert_eq!(sqlstate(&error), "22P02", "{error:?}");
    let count: i64 = client.query_one("SELECT count(*) FROM cp", &[]).await.expect("count").get(0);
    assert_eq!(count, 5, "a failed COPY inserts nothing");
    // A duplicate key fails the whole COPY.
    let sink = client.copy_in::<_, bytes::Bytes>("COPY cp (id) FROM STDIN").await.expect("copy in");
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"7\n1\n")).await.expect("send");
    let error = sink.finish().await.expect_err("duplicate key");
    assert_eq!(sqlstate(&error), "23505", "{error:?}");
    let count: i64 = client.query_one("SELECT count(*) FROM cp", &[]).await.expect("count").get(0);
    assert_eq!(count, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn copy_csv_format() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute("CREATE TABLE csv (id int4 PRIMARY KEY, name text, note varchar(20))")
        .await
        .expect("create");
    let rows = copy_in_str(
        &client,
        "COPY csv FROM STDIN WITH (FORMAT csv, HEADER true)",
        "id,name,note\n1,plain,x\n2,\"with, comma\",\"quote \"\"q\"\"\"\n3,,\"\"\n4,\"multi\nline\",y\n",
    )
    .await;
    assert_eq!(rows, 4);
    let row =
        client.query_one("SELECT name, note FROM csv WHERE id = 2", &[]).await.expect("row 2");
    assert_eq!(row.get::<_, String>(0), "with, comma");
    assert_eq!(row.get::<_, String>(1), "quote \"q\"");
    let row =
        client.query_one("SELECT name, note FROM csv WHERE id = 3", &[]).await.expect("row 3");
    assert_eq!(row.get::<_, Option<String>>(0), None, "an unquoted empty CSV field is NULL");
    assert_eq!(
        row.get::<_, Option<String>>(1),
        Some(String::new()),
        "a quoted empty CSV field is ''"
    );
    let name: String =
        client.query_one("SELECT name FROM csv WHERE id = 4", &[]).await.expect("row 4").get(0);
    assert_eq!(name, "multi\nline");

    // Legacy syntax and a custom delimiter.
    let rows = copy_in_str(
        &client,
        "COPY csv (id, name) FROM STDIN WITH (FORMAT csv, DELIMITER '|')",
        "5|five\n",
    )
    .await;
    assert_eq!(rows, 1);
    let rows = copy_in_str(&client, "COPY csv (id, name) FROM STDIN CSV", "6,six\n").await;
    assert_eq!(rows, 1);

    let text = copy_out_string(
        &client,
        "COPY (SELECT * FROM csv ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)",
    )
    .await;
    assert_eq!(
        text,
        "id,name,note\n1,plain,x\n2,\"with, comma\",\"quote \"\"q\"\"\"\n3,,\"\"\n4,\"multi\nline\",y\n5,five,\n6,six,\n"
    );
    let text = copy_out_string(&client, "COPY csv (id) TO STDOUT (FORMAT csv)").await;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["1", "2", "3", "4", "5", "6"]);
}

// ---------------------------------------------------------------------------------------------
// Cancel

#[tokio::test(flavor = "multi_thread")]
async fn cancel_a_running_query() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    let token = client.cancel_token();
    let client = std::sync::Arc::new(client);
    let running = {
        let client = std::sync::Arc::clone(&client);
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let result =
                client.simple_query("SELECT count(*) FROM generate_series(1, 200000000)").await;
            (result, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!running.is_finished(), "the long query finished before it could be canceled");
    token.cancel_query(NoTls).await.expect("send cancel request");
    let (result, elapsed) =
        tokio::time::timeout(STEP, running).await.expect("canceled query ended").expect("join");
    let error = result.expect_err("the canceled query fails");
    assert_eq!(sqlstate(&error), "57014", "{error:?} after {elapsed:?}");
    // The connection is usable after the cancel, and a later query is not canceled.
    let one: i32 = client.query_one("SELECT 1", &[]).await.expect("usable after cancel").get(0);
    assert_eq!(one, 1);

    // Cancel of an extended-protocol query.
    let running = {
        let client = std::sync::Arc::clone(&client);
        tokio::spawn(async move {
            client
                .query_one("SELECT count(*) FROM generate_series(1, $1::int8)", &[&200_000_000i64])
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    token.cancel_query(NoTls).await.expect("send cancel request");
    let result =
        tokio::time::timeout(STEP, running).await.expect("canceled query ended").expect("join");
    let error = result.expect_err("the canceled extended query fails");
    assert_eq!(sqlstate(&error), "57014", "{error:?}");
    let one: i32 = client.query_one("SELECT 1", &[]).await.expect("usable after cancel").get(0);
    assert_eq!(one, 1);

    // A cancel while idle does nothing to the next query.
    token.cancel_query(NoTls).await.expect("idle cancel");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let two: i32 = client.query_one("SELECT 2", &[]).await.expect("not canceled").get(0);
    assert_eq!(two, 2);
}

// ---------------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_concurrent_connections() {
    const CONNECTIONS: i32 = 200;
    let server = TestServer::start(&[]);
    let setup = connect(&server).await;
    setup
        .batch_execute("CREATE TABLE conc (id int4 PRIMARY KEY, who text, n int8)")
        .await
        .expect("create");
    let connection_string = server.connection_string();
    // Connect all first, so that all 200 sessions are open at the same time.
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        let connection_string = connection_string.clone();
        clients.push(tokio::spawn(async move {
            let (client, connection) =
                tokio_postgres::connect(&connection_string, NoTls).await.expect("connect");
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client
        }));
    }
    let mut connected = Vec::new();
    for client in clients {
        connected.push(
            tokio::time::timeout(STEP, client).await.expect("connect in time").expect("join"),
        );
    }
    let mut tasks = Vec::new();
    for (index, client) in connected.into_iter().enumerate() {
        let id = i32::try_from(index).expect("small");
        tasks.push(tokio::spawn(async move {
            let statement =
                client.prepare("INSERT INTO conc VALUES ($1, $2, $3)").await.expect("prepare");
            client
                .execute(&statement, &[&id, &format!("client {id}"), &i64::from(id * 2)])
                .await
                .expect("insert");
            client
                .batch_execute(&format!("BEGIN; UPDATE conc SET n = n + 1 WHERE id = {id}; COMMIT"))
                .await
                .expect("update");
            let row = client
                .query_one("SELECT who, n FROM conc WHERE id = $1", &[&id])
                .await
                .expect("select");
            assert_eq!(row.get::<_, String>(0), format!("client {id}"));
            assert_eq!(row.get::<_, i64>(1), i64::from(id * 2 + 1));
            let total: i64 =
                client.query_one("SELECT count(*) FROM conc", &[]).await.expect("count").get(0);
            assert!((1..=i64::from(CONNECTIONS)).contains(&total));
            client
        }));
    }
    let mut done = Vec::new();
    for task in tasks {
        done.push(
            tokio::time::timeout(STEP * 2, task).await.expect("statements in time").expect("task"),
        );
    }
    assert_eq!(done.len(), 200);
    let row = setup.query_one("SELECT count(*), sum(n) FROM conc", &[]).await.expect("totals");
    assert_eq!(row.get::<_, i64>(0), i64::from(CONNECTIONS));
    // sum(int8) is numeric in PostgreSQL.
    let expected: i64 = (0..i64::from(CONNECTIONS)).map(|id| id * 2 + 1).sum();
    assert_eq!(row.get::<_, PgNumeric>(1), numeric(&expected.to_string()));
    drop(done);
}

// ---------------------------------------------------------------------------------------------
// Shutdown and restart

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_then_restart_keeps_committed_data() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE kept (id int4 PRIMARY KEY, name text); CREATE INDEX kept_name ON kept (name); \
             INSERT INTO kept SELECT g, 'name ' || g FROM generate_series(1, 1000) AS g(g); \
             BEGIN; UPDATE kept SET name = 'updated' WHERE id = 1; DELETE FROM kept WHERE id = 2; COMMIT",
        )
        .await
        .expect("setup");
    // An uncommitted transaction still open on another connection at shutdown.
    let open = connect(&server).await;
    open.batch_execute("BEGIN; INSERT INTO kept VALUES (5000, 'uncommitted'); UPDATE kept SET name = 'lost' WHERE id = 3").await.expect("open txn");
    drop(client);
    let data_dir = server.stop();
    drop(open);

    let server = TestServer::start_in(data_dir, &[]);
    let client = connect(&server).await;
    let count: i64 =
        client.query_one("SELECT count(*) FROM kept", &[]).await.expect("count").get(0);
    assert_eq!(count, 999);
    let name: String =
        client.query_one("SELECT name FROM kept WHERE id = 1", &[]).await.expect("row 1").get(0);
    assert_eq!(name, "updated");
    assert!(client
        .query_opt("SELECT 1 FROM kept WHERE id = 2", &[])
        .await
        .expect("row 2")
        .is_none());
    let name: String =
        client.query_one("SELECT name FROM kept WHERE id = 3", &[]).await.expect("row 3").get(0);
    assert_eq!(name, "name 3", "an uncommitted update does not survive the restart");
    assert!(client
        .query_opt("SELECT 1 FROM kept WHERE id = 5000", &[])
        .await
        .expect("row 5000")
        .is_none());
    // The index survived too, and the table accepts writes.
    let id: i32 = client
        .query_one("SELECT id FROM kept WHERE name = $1", &[&"name 777"])
        .await
        .expect("by name")
        .get(0);
    assert_eq!(id, 777);
    client
        .batch_execute("INSERT INTO kept VALUES (5000, 'after restart')")
        .await
        .expect("insert after restart");
    expect_simple_error(&client, "INSERT INTO kept VALUES (1, 'dup')", "23505").await;

    // A second restart keeps the post-restart write as well.
    drop(client);
    let data_dir = server.stop();
    let server = TestServer::start_in(data_dir, &[]);
    let client = connect(&server).await;
    let count: i64 =
        client.query_one("SELECT count(*) FROM kept", &[]).await.expect("count").get(0);
    assert_eq!(count, 1000);
}
