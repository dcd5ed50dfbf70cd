"""Alembic against a running tierdb server (port from TIERDB_PORT): an autogenerate +
upgrade + downgrade round trip, as an application's migrations run it.

1. `alembic init` writes a migration environment; its env.py is replaced by one whose
   target metadata is this file's model (tables named `al_*`, the only ones compared).
2. Autogenerate against the empty database writes a revision creating the model; upgrade
   runs it. The tables, columns, keys, indexes and constraints are then reflected back.
3. Autogenerate again finds nothing to do: the reflected schema is exactly the model's.
4. The model gains a column, an index and a table; autogenerate writes a revision with
   exactly those operations, upgrade applies it, and a further comparison is empty.
5. Downgrade to base removes everything, one revision at a time.

Run: TIERDB_PORT=5432 python3 -m pytest -q tests/python/test_alembic.py
"""

import os
import textwrap

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    inspect,
    text,
)

PREFIX = "al_"


def _url():
    if os.environ.get("ALEMBIC_TEST_URL"):
        return os.environ["ALEMBIC_TEST_URL"]
    port = os.environ.get("TIERDB_PORT")
    if not port:
        raise RuntimeError("TIERDB_PORT is not set: start `tierdb serve` and export its port")
    return f"postgresql+psycopg://tierdb@127.0.0.1:{port}/tierdb"


def _model(version):
    """The application's model: version 1, then version 2 with a new column, an index and
    a table."""
    metadata = MetaData()
    Table(
        "al_customer",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("email", String(200), nullable=False, unique=True),
        Column("name", Text),
        Column("active", Boolean, nullable=False, server_default="true"),
        *([Column("created_at", DateTime)] if version >= 2 else []),
    )
    Table(
        "al_order",
        metadata,
        Column("id", Integer, primary_key=True),
        Column(
            "customer_id",
            Integer,
            ForeignKey("al_customer.id", ondelete="CASCADE"),
            nullable=False,
        ),
        Column("total", Numeric(12, 2), nullable=False),
        Column("note", String(50)),
        CheckConstraint("total >= 0", name="al_order_total_check"),
        UniqueConstraint("customer_id", "note", name="al_order_customer_note_key"),
        Index("al_order_customer_idx", "customer_id"),
        *([Index("al_order_total_idx", "total")] if version >= 2 else []),
    )
    if version >= 2:
        Table(
            "al_audit",
            metadata,
            Column("id", Integer, primary_key=True),
            Column("order_id", Integer, ForeignKey("al_order.id")),
            Column("message", Text, nullable=False),
        )
    return metadata


ENV_PY = """
import importlib.util
from alembic import context
from sqlalchemy import create_engine

spec = importlib.util.spec_from_file_location("model", {model_path!r})
model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model)
target_metadata = model._model(int(context.config.get_main_option("model_version")))


def include_name(name, type_, parent_names):
    return type_ != "table" or name.startswith({prefix!r})


engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_name=include_name,
        compare_type=True,
        compare_server_default=True,
    )
    with context.begin_transaction():
        context.run_migrations()
"""


@pytest.fixture()
def alembic_config(tmp_path):
    engine = create_engine(_url())
    _drop_model_tables(engine)
    config = Config(str(tmp_path / "alembic.ini"))
    config.set_main_option("script_location", str(tmp_path / "migrations"))
    config.set_main_option("sqlalchemy.url", _url())
    config.set_main_option("model_version", "1")
    command.init(config, str(tmp_path / "migrations"))
    (tmp_path / "migrations" / "env.py").write_text(
        textwrap.dedent(ENV_PY).format(model_path=__file__, prefix=PREFIX)
    )
    yield config, engine
    _drop_model_tables(engine)
    engine.dispose()


def _drop_model_tables(engine):
    with engine.begin() as connection:
        for table in ["al_audit", "al_order", "al_customer", "alembic_version"]:
            connection.execute(text(f"DROP TABLE IF EXISTS {table}"))


def _differences(engine, metadata):
    """What autogenerate would change to make the database match `metadata`."""
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={
                "include_name": lambda name, type_, parents: type_ != "table"
                or name.startswith(PREFIX),
                "compare_type": True,
                "compare_server_default": True,
            },
        )
        return compare_metadata(context, metadata)


def _difference_kinds(engine, metadata):
    """The kinds of autogenerate's differences (`add_table`, `add_column`, ...), sorted."""
    return sorted(difference[0] for difference in _differences(engine, metadata))


def test_autogenerate_upgrade_downgrade_round_trip(alembic_config):
    config, engine = alembic_config

    assert _difference_kinds(engine, _model(1)) == [
        "add_index",
        "add_table",
        "add_table",
    ]
    first = command.revision(config, message="create", autogenerate=True)
    command.upgrade(config, "head")
    inspector = inspect(engine)
    assert {"al_customer", "al_order", "alembic_version"} <= set(inspector.get_table_names())
    columns = {column["name"]: column for column in inspector.get_columns("al_order")}
    assert list(columns) == ["id", "customer_id", "total", "note"]
    assert str(columns["total"]["type"]) == "NUMERIC(12, 2)"
    assert columns["total"]["nullable"] is False
    foreign_keys = inspector.get_foreign_keys("al_order")
    assert [(fk["referred_table"], fk["options"].get("ondelete")) for fk in foreign_keys] == [
        ("al_customer", "CASCADE")
    ]
    indexes = inspector.get_indexes("al_order")
    assert [index["name"] for index in indexes if not index.get("duplicates_constraint")] == [
        "al_order_customer_idx"
    ]
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == first.revision

    # The database now is the model: nothing to generate.
    assert _differences(engine, _model(1)) == []

    config.set_main_option("model_version", "2")
    assert _difference_kinds(engine, _model(2)) == ["add_column", "add_index", "add_table"]
    command.revision(config, message="grow", autogenerate=True)
    command.upgrade(config, "head")
    assert _differences(engine, _model(2)) == []
    inspector = inspect(engine)
    assert "created_at" in [column["name"] for column in inspector.get_columns("al_customer")]
    assert "al_audit" in inspector.get_table_names()

    # Rows survive the upgrade; downgrade one step removes what the second revision added.
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO al_customer (id, email) VALUES (1, 'a@b.c')"))
        connection.execute(
            text("INSERT INTO al_order (id, customer_id, total) VALUES (10, 1, 5.50)")
        )
    command.downgrade(config, "-1")
    assert _differences(engine, _model(1)) == []
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, customer_id, total FROM al_order")).all()
    assert [tuple(row) for row in rows] == [(10, 1, pytest.approx(5.5))]

    command.downgrade(config, "base")
    names = set(inspect(engine).get_table_names())
    assert not {name for name in names if name.startswith(PREFIX)}, names
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 0
