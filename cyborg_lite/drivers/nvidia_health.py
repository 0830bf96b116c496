"""Health signals of one GPU from its ``nvidia-smi -q -x`` element.

Element names from nvidia-smi's XML (nvsmi_device_v12.dtd, drivers 470
to 580), older and newer spellings both read:

* ``temperature/gpu_temp`` ("45 C") against ``gpu_temp_slow_threshold``
  (clocks slow down: degraded) and ``gpu_temp_max_threshold`` (the GPU
  shuts down: unhealthy). Drivers that give T.Limit instead
  (``gpu_temp_tlimit``, the margin below the slowdown limit, with
  ``gpu_temp_slow_tlimit_threshold`` and ``gpu_temp_max_tlimit_threshold``
  as margins) are compared on the margin.
* ``gpu_power_readings/power_draw`` (``power_readings`` before 535),
  carried for metrics.
* ``ecc_errors/volatile``: uncorrectable counts (``dram_uncorrectable``,
  ``sram_uncorrectable[_parity|_secded]``, before Ampere
  ``double_bit/total``), summed: a count that grew makes the GPU
  unhealthy (an uncorrectable error poisons what was in memory).
* ``retired_pages/pending_blacklist`` or ``pending_retirement`` (Yes: a
  reset retires them, degraded); ``remapped_rows/remapped_row_pending``
  (degraded) and ``remapped_row_failure`` (the GPU needs service:
  unhealthy).
* ``clocks_event_reasons`` (``clocks_throttle_reasons`` before 535): an
  Active hardware or thermal slowdown is degraded; idle, power cap,
  application or sync-boost clocks are normal.
* ``gpu_reset_status/reset_required`` (Yes: unhealthy),
  ``drain_and_reset_recommended`` (degraded), ``gpu_recovery_action``
  (anything but None: unhealthy). XID events themselves are not in the
  XML (they are in the kernel log and NVML events); these fields are how
  the driver says what an XID left behind.
"""
import re

from cyborg_lite.common import health

_CELSIUS_RE = re.compile(r'(-?[0-9]{1,3}) C')
_WATTS_RE = re.compile(r'([0-9]{1,6}(?:\.[0-9]{1,3})?) W')
_WIDTH_RE = re.compile(r'([0-9]{1,2})x')
_COUNT_RE = re.compile(r'[0-9]{1,20}')
UNCORRECTABLE = ('dram_uncorrectable', 'sram_uncorrectable',
                 'sram_uncorrectable_parity', 'sram_uncorrectable_secded',
                 'double_bit/total')
SLOWDOWNS = ('hw_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown',
             'sw_thermal_slowdown')


def _text(element, path):
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def _matched(pattern, text, cast):
    match = pattern.fullmatch(text or '')
    return cast(match.group(1)) if match else None


def _celsius(gpu, name):
    return _matched(_CELSIUS_RE, _text(gpu, 'temperature/' + name), int)


def _temperature(gpu):
    value = _celsius(gpu, 'gpu_temp')
    slow, shutdown = (_celsius(gpu, 'gpu_temp_slow_threshold'),
                      _celsius(gpu, 'gpu_temp_max_threshold'))
    readings = []
    if value is not None:
        readings.append(health.Gauge(
            'temperature', value, '°C',
            (slow, 'slowdown') if slow is not None else None,
            (shutdown, 'shutdown') if shutdown is not None else None))
    margin = _celsius(gpu, 'gpu_temp_tlimit')
    if margin is not None and (slow is None and shutdown is None):
        readings += _tlimit(gpu, margin)
    return readings


def _tlimit(gpu, margin):
    """T.Limit: how far below its slowdown limit the GPU is."""
    for level, name, what in (
            ('unhealthy', 'gpu_temp_max_tlimit_threshold', 'shutdown'),
            ('degraded', 'gpu_temp_slow_tlimit_threshold', 'slowdown')):
        limit = _celsius(gpu, name)
        if limit is not None and margin <= limit:
            return [health.Condition(
                'temperature', level, 'temperature T.Limit margin %d °C ≤ '
                '%s %d °C' % (margin, what, limit))]
    return []


def _power(gpu):
    for path in ('gpu_power_readings/power_draw', 'power_readings/power_draw'):
        value = _matched(_WATTS_RE, _text(gpu, path), float)
        if value is not None:
            return [health.Gauge('power', value, 'W')]
    return []


def _ecc(gpu):
    counts = [_text(gpu, 'ecc_errors/volatile/' + name)
              for name in UNCORRECTABLE]
    counts = [int(c) for c in counts if c and _COUNT_RE.fullmatch(c)]
    if not counts:
        return []  # ECC off, or not reported: N/A
    return [health.Counter('ecc_uncorrectable', sum(counts), 'unhealthy')]


def _yes(gpu, path):
    return (_text(gpu, path) or '').lower() == 'yes'


def _conditions(gpu):
    found = []
    if _yes(gpu, 'retired_pages/pending_blacklist') or \
            _yes(gpu, 'retired_pages/pending_retirement'):
        found.append(('retired_pages', 'degraded', 'retired_pages pending: '
                      'a GPU reset retires them'))
    if _yes(gpu, 'remapped_rows/remapped_row_failure'):
        found.append(('remapped_rows', 'unhealthy', 'remapped_rows failure: '
                      'no spare rows left, the GPU needs service'))
    elif _yes(gpu, 'remapped_rows/remapped_row_pending'):
        found.append(('remapped_rows', 'degraded', 'remapped_rows pending: '
                      'a GPU reset remaps them'))
    if _yes(gpu, 'gpu_reset_status/reset_required'):
        found.append(('reset_required', 'unhealthy', 'reset_required: the '
                      'GPU must be reset to be used again'))
    elif _yes(gpu, 'gpu_reset_status/drain_and_reset_recommended'):
        found.append(('reset_required', 'degraded',
                      'drain_and_reset_recommended'))
    action = _text(gpu, 'gpu_recovery_action')
    if action and action not in ('None', 'N/A'):
        found.append(('gpu_recovery_action', 'unhealthy',
                      'gpu_recovery_action %s' % action))
    return [health.Condition(*f) for f in found]


def _slowdowns(gpu):
    active = []
    for group, prefix in (('clocks_event_reasons', 'clocks_event_reason_'),
                          ('clocks_throttle_reasons',
                           'clocks_throttle_reason_')):
        for name in SLOWDOWNS:
            if _text(gpu, '%s/%s%s' % (group, prefix, name)) == 'Active':
                active.append(name)
    if not active:
        return []
    return [health.Condition('clocks_event_reasons', 'degraded',
                             'clocks_event_reasons %s active'
                             % ', '.join(active))]


def _link(gpu):
    widths = 'pci/pci_gpu_link_info/link_widths/'
    width = _matched(_WIDTH_RE, _text(gpu, widths + 'current_link_width'),
                     int)
    widest = _matched(_WIDTH_RE, _text(gpu, widths + 'max_link_width'), int)
    if width is None or not widest or width >= widest:
        return []
    return [health.Condition('link_width', 'degraded',
                             'link_width x%d < max x%d' % (width, widest))]


def gpu_readings(gpu):
    """The health readings of one <gpu> element."""
    return (_temperature(gpu) + _power(gpu) + _ecc(gpu) + _conditions(gpu) +
            _slowdowns(gpu) + _link(gpu))
