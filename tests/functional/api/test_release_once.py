"""One DELETE (or unbind) of a Bound ARQ makes one conductor RPC and one
publish: the API's release call; the conductor publishes the host once,
answers, then starts the wipe, which publishes nothing more
(pending_cleaning -> cleaning changes no view). The API and the conductor are the real ones,
over a real oslo.messaging inproc:// transport; the RPCs are counted in
oslo.messaging's client, the publishes in the conductor's one inventory
sink; the agent's side of the wipe is the test's."""
import oslo_messaging as messaging
import pytest
import webtest
from oslo_messaging.rpc import client as rpc_client

from cyborg_lite.api import deploy
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import cleaning
from cyborg_lite.conductor import manager
from cyborg_lite.conductor import publishing
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.rpc import transport as rpc
from tests import waiting
from tests.functional.api.conftest import ADMIN
from tests.unit.conductor import bind_helpers as h

ARQS = '/v2/accelerator_requests'


class CountingSink(inventory_sink.InventorySink):
    """The conductor's inventory sink: every host it was asked to show."""

    def __init__(self):
        self.published = []

    @classmethod
    def from_conf(cls, conf):
        return cls()

    def publish(self, hostname):
        self.published.append(hostname)
        return inventory_sink.PublishResult(hostname, True)

    def retry_pending(self):
        return []

    def pending_hosts(self):
        return {}


class Agents:
    """The agents' side of the conductor's casts: the wipes sent."""

    def __init__(self):
        self.cleans = []

    def clean_region(self, ctxt, hostname, request):
        self.cleans.append((hostname, request['deployable_uuid']))


class PreviousRelease(manager.ConductorManager):
    """A conductor of the release before RPC 1.9 (no release)."""
    target = messaging.Target(version='1.8')


@pytest.fixture
def services(request, sqlite_db, api_conf, monkeypatch):
    """(API app, conductor RPCs sent, the sink, the agents)."""
    api_conf.set_override('transport_url', 'inproc://')
    sink, agents = CountingSink(), Agents()
    publisher = publishing.Publisher([sink])
    kind = getattr(request, 'param', manager.ConductorManager)
    conductor = kind(
        'cond-release', publisher=publisher,
        after_report=publisher.publish_host,
        cleaning=cleaning.CleaningFlow(agent_api=agents,
                                       after_change=publisher.publish_host))
    server = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-release', [conductor])
    server.start()
    sent = []
    for kind in ('call', 'cast'):
        real = getattr(rpc_client._BaseCallContext, kind)

        def counted(self, ctxt, method, _real=real, **kwargs):
            if self.target.topic == rpc.CONDUCTOR_TOPIC:
                sent.append(method)
            return _real(self, ctxt, method, **kwargs)
        monkeypatch.setattr(rpc_client._BaseCallContext, kind, counted)
    app = webtest.TestApp(deploy.loadapp(api_conf))
    app.conductor = conductor
    yield app, sent, sink, agents
    server.stop()
    server.wait()
    rpc.cleanup()


def _bound():
    region = h.make_region(hostname='host1')
    arq_uuid = h.make_arq()
    assert bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                          notifier=h.RecordingNotifier()) == {
        arq_uuid: 'Bound'}
    return region, arq_uuid


def _state(region):
    with session.reader() as s:
        return s.get(models.Deployable, region['deployable_id']).device_state


def test_a_delete_is_one_rpc_and_one_publish(services):
    app, sent, sink, agents = services
    region, arq_uuid = _bound()
    sink.published.clear()

    app.delete('%s/%s' % (ARQS, arq_uuid), headers=ADMIN, status=204)

    assert sent == ['release']
    assert sink.published == ['host1']
    # The wipe began after the publish: sent to the region's agent.
    assert agents.cleans == [('host1', region['deployable_uuid'])]


def test_the_wipe_starts_after_the_answer(services):
    """The conductor answers once it published; the wipe is work for its
    after-reply thread (here: held back until the test runs it)."""
    app, sent, sink, agents = services
    later = []
    app.conductor.after_reply = later.append
    region, arq_uuid = _bound()
    sink.published.clear()

    app.delete('%s/%s' % (ARQS, arq_uuid), headers=ADMIN, status=204)

    assert sink.published == ['host1']
    assert agents.cleans == []
    assert _state(region) == 'pending_cleaning'
    for work in later:
        work()
    assert agents.cleans == [('host1', region['deployable_uuid'])]
    assert _state(region) == 'cleaning'
    assert sink.published == ['host1']


def test_an_unbind_is_one_rpc_and_one_publish(services):
    app, sent, sink, agents = services
    region, arq_uuid = _bound()
    sink.published.clear()

    unbind = {arq_uuid: [{'op': 'remove', 'path': '/' + k} for k in
                         ('hostname', 'device_rp_uuid', 'instance_uuid')]}
    app.patch_json(ARQS, unbind, headers=ADMIN, status=202)

    assert h.get_arq(arq_uuid).state == 'Unbound'
    assert sent == ['release']
    assert sink.published == ['host1']
    assert agents.cleans == [('host1', region['deployable_uuid'])]


@pytest.mark.parametrize('services', [PreviousRelease], indirect=True)
def test_a_previous_release_conductor_is_asked_as_it_was(services):
    """It refuses release (UnsupportedVersion, before doing anything): the
    API publishes (a call), then starts the wipe (a cast), as before."""
    app, sent, sink, agents = services
    region, arq_uuid = _bound()
    sink.published.clear()

    app.delete('%s/%s' % (ARQS, arq_uuid), headers=ADMIN, status=204)

    assert sent == ['release', 'publish_hosts', 'start_cleaning']
    assert sink.published[0] == 'host1'
    waiting.read_until(lambda: list(agents.cleans), bool, 30,
                       what='the wipe sent')
    assert agents.cleans == [('host1', region['deployable_uuid'])]
