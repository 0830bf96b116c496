"""/ and /v2: the version documents (public: no token needed)."""
from cyborg_lite.api import microversion
from cyborg_lite.api import utils


def version_document(req):
    return {
        'id': 'v2',
        'status': 'CURRENT',
        'min_version': str(microversion.MIN_VERSION),
        'max_version': str(microversion.max_version()),
        'links': [{'href': '%s/v2' % utils.base_url(req), 'rel': 'self'}],
    }


def index(req):
    """GET /: the versions this service offers (Cyborg's document)."""
    version = version_document(req)
    return utils.response({
        'name': 'OpenStack Cyborg API',
        'description': 'cyborg_lite: lifecycle management of hardware '
                       'accelerators (FPGAs, GPUs, ...), Cyborg v2 '
                       'compatible.',
        'versions': [version],
        'default_version': version,
    })


def show_version(req):
    """GET /v2: this version's document."""
    return utils.response(dict(version_document(req), id='v2.0'))
