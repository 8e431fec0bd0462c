"""Alembic environment: migrations run on the connection the server hands over (``config.attributes``)."""

from __future__ import annotations

from alembic import context

from cardtable.server.storage.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the cardtable migrations through cardtable.server.storage.store.Store.open")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
