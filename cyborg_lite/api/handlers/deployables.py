"""/v2/deployables: the schedulable parts of devices (read only)."""
import functools
import json

from cyborg_lite.api import json_list
from cyborg_lite.api.policies import deployables as policies
from cyborg_lite.api.schemas import deployables as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import deployables as db

FILTERS = ('name', 'device_id', 'rp_uuid', 'driver_name', 'region_type',
           'function_id')


@functools.lru_cache(maxsize=1024)
def _attributes_list(pairs):
    # NOTE: cached: the regions of one model list the same attributes.
    return json.dumps([{k: v} for k, v in pairs])


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
        'attributes_list': _attributes_list(tuple(attributes)),
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


LIST_FORMAT = json_list.RowFormat(
    ['uuid', 'name', 'parent_id', 'root_id', 'device_id', 'num_accelerators',
     'attributes_list', 'rp_uuid', 'driver_name', 'bitstream_id',
     'region_type', 'function_id', 'function_name', 'local_memory_mb',
     'links', 'created_at', 'updated_at'],
    {'links': utils.LINK_TEMPLATE}, raw=['attributes_list'])


@functools.lru_cache(maxsize=1024)
def _attributes_list_json(pairs):
    return json.dumps(_attributes_list(pairs))


def list_deployables(req):
    """The same body as ``view`` of each deployable, encoded in bulk
    (api/json_list.py)."""
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {k: params[k] for k in FILTERS if k in params}
    if 'device_id' in filters:
        filters['device_id'] = int(filters['device_id'])
    page = utils.page(params)
    rows, attributes = db.list_deployable_rows(
        utils.list_names(LIST_FORMAT) + ('id',),
        utils.href_prefix(req, 'deployables'), filters, **page)
    raw = {'attributes_list': [
        _attributes_list_json(tuple(attributes.get(row[-1], ())))
        for row in rows]}
    return utils.collection_response(
        'deployables', LIST_FORMAT.encode(rows, raw), rows, req,
        'deployables', page['limit'])


def show_deployable(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeployableNotFound(uuid=uuid))
    return utils.response(view(req, *db.get_deployable(uuid)))
