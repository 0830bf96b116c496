"""keystonemiddleware's CADF audit filter in the API pipeline
([api]audit, etc/api_audit_map.conf): every request an audit.http.request
and an audit.http.response event, CADF, naming the caller, the target as
our audit map reads it, the action and the outcome."""
import json
import os

import pytest
import webtest
from oslo_messaging.notify import _impl_test
from pycadf import cadftaxonomy as taxonomy
from pycadf import event as cadf_event

from cyborg_lite.api import deploy
from cyborg_lite.common import exception
from tests.functional.api import conftest as api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
AUDIT_MAP = os.path.join(ROOT, 'etc', 'api_audit_map.conf')


@pytest.fixture
def audited(sqlite_db, api_conf, conductor):
    api_conf.set_override('audit', True, group='api')
    api_conf.set_override('audit_map_file', AUDIT_MAP, group='api')
    # NOTE: the filter's options are registered when it is imported.
    from keystonemiddleware import audit
    assert audit.AUDIT_MIDDLEWARE_GROUP == 'audit_middleware_notifications'
    api_conf.set_override('driver', 'test',
                          group='audit_middleware_notifications')
    _impl_test.reset()
    yield webtest.TestApp(deploy.loadapp(
        api_conf, conductor_factory=lambda: conductor))
    _impl_test.reset()


# What keystonemiddleware's auth_token puts in X-Service-Catalog (its v2
# form of the token's catalog): the audit filter takes the target's id
# and addresses from the accelerator endpoint.
CATALOG = json.dumps([{
    'type': 'accelerator', 'name': 'cyborg', 'endpoints': [{
        'id': 'accel-endpoint', 'region': 'RegionOne',
        'publicURL': 'http://accel.example.org/accelerator',
        'internalURL': 'http://accel.internal/accelerator',
        'adminURL': 'http://accel.internal/accelerator'}]}])


def with_catalog(headers):
    return dict(headers, **{'X-Service-Catalog': CATALOG})


def events():
    return [(event_type, payload) for _ctxt, event_type, payload, _p
            in ((m[0], m[1]['event_type'], m[1]['payload'], m[2])
                for m in _impl_test.NOTIFICATIONS)]


def test_every_request_is_two_cadf_events(audited):
    device = api.add_device()
    audited.post('/v2/devices/%s/disable' % device.uuid,
                 headers=with_catalog(api.ADMIN))
    audited.get('/v2/devices/%s' % device.uuid,
                headers=with_catalog(api.MEMBER_A), status=403)
    sent = events()
    assert [t for t, _p in sent] == ['audit.http.request',
                                     'audit.http.response'] * 2
    disable = sent[1][1]
    assert disable['typeURI'] == cadf_event.TYPE_URI_EVENT
    assert disable['eventType'] == 'activity'
    assert disable['action'] == 'update/disable'
    assert disable['outcome'] == taxonomy.OUTCOME_SUCCESS
    assert disable['reason'] == {'reasonType': 'HTTP', 'reasonCode': '200'}
    assert disable['target']['typeURI'] == \
        'service/accelerator/devices/device/disable'
    assert disable['target']['id'] == 'accel-endpoint'
    assert disable['initiator']['project_id'] == 'admin-project'
    assert disable['initiator']['id'] != ''
    refused = sent[3][1]
    assert refused['action'] == taxonomy.ACTION_READ
    assert refused['outcome'] == taxonomy.OUTCOME_FAILURE
    assert refused['reason']['reasonCode'] == '403'
    assert refused['initiator']['project_id'] == 'project-a'
    # pycadf takes each back as a valid CADF event.
    for _t, payload in sent:
        assert cadf_event.Event(
            eventType=payload['eventType'], id=payload['id'],
            eventTime=payload['eventTime'], action=payload['action'],
            outcome=payload['outcome'],
            initiator=_resource(payload['initiator']),
            target=_resource(payload['target']),
            observer=_resource(payload['observer'])).is_valid()


def _resource(data):
    from pycadf import resource
    return resource.Resource(**{k: data[k] for k in ('id', 'typeURI')
                                if k in data})


def test_audit_without_a_map_is_a_configuration_error(sqlite_db, api_conf):
    api_conf.set_override('audit', True, group='api')
    with pytest.raises(exception.ConfigError):
        deploy.loadapp(api_conf)


def test_off_by_default(app):
    _impl_test.reset()
    app.get('/v2/devices', headers=api.ADMIN)
    assert events() == []
