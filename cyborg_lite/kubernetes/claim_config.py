"""Our opaque configuration in a ResourceClaim or DeviceClass.

A claim (or the class it names) asks for a bitstream with::

    config:
    - opaque:
        driver: cyborg-lite.openstack.org
        parameters:
          apiVersion: cyborg-lite.openstack.org/v1alpha1
          kind: FpgaConfig
          bitstreamID: 1c5b5e0c-...     # or functionID: d8424dc4...
          force: false                  # optional: as `program --force`

Exactly one of ``bitstreamID`` and ``functionID``; nothing else. A bad
object is a per-claim error and nothing is changed. In the allocation the
class's entries come before the claim's; the last entry that applies to a
device's request wins, as in Kubernetes' own drivers.
"""
import dataclasses
import re
import uuid

API_VERSION_SUFFIX = '/v1alpha1'
KIND = 'FpgaConfig'
_FUNCTION_ID_RE = re.compile(r'[0-9A-Za-z][0-9A-Za-z._:-]{0,63}')
_FIELDS = {'apiVersion', 'kind', 'bitstreamID', 'functionID', 'force'}
_SOURCE_ORDER = {'FromClass': 0, 'FromClaim': 1}


class ConfigError(ValueError):
    """The claim's configuration for our driver is not valid."""


@dataclasses.dataclass(frozen=True)
class FpgaConfig:
    """What a claim asks to be loaded in the device before it is used."""
    bitstream_id: str | None = None
    function_id: str | None = None
    force: bool = False

    def to_dict(self):
        return dataclasses.asdict(self)


def api_version(driver_name):
    return driver_name + API_VERSION_SUFFIX


def parse(parameters, driver_name):
    """An FpgaConfig from the ``opaque.parameters`` object; ConfigError."""
    if not isinstance(parameters, dict):
        raise ConfigError('opaque parameters must be an object')
    unknown = set(parameters) - _FIELDS
    if unknown:
        raise ConfigError('unknown field(s) %s in %s'
                          % (', '.join(sorted(unknown)), KIND))
    if parameters.get('apiVersion') != api_version(driver_name) or \
            parameters.get('kind') != KIND:
        raise ConfigError('expected apiVersion %s and kind %s, got %r and %r'
                          % (api_version(driver_name), KIND,
                             parameters.get('apiVersion'),
                             parameters.get('kind')))
    has_bitstream = 'bitstreamID' in parameters
    if has_bitstream == ('functionID' in parameters):
        raise ConfigError('%s needs exactly one of bitstreamID and '
                          'functionID' % KIND)
    force = parameters.get('force', False)
    if not isinstance(force, bool):
        raise ConfigError('force must be true or false, got %r' % (force,))
    if has_bitstream:
        return FpgaConfig(bitstream_id=_uuid(parameters['bitstreamID']),
                          force=force)
    function_id = parameters['functionID']
    if not isinstance(function_id, str) or \
            not _FUNCTION_ID_RE.fullmatch(function_id):
        raise ConfigError('functionID must be an id of at most 64 letters, '
                          'digits and . _ : -, got %r' % (function_id,))
    return FpgaConfig(function_id=function_id, force=force)


def _uuid(value):
    try:
        if not isinstance(value, str):
            raise ValueError
        parsed = uuid.UUID(value)
    except ValueError:
        raise ConfigError('bitstreamID must be a uuid, got %r' % (value,))
    if str(parsed) != value.lower():
        raise ConfigError('bitstreamID must be a uuid in its usual '
                          'form, got %r' % (value,))
    return str(parsed)


def programmed_condition(driver_name):
    """The binding condition our regions are published with (KEP-5007):
    True once the region runs what the claim asked for."""
    return driver_name + '/programmed'


def programming_failed_condition(driver_name):
    return driver_name + '/programming-failed'


def bound_when_programmed(result, driver_name):
    """Whether an allocation result waited for our binding condition: the
    scheduler copies a device's bindingConditions into the result only
    where the cluster has DRADeviceBindingConditions."""
    return programmed_condition(driver_name) in (
        result.get('bindingConditions') or ())


def _applies(entry_requests, request):
    """Whether a config entry for ``requests`` covers a result's request
    (``main`` or a subrequest ``main/sub`` of firstAvailable)."""
    if not entry_requests:
        return True
    return request in entry_requests or \
        request.split('/', 1)[0] in entry_requests


def for_request(allocation_config, request, driver_name):
    """The FpgaConfig that applies to one allocated request, or None.

    Every entry of our driver is validated, not only the winner, so a
    mistake never waits for the day it would have applied."""
    ours = [entry for entry in allocation_config or []
            if (entry.get('opaque') or {}).get('driver') == driver_name]
    ours.sort(key=lambda e: _SOURCE_ORDER.get(e.get('source'), 1))
    chosen = None
    for entry in ours:
        parsed = parse(entry['opaque'].get('parameters'), driver_name)
        if _applies(entry.get('requests') or [], request):
            chosen = parsed
    return chosen
