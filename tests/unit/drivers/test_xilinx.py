"""xilinx driver: recorded xbutil JSON reports through a stand-in xbutil."""
import logging
import shutil

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import xilinx
from tests.unit.drivers.conftest import fixture_path

U250 = '0000:d8:00.1'
U200 = '0000:3b:00.1'
SCRIPT = '''#!/bin/sh
# Stand-in for xbutil: writes a recorded report to --output, as xbutil
# does, and refuses an existing output file like it.
out=""; dev=""
[ "$1" = examine ] || { echo "bad command $1" >&2; exit 64; }
while [ $# -gt 0 ]; do
  case "$1" in --output) out="$2"; shift;; -d) dev="$2"; shift;; esac
  shift
done
[ -n "$out" ] || { echo "--output missing" >&2; exit 64; }
[ -e "$out" ] && { echo "ERROR: output file exists" >&2; exit 1; }
if [ -z "$dev" ]; then src="%(dir)s/host.json"; else
  src="%(dir)s/dynamic_$dev.json"; fi
[ -f "$src" ] || { echo "ERROR: no report for '$dev'" >&2; exit 1; }
cp "$src" "$out"
'''


@pytest.fixture
def xbutil(tmp_path):
    """An xbutil that answers with the given host report."""
    def _make(host_report, dynamic=None):
        reports = tmp_path / 'reports'
        reports.mkdir(exist_ok=True)
        shutil.copy(host_report, reports / 'host.json')
        for address, path in (dynamic or {}).items():
            shutil.copy(path, reports / ('dynamic_%s.json' % address))
        script = tmp_path / 'xbutil'
        script.write_text(SCRIPT % {'dir': reports})
        script.chmod(0o755)
        return str(script)
    return _make


def _text_file(tmp_path, text):
    path = tmp_path / 'report-src.json'
    path.write_text(text)
    return str(path)


def _driver(conf, path):
    conf.set_override('xbutil_path', path, group='xilinx_driver')
    conf.set_override('timeout', 10, group='xilinx_driver')
    # Not this machine's /sys: the cards' places are unknown here.
    conf.set_override('sysfs_root', '/nonexistent', group='xilinx_driver')
    driver = xilinx.XilinxDriver(conf)
    driver.name = 'xilinx'
    return driver


def _two_cards(xbutil):
    return xbutil(fixture_path('xilinx', 'host_two_cards.json'),
                  {U250: fixture_path('xilinx',
                                      'dynamic_regions_u250.json')})


def test_alveo_cards_from_the_host_report(conf, xbutil):
    records = {r.identity: r for r in
               _driver(conf, _two_cards(xbutil)).discover()}
    assert sorted(records) == [U200, U250]
    u250 = records[U250]
    assert (u250.type, u250.vendor, u250.model, u250.health) == \
        ('FPGA', '0x10ee', 'xilinx_u250_gen3x16_xdma_shell_4_1', 'healthy')
    [region] = u250.deployables
    assert (region.name, region.resource_class, region.region_type,
            region.function_id) == \
        ('region0', 'FPGA', None, '6c6ae5e04b3f5a2b8d9c7e1f2a3b4c5d')
    assert region.traits == ['CUSTOM_FPGA_XILINX',
                             'CUSTOM_FPGA_XILINX_U250']
    assert region.attributes['logic_uuid'] == \
        'a8b3fe4b1b4e5f8acd520c0e5d6b7f19'
    assert region.attach_handles[0].attach_info == {
        'domain': '0000', 'bus': 'd8', 'device': '00', 'function': '1'}


def test_card_without_a_region_report_keeps_unknown_function(conf, xbutil,
                                                             caplog):
    with caplog.at_level(logging.WARNING):
        records = {r.identity: r for r in
                   _driver(conf, _two_cards(xbutil)).discover()}
    u200 = records[U200]
    assert u200.deployables[0].function_id is None
    assert u200.deployables[0].attributes['shell_id'] == '0x5d14fbe6'
    assert u200.health == 'degraded'       # is_ready "false"
    assert 'No loaded xclbin for %s' % U200 in caplog.text


def test_records_survive_the_rpc_round_trip(conf, xbutil):
    for record in _driver(conf, _two_cards(xbutil)).discover():
        assert device_records.DeviceRecord.from_dict(
            record.to_dict()) == record


def test_loaded_function_reads_the_dynamic_region(conf, xbutil):
    driver = _driver(conf, _two_cards(xbutil))
    assert driver.loaded_function(U250, 'region0') == \
        '6c6ae5e04b3f5a2b8d9c7e1f2a3b4c5d'


def test_host_without_cards(conf, xbutil):
    path = xbutil(fixture_path('xilinx', 'host_no_devices.json'))
    assert _driver(conf, path).discover() == []


def test_missing_xbutil_means_no_cards(conf, tmp_path):
    assert _driver(conf, str(tmp_path / 'xbutil')).discover() == []


@pytest.mark.parametrize('text', ['', '{"system": ', '[1, 2]',
                                  '{"system": {"host": {"devices": 5}}}',
                                  '{"schema_version": {}}'])
def test_bad_host_report_is_a_driver_error(conf, xbutil, tmp_path, text):
    path = xbutil(_text_file(tmp_path, text))
    with pytest.raises(exception.DriverError):
        _driver(conf, path).discover()


def test_bad_device_entry_skips_only_that_card(conf, xbutil, tmp_path):
    text = open(fixture_path('xilinx', 'host_two_cards.json')).read()
    path = xbutil(_text_file(tmp_path, text.replace('"0000:3b:00.1"',
                                                    '"slot 3"')))
    records = _driver(conf, path).discover()
    assert [r.identity for r in records] == [U250]


def test_non_alveo_devices_are_ignored(conf, xbutil, tmp_path):
    text = open(fixture_path('xilinx', 'host_two_cards.json')).read()
    path = xbutil(_text_file(tmp_path, text.replace(
        '"device_class": "Alveo",\n                    "vbnv": '
        '"xilinx_u200', '"device_class": "Ryzen",\n'
        '                    "vbnv": "xilinx_u200')))
    assert [r.identity for r in _driver(conf, path).discover()] == [U250]


def test_failing_xbutil_is_a_driver_error(conf, tmp_path):
    script = tmp_path / 'xbutil'
    script.write_text('#!/bin/sh\necho "ERROR: xocl not loaded" >&2\n'
                      'exit 1\n')
    script.chmod(0o755)
    with pytest.raises(exception.DriverError, match='xocl not loaded'):
        _driver(conf, str(script)).discover()


@pytest.mark.parametrize('vbnv,trait', [
    ('xilinx_u250_gen3x16_xdma_shell_4_1', 'CUSTOM_FPGA_XILINX_U250'),
    ('xilinx_u55c_gen3x16_xdma_base_3', 'CUSTOM_FPGA_XILINX_U55C'),
    ('custom-shell', None)])
def test_board_trait(vbnv, trait):
    assert xilinx.board_trait(vbnv) == trait
