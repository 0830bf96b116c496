"""/v2/deployables: the schedulable parts of devices (read only)."""
import json

from cyborg_lite.api.policies import deployables as policies
from cyborg_lite.api.schemas import deployables as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import deployables as db

FILTERS = ('name', 'device_id', 'rp_uuid', 'driver_name', 'region_type',
           'function_id')


def view(req, deployable, attributes):
    body = {
        'uuid': deployable.uuid,
        'name': deployable.name,
        # Cyborg shows internal ids here (parent, root, device), and the
        # attributes as a JSON string of [{key: value}, ...].
        'parent_id': deployable.parent_id,
        'root_id': deployable.root_id,
        'device_id': deployable.device_id,
        'num_accelerators': deployable.num_accelerators,
        'attributes_list': json.dumps([{k: v} for k, v in attributes]),
        'rp_uuid': deployable.rp_uuid,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        # cyborg_lite's own: what the region fits and what is loaded.
        'region_type': deployable.region_type,
        'function_id': deployable.function_id,
        'function_name': deployable.function_name,
        'local_memory_mb': deployable.local_memory_mb,
        'links': utils.link(req, 'deployables', deployable.uuid),
    }
    body.update(utils.timestamps(deployable))
    return body


def list_deployables(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {k: params[k] for k in FILTERS if k in params}
    if 'device_id' in filters:
        filters['device_id'] = int(filters['device_id'])
    page = utils.page(params)
    rows = db.list_deployables(filters, **page)
    return utils.response(utils.collection(
        'deployables', [view(req, d, a) for d, a in rows], req,
        'deployables', page['limit']))


def show_deployable(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeployableNotFound(uuid=uuid))
    return utils.response(view(req, *db.get_deployable(uuid)))
