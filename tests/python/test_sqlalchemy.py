"""SQLAlchemy 2 (psycopg 3 dialect) against a running tierdb server (port from TIERDB_PORT):
create_all with foreign keys, CHECK and UNIQUE constraints and an index, ORM CRUD through
relationships, a database-side ON DELETE CASCADE, the constraints refusing bad rows with
PostgreSQL's errors, and drop_all / create_all again (the referencing table dropped first
in one transaction).

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python/test_sqlalchemy.py
Reflection: get_columns (with identity options), get_pk_constraint, get_foreign_keys,
get_indexes, get_unique_constraints, get_check_constraints and get_table_comment, each
model table's reflection compared with the model; MetaData.reflect() of the whole
schema, each reflected Table compared with the model's. Every test runs under both the
psycopg 3 and the psycopg2 dialect.
"""

import os
from decimal import Decimal

import pytest
import sqlalchemy
from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Numeric,
    String,
    UniqueConstraint,
    create_engine,
    func,
    inspect,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def _url(driver="psycopg"):
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return f"postgresql+{driver}://tierdb@127.0.0.1:{port}/tierdb"


def _sqlstate(error):
    """The SQLSTATE of a driver's error: psycopg 3's `sqlstate`, psycopg2's `pgcode`."""
    return getattr(error, "sqlstate", None) or error.pgcode


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "sa_author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    books: Mapped[list["Book"]] = relationship(back_populates="author", passive_deletes=True)


class Book(Base):
    __tablename__ = "sa_book"
    __table_args__ = (
        CheckConstraint("price >= 0", name="sa_book_price_positive"),
        UniqueConstraint("author_id", "title"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    price: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    author_id: Mapped[int] = mapped_column(
        ForeignKey("sa_author.id", ondelete="CASCADE"), index=True
    )
    author: Mapped[Author] = relationship(back_populates="books")


@pytest.fixture(params=["psycopg", "psycopg2"])
def engine(request):
    """An engine of each of SQLAlchemy's PostgreSQL dialects for the two psycopg drivers."""
    engine = create_engine(_url(request.param))
    assert engine.dialect.driver == request.param
    assert sqlalchemy.__version__.startswith("2."), sqlalchemy.__version__
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)
    engine.dispose()


def test_create_all_makes_the_tables_and_constraints(engine):
    assert {"sa_author", "sa_book"} <= set(inspect(engine).get_table_names())
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT con.conname, con.contype FROM pg_constraint con "
            "JOIN pg_class rel ON rel.oid = con.conrelid "
            "WHERE rel.relname = 'sa_book' ORDER BY 1"
        ).all()
    assert [tuple(row) for row in rows] == [
        ("sa_book_author_id_fkey", "f"),
        ("sa_book_author_id_title_key", "u"),
        ("sa_book_pkey", "p"),
        ("sa_book_price_positive", "c"),
    ]


def test_orm_crud_through_relationships(engine):
    with Session(engine) as session:
        author = Author(
            name="Ursula",
            books=[
                Book(title="Earthsea", price=Decimal("9.50")),
                Book(title="Dispossessed", price=Decimal("12")),
            ],
        )
        session.add(author)
        session.commit()
        book = session.scalars(select(Book).where(Book.title == "Earthsea")).one()
        book.price = Decimal("10.25")
        session.commit()
        listed = [
            (book.title, book.price, book.author.name)
            for book in session.scalars(select(Book).order_by(Book.id))
        ]
        assert listed == [
            ("Earthsea", Decimal("10.25"), "Ursula"),
            ("Dispossessed", Decimal("12.00"), "Ursula"),
        ]
        # The database's ON DELETE CASCADE removes the books (passive_deletes: SQLAlchemy
        # leaves them to it).
        session.delete(author)
        session.commit()
        assert session.scalar(select(func.count()).select_from(Book)) == 0


def test_constraints_refuse_bad_rows(engine):
    with Session(engine) as session:
        session.add(Author(id=1, name="Ann"))
        session.commit()
        session.add(Book(title="Orphan", price=Decimal("1"), author_id=99))
        with pytest.raises(IntegrityError) as error:
            session.commit()
        assert _sqlstate(error.value.orig) == "23503"
        session.rollback()
        session.add(Book(title="Negative", price=Decimal("-1"), author_id=1))
        with pytest.raises(IntegrityError) as error:
            session.commit()
        assert _sqlstate(error.value.orig) == "23514"
        session.rollback()
        session.add_all(
            [
                Book(title="Twice", price=Decimal("1"), author_id=1),
                Book(title="Twice", price=Decimal("2"), author_id=1),
            ]
        )
        with pytest.raises(IntegrityError) as error:
            session.commit()
        assert _sqlstate(error.value.orig) == "23505"
        session.rollback()
        assert session.scalar(select(func.count()).select_from(Book)) == 0


def test_reflection_of_columns_keys_and_checks(engine):
    inspector = inspect(engine)
    columns = {column["name"]: column for column in inspector.get_columns("sa_book")}
    assert list(columns) == ["id", "title", "price", "author_id"]
    assert columns["id"]["default"] == "nextval('sa_book_id_seq'::regclass)"
    assert columns["id"]["autoincrement"] is True
    assert str(columns["title"]["type"]) == "VARCHAR(200)"
    assert str(columns["price"]["type"]) == "NUMERIC(10, 2)"
    assert columns["author_id"]["nullable"] is False
    [key] = inspector.get_foreign_keys("sa_book")
    assert (key["constrained_columns"], key["referred_table"], key["referred_columns"]) == (
        ["author_id"],
        "sa_author",
        ["id"],
    )
    assert key["options"] == {"ondelete": "CASCADE"}
    checks = inspector.get_check_constraints("sa_book")
    assert [(check["name"], check["sqltext"]) for check in checks] == [
        ("sa_book_price_positive", "price >= 0::numeric")
    ]
    assert inspector.get_table_comment("sa_book") == {"text": None}


def test_reflection_of_keys_indexes_and_the_whole_model(engine):
    inspector = inspect(engine)
    assert inspector.get_pk_constraint("sa_book") == {
        "constrained_columns": ["id"],
        "name": "sa_book_pkey",
        "comment": None,
        "dialect_options": {"postgresql_include": []},
    }
    [unique] = inspector.get_unique_constraints("sa_book")
    assert (unique["name"], unique["column_names"]) == (
        "sa_book_author_id_title_key",
        ["author_id", "title"],
    )
    indexes = {index["name"]: index for index in inspector.get_indexes("sa_book")}
    assert indexes["ix_sa_book_author_id"]["column_names"] == ["author_id"]
    assert indexes["ix_sa_book_author_id"]["unique"] is False
    assert indexes["sa_book_author_id_title_key"]["unique"] is True
    assert [index["column_names"] for index in inspector.get_indexes("sa_author")] == [["name"]]

    # Every model table as the inspector reflects it.
    for name, table in Base.metadata.tables.items():
        columns = inspector.get_columns(name)
        assert [column["name"] for column in columns] == [c.name for c in table.columns]
        for column in columns:
            model = table.columns[column["name"]]
            assert column["type"].compile() == model.type.compile(), (name, column["name"])
            assert column["nullable"] == model.nullable, (name, column["name"])
        key = inspector.get_pk_constraint(name)["constrained_columns"]
        assert key == [column.name for column in table.primary_key.columns], name
        keys = {
            (tuple(key["constrained_columns"]), key["referred_table"])
            for key in inspector.get_foreign_keys(name)
        }
        model_keys = {
            (tuple(key.column_keys), key.referred_table.name)
            for key in table.foreign_key_constraints
        }
        assert keys == model_keys, name
        indexed = {
            tuple(index["column_names"])
            for index in inspector.get_indexes(name)
            if not index.get("duplicates_constraint")
        }
        assert indexed == {tuple(c.name for c in index.columns) for index in table.indexes}, name


def test_metadata_reflect_matches_the_model(engine):
    reflected = sqlalchemy.MetaData()
    reflected.reflect(engine, only=list(Base.metadata.tables))
    assert set(reflected.tables) == set(Base.metadata.tables)
    for name, model in Base.metadata.tables.items():
        table = reflected.tables[name]
        assert [column.name for column in table.columns] == [c.name for c in model.columns]
        for column in table.columns:
            expected = model.columns[column.name]
            assert column.type.compile() == expected.type.compile(), (name, column.name)
            assert column.nullable == expected.nullable, (name, column.name)
            assert column.primary_key == expected.primary_key, (name, column.name)
        assert {
            (tuple(key.column_keys), key.referred_table.name, key.ondelete)
            for key in table.foreign_key_constraints
        } == {
            (tuple(key.column_keys), key.referred_table.name, key.ondelete)
            for key in model.foreign_key_constraints
        }, name
        assert {(index.name, index.unique) for index in table.indexes} >= {
            (index.name, bool(index.unique)) for index in model.indexes
        }, name
    # The foreign key resolves to the reflected parent table.
    book = reflected.tables["sa_book"]
    [key] = book.foreign_key_constraints
    assert key.referred_table is reflected.tables["sa_author"]
