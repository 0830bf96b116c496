"""Device taints on a cluster that drops them (the DRADeviceTaints feature
gate off, the default before Kubernetes 1.36): found out by a dry run
before the first taint is written, or by a real write's answer, and then
the devices that would be tainted NoSchedule are left out of the slices,
said once. Against the apiserver stand-in playing the gate both ways."""
import logging

import pytest

from cyborg_lite.kubernetes import gated_fields
from cyborg_lite.kubernetes import slice_sync
from cyborg_lite.kubernetes import slices as k8s_slices
from tests.unit.kubernetes import inventories as inv

DRIVER = inv.DRIVER
HELD = 'fpga-0000-5e-00-0-region0'        # bound to a Nova ARQ
CLEANING = 'fpga-0000-5f-00-0-region1'


def _unavailable_host():
    host = inv.change_region(inv.host(), 0, 0, bound_to_nova=True)
    return inv.change_region(host, 1, 1, unavailable=('cleaning',))


def _stored(apiserver):
    (obj,) = apiserver.slices.values()
    return {d['name']: d for d in obj['spec']['devices']}


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING]


def test_a_cluster_that_keeps_taints_is_asked_once(apiserver, sync):
    sync.sync(_unavailable_host())
    devices = _stored(apiserver)
    assert devices[HELD]['taints'][0]['key'] == DRIVER + '/in-use'
    assert devices[CLEANING]['taints'][0]['key'] == DRIVER + '/cleaning'
    assert len(apiserver.dry_runs) == 1
    sync.sync(inv.change_region(_unavailable_host(), 1, 0,
                                unavailable=('maintaining',)))
    assert len(apiserver.dry_runs) == 1
    assert sync.taints.kept is True


def test_without_device_taints_the_tainted_devices_are_left_out(
        apiserver, sync, caplog):
    apiserver.device_taints = False
    result = sync.sync(_unavailable_host())
    devices = _stored(apiserver)
    # Never offered as free: the dry run told before the first write.
    assert (result.created, result.updated) == (1, 0)
    assert sorted(devices) == ['fpga-0000-5e-00-0-region1',
                               'fpga-0000-5f-00-0-region0']
    assert not any('taints' in d for d in devices.values())
    assert apiserver.refused == []
    # More syncs, more changes: no more dry runs, no more lines.
    sync.sync(inv.change_region(_unavailable_host(), 1, 0,
                                unavailable=('maintaining',)))
    assert sorted(_stored(apiserver)) == ['fpga-0000-5e-00-0-region1']
    sync.sync(inv.host())
    assert len(_stored(apiserver)) == 4
    assert len(apiserver.dry_runs) == 1
    (line,) = _warnings(caplog)
    assert 'DRADeviceTaints' in line and 'left out' in line


def test_a_taint_dropped_by_a_real_write_is_caught(apiserver, sync, caplog):
    sync.sync(_unavailable_host())            # the gate on: kept
    sync.sync(inv.host())                     # no taints stored now
    apiserver.device_taints = False           # the gate turned off
    sync.sync(_unavailable_host())
    devices = _stored(apiserver)
    assert HELD not in devices and CLEANING not in devices
    assert not any('taints' in d for d in devices.values())
    assert len(apiserver.dry_runs) == 1
    assert len(_warnings(caplog)) == 1


def test_a_cluster_without_taints_is_asked_again_later(apiserver, sync,
                                                       clock):
    apiserver.device_taints = False
    sync.sync(_unavailable_host())
    assert HELD not in _stored(apiserver)
    apiserver.device_taints = True            # upgraded to 1.36
    sync.sync(_unavailable_host())
    assert HELD not in _stored(apiserver)
    clock.now += gated_fields.REASK_INTERVAL
    sync.sync(_unavailable_host())
    assert _stored(apiserver)[HELD]['taints'][0]['effect'] == 'NoSchedule'
    assert len(apiserver.dry_runs) == 2


def test_publish_taints_false_never_asks_and_leaves_them_out(apiserver):
    client = apiserver.api_client()
    try:
        sync = slice_sync.SliceSync(client, DRIVER, publish_taints=False)
        sync.sync(_unavailable_host())
    finally:
        client.close()
    assert sorted(_stored(apiserver)) == ['fpga-0000-5e-00-0-region1',
                                          'fpga-0000-5f-00-0-region0']
    assert apiserver.dry_runs == []


@pytest.mark.parametrize('effect,kept', [('NoSchedule', False),
                                         ('NoExecute', False),
                                         ('None', True)])
def test_untainted_drops_what_only_informs(effect, kept):
    device = {'name': 'd', 'attributes': {}, 'capacity': {},
              'taints': [{'key': DRIVER + '/degraded', 'effect': effect}]}
    result = k8s_slices.untainted(device)
    assert (result == {'name': 'd', 'attributes': {}, 'capacity': {}}) \
        if kept else result is None
