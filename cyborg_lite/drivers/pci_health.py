"""Health signals any PCI function has in sysfs, for every driver.

From <sysfs>/bus/pci/devices/<address>/ (kernel ABI:
Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats and
sysfs-bus-pci):

* ``aer_dev_fatal``, ``aer_dev_nonfatal``, ``aer_dev_correctable``: one
  ``<name> <count>`` line per error kind, then ``TOTAL_ERR_FATAL <n>``
  (``TOTAL_ERR_NONFATAL``, ``TOTAL_ERR_COR``). Cumulative counts: only
  growth since the last scan is an error. Fatal growth makes the device
  unhealthy, non-fatal degraded; correctable growth only when a scan adds
  at least ``[health]correctable_errors_per_scan``.
* ``current_link_width`` / ``max_link_width`` (``%u``) and
  ``current_link_speed`` / ``max_link_speed`` (``8.0 GT/s PCIe``; ``8
  GT/s`` before kernel 5.x; ``Unknown``): a link narrower or slower than
  it can be makes the device degraded. GPUs lower their link speed when
  idle, so the speed is checked only where ``check_speed`` says.
* The function's directory itself: gone means the device fell off the bus.
"""
import os
import re

from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.drivers import sysfs

AER_FILES = (('aer_dev_fatal', 'TOTAL_ERR_FATAL', 'unhealthy'),
             ('aer_dev_nonfatal', 'TOTAL_ERR_NONFATAL', 'degraded'),
             ('aer_dev_correctable', 'TOTAL_ERR_COR', 'degraded'))
_AER_LINE_RE = re.compile(r'(\S(?:.*\S)?) ([0-9]{1,20})')
_SPEED_RE = re.compile(r'([0-9]{1,3}(?:\.[0-9]{1,2})?) GT/s(?: PCIe)?')


def function_dir(sysfs_root, address):
    return os.path.join(sysfs_root, 'bus', 'pci', 'devices', address)


def vanished(sysfs_root, address):
    """The Condition of a function gone from the bus, or None if it is
    there (a missing device whose function remains was only unlisted)."""
    if address is None or os.path.exists(function_dir(sysfs_root,
                                                      address)):
        return None
    return health.Condition('pci', 'unhealthy',
                            'pci %s is gone from the PCI bus' % address)


def add_vanished(sysfs_root, missing, signals):
    """``signals`` with those of each record of ``missing`` (a device the
    scan did not find) whose function is gone from the bus."""
    for record in missing:
        gone = vanished(sysfs_root, record.pci_address)
        if gone is not None:
            signals[record.identity] = health.Signals([gone])
    return signals


def parse_aer(text, total_name, where):
    """The ``TOTAL_...`` count of an aer_dev_* file; HostDataError when a
    line is not ``<name> <count>`` or the total is missing."""
    total = None
    for line in text.splitlines():
        match = _AER_LINE_RE.fullmatch(line)
        if not match:
            raise exception.HostDataError(where=where, reason='not "<error> '
                                          '<count>": %r' % line[:60])
        if match.group(1) == total_name:
            total = int(match.group(2))
    if total is None:
        raise exception.HostDataError(where=where,
                                      reason='no %s line' % total_name)
    return total


def _aer_readings(path, correctable_step):
    readings = []
    for name, total_name, level in AER_FILES:
        step = 1
        if name == 'aer_dev_correctable':
            level = level if correctable_step else None
            step = correctable_step or 1
        try:
            text = sysfs.read_text(os.path.join(path, name))
            if text is None:
                continue  # not AER capable
            readings.append(health.Counter(
                name, parse_aer(text, total_name, os.path.join(path, name)),
                level, step))
        except exception.HostDataError as e:
            readings.append(health.Unreadable(name, str(e)))
    return readings


def parse_speed(text):
    """GT/s of a link speed, or None when the kernel does not know it."""
    match = _SPEED_RE.fullmatch(text or '')
    return float(match.group(1)) if match else None


def _link_readings(path, check_speed):
    # NOTE: each under its own signal, so that an unreadable one keeps
    # its own last finding (common/health.classify) and not the other's.
    readings = []
    for signal, reader in [('link_width', _link_width)] + (
            [('link_speed', _link_speed)] if check_speed else []):
        try:
            found = reader(path)
        except exception.HostDataError as e:
            found = health.Unreadable(signal, str(e))
        if found is not None:
            readings.append(found)
    return readings


def _link_width(path):
    width = sysfs.read_int(os.path.join(path, 'current_link_width'), 0, 64)
    widest = sysfs.read_int(os.path.join(path, 'max_link_width'), 0, 64)
    if width == 0 and widest:
        return health.Condition('link_width', 'unhealthy',
                                'link_width x0: the link is down')
    if width is not None and widest and width < widest:
        return health.Condition('link_width', 'degraded',
                                'link_width x%d < max x%d' % (width, widest))
    return None


def _link_speed(path):
    speed = parse_speed(sysfs.read_text(
        os.path.join(path, 'current_link_speed')))
    fastest = parse_speed(sysfs.read_text(
        os.path.join(path, 'max_link_speed')))
    if speed and fastest and speed < fastest:
        return health.Condition('link_speed', 'degraded',
                                'link_speed %g GT/s < max %g GT/s'
                                % (speed, fastest))
    return None


def function_readings(sysfs_root, address, check_speed=True,
                      correctable_step=0):
    """The AER counters and link of a PCI function its driver still
    lists; none when sysfs does not show it (its driver sees it, so the
    tree read is not the host's: nothing to say)."""
    path = function_dir(sysfs_root, address)
    if address is None or not os.path.isdir(path):
        return []
    return (_aer_readings(path, correctable_step) +
            _link_readings(path, check_speed))
