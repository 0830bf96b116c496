"""/v2/services (admin, from microversion 2.12): which release each
agent, conductor and API runs (db/services.py), what an operator checks
mid-upgrade. A service is ``up`` while its last heartbeat is younger than
[conductor]agent_down_time, by the database's clock, the same bound that
marks an agent down."""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import services as policies
from cyborg_lite.api import utils
from cyborg_lite.conf import CONF
from cyborg_lite.db import services as services_db


def list_services(req):
    microversion.require(req, microversion.SERVICES, 'The services list')
    utils.authorize(req, policies.GET_ALL)
    down_time = CONF.conductor.agent_down_time
    return utils.response({'services': [
        {'kind': row['kind'], 'host': row['host'],
         'release': row['release'], 'rpc_versions': row['rpc_versions'],
         'state': 'up' if row['heartbeat_age'] < down_time else 'down',
         'heartbeat_at': utils.timestamp(row['heartbeat_at'])}
        for row in services_db.list_all()]})
