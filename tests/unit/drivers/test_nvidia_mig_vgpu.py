"""MIG-backed vGPU types, as the nvidia driver offers them (pure parts):
the types' GPU instance profiles from ``nvidia-smi vgpu -s -v``, what
each type's count is, where a bind's instance goes, and the note of
what binds made across a kill -9."""
import os

import pytest

from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_vgpu
from cyborg_lite.drivers import nvidia_vgpu_vfio

HERE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures',
                    'drivers', 'nvidia')
GPU = '0000:61:00.0'
# Two blocks as a recording of ``nvidia-smi vgpu -s -v`` lays them out
# (tests/fixtures/drivers/vgpu_vfio_host.supported_types_text): a
# MIG-backed type, then a time-sliced one (N/A).
LISTING = '''GPU 00000000:61:00.0
    vGPU Type ID                          : 0x44d
        Name                              : NVIDIA H100XM-1-10C
        Class                             : Compute
        GPU Instance Profile ID           : 19
        Max Instances                     : 7
        Max Instances Per VM              : 1
        Max Instances Per GI              : 1
        FB Memory                         : 10240 MiB
    vGPU Type ID                          : 0x456
        Name                              : NVIDIA H100XM-80C
        Class                             : Compute
        GPU Instance Profile ID           : N/A
        Max Instances                     : 1
        Max Instances Per VM              : 1
        Max Instances Per GI              : N/A
        FB Memory                         : 81920 MiB
'''


def _profiles():
    with open(os.path.join(HERE, 'mig_lgip_h100_80gb.txt')) as lgip, \
            open(os.path.join(HERE, 'mig_lgipp_h100_80gb.txt')) as lgipp:
        return tuple(nvidia_mig.profiles(lgip.read(), lgipp.read()))


def _vf(i, current=0):
    address = '0000:61:%02x.%d' % ((4 + i) // 8, (4 + i) % 8)
    return nvidia_vgpu_vfio.VirtualFunction(address, current, {})


def test_only_mig_backed_types_have_a_profile():
    assert nvidia_mig_vgpu.parse_profiles(LISTING) == {0x44d: 19}
    # The names and maxima are the time-sliced parser's, as before.
    assert nvidia_vgpu_vfio.parse_supported(LISTING, 'smi') == {
        0x44d: ('NVIDIA H100XM-1-10C', 7), 0x456: ('NVIDIA H100XM-80C', 1)}


def _offer(instances=(), vfs=None, made_here=None, most=7):
    gpu = nvidia_mig_vgpu.Gpu(_profiles(), tuple(instances),
                              tuple(vfs or [_vf(i) for i in range(3)]))
    return nvidia_mig_vgpu.deployables(
        gpu, {1101: ('NVIDIA H100XM-1-10C', most),
              1105: ('NVIDIA H100XM-3-40C', 2)},
        {1101: 19, 1105: 9, 1199: 99}, '0x2330', ['CUSTOM_GPU_NVIDIA'],
        made_here or {})


def _counts(records):
    return {d.name: d.num_accelerators for d in records}


def test_each_type_counts_what_the_free_slices_make_of_its_profile():
    # Three free VFs cap the 1g type; the 3g type fits twice. A type
    # whose profile the GPU lacks (99) is not offered.
    assert _counts(_offer()) == {'vgpu_1101': 3, 'vgpu_1105': 2}
    taken = [nvidia_mig.Instance(1, 9, 4, 4)]
    assert _counts(_offer(taken, [_vf(i) for i in range(8)])) == {
        'vgpu_1101': 4, 'vgpu_1105': 1}
    # Max Instances caps it too, less those made.
    vfs = [_vf(0, 1101)] + [_vf(i) for i in range(1, 8)]
    assert _counts(_offer([nvidia_mig.Instance(1, 19, 6, 1)], vfs,
                          most=3))['vgpu_1101'] == 2


def test_a_vgpu_made_here_stays_offered_as_its_holders_and_others_are_not():
    vfs = [_vf(0, 1101), _vf(1, 1101), _vf(2)]
    [one, three] = _offer([nvidia_mig.Instance(1, 19, 6, 1),
                           nvidia_mig.Instance(2, 19, 5, 1)], vfs,
                          {vfs[0].address: 1101})
    # One free VF, and VF 0 (ours, its bind's allocation holds it).
    assert one.num_accelerators == 2
    assert [h.attach_info['function'] for h in one.attach_handles] == \
        ['4', '6']
    assert one.attach_handles[0].attach_info['vgpu_type'] == '1101'
    assert one.attributes['mig_backed_profile_id'] == '19'
    assert one.attributes['made'] == '2'
    assert 'CUSTOM_NVIDIA_2330_H100XM_1_10C' in one.traits
    assert three.local_memory_mb == int(39.5 * 1024)


def test_the_bind_takes_the_best_fit():
    profiles = _profiles()
    # Idle: a 1g goes last, keeping both 3g placements' first whole.
    assert nvidia_mig_vgpu.choose_start(profiles, (), 19)[1] == 6
    # 3g at 4 taken: the 1g goes to 3, the 3g at 0 kept.
    taken = (nvidia_mig.Instance(1, 9, 4, 4),)
    assert nvidia_mig_vgpu.choose_start(profiles, taken, 19)[1] == 3
    assert nvidia_mig_vgpu.choose_start(profiles, taken, 9)[1] == 0
    full = (nvidia_mig.Instance(1, 0, 0, 8),)
    with pytest.raises(nvidia_mig_vgpu.Refused, match='no room'):
        nvidia_mig_vgpu.choose_start(profiles, full, 19)
    with pytest.raises(nvidia_mig_vgpu.Refused, match='no MIG profile 99'):
        nvidia_mig_vgpu.choose_start(profiles, (), 99)


def test_a_note_before_its_instance_takes_the_one_found_there(tmp_path):
    noted = nvidia_mig_vgpu.Noted(str(tmp_path / 'made.json'))
    noted.note('vf-a', GPU, 1101, '19:6')            # killed in -cgi
    noted.note('vf-b', GPU, 1101, '19:5')            # killed before it
    noted.note('vf-c', GPU, 1105, '9:0', 7)          # made, then gone
    noted.note('vf-d', '0000:62:00.0', 1101, '19:6')  # another GPU's
    found = [nvidia_mig.Instance(3, 19, 6, 1), nvidia_mig.Instance(8, 9, 0, 4)]
    nvidia_mig_vgpu.adopt(noted, GPU, found)
    assert noted.read() == {
        'vf-a': {'gpu': GPU, 'type': 1101, 'placement': '19:6', 'gi': 3},
        'vf-d': {'gpu': '0000:62:00.0', 'type': 1101, 'placement': '19:6',
                 'gi': None}}
    assert noted.instances(GPU) == {3}
