"""Alembic environment bound to cyborg_lite's models.

cyborg_lite.db.migration passes an open connection in
``config.attributes['connection']``; the alembic CLI uses sqlalchemy.url.
"""
from alembic import context
import sqlalchemy as sa

from cyborg_lite.db import models

config = context.config
target_metadata = models.Base.metadata


def _run(connection):
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == 'sqlite',
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online():
    connection = config.attributes.get('connection')
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(config.get_main_option('sqlalchemy.url'))
    with engine.begin() as conn:
        _run(conn)


def run_migrations_offline():
    context.configure(url=config.get_main_option('sqlalchemy.url'),
                      target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
