"""Xilinx Alveo cards from ``xbutil examine --format JSON`` (XRT 2021.1+).

JSON shape, read from XRT's own writer (src/runtime_src/core/tools/common:
XBHelpMenus.cpp produce_reports, reports/ReportHost.cpp, XBUtilities.cpp
get_available_devices, ReportDynamicRegion.cpp); boost's JSON writer
makes every value a string::

  {"schema_version": {"schema": "JSON", "creation_date": "..."},
   "system": {"host": {"os": {...}, "xrt": {...},
     "devices": [{"bdf": "0000:d8:00.1", "device_class": "Alveo",
                  "vbnv": "xilinx_u250_gen3x16_xdma_shell_4_1",
                  "id": "<logic uuid, or 0x<timestamp> on 1RP shells>",
                  "instance": "user(inst=128)", "is_ready": "true"}]}}}

Per card, ``xbutil examine -d <bdf> -r dynamic-regions`` adds
``"devices": [{"device_id": "<bdf>", "dynamic_regions":
[{"xclbin_uuid": "...", "compute_units": [...]}]}]``: the loaded xclbin is
the region's function. Not verified against a live card (none was
available); the shell's PR interface uuid is not in these reports, so
region_type stays unknown and the shell is given as a trait instead.

Health: per card, ``xbutil examine -d <bdf> -r thermal electrical error``
(drivers/xilinx_health.py) and the user function's AER counters and link
from sysfs; a card that is not ready is degraded.
"""
import json
import logging
import os
import re
import tempfile
import uuid

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.drivers import base
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import sysfs
from cyborg_lite.drivers import tools
from cyborg_lite.drivers import topology
from cyborg_lite.drivers import xilinx_health

LOG = logging.getLogger(__name__)

VENDOR = '0x10ee'
NOT_READY = 'is_ready false: xbutil says the card is not ready'
# Real reports are a few KiB; refuse to load anything absurdly large.
MAX_REPORT_BYTES = 16 * 1024 * 1024


def _uuid_hex(text):
    """32 lowercase hex digits for a uuid in any usual spelling, or None."""
    try:
        return uuid.UUID(str(text).strip()).hex
    except ValueError:
        return None


def _require(obj, key, kind, where):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise exception.HostDataError(where=where, reason='"%s" must be %s, '
                                      'got %r' % (key, kind.__name__, value))
    return value


def host_devices(report):
    """The list at system.host.devices of a host report."""
    where = 'xbutil examine'
    system = _require(report, 'system', dict, where)
    host = _require(system, 'host', dict, where + ' system')
    devices = host.get('devices', [])
    # boost writes an empty child as "" rather than [].
    if devices == '':
        return []
    if not isinstance(devices, list):
        raise exception.HostDataError(where=where, reason='system.host.'
                                      'devices must be a list')
    return devices


def board_trait(vbnv):
    """CUSTOM_FPGA_XILINX_U250 from xilinx_u250_gen3x16_xdma_shell_4_1."""
    match = re.match(r'^xilinx_([a-z0-9]+)_', vbnv or '')
    return 'CUSTOM_FPGA_XILINX_%s' % match.group(1).upper() if match \
        else None


def card_record(device):
    """The DeviceRecord of one host-report device; HostDataError if bad."""
    where = 'xbutil examine device'
    address = sysfs.normalise_pci_address(
        _require(device, 'bdf', str, where))
    vbnv = _require(device, 'vbnv', str, where + ' ' + address)
    traits = ['CUSTOM_FPGA_XILINX'] + [t for t in [board_trait(vbnv)] if t]
    shell_id = str(device.get('id', ''))
    attributes = {'vbnv': vbnv}
    if _uuid_hex(shell_id):
        attributes['logic_uuid'] = _uuid_hex(shell_id)
    elif shell_id:
        attributes['shell_id'] = shell_id
    region = device_records.DeployableRecord(
        name='region0', resource_class='FPGA',
        traits=traits, attributes=attributes,
        attach_handles=[device_records.AttachHandleRecord(
            'PCI', sysfs.pci_attach_info(address))])
    ready = str(device.get('is_ready', 'true')).lower() == 'true'
    return device_records.DeviceRecord(
        type='FPGA', vendor=VENDOR, model=vbnv, identity=address,
        pci_address=address, health='healthy' if ready else 'degraded',
        health_reason=None if ready else NOT_READY,
        std_board_info={'vendor_id': VENDOR},
        vendor_board_info={'instance': str(device.get('instance', '')),
                           'vbnv': vbnv},
        deployables=[region])


def loaded_xclbin(report):
    """xclbin uuid from a dynamic-regions device report, or None."""
    devices = report.get('devices') if isinstance(report, dict) else None
    if not isinstance(devices, list) or not devices or \
            not isinstance(devices[0], dict):
        return None
    regions = devices[0].get('dynamic_regions')
    if not isinstance(regions, list) or not regions or \
            not isinstance(regions[0], dict):
        return None
    return _uuid_hex(regions[0].get('xclbin_uuid', ''))


class XilinxDriver(base.Driver, base.DiscoveryInterface,
                   topology.SysfsHostTopology, base.HealthInterface):
    """Alveo cards (user PFs) as one FPGA region each; not programmable."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.xilinx_driver
        self.xbutil_path = group.xbutil_path
        self.timeout = group.timeout
        self.sysfs_root = group.sysfs_root
        self.thermal = (group.thermal_warn_celsius,
                        group.thermal_crit_celsius)
        self.correctable_step = conf.health.correctable_errors_per_scan

    def discover(self):
        tool = tools.find_tool(self.xbutil_path)
        if tool is None:
            LOG.info('%s not found: no Xilinx cards on this host',
                     self.xbutil_path)
            return []
        try:
            devices = host_devices(self._examine(tool, []))
        except exception.HostDataError as e:
            raise exception.DriverError(driver=self._name,
                                        reason=e.format_message())
        records = []
        places = topology.Reader(self.sysfs_root)
        for device in devices:
            if not isinstance(device, dict) or \
                    device.get('device_class', 'Alveo') != 'Alveo':
                continue  # e.g. Ryzen AI NPUs share the tool
            try:
                record = card_record(device)
                record.topology = places.pci(record.identity)
            except exception.HostDataError as e:
                LOG.warning('Skipping a device in xbutil output: %s', e)
                continue
            record.deployables[0].function_id = self._loaded_function(
                tool, record.identity)
            records.append(record)
        return records

    def read_health(self, devices, missing):
        tool = tools.find_tool(self.xbutil_path)
        signals = {}
        for record in devices:
            readings = self._card_readings(tool, record.identity)
            if record.health != 'healthy':
                readings.append(health.Condition('is_ready', record.health,
                                                 record.health_reason))
            readings += pci_health.function_readings(
                self.sysfs_root, record.pci_address,
                correctable_step=self.correctable_step)
            signals[record.identity] = health.Signals(readings)
        return pci_health.add_vanished(self.sysfs_root, missing, signals)

    def _card_readings(self, tool, address):
        if tool is None:
            return xilinx_health.unreadable('%s not found' % self.xbutil_path)
        try:
            report = self._examine(tool, ['-d', address, '-r', 'thermal',
                                          'electrical', 'error'])
        except exception.CyborgLiteException as e:
            LOG.warning('No health report for %s: %s', address, e)
            return xilinx_health.unreadable(str(e))
        return xilinx_health.card_readings(report, *self.thermal)

    def loaded_function(self, identity, region_name):
        tool = tools.find_tool(self.xbutil_path)
        if tool is None or region_name != 'region0':
            return None
        return self._loaded_function(tool, identity)

    @property
    def _name(self):
        return self.name or 'xilinx'

    def _loaded_function(self, tool, address):
        """The card's xclbin; a failing per-card report is only logged."""
        try:
            return loaded_xclbin(self._examine(
                tool, ['-d', address, '-r', 'dynamic-regions']))
        except exception.DriverError as e:
            LOG.warning('No loaded xclbin for %s: %s', address, e)
            return None

    def _examine(self, tool, extra_args):
        """Run xbutil examine writing JSON to a fresh file; the parsed JSON.

        xbutil writes JSON only to --output, and refuses an existing file.
        """
        with tempfile.TemporaryDirectory(prefix='cyborg-xbutil-') as tmp:
            out = os.path.join(tmp, 'report.json')
            tools.run_tool(self._name, [tool, 'examine'] + extra_args +
                           ['--format', 'JSON', '--output', out],
                           self.timeout)
            return _load_report(out)


def _load_report(path):
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_REPORT_BYTES + 1)
    except OSError as e:
        raise exception.HostDataError(where=path, reason='xbutil wrote no '
                                      'report: %s' % e.strerror)
    if len(data) > MAX_REPORT_BYTES:
        raise exception.HostDataError(where=path, reason='report too large')
    try:
        report = json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError) as e:
        raise exception.HostDataError(where=path,
                                      reason='not JSON: %s' % e)
    if not isinstance(report, dict):
        raise exception.HostDataError(where=path,
                                      reason='not a JSON object')
    return report
