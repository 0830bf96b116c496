"""A vGPU made at bind, end to end, as Nova drives it: the H200 host
simulated as its kernel acts (tests/fixtures/drivers/vgpu_vfio_host.py),
the agent with the nvidia driver, the conductor, the API over HTTP
(webtest) and the real Placement. Nova's order: the scheduler's
allocation on the candidate of the type's trait, create the ARQ, bind,
wait for Bound; delete the ARQ and the allocation."""
import uuid

import pytest

from tests import nova
from tests import waiting
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.placement import one_host
from tests.functional.placement import vgpu_nova

PF = vgpu_vfio_host.PFS[0]
ADMIN = one_host.ADMIN
HEADERS = vgpu_nova.HEADERS
MOST = {'CUSTOM_NVIDIA_2335_%s' % t[1].split()[1].replace('-', '_'): t[2]
        for t in vgpu_vfio_host.H200X_TYPES}
Q35 = 'CUSTOM_NVIDIA_2335_H200X_35C'
Q141 = 'CUSTOM_NVIDIA_2335_H200X_141C'


@pytest.fixture
def hostname():
    return 'vgpu-host-%s' % uuid.uuid4().hex[:8]


@pytest.fixture
def kernel(tmp_path):
    return vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200')


@pytest.fixture
def cloud(sqlite_db, conf, placement, hostname, kernel):
    with vgpu_nova.serving(conf, placement, hostname, kernel, (Q35, Q141),
                           'cond-vgpu') as app:
        waiting.read_until(lambda: _offers(placement, hostname),
                           lambda found: found == {
                               t: (m, 0) for t, m in MOST.items()},
                           timeout=60, what='every type offered')
        yield app


def _offers(placement, hostname):
    return vgpu_nova.offers(placement, hostname, 'CUSTOM_NVIDIA_2335_')


def _bind(app, placement, hostname, trait):
    """Nova's boot of one instance with a vGPU of ``trait``'s type: the
    ARQ as the API shows it once resolved."""
    instance, rp = vgpu_nova.allocate(placement, hostname, trait)
    return one_host.bind_as_nova(app, HEADERS, trait.lower(), hostname, rp,
                                 instance)


def _states(app, hostname):
    """{deployable name: device_state} of the host's vGPU types."""
    found = app.get('/v2/deployables', headers=dict(
        ADMIN, **{'OpenStack-API-Version': 'accelerator 2.5'})).json
    return {d['name'][len(hostname) + len(PF) + 2:]: d['device_state']
            for d in found['deployables']
            if d['name'].startswith(hostname + '_')}


def test_a_bind_writes_the_type_into_a_vf_and_its_delete_writes_0(
        cloud, placement, hostname, kernel):
    arq = _bind(cloud, placement, hostname, Q35)
    assert arq['state'] == 'Bound', arq
    assert arq['attach_handle_type'] == 'PCI'
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    assert vf in kernel.vfs[PF]
    assert kernel.current[vf] == 1426
    assert kernel.read(kernel.vf_file(
        PF, kernel.vfs[PF].index(vf), 'current_vgpu_type')) == '1426\n'
    # Read once Bound, no waiting: the card makes only 35C now, one less.
    assert _offers(placement, hostname) == {Q35: (3, 1)}

    vgpu_nova.delete(cloud, placement, arq)
    assert waiting.until(lambda: kernel.current[vf] == 0, timeout=60)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='the type wiped')
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {
                           t: (m, 0) for t, m in MOST.items()},
                       timeout=60, what='every type offered again')


def test_nova_plugs_the_vf_our_bound_arq_names(cloud, placement, hostname,
                                               kernel):
    nova.python()       # before the bind: skipped without Nova's venv
    arq = _bind(cloud, placement, hostname, Q35)
    assert arq['state'] == 'Bound', arq
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    # Nova's own code hands the VF, whose type the bind wrote, over.
    [hostdev] = nova.run(vgpu_nova.NOVA_HOSTDEV, [arq])
    assert '<address domain="0x0000" bus="0x41" slot="0x%s" ' \
        'function="0x%s"/>' % (vf[8:10], vf[11]) in hostdev
    assert kernel.current[vf] == 1426


def test_a_vf_the_card_cannot_fill_any_more_fails_the_bind_cleanly(
        cloud, placement, hostname, kernel):
    # Someone else takes the card's one 141C behind our back, before
    # any scan: the database still offers it, the VF's list says no.
    kernel.write(kernel.vf_file(PF, 9, 'current_vgpu_type'), '1428')
    arq = _bind(cloud, placement, hostname, Q141)
    assert arq['state'] == 'BindFailed'
    assert 'type 1428 is not among those it can make now (none: the ' \
        'card is full)' in arq['error']
    made = {vf: t for vf, t in kernel.current.items() if t}
    assert made == {kernel.vfs[PF][9]: 1428}     # theirs, left alone
    # Nova gives up on the host (its ARQs and allocation deleted).
    # Nothing held: the type's clean finds nothing of ours to remove.
    vgpu_nova.delete(cloud, placement, arq)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='every type wiped (of nothing)')
    assert {vf: t for vf, t in kernel.current.items() if t} == made
    # The card is full. (Placement refused to shrink the type under the
    # allocation Nova had until its delete: the sink's retry writes it.)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {}, timeout=60,
                       what='nothing offered')


def test_the_removal_waits_for_the_guest_to_let_the_vf_go(
        cloud, placement, hostname, kernel):
    arq = _bind(cloud, placement, hostname, Q35)
    assert arq['state'] == 'Bound', arq
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    kernel.guest_opens(vf)          # QEMU has it
    vgpu_nova.delete(cloud, placement, arq)
    # The removal tries, the kernel says EBUSY: the VF waits, still made,
    # and Placement offers the type's other three only.
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {Q35: (3, 0)}, timeout=60,
                       what='the VF reserved')
    assert kernel.current[vf] == 1426
    assert _states(cloud, hostname)['vgpu_1426'] == 'allocated'
    kernel.guest_closes(vf)
    # The periodic task asks again.
    assert waiting.until(lambda: kernel.current[vf] == 0, timeout=60)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='the type idle')
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {
                           t: (m, 0) for t, m in MOST.items()},
                       timeout=60, what='every type offered again')


def test_a_guest_leaving_frees_its_vf_alone_while_another_keeps_its_own(
        cloud, placement, hostname, kernel):
    first = _bind(cloud, placement, hostname, Q35)
    second = _bind(cloud, placement, hostname, Q35)
    assert (first['state'], second['state']) == ('Bound', 'Bound')
    kept = vgpu_nova.vf_of(second['attach_handle_info'])
    assert _offers(placement, hostname) == {Q35: (2, 2)}

    vgpu_nova.delete(cloud, placement, first)
    # Its VF emptied at once; the type never waits for a wipe, so the
    # second guest's vGPU is untouched and the first VF offered again.
    assert waiting.until(lambda: kernel.current[
        vgpu_nova.vf_of(first['attach_handle_info'])] == 0, timeout=60)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {Q35: (3, 1)}, timeout=60,
                       what='the type offered less the one held')
    assert kernel.current[kept] == 1426
    assert _states(cloud, hostname)['vgpu_1426'] == 'allocated'
    third = _bind(cloud, placement, hostname, Q35)
    assert third['state'] == 'Bound', third

    for arq in (second, third):
        vgpu_nova.delete(cloud, placement, arq)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='the type idle')
    assert set(kernel.current.values()) == {0}


def test_an_agent_of_the_previous_release_is_asked_nothing(
        cloud, placement, hostname, kernel, conf):
    conf.set_override('agent', '2026.1.0', group='upgrade_levels')
    arq = _bind(cloud, placement, hostname, Q35)
    assert arq['state'] == 'BindFailed'
    assert 'its agent runs a release without RPC 1.4' in arq['error']
    assert set(kernel.current.values()) == {0}
    vgpu_nova.delete(cloud, placement, arq)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='the type given back')
    assert set(kernel.current.values()) == {0}


def test_a_vgpu_made_whose_bind_then_failed_is_removed_not_leaked(
        cloud, placement, hostname, kernel, monkeypatch):
    # The agent made the vGPU and its report never reached a conductor
    # (as when it is killed between its write and the database's
    # commit): the bind fails, and the VF's instance is removed as the
    # release of its handle asks; nothing is handed out twice meanwhile.
    from cyborg_lite.agent import manager as agent_manager
    report = agent_manager.AgentManager.report_once
    monkeypatch.setattr(agent_manager.AgentManager, 'report_once',
                        lambda self, full=False: None)
    arq = _bind(cloud, placement, hostname, Q35)
    assert arq['state'] == 'BindFailed'
    assert 'reached no conductor; given back' in arq['error'], arq
    monkeypatch.setattr(agent_manager.AgentManager, 'report_once', report)
    [vf] = [v for v in kernel.vfs[PF] if 'made vgpu_1426 on %s ' % v
            in arq['error']]                      # made, then ...
    assert waiting.until(lambda: kernel.current[vf] == 0, timeout=60)
    vgpu_nova.delete(cloud, placement, arq)
    waiting.read_until(lambda: _states(cloud, hostname),
                       lambda found: set(found.values()) == {'available'},
                       timeout=60, what='the type wiped')
