"""pandas against a running tierdb server (port from TIERDB_PORT), through SQLAlchemy 2 and
its psycopg 3 dialect: DataFrame.to_sql (if_exists fail / replace / append, the index
written as a column, ints, floats, strings, bools, datetimes and NULLs of each, chunksize,
method="multi") and read_sql_table / read_sql_query (parse_dates, index_col, parameters),
each round trip compared with the original frame by pandas.testing.assert_frame_equal.

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python/test_pandas.py
"""

import os

import numpy
import pandas
import pytest
from pandas.testing import assert_frame_equal
from sqlalchemy import create_engine, inspect, text


def _url():
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return f"postgresql+psycopg://tierdb@127.0.0.1:{port}/tierdb"


TABLES = ["pd_people", "pd_chunks", "pd_multi", "pd_indexed", "pd_replace"]


@pytest.fixture
def engine():
    engine = create_engine(_url())
    with engine.begin() as connection:
        for table in TABLES:
            connection.execute(text(f"DROP TABLE IF EXISTS {table}"))
    yield engine
    with engine.begin() as connection:
        for table in TABLES:
            connection.execute(text(f"DROP TABLE IF EXISTS {table}"))
    engine.dispose()


def _people():
    """A frame with a column of each kind, every one with a NULL (None, NaN or NaT)."""
    return pandas.DataFrame(
        {
            "id": pandas.array([1, 2, 3, 4], dtype="Int64"),
            "name": ["ada", "grace", None, "édith ✓"],
            "score": [1.5, -2.25, numpy.nan, 1e300],
            "active": pandas.array([True, False, None, True], dtype="boolean"),
            "born": pandas.to_datetime(
                ["1815-12-10 08:30:00", "1906-12-09 00:00:00", None, "2024-02-29 23:59:59.123456"],
                format="ISO8601",
            ),
            "visits": pandas.array([10, None, -3, 2**40], dtype="Int64"),
        }
    )


def _read_people(engine, table):
    frame = pandas.read_sql_table(table, engine)
    return frame.sort_values("id").reset_index(drop=True)


def _as_read_back(frame):
    """The frame as read_sql_table returns it: NULL strings are None, nullable ints and
    booleans come back as the plain dtype when they have no NULL, as object when they do."""
    expected = frame.copy()
    expected["id"] = expected["id"].astype("int64")
    expected["active"] = expected["active"].astype(object).where(expected["active"].notna(), None)
    expected["visits"] = expected["visits"].astype("float64")
    return expected


def test_to_sql_types_and_nulls_round_trip(engine):
    frame = _people()
    # The count returned is the driver's rowcount, -1 for psycopg's executemany: the rows
    # are counted in the table instead.
    frame.to_sql("pd_people", engine, index=False)
    columns = {column["name"]: column["type"] for column in inspect(engine).get_columns("pd_people")}
    assert str(columns["id"]) == "BIGINT"
    assert str(columns["name"]) == "TEXT"
    assert str(columns["score"]) == "DOUBLE PRECISION"
    assert str(columns["active"]) == "BOOLEAN"
    assert str(columns["born"]) == "TIMESTAMP"
    back = _read_people(engine, "pd_people")
    back["born"] = back["born"].astype(frame["born"].dtype)
    assert_frame_equal(back, _as_read_back(frame))
    with engine.connect() as connection:
        nulls = connection.execute(
            text(
                "SELECT count(*) - count(name), count(*) - count(score), count(*) - count(active),"
                " count(*) - count(born), count(*) - count(visits) FROM pd_people"
            )
        ).one()
    assert tuple(nulls) == (1, 1, 1, 1, 1)


def test_if_exists_fail_replace_append(engine):
    frame = pandas.DataFrame({"k": [1, 2], "v": ["a", "b"]})
    frame.to_sql("pd_replace", engine, index=False)
    with pytest.raises(ValueError, match="already exists"):
        frame.to_sql("pd_replace", engine, index=False, if_exists="fail")
    frame.to_sql("pd_replace", engine, index=False, if_exists="append")
    counted = pandas.read_sql_query("SELECT k, count(*) AS n FROM pd_replace GROUP BY k ORDER BY k", engine)
    assert_frame_equal(counted, pandas.DataFrame({"k": [1, 2], "n": [2, 2]}))
    other = pandas.DataFrame({"k": [7], "w": [0.5]})
    other.to_sql("pd_replace", engine, index=False, if_exists="replace")
    assert_frame_equal(pandas.read_sql_table("pd_replace", engine), other)


def test_index_written_and_read_back_as_index(engine):
    frame = pandas.DataFrame(
        {"city": ["Oslo", "Lima", "Pune"], "people": [709_000, 10_000_000, 3_124_000]},
        index=pandas.Index(["no", "pe", "in"], name="code"),
    )
    frame.to_sql("pd_indexed", engine)
    names = [column["name"] for column in inspect(engine).get_columns("pd_indexed")]
    assert names == ["code", "city", "people"]
    indexes = inspect(engine).get_indexes("pd_indexed")
    assert [index["column_names"] for index in indexes] == [["code"]]
    back = pandas.read_sql_table("pd_indexed", engine, index_col="code")
    assert_frame_equal(back.sort_index(), frame.sort_index())
    query = pandas.read_sql_query(
        "SELECT * FROM pd_indexed WHERE people > %(least)s ORDER BY code",
        engine,
        index_col="code",
        params={"least": 1_000_000},
    )
    assert_frame_equal(query, frame.loc[["in", "pe"]])


def test_chunksize_writes_and_reads_in_chunks(engine):
    count = 2_500
    frame = pandas.DataFrame(
        {
            "n": numpy.arange(count, dtype="int64"),
            "half": numpy.arange(count, dtype="float64") / 2,
            "label": [f"row {n}" for n in range(count)],
        }
    )
    frame.to_sql("pd_chunks", engine, index=False, chunksize=400)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM pd_chunks")).scalar_one() == count
    chunks = list(pandas.read_sql_query("SELECT * FROM pd_chunks ORDER BY n", engine, chunksize=1_000))
    assert [len(chunk) for chunk in chunks] == [1_000, 1_000, 500]
    assert_frame_equal(pandas.concat(chunks, ignore_index=True), frame)
    chunked_table = list(pandas.read_sql_table("pd_chunks", engine, chunksize=1_200))
    assert sum(len(chunk) for chunk in chunked_table) == count


def test_method_multi_and_parse_dates(engine):
    frame = pandas.DataFrame(
        {
            "id": [1, 2, 3],
            "day": ["2024-01-31", "1999-12-31", "2000-02-29"],
            "at": pandas.to_datetime(["2024-01-31 10:00:00", "1999-12-31 23:59:59", "2000-02-29 00:00:01"]),
            "flag": [True, False, True],
        }
    )
    frame.to_sql("pd_multi", engine, index=False, method="multi", chunksize=2)
    with engine.connect() as connection:
        stored = connection.execute(text("SELECT day, at FROM pd_multi WHERE id = 3")).one()
    assert stored.day == "2000-02-29"
    assert stored.at.isoformat() == "2000-02-29T00:00:01"
    back = pandas.read_sql_query(
        "SELECT id, day, at, flag FROM pd_multi ORDER BY id", engine, parse_dates={"day": "%Y-%m-%d"}
    )
    expected = frame.copy()
    expected["day"] = pandas.to_datetime(expected["day"], format="%Y-%m-%d")
    back["at"] = back["at"].astype(expected["at"].dtype)
    back["day"] = back["day"].astype(expected["day"].dtype)
    assert_frame_equal(back, expected)
    typed = pandas.read_sql_query(
        "SELECT id, day::date AS day FROM pd_multi ORDER BY id", engine, parse_dates=["day"]
    )
    assert list(typed["day"].dt.strftime("%Y-%m-%d")) == ["2024-01-31", "1999-12-31", "2000-02-29"]
