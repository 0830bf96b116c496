"""The RPC versions this code speaks, and those each release served.

What a service records with its heartbeat (db/services.py), so an
operator, and a later upgrade check, sees which messages every peer can
take. Each manager's ``target`` serves the same version as its client
(see their NOTEs). ``RELEASED`` is what [upgrade_levels] pins to by
release name (rpc/pins.py), as Ironic's RELEASE_MAPPING.
"""
from cyborg_lite.rpc import agent_client
from cyborg_lite.rpc import conductor_client
from cyborg_lite.rpc import transport

# Add a release's line when it is cut (releases.yaml): the versions its
# managers' targets serve. tests/unit/rpc/test_pins.py reads them again
# from the release's tag.
RELEASED = {
    '2026.1.0': {transport.AGENT_TOPIC: '1.3',
                 transport.CONDUCTOR_TOPIC: '1.8'},
}


def spoken():
    return {transport.AGENT_TOPIC: agent_client.AgentAPI.RPC_API_VERSION,
            transport.CONDUCTOR_TOPIC:
                conductor_client.ConductorAPI.RPC_API_VERSION}
