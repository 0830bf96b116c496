"""Versioned notifications, through oslo.messaging's Notifier.

Off by default, as in every OpenStack service: ``[oslo_messaging_notifications]
driver = messagingv2`` (and a ``transport_url`` or the RPC one) turns
them on. One notification per transition of an ARQ, a device, an agent,
a programming job, a cleaning or a Kubernetes claim; ``EVENTS`` is the
catalogue, docs/notifications.md lists it and docs/notifications/ holds
the JSON Schema of each payload (made from ``PAYLOADS``; a test keeps
them equal).

An event type is ``accelerator.<object>.<action>[.start|.end|.error]``,
as OpenStack names them; the payload is versioned in the style of Nova's
versioned notifications::

    {"cyborg_lite_object.name": "AcceleratorRequestPayload",
     "cyborg_lite_object.namespace": "cyborg_lite",
     "cyborg_lite_object.version": "1.0",
     "cyborg_lite_object.data": {...the fields...}}

A new field is a minor version, a removed or retyped one a major
version; consumers read the version first.

Who emits: the transition's own code, through db/device_history.record
(a history row in the transition's transaction and this notification
after its commit) or, for transitions of no device, ``emit`` after the
write. Sending happens in order, off the request's and the
transaction's path (notifications/senders.py): from a child
process of the service's own for a broker's transport, on a thread of
the service's process for what oslo.messaging delivers inside it
(``inproc://``, ``fake://``, the ``test`` driver). A broker outage
delays notifications (up to ``notification_senders.QUEUE_LIMIT`` of
them are kept; older ones are dropped and counted), it never blocks or
fails an API request. A service that stops sends what it queued first
(``flush_at_stop``, for at most ``STOP_TIMEOUT``);
cyborg_lite_notifications_total counts what was sent, failed and
dropped.
"""
import collections
import logging
import os
import socket
import sys
import threading
import time

from cyborg_lite.common import states
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)

SERVICE = 'accelerator'
NAMESPACE = 'cyborg_lite'
OBJECT_KEY = 'cyborg_lite_object'
INFO = 'INFO'
ERROR = 'ERROR'
# Transports and drivers that deliver inside the process that sends:
# their Notifier must run in the service's own process.
IN_PROCESS_SCHEMES = ('inproc', 'fake')
IN_PROCESS_DRIVERS = ('test',)
# A service stopping waits this long for its queued notifications (a
# broker that does not answer must not hold the stop for ever).
STOP_TIMEOUT = 10.0

_NAME = OBJECT_KEY + '.name'
_NAMESPACE = OBJECT_KEY + '.namespace'
_VERSION = OBJECT_KEY + '.version'
_DATA = OBJECT_KEY + '.data'
_STR = 'string'
_INT = 'integer'
_NUMBER = 'number'
_UUID = 'uuid'


class Payload:
    """A versioned payload: its name, its version and its fields,
    ``{field: (type, nullable)}`` (type 'string', 'uuid', 'integer',
    'number', a
    tuple of allowed strings, or ['string'] for a list)."""

    def __init__(self, name, version, description, fields):
        self.name = name
        self.version = version
        self.description = description
        self.fields = fields
        self._keys = tuple(fields)

    def wrap(self, data):
        """The payload as sent: ``data`` limited to the fields."""
        return {_NAME: self.name, _NAMESPACE: NAMESPACE,
                _VERSION: self.version,
                _DATA: dict(zip(self._keys, map(data.get, self._keys)))}

    def json_schema(self):
        """The JSON Schema (draft 2020-12) of the payload as sent."""
        major, minor = self.version.split('.')
        return {
            '$schema': 'https://json-schema.org/draft/2020-12/schema',
            '$id': 'cyborg_lite/notifications/%s.json' % self.name,
            'title': self.name,
            'description': self.description,
            'type': 'object',
            'additionalProperties': False,
            'required': [OBJECT_KEY + k for k in
                         ('.name', '.namespace', '.version', '.data')],
            'properties': {
                OBJECT_KEY + '.name': {'const': self.name},
                OBJECT_KEY + '.namespace': {'const': NAMESPACE},
                # Same major: a consumer of 1.0 reads 1.x.
                OBJECT_KEY + '.version': {
                    'type': 'string',
                    'pattern': r'^%s\.[0-9]+$' % major,
                    'description': 'this schema is version %s.%s'
                                   % (major, minor)},
                OBJECT_KEY + '.data': {
                    'type': 'object',
                    'additionalProperties': False,
                    'required': sorted(self.fields),
                    'properties': {name: _field_schema(*spec) for name, spec
                                   in sorted(self.fields.items())}},
            },
        }


def _field_schema(kind, nullable):
    if isinstance(kind, tuple):
        schema = {'enum': list(kind) + ([None] if nullable else [])}
        return schema
    if isinstance(kind, list):
        schema = {'type': 'array', 'items': {'type': 'string'}}
    elif kind == _UUID:
        schema = {'type': 'string', 'pattern':
                  '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                  '[0-9a-f]{12}$'}
    else:
        schema = {'type': kind}
    if nullable:
        schema = {'anyOf': [schema, {'type': 'null'}]}
    return schema


_HOLDER_FIELDS = {
    'project_id': (_STR, True),
    'instance_uuid': (_STR, True),
}
PAYLOADS = {p.name: p for p in (
    Payload('AcceleratorRequestPayload', '1.0',
            'An accelerator request (ARQ) and where it is bound.', dict(
                uuid=(_UUID, False),
                state=(states.ARQ.states, False),
                device_profile_group_id=(_INT, True),
                hostname=(_STR, True),
                device_rp_uuid=(_STR, True),
                device_uuid=(_UUID, True),
                deployable_uuid=(_UUID, True),
                error=(_STR, True),
                **_HOLDER_FIELDS)),
    Payload('DevicePayload', '1.0',
            'A device: its maintenance status, health and agent; '
            '"previous" is the value of what changed before the change.',
            dict(uuid=(_UUID, False),
                 hostname=(_STR, False),
                 type=(_STR, False),
                 vendor=(_STR, False),
                 driver_name=(_STR, False),
                 status=(('enabled', 'maintaining'), False),
                 health=(states.HEALTH.states, False),
                 previous=(_STR, True),
                 reason=(_STR, True))),
    Payload('AgentPayload', '1.0',
            "A host's agent went down or came back: every device of the "
            'host is unavailable, or available again.', dict(
                hostname=(_STR, False),
                state=(('up', 'down'), False),
                device_uuids=([_STR], False))),
    Payload('ProgrammingJobPayload', '1.1',
            'A programming job loading a bitstream into a region; '
            'namespace: the Kubernetes claim\'s that started it, seconds: '
            'from its creation to its end, on the end events (1.1).', dict(
                uuid=(_UUID, False),
                state=(states.JOB.states, False),
                device_uuid=(_UUID, True),
                deployable_uuid=(_UUID, True),
                bitstream_uuid=(_UUID, True),
                hostname=(_STR, True),
                attempts=(_INT, False),
                max_attempts=(_INT, False),
                arq_uuid=(_UUID, True),
                project_id=(_STR, True),
                namespace=(_STR, True),
                seconds=(_NUMBER, True),
                error=(_STR, True))),
    Payload('CleaningPayload', '1.0',
            "A region's clean between tenants (its device_state).", dict(
                deployable_uuid=(_UUID, False),
                device_uuid=(_UUID, False),
                hostname=(_STR, False),
                device_state=(states.DEVICE.states, False),
                cleaning_uuid=(_UUID, True),
                attempts=(_INT, False),
                error=(_STR, True))),
    Payload('KubernetesClaimPayload', '1.1',
            'A region held for, or released by, a Kubernetes '
            'ResourceClaim; pods: those it was reserved for when it was '
            'prepared (its status.reservedFor; 1.1).',
            dict(claim_uid=(_STR, False),
                 namespace=(_STR, False),
                 claim_name=(_STR, False),
                 device_name=(_STR, False),
                 deployable_uuid=(_UUID, False),
                 device_uuid=(_UUID, False),
                 hostname=(_STR, False),
                 project_id=(_STR, True),
                 pods=([_STR], False))),
)}

# event (type without the service) -> (payload, priority, what it means)
EVENTS = {
    'arq.create': ('AcceleratorRequestPayload', INFO,
                   'an ARQ was created (Initial)'),
    'arq.bind.start': ('AcceleratorRequestPayload', INFO,
                       'a bind was requested (BindStarted)'),
    'arq.bind.end': ('AcceleratorRequestPayload', INFO,
                     'the ARQ is Bound to a region'),
    'arq.bind.error': ('AcceleratorRequestPayload', ERROR,
                       'the bind failed (BindFailed), or was reaped'),
    'arq.unbind': ('AcceleratorRequestPayload', INFO,
                   'the ARQ was unbound (Unbound); its region waits for '
                   'its clean'),
    'arq.delete': ('AcceleratorRequestPayload', INFO,
                   'the ARQ was deleted; a region it held waits for its '
                   'clean'),
    'device.disable': ('DevicePayload', INFO,
                       'an operator put the device in maintenance'),
    'device.enable': ('DevicePayload', INFO,
                      'an operator took the device out of maintenance'),
    'device.health_change': ('DevicePayload', INFO,
                             "the device's health changed"),
    'agent.down': ('AgentPayload', ERROR,
                   "the host's agent stopped heartbeating"),
    'agent.up': ('AgentPayload', INFO,
                 "the host's agent heartbeats again"),
    'programming_job.program.start': ('ProgrammingJobPayload', INFO,
                                      'a job was created (queued)'),
    'programming_job.update': ('ProgrammingJobPayload', INFO,
                               'the job moved on (downloading, '
                               'programming, verifying) or was queued '
                               'again for another try'),
    'programming_job.program.end': ('ProgrammingJobPayload', INFO,
                                    'the region is loaded and verified '
                                    '(succeeded)'),
    'programming_job.program.error': ('ProgrammingJobPayload', ERROR,
                                      'the job failed'),
    'programming_job.cancel': ('ProgrammingJobPayload', INFO,
                               'the job was cancelled'),
    'deployable.clean.request': ('CleaningPayload', INFO,
                                 'an operator asked for a clean '
                                 '(pending_cleaning)'),
    'deployable.clean.start': ('CleaningPayload', INFO,
                               'a clean was sent to the agent (cleaning)'),
    'deployable.clean.end': ('CleaningPayload', INFO,
                             'the region is wiped (available)'),
    'deployable.clean.error': ('CleaningPayload', ERROR,
                               'the clean failed (error)'),
    'deployable.clean.retry': ('CleaningPayload', INFO,
                               "the clean's agent went silent or "
                               'restarted: to be cleaned again '
                               '(pending_cleaning)'),
    'deployable.clean.shared': ('CleaningPayload', INFO,
                                "a region behind the PCI function (or "
                                'mdev) a tenant had through a sibling '
                                'region: wiped too before it is offered '
                                'again (pending_cleaning)'),
    'deployable.clean.wait': ('CleaningPayload', INFO,
                              "the region's function is out of its host "
                              "driver's view (e.g. still bound to "
                              'vfio-pci): its clean waits until the host '
                              'reports it again (pending_cleaning)'),
    'k8s_claim.prepare': ('KubernetesClaimPayload', INFO,
                          'the region is held for a claim (kubelet '
                          'Prepare)'),
    'k8s_claim.unprepare': ('KubernetesClaimPayload', INFO,
                            'the claim let the region go (kubelet '
                            'Unprepare); it waits for its clean'),
}


def event_type(event):
    return '%s.%s' % (SERVICE, event)


class Event(collections.namedtuple('Event', [
        'event', 'data', 'device_uuid', 'deployable_uuid', 'state',
        'object_uuid', 'reason'])):
    """A transition: its event name (a key of EVENTS), the payload's
    data, and what its device history row needs (``device_uuid`` None:
    no row; the holder is read from ``data``)."""

    def __new__(cls, event, data, device_uuid=None, deployable_uuid=None,
                state=None, object_uuid=None, reason=None):
        if event not in EVENTS:
            raise ValueError('unknown notification event %r' % (event,))
        return super().__new__(cls, event, data, device_uuid,
                               deployable_uuid, state, object_uuid, reason)


# --- sending ----------------------------------------------------------------

# oslo.messaging's Notifier and its messaging drivers log a failure to
# send (at ERROR) and return: their loggers are watched so that a
# notification the broker never got is not counted as sent.
SWALLOWING_LOGGERS = ('oslo_messaging.notify.notifier',
                      'oslo_messaging.notify.messaging')


def make_notifier(transport, publisher):
    """oslo.messaging's Notifier on ``transport``, its failures watched."""
    import oslo_messaging as messaging
    for name in SWALLOWING_LOGGERS:
        logger = logging.getLogger(name)
        if _failures not in logger.filters:
            logger.addFilter(_failures)
    return messaging.Notifier(transport, publisher_id=publisher)


class _Failures(threading.local, logging.Filter):
    """Whether the calling thread's send was logged as failed."""
    seen = False

    def filter(self, record):
        if record.levelno >= logging.ERROR:
            self.seen = True
        return True


_failures = _Failures()


def send(notifier, ctxt, event, data):
    """Hand one notification to ``notifier`` (from ``make_notifier``);
    whether every driver took it. Never raises."""
    _failures.seen = False
    try:
        payload_name, priority, _what = EVENTS[event]
        method = notifier.error if priority == ERROR else notifier.info
        method(ctxt, event_type(event), PAYLOADS[payload_name].wrap(data))
    except Exception:
        LOG.exception('Notification %s could not be sent', event)
        return False
    return not _failures.seen


_lock = threading.Lock()
_sender = None
# False: notifications are off in this process; None: not looked at yet.
_enabled = None


def publisher_id(binary=None):
    binary = binary or os.path.basename(sys.argv[0] or 'cyborg-lite')
    return '%s:%s' % (binary, CONF.host or socket.gethostname())


def _make_sender():
    from cyborg_lite.notifications import senders
    # NOTE: oslo.messaging's Notifier counts an empty driver list as on
    # (is_enabled is false only for 'noop'); OpenStack's convention, and
    # ours, is off.
    drivers = [d for d in CONF.oslo_messaging_notifications.driver
               if d != 'noop']
    if not drivers:
        return None
    if not sends_in_process(drivers):
        return senders.ProcessSender({
            'publisher_id': publisher_id(),
            'log_level': logging.getLogger('cyborg_lite').getEffectiveLevel(),
            'conf': senders.messaging_values(CONF)})
    import oslo_messaging as messaging
    transport = messaging.get_notification_transport(CONF)
    return senders.ThreadSender(make_notifier(transport, publisher_id()),
                                send)


def sends_in_process(drivers):
    """Whether the Notifier must run in this process: a transport or a
    driver that delivers inside the process that sends."""
    url = (CONF.oslo_messaging_notifications.transport_url or
           CONF.transport_url or '')
    scheme = url.partition(':')[0].partition('+')[0]
    return (scheme in IN_PROCESS_SCHEMES or
            any(d in IN_PROCESS_DRIVERS for d in drivers))


def _get_sender():
    global _sender, _enabled
    with _lock:
        if _enabled is None:
            _sender = _make_sender()
            _enabled = _sender is not None
        return _sender


def _after_fork():
    """In a forked child (gunicorn's workers): its own transport and
    thread, or sending process, made at its first notification."""
    global _sender, _enabled, _lock
    # NOTE: another thread of the parent may have held it at the fork.
    _lock = threading.Lock()
    if _sender is not None:
        _sender.forget_after_fork()
    _sender = None
    _enabled = None


os.register_at_fork(after_in_child=_after_fork)


def enabled():
    """Whether this process sends notifications ([oslo_messaging_
    notifications] driver set and not noop); looked at once."""
    if _enabled is None:
        _get_sender()
    return _enabled


def emit(event, ctxt=None):
    """Queue ``event`` for sending; nothing when notifications are off.
    Never raises for a broker's sake."""
    if _enabled is None:
        _get_sender()
    sender = _sender
    if sender is not None:
        sender.put((_context_dict(ctxt), event))


def emit_all(events, ctxt=None):
    for event in events:
        emit(event, ctxt)


def _context_dict(ctxt):
    if ctxt is None:
        return {}
    if isinstance(ctxt, dict):
        return ctxt
    return ctxt.to_dict()


def flush(timeout=10):
    """Wait for the queued notifications to be handed to the driver."""
    sender = _sender
    return True if sender is None else sender.flush(timeout)


def wait_started():
    """Block until this process's sender can send (a sending process has
    built its Notifier); whether it can. True when notifications are
    off."""
    sender = _sender
    return True if sender is None else sender.wait_started()


def flush_at_stop(timeout=STOP_TIMEOUT):
    """Send what this process queued before it ends (the sending thread
    is a daemon: what it still holds at exit is lost). Called by every
    service as it stops; after ``timeout`` what is left is counted as
    dropped and said in the log. Whether everything went."""
    sender = _sender
    if sender is None:
        return True
    began = time.monotonic()
    if sender.flush(timeout):
        sender.close(max(0.0, began + timeout - time.monotonic()))
        return True
    left = sender.give_up()
    sender.close(0)
    LOG.warning('%d notifications not sent after %s s at stop (is the '
                'broker reachable?); dropped', left, timeout)
    return False


def stats():
    """(sent, failed, dropped) in this process (the metrics' are
    cyborg_lite_notifications_total)."""
    sender = _sender
    if sender is None:
        return 0, 0, 0
    return sender.sent, sender.failed, sender.dropped


def reset(timeout=0):
    """Forget the sender (tests change the configuration); a sending
    process gets ``timeout`` seconds to exit."""
    global _sender, _enabled
    with _lock:
        if _sender is not None:
            _sender.close(timeout)
        _sender = None
        _enabled = None


def write_schemas(directory):
    """docs/notifications/<payload>.json, one JSON Schema a payload (what
    ``python -m cyborg_lite.notifications.events docs/notifications``
    writes; a test keeps the committed files equal)."""
    import json
    written = []
    for name, payload in sorted(PAYLOADS.items()):
        path = os.path.join(directory, '%s.json' % name)
        with open(path, 'w') as f:
            json.dump(payload.json_schema(), f, indent=2, sort_keys=True)
            f.write('\n')
        written.append(path)
    return written


if __name__ == '__main__':
    for written_path in write_schemas(sys.argv[1]):
        print(written_path)
