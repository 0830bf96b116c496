"""bind_arqs as a cast from ConductorAPI to ConductorManager over the
in-memory oslo.messaging transport; the API's unbind and the release it
asks for; a previous release's unbind_arqs cast (the 1.1 shim)."""

import pytest

from cyborg_lite.common import context
from cyborg_lite.conductor import bind_wait
from cyborg_lite.conductor import manager
from cyborg_lite.conductor import service as service_mod
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.rpc import conductor_client as rpcapi
from cyborg_lite.rpc import transport as rpc
from tests import releases
from tests import waiting
from tests.unit.conductor import bind_helpers as h


@pytest.fixture
def conductor(conf):
    conf.set_override('transport_url', 'inproc://')
    server = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-1',
                            [manager.ConductorManager('cond-1')])
    server.start()
    yield rpcapi.ConductorAPI()
    server.stop()
    server.wait()
    rpc.cleanup()


def _wait_for_state(arq_uuid, wanted, timeout=30):
    waiting.read_until(lambda: h.get_arq(arq_uuid).state,
                       lambda state: state == wanted, timeout,
                       what='ARQ %s %s' % (arq_uuid, wanted))


def test_bind_and_unbind_by_cast(sqlite_db, conductor):
    region = h.make_region()
    arq_uuid = h.make_arq()
    ctxt = context.get_admin_context()
    # A cast returns before the work is done (True: a conductor's queue
    # took it): nothing to wait on here.
    assert conductor.bind_arqs(ctxt, {arq_uuid: h.binding(region)}) is True
    _wait_for_state(arq_uuid, 'Bound')
    assert h.handles_of(region)[0].in_use
    released = releases.unbind(conductor, ctxt, [arq_uuid])
    assert h.get_arq(arq_uuid).state == 'Unbound'
    assert not h.handles_of(region)[0].in_use
    assert released.clean_hosts == {'host1'}


def test_a_previous_release_unbind_cast_still_unbinds(sqlite_db, conductor):
    """The 1.1 endpoint a previous-release API may cast: unbinds as the
    API does, and the region waits for its wipe."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    ctxt = context.get_admin_context()
    conductor.bind_arqs(ctxt, {arq_uuid: h.binding(region)})
    _wait_for_state(arq_uuid, 'Bound')
    conductor.client.prepare(version='1.1').cast(
        ctxt, 'unbind_arqs', arq_uuids=[arq_uuid, 'no-such-arq'])
    _wait_for_state(arq_uuid, 'Unbound')
    assert not h.handles_of(region)[0].in_use
    # Released in the unbind's transaction: wiped before its next tenant.
    dep, _attributes = deployables_db.get_deployable(
        region['deployable_uuid'])
    assert dep.device_state in ('pending_cleaning', 'cleaning')


def test_conductor_service_runs_the_reaper(conf):
    conf.set_override('reap_interval', 7, group='arq')
    service = service_mod.ConductorService(conf, host='cond-1')
    # The reaper resumes binds with the conductor's publish (a partial),
    # after the binds waiting for a warm region (conductor/bind_wait.py).
    reapers = [t for t in service._tasks
               if getattr(t.func, 'func', t.func) is bind_wait.reap]
    assert [t.interval for t in reapers] == [7]
