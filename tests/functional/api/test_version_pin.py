"""[upgrade_levels]api over HTTP: while an API of the previous release
runs (the services table says so), this API serves that release's newest
microversion and no newer one (406), in its version document, its
headers and ``latest``; the pin lifts once that API stopped beating,
so the maximum a client sees only goes forward."""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.api import microversion
from cyborg_lite.api import service_heartbeat
from cyborg_lite.api import version_pin
from cyborg_lite.common import version
from cyborg_lite.db import models
from cyborg_lite.db import services as services_db
from cyborg_lite.db.sql import session
from cyborg_lite.rpc import versions as rpc_versions
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'
OLD_MAX = microversion.RELEASED[version.PREVIOUS_RELEASE]
NEWEST = str(microversion.MAX_VERSION)


@pytest.fixture(autouse=True)
def unpinned():
    yield
    microversion.pin(None)


def _served(app):
    """What a client sees: the version document's maximum, the maximum
    header and what ``latest`` negotiates."""
    doc = app.get('/', headers=ADMIN).json['default_version']['max_version']
    resp = app.get('/v2/devices', headers=dict(ADMIN, **{V: 'accelerator '
                                                         'latest'}))
    assert resp.headers['OpenStack-API-Maximum-Version'] == doc
    assert resp.headers[V] == 'accelerator %s' % doc
    # A request at a version both sides serve is told the same maximum.
    at_min = app.get('/v2/devices', headers=ADMIN)
    assert at_min.headers['OpenStack-API-Maximum-Version'] == doc
    return doc


def _stop_beating(host):
    with session.writer() as s:
        s.execute(sa.update(models.Service).where(
            models.Service.host == host).values(
                heartbeat_at=datetime.datetime(2020, 1, 1)))


def test_auto_follows_the_oldest_api_and_lifts_after_it(app, conf):
    conf.set_override('api', 'auto', group='upgrade_levels')
    # An API of the previous release (it records none) and this one.
    services_db.beat('api', 'api-old', None, None)
    service_heartbeat.beat_once('api-new')
    version_pin.refresh()
    assert _served(app) == OLD_MAX
    refused = app.get('/v2/services', headers=dict(
        ADMIN, **{V: 'accelerator %s' % NEWEST}), expect_errors=True)
    assert refused.status_int == 406
    assert OLD_MAX in error_of(refused)
    assert app.get('/v2/devices', headers=dict(
        ADMIN, **{V: 'accelerator %s' % OLD_MAX})).status_int == 200

    _stop_beating('api-old')
    version_pin.refresh()
    assert _served(app) == NEWEST
    assert app.get('/v2/services', headers=dict(
        ADMIN, **{V: 'accelerator %s' % NEWEST})).status_int == 200


def test_an_api_pins_before_it_serves(app, conf):
    conf.set_override('api', 'auto', group='upgrade_levels')
    services_db.beat('api', 'api-old', version.PREVIOUS_RELEASE,
                     rpc_versions.RELEASED[version.PREVIOUS_RELEASE])
    thread = service_heartbeat.start('api-new', 3600)
    try:
        # No request can come before start() returned.
        assert _served(app) == OLD_MAX
    finally:
        thread.stop.set()
        thread.join()


@pytest.mark.parametrize('level, served', [
    ('', NEWEST), (version.PREVIOUS_RELEASE, OLD_MAX), ('2.4', '2.4')])
def test_a_release_or_microversion_pins_whatever_runs(app, conf, level,
                                                      served):
    conf.set_override('api', level, group='upgrade_levels')
    version_pin.refresh()
    assert _served(app) == served


@pytest.mark.parametrize('level', ['2025.2.0', '2.99', '3.0'])
def test_a_pin_naming_nothing_is_a_config_error(conf, level):
    conf.set_override('api', level, group='upgrade_levels')
    with pytest.raises(Exception, match=r'\[upgrade_levels\] api'):
        version_pin.check(conf)
