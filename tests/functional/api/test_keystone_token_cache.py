"""What docs/deployment.md says of keystonemiddleware's token cache, shown
with the real middleware and a stand-in Keystone: a validated token is
kept for [keystone_authtoken] token_cache_time, so one that Keystone has
revoked since keeps working until then; token_cache_time = -1 asks
Keystone on every request."""
import pytest
import webtest

from cyborg_lite.api import deploy
from tests.functional.all_in_one import keystone_standin
from tests.functional.api import conftest as fx

DEVICES = '/v2/devices'
TOKEN = {'X-Auth-Token': 'admin-token'}


@pytest.fixture
def keystone():
    standin = keystone_standin.KeystoneStandIn(
        users={'admin-token': ['admin', 'member', 'reader']}).start()
    yield standin
    standin.stop()


@pytest.fixture
def make_app(sqlite_db, api_conf, keystone):
    fx.configure_keystone(api_conf, keystone.url)

    def make(token_cache_time):
        api_conf.set_override('token_cache_time', token_cache_time,
                              group='keystone_authtoken')
        return webtest.TestApp(deploy.loadapp(api_conf))
    return make


def _validations(keystone):
    return sum(1 for method, path, subject in keystone.requests
               if (method, path, subject) ==
               ('GET', '/v3/auth/tokens', 'admin-token'))


def test_a_revoked_token_works_until_it_leaves_the_cache(make_app, keystone):
    app = make_app(300)
    app.get(DEVICES, headers=TOKEN, status=200)
    del keystone.users['admin-token']        # revoked in Keystone
    app.get(DEVICES, headers=TOKEN, status=200)
    assert _validations(keystone) == 1


def test_without_the_cache_revocation_is_immediate(make_app, keystone):
    app = make_app(-1)
    app.get(DEVICES, headers=TOKEN, status=200)
    del keystone.users['admin-token']
    app.get(DEVICES, headers=TOKEN, status=401)
    assert _validations(keystone) == 2
