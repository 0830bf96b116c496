"""/v2/devices: the device inventory (the conductor writes it) and an
operator's maintenance switch (POST .../disable and .../enable, Cyborg
2.3's: status 'maintaining' or 'enabled')."""
from oslo_log import log as logging

from cyborg_lite.api import microversion
from cyborg_lite.api.policies import devices as policies
from cyborg_lite.api.schemas import devices as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import devices as db
from cyborg_lite.objects import host_inventory

LOG = logging.getLogger(__name__)
FILTERS = ('type', 'vendor', 'hostname', 'status')


def _unavailable_reasons(device):
    view = host_inventory.device_view(device, agent_state=device.agent_state)
    return list(host_inventory.unavailable_reasons(view))


def viewer(req):
    """``device -> body`` for this request.

    What depends on the request only (base URL, microversion) is worked
    out once here, not once per device: for a list of 10,000 devices that
    per-device work was half of the request's time.
    """
    prefix = '%s/v2/devices/' % utils.base_url(req)
    version = microversion.of(req)
    with_status = version.matches('2.3')
    with_reasons = version.matches('2.5')
    timestamp = utils.timestamp

    def view_one(device):
        body = {
            'uuid': device.uuid,
            'type': device.type,
            'vendor': device.vendor,
            'model': device.model,
            'std_board_info': device.std_board_info,
            'vendor_board_info': device.vendor_board_info,
            'hostname': device.hostname,
            'links': [{'href': prefix + device.uuid, 'rel': 'self'}],
        }
        if with_status:
            body['status'] = device.status
        if with_reasons:
            body['unavailable_reasons'] = _unavailable_reasons(device)
        body['created_at'] = timestamp(device.created_at)
        body['updated_at'] = timestamp(device.updated_at)
        return body
    return view_one


def view(req, device):
    return viewer(req)(device)


def list_devices(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {k: params[k] for k in FILTERS if k in params}
    page = utils.page(params)
    known_type = filters.get('type', schemas.TYPES[0]) in schemas.TYPES
    devices = db.list_devices(filters, **page) if known_type else []
    view_one = viewer(req)
    return utils.response(utils.collection(
        'devices', [view_one(d) for d in devices], req, 'devices',
        page['limit']))


def show_device(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    return utils.response(view(req, db.get_device(uuid)))


def _require_no_body(req):
    # NOTE: Cyborg's actions take no body; clients send none (openstacksdk)
    # and an empty JSON object is tolerated.
    if req.body and req.body.strip() not in (b'{}',):
        raise exception.InvalidField(field='body',
                                     reason='this action takes no body')


def _set_status(req, uuid, rule, status):
    utils.authorize(req, rule)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    _require_no_body(req)
    hostname, changed = db.set_status(uuid, status)
    if changed:
        LOG.info('Device %s on %s is now %s', uuid, hostname, status)
        utils.request_publish(req, {hostname})
    return utils.response(status=200)


def disable_device(req, uuid):
    """Cyborg 2.3: status 'maintaining'; every provider of the device gets
    reserved = total and binds to it are refused. Repeating it is
    harmless."""
    return _set_status(req, uuid, policies.DISABLE, 'maintaining')


def enable_device(req, uuid):
    """Cyborg 2.3: status 'enabled' again."""
    return _set_status(req, uuid, policies.ENABLE, 'enabled')
