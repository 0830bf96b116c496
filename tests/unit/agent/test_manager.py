"""The agent's scan/report cycle against a real conductor (no RPC)."""
import oslo_messaging as messaging
import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import exception
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.db import models
from tests.unit.agent.scripted_driver import ScriptedDriver
from tests.unit.conductor import report_helpers as h

CARD0 = '0000:5e:00.0'
CARD1 = '0000:af:00.0'


class Conductor:
    """The real ConductorManager, recording what reached it; ``down``
    stands for a network or conductor outage."""

    def __init__(self):
        self.manager = conductor_manager.ConductorManager('cond')
        self.calls = []
        self.down = False

    def report(self, ctxt, hostname, driver_reports, numa_nodes=None):
        if self.down:
            raise messaging.MessagingTimeout('no conductor answered')
        self.calls.append([e['driver'] for e in driver_reports])
        try:
            return self.manager.report(ctxt, hostname, driver_reports,
                                       numa_nodes)
        except messaging.ExpectedException as exc:
            # What the RPC dispatcher does with @expected_exceptions.
            raise exc.exc_info[1]


@pytest.fixture
def agent(sqlite_db, conf):
    conf.set_override('full_report_every', 5, group='agent')
    drivers = [ScriptedDriver(conf, 'fpga', [h.fpga(CARD0)]),
               ScriptedDriver(conf, 'pci', [h.fpga(CARD1)])]
    return agent_manager.AgentManager(conf, host='node1', drivers=drivers,
                                      conductor_api=Conductor())


def _drivers(agent):
    return {d.name: d for d in agent.drivers}


def test_first_report_is_full_then_only_changes(agent):
    ack = agent.report_once()
    assert ack['drivers'] == {'fpga': 'applied', 'pci': 'applied'}
    assert len(h.devices('node1')) == 2

    assert agent.report_once() is None
    _drivers(agent)['pci'].devices = [h.fpga(CARD1, model='other')]
    agent.report_once()

    assert agent.conductor.calls == [['fpga', 'pci'], ['pci']]
    assert h.rows(models.Device, identity=CARD1)[0].model == 'other'


def test_reordered_scan_is_not_sent(agent):
    agent.report_once()
    card = h.fpga(CARD0, regions=3)
    _drivers(agent)['fpga'].devices = [card]
    agent.report_once()
    card['deployables'].reverse()
    card['deployables'][0]['traits'].reverse()

    assert agent.report_once() is None
    assert len(agent.conductor.calls) == 2


def test_failing_driver_is_skipped_and_its_devices_kept(agent):
    agent.report_once()
    _drivers(agent)['fpga'].error = 'sysfs went away'
    _drivers(agent)['pci'].devices = []

    ack = agent.report_once()

    assert ack['drivers'] == {'fpga': 'scan failed', 'pci': 'applied'}
    assert [d.identity for d in h.devices('node1')] == [CARD0]
    # The same failure again is no news.
    assert agent.report_once() is None


def test_full_report_every_k_scans(agent):
    for _ in range(5):
        agent.report_once()
    assert agent.conductor.calls == [['fpga', 'pci'], ['fpga', 'pci']]


def test_unacknowledged_report_is_sent_again(agent):
    agent.conductor.down = True
    assert agent.report_once() is None
    agent.conductor.down = False

    ack = agent.report_once()

    assert ack['changed'] is True
    assert agent.conductor.calls == [['fpga', 'pci']]


def test_rejected_report_is_not_acknowledged(agent, caplog):
    agent.report_once()
    _drivers(agent)['pci'].devices = [h.fpga(CARD0)]  # fpga owns CARD0

    assert agent.report_once() is None
    assert agent.report_once() is None

    assert agent.conductor.calls[1:] == [['pci'], ['pci']]
    assert 'rejected our report' in caplog.text
    assert [d.driver_name for d in h.devices('node1')] == ['fpga', 'pci']


def test_conductor_request_makes_the_next_report_full(agent):
    agent.report_once()
    agent.request_report(ctxt=None)
    agent.report_once()
    assert agent.conductor.calls == [['fpga', 'pci'], ['fpga', 'pci']]


def test_driver_entry_hash_ignores_order():
    a = agent_manager.driver_entry('x', [h.fpga(CARD0), h.fpga(CARD1)])
    b = agent_manager.driver_entry('x', [h.fpga(CARD1), h.fpga(CARD0)])
    c = agent_manager.driver_entry('x', error='DriverError: boom')
    assert agent_manager.entry_hash(a) == agent_manager.entry_hash(b)
    assert agent_manager.entry_hash(a) != agent_manager.entry_hash(c)
    with pytest.raises(exception.Invalid):
        # what the agent sends is what the conductor validates
        from cyborg_lite.common import device_records
        device_records.DeviceRecord.from_dict(
            dict(a['devices'][0], type='TPU'))
