"""GET /v2/services (microversion SERVICES): each service's host, kind,
release, RPC versions, state by its heartbeat's age, and who may read
it."""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.api import microversion
from cyborg_lite.api import utils
from cyborg_lite.db import models
from cyborg_lite.db import services as services_db
from cyborg_lite.db.sql import session
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'


def _at(version, headers=ADMIN):
    return dict(headers, **{V: 'accelerator %s' % version})


def _age(kind, host, seconds):
    with session.writer() as s:
        row = s.scalars(sa.select(models.Service).filter_by(
            kind=kind, host=host)).one()
        row.heartbeat_at -= datetime.timedelta(seconds=seconds)


def test_an_admin_sees_each_service_and_whether_it_is_up(app, conf):
    conf.set_override('agent_down_time', 60, group='conductor')
    services_db.beat('conductor', 'cond1', '2026.2.0',
                     {'cyborg-lite-conductor': '1.10'})
    services_db.beat('agent', 'node1', None, None)   # a 2026.1.0 agent
    services_db.beat('agent', 'node2', '2026.2.0', None)
    _age('agent', 'node1', 61)
    _age('agent', 'node2', 50)
    body = app.get('/v2/services', headers=_at(microversion.SERVICES),
                   status=200).json
    assert [(s['kind'], s['host'], s['release'], s['state'])
            for s in body['services']] == [
        ('agent', 'node1', None, 'down'),
        ('agent', 'node2', '2026.2.0', 'up'),
        ('conductor', 'cond1', '2026.2.0', 'up')]
    assert body['services'][2]['rpc_versions'] == {
        'cyborg-lite-conductor': '1.10'}
    assert [s['heartbeat_at'] for s in body['services']] == [
        utils.timestamp(r['heartbeat_at']) for r in services_db.list_all()]


@pytest.mark.parametrize('headers', [MEMBER_A, MANAGER_A])
def test_only_admins_list_services(app, headers):
    resp = app.get('/v2/services', headers=_at(microversion.SERVICES,
                                               headers), status=403)
    assert 'cyborg_lite:service:get_all' in error_of(resp)


def test_before_its_microversion_the_route_is_not_there(app):
    app.get('/v2/services', headers=_at('2.11'), status=404)
