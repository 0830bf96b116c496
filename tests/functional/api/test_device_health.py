"""A device's and a deployable's health in the API (microversion
DEVICE_HEALTH), and enable refused while a device is unhealthy."""
import datetime
import json

from cyborg_lite.api import microversion
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'
SINCE = datetime.datetime(2026, 12, 6, 10, 2, 11, 123456)


def _at(version):
    return dict(ADMIN, **{V: 'accelerator %s' % version})


HEALTH = _at(microversion.DEVICE_HEALTH)


def _set(model, row, **values):
    with session.writer() as s:
        s.query(model).filter_by(id=row.id).update(values)


def _status(device):
    with session.reader() as s:
        return s.get(models.Device, device.id).status


def test_health_from_its_microversion(app):
    device = fx.add_device()
    _set(models.Device, device, health='unhealthy',
         health_reason='catfatal_errors 0x4', health_since=SINCE)
    url = '/v2/devices/%s' % device.uuid
    shown = app.get(url, headers=HEALTH).json
    assert (shown['health'], shown['health_reason'], shown['health_since'],
            shown['unavailable_reasons']) == (
        'unhealthy', 'catfatal_errors 0x4', '2026-12-06T10:02:11+00:00',
        ['unhealthy'])
    # Not before: a 2.5 client sees exactly what it saw.
    assert 'health' not in app.get(url, headers=_at('2.5')).json
    [listed] = app.get('/v2/devices', headers=HEALTH).json['devices']
    assert listed == shown


def test_a_region_s_own_health(app):
    region = fx.add_deployable(fx.add_device())
    _set(models.Deployable, region, health='recovering',
         health_reason='port_errors 0x1 (cleared)', health_since=SINCE)
    shown = app.get('/v2/deployables/%s' % region.uuid,
                    headers=HEALTH).json
    assert (shown['health'], shown['health_reason']) == (
        'recovering', 'port_errors 0x1 (cleared)')


def test_enable_is_refused_while_the_device_is_unhealthy(app, conductor):
    device = fx.add_device(status='maintaining')
    _set(models.Device, device, health='unhealthy',
         health_reason='temperature 97 °C ≥ crit 95 °C', health_since=SINCE)
    url = '/v2/devices/%s/enable' % device.uuid

    resp = app.post(url, headers=HEALTH, status=409)
    message = error_of(resp)
    assert 'temperature 97 °C ≥ crit 95 °C' in message
    assert '2026-12-06T10:02:11Z' in message
    assert json.loads(resp.json['error_message'])['faultcode'] == 'Client'
    # Nothing changed, nobody was asked to publish.
    assert _status(device) == 'maintaining' and conductor.calls == []
    # Disabling works at every health; an older client enables as
    # Cyborg's does (it stays unavailable for its health all the same).
    app.post('/v2/devices/%s/disable' % device.uuid, headers=HEALTH,
             status=200)
    app.post(url, headers=_at('2.5'), status=200)
    assert _status(device) == 'enabled'


def test_enable_works_once_the_fault_cleared(app):
    device = fx.add_device(status='maintaining')
    _set(models.Device, device, health='recovering',
         health_reason='catfatal_errors 0x4 (cleared)')
    app.post('/v2/devices/%s/enable' % device.uuid, headers=HEALTH,
             status=200)
    assert _status(device) == 'enabled'
