"""Fixtures of the database tests."""
import pytest

from cyborg_lite.db.sql import session
from tests import migrated_databases


def _migrated(kind, request, conf):
    """A new migrated database on ``kind``, configured as the service's;
    disposed of after the test."""
    url = migrated_databases.new_database(kind, request)
    conf.set_override('connection', url, group='database')
    yield url
    session.dispose_all()


@pytest.fixture
def pg_db(request, conf):
    """A fresh, migrated PostgreSQL database configured as the service's."""
    yield from _migrated('postgresql', request, conf)


@pytest.fixture(params=[
    pytest.param('postgresql', marks=pytest.mark.postgresql),
    pytest.param('mysql', marks=pytest.mark.mariadb)])
def server_db(request, conf):
    """The same on each server backend, where a writer does not hold the
    whole database from its first read to its commit as on SQLite."""
    yield from _migrated(request.param, request, conf)
