"""cyborg-lite-all-in-one behind Keystone, from [api] auth_strategy in a
--config-file (noauth stays the default without one)."""
import pytest
import requests

from tests import real_keystone
from tests.functional.all_in_one import keystone_standin
from tests.functional.all_in_one import process

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('all_in_one')]

HEADERS = {'OpenStack-API-Version': 'accelerator 2.3'}


def _config(path, keystone):
    path.write_text(real_keystone.ini({
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': real_keystone.authtoken_options(
            keystone.url + '/v3')}))
    return str(path)


@pytest.fixture
def keystone():
    standin = keystone_standin.KeystoneStandIn(
        users={'admin-token': ['admin', 'member', 'reader']}).start()
    yield standin
    standin.stop()


def test_all_in_one_honours_auth_strategy_keystone(tmp_path, keystone):
    aio = process.AllInOneProcess(
        tmp_path / 'state', '--config-file',
        _config(tmp_path / 'keystone.conf', keystone))
    aio.start()
    try:
        aio.wait_api()
        devices = aio.api + '/v2/devices'
        resp = requests.get(devices, headers=HEADERS, timeout=30)
        assert resp.status_code == 401
        assert keystone.url in resp.headers['WWW-Authenticate']
        resp = requests.get(devices, timeout=30, headers=dict(
            HEADERS, **{'X-Auth-Token': 'forged'}))
        assert resp.status_code == 401
        resp = requests.get(devices, timeout=30, headers=dict(
            HEADERS, **{'X-Auth-Token': 'admin-token'}))
        assert resp.status_code == 200, resp.text
        assert ('GET', '/v3/auth/tokens', 'forged') in keystone.requests
    finally:
        assert aio.stop() == 0
        process.kill_leftovers(aio.placement_port)
    # The banner sends the user to their openrc, not to a noauth URL.
    banner = aio.proc.stdout.read()
    assert '  export PLACEMENT_URL=http://127.0.0.1:%d\n' % (
        aio.placement_port) in banner
    assert '  source your openrc' in banner
    assert 'CYBORG_LITE_URL' not in banner


def test_all_in_one_defaults_to_noauth(tmp_path):
    conf = tmp_path / 'empty.conf'
    conf.write_text('[api]\nmax_limit = 10\n')
    aio = process.AllInOneProcess(tmp_path / 'state', '--config-file',
                                  str(conf))
    aio.start()
    try:
        aio.wait_api()
        resp = requests.get(aio.api + '/v2/devices', headers=HEADERS,
                            timeout=30)
        assert resp.status_code == 200, resp.text
    finally:
        assert aio.stop() == 0
        process.kill_leftovers(aio.placement_port)
