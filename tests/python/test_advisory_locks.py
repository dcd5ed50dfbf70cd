"""Advisory locks between sessions against a running tierdb server (port from TIERDB_PORT):
a held lock blocks another session's lock until released, try answers false, shared locks
share, transaction-level locks go at COMMIT / ROLLBACK, a closed connection releases its
locks, lock_timeout and statement_timeout end a wait, a cycle of waits is 40P01.

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python/test_advisory_locks.py
Every expectation is what PostgreSQL itself answers (the file passes against PostgreSQL 15).
"""

import os
import threading
import time

import psycopg
import psycopg.errors
import pytest


def _connect():
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    user = os.environ.get("TIERDB_USER", "tierdb")
    return psycopg.connect(host="127.0.0.1", port=int(port), user=user, dbname=user, autocommit=True)


def _value(connection, sql, *params):
    return connection.execute(sql, params).fetchone()[0]


def _in_thread(function):
    """Runs `function` in a thread; returns (thread, result dict with 'value' or 'error')."""
    result = {}

    def run():
        try:
            result["value"] = function()
        except Exception as error:  # noqa: BLE001 - the test inspects it
            result["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_a_held_lock_blocks_another_session_until_unlocked():
    with _connect() as first, _connect() as second:
        first.execute("SELECT pg_advisory_lock(101)")
        assert _value(second, "SELECT pg_try_advisory_lock(101)") is False
        assert _value(second, "SELECT pg_try_advisory_lock_shared(101)") is False
        thread, result = _in_thread(lambda: second.execute("SELECT pg_advisory_lock(101), 1").fetchone())
        time.sleep(0.3)
        assert thread.is_alive(), "the second session waits"
        assert _value(first, "SELECT pg_advisory_unlock(101)") is True
        thread.join(10)
        assert not thread.is_alive() and result.get("value") == ("", 1), result
        assert _value(first, "SELECT pg_try_advisory_lock(101)") is False
        assert _value(second, "SELECT pg_advisory_unlock(101)") is True
        assert _value(first, "SELECT pg_try_advisory_lock(101)") is True
        assert _value(first, "SELECT pg_advisory_unlock(101)") is True


def test_shared_locks_share_and_block_exclusive():
    with _connect() as first, _connect() as second:
        assert _value(first, "SELECT pg_try_advisory_lock_shared(102)") is True
        assert _value(second, "SELECT pg_try_advisory_lock_shared(102)") is True
        assert _value(second, "SELECT pg_try_advisory_lock(102)") is False
        first.execute("SELECT pg_advisory_unlock_shared(102)")
        # The session's own shared hold does not block its exclusive one.
        assert _value(second, "SELECT pg_try_advisory_lock(102)") is True
        assert _value(first, "SELECT pg_try_advisory_lock_shared(102)") is False
        second.execute("SELECT pg_advisory_unlock_all()")
        assert _value(first, "SELECT pg_try_advisory_lock(102)") is True
        first.execute("SELECT pg_advisory_unlock_all()")


def test_the_two_key_spaces_do_not_conflict():
    with _connect() as first, _connect() as second:
        first.execute("SELECT pg_advisory_lock(103)")
        assert _value(second, "SELECT pg_try_advisory_lock(0, 103)") is True
        assert _value(second, "SELECT pg_try_advisory_lock(103)") is False
        first.execute("SELECT pg_advisory_unlock_all()")
        second.execute("SELECT pg_advisory_unlock_all()")


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_transaction_level_locks_go_when_the_transaction_ends(end):
    with _connect() as first, _connect() as second:
        first.execute("BEGIN")
        first.execute("SELECT pg_advisory_xact_lock(104)")
        assert _value(second, "SELECT pg_try_advisory_lock(104)") is False
        thread, result = _in_thread(lambda: second.execute("SELECT pg_advisory_xact_lock(104), 2").fetchone())
        time.sleep(0.3)
        assert thread.is_alive()
        first.execute(end)
        thread.join(10)
        assert not thread.is_alive() and result.get("value") == ("", 2), result
        # The second session's lock was transaction-level in its autocommit statement.
        assert _value(first, "SELECT pg_try_advisory_lock(104)") is True
        first.execute("SELECT pg_advisory_unlock(104)")


def test_an_autocommit_transaction_lock_is_gone_after_its_statement():
    with _connect() as first, _connect() as second:
        assert _value(first, "SELECT pg_try_advisory_xact_lock(105)") is True
        assert _value(second, "SELECT pg_try_advisory_lock(105)") is True
        second.execute("SELECT pg_advisory_unlock(105)")


def test_a_closed_connection_releases_its_locks():
    with _connect() as second:
        first = _connect()
        first.execute("SELECT pg_advisory_lock(106)")
        first.execute("SELECT pg_advisory_lock_shared(107)")
        assert _value(second, "SELECT pg_try_advisory_lock(106)") is False
        first.close()
        deadline = time.time() + 10
        while not _value(second, "SELECT pg_try_advisory_lock(106)"):
            assert time.time() < deadline, "the closed session's lock stays"
            time.sleep(0.05)
        assert _value(second, "SELECT pg_try_advisory_lock(107)") is True
        second.execute("SELECT pg_advisory_unlock_all()")


def test_lock_timeout_and_statement_timeout_end_a_wait():
    with _connect() as first, _connect() as second:
        first.execute("SELECT pg_advisory_lock(108)")
        second.execute("SET lock_timeout = '200ms'")
        started = time.time()
        with pytest.raises(psycopg.errors.LockNotAvailable):
            second.execute("SELECT pg_advisory_lock(108)")
        assert time.time() - started < 5
        second.execute("SET lock_timeout = 0")
        second.execute("SET statement_timeout = '200ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            second.execute("SELECT pg_advisory_lock_shared(108)")
        second.execute("SET statement_timeout = 0")
        first.execute("SELECT pg_advisory_unlock(108)")
        assert _value(second, "SELECT pg_try_advisory_lock(108)") is True
        second.execute("SELECT pg_advisory_unlock(108)")


def test_a_cycle_of_waits_is_a_deadlock():
    with _connect() as first, _connect() as second:
        first.execute("SELECT pg_advisory_lock(109)")
        second.execute("SELECT pg_advisory_lock(110)")
        thread, result = _in_thread(lambda: first.execute("SELECT pg_advisory_lock(110), 1").fetchone())
        time.sleep(0.3)
        assert thread.is_alive()
        # PostgreSQL checks after deadlock_timeout (1 s) and fails one of the two waits.
        try:
            second.execute("SELECT pg_advisory_lock(109)")
            second_failed = None
        except psycopg.errors.DeadlockDetected as error:
            second_failed = error
        if second_failed is not None:
            second.execute("SELECT pg_advisory_unlock(110)")
        thread.join(15)
        assert not thread.is_alive()
        first_failed = isinstance(result.get("error"), psycopg.errors.DeadlockDetected)
        assert first_failed != (second_failed is not None), (result, second_failed)
        first.execute("SELECT pg_advisory_unlock_all()")
        second.execute("SELECT pg_advisory_unlock_all()")
