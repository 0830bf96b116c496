"""Fixtures of the database tests."""
import uuid

import pytest

from cyborg_lite.db import migration
from cyborg_lite.db import session


@pytest.fixture
def pg_db(pg_server, conf):
    """A fresh, migrated PostgreSQL database configured as the service's."""
    url = pg_server.create_database('t_' + uuid.uuid4().hex[:16])
    conf.set_override('connection', url, group='database')
    migration.upgrade(url=url)
    yield url
    session.dispose_all()
