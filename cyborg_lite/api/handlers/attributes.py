"""/v2/attributes: key/value pairs of deployables; admins write them."""
from cyborg_lite.api.policies import attributes as policies
from cyborg_lite.api.schemas import attributes as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.db import attributes as db


def view(req, attribute):
    body = {
        'uuid': attribute.uuid,
        'deployable_id': attribute.deployable_id,
        'key': attribute.key,
        'value': attribute.value,
        'links': utils.link(req, 'attributes', attribute.uuid),
    }
    body.update(utils.timestamps(attribute))
    return body


def list_attributes(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    filters = {}
    if 'deployable_id' in params:
        filters['deployable_id'] = int(params['deployable_id'])
    if 'key' in params:
        filters['key'] = params['key']
    page = utils.page(params)
    attributes = db.list_attributes(filters, **page)
    return utils.response(utils.collection(
        'attributes', [view(req, a) for a in attributes], req,
        'attributes', page['limit']))


def show_attribute(req, uuid):
    utils.authorize(req, policies.GET_ONE)
    utils.require_uuid(uuid, exception.AttributeNotFound(uuid=uuid))
    return utils.response(view(req, db.get_attribute(uuid)))


def create_attribute(req):
    utils.authorize(req, policies.CREATE)
    body = utils.json_body(req, schemas.CREATE)
    attribute = db.create_attribute(body['deployable_id'], body['key'],
                                    body['value'])
    return utils.response(view(req, attribute), status=201)


def delete_attribute(req, uuid):
    utils.authorize(req, policies.DELETE)
    utils.require_uuid(uuid, exception.AttributeNotFound(uuid=uuid))
    db.delete_attribute(uuid)
    return utils.response(status=204)
