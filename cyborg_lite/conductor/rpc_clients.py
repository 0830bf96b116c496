"""The conductor's RPC clients, pinned by [upgrade_levels] (rpc/pins.py)
so that no agent, and no other conductor, gets a message newer than its
release understands."""
from cyborg_lite.conf import CONF
from cyborg_lite.db import services as services_db
from cyborg_lite.rpc import agent_client
from cyborg_lite.rpc import conductor_client


def agent_api(conf=CONF):
    return agent_client.AgentAPI(version_cap=_cap('agent', conf))


def conductor_api(conf=CONF):
    return conductor_client.ConductorAPI(version_cap=_cap('conductor',
                                                          conf))


def _cap(kind, conf):
    return services_db.version_cap(kind, getattr(conf.upgrade_levels, kind),
                                   conf.conductor.agent_down_time)
