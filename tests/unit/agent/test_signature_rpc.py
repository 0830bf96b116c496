"""A job under the ``enforce`` signature policy needs an agent that checks
signatures (agent RPC 1.3): an older agent refuses the cast instead of
writing the image unchecked; other jobs go at 1.1, as before."""
import threading

import oslo_messaging as messaging

from cyborg_lite.common import context
from cyborg_lite.rpc import agent_client as agent_rpcapi
from cyborg_lite.rpc import transport as rpc
from tests import waiting


class Agent:
    def __init__(self, version):
        self.target = messaging.Target(version=version)
        self.jobs = []
        self.got = threading.Event()

    def program_region(self, ctxt, job):
        self.jobs.append(job['uuid'])
        self.got.set()


def _serve(version, host):
    endpoint = Agent(version)
    server = rpc.get_server(rpc.AGENT_TOPIC, host, [endpoint])
    server.start()
    return endpoint, server


def test_enforced_jobs_reach_only_agents_that_check(conf):
    old, old_server = _serve('1.2', 'old-host')
    new, new_server = _serve('1.3', 'new-host')
    api = agent_rpcapi.AgentAPI()
    ctxt = context.get_admin_context()
    try:
        enforced = {'policy': 'enforce', 'status': 'verified'}
        api.program_region(ctxt, 'new-host', {'uuid': 'j1',
                                              'signature': enforced})
        api.program_region(ctxt, 'old-host', {'uuid': 'j2',
                                              'signature': enforced})
        api.program_region(ctxt, 'old-host', {'uuid': 'j3',
                                              'signature': {'policy':
                                                            'warn'}})
        assert waiting.until(lambda: new.jobs == ['j1'])
        assert waiting.until(lambda: old.jobs == ['j3'])
        # j2 was sent before j3 on the same topic: it was refused, not
        # late.
        assert 'j2' not in old.jobs
    finally:
        for server in (old_server, new_server):
            server.stop()
            server.wait()
        rpc.cleanup()
