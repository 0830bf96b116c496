"""Health of Alveo cards from recorded ``xbutil examine -r thermal
electrical error`` reports (healthy, degraded, unhealthy), through a
stand-in xbutil that answers each report it is asked for."""
import json
import shutil

import pytest

from cyborg_lite.drivers import fake
from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_xilinx as tx
from tests.unit.drivers.conftest import fixture_path

U250, U200 = tx.U250, tx.U200
SCRIPT = '''#!/bin/sh
out=""; dev=""; report=""
while [ $# -gt 0 ]; do
  case "$1" in --output) out="$2"; shift;; -d) dev="$2"; shift;;
    -r) report="$2"; shift;; esac
  shift
done
[ -e "$out" ] && { echo "ERROR: output file exists" >&2; exit 1; }
if [ -z "$dev" ]; then src="%(dir)s/host.json"
elif [ "$report" = thermal ]; then src="%(dir)s/health_$dev.json"
else src="%(dir)s/dynamic_$dev.json"; fi
[ -f "$src" ] || { echo "ERROR: no report $report for '$dev'" >&2; exit 1; }
cp "$src" "$out"
'''


@pytest.fixture
def cards(conf, tmp_path):
    """The two-card host; ``use(name)`` sets the U250's health report."""
    reports = tmp_path / 'reports'
    reports.mkdir()
    shutil.copy(fixture_path('xilinx', 'host_two_cards.json'),
                reports / 'host.json')
    script = tmp_path / 'xbutil'
    script.write_text(SCRIPT % {'dir': reports})
    script.chmod(0o755)
    sys_root = tmp_path / 'sys'
    function = sys_root / 'bus/pci/devices' / U250
    fake.write_pci_health(str(function))
    driver = tx._driver(conf, str(script))
    driver.sysfs_root = str(sys_root)

    def use(variant):
        shutil.copy(fixture_path('xilinx', 'health_u250_%s.json' % variant),
                    reports / ('health_%s.json' % U250))
    use('healthy')
    return driver, use, function


def test_healthy(conf, cards):
    driver, _use, _function = cards
    state = hh.scan(hh.monitor(conf), driver, times=3)
    assert state[U250] == ('healthy', None, {'region0': ('healthy', None)})


def test_degraded(conf, cards):
    driver, use, _function = cards
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    use('degraded')
    assert hh.scan(monitor, driver, times=2)[U250][:2] == (
        'degraded', 'temperature 87 °C ≥ warn 85 °C; power_warning: '
        'drawing more than its 225 W')


def test_unhealthy(conf, cards):
    driver, use, _function = cards
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    use('unhealthy')
    assert hh.scan(monitor, driver, times=2)[U250][:2] == (
        'unhealthy', 'temperature 96 °C ≥ crit 95 °C; async_error '
        'SEVERITY_CRITICAL MODULE_FIREWALL: XRT_ERROR_NUM_FIRWWALL_TRIP '
        '(Sat Dec  6 10:02:11 2026 GMT)')


def test_an_old_error_is_no_new_fault(conf, cards):
    driver, use, _function = cards
    use('unhealthy')
    # The firewall trip was there when the agent first looked; the card
    # is cool.
    report = _load('unhealthy')
    report['devices'][0]['thermals'] = _load('healthy')['devices'][0][
        'thermals']
    path = driver.xbutil_path.replace('xbutil', 'reports/health_%s.json'
                                      % U250)
    with open(path, 'w') as f:
        json.dump(report, f)
    monitor = hh.monitor(conf)
    for _ in range(4):
        assert hh.scan(monitor, driver)[U250][0] == 'healthy'


def _load(variant):
    with open(fixture_path('xilinx', 'health_u250_%s.json' % variant)) as f:
        return json.load(f)


def test_a_card_without_a_health_report_keeps_its_state(conf, cards,
                                                        tmp_path):
    driver, use, _function = cards
    monitor = hh.monitor(conf, to_fault=1, to_clear=1)
    use('unhealthy')
    hh.scan(monitor, driver)
    (tmp_path / 'reports' / ('health_%s.json' % U250)).unlink()
    for _ in range(3):
        assert hh.scan(monitor, driver)[U250][0] == 'unhealthy'
    # The U200 has no health report at all: only that it is not ready.
    assert hh.scan(monitor, driver)[U200][:2] == (
        'degraded', 'is_ready false: xbutil says the card is not ready')


def test_aer_counters_of_the_card_function(conf, cards):
    driver, _use, function = cards
    monitor = hh.monitor(conf, to_fault=1)
    hh.scan(monitor, driver)
    (function / 'aer_dev_fatal').write_text(fake.aer_text(
        fake.AER_UNCORRECTABLE, 'TOTAL_ERR_FATAL', 4))
    assert hh.scan(monitor, driver)[U250][:2] == (
        'unhealthy', 'aer_dev_fatal grew from 0 to 4')


def test_metrics_show_the_readings_not_the_time_of_an_error(conf, cards):
    driver, use, _function = cards
    use('unhealthy')
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    shown = {r.signal: r.value for r in monitor.values[driver.name][U250].device}
    # async_error is the time of the newest error, not a count: no
    # cyborg_lite_device_errors_total of it.
    assert shown['temperature'] == 96
    assert not {'async_error', 'async_error_critical'} & set(shown)
    assert {'aer_dev_fatal', 'power'} <= set(shown)
