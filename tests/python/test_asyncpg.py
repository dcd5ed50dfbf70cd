"""asyncpg against a running tierdb server (port from TIERDB_PORT): a pool (connections
acquired and released concurrently: release resets the session with
pg_advisory_unlock_all(), CLOSE ALL, UNLISTEN * and RESET ALL), fetch / fetchrow / fetchval
with parameters of many types in asyncpg's binary format, executemany, transactions
(commit, rollback, a savepoint), prepared statements, binary COPY
(copy_records_to_table: COPY ... FROM STDIN (FORMAT binary); copy_from_table and
copy_from_query to text, CSV and binary), and PostgreSQL's SQLSTATEs as asyncpg's
exception classes.

Each test is a plain function running its coroutine with asyncio.run (no pytest plugin).

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python/test_asyncpg.py
"""

import asyncio
import datetime
import io
import json
import os
import struct
from decimal import Decimal

import asyncpg
import pytest


def _dsn():
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return f"postgresql://tierdb@127.0.0.1:{port}/tierdb"


def run(coroutine_function):
    """Runs `coroutine_function(connection)` on a fresh connection, closed afterwards."""

    async def main():
        connection = await asyncpg.connect(_dsn())
        try:
            return await coroutine_function(connection)
        finally:
            await connection.close()

    return asyncio.run(main())


UTC = datetime.timezone.utc


def test_pool_acquire_release_concurrently():
    async def main():
        async with asyncpg.create_pool(_dsn(), min_size=2, max_size=4) as pool:
            await pool.execute("DROP TABLE IF EXISTS ap_pool")
            await pool.execute("CREATE TABLE ap_pool (worker int, n int)")

            async def worker(number):
                # Each acquire/release cycle resets the connection on release.
                for round_number in range(5):
                    async with pool.acquire() as connection:
                        await connection.execute(
                            "INSERT INTO ap_pool VALUES ($1, $2)", number, round_number
                        )
                        assert await connection.fetchval("SELECT $1::int + 1", number) == number + 1

            await asyncio.gather(*(worker(number) for number in range(8)))
            rows = await pool.fetch("SELECT worker, count(*) AS n FROM ap_pool GROUP BY worker ORDER BY worker")
            assert [(row["worker"], row["n"]) for row in rows] == [(n, 5) for n in range(8)]
            assert pool.get_size() <= 4
            connection = await pool.acquire()
            # What release runs, run by hand: it must succeed and leave a usable session.
            await connection.execute("SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;")
            await connection.execute("SET application_name = 'pooled'")
            await pool.release(connection)
            async with pool.acquire() as again:
                assert await again.fetchval("SHOW application_name") != "pooled"
            await pool.execute("DROP TABLE ap_pool")

    asyncio.run(main())


def test_parameters_of_many_types_round_trip():
    values = {
        "int4": ("int4", 2_147_483_647),
        "int8": ("int8", -9_223_372_036_854_775_808),
        "int2": ("int2", -32_768),
        "text": ("text", "héllo, wörld ✓"),
        "numeric": ("numeric", Decimal("-12345678901234567890.123456789")),
        "bool": ("bool", True),
        "float8": ("float8", 1.0e-300),
        "float4": ("float4", 0.5),
        "date": ("date", datetime.date(1999, 12, 31)),
        "timestamp": ("timestamp", datetime.datetime(2024, 2, 29, 23, 59, 59, 123456)),
        "timestamptz": ("timestamptz", datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
        "bytea": ("bytea", b"\x00\x01\xfe\xff"),
        "text_array": ("text[]", ["a", "b c", None, ""]),
        # Arrays of other element types make asyncpg introspect their types with a
        # WITH RECURSIVE query over pg_type, pg_namespace, pg_range and pg_attribute.
        "int_array": ("int4[]", [1, None, -3]),
        "bigint_array": ("int8[]", [2**40, -1]),
        "numeric_array": ("numeric[]", [Decimal("1.5"), None]),
        "bool_array": ("bool[]", [True, False]),
        "date_array": ("date[]", [datetime.date(2024, 2, 29)]),
        "jsonb": ("jsonb", '{"a": [1, 2, {"b": null}]}'),
    }

    async def main(connection):
        for name, (type_name, value) in values.items():
            back = await connection.fetchval(f"SELECT $1::{type_name}", value)
            assert back == value, (name, back)
            assert await connection.fetchval(f"SELECT $1::{type_name} IS NULL", None) is True
        row = await connection.fetchrow(
            "SELECT $1::int4 + 1 AS next, upper($2::text) AS shout, $3::numeric * 2 AS twice,"
            " $4::date + 1 AS tomorrow, $5::jsonb -> 'a' AS a",
            41,
            "quiet",
            Decimal("1.25"),
            datetime.date(2000, 2, 28),
            '{"a": 7}',
        )
        assert row["next"] == 42
        assert row["shout"] == "QUIET"
        assert row["twice"] == Decimal("2.50")
        assert row["tomorrow"] == datetime.date(2000, 2, 29)
        assert json.loads(row["a"]) == 7
        assert row is not None and len(row) == 5
        assert await connection.fetchrow("SELECT 1 WHERE false") is None

    run(main)


def test_uuid_round_trips_in_binary():
    """uuid parameters, results, arrays and binary COPY (asyncpg sends and reads uuid in
    binary), and gen_random_uuid as a column default."""
    import uuid

    value = uuid.UUID("12345678-1234-5678-1234-567812345678")

    async def main(connection):
        assert await connection.fetchval("SELECT $1::uuid", value) == value
        assert await connection.fetchval("SELECT $1::uuid[]", [value, None]) == [value, None]
        await connection.execute("DROP TABLE IF EXISTS ap_uuid")
        await connection.execute(
            "CREATE TABLE ap_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), label text)"
        )
        generated = await connection.fetchval("INSERT INTO ap_uuid (label) VALUES ('a') RETURNING id")
        assert isinstance(generated, uuid.UUID) and generated.version == 4
        await connection.execute("INSERT INTO ap_uuid VALUES ($1, 'b')", value)
        assert await connection.fetchval("SELECT label FROM ap_uuid WHERE id = $1", value) == "b"
        records = [(uuid.UUID(int=n), f"copy {n}") for n in range(1, 201)]
        assert await connection.copy_records_to_table("ap_uuid", records=records) == "COPY 200"
        smallest = await connection.fetchval("SELECT id FROM ap_uuid ORDER BY id LIMIT 1")
        assert smallest == uuid.UUID(int=1)
        with pytest.raises(asyncpg.UniqueViolationError):
            await connection.execute("INSERT INTO ap_uuid VALUES ($1, 'dup')", value)
        with pytest.raises(asyncpg.InvalidTextRepresentationError):
            await connection.execute("SELECT 'not a uuid'::uuid")
        await connection.execute("DROP TABLE ap_uuid")

    run(main)


def test_bit_strings_round_trip_in_binary():
    """bit(n) and bit varying parameters, results, arrays and binary COPY (asyncpg sends and
    reads bit strings in binary: the bit count, then the bytes), the typmod's 22026 / 22001
    on assignment, and pgvector's hamming_distance over a bound parameter."""
    bits = asyncpg.BitString

    async def main(connection):
        assert await connection.fetchval("SELECT $1::bit(5)", bits("10101")) == bits("10101")
        assert await connection.fetchval("SELECT X'f0'::varbit") == bits("11110000")
        assert await connection.fetchval("SELECT $1::varbit[]", [bits("1"), None]) == [bits("1"), None]
        await connection.execute("DROP TABLE IF EXISTS ap_bits")
        await connection.execute("CREATE TABLE ap_bits (id int PRIMARY KEY, b bit(3), v varbit(4))")
        records = [(n, bits(format(n % 8, "03b")), bits("1" * (n % 5))) for n in range(1, 41)]
        assert await connection.copy_records_to_table("ap_bits", records=records) == "COPY 40"
        assert await connection.fetchval("SELECT count(*) FROM ap_bits WHERE b = $1", bits("101")) == 5
        assert await connection.fetchval("SELECT min(id) FROM ap_bits WHERE b <~> $1 = 0", bits("011")) == 3
        with pytest.raises(asyncpg.StringDataLengthMismatchError):
            await connection.execute("INSERT INTO ap_bits (id, b) VALUES (100, $1)", bits("1"))
        with pytest.raises(asyncpg.StringDataRightTruncationError):
            await connection.execute("INSERT INTO ap_bits (id, v) VALUES (100, $1)", bits("11111"))
        await connection.execute("DROP TABLE ap_bits")

    run(main)


def test_fetch_executemany_and_prepared_statements():
    async def main(connection):
        await connection.execute("DROP TABLE IF EXISTS ap_items")
        await connection.execute(
            "CREATE TABLE ap_items (id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2),"
            " tags text[], added timestamptz)"
        )
        added = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
        await connection.executemany(
            "INSERT INTO ap_items VALUES ($1, $2, $3, $4, $5)",
            [(n, f"item {n}", Decimal(n) / 4, [f"t{n}", "all"], added) for n in range(1, 21)],
        )
        rows = await connection.fetch("SELECT id, price FROM ap_items WHERE id <= $1 ORDER BY id", 3)
        assert [(row["id"], row["price"]) for row in rows] == [
            (1, Decimal("0.25")),
            (2, Decimal("0.50")),
            (3, Decimal("0.75")),
        ]
        statement = await connection.prepare("SELECT name, tags, added FROM ap_items WHERE id = $1")
        assert [attribute.name for attribute in statement.get_attributes()] == ["name", "tags", "added"]
        assert [parameter.name for parameter in statement.get_parameters()] == ["int4"]
        for n in (1, 7, 20):
            row = await statement.fetchrow(n)
            assert (row["name"], row["tags"], row["added"]) == (f"item {n}", [f"t{n}", "all"], added)
        assert await statement.fetchrow(99) is None
        total = await connection.prepare("SELECT sum(price) FROM ap_items WHERE id BETWEEN $1 AND $2")
        assert await total.fetchval(1, 4) == Decimal("2.50")
        assert await total.fetchval(1, 20) == Decimal("52.50")
        cursor_rows = []
        async with connection.transaction():
            async for row in connection.cursor("SELECT id FROM ap_items ORDER BY id", prefetch=6):
                cursor_rows.append(row["id"])
        assert cursor_rows == list(range(1, 21))
        await connection.execute("DROP TABLE ap_items")

    run(main)


def test_transactions_commit_rollback_savepoint():
    async def main(connection):
        await connection.execute("DROP TABLE IF EXISTS ap_accounts")
        await connection.execute("CREATE TABLE ap_accounts (id int PRIMARY KEY, balance int)")
        async with connection.transaction():
            await connection.execute("INSERT INTO ap_accounts VALUES (1, 100), (2, 0)")
        with pytest.raises(asyncpg.UniqueViolationError) as raised:
            async with connection.transaction():
                await connection.execute("UPDATE ap_accounts SET balance = balance - 10 WHERE id = 1")
                await connection.execute("INSERT INTO ap_accounts VALUES (2, 5)")
        assert raised.value.sqlstate == "23505"
        assert await connection.fetchval("SELECT balance FROM ap_accounts WHERE id = 1") == 100
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute("UPDATE ap_accounts SET balance = 50 WHERE id = 2")
        try:
            async with connection.transaction():  # a savepoint inside the transaction
                await connection.execute("UPDATE ap_accounts SET balance = 1 / 0 WHERE id = 1")
        except asyncpg.DivisionByZeroError as error:
            assert error.sqlstate == "22012"
        await transaction.commit()
        rows = await connection.fetch("SELECT id, balance FROM ap_accounts ORDER BY id")
        assert [tuple(row) for row in rows] == [(1, 100), (2, 50)]
        transaction = connection.transaction(isolation="repeatable_read")
        await transaction.start()
        await connection.execute("DELETE FROM ap_accounts")
        assert await connection.fetchval("SHOW transaction_isolation") == "repeatable read"
        await transaction.rollback()
        assert await connection.fetchval("SELECT count(*) FROM ap_accounts") == 2
        with pytest.raises(asyncpg.UndefinedTableError) as raised:
            await connection.fetch("SELECT * FROM ap_no_such_table")
        assert raised.value.sqlstate == "42P01"
        with pytest.raises(asyncpg.PostgresSyntaxError):
            await connection.execute("SELEC 1")
        await connection.execute("DROP TABLE ap_accounts")

    run(main)


COPY_ROWS = [
    (1, "one", Decimal("1.50"), True, datetime.date(2024, 1, 1),
     datetime.datetime(2024, 1, 1, 8, 0), datetime.datetime(2024, 1, 1, 8, 0, tzinfo=UTC),
     b"\x01", ["1", "two"], [1, None, 3], '{"k": 1}', 10, 0.25),
    (2, None, None, None, None, None, None, None, None, None, None, None, None),
    (3, "tab\there \"quoted\", comma\nnewline \\ back", Decimal("-0.001"), False,
     datetime.date(1900, 2, 28), datetime.datetime(1900, 2, 28, 23, 59, 59, 999999),
     datetime.datetime(2100, 12, 31, 0, 0, tzinfo=UTC), b"", [], [], '[]', -(2**62), -1e-10),
]
COPY_COLUMNS = [
    "id", "label", "amount", "flag", "day", "at", "at_tz", "raw", "words", "numbers", "doc", "big", "ratio"
]


def test_interval_and_time_round_trip_in_binary():
    """interval as timedelta and time as datetime.time, parameters and results (asyncpg
    sends and reads both in binary)."""
    import datetime as dt

    span = dt.timedelta(days=2, hours=3, microseconds=7)
    clock = dt.time(23, 59, 59, 999999)

    async def main(connection):
        assert await connection.fetchval("SELECT $1::interval", span) == span
        assert await connection.fetchval("SELECT $1::time", clock) == clock
        assert await connection.fetchval("SELECT interval '1 mon -1 day'") == dt.timedelta(days=29)
        assert await connection.fetchval("SELECT $1::interval[]", [span, None]) == [span, None]
        await connection.execute("DROP TABLE IF EXISTS ap_datetime")
        await connection.execute("CREATE TABLE ap_datetime (t time PRIMARY KEY, d interval)")
        await connection.execute("INSERT INTO ap_datetime VALUES ($1, $2)", clock, span)
        assert await connection.fetchrow("SELECT t, d FROM ap_datetime WHERE t = $1", clock) == (clock, span)
        await connection.execute("DROP TABLE ap_datetime")

    run(main)


async def _copy_table(connection, name="ap_copy"):
    await connection.execute(f"DROP TABLE IF EXISTS {name}")
    await connection.execute(
        f"CREATE TABLE {name} (id int PRIMARY KEY, label text, amount numeric(12, 3), flag bool,"
        " day date, at timestamp, at_tz timestamptz, raw bytea, words text[], numbers int[], doc jsonb,"
        " big bigint, ratio float8, extra text DEFAULT 'filled')"
    )


def test_copy_records_to_table_binary():
    async def main(connection):
        await _copy_table(connection)
        result = await connection.copy_records_to_table("ap_copy", records=COPY_ROWS, columns=COPY_COLUMNS)
        assert result == "COPY 3"
        rows = await connection.fetch(f"SELECT {', '.join(COPY_COLUMNS)}, extra FROM ap_copy ORDER BY id")
        for row, expected in zip(rows, COPY_ROWS):
            got = tuple(row)[:-1]
            assert got[:2] == expected[:2]
            if expected[2] is not None:
                assert got[2] == expected[2]
            assert got[3:] == expected[3:], (got, expected)
            assert row["extra"] == "filled"
        # Many records: asyncpg streams them in several CopyData messages.
        many = [(n, f"label {n}") for n in range(100, 5100)]
        assert await connection.copy_records_to_table("ap_copy", records=many, columns=["id", "label"]) == "COPY 5000"
        assert await connection.fetchval("SELECT count(*) FROM ap_copy WHERE id >= 100") == 5000
        # A record that breaks a constraint fails the whole COPY.
        with pytest.raises(asyncpg.UniqueViolationError):
            await connection.copy_records_to_table("ap_copy", records=[(7000, "new"), (1, "dup")], columns=["id", "label"])
        assert await connection.fetchval("SELECT count(*) FROM ap_copy WHERE id = 7000") == 0
        # In a transaction, rolled back with it.
        async with connection.transaction():
            await connection.copy_records_to_table("ap_copy", records=[(8000, "kept")], columns=["id", "label"])
            assert await connection.fetchval("SELECT label FROM ap_copy WHERE id = 8000") == "kept"
            await connection.execute("SAVEPOINT before_copy")
            await connection.copy_records_to_table("ap_copy", records=[(8001, "gone")], columns=["id", "label"])
            await connection.execute("ROLLBACK TO SAVEPOINT before_copy")
        assert [r["id"] for r in await connection.fetch("SELECT id FROM ap_copy WHERE id >= 8000")] == [8000]
        await connection.execute("DROP TABLE ap_copy")

    run(main)


def _binary_copy_rows(data):
    """Decodes the int4 and text fields of a binary COPY stream of (int4, text) rows,
    checking the signature, flags, header extension and trailer."""
    signature = b"PGCOPY\n\xff\r\n\x00"
    assert data.startswith(signature)
    flags, extension = struct.unpack_from("!iI", data, len(signature))
    assert flags == 0
    offset = len(signature) + 8 + extension
    rows = []
    while True:
        (count,) = struct.unpack_from("!h", data, offset)
        offset += 2
        if count == -1:
            break
        assert count == 2
        (length,) = struct.unpack_from("!i", data, offset)
        (number,) = struct.unpack_from("!i", data, offset + 4)
        offset += 4 + length
        (length,) = struct.unpack_from("!i", data, offset)
        offset += 4
        label = None if length == -1 else data[offset : offset + length].decode()
        offset += max(length, 0)
        rows.append((number, label))
    assert offset == len(data)
    return rows


def test_copy_from_table_and_query():
    async def main(connection):
        await _copy_table(connection)
        await connection.copy_records_to_table("ap_copy", records=COPY_ROWS, columns=COPY_COLUMNS)
        text_out = io.BytesIO()
        result = await connection.copy_from_table("ap_copy", output=text_out, columns=["id", "label", "amount"])
        assert result == "COPY 3"
        assert text_out.getvalue().decode() == (
            "1\tone\t1.500\n2\t\\N\t\\N\n3\ttab\\there \"quoted\", comma\\nnewline \\\\ back\t-0.001\n"
        )
        csv_out = io.BytesIO()
        await connection.copy_from_query(
            "SELECT id, label FROM ap_copy WHERE id <> $1 ORDER BY id", 1, output=csv_out, format="csv", header=True
        )
        assert csv_out.getvalue().decode() == (
            'id,label\n2,\n3,"tab\there ""quoted"", comma\nnewline \\ back"\n'
        )
        binary_out = io.BytesIO()
        result = await connection.copy_from_query(
            "SELECT id, label FROM ap_copy ORDER BY id", output=binary_out, format="binary"
        )
        assert result == "COPY 3"
        assert _binary_copy_rows(binary_out.getvalue()) == [(1, "one"), (2, None), (3, COPY_ROWS[2][1])]
        # The binary stream loads back into a table (COPY FROM STDIN (FORMAT binary)).
        await connection.execute("DROP TABLE IF EXISTS ap_copy_back")
        await connection.execute("CREATE TABLE ap_copy_back (id int, label text)")
        binary_out.seek(0)
        result = await connection.copy_to_table("ap_copy_back", source=binary_out, format="binary")
        assert result == "COPY 3"
        back = await connection.fetch("SELECT id, label FROM ap_copy_back ORDER BY id")
        assert [tuple(row) for row in back] == [(1, "one"), (2, None), (3, COPY_ROWS[2][1])]
        # Every type of the table out in binary and back in: the same rows.
        await _copy_table(connection, "ap_copy_all")
        all_out = io.BytesIO()
        await connection.copy_from_table("ap_copy", output=all_out, format="binary")
        all_out.seek(0)
        assert await connection.copy_to_table("ap_copy_all", source=all_out, format="binary") == "COPY 3"
        differ = await connection.fetchval(
            "SELECT count(*) FROM (SELECT * FROM ap_copy EXCEPT SELECT * FROM ap_copy_all) AS d"
        )
        assert differ == 0
        # A binary stream with a wrong signature is refused as PostgreSQL does.
        with pytest.raises(asyncpg.BadCopyFileFormatError) as raised:
            await connection.copy_to_table("ap_copy_back", source=io.BytesIO(b"not binary copy data"), format="binary")
        assert raised.value.sqlstate == "22P04"
        for table in ("ap_copy", "ap_copy_back", "ap_copy_all"):
            await connection.execute(f"DROP TABLE {table}")

    run(main)
