"""/v2/devices: the device inventory (read only; the conductor writes it)."""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import devices as policies
from cyborg_lite.api.schemas import devices as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import devices as db

FILTERS = ('type', 'vendor', 'hostname', 'status')


def viewer(req):
    """``device -> body`` for this request.

    What depends on the request only (base URL, microversion) is worked
    out once here, not once per device: for a list of 10,000 devices that
    per-device work was half of the request's time.
    """
    prefix = '%s/v2/devices/' % utils.base_url(req)
    with_status = microversion.of(req).matches('2.3')
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
