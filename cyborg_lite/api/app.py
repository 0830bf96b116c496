"""The pecan application (without middleware: see deploy.py)."""
import pecan

from cyborg_lite.api.controllers import root
from cyborg_lite.api import hooks
from cyborg_lite.conf import CONF


def setup_app(conf=CONF, conductor_factory=None):
    """The bare pecan app.

    :param conductor_factory: makes the conductor RPC client; tests may
        pass one, the default is cyborg_lite.conductor.rpcapi.ConductorAPI.
    """
    del conf  # options are read per request from CONF (tests override it)
    return _hide_body_from_pecan(pecan.make_app(
        root.RootController(),
        hooks=[hooks.ContextHook(), hooks.ConductorHook(conductor_factory),
               hooks.ErrorHook()],
        # NOTE: no guessing of a response type from a ".json" suffix, no
        # redirects to add a slash, no HTML debug pages: an API answers
        # JSON at the URL it was asked.
        guess_content_type_from_ext=False,
        force_canonical=False,
        debug=False,
        logging={},
    ))


def _hide_body_from_pecan(app):
    """Keep pecan from parsing bodies and negotiating content types.

    pecan parses JSON and form bodies into controller keyword arguments
    before any hook runs; a pathological body (deeply nested JSON, broken
    multipart) makes that parse raise where nothing can turn it into a
    400. And it matches the Accept header against template types, failing
    keystoneauth's ``Accept: application/json`` version discovery. Every
    handler reads its body itself (utils.json_body) and answers JSON, so
    pecan is shown neither header; the originals stay in the environ
    under cyborg_lite.* for any handler that needs them.
    """
    def wrapped(environ, start_response):
        for header in ('CONTENT_TYPE', 'HTTP_ACCEPT'):
            if header in environ:
                environ['cyborg_lite.' + header.lower()] = environ.pop(
                    header)
        return app(environ, start_response)
    return wrapped
