"""Health signals of one Alveo card from ``xbutil examine -d <bdf> -r
thermal electrical error --format JSON``.

Shape, from XRT's own writers (core/common/sensor.cpp read_thermals and
read_electrical, tools/common/reports/ReportAsyncError.cpp); boost's JSON
writer makes every value a string::

  {"devices": [{"device_id": "0000:d8:00.1",
    "thermals": [{"location_id": "fpga0", "description": "FPGA",
                  "temp_C": "62", "is_present": "true"}, ...],
    "electrical": {"power_rails": [...], "power_consumption_watts": "21.5",
                   "power_consumption_max_watts": "225",
                   "power_consumption_warning": "false"},
    "asynchronous_errors": [{"time": {"epoch": "<ns>", "timestamp": ...},
                             "class": "CLASS_HARDWARE", "module":
                             "MODULE_FIREWALL", "severity":
                             "SEVERITY_CRITICAL", "driver": "DRIVER_XOCL",
                             "error_code": {"error_id": "0", "error_msg":
                             "..."}}]}]}

xbutil gives no temperature thresholds: the hottest sensor is compared
with ``[xilinx_driver] thermal_warn_celsius`` and ``thermal_crit_celsius``.
An asynchronous error is XRT's last error of its class, with the time it
happened: a newer time than the last scan saw is a new error (critical,
alert or emergency: unhealthy; error: degraded).
"""
import re

from cyborg_lite.common import health

_NUMBER_RE = re.compile(r'-?[0-9]{1,9}(\.[0-9]{1,6})?')
_EPOCH_RE = re.compile(r'[0-9]{1,20}')
FATAL_SEVERITIES = ('SEVERITY_EMERGENCY', 'SEVERITY_ALERT',
                    'SEVERITY_CRITICAL')
ERROR_SEVERITIES = ('SEVERITY_ERROR',)
SIGNALS = ('temperature', 'power', 'power_warning')


def _number(value):
    text = str(value).strip() if value is not None else ''
    return float(text) if _NUMBER_RE.fullmatch(text) else None


def _device(report):
    devices = report.get('devices') if isinstance(report, dict) else None
    if isinstance(devices, list) and devices and isinstance(devices[0],
                                                            dict):
        return devices[0]
    return {}


def _thermal(device, warn, crit):
    thermals = device.get('thermals')
    temps = [_number(t.get('temp_C')) for t in thermals
             if isinstance(t, dict) and
             str(t.get('is_present')).lower() == 'true'] \
        if isinstance(thermals, list) else []
    temps = [t for t in temps if t is not None]
    if not temps:
        return []
    return [health.Gauge('temperature', max(temps), '°C', (warn, 'warn'),
                         (crit, 'crit'))]


def _electrical(device):
    electrical = device.get('electrical')
    if not isinstance(electrical, dict):
        return []
    readings = []
    watts = _number(electrical.get('power_consumption_watts'))
    if watts is not None:
        readings.append(health.Gauge('power', watts, 'W'))
    if str(electrical.get('power_consumption_warning')).lower() == 'true':
        readings.append(health.Condition(
            'power_warning', 'degraded', 'power_warning: drawing more than '
            'its %s W' % electrical.get('power_consumption_max_watts', '?')))
    return readings


def _newest(errors, severities):
    """(epoch, text) of the newest error of ``severities``, or None."""
    newest = None
    for error in errors:
        if not isinstance(error, dict) or \
                error.get('severity') not in severities:
            continue
        time = error.get('time') if isinstance(error.get('time'),
                                               dict) else {}
        epoch = str(time.get('epoch', ''))
        if not _EPOCH_RE.fullmatch(epoch):
            continue
        code = error.get('error_code') if isinstance(
            error.get('error_code'), dict) else {}
        text = 'async_error %s %s: %s (%s)' % (
            error.get('severity'), error.get('module'),
            code.get('error_msg', '?'), time.get('timestamp', epoch))
        if newest is None or int(epoch) > newest[0]:
            newest = (int(epoch), text)
    return newest


def _async_errors(device):
    errors = device.get('asynchronous_errors')
    if not isinstance(errors, list):
        return []
    readings = []
    for signal, level, severities in (
            ('async_error_critical', 'unhealthy', FATAL_SEVERITIES),
            ('async_error', 'degraded', ERROR_SEVERITIES)):
        newest = _newest(errors, severities)
        # NOTE: no error of a kind yet is the count 0, so the first one
        # seen after it is a growth.
        epoch, text = newest or (0, None)
        readings.append(health.Counter(signal, epoch, level, text=text,
                                       counts=False))
    return readings


def card_readings(report, warn, crit):
    """The readings of a card's thermal/electrical/error report."""
    device = _device(report)
    return (_thermal(device, warn, crit) + _electrical(device) +
            _async_errors(device))


def unreadable(error):
    """What a failed report says: nothing new of any gauge or
    condition (their last findings stand)."""
    return [health.Unreadable(signal, error) for signal in SIGNALS]
