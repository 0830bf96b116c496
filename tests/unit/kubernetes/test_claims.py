"""kubernetes/claims.ClaimFlow against a database holding two nodes'
reports: a prepare request names a device of a pool, and device names
repeat from node to node, so the conductor checks the pool itself."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import cleaning
from cyborg_lite.conductor import report
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.kubernetes import claims as k8s_claims
from tests.unit.conductor import report_helpers as rh
from tests.unit.conductor.test_cleaning_flow import RecordingAgents

HOSTS = ('node1', 'node2')
REGION0 = 'fpga-0000-5e-00-0-region0'     # on both nodes


@pytest.fixture
def flow(sqlite_db, conf):
    conf.set_override('hosts', list(HOSTS), group='kubernetes')
    for host in HOSTS:
        report.handle_report(host, [rh.ok('fpga', rh.fpga())])
    return k8s_claims.ClaimFlow(
        programming=None,
        cleaning=cleaning.CleaningFlow(agent_api=RecordingAgents()))


def _request(pool, uid='c1a1a000-0000-4000-8000-000000000001'):
    return {'claim_uid': uid, 'namespace': 'ns', 'claim_name': 'fpga',
            'pool': pool, 'device': REGION0}


def _held():
    """{(host, region name): claim uid}."""
    claim = models.KubernetesClaimDevice
    with session.reader() as s:
        rows = s.execute(
            sa.select(models.Device.hostname, models.Deployable.name,
                      claim.claim_uid)
            .join(models.Deployable,
                  models.Deployable.id == claim.deployable_id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)).all()
    return {(host, name.rsplit('_', 1)[1]): uid for host, name, uid in rows}


def test_a_device_of_another_nodes_pool_is_refused(flow):
    with pytest.raises(exception.ClaimRefused,
                       match='pool node2 is not the pool of host node1'):
        flow.prepare('node1', _request(pool='node2'), wait=1)
    assert _held() == {}

    answer = flow.prepare('node2', _request(pool='node2'), wait=1)

    assert _held() == {('node2', 'region0'): _request('')['claim_uid']}
    assert answer['attach_info'] is not None


def _pods_held():
    with session.reader() as s:
        return s.scalars(sa.select(models.KubernetesClaimDevice.pods)).all()


def test_the_pods_of_a_claim_are_kept_with_its_hold(flow):
    flow.prepare('node1', dict(_request('node1'),
                               pods=['trainer-0', 'trainer-1']), wait=1)
    assert _pods_held() == ['trainer-0,trainer-1']


def test_an_older_agents_request_without_pods_holds_all_the_same(flow):
    flow.prepare('node1', _request('node1'), wait=1)
    assert _pods_held() == [None]


@pytest.mark.parametrize('pods', [
    'trainer-0', ['trainer-0,trainer-1'], ['Trainer'], [None],
    ['p%d' % i for i in range(257)]])
def test_a_request_naming_no_pods_is_refused_and_holds_nothing(flow, pods):
    with pytest.raises(exception.Invalid, match='pod'):
        flow.prepare('node1', dict(_request('node1'), pods=pods), wait=1)
    assert _held() == {}
