"""The WSGI stack of the API, assembled in one place.

From the outside in, each layer seeing the request before the next:

1. RequestId: every request and response gets ``x-openstack-request-id``
   first, so that even a 500 can be traced in the log (oslo.middleware's
   keys and header, middleware.RequestId).
   With ``[metrics]enabled`` it also counts and times every request by
   its route template and status (api/metrics.RequestMetrics).
2. FaultWrapper: error responses of every layer below, in Cyborg's JSON
   form; an unexpected exception becomes a JSON 500 with no traceback.
3. BodySizeLimit: 413 before anything reads or parses an oversized body.
4. Authentication: keystonemiddleware.auth_token (``keystone``) or NoAuth
   (``noauth``). It runs before the microversion check so that an
   unauthenticated caller learns nothing but 401.
5. Audit (``[api]audit``, off by default): keystonemiddleware's CADF
   audit filter, behind authentication so that its events name the
   caller.
   GET /metrics (``[metrics]enabled``): here, behind authentication and
   the metrics policy; before it with ``[metrics]api_unauthenticated``.
6. Microversion: 406 for an unsupported version; version headers on every
   response.
7. handler.ApiHandler: the route table; wsgi_wrapper puts the caller's
   context and the conductor client on the request around each handler
   and turns the errors handlers raise into JSON.
"""
import os

from oslo_log import log

from cyborg_lite.api import fault
from cyborg_lite.api import handler
from cyborg_lite.api.handlers import bitstream_file
from cyborg_lite.api import metrics
from cyborg_lite.api import middleware
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

LOG = log.getLogger(__name__)


def _auth(app, conf):
    if conf.api.auth_strategy == 'keystone':
        return middleware.KeystoneAuth(app, conf)
    return middleware.NoAuth(app, conf.api.noauth_default_roles,
                             conf.api.noauth_default_project_id)


def _audit(app, conf):
    if not conf.api.audit:
        return app
    if not conf.api.audit_map_file:
        raise exception.ConfigError(
            reason='[api]audit needs [api]audit_map_file (etc/'
                   'api_audit_map.conf is one for our routes)')
    path = conf.find_file(conf.api.audit_map_file) or \
        conf.api.audit_map_file
    if not os.path.isfile(path):
        raise exception.ConfigError(
            reason='[api]audit_map_file %s is not a file' % path)
    from keystonemiddleware import audit
    return audit.AuditMiddleware(app, audit_map_file=path,
                                 service_name='cyborg-lite',
                                 oslo_config_config=conf)


def loadapp(conf=CONF, conductor_factory=None):
    """The complete WSGI application for ``conf``."""
    api = handler.ApiHandler(conductor_factory=conductor_factory)
    app = middleware.Microversion(api)
    requests = (metrics.RequestMetrics(api.router) if conf.metrics.enabled
                else None)
    if requests and not conf.metrics.api_unauthenticated:
        app = metrics.MetricsEndpoint(app, authorize=True,
                                      requests=requests)
    app = _audit(app, conf)
    app = _auth(app, conf)
    if requests and conf.metrics.api_unauthenticated:
        app = metrics.MetricsEndpoint(app, authorize=False,
                                      requests=requests)
    app = middleware.BodySizeLimit(app, conf.api.max_request_body_size)
    app = fault.FaultWrapper(app)
    return middleware.RequestId(app, requests)


def loadapp_serving(conf=CONF):
    """loadapp for a process about to serve requests (gunicorn's workers,
    the WSGI entry point, the all-in-one): first it clears the uploads
    that died with an earlier process (bitstream_file, safe in every
    worker at once). A failure there (the database not up yet) is logged,
    not fatal: the next PUT or DELETE of such a bitstream clears it."""
    try:
        bitstream_file.recover_abandoned_uploads()
    except Exception as exc:
        LOG.warning('Abandoned bitstream uploads not checked at start: %s',
                    exc)
    return loadapp(conf)
