"""Binding conditions (KEP-5007) in the ResourceSlices: the regions that
may need programming carry ``<driver>/programmed`` and
``<driver>/programming-failed`` where the cluster keeps them (the
DRADeviceBindingConditions gate), found out by a dry run; where it drops
them, the slices go without, said once. Against the apiserver stand-in
playing the gate both ways, through the real client."""
import logging

import pytest

from cyborg_lite.kubernetes import slice_sync
from tests.unit.kubernetes import inventories as inv

DRIVER = inv.DRIVER
PROGRAMMED = DRIVER + '/programmed'
FAILED = DRIVER + '/programming-failed'


@pytest.fixture
def binding_sync(apiserver, clock):
    client = apiserver.api_client()
    yield slice_sync.SliceSync(client, DRIVER, clock=clock,
                               binding_conditions=True)
    client.close()


def _stored(apiserver):
    return {d['name']: d for obj in apiserver.slices.values()
            for d in obj['spec'].get('devices') or []}


def test_regions_bind_only_once_programmed(apiserver, binding_sync):
    binding_sync.sync(inv.host(with_gpu=True))
    devices = _stored(apiserver)
    regions = [d for name, d in devices.items() if name.startswith('fpga-')]
    assert len(regions) == 4
    for device in regions:
        assert device['bindingConditions'] == [PROGRAMMED]
        assert device['bindingFailureConditions'] == [FAILED]
    # A GPU is never programmed: it binds at once.
    (gpu,) = [d for name, d in devices.items() if not name.startswith('fpga')]
    assert 'bindingConditions' not in gpu
    assert len(apiserver.dry_runs) == 1 and apiserver.refused == []
    assert binding_sync.binding.kept is True


def test_a_region_of_a_fixed_function_card_has_none(apiserver, binding_sync):
    binding_sync.sync(inv.change_device(inv.host(cards=1), 0,
                                        programmable=False))
    assert not any('bindingConditions' in d
                   for d in _stored(apiserver).values())
    assert apiserver.dry_runs == []


def test_without_the_gate_regions_go_without_said_once(
        apiserver, binding_sync, caplog):
    apiserver.binding_conditions = False
    binding_sync.sync(inv.host())
    devices = _stored(apiserver)
    assert len(devices) == 4
    assert not any('bindingConditions' in d or 'bindingFailureConditions'
                   in d for d in devices.values())
    assert binding_sync.binding.kept is False
    binding_sync.sync(inv.change_region(inv.host(), 0, 0,
                                        function_id='f00d'))
    assert len(apiserver.dry_runs) == 1
    lines = [r.getMessage() for r in caplog.records
             if r.levelno >= logging.WARNING]
    assert len(lines) == 1
    assert 'DRADeviceBindingConditions' in lines[0]
    assert 'Prepare' in lines[0]


def test_off_by_option_never_asks(apiserver, sync):
    sync.sync(inv.host())
    assert apiserver.dry_runs == []
    assert not any('bindingConditions' in d
                   for d in _stored(apiserver).values())
