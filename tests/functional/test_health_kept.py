"""What the agent's health monitor keeps (issue 46, findings 2 and 3), on
the real conductor and Placement, the agent's real scans over the
simulated host (tests/functional/host_env.py).

Finding 2: a region whose VF is with a guest is out of the host's view
for as long as the guest runs; back, it is in the state it left (a fault
is still a fault until the clear window passes: unhealthy, recovering,
healthy), not healthy at its first reading.

Finding 3: a fault whose sensor became unreadable stays a fault across an
agent restart ("a signal that cannot be read keeps its last finding",
docs/architecture.md), whether the file fails with EIO or is gone."""
import os

import pytest

from cyborg_lite.inventory import views as host_inventory
from tests.functional.host_env import make_host_env  # noqa: F401

SCANS = 12


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def _region0(env):
    """(its health, why it is unavailable) as the database has them."""
    device = env.device()
    region = env.deployable('region0')
    return region.health, host_inventory.unavailable_reasons(device, region)


def test_a_region_back_from_a_guest_is_in_the_state_it_left(
        make_host_env):
    env = make_host_env('fpga')
    arq = env.bind('region0')
    address = env.attach(arq)            # the instance runs
    env.scan(SCANS)
    errors = os.path.join(env.host.port_dir(0, 0), 'errors', 'errors')

    env.host.unbind_vfio(address)        # stopped: the VF with its host
    _write(errors, '0x1\n')              # its port reports an error
    env.scan(2)
    assert _region0(env)[0] == 'unhealthy'
    env.host.bind_vfio(address)          # started again: with the guest
    env.scan(SCANS)
    assert _region0(env)[0] == 'unhealthy'
    env.host.unbind_vfio(address)        # stopped: back, the error gone
    _write(errors, '0x0\n')

    seen = []
    for _ in range(4):
        env.scan()
        seen.append(_region0(env))
    assert seen == [('unhealthy', ('unhealthy',)),
                    ('recovering', ('recovering',)),
                    ('recovering', ('recovering',)),
                    ('healthy', ())]
    # The card itself never moved, and it held the region all along.
    assert env.health_moves() == []
    assert env.deployable('region0').device_state == 'allocated'


@pytest.mark.parametrize('vanish', [False, True], ids=['eio', 'vanished'])
def test_an_unreadable_sensor_stays_a_fault_across_an_agent_restart(
        make_host_env, vanish):
    env = make_host_env('fpga')
    register = os.path.join(env.host.fme_dir(0), 'errors',
                            'catfatal_errors')
    _write(register, '0x4\n')
    env.scan(2)
    assert env.device().health == 'unhealthy'
    assert env.candidates() == set()

    env.host.sensor_unreadable(register, vanish=vanish)
    env.scan()
    env.restart_agent()
    for _ in range(SCANS):
        env.scan()
        device = env.device()
        assert (device.health, device.health_reason) == (
            'unhealthy', 'catfatal_errors 0x4')
        assert env.candidates() == set()
    assert env.health_moves() == ['unhealthy']

    # Readable again, and clear: recovering, then healthy and offered.
    env.host.sensor_readable(register, text='0x0\n')
    env.scan(4)
    assert env.health_moves() == ['unhealthy', 'recovering', 'healthy']
    assert len(env.candidates()) == 2


def test_a_restart_with_the_sensor_readable_and_clear(make_host_env):
    """The other way round: a sensor read clear before the restart is no
    fault kept after it."""
    env = make_host_env('fpga')
    register = os.path.join(env.host.fme_dir(0), 'errors',
                            'catfatal_errors')
    _write(register, '0x4\n')
    env.scan(2)
    _write(register, '0x0\n')
    env.scan(2)
    assert env.device().health == 'recovering'
    env.restart_agent()
    env.host.sensor_unreadable(register)
    env.scan(2)
    assert env.health_moves() == ['unhealthy', 'recovering', 'healthy']
