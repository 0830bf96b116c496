"""cyborg-lite-all-in-one as an operator first meets it: a first run and a
restart that log no warning the operator cannot act on (its own Placement
lets it write every provider's inventories in one POST /reshaper), and
driver options from a --config-file honoured (the fake driver is only the
default)."""
import re
import shutil

import pytest
import requests

from tests import prometheus_text
from tests import waiting
from tests.functional.all_in_one import process
from tests.unit.drivers import conftest as drivers

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('all_in_one')]

PLACEMENT = {'X-Auth-Token': 'admin',
             'OpenStack-API-Version': 'placement 1.20'}
# An oslo.log line at WARNING or above.
COMPLAINT = re.compile(r'^\S+ \S+ \d+ (WARNING|ERROR|CRITICAL) ', re.M)


def _providers_with(aio, resources):
    url = 'http://127.0.0.1:%d/resource_providers' % aio.placement_port
    resp = requests.get(url, params={'resources': resources},
                        headers=PLACEMENT, timeout=30)
    return len(resp.json()['resource_providers'])


def _run(aio, check):
    """Start ``aio``, ``check(aio)`` once it serves, stop it; its log."""
    aio.start()
    try:
        aio.wait_api()
        check(aio)
    finally:
        assert aio.stop() == 0
        process.kill_leftovers(aio.placement_port)
    return aio.proc.stdout.read() + aio.proc.stderr.read()


def _regions_published(aio):
    # The fake driver's default: 2 cards of 2 regions behind their PF,
    # each card one provider, their inventories written (in one POST
    # /reshaper).
    assert waiting.until(lambda: _providers_with(aio, 'FPGA:1') == 2,
                         timeout=60)


def test_a_first_run_and_a_restart_log_no_warning(tmp_path):
    state = tmp_path / 'state'
    first = _run(process.AllInOneProcess(state), _regions_published)
    assert 'cyborg_lite all-in-one is running' in first
    assert COMPLAINT.findall(first) == [], first
    again = _run(process.AllInOneProcess(state), _regions_published)
    assert COMPLAINT.findall(again) == [], again


def test_the_drivers_of_a_config_file_are_run(tmp_path):
    host = tmp_path / 'host'
    shutil.copytree(drivers.fixture_path('dfl_host'), host, symlinks=True)
    conf = tmp_path / 'drivers.conf'
    conf.write_text('[agent]\nenabled_drivers = fpga_sysfs\n'
                    '[fpga_sysfs]\nsysfs_root = %s\ndev_root = %s\n'
                    % (host / 'sys', host / 'dev'))
    aio = process.AllInOneProcess(tmp_path / 'state', '--config-file',
                                  str(conf))

    def the_host_s_cards(aio):
        def devices():
            return requests.get(aio.api + '/v2/devices',
                                timeout=30).json()['devices']
        found = waiting.read_until(devices, lambda d: len(d) == 2,
                                   timeout=60, what='the DFL host cards')
        # The fixture host's two cards; the fake driver's would be two
        # simulated PAC Arria 10s.
        assert sorted(d['model'] for d in found) == [
            'Intel PAC Arria 10 GX', 'Intel PAC D5005']
        # One process: the API's /metrics has the agent's readings of
        # the fixture's hwmon files (agent/health_metrics.py) too.
        text = requests.get(aio.api + '/metrics', timeout=30).text
        readings = prometheus_text.samples(
            text, 'cyborg_lite_device_temperature_celsius')
        assert sorted((labels['identity'], value)
                      for labels, value in readings) == [
            ('0000:5e:00.0', 40.0), ('0000:af:00.0', 40.0)]
    log = _run(aio, the_host_s_cards)
    assert COMPLAINT.findall(log) == [], log
