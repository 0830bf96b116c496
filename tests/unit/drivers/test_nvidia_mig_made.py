"""MIG placements made at Prepare, through the nvidia driver and the
simulated nvidia-smi of tests/fixtures/drivers/mig_host.py (A100-40GB
tables as recorded): what is offered, the instance made at the asked
placement, only this host's destroyed, and the state file across a kill
between ``-cgi`` and its note."""
import json

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_mig_made
from tests.fixtures.drivers import mig_host

GPU = '0000:3b:00.0'
# Every (profile id, start) the A100-40GB recording allows.
ALL = sorted([(19, s) for s in range(7)] + [(14, 0), (14, 2), (14, 4),
                                             (9, 0), (9, 4), (5, 0), (0, 0)])


@pytest.fixture
def host(conf, tmp_path):
    found = mig_host.MigHost(tmp_path / 'gpus')
    found.configure(conf)
    return found


def _driver(conf):
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    return driver


def _placements(driver, address=GPU):
    [record] = [r for r in driver.discover() if r.identity == address]
    return {d.name: d for d in record.deployables}


def _offered(driver, address=GPU):
    return sorted(nvidia_mig_made.parse_placement(
        d.attach_handles[0].attach_info)
        for d in _placements(driver, address).values()
        if nvidia_mig_made.PROFILE_ID in d.attributes)


def _info(driver, profile_id, start):
    """(name, handle attach_info) of the placement's deployable."""
    [dep] = [d for d in _placements(driver).values()
             if d.attributes.get(nvidia_mig_made.PROFILE_ID) == profile_id
             and d.attributes.get(nvidia_mig_made.START) == start]
    return dep.name, dep.attach_handles[0].attach_info


@pytest.fixture
def driver(conf, host):
    return _driver(conf)


def test_every_profile_at_every_placement_is_offered_off_is_as_before(
        conf, host, driver):
    assert _offered(driver) == ALL
    name, info = _info(driver, 9, 4)
    dep = _placements(driver)[name]
    assert name == 'mig-3g20gb-9-4'
    assert info == {'domain': '0000', 'bus': '3b', 'device': '00',
                    'function': '0', 'mig_placement': '9:4'}
    assert (dep.resource_class, dep.local_memory_mb) == ('VGPU', 20090)
    assert dep.attributes == {
        'bind': 'unsupported', 'prepare': 'make', 'mig_profile_id': 9,
        'mig_profile': '3g.20gb', 'mig_start': 4, 'mig_size': 4,
        'multiprocessor_count': 42, 'gpu_memory_slices': 8,
        'gpu_multiprocessors': 98, 'gpu_mig_memory_mb': 40448}
    # The record passes the conductor's checks (the handle's key).
    device_records.DeviceRecord.from_dict(
        [r for r in driver.discover() if r.identity == GPU][0].to_dict())
    conf.set_override('mig_on_demand', False, group='nvidia_driver')
    assert _placements(_driver(conf)) == {}


def test_what_someone_else_made_takes_its_slices_and_is_offered_as_before(
        host, driver):
    theirs = host.make_other(GPU, 9, 0)            # slices 0-3
    assert _offered(driver) == [(9, 4), (14, 4), (19, 4), (19, 5),
                                (19, 6)]
    [kind] = [d for d in _placements(driver).values()
              if d.name.startswith('mig_')]
    assert kind.attributes['gpu_instance_ids'] == str(theirs)


def test_prepare_makes_the_instance_at_the_asked_placement(host, driver):
    name, info = _info(driver, 19, 5)
    made = driver.make_instance(GPU, name, info)
    [(gi, profile, start)] = host.instances(GPU)
    assert (profile, start) == (19, 5)
    assert made['mig_gpu_instance'] == str(gi)
    assert host.log() == ['create %s 19:5 gi=%d' % (GPU, gi)]
    # Ours: every placement is offered still (Kubernetes counts the
    # claim's slices), none as an instance someone made.
    assert _offered(driver) == ALL
    assert not [n for n in _placements(driver) if n.startswith('mig_')]
    # A retried Prepare makes nothing more.
    assert driver.make_instance(GPU, name, info) == made
    assert len(host.log()) == 1


def test_a_placement_another_took_is_refused_and_noted_nowhere(
        conf, host, driver):
    name, info = _info(driver, 14, 4)
    host.make_other(GPU, 19, 5)
    with pytest.raises(exception.DriverError, match='slices are taken'):
        driver.make_instance(GPU, name, info)
    assert [p for _g, p, _s in host.instances(GPU)] == [19]
    assert nvidia_mig_made.Made(
        conf.nvidia_driver.mig_state_file).read() == {}


def test_release_destroys_only_the_instance_this_host_made(host, driver):
    theirs = host.make_other(GPU, 19, 0)
    name, info = _info(driver, 19, 6)
    mine = int(driver.make_instance(GPU, name, info)['mig_gpu_instance'])
    assert driver.remove_instance(GPU, name, info) is True
    assert host.instances(GPU) == [(theirs, 19, 0)]
    assert host.log()[-2:] == ['-dci %s gi=%d' % (GPU, mine),
                               '-dgi %s gi=%d' % (GPU, mine)]
    # Theirs at a placement we were asked to clean: left alone.
    driver.clean(GPU, 'mig-1g5gb-19-0')
    assert driver.remove_instance(GPU, name, info) is False
    assert host.instances(GPU) == [(theirs, 19, 0)]


def test_the_clean_of_a_placement_destroys_what_this_host_made(host,
                                                               driver):
    name, info = _info(driver, 14, 2)
    driver.make_instance(GPU, name, info)
    driver.clean(GPU, name)
    assert host.instances(GPU) == []


def test_killed_between_cgi_and_its_note_the_next_start_adopts_it(
        conf, host, driver):
    """The agent noted the placement, ran -cgi, and died before noting
    the GPU instance id: the next start finds the instance there, keeps
    it as its own (not offered as someone else's), and its release
    destroys it."""
    name, info = _info(driver, 9, 4)
    state = conf.nvidia_driver.mig_state_file
    nvidia_mig_made.Made(state).note(GPU, '9:4')      # before -cgi
    gi = host.make_other(GPU, 9, 4)                   # -cgi ran
    restarted = _driver(conf)
    assert _offered(restarted) == ALL
    assert not [n for n in _placements(restarted) if n.startswith('mig_')]
    with open(state) as f:
        assert json.load(f) == {GPU: {'9:4': gi}}
    restarted.clean(GPU, name)
    assert host.instances(GPU) == []


def test_noted_before_cgi_with_nothing_made_is_forgotten(conf, host,
                                                         driver):
    state = conf.nvidia_driver.mig_state_file
    nvidia_mig_made.Made(state).note(GPU, '9:4')
    assert _offered(_driver(conf)) == ALL
    assert nvidia_mig_made.Made(state).read() == {}
    # Someone makes one there later: theirs, never adopted.
    host.make_other(GPU, 9, 4)
    assert (9, 4) not in _offered(_driver(conf))
