"""/v2/devices: the device inventory (the conductor writes it) and an
operator's maintenance switch (POST .../disable and .../enable, Cyborg
2.3's: status 'maintaining' or 'enabled').

From 2.7 (``microversion.DEVICE_HEALTH``) a device shows its health
(common/states.HEALTH), why and since when; enabling an unhealthy device
is refused with 409 while its fault persists (it would not be offered
anyway, and the operator is told why)."""
import functools
import json

from oslo_log import log as logging

from cyborg_lite.api import microversion
from cyborg_lite.api.policies import devices as policies
from cyborg_lite.api.schemas import devices as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import device_history as history_db
from cyborg_lite.db import devices as db
from cyborg_lite.inventory import views as host_inventory

LOG = logging.getLogger(__name__)
FILTERS = ('type', 'vendor', 'hostname', 'status')


def _unavailable_reasons(device):
    view = host_inventory.device_view(device, agent_state=device.agent_state)
    return list(host_inventory.unavailable_reasons(view))


def view(req, device):
    """The body of one device (a row of db/devices with agent_state)."""
    version = microversion.of(req)
    body = {
        'uuid': device.uuid,
        'type': device.type,
        'vendor': device.vendor,
        'model': device.model,
        'std_board_info': device.std_board_info,
        'vendor_board_info': device.vendor_board_info,
        'hostname': device.hostname,
        'links': utils.link(req, 'devices', device.uuid),
    }
    if version.matches('2.3'):
        body['status'] = device.status
    if version.matches('2.5'):
        body['unavailable_reasons'] = _unavailable_reasons(device)
    if version.matches(microversion.TOPOLOGY):
        body.update(topology_view(device, device.pci_address))
    if version.matches(microversion.DEVICE_HEALTH):
        body.update(health_view(device))
    body.update(utils.timestamps(device))
    return body


# Where a device or deployable sits (2.6), in this order.
TOPOLOGY_KEYS = ('numa_node', 'local_cpulist', 'socket', 'pcie_root',
                 'pci_bus_id')
HEALTH_KEYS = ('health', 'health_reason', 'health_since')


def topology_view(row, pci_bus_id):
    return dict(zip(TOPOLOGY_KEYS, (row.numa_node, row.local_cpulist,
                                    row.socket, row.pcie_root, pci_bus_id)))


def health_view(row):
    """health, health_reason, health_since of a device or deployable."""
    return {'health': row.health, 'health_reason': row.health_reason,
            'health_since': utils.timestamp(row.health_since)}


@functools.lru_cache(maxsize=None)
def _list_format(with_status, with_reasons, with_topology,
                 with_health=False):
    """The RowFormat of a listed device: the keys of ``view``, in order."""
    keys = ['uuid', 'type', 'vendor', 'model', 'std_board_info',
            'vendor_board_info', 'hostname', 'links']
    if with_status:
        keys.append('status')
    if with_reasons:
        keys.append('unavailable_reasons')
    if with_topology:
        keys += TOPOLOGY_KEYS
    if with_health:
        keys += HEALTH_KEYS
    keys += ['created_at', 'updated_at']
    return utils.list_format(keys, raw=['unavailable_reasons']
                             if with_reasons else (),
                             columns={'pci_bus_id': 'pci_address'})


# What a listed device's reasons are worked out from (after its keys).
_REASON_COLUMNS = ('status', 'health', 'agent_state')


@functools.lru_cache(maxsize=256)
def _reasons_json(status, health, agent_state):
    # NOTE: a device's own reasons (no deployable asked about) read only
    # its status, health and agent state; a list of 10,000 devices has a
    # handful of such combinations.
    view = host_inventory.DeviceView(
        uuid='', type='', vendor='', identity='', status=status,
        health=health, agent_down=agent_state == 'down')
    return json.dumps(list(host_inventory.unavailable_reasons(view)))


def list_devices(req):
    """The same body as ``view`` of each device, written by the database
    (api/json_list.py): 10,000 devices in one page is Cyborg's usual list
    (it does not page), and a dict per row was most of its cost."""
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {k: params[k] for k in FILTERS if k in params}
    page = utils.page(params)
    version = microversion.of(req)
    fmt = _list_format(version.matches('2.3'), version.matches('2.5'),
                       version.matches(microversion.TOPOLOGY),
                       version.matches(microversion.DEVICE_HEALTH))
    names = fmt.columns()
    if fmt.raw:
        names += _REASON_COLUMNS
    known_type = filters.get('type', schemas.TYPES[0]) in schemas.TYPES
    rows = (db.list_device_rows(names, utils.href_prefix(req, 'devices'),
                                filters, **page) if known_type else [])
    raw = {}
    if fmt.raw:
        first = len(fmt.columns())
        raw['unavailable_reasons'] = [_reasons_json(*row[first:])
                                      for row in rows]
    return utils.collection_response('devices', fmt.encode(rows, raw),
                                     rows, req, 'devices', page['limit'])


def show_device(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    return utils.response(view(req, db.get_device(uuid)))


def _require_no_body(req):
    # NOTE: Cyborg's actions take no body; clients send none (openstacksdk)
    # and an empty JSON object is tolerated.
    raw = utils.body(req)
    if raw and raw.strip() not in (b'{}',):
        raise exception.InvalidField(field='body',
                                     reason='this action takes no body')


def _set_status(req, uuid, rule, status):
    utils.authorize(req, rule)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    _require_no_body(req)
    hostname, changed = db.set_status(
        uuid, status, utils.context(req),
        refuse_unhealthy=microversion.of(req).matches(
            microversion.DEVICE_HEALTH))
    if changed:
        LOG.info('Device %s on %s is now %s', uuid, hostname, status)
        # Taken away: in every scheduler's view before this answers; given
        # back: as soon as a conductor gets to it.
        publish = utils.publish_now if status == 'maintaining' else \
            utils.request_publish
        publish(req, {hostname})
    return utils.response(status=200)


def _history_limit(params):
    """How many of the newest rows a history request gets: ``limit``,
    from 1 to [api]max_limit (a larger one is a 400 that says so), else
    [api]max_limit: one request never reads a device's whole past."""
    most = CONF.api.max_limit
    if 'limit' not in params:
        return most
    limit = int(params['limit'])
    if limit > most:
        raise exception.InvalidField(
            field='query.limit', reason='%d rows of history asked, at most '
            '%d a request ([api]max_limit); ask for the newest %d'
            % (limit, most, most))
    return limit


def show_history(req, uuid):
    """The device's transitions, oldest first (microversion
    DEVICE_HISTORY): what, when, who held it, why. ``limit``: only the
    newest that many (_history_limit)."""
    microversion.require(req, microversion.DEVICE_HISTORY,
                         'A device\'s history')
    utils.authorize(req, policies.HISTORY)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    params = utils.query(req, schemas.HISTORY_QUERY)
    rows = history_db.list_rows(uuid, _history_limit(params))
    hidden = () if microversion.of(req).matches(
        microversion.PROGRAMMING_STATS) else ('seconds',)
    return utils.response({'device_uuid': uuid, 'history': [
        _history_row(row, hidden) for row in rows]})


def _history_row(row, hidden):
    """One row of the history as the API shows it (``hidden``: the
    columns newer than the request's microversion)."""
    body = dict(zip(history_db.COLUMNS[:-1], row[1:-1]),
                created_at=utils.timestamp(row.created_at))
    for key in hidden:
        del body[key]
    return body


def disable_device(req, uuid):
    """Cyborg 2.3: status 'maintaining'; every provider of the device gets
    reserved = total and binds to it are refused. Repeating it is
    harmless."""
    return _set_status(req, uuid, policies.DISABLE, 'maintaining')


def enable_device(req, uuid):
    """Cyborg 2.3: status 'enabled' again. From 2.7 an unhealthy device
    is refused (409, with why and since when) and nothing changes: it is
    offered again on its own once its fault clears."""
    return _set_status(req, uuid, policies.ENABLE, 'enabled')
