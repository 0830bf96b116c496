"""Version 2 of the API: its document and the routes of every resource.

Each resource module has ``ROUTES``: {path below /v2: {METHOD: handler}},
a handler being ``handler(req, **path_params) -> webob.Response``.
"""
from cyborg_lite.api.controllers import accelerator_requests
from cyborg_lite.api.controllers import attributes
from cyborg_lite.api.controllers import bitstream_file
from cyborg_lite.api.controllers import bitstreams
from cyborg_lite.api.controllers import deployables
from cyborg_lite.api.controllers import device_profiles
from cyborg_lite.api.controllers import devices
from cyborg_lite.api.controllers import programs
from cyborg_lite.api.controllers import provider_trees
from cyborg_lite.api import utils

RESOURCES = [devices, deployables, attributes, device_profiles,
             accelerator_requests, bitstreams, bitstream_file, programs,
             provider_trees]


def routes(version_document):
    def show_version(req):
        """GET /v2: this version's document."""
        doc = dict(version_document(req), id='v2.0')
        return utils.response(doc)

    table = {'/v2': {'GET': show_version}}
    for module in RESOURCES:
        for path, methods in module.ROUTES.items():
            table['/v2' + path] = methods
    return table
