"""What / and /v2 answer: Cyborg's version documents."""
from cyborg_lite.api.schemas import common

VERSION = {
    'type': 'object',
    'properties': {'id': common.STRING, 'status': common.STRING,
                   'min_version': common.STRING,
                   'max_version': common.STRING, 'links': common.LINKS},
    'required': ['id', 'status', 'min_version', 'max_version', 'links'],
    'additionalProperties': False,
}

INDEX = {
    'type': 'object',
    'properties': {'name': common.STRING, 'description': common.STRING,
                   'versions': {'type': 'array', 'items': VERSION},
                   'default_version': VERSION},
    'required': ['name', 'description', 'versions', 'default_version'],
    'additionalProperties': False,
}
