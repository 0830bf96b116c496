"""/v2/devices: the device inventory (read only; the conductor writes it)."""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import devices as policies
from cyborg_lite.api.schemas import devices as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import devices as db

FILTERS = ('type', 'vendor', 'hostname', 'status')


def view(req, device):
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
    if microversion.of(req).matches('2.3'):
        body['status'] = device.status
    body.update(utils.timestamps(device))
    return body


def list_devices(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {k: params[k] for k in FILTERS if k in params}
    page = utils.page(params)
    devices = db.list_devices(filters, **page)
    return utils.response(utils.collection(
        'devices', [view(req, d) for d in devices], req, 'devices',
        page['limit']))


def show_device(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.DeviceNotFound(uuid=uuid))
    return utils.response(view(req, db.get_device(uuid)))


ROUTES = {
    '/devices': {'GET': list_devices},
    '/devices/{uuid}': {'GET': show_device},
}
