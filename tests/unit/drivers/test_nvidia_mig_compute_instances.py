"""The compute instance of a MIG placement made at Prepare is read back,
not assumed 0: from ``-cgi ... -C``'s second line, kept in the state
file, or listed by ``nvidia-smi mig -lci`` where the file does not have
it (written by the previous release, or a kill -9 before the note);
its capability node is the container's (drivers/nvidia_mig_made.py,
nvidia_device_nodes.py), through the nvidia driver and the simulated
nvidia-smi of tests/fixtures/drivers/mig_host.py."""
import json
import os
import subprocess

import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia_mig_made
from tests.fixtures.drivers import mig_host
from tests.unit.drivers import test_nvidia_mig_made as mig_made_tests

GPU = '0000:af:00.0'        # minor 1
KEY = '9:4'
NAME = 'mig-3g20gb-9-4'
CONTROL = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia1']

# The MIG user guide's example of ``nvidia-smi mig -cgi 9,3g.20gb -C``
# (two GPU instances, each with its default compute instance).
CREATED = (
    'Successfully created GPU instance ID  2 on GPU  0 using profile MIG '
    '3g.20gb (ID  9)\n'
    'Successfully created compute instance ID  0 on GPU  0 GPU instance '
    'ID  2 using profile MIG 3g.20gb (ID  2)\n'
    'Successfully created GPU instance ID  1 on GPU  0 using profile MIG '
    '3g.20gb (ID  9)\n'
    'Successfully created compute instance ID  1 on GPU  0 GPU instance '
    'ID  1 using profile MIG 3g.20gb (ID  2)\n')
# ``nvidia-smi mig -i 0 -lci`` of an A100 whose GI 3 holds two 1c
# compute instances (a public recording), and the same without the
# Placement column (older drivers).
LCI = """\
+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement  |
|       Instance                       ID        ID       Start:Size |
|         ID                                                         |
|====================================================================|
|   0      9       MIG 1g.5gb           0         0          0:1     |
+--------------------------------------------------------------------+
|   0      3       MIG 1c.2g.10gb       0         0          0:1     |
+--------------------------------------------------------------------+
|   0      3       MIG 1c.2g.10gb       0         1          1:1     |
+--------------------------------------------------------------------+
|   0      2       MIG 4g.20gb          3         0          0:4     |
+--------------------------------------------------------------------+
"""
LCI_OLD = """\
+-------------------------------------------------------+
| Compute instances:                                    |
| GPU     GPU       Name             Profile   Instance |
|       Instance                       ID        ID     |
|         ID                                            |
|=======================================================|
|   0      1       MIG 1c.3g.20gb       0         2     |
+-------------------------------------------------------+
"""


def test_the_created_lines_give_each_gpu_instance_s_compute_instance():
    assert nvidia_mig_made.created_gi(CREATED, 9) == 2
    assert nvidia_mig_made.created_ci(CREATED, 2) == 0
    assert nvidia_mig_made.created_ci(CREATED, 1) == 1
    assert nvidia_mig_made.created_ci(CREATED.splitlines()[0], 2) is None


def test_lci_rows_of_one_gpu_instance():
    assert nvidia_mig_made.parse_lci(LCI, 3) == [0, 1]
    assert nvidia_mig_made.parse_lci(LCI.encode(), 2) == [0]
    assert nvidia_mig_made.parse_lci(LCI, 5) == []
    assert nvidia_mig_made.parse_lci(LCI_OLD, 1) == [2]


def test_one_compute_instance_or_a_clear_error():
    assert nvidia_mig_made.only_compute_instance([3], GPU, 2) == 3
    with pytest.raises(exception.DriverError, match='GPU instance 2 of GPU '
                       '%s has no compute instance' % GPU):
        nvidia_mig_made.only_compute_instance([], GPU, 2)
    with pytest.raises(exception.DriverError, match='compute instances 0, '
                       '1: its compute instance is unknown'):
        nvidia_mig_made.only_compute_instance([0, 1], GPU, 2)


# The simulated A100 host, as the placement tests have it.
host = mig_made_tests.host


def _driver(conf):
    driver = mig_made_tests._driver(conf)
    driver.discover()
    return driver


def _info(driver):
    [record] = [r for r in driver.discover() if r.identity == GPU]
    [dep] = [d for d in record.deployables if d.name == NAME]
    return dep.attach_handles[0].attach_info


def _state(conf):
    with open(conf.nvidia_driver.mig_state_file) as f:
        return json.load(f)


def _write_state(conf, content):
    path = conf.nvidia_driver.mig_state_file
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(content, f)


def _nodes(host, gi, ci):
    names = CONTROL + ['nvidia-caps/nvidia-cap%d' % m for m in (
        mig_host.cap_minor(1, gi), mig_host.cap_minor(1, gi, ci))]
    return [('/dev/' + n, os.path.join(host.dev, n)) for n in names]


def test_a_compute_instance_other_than_0_is_the_container_s(conf, host):
    driver = _driver(conf)
    host.hand_out_compute_instance(1)
    gi = int(driver.make_instance(GPU, NAME, _info(driver))
             ['mig_gpu_instance'])
    assert host.compute_instances(GPU, gi) == [1]
    # Each value an int, as the previous release's ``read`` takes it.
    assert _state(conf) == {GPU: {KEY: gi, KEY + '/ci': 1}}
    assert driver.device_nodes(GPU, NAME) == _nodes(host, gi, 1)
    # Noted, not listed: no -lci; a restarted agent reads it the same.
    assert _driver(conf).device_nodes(GPU, NAME) == _nodes(host, gi, 1)
    assert _state(conf) == {GPU: {KEY: gi, KEY + '/ci': 1}}
    # Destroyed: both ids forgotten.
    assert driver.remove_instance(GPU, NAME, _info(driver))
    assert _state(conf) == {}


def test_a_file_of_the_previous_release_has_its_ci_listed(conf, host):
    """``{GPU: {"9:4": GI id}}``: the compute instance is the one ``-lci``
    lists in that GPU instance; the file is left as it is."""
    host.hand_out_compute_instance(1)
    gi = host.make_other(GPU, 9, 4)
    _write_state(conf, {GPU: {KEY: gi}})
    driver = _driver(conf)
    assert driver.device_nodes(GPU, NAME) == _nodes(host, gi, 1)
    assert _state(conf) == {GPU: {KEY: gi}}
    # Its release destroys it as before.
    assert driver.remove_instance(GPU, NAME, _info(driver))
    assert host.instances(GPU) == []


def test_killed_between_cgi_and_its_note_the_adopted_ci_is_listed(
        conf, host):
    nvidia_mig_made.Made(conf.nvidia_driver.mig_state_file).note(GPU, KEY)
    host.hand_out_compute_instance(1)
    gi = host.make_other(GPU, 9, 4)             # -cgi ran; then kill -9
    restarted = _driver(conf)
    assert _state(conf) == {GPU: {KEY: gi}}     # adopted by the scan
    assert restarted.device_nodes(GPU, NAME) == _nodes(host, gi, 1)


def _someone_destroys_its_compute_instance(host, gi):
    subprocess.run([host.tool, 'mig', '-dci', '-i', GPU, '-gi', str(gi)],
                   check=True, capture_output=True)


def test_a_gpu_instance_without_compute_instance_names_no_node(conf,
                                                               host):
    gi = host.make_other(GPU, 9, 4)
    _write_state(conf, {GPU: {KEY: gi}})
    _someone_destroys_its_compute_instance(host, gi)
    with pytest.raises(exception.DriverError, match='GPU instance %d of GPU'
                       ' %s has no compute instance' % (gi, GPU)):
        _driver(conf).device_nodes(GPU, NAME)


def test_a_noted_compute_instance_someone_destroyed_names_no_node(conf,
                                                                  host):
    driver = _driver(conf)
    gi = int(driver.make_instance(GPU, NAME, _info(driver))
             ['mig_gpu_instance'])
    _someone_destroys_its_compute_instance(host, gi)
    with pytest.raises(exception.DriverError, match='no MIG compute '
                       'instance 0 of GPU instance %d' % gi):
        driver.device_nodes(GPU, NAME)
