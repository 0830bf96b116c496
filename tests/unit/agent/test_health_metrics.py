"""The agent's /metrics shows the latest readings of its devices
(agent/health_metrics.py): an agent scans the fixture DFL host with the
real sysfs driver, and its metrics port, read over HTTP and parsed with
prometheus_client's parser (and promtool), follows the hwmon and AER
files; a card gone from the bus loses its series."""
import shutil
import urllib.request

import pytest
from prometheus_client import parser

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.cmd import agent as cmd_agent
from cyborg_lite.drivers import fake
from tests import prometheus_text
from tests.unit.drivers import conftest as drivers_conftest
from tests.unit.drivers import test_fpga_sysfs as t

PAC, D5005 = t.PAC, t.D5005
PAC_HWMON = t.PAC_REGION + '/dfl-fme.0/hwmon'
D5005_GONE = 'sys/devices/pci0000:ae'


class Conductor:
    """The conductor's side of a report: every report acknowledged."""

    def report(self, ctxt, host, entries, numa_nodes=None):
        return {'changed': True}


@pytest.fixture
def host_tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(drivers_conftest.fixture_path('dfl_host'), root,
                    symlinks=True)
    return root


@pytest.fixture
def agent(conf, host_tree):
    return agent_manager.AgentManager(
        conf, host='node1', drivers=[t._driver(conf, host_tree)],
        conductor_api=Conductor())


@pytest.fixture
def scrape(conf, agent):
    conf.set_override('listen_host', '127.0.0.1', group='metrics')
    # NOTE: what cyborg-lite-agent serves on [metrics]agent_port.
    server = cmd_agent.serve_metrics(agent, 0)
    url = 'http://127.0.0.1:%d/metrics' % server.server_port

    def read():
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read().decode()
    yield read
    server.shutdown()
    server.server_close()


def series(text, name):
    """{(identity, signal or None): value} of the samples ``name``
    ({(identity, region name, signal): value} of a region's); every
    sample labelled by host and driver."""
    found = {}
    for labels, value in prometheus_text.samples(text, name):
        assert (labels['host'], labels['driver']) == ('node1', 'fpga_sysfs')
        key = (labels['identity'],) + ((labels['name'],) if 'name' in
                                       labels else ())
        found[key + (labels.get('signal'),)] = value
    return found


TEMPERATURE = 'cyborg_lite_device_temperature_celsius'
POWER = 'cyborg_lite_device_power_watts'
ERRORS = 'cyborg_lite_device_errors_total'
REGION_ERRORS = 'cyborg_lite_region_errors_total'
AER = ('aer_dev_fatal', 'aer_dev_nonfatal', 'aer_dev_correctable')
# The PAC's region is behind a VF of its own, with its own AER files.
PAC_VF = t.PAC_DIR.replace('0000:5e:00.0', '0000:5e:00.1')


def test_the_readings_of_each_scan_and_a_vanished_card(agent, scrape,
                                                      host_tree):
    agent.report_once()
    text = scrape()
    assert series(text, TEMPERATURE) == {(PAC, None): 40.0,
                                         (D5005, None): 40.0}
    assert series(text, POWER) == {(PAC, None): 24.0, (D5005, None): 24.0}
    assert series(text, ERRORS) == {
        (card, signal): 0.0 for card in (PAC, D5005) for signal in AER}
    assert series(text, REGION_ERRORS) == {
        (PAC, 'region0', signal): 0.0 for signal in AER}
    prometheus_text.promtool_check(text)

    (host_tree / PAC_HWMON / 'hwmon0/temp1_input').write_text('71500\n')
    (host_tree / PAC_HWMON / 'hwmon1/power1_input').write_text('35250000\n')
    (host_tree / t.PAC_DIR / 'aer_dev_nonfatal').write_text(fake.aer_text(
        fake.AER_UNCORRECTABLE, 'TOTAL_ERR_NONFATAL', 3))
    (host_tree / PAC_VF / 'aer_dev_fatal').write_text(fake.aer_text(
        fake.AER_UNCORRECTABLE, 'TOTAL_ERR_FATAL', 1))
    assert series(scrape(), TEMPERATURE)[PAC, None] == 40.0  # not scanned
    agent.report_once()
    text = scrape()
    assert series(text, TEMPERATURE) == {(PAC, None): 71.5,
                                         (D5005, None): 40.0}
    assert series(text, POWER)[PAC, None] == 35.25
    assert series(text, ERRORS)[PAC, 'aer_dev_nonfatal'] == 3.0
    assert series(text, ERRORS)[PAC, 'aer_dev_fatal'] == 0.0
    assert series(text, REGION_ERRORS)[PAC, 'region0', 'aer_dev_fatal'] == 1

    shutil.rmtree(host_tree / D5005_GONE)
    agent.report_once()
    text = scrape()
    # NOTE: still reported (unhealthy, gone from the bus), but nothing
    # read from it: no reading of it is shown.
    for name in (TEMPERATURE, POWER, ERRORS, REGION_ERRORS):
        assert {key[0] for key in series(text, name)} == {PAC}
    prometheus_text.promtool_check(text)


def test_a_failed_health_read_shows_no_readings(agent, scrape, monkeypatch):
    agent.report_once()
    assert series(scrape(), TEMPERATURE)
    driver = agent.drivers[0]
    monkeypatch.setattr(driver, 'read_health', _raise)
    agent.report_once()
    assert series(scrape(), TEMPERATURE) == {}


def _raise(*args):
    raise OSError('sensor bus stuck')


def test_a_card_no_longer_listed_loses_its_readings(agent, scrape,
                                                    host_tree):
    agent.report_once()
    # Its regions are gone (its driver unbound); the function stays.
    (host_tree / 'sys/class/fpga_region/region2').unlink()
    agent.report_once()
    text = scrape()
    for name in (TEMPERATURE, POWER, ERRORS):
        assert {key[0] for key in series(text, name)} == {PAC}
