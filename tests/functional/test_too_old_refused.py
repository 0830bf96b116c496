"""A service older than the previous release may not run beside this
code: the conductor refuses such an agent's heartbeat over RPC (it is
recorded, never up), and a conductor does not start while one runs;
each says both releases. (A service recording no release is 2026.1.0:
common/version.UNRECORDED_RELEASE.)"""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.cmd import conductor as conductor_cmd
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import models
from cyborg_lite.db import services as services_db
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import fake
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import transport as rpc
from cyborg_lite.rpc import versions
from tests.functional import console
from tests.unit.conductor import report_helpers as h

HOST = 'node-old'
TOO_OLD = '2025.2.0'


@pytest.fixture
def conductor(conf, sqlite_db):
    conf.set_override('report_interval', 3600, group='agent')
    service = conductor_service.ConductorService(conf, host='cond1')
    service.start()
    yield service
    service.stop()
    rpc.cleanup()


def _names_both(text):
    return TOO_OLD in text and version.PREVIOUS_RELEASE in text


def test_a_too_old_agent_s_heartbeat_is_refused_naming_both(conductor):
    with pytest.raises(exception.ServiceTooOld) as refused:
        conductor_rpcapi.ConductorAPI().agent_heartbeat(
            context.get_admin_context(), HOST, release=TOO_OLD,
            rpc_versions={rpc.AGENT_TOPIC: '1.0'})
    assert _names_both(str(refused.value)), refused.value
    assert HOST in str(refused.value)
    # Never up: nothing of it is offered; but the operator sees it.
    assert h.rows(models.Agent, hostname=HOST) == []
    assert [s['release'] for s in services_db.list_all()
            if s['host'] == HOST] == [TOO_OLD]


@pytest.mark.parametrize('release', [None, version.PREVIOUS_RELEASE,
                                     version.VERSION])
def test_the_previous_release_and_this_one_beat(conductor, release):
    conductor_rpcapi.ConductorAPI().agent_heartbeat(
        context.get_admin_context(), HOST, release=release,
        rpc_versions=versions.spoken())
    assert [a.state for a in h.rows(models.Agent, hostname=HOST)] == ['up']


def test_an_agent_told_it_is_too_old_is_not_heard(conductor, conf,
                                                  monkeypatch):
    monkeypatch.setattr(version, 'VERSION', TOO_OLD)
    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    agent = agent_manager.AgentManager(conf, host=HOST, drivers=[driver])
    assert agent.heartbeat_once() is False
    assert h.rows(models.Agent, hostname=HOST) == []


def test_a_conductor_does_not_start_beside_a_running_too_old_service(
        tmp_path, sqlite_db):
    services_db.beat('agent', 'node-new', version.VERSION, None)
    services_db.beat('agent', 'node-2026-1', None, None)
    services_db.beat('conductor', 'cond-old', TOO_OLD, None)
    path = tmp_path / 'c.conf'
    path.write_text('[DEFAULT]\nstate_path = %s\ntransport_url = inproc://\n'
                    '[database]\nconnection = %s\n' % (tmp_path, sqlite_db))
    script = console.Script('cyborg-lite-conductor', '--config-file', path)
    assert script.run(timeout=60) == 1
    last = script.stderr.strip().splitlines()[-1]
    assert last.startswith('cyborg-lite-conductor: error: conductor on '
                           'cond-old runs release %s' % TOO_OLD), last
    assert _names_both(last), last


def test_a_too_old_service_that_stopped_beating_does_not_count(sqlite_db):
    services_db.beat('conductor', 'cond-old', TOO_OLD, None)
    with pytest.raises(exception.ServiceTooOld):
        conductor_cmd._check_peers()
    # Silent for longer than [conductor]agent_down_time: down.
    with session.writer() as s:
        s.execute(sa.update(models.Service).values(
            heartbeat_at=datetime.datetime(2020, 1, 1)))
    conductor_cmd._check_peers()
