"""Fixtures of the database tests."""
import uuid

import pytest

from cyborg_lite.db import migration
from cyborg_lite.db import session


def _migrated(server, conf):
    """A fresh, migrated database on ``server``, configured as the
    service's; disposed of after the test."""
    url = server.create_database('t_' + uuid.uuid4().hex[:16])
    conf.set_override('connection', url, group='database')
    migration.upgrade(url=url)
    yield url
    session.dispose_all()


@pytest.fixture
def pg_db(pg_server, conf):
    """A fresh, migrated PostgreSQL database configured as the service's."""
    yield from _migrated(pg_server, conf)


@pytest.fixture(params=[
    pytest.param('postgresql', marks=pytest.mark.postgresql),
    pytest.param('mysql', marks=pytest.mark.mariadb)])
def server_db(request, conf):
    """The same on each server backend, where a writer does not hold the
    whole database from its first read to its commit as on SQLite."""
    server = request.getfixturevalue(
        {'postgresql': 'pg_server', 'mysql': 'mariadb_server'}[request.param])
    yield from _migrated(server, conf)
