"""psycopg 3 against a running tierdb server (port from TIERDB_PORT).

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python
Every expectation is what PostgreSQL itself answers.
"""

import datetime as dt
import os
import uuid
from decimal import Decimal

import psycopg
import psycopg.errors
import pytest
from psycopg import sql


def _port():
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return int(port)


def _connect(**kwargs):
    return psycopg.connect(
        host="127.0.0.1", port=_port(), user="tierdb", dbname="tierdb", connect_timeout=30, **kwargs
    )


@pytest.fixture
def conn():
    with _connect() as connection:
        yield connection


@pytest.fixture
def autoconn():
    with _connect(autocommit=True) as connection:
        yield connection


@pytest.fixture
def table():
    """A table name unique to the test (the server is shared by every test)."""
    return "t_" + uuid.uuid4().hex[:12]


# ---------------------------------------------------------------------------------------------
# Protocols


def test_simple_protocol_statement_list(autoconn, table):
    # No parameters and text results: psycopg sends a simple Query message, which may hold
    # several statements; the cursor walks their results with nextset().
    cur = autoconn.execute(
        f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text); "
        f"INSERT INTO {table} VALUES (1, 'one'), (2, NULL); "
        f"SELECT id, name FROM {table} ORDER BY id"
    )
    assert cur.statusmessage == "CREATE TABLE"
    assert cur.nextset()
    assert cur.statusmessage == "INSERT 0 2"
    assert cur.rowcount == 2
    assert cur.nextset()
    assert cur.statusmessage == "SELECT 2"
    assert not cur.nextset()
    assert cur.fetchall() == [(1, "one"), (2, None)]
    assert [column.name for column in cur.description] == ["id", "name"]
    assert cur.rowcount == 2
    cur = autoconn.execute(f"UPDATE {table} SET name = 'x'")
    assert cur.rowcount == 2
    assert cur.statusmessage == "UPDATE 2"


def test_simple_query_string_is_one_implicit_transaction(autoconn, table):
    # PostgreSQL runs the statements of one simple Query message in one implicit transaction:
    # an error in a later statement rolls back the earlier ones.
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY)")
    with pytest.raises(psycopg.errors.DivisionByZero):
        autoconn.execute(f"INSERT INTO {table} VALUES (1); SELECT 1 / 0; INSERT INTO {table} VALUES (2)")
    assert autoconn.execute(f"SELECT id FROM {table}").fetchall() == []


def test_client_side_binding_cursor(autoconn, table):
    # ClientCursor merges parameters into the query text and uses the simple protocol.
    cur = psycopg.ClientCursor(autoconn)
    cur.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text, price numeric(8, 2))")
    cur.execute(
        f"INSERT INTO {table} VALUES (%s, %s, %s)", (1, "it's \\ quoted", Decimal("9.99"))
    )
    cur.execute(f"SELECT id, name, price FROM {table} WHERE name = %s", ("it's \\ quoted",))
    assert cur.fetchall() == [(1, "it's \\ quoted", Decimal("9.99"))]


def test_extended_protocol_server_side_binding(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text NOT NULL, n int8)")
    cur = autoconn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (1, "a", 10))
    assert cur.rowcount == 1
    cur.execute(f"INSERT INTO {table} VALUES (%(id)s, %(name)s, %(n)s)", {"id": 2, "name": "b", "n": None})
    cur.execute(f"SELECT name, n FROM {table} WHERE id = %s", (2,))
    assert cur.fetchone() == ("b", None)
    # %s with an untyped str: the server infers the parameter's type from the context.
    cur.execute(f"SELECT id FROM {table} WHERE name = %s", ("a",))
    assert cur.fetchall() == [(1,)]
    cur.execute("SELECT %s + 1", (41,))
    assert cur.fetchone() == (42,)
    cur.execute("SELECT %s::text || %s", ("x", "y"))
    assert cur.fetchone() == ("xy",)
    # Binary parameters (%b).
    cur.execute("SELECT %b::int8 * 2, %b::text", (21, "bin"))
    assert cur.fetchone() == (42, "bin")


def test_prepared_statements(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, v text)")
    cur = autoconn.cursor()
    for i in range(10):
        # prepare=True: a named server-side statement, executed again and again.
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (i, f"v{i}"), prepare=True)
    for i in range(10):
        cur.execute(f"SELECT v FROM {table} WHERE id = %s", (i,), prepare=True)
        assert cur.fetchone() == (f"v{i}",)
    cur.execute(f"SELECT count(*) FROM {table}")
    assert cur.fetchone() == (10,)


def test_binary_cursor(autoconn, table):
    autoconn.execute(
        f"CREATE TABLE {table} (id int4 PRIMARY KEY, i2 int2, i8 int8, f4 float4, f8 float8, "
        "b bool, t text, vc varchar(5), c char(3), n numeric(10, 3), d date, ts timestamp, "
        "tz timestamptz)"
    )
    autoconn.execute(
        f"INSERT INTO {table} VALUES (1, -5, 9000000000, 0.5, 2.25, true, 'txt', 'vc', 'c', "
        "-12.5, '2001-02-03', '2001-02-03 04:05:06.789', '2001-02-03 04:05:06+03')"
    )
    autoconn.execute(f"INSERT INTO {table} (id) VALUES (2)")
    cur = autoconn.cursor(binary=True)
    cur.execute(f"SELECT i2, i8, f4, f8, b, t, vc, c, n, d, ts, tz FROM {table} ORDER BY id")
    assert cur.pgresult.fformat(0) == 1, "binary results requested"
    rows = cur.fetchall()
    assert rows[0] == (
        -5,
        9000000000,
        0.5,
        2.25,
        True,
        "txt",
        "vc",
        "c  ",
        Decimal("-12.500"),
        dt.date(2001, 2, 3),
        dt.datetime(2001, 2, 3, 4, 5, 6, 789000),
        dt.datetime(2001, 2, 3, 1, 5, 6, tzinfo=dt.timezone.utc),
    )
    assert rows[1] == (None,) * 12
    type_names = [column.type_display for column in cur.description]
    # Type OIDs and modifiers from the RowDescription.
    assert type_names == [
        "int2",
        "int8",
        "float4",
        "float8",
        "bool",
        "text",
        "varchar(5)",
        "bpchar(3)",
        "numeric(10,3)",
        "date",
        "timestamp",
        "timestamptz",
    ]


@pytest.mark.parametrize("binary", [False, True])
def test_types_round_trip(autoconn, table, binary):
    autoconn.execute(
        f"CREATE TABLE {table} (id int4 PRIMARY KEY, i int8, f float8, n numeric, b bool, "
        "s text, d date, ts timestamp, tz timestamptz)"
    )
    values = [
        (1, 1234567890123, 3.5, Decimal("123.4560"), True, "héllo wörld", dt.date(2024, 2, 29),
         dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
         dt.datetime(2024, 2, 29, 12, 0, tzinfo=dt.timezone.utc)),
        (2, -1, -0.125, Decimal("-0.001"), False, "", dt.date(1970, 1, 1),
         dt.datetime(1970, 1, 1), dt.datetime(1999, 12, 31, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))),
        (3, None, None, None, None, None, None, None, None),
    ]
    cur = autoconn.cursor(binary=binary)
    for row in values:
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
    cur.execute(f"SELECT * FROM {table} ORDER BY id")
    got = cur.fetchall()
    assert got[0] == values[0]
    assert got[1][:8] == values[1][:8]
    # timestamptz comes back in the session time zone (UTC); the instant is the same.
    assert got[1][8] == values[1][8]
    assert got[1][8].utcoffset() == dt.timedelta(0)
    assert got[2] == values[2]
    # Python int sizes: psycopg sends int2/int4/int8/numeric by magnitude.
    cur.execute("SELECT %s, %s, %s, %s", (1, 100000, 10**12, -(10**20)))
    assert cur.fetchone() == (1, 100000, 10**12, -(10**20))
    cur.execute("SELECT %s::numeric(6, 2), %s::float4", (Decimal("1.005"), 0.1))
    n, f4 = cur.fetchone()
    assert n == Decimal("1.01")
    assert abs(f4 - 0.1) < 1e-7


# ---------------------------------------------------------------------------------------------
# Transactions


def test_transactions_commit_and_rollback(table):
    with _connect() as a, _connect(autocommit=True) as b:
        a.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY)")
        a.commit()
        # psycopg opens a transaction implicitly (autocommit off).
        a.execute(f"INSERT INTO {table} VALUES (1)")
        assert a.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert b.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        a.commit()
        assert b.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)
        a.execute(f"INSERT INTO {table} VALUES (2)")
        a.rollback()
        assert a.execute(f"SELECT id FROM {table}").fetchall() == [(1,)]
        a.rollback()

        # The transaction() context: commit on success, rollback on an exception.
        with b.transaction():
            b.execute(f"INSERT INTO {table} VALUES (3)")
        with pytest.raises(ZeroDivisionError):
            with b.transaction():
                b.execute(f"INSERT INTO {table} VALUES (4)")
                1 / 0
        assert b.execute(f"SELECT id FROM {table} ORDER BY id").fetchall() == [(1,), (3,)]

        # Nested transaction() blocks are savepoints.
        with b.transaction():
            b.execute(f"INSERT INTO {table} VALUES (5)")
            with pytest.raises(psycopg.errors.UniqueViolation):
                with b.transaction():
                    b.execute(f"INSERT INTO {table} VALUES (6)")
                    b.execute(f"INSERT INTO {table} VALUES (1)")
            b.execute(f"INSERT INTO {table} VALUES (7)")
        assert b.execute(f"SELECT id FROM {table} ORDER BY id").fetchall() == [(1,), (3,), (5,), (7,)]


def test_error_aborts_transaction(conn, table):
    conn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY)")
    conn.commit()
    conn.execute(f"INSERT INTO {table} VALUES (1)")
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("SELECT 1 / 0")
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
    with pytest.raises(psycopg.errors.InFailedSqlTransaction) as failed:
        conn.execute("SELECT 1")
    assert failed.value.sqlstate == "25P02"
    conn.rollback()
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


# ---------------------------------------------------------------------------------------------
# Errors


ERRORS = [
    ("SELEC 1", psycopg.errors.SyntaxError, "42601"),
    ("SELECT * FROM no_such_table", psycopg.errors.UndefinedTable, "42P01"),
    ("SELECT no_such_column FROM {t}", psycopg.errors.UndefinedColumn, "42703"),
    ("INSERT INTO {t} VALUES (1, 'dup')", psycopg.errors.UniqueViolation, "23505"),
    ("INSERT INTO {t} VALUES (2, NULL)", psycopg.errors.NotNullViolation, "23502"),
    ("SELECT 'abc'::int4", psycopg.errors.InvalidTextRepresentation, "22P02"),
    ("SELECT 32767::int2 + 1::int2", psycopg.errors.NumericValueOutOfRange, "22003"),
    ("SELECT 1 / 0", psycopg.errors.DivisionByZero, "22012"),
    ("SELECT no_such_function()", psycopg.errors.UndefinedFunction, "42883"),
]


@pytest.mark.parametrize("query,error_class,sqlstate", ERRORS)
@pytest.mark.parametrize("extended", [False, True])
def test_error_classes(autoconn, table, query, error_class, sqlstate, extended):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text NOT NULL)")
    autoconn.execute(f"INSERT INTO {table} VALUES (1, 'one')")
    query = query.format(t=table)
    with pytest.raises(error_class) as raised:
        if extended:
            # Binary results make psycopg use Parse/Bind/Describe/Execute even without parameters.
            autoconn.cursor().execute(query, binary=True)
        else:
            autoconn.execute(query)
    assert raised.value.sqlstate == sqlstate
    assert raised.value.diag.severity == "ERROR"
    assert raised.value.diag.message_primary
    # The connection is still usable.
    assert autoconn.execute("SELECT 1").fetchone() == (1,)


# ---------------------------------------------------------------------------------------------
# COPY and executemany


def test_copy_from_stdin(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text, amount numeric(8, 2), day date)")
    cur = autoconn.cursor()
    with cur.copy(f"COPY {table} FROM STDIN") as copy:
        copy.write_row((1, "one", Decimal("1.50"), dt.date(2024, 1, 1)))
        copy.write_row((2, None, None, None))
        copy.write_row((3, "tab\tnewline\nbackslash\\", Decimal("-3"), dt.date(1999, 12, 31)))
    assert cur.rowcount == 3
    with cur.copy(f"COPY {table} (id, name) FROM STDIN") as copy:
        copy.write(b"4\tfour\n5\tfive\n")
    assert cur.rowcount == 2
    with cur.copy(f"COPY {table} (id, name) FROM STDIN WITH (FORMAT csv)") as copy:
        copy.write(b'6,"six, with comma"\n7,\n')
    cur.execute(f"SELECT id, name, amount, day FROM {table} ORDER BY id")
    assert cur.fetchall() == [
        (1, "one", Decimal("1.50"), dt.date(2024, 1, 1)),
        (2, None, None, None),
        (3, "tab\tnewline\nbackslash\\", Decimal("-3.00"), dt.date(1999, 12, 31)),
        (4, "four", None, None),
        (5, "five", None, None),
        (6, "six, with comma", None, None),
        (7, None, None, None),
    ]
    # A bad row fails the whole COPY.
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        with cur.copy(f"COPY {table} (id) FROM STDIN") as copy:
            copy.write(b"8\nnot a number\n")
    assert autoconn.execute(f"SELECT count(*) FROM {table}").fetchone() == (7,)


def test_copy_to_stdout(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text, day date)")
    autoconn.execute(f"INSERT INTO {table} VALUES (1, 'a', '2020-05-06'), (2, NULL, NULL), (3, 'c,\"q\"', NULL)")
    cur = autoconn.cursor()
    with cur.copy(f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT") as copy:
        data = b"".join(bytes(chunk) for chunk in copy)
    assert data == b'1\ta\t2020-05-06\n2\t\\N\t\\N\n3\tc,"q"\t\\N\n'
    with cur.copy(f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT") as copy:
        copy.set_types(["int4", "text", "date"])
        rows = list(copy.rows())
    assert rows == [(1, "a", dt.date(2020, 5, 6)), (2, None, None), (3, 'c,"q"', None)]
    with cur.copy(f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)") as copy:
        data = b"".join(bytes(chunk) for chunk in copy)
    assert data == b'id,name,day\n1,a,2020-05-06\n2,,\n3,"c,""q""",\n'


def test_executemany(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, name text, score float8)")
    cur = autoconn.cursor()
    rows = [(i, f"name {i}", i / 4) for i in range(200)]
    # psycopg pipelines executemany (many Parse/Bind/Execute, one Sync).
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)
    assert cur.rowcount == 200
    cur.execute(f"SELECT count(*), sum(score) FROM {table}")
    assert cur.fetchone() == (200, sum(i / 4 for i in range(200)))
    cur.executemany(f"UPDATE {table} SET name = %s WHERE id = %s", [("x", 1), ("y", 2), ("z", 999)])
    assert cur.rowcount == 2
    # RETURNING results of each statement.
    cur.executemany(
        f"INSERT INTO {table} VALUES (%s, %s, %s) RETURNING id * 10",
        [(1000, "a", 0.0), (1001, "b", 0.0)],
        returning=True,
    )
    results = []
    while True:
        results.append(cur.fetchone())
        if not cur.nextset():
            break
    assert results == [(10000,), (10010,)]
    # A failing row fails executemany; the connection stays usable.
    with pytest.raises(psycopg.errors.UniqueViolation):
        cur.executemany(f"INSERT INTO {table} (id) VALUES (%s)", [(2000,), (1,)])
    assert autoconn.execute("SELECT 1").fetchone() == (1,)


def test_pipeline_mode(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY)")
    with autoconn.pipeline():
        cur = autoconn.cursor()
        for i in range(20):
            cur.execute(f"INSERT INTO {table} VALUES (%s)", (i,))
        cur.execute(f"SELECT count(*) FROM {table}")
    assert cur.fetchone() == (20,)


def test_sql_composition_and_identifiers(autoconn, table):
    query = sql.SQL("CREATE TABLE {} ({} int4 PRIMARY KEY, {} text)").format(
        sql.Identifier(table), sql.Identifier("Mixed Case"), sql.Identifier("select")
    )
    autoconn.execute(query)
    autoconn.execute(
        sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(sql.Identifier(table)), (1, "kw")
    )
    cur = autoconn.execute(sql.SQL("SELECT {}, {} FROM {}").format(
        sql.Identifier("Mixed Case"), sql.Identifier("select"), sql.Identifier(table)
    ))
    assert cur.fetchall() == [(1, "kw")]
    assert [column.name for column in cur.description] == ["Mixed Case", "select"]


def test_named_cursor_reads_in_batches(conn):
    """A psycopg server-side cursor: DECLARE, Describe of the cursor's portal, then
    FETCH FORWARD itersize until the rows run out."""
    with conn.cursor(name="c_named") as cursor:
        cursor.itersize = 1000
        cursor.execute("SELECT g, repeat('x', 10) FROM generate_series(1, 25000) g")
        assert [column.name for column in cursor.description] == ["g", "repeat"]
        total = 0
        count = 0
        for number, text in cursor:
            total += number
            count += 1
            assert text == "x" * 10
        assert (count, total) == (25000, 25000 * 25001 // 2)
    conn.rollback()


def test_declare_outside_a_transaction_block_is_25p01(autoconn):
    with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
        autoconn.execute("DECLARE c CURSOR FOR SELECT 1")
    with pytest.raises(psycopg.errors.InvalidCursorName):
        with autoconn.transaction():
            autoconn.execute("FETCH 1 FROM nope")


@pytest.mark.parametrize("binary", [False, True])
def test_arrays_round_trip_as_python_lists(autoconn, binary):
    """Python lists travel as PostgreSQL arrays (text[] and int4[] with NULL elements),
    in text and binary parameters and results; ANY over a list parameter; array_agg."""
    autoconn.execute("DROP TABLE IF EXISTS py_arrays")
    autoconn.execute("CREATE TABLE py_arrays (id int PRIMARY KEY, tags text[], nums int[])")
    placeholder = "%b" if binary else "%s"
    insert = f"INSERT INTO py_arrays VALUES ({placeholder}, {placeholder}, {placeholder})"
    autoconn.execute(insert, (1, ["a", "b c", None, "{"], [1, 2]))
    autoconn.execute(insert, (2, [], [3, None]))
    rows = autoconn.execute("SELECT * FROM py_arrays ORDER BY id", binary=binary).fetchall()
    assert rows == [(1, ["a", "b c", None, "{"], [1, 2]), (2, [], [3, None])]
    found = autoconn.execute("SELECT id FROM py_arrays WHERE id = ANY(%s)", ([2, 5],)).fetchall()
    assert found == [(2,)]
    tagged = autoconn.execute("SELECT id FROM py_arrays WHERE %s = ANY(tags)", ("b c",)).fetchall()
    assert tagged == [(1,)]
    aggregated = autoconn.execute(
        "SELECT array_agg(id ORDER BY id DESC), array_agg(nums[1] ORDER BY id) FROM py_arrays",
        binary=binary,
    ).fetchone()
    assert aggregated == ([2, 1], [1, 3])
    autoconn.execute("DROP TABLE py_arrays")


# ---------------------------------------------------------------------------------------------
# json, jsonb and regclass


@pytest.mark.parametrize("binary", [False, True])
def test_json_and_jsonb_load_as_python_objects(autoconn, table, binary):
    from psycopg.types.json import Json, Jsonb

    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, j json, b jsonb)")
    autoconn.execute(
        f"INSERT INTO {table} VALUES (%s, %s, %s)",
        (1, Json({"a": [1, 2], "s": "x"}), Jsonb({"k": None, "n": 1.5})),
        binary=binary,
    )
    autoconn.execute(f"INSERT INTO {table} VALUES (2, '[1, 2, 3]', '{{\"b\": 1, \"a\": 2}}')")
    cur = autoconn.cursor(binary=binary)
    cur.execute(f"SELECT j, b, b->'n', j->>'s' FROM {table} ORDER BY id")
    assert [column.type_code for column in cur.description] == [114, 3802, 3802, 25]
    assert cur.fetchall() == [
        ({"a": [1, 2], "s": "x"}, {"k": None, "n": 1.5}, 1.5, "x"),
        ([1, 2, 3], {"a": 2, "b": 1}, None, None),
    ]
    cur.execute(f"SELECT id FROM {table} WHERE b @> %s", (Jsonb({"a": 2}),))
    assert cur.fetchall() == [(2,)]
    cur.execute(f"SELECT b::text FROM {table} WHERE id = 2")
    assert cur.fetchone() == ('{"a": 2, "b": 1}',)
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        autoconn.execute(f"INSERT INTO {table} VALUES (3, 'not json', NULL)")


@pytest.mark.parametrize("binary", [False, True])
def test_uuid_loads_as_python_uuid(autoconn, table, binary):
    value = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    autoconn.execute(f"CREATE TABLE {table} (id uuid PRIMARY KEY, tags uuid[], n int4)")
    autoconn.execute(f"INSERT INTO {table} VALUES (%s, %s, 1)", (value, [value, None]), binary=binary)
    autoconn.execute(f"INSERT INTO {table} VALUES ('{{00000000-0000-0000-0000-000000000002}}', NULL, 2)")
    cur = autoconn.cursor(binary=binary)
    cur.execute(f"SELECT id, tags FROM {table} ORDER BY id")
    assert [column.type_code for column in cur.description] == [2950, 2951]
    assert cur.fetchall() == [(uuid.UUID(int=2), None), (value, [value, None])]
    cur.execute(f"SELECT n FROM {table} WHERE id = %s", (value,))
    assert cur.fetchall() == [(1,)]
    cur.execute("SELECT gen_random_uuid()")
    assert cur.fetchone()[0].version == 4
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        autoconn.execute(f"INSERT INTO {table} VALUES ('a0eebc99', NULL, 3)")


@pytest.mark.parametrize("binary", [False, True])
def test_interval_and_time_load_as_timedelta_and_time(autoconn, table, binary):
    span = dt.timedelta(days=3, hours=4, minutes=5, seconds=6, microseconds=500000)
    clock = dt.time(10, 20, 30, 123456)
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, d interval, t time)")
    autoconn.execute(f"INSERT INTO {table} VALUES (1, %s, %s)", (span, clock), binary=binary)
    autoconn.execute(f"INSERT INTO {table} VALUES (2, '-1 day +02:00', '24:00'::time - interval '1 hour')")
    cur = autoconn.cursor(binary=binary)
    cur.execute(f"SELECT d, t FROM {table} ORDER BY id")
    assert [column.type_code for column in cur.description] == [1186, 1083]
    assert cur.fetchall() == [(span, clock), (dt.timedelta(days=-1, hours=2), dt.time(23, 0))]
    cur.execute("SELECT interval '1 day' * 1.5, time '10:00' + interval '90 minutes'")
    assert cur.fetchone() == (dt.timedelta(days=1, hours=12), dt.time(11, 30))
    cur.execute(f"SELECT id FROM {table} WHERE d = %s", (span,))
    assert cur.fetchall() == [(1,)]


def test_json_copy_round_trip(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY, j json, b jsonb)")
    cur = autoconn.cursor()
    with cur.copy(f"COPY {table} FROM STDIN") as copy:
        copy.write(b'1\t{"a" :  1}\t{"b": [1, 2], "a": "x"}\n2\t\\N\t"s"\n')
    with cur.copy(f"COPY (SELECT * FROM {table} ORDER BY id) TO STDOUT") as copy:
        data = b"".join(bytes(chunk) for chunk in copy)
    # json keeps its text; jsonb prints its keys sorted, with PostgreSQL's spacing.
    assert data == b'1\t{"a" :  1}\t{"a": "x", "b": [1, 2]}\n2\t\\N\t"s"\n'
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        with cur.copy(f"COPY {table} FROM STDIN") as copy:
            copy.write(b"3\t{\tnull\n")


def test_regclass_columns_and_parameters(autoconn, table):
    autoconn.execute(f"CREATE TABLE {table} (id int4 PRIMARY KEY)")
    cur = autoconn.execute(
        "SELECT CAST(%s AS REGCLASS), "
        "CAST(CAST(%s AS REGCLASS) AS OID) = (SELECT oid FROM pg_class WHERE relname = %s)",
        (table, table, table),
    )
    assert [column.type_code for column in cur.description] == [2205, 16]
    assert cur.fetchone() == (table, True)
    cur = autoconn.execute(
        "SELECT count(*) FROM pg_description WHERE classoid = CAST(%s AS REGCLASS)",
        ("pg_catalog.pg_class",),
    )
    assert cur.fetchone() == (0,)
    with pytest.raises(psycopg.errors.UndefinedTable):
        autoconn.execute("SELECT CAST(%s AS REGCLASS)", ("t_missing_" + table,))
