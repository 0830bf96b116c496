"""Shared fixtures: configuration reset, databases on SQLite, PostgreSQL
and MariaDB."""
import os

import pytest
from futurist import _thread as futurist_thread

from cyborg_lite.common import outage
from cyborg_lite.conductor import report
from cyborg_lite.conf import CONF
from cyborg_lite.db.sql import session
from cyborg_lite.kubernetes import client as k8s_client
from tests import migrated_databases
from tests import servers

CONF([], project='cyborg_lite', default_config_files=[])

# oslo.messaging's threading executor is futurist's pool, whose idle
# workers look for a shutdown once a MAX_IDLE_FOR (1 s): each RPC server a
# test stopped waited up to a second for them (some 400 s of the suite's
# teardowns). The services' own processes keep the library's value.
futurist_thread.ThreadWorker.MAX_IDLE_FOR = 0.05


def _clear_all_overrides(cfg):
    for name in list(cfg.keys()):
        value = cfg[name]
        if hasattr(value, 'keys') and not isinstance(value, dict):
            for opt in list(value.keys()):
                cfg.clear_override(opt, group=name)
        else:
            cfg.clear_override(name)


@pytest.fixture
def conf(tmp_path):
    """CONF with state_path in a temp dir and RPC in process (inproc://: a
    cast must never wait for a broker nobody started); every override
    undone after."""
    CONF.set_override('state_path', str(tmp_path))
    CONF.set_override('transport_url', 'inproc://')
    yield CONF
    _clear_all_overrides(CONF)
    # A test may patch what validation or the rows depend on.
    report.VALID_REPORTS.clear()


@pytest.fixture(autouse=True)
def _own_kubernetes_outage_log(monkeypatch):
    """Each test its own log of Kubernetes API outages: one left on by a
    test that stopped the apiserver stand-in would end, with a WARNING,
    in the next test of the worker."""
    monkeypatch.setattr(k8s_client, 'OUTAGE', outage.OutageLog(
        'Kubernetes API', k8s_client.LOG,
        interval=k8s_client.OUTAGE_LOG_INTERVAL))


@pytest.fixture(scope='session')
def pg_server():
    server = servers.PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope='session')
def mariadb_server():
    server = servers.MariaDBServer()
    server.start()
    yield server
    server.stop()


_SERVER_FIXTURES = {'postgresql': 'pg_server', 'mysql': 'mariadb_server'}
_BACKENDS = [
    'sqlite',
    pytest.param('postgresql', marks=pytest.mark.postgresql),
    pytest.param('mysql', marks=pytest.mark.mariadb)]


@pytest.fixture(scope='session')
def sqlite_template(tmp_path_factory):
    return migrated_databases.SQLiteTemplate(tmp_path_factory.mktemp('db'))


@pytest.fixture(scope='session')
def pg_template(pg_server):
    return migrated_databases.PostgresTemplate(pg_server)


@pytest.fixture(scope='session')
def mariadb_template(mariadb_server):
    return migrated_databases.MariaDBTemplate(mariadb_server)


def _sqlite_path(tmp_path):
    return os.path.join(str(tmp_path), 'test.sqlite')


@pytest.fixture(params=_BACKENDS)
def db_url(request, tmp_path):
    """An empty database on each backend, disposed after the test: for
    the tests of the migrations."""
    if request.param == 'sqlite':
        yield 'sqlite:///' + _sqlite_path(tmp_path)
    else:
        server = request.getfixturevalue(_SERVER_FIXTURES[request.param])
        yield server.create_database(migrated_databases.new_name())
    session.dispose_all()


@pytest.fixture(params=_BACKENDS)
def db(request, conf, tmp_path):
    """A new migrated database on each backend, set as
    [database]connection; disposed after the test."""
    url = migrated_databases.new_database(request.param, request,
                                           _sqlite_path(tmp_path))
    conf.set_override('connection', url, group='database')
    yield url
    session.dispose_all()


@pytest.fixture
def sqlite_db(request, conf, tmp_path):
    """A migrated SQLite database only, for tests that need no backend matrix."""
    url = migrated_databases.new_database('sqlite', request,
                                           _sqlite_path(tmp_path))
    conf.set_override('connection', url, group='database')
    yield url
    session.dispose_all()
