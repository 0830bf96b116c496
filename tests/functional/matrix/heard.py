"""The notifications the matrix tests hear: a notification listener's
endpoint, each message checked against the catalogue and its committed
schema."""
import collections
import functools
import json
import os
import threading

import jsonschema

from cyborg_lite.notifications import events as notifications

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


class Heard:
    """The notifications a listener got, in order (thread-safe)."""

    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('INFO', event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('ERROR', event_type, payload)

    def _got(self, priority, event_type, payload):
        with self.lock:
            self.messages.append((priority, event_type, payload))


@functools.lru_cache(maxsize=None)
def _validator(name):
    """The committed schema of payload ``name``, compiled once."""
    with open(os.path.join(ROOT, 'docs', 'notifications',
                           name + '.json')) as f:
        schema = json.load(f)
    return jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker())


def checked(message):
    """(event, data) of a notification, once its priority and payload
    are checked against the catalogue and the committed schema."""
    priority, event_type, payload = message
    event = event_type[len('accelerator.'):]
    name, wanted_priority = notifications.EVENTS[event][:2]
    assert payload['cyborg_lite_object.name'] == name, message
    assert priority == wanted_priority, message
    _validator(name).validate(payload)
    return event, payload['cyborg_lite_object.data']


class Mark(collections.namedtuple('Mark', ['heard', 'history'])):
    """Where the notifications and each device's history stood."""


def uuids_in(data):
    return {v for k, v in data.items() if isinstance(v, str) and (
        k in ('uuid', 'claim_uid') or k.endswith('_uuid'))} | set(
        data.get('device_uuids') or ())
