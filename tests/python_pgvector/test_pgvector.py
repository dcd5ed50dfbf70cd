"""pgvector's Python adapter (pgvector.psycopg, pgvector.sqlalchemy) against a running tierdb
server (port from TIERDB_PORT), unmodified: the adapter looks the `vector` and `halfvec`
types up by name and sends numpy arrays, `HalfVector`s and `SparseVector`s in pgvector's
text and binary forms.

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python_pgvector
"""

import os

import numpy as np
import psycopg
import pytest
import sqlalchemy
from pgvector import HalfVector, SparseVector
from pgvector.psycopg import register_vector
from pgvector.sqlalchemy import Vector
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


def _port():
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return int(port)


@pytest.fixture
def conn():
    connection = psycopg.connect(
        host="127.0.0.1", port=_port(), user="tierdb", dbname="tierdb", autocommit=True
    )
    connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(connection)
    connection.execute("DROP TABLE IF EXISTS py_vector_items")
    connection.execute("CREATE TABLE py_vector_items (id integer PRIMARY KEY, embedding vector(3))")
    yield connection
    connection.execute("DROP TABLE IF EXISTS py_vector_items")
    connection.close()


def test_register_vector_finds_the_type_by_name(conn):
    oid, array_oid = conn.execute(
        "SELECT oid, typarray FROM pg_type WHERE typname = 'vector'"
    ).fetchone()
    assert (oid, array_oid) == (8400, 8401)


@pytest.mark.parametrize("binary", [False, True])
def test_numpy_round_trip(conn, binary):
    embeddings = [np.array([1.5, 2, 3]), np.array([4, 5, 6.25]), np.array([-1, 0.1, 1e-7])]
    with conn.cursor(binary=binary) as cur:
        for index, embedding in enumerate(embeddings):
            cur.execute("INSERT INTO py_vector_items VALUES (%s, %s)", (index, embedding))
        cur.execute("SELECT embedding FROM py_vector_items ORDER BY id")
        rows = [row[0] for row in cur.fetchall()]
    for got, sent in zip(rows, embeddings):
        assert np.array_equal(got.to_numpy(), sent.astype(np.float32))


@pytest.mark.parametrize("binary", [False, True])
def test_nearest_neighbours_with_a_parameter(conn, binary):
    for index, embedding in enumerate([[1, 1, 1], [2, 2, 2], [10, 10, 10]]):
        conn.execute("INSERT INTO py_vector_items VALUES (%s, %s)", (index, np.array(embedding)))
    with conn.cursor(binary=binary) as cur:
        cur.execute(
            "SELECT id, embedding <-> %s FROM py_vector_items ORDER BY embedding <-> %s LIMIT 2",
            (np.array([2, 2, 2.5]), np.array([2, 2, 2.5])),
        )
        assert cur.fetchall() == [(1, 0.5), (0, 2.0615528128088303)]


def test_dimension_mismatch_is_pgvectors_error(conn):
    with pytest.raises(psycopg.errors.DataException, match="expected 3 dimensions, not 2"):
        conn.execute("INSERT INTO py_vector_items VALUES (1, %s)", (np.array([1, 2]),))


@pytest.fixture
def halfvec_table(conn):
    conn.execute("DROP TABLE IF EXISTS py_halfvec_items")
    conn.execute("CREATE TABLE py_halfvec_items (id integer PRIMARY KEY, embedding halfvec(3))")
    yield conn
    conn.execute("DROP TABLE IF EXISTS py_halfvec_items")


def test_register_vector_finds_halfvec_by_name(conn):
    oid, array_oid = conn.execute(
        "SELECT oid, typarray FROM pg_type WHERE typname = 'halfvec'"
    ).fetchone()
    assert (oid, array_oid) == (8430, 8431)


@pytest.mark.parametrize("binary", [False, True])
def test_halfvec_round_trip(halfvec_table, binary):
    conn = halfvec_table
    embeddings = [HalfVector([1.5, 2, 3]), HalfVector([0.1, -65504, 6.25])]
    with conn.cursor(binary=binary) as cur:
        for index, embedding in enumerate(embeddings):
            cur.execute("INSERT INTO py_halfvec_items VALUES (%s, %s)", (index, embedding))
        cur.execute("SELECT embedding FROM py_halfvec_items ORDER BY id")
        rows = [row[0] for row in cur.fetchall()]
        cur.execute(
            "SELECT id, embedding <-> %s FROM py_halfvec_items ORDER BY embedding <-> %s LIMIT 1",
            (HalfVector([1, 2, 3]), HalfVector([1, 2, 3])),
        )
        assert cur.fetchone() == (0, 0.5)
    for got, sent in zip(rows, embeddings):
        assert isinstance(got, HalfVector)
        assert np.array_equal(got.to_numpy(), sent.to_numpy())
    assert rows[1].to_list()[0] == np.float16(0.1)


@pytest.mark.parametrize("binary", [False, True])
def test_sparsevec_round_trip(conn, binary):
    conn.execute("DROP TABLE IF EXISTS py_sparsevec_items")
    conn.execute("CREATE TABLE py_sparsevec_items (id integer PRIMARY KEY, embedding sparsevec(5))")
    try:
        embeddings = [SparseVector({0: 1.5, 2: 2.0}, 5), SparseVector([0, 0, 0, 0, 0.1])]
        with conn.cursor(binary=binary) as cur:
            for index, embedding in enumerate(embeddings):
                cur.execute("INSERT INTO py_sparsevec_items VALUES (%s, %s)", (index, embedding))
            cur.execute("SELECT embedding, embedding::text FROM py_sparsevec_items ORDER BY id")
            rows = cur.fetchall()
            cur.execute(
                "SELECT id, embedding <-> %s FROM py_sparsevec_items ORDER BY embedding <-> %s",
                (SparseVector({0: 1.5}, 5), SparseVector({0: 1.5}, 5)),
            )
            assert cur.fetchall() == [(1, 1.5033296346654172), (0, 2.0)]
        assert [text for _, text in rows] == ["{1:1.5,3:2}/5", "{5:0.1}/5"]
        for (got, _), sent in zip(rows, embeddings):
            assert isinstance(got, SparseVector)
            assert (got.indices(), got.dimensions()) == (sent.indices(), sent.dimensions())
            assert np.array_equal(np.float32(got.values()), np.float32(sent.values()))
    finally:
        conn.execute("DROP TABLE IF EXISTS py_sparsevec_items")


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "py_vector_orm_items"
    id: Mapped[int] = mapped_column(primary_key=True)
    embedding = mapped_column(Vector(3))


def test_sqlalchemy_vector_column():
    engine = sqlalchemy.create_engine(
        f"postgresql+psycopg://tierdb@127.0.0.1:{_port()}/tierdb"
    )
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all([Item(id=1, embedding=[1, 2, 3]), Item(id=2, embedding=[3, 2, 1])])
            session.commit()
        with Session(engine) as session:
            nearest = session.scalars(
                sqlalchemy.select(Item).order_by(Item.embedding.l2_distance([3, 2, 1.5])).limit(1)
            ).first()
            assert nearest.id == 2
            assert np.array_equal(nearest.embedding, np.array([3, 2, 1], dtype=np.float32))
            distance = session.scalar(
                sqlalchemy.select(Item.embedding.cosine_distance([1, 2, 3])).where(Item.id == 1)
            )
            assert distance == 0
    finally:
        Base.metadata.drop_all(engine)
