"""The report stores where devices and regions sit and the host's NUMA
nodes; an unchanged report writes nothing, a bad one nothing at all; the
agent sends the nodes only when they changed."""
import oslo_messaging as messaging
import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import fake

# Not the fake host's own (its SLIT says 21 across sockets).
NODES = [{'node': 0, 'cpulist': '0-3', 'socket': 0, 'distances': [10, 32]},
         {'node': 1, 'cpulist': '4-7', 'socket': 1, 'distances': [32, 10]}]


class Conductor:
    def __init__(self):
        self.manager = conductor_manager.ConductorManager('cond')
        self.sent = []

    def report(self, ctxt, hostname, driver_reports, numa_nodes=None):
        self.sent.append(numa_nodes)
        return self.manager.report(ctxt, hostname, driver_reports,
                                   numa_nodes)


@pytest.fixture
def agent(sqlite_db, conf, tmp_path):
    for name, value in (('num_cards', 2), ('regions_per_card', 2),
                        ('numa_nodes', 2), ('sriov', True),
                        ('state_dir', str(tmp_path / 'fake'))):
        conf.set_override(name, value, group='fake_driver')
    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    return agent_manager.AgentManager(conf, host='node1', drivers=[driver],
                                      conductor_api=Conductor())


def _counts():
    with session.reader() as s:
        return (s.query(models.PublishRequest).count(),
                s.query(models.HostTopology).count())


def test_places_and_nodes_are_stored_once(agent):
    ack = agent.report_once()
    assert ack['changed']
    rows = devices_db.host_rows('node1')
    assert [(d.identity, d.numa_node, d.pcie_root, d.socket,
             d.local_cpulist) for d in rows.devices] == [
        ('0000:5e:00.0', 0, 'pci0000:5e', 0, '0-3'),
        ('0000:5f:00.0', 1, 'pci0000:5f', 1, '4-7')]
    # Each region behind its own VF: the VF's address.
    assert sorted(d.pci_bus_id for d in rows.deployables) == [
        '0000:5e:00.1', '0000:5e:00.2', '0000:5f:00.1', '0000:5f:00.2']
    assert {d.numa_node for d in rows.deployables} == {0, 1}
    assert rows.numa_nodes and '"distances":[21,10]' in rows.numa_nodes
    publish_requests.served('node1', 10 ** 9)
    before = _counts()

    assert agent.report_once() is None          # nothing changed: not sent
    assert agent.report_once(full=True)['changed'] is False
    assert _counts() == before
    # The first report and the full one carry the nodes.
    assert agent.conductor.sent == [agent.numa_nodes()] * 2


def test_nodes_are_sent_when_they_change(agent, monkeypatch):
    agent.report_once()
    assert agent.conductor.sent == [agent.numa_nodes()]
    monkeypatch.setattr(agent, 'numa_nodes', lambda: NODES)
    assert agent.report_once()['changed']
    assert agent.conductor.sent[-1] == NODES
    assert agent.report_once() is None


@pytest.mark.parametrize('nodes', [
    [dict(NODES[0], distances=[10, 21])],
    [dict(NODES[0], node=-1)],
    [dict(NODES[0], socket='0'), NODES[1]],
    'nodes'])
def test_bad_nodes_refuse_the_whole_report(agent, nodes):
    _refused(agent.scan(), nodes)
    assert devices_db.host_rows('node1').devices == []
    assert _counts() == (0, 0)


def test_bad_places_refuse_the_whole_report(agent):
    [entry] = agent.scan()
    entry['devices'][1]['topology']['numa_node'] = 'one'
    _refused([entry], None)
    assert devices_db.host_rows('node1').devices == []


def _refused(entries, nodes):
    with pytest.raises(messaging.ExpectedException) as caught:
        conductor_manager.ConductorManager('cond').report(
            context.get_admin_context(), 'node1', entries, nodes)
    assert isinstance(caught.value.exc_info[1], exception.InvalidReport)
