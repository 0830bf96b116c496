"""A MIG instance in a guest, as Nova drives it: an H100 in MIG mode whose
VFs make MIG-backed vGPUs (tests/fixtures/drivers/mig_vgpu_host.py), the
agent with the nvidia driver, the conductor, the API over HTTP (webtest)
and the real Placement. The bind makes the GPU instance where it fits
best, writes the type into the VF it hands over, and every type's count
in Placement follows the GPU's free slices before the bind returns."""
import uuid

import pytest

from tests import nova
from tests import waiting
from tests.fixtures.drivers import mig_vgpu_host
from tests.functional.placement import one_host
from tests.functional.placement import vgpu_nova

PF = mig_vgpu_host.PF
ADMIN = one_host.ADMIN
HEADERS = vgpu_nova.HEADERS
PREFIX = 'CUSTOM_NVIDIA_2330_'
G1, G3, G7 = (PREFIX + n for n in ('H100XM_1_10C', 'H100XM_3_40C',
                                   'H100XM_7_80C'))
# What an idle H100 80GB can make of each MIG-backed type.
IDLE = {PREFIX + 'H100XM_1_10C': 7, PREFIX + 'H100XM_1_10CME': 1,
        PREFIX + 'H100XM_1_20C': 4, PREFIX + 'H100XM_2_20C': 3,
        PREFIX + 'H100XM_3_40C': 2, PREFIX + 'H100XM_4_40C': 1,
        PREFIX + 'H100XM_7_80C': 1}


@pytest.fixture
def hostname():
    return 'mig-vgpu-%s' % uuid.uuid4().hex[:8]


@pytest.fixture
def kernel(tmp_path):
    return mig_vgpu_host.MigVgpuHost(tmp_path / 'h100')


@pytest.fixture
def cloud(sqlite_db, conf, placement, hostname, kernel):
    with vgpu_nova.serving(conf, placement, hostname, kernel, (G1, G3, G7),
                           'cond-mig-vgpu') as app:
        waiting.read_until(lambda: _offers(placement, hostname),
                           lambda found: found == _idle(), timeout=60,
                           what='every MIG-backed type offered')
        yield app


def _idle():
    return {t: (n, 0) for t, n in IDLE.items()}


def _offers(placement, hostname):
    return vgpu_nova.offers(placement, hostname, PREFIX)


def _bind(app, placement, hostname, trait):
    instance, rp = vgpu_nova.allocate(placement, hostname, trait)
    return one_host.bind_as_nova(app, HEADERS, trait.lower(), hostname, rp,
                                 instance)


def _gpu_instance(kernel, vf):
    """(profile id, start) of the GPU instance the VF's vGPU is on."""
    _type, gi = kernel.vf_state(vf)
    [found] = [(p, s) for g, p, s in kernel.instances() if g == gi]
    return found


def test_a_bind_makes_the_instance_where_it_fits_best_and_its_delete_both(
        cloud, placement, hostname, kernel):
    arq = _bind(cloud, placement, hostname, G3)
    assert arq['state'] == 'Bound', arq
    assert arq['attach_handle_type'] == 'PCI'
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    assert vf in kernel.vfs
    assert kernel.vf_state(vf)[0] == 1105
    # The 3g at 4 keeps the 4g's only placement (0-3) whole.
    assert _gpu_instance(kernel, vf) == (9, 4)
    # Read once Bound, no waiting: every type shrinks to slices 0-3.
    assert _offers(placement, hostname) == {
        G1: (4, 0), PREFIX + 'H100XM_1_10CME': (1, 0),
        PREFIX + 'H100XM_1_20C': (2, 0), PREFIX + 'H100XM_2_20C': (2, 0),
        G3: (1, 1), PREFIX + 'H100XM_4_40C': (1, 0)}

    vgpu_nova.delete(cloud, placement, arq)
    assert waiting.until(lambda: kernel.instances() == [], timeout=60)
    assert kernel.vf_state(vf) == (0, None)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == _idle(), timeout=60,
                       what='every type offered again')


def test_binds_fill_the_gpu_and_the_last_slice_is_refused_by_placement(
        cloud, placement, hostname, kernel):
    arqs = [_bind(cloud, placement, hostname, G1) for _ in range(7)]
    assert [a['state'] for a in arqs] == ['Bound'] * 7, arqs
    vfs = {vgpu_nova.vf_of(a['attach_handle_info']) for a in arqs}
    assert len(vfs) == 7
    # Each on its own GPU instance, one per slice, packed from the end.
    assert sorted(_gpu_instance(kernel, vf) for vf in vfs) == [
        (19, s) for s in range(7)]
    assert _offers(placement, hostname) == {G1: (0, 7)}
    for arq in arqs:
        vgpu_nova.delete(cloud, placement, arq)
    assert waiting.until(lambda: kernel.instances() == [], timeout=60)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == _idle(), timeout=60,
                       what='every type offered again')


def test_nova_plugs_the_vf_our_bound_arq_names(cloud, placement, hostname,
                                               kernel):
    nova.python()       # before the bind: skipped without Nova's venv
    arq = _bind(cloud, placement, hostname, G7)
    assert arq['state'] == 'Bound', arq
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    [hostdev] = nova.run(vgpu_nova.NOVA_HOSTDEV, [arq])
    assert '<address domain="0x0000" bus="0x61" slot="0x%s" ' \
        'function="0x%s"/>' % (vf[8:10], vf[11]) in hostdev
    assert _gpu_instance(kernel, vf) == (0, 0)


def test_an_instance_the_driver_would_not_use_is_undone_and_the_bind_fails(
        cloud, placement, hostname, kernel):
    # Someone made a 1g instance by hand and left it empty: the driver
    # puts our VF's vGPU on it (the lowest id), not on the one the bind
    # made. Taking theirs would hand their instance to our guest.
    theirs = kernel.make_other(19, 0)
    arq = _bind(cloud, placement, hostname, G1)
    assert arq['state'] == 'BindFailed', arq
    assert 'the driver put it on GPU instance %d, not on' % theirs in \
        arq['error']
    # Ours destroyed, theirs left; no VF holds a vGPU.
    assert [g for g, _p, _s in kernel.instances()] == [theirs]
    assert all(kernel.vf_state(vf) == (0, None) for vf in kernel.vfs)
    vgpu_nova.delete(cloud, placement, arq)


def test_the_removal_waits_for_the_guest_and_keeps_the_instance_till_then(
        cloud, placement, hostname, kernel):
    arq = _bind(cloud, placement, hostname, G7)
    vf = vgpu_nova.vf_of(arq['attach_handle_info'])
    kernel.guest_opens(vf)
    vgpu_nova.delete(cloud, placement, arq)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == {}, timeout=60,
                       what='nothing offered while the guest has it')
    assert kernel.vf_state(vf)[0] == 1107
    assert len(kernel.instances()) == 1
    kernel.guest_closes(vf)
    assert waiting.until(lambda: kernel.instances() == [], timeout=60)
    waiting.read_until(lambda: _offers(placement, hostname),
                       lambda found: found == _idle(), timeout=60,
                       what='every type offered again')
