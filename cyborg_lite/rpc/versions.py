"""The RPC versions this code speaks: the newest of each API, by topic.

What a service records with its heartbeat (db/services.py), so an
operator, and a later upgrade check, sees which messages every peer can
take. Each manager's ``target`` serves the same version as its client
(see their NOTEs).
"""
from cyborg_lite.rpc import agent_client
from cyborg_lite.rpc import conductor_client
from cyborg_lite.rpc import transport


def spoken():
    return {transport.AGENT_TOPIC: agent_client.AgentAPI.RPC_API_VERSION,
            transport.CONDUCTOR_TOPIC:
                conductor_client.ConductorAPI.RPC_API_VERSION}
