"""GET /v2/device_profiles/{name}/explain (microversion PROFILE_EXPLAIN)
over HTTP on each backend: the funnel read from the database in one
snapshot, who may ask, and what bad input gets."""
import uuid

import jsonschema
import pytest

from cyborg_lite.api import microversion
from cyborg_lite.api.schemas import device_profiles as schemas
from cyborg_lite.db import attach_handles
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'


def _at(version=microversion.PROFILE_EXPLAIN, headers=ADMIN):
    return dict(headers, **{V: 'accelerator %s' % version})


def _explain(app, name, query='', headers=ADMIN, status=200,
             version=microversion.PROFILE_EXPLAIN):
    return app.get('/v2/device_profiles/%s/explain%s' % (name, query),
                   headers=_at(version, headers), status=status)


def _claim(dep, handle):
    with session.writer() as s:
        s.add(models.KubernetesClaimDevice(
            uuid=str(uuid.uuid4()), claim_uid=str(uuid.uuid4()),
            namespace='ns-a',
            claim_name='gpu-claim', device_name='fpga-0', project_id='p-k8s',
            pods='job-7', deployable_id=dep.id, attach_handle_id=handle.id))


@pytest.fixture
def fleet(pg_app):
    """host1: two FPGA regions, one bound to an instance of project-a,
    one prepared for a pod; host2: a card in maintenance."""
    device = fx.add_device(hostname='host1')
    bound = fx.add_deployable(device, attributes=[('rc', 'FPGA')])
    claimed = fx.add_deployable(device, attributes=[('rc', 'FPGA')])
    bound_handle = fx.add_handle(bound, in_use=True)
    _claim(claimed, fx.add_handle(claimed, in_use=True))
    maintained = fx.add_device(hostname='host2', status='maintaining')
    fx.add_handle(fx.add_deployable(maintained, attributes=[('rc', 'FPGA')]),
                  in_use=False)
    fx.create_profile(pg_app, MEMBER_A, name='dp-fpga',
                      groups=[{'resources:FPGA': '1'}])
    fx.create_profile(pg_app, ADMIN, name='dp-gpu',
                      groups=[{'resources:PGPU': '1'}])
    arq = fx.create_arqs(pg_app, MEMBER_A, name='dp-fpga').json[
        'arqs'][0]['uuid']
    fx.set_arq(arq, state='Bound', deployable_id=bound.id,
               attach_handle_id=bound_handle.id, hostname='host1',
               instance_uuid='inst-1')
    return pg_app


def _funnel(group):
    return {f['step']: (f['hosts'], f['devices']) for f in group['funnel']}


def test_regions_all_held_are_a_transient_answer_naming_the_holders(fleet):
    body = _explain(fleet, 'dp-fpga').json
    jsonschema.validate(body, schemas.EXPLAIN)
    assert (body['device_profile'], body['hostname'], body['hosts'],
            body['result']) == ('dp-fpga', None, 2, 'no_candidates')
    (group,) = body['groups']
    funnel = _funnel(group)
    assert funnel['health'] == (2, 3)
    assert funnel['maintenance'] == (1, 2)
    assert funnel['agent_down'] == (1, 2)
    assert funnel['in_use'] == (0, 0)
    assert group['blocking']['step'] == 'in_use'
    assert group['blocking']['kind'] == 'transient'
    holders = sorted(group['blocking']['holders'], key=lambda h: h['kind'])
    assert holders == [
        {'kind': 'arq', 'project_id': 'project-a', 'instance_uuid': 'inst-1'},
        {'kind': 'kubernetes', 'project_id': 'p-k8s', 'namespace': 'ns-a',
         'claim': 'gpu-claim', 'pods': ['job-7']}]
    # Each region fails exactly one constraint: three near misses.
    assert sorted(m['failed'] for m in group['near_misses']) == [
        'in_use', 'in_use', 'maintenance']


def test_one_host_and_a_permanent_answer(fleet):
    (group,) = _explain(fleet, 'dp-fpga', '?hostname=host2').json['groups']
    assert group['blocking'] == {'step': 'maintenance', 'kind': 'transient',
                                 'holders': []}
    (group,) = _explain(fleet, 'dp-gpu').json['groups']
    assert group['blocking']['step'] == 'resource_class'
    assert group['blocking']['kind'] == 'permanent'
    assert _funnel(group)['resource_class'] == (0, 0)


def test_a_free_region_is_a_candidate(fleet):
    device = fx.add_device(hostname='host3')
    fx.add_handle(fx.add_deployable(device, attributes=[('rc', 'FPGA')]),
                  in_use=False)
    body = _explain(fleet, 'dp-fpga').json
    assert body['result'] == 'candidates'
    assert body['groups'][0]['blocking'] is None
    assert _funnel(body['groups'][0])['in_use'] == (1, 1)


@pytest.mark.parametrize('query', ['?hostname=', '?other=1',
                                   '?hostname=a&hostname=b'])
def test_bad_input_is_400(fleet, query):
    assert error_of(_explain(fleet, 'dp-fpga', query, status=400))


def test_refusals(fleet):
    assert 'dp-nope' in error_of(_explain(fleet, 'dp-nope', status=404))
    assert 'host9' in error_of(_explain(fleet, 'dp-fpga', '?hostname=host9',
                                        status=404))
    assert 'needs API version' in error_of(_explain(
        fleet, 'dp-fpga', status=404, version='2.9'))
    _explain(fleet, 'dp-fpga', headers=MEMBER_A, status=403)


_PF = '{"domain": "0000", "bus": "af", "device": "00", "function": "0"}'


def _pf_handle(dep, in_use):
    with session.writer() as s:
        s.add(models.AttachHandle(
            uuid=str(uuid.uuid4()), deployable_id=dep.id, in_use=in_use,
            attach_type='PCI', attach_info=_PF,
            in_use_function=attach_handles.function_key('host7', _PF)
            if in_use else None))


def test_a_region_whose_pf_a_sibling_holds_is_in_use_by_its_holder(pg_app):
    """Two regions behind one PF: the one bound holds the function, so
    its free sibling is stopped at in_use too (handle_shared_in_use),
    and the claim on a region of another card is read in the same
    snapshot."""
    device = fx.add_device(hostname='host7')
    held = fx.add_deployable(device, attributes=[('rc', 'FPGA')])
    sibling = fx.add_deployable(device, attributes=[('rc', 'FPGA')])
    _pf_handle(held, True)
    _pf_handle(sibling, False)
    fx.create_profile(pg_app, MEMBER_A, name='dp-pf',
                      groups=[{'resources:FPGA': '1'}])
    (group,) = _explain(pg_app, 'dp-pf', '?hostname=host7').json['groups']
    assert group['blocking']['step'] == 'in_use'
    whys = sorted(m['why'] for m in group['near_misses'])
    assert whys == ['handle_shared_in_use', 'no free attach handle']


def test_a_regions_stored_traits_are_what_the_traits_step_reads(fleet):
    """rc and trait* attributes read from the database: a region with the
    trait passes the traits step, one with another trait (or a
    non-trait attribute of that name) does not."""
    device = fx.add_device(hostname='host3')
    fx.add_handle(fx.add_deployable(device, attributes=[
        ('rc', 'FPGA'), ('trait0', 'CUSTOM_FAST')]), in_use=False)
    fx.add_handle(fx.add_deployable(device, attributes=[
        ('rc', 'FPGA'), ('trait0', 'CUSTOM_SLOW'),
        ('note', 'CUSTOM_FAST')]), in_use=False)
    fx.create_profile(fleet, ADMIN, name='dp-fast', groups=[
        {'resources:FPGA': '1', 'trait:CUSTOM_FAST': 'required'}])
    body = _explain(fleet, 'dp-fast', '?hostname=host3').json
    (group,) = body['groups']
    assert _funnel(group)['traits'] == (1, 1)
    assert group['blocking'] is None
    assert [m['why'] for m in group['near_misses']] == [
        'trait CUSTOM_FAST is required']


def test_the_near_misses_shown_are_the_first_in_the_fleets_order(pg_app):
    """24 free regions (4 hosts of 2 cards of 3, made in reverse order,
    every other one with a trait), each failing only the trait asked:
    all 24 are counted, and the 20 shown are the first by hostname,
    card and region, whichever of their kinds each is."""
    by_host = {}
    for host in ('near3', 'near2', 'near1', 'near0'):
        for _card in range(2):
            device = fx.add_device(hostname=host)
            for n in range(3):
                traits = [('trait0', 'CUSTOM_FAST')] if n % 2 else []
                dep = fx.add_deployable(
                    device, attributes=[('rc', 'FPGA')] + traits)
                fx.add_handle(dep, in_use=False)
                by_host.setdefault(host, []).append(dep.uuid)
    fx.create_profile(pg_app, ADMIN, name='dp-near', groups=[
        {'resources:FPGA': '1', 'trait:CUSTOM_NOPE': 'required'}])
    (group,) = _explain(pg_app, 'dp-near').json['groups']
    assert group['blocking']['step'] == 'traits'
    assert group['near_misses_total'] == 24
    in_order = [(host, uuid_) for host in sorted(by_host)
                for uuid_ in by_host[host]]
    assert [(m['hostname'], m['deployable_uuid'])
            for m in group['near_misses']] == in_order[:20]


def test_the_regions_of_a_host_whose_agent_is_down_stop_there(pg_app):
    """Each host's agent state, read in the same snapshot, is its
    regions': the host whose agent is down stops at agent_down."""
    for host in ('agent-up', 'agent-down'):
        fx.add_handle(fx.add_deployable(fx.add_device(hostname=host),
                                        attributes=[('rc', 'FPGA')]),
                      in_use=False)
    now = models.utcnow()
    with session.writer() as s:
        s.add_all([models.Agent(hostname='agent-up', state='up',
                                heartbeat_at=now),
                   models.Agent(hostname='agent-down', state='down',
                                heartbeat_at=now)])
    fx.create_profile(pg_app, ADMIN, name='dp-agents',
                      groups=[{'resources:FPGA': '1'}])
    (group,) = _explain(pg_app, 'dp-agents').json['groups']
    assert _funnel(group)['cleaning'] == (2, 2)
    assert _funnel(group)['agent_down'] == (1, 1)
    assert [(m['hostname'], m['failed']) for m in group['near_misses']] \
        == [('agent-down', 'agent_down')]


def test_the_holders_named_are_those_of_the_first_regions_held(pg_app):
    """15 hosts of two one-region cards (counted by the database,
    db/fleet_kinds), each card held by a claim of its own, the hosts made
    in reverse order: all 30 are counted, and the holders named are those
    of the first 20 regions by hostname and card, in that order."""
    for number in reversed(range(15)):
        for card in range(2):
            dep = fx.add_deployable(
                fx.add_device(hostname='held%02d' % number),
                attributes=[('rc', 'FPGA')])
            handle = fx.add_handle(dep, in_use=True)
            with session.writer() as s:
                s.add(models.KubernetesClaimDevice(
                    uuid=str(uuid.uuid4()), claim_uid=str(uuid.uuid4()),
                    namespace='ns', claim_name='claim%02d-%d' % (number,
                                                                 card),
                    device_name='fpga-0', project_id='p', pods='pod',
                    deployable_id=dep.id, attach_handle_id=handle.id))
    fx.create_profile(pg_app, ADMIN, name='dp-held',
                      groups=[{'resources:FPGA': '1'}])
    (group,) = _explain(pg_app, 'dp-held').json['groups']
    assert _funnel(group)['agent_down'] == (15, 30)
    assert group['blocking']['step'] == 'in_use'
    assert [h['claim'] for h in group['blocking']['holders']] == [
        'claim%02d-%d' % (n, card) for n in range(10) for card in range(2)]
    assert group['near_misses_total'] == 30
