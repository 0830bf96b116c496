"""Health in the ResourceSlices (KEP-5055 device taints): unhealthy and
recovering devices NoSchedule (unhealthy NoExecute when asked), degraded
ones offered with an informational taint of effect None."""
import types

import pytest

from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import slices
from cyborg_lite.kubernetes import view as k8s_view
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER


def _taints(host, **kwargs):
    (obj,) = slices.build_slices(host, DRIVER, **kwargs)
    assert schemas.schema_errors(obj) == []
    assert schemas.slice_rule_errors(obj) == []
    return {d['name']: d.get('taints') for d in obj['spec']['devices']}


REGION = 'fpga-0000-5e-00-0-region0'
SIBLING = 'fpga-0000-5e-00-0-region1'


@pytest.mark.parametrize('effect', ['NoSchedule', 'NoExecute'])
def test_unhealthy_names_its_signal(effect):
    host = inv.change_all_regions(
        inv.host(), 0, unavailable=('unhealthy',),
        health_signal='catfatal_errors', unhealthy_effect=effect)
    taints = _taints(host)
    assert taints[REGION] == taints[SIBLING] == [
        {'key': DRIVER + '/unhealthy', 'value': 'catfatal_errors',
         'effect': effect}]


def test_recovering_is_no_schedule_whatever_unhealthy_is():
    host = inv.change_region(inv.host(), 0, 0, unavailable=('recovering',),
                             health_signal='temperature',
                             unhealthy_effect='NoExecute')
    assert _taints(host)[REGION] == [
        {'key': DRIVER + '/recovering', 'value': 'temperature',
         'effect': 'NoSchedule'}]


def test_degraded_is_offered_with_an_informational_taint():
    host = inv.change_region(inv.host(), 0, 0, advisories=('degraded',),
                             health_signal='link_width')
    taints = _taints(host)
    assert taints[REGION] == [{'key': DRIVER + '/degraded',
                               'value': 'link_width', 'effect': 'None'}]
    assert taints[SIBLING] is None


def test_a_signal_that_is_no_label_value_is_left_out():
    host = inv.change_region(inv.host(), 0, 0, unavailable=('unhealthy',),
                             health_signal='not:a-label')
    assert _taints(host)[REGION] == [{'key': DRIVER + '/unhealthy',
                                      'effect': 'NoSchedule'}]


def test_without_taints_degraded_is_offered_and_unhealthy_left_out():
    host = inv.change_region(inv.host(), 0, 0, advisories=('degraded',))
    host = inv.change_region(host, 0, 1, unavailable=('unhealthy',))
    taints = _taints(host, publish_taints=False)
    assert taints[REGION] is None and SIBLING not in taints


def _conf(**kubernetes):
    options = dict(node_names={}, unhealthy_taint_effect='NoSchedule',
                   informational_taints=True)
    options.update(kubernetes)
    return types.SimpleNamespace(kubernetes=types.SimpleNamespace(**options))


def _view(device_health, reason, **kubernetes):
    device = host_inventory.DeviceView(
        uuid='d', type='FPGA', vendor='0x8086', identity='0000:5e:00.0',
        health=device_health, health_reason=reason,
        deployables=(host_inventory.DeployableView(
            uuid='r', name='node-1_0000:5e:00.0_region0',
            resource_class='FPGA'),))
    conf = _conf(**kubernetes)
    host = host_inventory.HostInventory('node-1', (device,))
    return k8s_view.k8s_inventory(host, 'node-1', conf.kubernetes)


def test_the_view_takes_health_from_the_one_predicate():
    [dep] = _view('unhealthy', 'catfatal_errors 0x4',
                  unhealthy_taint_effect='NoExecute').devices[0].deployables
    assert (dep.unavailable, dep.health_signal, dep.unhealthy_effect) == (
        ('unhealthy',), 'catfatal_errors', 'NoExecute')
    [dep] = _view('degraded', 'link_width x4 < max x8').devices[0] \
        .deployables
    assert (dep.unavailable, dep.advisories) == ((), ('degraded',))
    [dep] = _view('degraded', 'link_width x4 < max x8',
                  informational_taints=False).devices[0].deployables
    assert dep.advisories == ()


@pytest.mark.parametrize('reason, value', [
    ('dfl_tree: port 1 lists no region', 'dfl_tree'),
    ('pci 0000:af:00.0 is gone from the PCI bus', 'pci'),
    ('temperature. 97 °C', 'temperature'),
    ('x' * 64 + ' is too long for a label', None),
    ('°C first', None),
    ('', None),
])
def test_the_taint_value_is_always_a_label_value(reason, value):
    host = _view('unhealthy', reason)
    [dep] = host.devices[0].deployables
    assert dep.health_signal == value
    [taint] = _taints(host)[REGION]
    assert taint.get('value') == value
