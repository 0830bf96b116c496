"""GET /v2/devices/{uuid}/history (microversion DEVICE_HISTORY): who may
read it, from which version, and what a limit keeps."""
import pytest

from cyborg_lite.api import microversion
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'


def _at(version, headers=ADMIN):
    return dict(headers, **{V: 'accelerator %s' % version})


def _before(version):
    major, minor = version.split('.')
    return '%s.%d' % (major, int(minor) - 1)


@pytest.fixture
def device(app):
    """A device an admin disabled and enabled: two transitions."""
    device = fx.add_device()
    for action in ('disable', 'enable'):
        app.post('/v2/devices/%s/%s' % (device.uuid, action), headers=ADMIN,
                 status=200)
    return device


def _history(app, device, headers=ADMIN, query='', status=200):
    return app.get('/v2/devices/%s/history%s' % (device.uuid, query),
                   headers=_at(microversion.DEVICE_HISTORY, headers),
                   status=status)


def test_an_admin_reads_the_transitions_oldest_first(app, device):
    body = _history(app, device).json
    assert body['device_uuid'] == device.uuid
    assert [(r['event'], r['state']) for r in body['history']] == [
        ('device.disable', 'maintaining'), ('device.enable', 'enabled')]


def test_a_limit_keeps_the_newest(app, device):
    [row] = _history(app, device, query='?limit=1').json['history']
    assert row['event'] == 'device.enable'


@pytest.mark.parametrize('limit', ['x', '-1', '0', '1.5', '1 ', ''])
def test_a_limit_that_is_no_whole_number_is_400(app, device, limit):
    resp = _history(app, device, query='?limit=' + limit, status=400)
    assert 'limit' in error_of(resp)


def test_a_history_is_read_at_most_max_limit_rows_at_a_time(
        app, api_conf, device):
    api_conf.set_override('max_limit', 1, group='api')
    resp = _history(app, device, query='?limit=2', status=400)
    assert error_of(resp) == (
        'Invalid value for query.limit: 2 rows of history asked, at most 1 '
        'a request ([api]max_limit); ask for the newest 1')
    # Without a limit: the newest [api]max_limit.
    [row] = _history(app, device).json['history']
    assert row['event'] == 'device.enable'
    [row] = _history(app, device, query='?limit=1').json['history']
    assert row['event'] == 'device.enable'


@pytest.mark.parametrize('headers', [MEMBER_A, MANAGER_A],
                         ids=['member', 'manager'])
def test_only_an_admin_may_read_it(app, device, headers):
    resp = _history(app, device, headers=headers, status=403)
    assert 'cyborg_lite:device:history' in error_of(resp)


def test_before_its_microversion_the_route_is_not_there(app, device):
    app.get('/v2/devices/%s/history' % device.uuid,
            headers=_at(_before(microversion.DEVICE_HISTORY)), status=404)


def test_an_unknown_device_is_404(app):
    resp = app.get('/v2/devices/%s/history'
                   % '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f',
                   headers=_at(microversion.DEVICE_HISTORY), status=404)
    assert '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f' in error_of(resp)
