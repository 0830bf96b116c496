"""Who runs what: every agent and conductor records its release and RPC
versions with its heartbeat (db/services.py), over the real RPC path
(inproc://) into a real database; an agent beside a conductor of the
previous release still heartbeats."""
import json
import signal

import oslo_messaging as messaging
import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import models
from cyborg_lite.db import services as services_db
from cyborg_lite.drivers import fake
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import transport as rpc
from cyborg_lite.rpc import versions as rpc_versions
from tests import servers
from tests import waiting
from tests.functional import console
from tests.unit.conductor import report_helpers as h

HOST = 'node1'


@pytest.fixture
def fake_rpc(conf):
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('report_interval', 3600, group='agent')
    yield conf
    rpc.cleanup()


def _agent(conf):
    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    return agent_manager.AgentManager(conf, host=HOST, drivers=[driver])


def _service(kind, host):
    found = [s for s in services_db.list_all()
             if (s['kind'], s['host']) == (kind, host)]
    return found[0] if found else None


def test_agent_and_conductor_record_release_and_rpc_versions(fake_rpc,
                                                              sqlite_db):
    conductor = conductor_service.ConductorService(fake_rpc, host='cond1')
    agent = _agent(fake_rpc)
    conductor.start()
    agent.start()
    try:
        expected = {'release': version.VERSION,
                    'rpc_versions': rpc_versions.spoken()}
        for kind, host in (('agent', HOST), ('conductor', 'cond1')):
            row = waiting.read_until(lambda: _service(kind, host),
                                     lambda s: s is not None)
            assert {k: row[k] for k in expected} == expected, row
        assert rpc_versions.spoken() == {
            rpc.AGENT_TOPIC: '1.4', rpc.CONDUCTOR_TOPIC: '1.10'}
        # One row per service, however many beats.
        first = _service('agent', HOST)['heartbeat_at']
        assert agent.heartbeat_once()
        assert len(h.rows(models.Service, kind='agent', host=HOST)) == 1
        assert _service('agent', HOST)['heartbeat_at'] >= first
    finally:
        agent.stop()
        conductor.stop()


class _PreviousReleaseConductor(conductor_manager.ConductorManager):
    """The endpoint as 2026.1.0 served it: RPC 1.8, so the dispatcher
    refuses a 1.10 heartbeat as that release's conductor would."""
    target = messaging.Target(version='1.8')


def test_agent_beside_a_previous_release_conductor_still_beats(fake_rpc,
                                                               sqlite_db):
    conductor = conductor_service.ConductorService(
        fake_rpc, host='cond-old',
        manager=_PreviousReleaseConductor('cond-old'))
    conductor.start()
    try:
        agent = _agent(fake_rpc)
        assert agent.heartbeat_once()
        assert [a.state for a in h.rows(models.Agent, hostname=HOST)] == [
            'up']
        # That conductor records no release for the agent: unknown.
        assert _service('agent', HOST)['release'] is None
    finally:
        conductor.stop()


@pytest.mark.parametrize('release, rpc_versions', [
    ('', None), ('x' * 65, None), ('2026.2.0', ['1.10']),
    ('2026.2.0', {'cyborg-lite-agent': 1.3})])
def test_a_bad_release_is_refused_and_records_nothing(fake_rpc, sqlite_db,
                                                       release, rpc_versions):
    conductor = conductor_service.ConductorService(fake_rpc, host='cond1')
    conductor.start()
    try:
        with pytest.raises(exception.Invalid):
            conductor_rpcapi.ConductorAPI().agent_heartbeat(
                context.get_admin_context(), HOST, release=release,
                rpc_versions=rpc_versions)
        assert h.rows(models.Agent, hostname=HOST) == []
        assert _service('agent', HOST) is None
    finally:
        conductor.stop()


def test_the_api_under_gunicorn_records_itself_and_lists_it(tmp_path):
    # The real cyborg-lite-api: its worker beats into the database; the
    # real cyborg-lite reads it back over HTTP.
    db = tmp_path / 'db.sqlite'
    port = servers.free_port()
    path = tmp_path / 'api.conf'
    path.write_text('\n'.join([
        '[DEFAULT]', 'transport_url = inproc://', 'host = api-host-1',
        'state_path = %s' % tmp_path,
        '[database]', 'connection = sqlite:///%s' % db,
        '[api]', 'port = %d' % port, 'workers = 1',
        'auth_strategy = noauth', '']))
    assert console.Script('cyborg-lite-dbsync', '--config-file', path,
                          'upgrade').run() == 0
    api = console.Script('cyborg-lite-api', '--config-file', path).start()
    try:
        api.wait_for('Booting worker')
        env = {'CYBORG_LITE_URL': 'http://127.0.0.1:%d' % port}

        def listed():
            script = console.Script('cyborg-lite', 'service', 'list',
                                    '-f', 'json', env=env)
            return json.loads(script.stdout) if script.run() == 0 else None
        rows = waiting.read_until(listed, lambda rows: bool(rows))
    finally:
        assert api.finish(signal.SIGTERM) == 0, api.stderr
    assert [(r['host'], r['kind'], r['release'], r['state'])
            for r in rows] == [('api-host-1', 'api', version.VERSION, 'up')]
