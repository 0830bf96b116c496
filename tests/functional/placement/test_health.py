"""Device health against the real Placement: a fault written into the fake
driver's tree, read by the agent's health monitor on its scans, reported
to the real conductor endpoint and published by the real Placement sink.

The agent side is the agent's own (agent/health.py over the fake driver);
each ``scan()`` is one agent scan and its report."""
import os
import uuid

import pytest

from cyborg_lite.agent import health as health_mod
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import publish_requests
from tests.functional.placement import fake_host
from tests.unit.conductor import bind_helpers as h
from tests.unit.conductor import report_helpers as rh

FREE = {'FPGA': 0, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': 0}
RESERVED = {'FPGA': 1,
            'CUSTOM_FPGA_LOCAL_MEMORY_MB': fake_host.MEMORY_MB}
CATFATAL = 'catfatal_errors 0x4'


class HealthHost(fake_host.Host):
    """fake_host.Host whose report goes through the agent's monitor."""

    def __init__(self, conf, placement, hostname, **kwargs):
        super().__init__(conf, placement, hostname, **kwargs)
        self.monitor = health_mod.HealthMonitor(conf, hostname)
        self.driver.name = 'fake'

    def entry(self):
        return agent_manager.driver_entry('fake', [
            r.to_dict() for r in self.monitor.apply(
                self.driver, self.driver.discover())])

    def write(self, text, name='catfatal_errors'):
        """Write a register of the card's FME, as docs/drivers.md says."""
        path = os.path.join(self.driver.tree.sys, 'class/fpga_region',
                            'region0/dfl-fme.0/errors', name)
        with open(path, 'w') as f:
            f.write(text)

    def device(self):
        [device] = devices_db.host_rows(self.hostname).devices
        return device


@pytest.fixture
def make_host(placement, configured, conf, sqlite_db, hostname, tmp_path):
    def make(server=None):
        configured(server or placement)
        conf.set_override('transport_url', 'inproc://')
        conf.set_override('readings_to_fault', 2, group='health')
        conf.set_override('readings_to_clear', 2, group='health')
        fake_host.configure_card(conf, tmp_path / 'fake_fpga', sriov=True)
        host = HealthHost(conf, server or placement, hostname)
        assert host.report()['changed']
        return host
    return make


def _instance():
    return str(uuid.uuid4())


def test_a_fault_reserves_the_card_and_its_clearing_offers_it_again(
        make_host):
    host = make_host()
    assert len(host.candidates()) == 2
    host.write('0x4\n')

    host.report()                     # the first reading: not yet
    assert host.device().health == 'healthy'
    assert len(host.candidates()) == 2
    host.report()                     # the second: unhealthy
    device = host.device()
    assert (device.health, device.health_reason) == ('unhealthy', CATFATAL)
    # In Placement before the report returned: nothing to offer.
    assert host.reserved() == {'region0': RESERVED, 'region1': RESERVED}
    assert host.candidates() == []
    # A bind on a stale offer is refused, naming why.
    instance = _instance()
    failed = host.bind(instance, {1: 'region0'})[1]
    assert failed.state == 'BindFailed'
    assert 'unhealthy' in failed.error and CATFATAL in failed.error

    host.write('0x0\n')
    host.report()
    host.report()                     # clear for the window: recovering
    assert host.device().health == 'recovering'
    assert host.candidates() == []
    host.report()
    host.report()                     # and again: healthy, offered
    assert (host.device().health, host.device().health_reason) == (
        'healthy', None)
    assert host.reserved() == {'region0': FREE, 'region1': FREE}
    offered = host.candidates()
    assert len(offered) == 2
    host.allocate(instance, offered[0])
    assert host.bind(instance, offered[0])[1].state == 'Bound'


def test_a_bound_region_stays_bound_through_a_fault(make_host):
    host = make_host()
    instance = _instance()
    first = host.candidates()[0]
    host.allocate(instance, first)
    arq = host.bind(instance, first)[1]
    host.write('0x4\n')
    host.report()
    host.report()
    assert h.get_arq(arq.uuid).state == 'Bound'
    # Its allocation stays; nothing new is offered on the card.
    assert host.placement.get('/allocations/%s' % instance)['allocations']
    assert host.candidates() == []


def test_an_unchanged_report_writes_nothing(make_host):
    host = make_host()
    host.write('0x4\n')
    host.report()
    host.report()
    with rh.count_writes() as writes:
        for _ in range(3):
            assert not host.report()['changed']
    assert writes == []


def test_a_fault_reported_while_placement_is_down(make_host, own_placement,
                                                  conf):
    host = make_host(own_placement)
    host.write('0x4\n')
    own_placement.stop()
    try:
        host.report()
        host.report()
        # Stored, and waiting to be published.
        assert host.device().health == 'unhealthy'
        assert host.hostname in publish_requests.pending()
    finally:
        own_placement.start()
    # What any conductor's periodic task runs once Placement is back.
    host.publisher.publish_requested()
    assert host.reserved() == {'region0': RESERVED, 'region1': RESERVED}
    assert host.candidates() == []


def test_a_restarted_agent_and_conductor_keep_the_state(make_host, conf,
                                                        placement):
    host = make_host()
    host.write('0x4\n')
    host.report()
    host.report()
    # A new agent (its monitor reads the state file) and a new conductor
    # (nothing in memory): the same state, nothing written.
    again = HealthHost(conf, placement, host.hostname)
    with rh.count_writes() as writes:
        assert not again.report()['changed']
    assert writes == []
    assert again.device().health == 'unhealthy'
    assert again.candidates() == []
