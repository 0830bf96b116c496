"""/v2/deployables: the schedulable parts of devices, and their cleanup
between tenants.

From 2.7 (``microversion.DEVICE_HEALTH``) a deployable shows its own
health (a region's signals, e.g. its DFL port's errors), why and since
when; its device's health applies to it too.

From 2.5 a deployable shows ``device_state`` (Cyborg 17's states:
available, allocated, pending_cleaning, cleaning, error; the flow is
conductor/cleaning.py) and ``cleaning_error``; an admin may ask for a
clean (``POST .../clean``): the retry of a region in error, or the wipe
of an idle one. The conductor is told by a cast; were it lost, the
conductors' periodic task sends the clean anyway.
"""
import functools
import json

from oslo_log import log as logging

from cyborg_lite.api.handlers import devices as device_handlers
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import deployables as policies
from cyborg_lite.api.schemas import deployables as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import deployables as db

LOG = logging.getLogger(__name__)
CLEANING_VERSION = '2.5'

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
    version = microversion.of(req)
    if version.matches(CLEANING_VERSION):
        body['device_state'] = deployable.device_state
        body['cleaning_error'] = deployable.cleaning_error
    if version.matches(microversion.TOPOLOGY):
        body.update(device_handlers.topology_view(deployable,
                                                  deployable.pci_bus_id))
    if version.matches(microversion.DEVICE_HEALTH):
        body.update(device_handlers.health_view(deployable))
    body.update(utils.timestamps(deployable))
    return body


@functools.lru_cache(maxsize=None)
def _list_format(with_cleaning, with_topology, with_health):
    """The RowFormat of a listed deployable: the keys of ``view``."""
    keys = ['uuid', 'name', 'parent_id', 'root_id', 'device_id',
            'num_accelerators', 'attributes_list', 'rp_uuid', 'driver_name',
            'bitstream_id', 'region_type', 'function_id', 'function_name',
            'local_memory_mb', 'links']
    if with_cleaning:
        keys += ['device_state', 'cleaning_error']
    if with_topology:
        keys += device_handlers.TOPOLOGY_KEYS
    if with_health:
        keys += device_handlers.HEALTH_KEYS
    return utils.list_format(keys + ['created_at', 'updated_at'],
                             raw=['attributes_list'])


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
    version = microversion.of(req)
    fmt = _list_format(version.matches(CLEANING_VERSION),
                       version.matches(microversion.TOPOLOGY),
                       version.matches(microversion.DEVICE_HEALTH))
    rows, attributes = db.list_deployable_rows(
        fmt.columns() + ('id',),
        utils.href_prefix(req, 'deployables'), filters, **page)
    raw = {'attributes_list': [
        _attributes_list_json(tuple(attributes.get(row[-1], ())))
        for row in rows]}
    return utils.collection_response(
        'deployables', fmt.encode(rows, raw), rows, req,
        'deployables', page['limit'])


def show_deployable(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeployableNotFound(uuid=uuid))
    return utils.response(view(req, *db.get_deployable(uuid)))


def clean_deployable(req, uuid):
    """202 with the deployable, now pending_cleaning; 409 unless it was
    available or error (in use, or a clean already due or running)."""
    microversion.require(req, CLEANING_VERSION,
                         'POST /v2/deployables/{uuid}/clean')
    utils.authorize(req, policies.CLEAN)
    utils.require_uuid(uuid, exception.DeployableNotFound(uuid=uuid))
    if utils.body(req):
        raise exception.InvalidField(field='body',
                                     reason='this action takes no body')
    region = cleaning_db.reclean(uuid)
    LOG.info('Clean of deployable %s asked for', uuid)
    utils.release(req, {region.hostname}, {region.hostname},
                  fallback=start_cleaning)
    return utils.response(view(req, *db.get_deployable(uuid)), status=202)


def start_cleaning(req, hostnames):
    """Tell a conductor that regions of these hosts wait for their clean
    (after a release or a request); the state is already stored, so a
    cast that fails is only logged: the periodic task sends it anyway."""
    if not hostnames:
        return
    try:
        utils.conductor(req).start_cleaning(utils.context(req),
                                            sorted(hostnames))
    except Exception:
        LOG.exception('Could not tell a conductor to clean on %s; its '
                      'periodic task will', ', '.join(sorted(hostnames)))
