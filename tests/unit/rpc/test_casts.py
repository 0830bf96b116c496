"""Every cast gives up when the broker stays unreachable: an API request
or a conductor's periodic task never waits for the end of an outage (the
work a cast carries is found again by a reaper). oslo.messaging's default
is to reconnect forever; without the bound each call here never returns.
"""
import threading

import pytest

from cyborg_lite.common import context
from cyborg_lite.rpc import agent_client as agent_rpcapi
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import transport as rpc
from tests import servers

CASTS = {
    'request_report': lambda a, c, ctxt: a.request_report(ctxt, 'host1'),
    'program_region': lambda a, c, ctxt: a.program_region(
        ctxt, 'host1', {'uuid': 'j'}),
    'clean_region': lambda a, c, ctxt: a.clean_region(
        ctxt, 'host1', {'uuid': 'd'}),
    'bind_arqs': lambda a, c, ctxt: c.bind_arqs(ctxt, {}),
    'publish_requested': lambda a, c, ctxt: c.publish_requested(ctxt),
    'start_cleaning': lambda a, c, ctxt: c.start_cleaning(ctxt, ['host1']),
}


@pytest.fixture
def no_broker(conf):
    # A port nobody listens on: every connection is refused at once.
    conf.set_override('transport_url', 'rabbit://guest:guest@127.0.0.1:%d/'
                      % servers.free_port())
    # Loading the driver registers its options; set, then start afresh.
    rpc.get_transport()
    conf.set_override('rabbit_retry_interval', 1,
                      group='oslo_messaging_rabbit')
    conf.set_override('rabbit_retry_backoff', 0,
                      group='oslo_messaging_rabbit')
    rpc.cleanup()
    yield
    rpc.cleanup()


def test_every_cast_gives_up_while_the_broker_is_down(no_broker):
    agent_api = agent_rpcapi.AgentAPI()
    conductor_api = conductor_rpcapi.ConductorAPI()
    ctxt = context.get_admin_context()
    outcomes = {}

    def cast(name, call):
        try:
            outcomes[name] = call(agent_api, conductor_api, ctxt)
        except rpc.CAST_FAILURES:
            outcomes[name] = 'gave up'

    threads = [threading.Thread(target=cast, args=item, daemon=True)
               for item in CASTS.items()]
    for t in threads:
        t.start()
    for t in threads:
        # NOTE: a liveness bound, not a timing assertion: three refused
        # reconnections take seconds; without the bound a cast never ends.
        t.join(120)
    assert not [t for t in threads if t.is_alive()]
    # The agent casts raise; the conductor's own report False (logged).
    assert outcomes == {
        'request_report': 'gave up', 'program_region': 'gave up',
        'clean_region': 'gave up', 'bind_arqs': False,
        'publish_requested': False,
        'start_cleaning': False}
