"""Who is told that accelerator requests finished binding.

A notifier gets a list of events, one per ARQ that became Bound or
BindFailed::

    {'arq_uuid': ..., 'instance_uuid': ..., 'status': 'completed'|'failed'}

and never raises: the bind result is already stored, and a consumer that
missed the event (Nova among them) reads the ARQ itself. ``[arq]notifier``
names the notifier: 'log', 'nova', or a "package.module:Class" path to any
class built with no arguments that has ``notify(ctxt, events)``.
"""
import collections
import logging

from oslo_utils import importutils

from cyborg_lite.common import exception
from cyborg_lite.common import service_clients
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)

COMPLETED = 'completed'
FAILED = 'failed'
EVENT_NAME = 'accelerator-request-bound'
# Nova's external event API with accelerator-request-bound (Ussuri).
NOVA_MICROVERSION = '2.82'


def make_event(arq_uuid, instance_uuid, bound):
    return {'arq_uuid': arq_uuid, 'instance_uuid': instance_uuid,
            'status': COMPLETED if bound else FAILED}


class LogNotifier:
    """Logs each event; the default, for deployments without Nova."""

    def notify(self, ctxt, events):
        for event in events:
            LOG.info('ARQ %(arq_uuid)s of instance %(instance_uuid)s: bind '
                     '%(status)s', event)


class NovaNotifier:
    """Sends Nova the accelerator-request-bound external event."""

    def __init__(self, conf=CONF, group='nova'):
        self._conf = conf
        self._group = group
        self._adapter = None

    def _get_adapter(self):
        # NOTE: built on first use so a conductor starts even while [nova]
        # is being fixed; the session then caches its token across calls.
        if self._adapter is None:
            self._adapter = service_clients.adapter_from_conf(
                self._conf, self._group,
                default_microversion=NOVA_MICROVERSION, raise_exc=False)
        return self._adapter

    def notify(self, ctxt, events):
        """POST the events; returns {arq_uuid: status code per event}."""
        body = {'events': [{'name': EVENT_NAME,
                            'server_uuid': e['instance_uuid'],
                            'tag': e['arq_uuid'],
                            'status': e['status']}
                           for e in events if e.get('instance_uuid')]}
        if not body['events']:
            return {}
        try:
            resp = self._get_adapter().post('/os-server-external-events',
                                            json=body)
        except Exception:
            LOG.exception('Could not send %d accelerator-request-bound '
                          'events to Nova', len(body['events']))
            return {}
        return self._results(resp, body['events'])

    def _results(self, resp, sent):
        tags = [e['tag'] for e in sent]
        if resp.status_code == 200:
            return dict.fromkeys(tags, 200)
        if resp.status_code == 207:
            codes = {e.get('tag'): e.get('code')
                     for e in _json(resp).get('events', [])}
            self._log_partial(codes)
            return codes
        if resp.status_code == 422:
            # NOTE: Nova answers 422 while the instance has no host yet
            # (Launchpad #1855752); it reads the ARQs itself when it waits.
            LOG.info('Nova has no host yet for the instances of ARQs %s; '
                     'it will read their state itself', tags)
        else:
            LOG.error('Nova refused accelerator-request-bound events for '
                      'ARQs %s: HTTP %s %s', tags, resp.status_code,
                      resp.text[:200])
        return dict.fromkeys(tags, resp.status_code)

    @staticmethod
    def _log_partial(codes):
        by_code = collections.defaultdict(list)
        for tag, code in codes.items():
            by_code[code].append(tag)
        for code, tags in by_code.items():
            if code == 200:
                continue
            level = logging.INFO if code == 422 else logging.WARNING
            LOG.log(level, 'Nova answered %s to the accelerator-request-'
                    'bound events of ARQs %s', code, tags)


def _json(resp):
    try:
        return resp.json()
    except ValueError:
        return {}


NOTIFIERS = {'log': LogNotifier, 'nova': NovaNotifier}


def load(name=None):
    """A new notifier by registered name or "package.module:Class" path."""
    name = name or CONF.arq.notifier
    if name in NOTIFIERS:
        return NOTIFIERS[name]()
    if ':' in name:
        module, _, cls = name.partition(':')
        try:
            return importutils.import_class('%s.%s' % (module, cls))()
        except ImportError:
            pass
    raise exception.NotifierNotFound(name=name, known=sorted(NOTIFIERS))


_loaded = {}


def get_default():
    """The notifier [arq]notifier names, one per process, so that the Nova
    notifier's keystoneauth session (and its token) is reused."""
    name = CONF.arq.notifier
    if name not in _loaded:
        _loaded[name] = load(name)
    return _loaded[name]


def notify_safely(ctxt, events, notifier=None):
    """Tell ``notifier`` (default: get_default()); never raise."""
    if not events:
        return
    try:
        (notifier or get_default()).notify(ctxt, events)
    except Exception:
        LOG.exception('Bind notifier failed on %d events', len(events))
