"""SQL's PREPARE / EXECUTE / DEALLOCATE and the extended protocol's named statements share
one namespace per session, as in PostgreSQL: EXECUTE runs a statement Parse named, Parse of
a name PREPARE took is 42P05, DEALLOCATE removes either, and psycopg's own prepared
statements (prepare=True, then DEALLOCATE when its cache evicts) keep working."""

import os

import psycopg
import psycopg.errors
import pytest


def _connect(**kwargs):
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return psycopg.connect(
        host="127.0.0.1", port=int(port), user="tierdb", dbname="tierdb", connect_timeout=30, **kwargs
    )


def test_execute_reaches_a_protocol_statement_and_parse_respects_prepare():
    with _connect(autocommit=True) as conn:
        conn.pgconn.prepare(b"proto_a", b"SELECT $1::int * 10")
        assert conn.execute("EXECUTE proto_a(4)").fetchall() == [(40,)]
        conn.execute("PREPARE sql_b AS SELECT 'b'")
        result = conn.pgconn.prepare(b"sql_b", b"SELECT 1")
        assert result.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"42P05"
        assert conn.execute("EXECUTE sql_b").fetchall() == [("b",)]
        conn.execute("DEALLOCATE proto_a")
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            conn.execute("EXECUTE proto_a(1)")
        conn.execute("DEALLOCATE ALL")
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            conn.execute("EXECUTE sql_b")


def test_psycopg_prepared_statements_survive_cache_eviction():
    with _connect(autocommit=True) as conn:
        # A cache of 2 statements prepared at first use: the third evicts one, which psycopg
        # drops with DEALLOCATE.
        conn.prepare_threshold = 0
        conn.prepared_max = 2
        for round_number in range(3):
            for step in range(4):
                row = conn.execute(f"SELECT %s::int + {step}", (round_number,)).fetchone()
                assert row == (round_number + step,)


def test_pg_dump_style_prepare_with_an_oid_parameter():
    with _connect(autocommit=True) as conn:
        conn.execute(
            "PREPARE get_acls(pg_catalog.oid) AS SELECT $1::pg_catalog.oid AS o, $1 = 6100 AS same"
        )
        assert conn.execute("EXECUTE get_acls('6100')").fetchall() == [(6100, True)]
        conn.execute("DEALLOCATE get_acls")


def _sqlstate(result):
    return result.error_field(psycopg.pq.DiagnosticField.SQLSTATE)


def test_deallocate_and_discard_all_end_protocol_statements():
    """A statement Parse named is gone after DEALLOCATE or DISCARD ALL: Bind and Describe
    are 26000 and Parse may take the name again; Parse of a name in use is 42P05."""
    with _connect(autocommit=True) as conn:
        pgconn = conn.pgconn
        assert pgconn.prepare(b"proto_c", b"SELECT 1").status == psycopg.pq.ExecStatus.COMMAND_OK
        assert _sqlstate(pgconn.prepare(b"proto_c", b"SELECT 2")) == b"42P05"
        assert pgconn.exec_prepared(b"proto_c", []).get_value(0, 0) == b"1"
        conn.execute("DEALLOCATE proto_c")
        assert _sqlstate(pgconn.exec_prepared(b"proto_c", [])) == b"26000"
        assert _sqlstate(pgconn.describe_prepared(b"proto_c")) == b"26000"
        assert pgconn.prepare(b"proto_c", b"SELECT 3").status == psycopg.pq.ExecStatus.COMMAND_OK
        assert pgconn.exec_prepared(b"proto_c", []).get_value(0, 0) == b"3"
        conn.execute("SET work_mem = '1MB'")
        conn.execute("DISCARD ALL")
        assert _sqlstate(pgconn.exec_prepared(b"proto_c", [])) == b"26000"
        assert conn.execute("SHOW work_mem").fetchone() == ("4MB",)
        # The unnamed statement is replaced by each Parse, never 42P05.
        for value in (b"4", b"5"):
            assert pgconn.prepare(b"", b"SELECT " + value).status == psycopg.pq.ExecStatus.COMMAND_OK
            assert pgconn.exec_prepared(b"", []).get_value(0, 0) == value


def test_psycopg_prepares_again_after_discard_all():
    # psycopg clears its cache when it sees DISCARD ALL's command tag, and prepares again.
    with _connect(autocommit=True) as conn:
        for _ in range(3):
            assert conn.execute("SELECT %s::int + 1", (1,), prepare=True).fetchone() == (2,)
        conn.execute("DISCARD ALL")
        assert conn.execute("SELECT %s::int + 1", (2,), prepare=True).fetchone() == (3,)
