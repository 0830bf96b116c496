"""Microversions of the accelerator API (``OpenStack-API-Version``).

A request names its version as ``OpenStack-API-Version: accelerator 2.1``
(a bare ``2.1`` is accepted too, with a warning in the log); ``latest``
means the newest; no header, or one that names no accelerator version
(empty, a bare ``accelerator``, another service's), means the oldest, 2.0,
as microversion-parse reads it for Nova and Placement. A
version outside [min, max] is refused with 406 by ``MicroversionMiddleware``
before any handler runs. Handlers read the negotiated version with
``of(req)`` and compare with ``matches``::

    if microversion.of(req).matches('2.3'):
        body['status'] = device.status

To add a version: append it to VERSIONS with a comment saying what it adds.
Never change or remove an entry; clients depend on each one.
"""
import collections
import functools
import re

import microversion_parse
from oslo_log import log

from cyborg_lite.bitstreams import signatures
from cyborg_lite.common import exception

LOG = log.getLogger(__name__)

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'
ENVIRON_KEY = 'cyborg_lite.api_version'

VERSIONS = [
    '2.0',  # Initial version: devices, deployables, attributes,
            # device_profiles, accelerator_requests (Cyborg Train).
    '2.1',  # ARQs show project_id; admins may PATCH /project_id.
    '2.2',  # GET /device_profiles/{name}: a profile by name.
    '2.3',  # Devices show status (enabled / maintaining).
    '2.4',  # cyborg_lite's own routes: /v2/bitstreams, /v2/programs,
            # /v2/resource_provider_trees.
    '2.5',  # Devices show unavailable_reasons (maintaining, unhealthy,
            # agent_down, ...): why they are not offered or bound now;
            # deployables show device_state and cleaning_error (the
            # cleanup between tenants); POST /v2/deployables/{uuid}/clean;
            # GET /v2/resource_slices/{hostname}: a host's Kubernetes
            # ResourceSlices as the conductor would publish them.
    '2.6',  # Topology: devices and deployables show numa_node,
            # local_cpulist, socket, pcie_root and pci_bus_id; a bound
            # ARQ shows numa_aligned (true, false or unknown).
    '2.7',  # Devices and deployables show health (healthy, degraded,
            # unhealthy, recovering), health_reason and health_since;
            # enabling an unhealthy device is refused with 409.
    signatures.MICROVERSION,
            # Signed bitstreams: bitstreams show signature_status,
            # signer, key_id, signed_at;
            # /v2/bitstreams/{uuid}/signature (PUT, GET, DELETE);
            # /v2/trusted_keys (+ /revoke); /v2/signature_policies.
    '2.9',  # GET /v2/devices/{uuid}/history: a device's transitions
            # (DEVICE_HISTORY).
    '2.10',  # GET /v2/device_profiles/{name}/explain: why a profile's
             # groups get no accelerator (PROFILE_EXPLAIN).
    '2.11',  # GET /v2/programs/stats: programming seconds by project and
             # namespace; a history row shows seconds (PROGRAMMING_STATS).
    '2.12',  # GET /v2/services: each agent, conductor and API, its
             # release, RPC versions, state and last heartbeat (SERVICES).
    '2.13',  # ARQs show bind_waits_for: the region a BindStarted ARQ's
             # bind waits for, busy and running its function (BIND_WAITS).
]
# Where the topology fields start (one name, so renumbering is one line).
TOPOLOGY = '2.6'
# Where health starts (the same).
DEVICE_HEALTH = '2.7'
# Where GET /v2/devices/{uuid}/history starts (the same).
DEVICE_HISTORY = '2.9'
# Where GET /v2/device_profiles/{name}/explain starts (the same).
PROFILE_EXPLAIN = '2.10'
# Programming seconds by project: /v2/programs/stats, a history row's
# seconds.
PROGRAMMING_STATS = '2.11'
# Where GET /v2/services starts (the same).
SERVICES = '2.12'
# Where an ARQ shows the region its bind waits for (the same).
BIND_WAITS = '2.13'


class Version(collections.namedtuple('Version', ['major', 'minor'])):
    """A negotiated version; ``matches`` compares with 'X.Y' strings."""

    def __str__(self):
        return '%d.%d' % (self.major, self.minor)

    def matches(self, min_version=None, max_version=None):
        """True when min_version <= self <= max_version (bounds optional)."""
        if min_version and self < parse(min_version):
            return False
        if max_version and self > parse(max_version):
            return False
        return True


# NOTE: handlers compare with a few constant strings on every request
# (per row, in list views): each is parsed once.
@functools.lru_cache(maxsize=64)
def parse(text):
    """Version from 'X.Y'; ValueError for anything else."""
    try:
        parsed = microversion_parse.parse_version_string(text)
    except TypeError as exc:
        # NOTE: microversion_parse reports a bad string as TypeError.
        raise ValueError(str(exc))
    return Version(parsed.major, parsed.minor)


MIN_VERSION = parse(VERSIONS[0])
MAX_VERSION = parse(VERSIONS[-1])

# The newest version each release served: what [upgrade_levels]api pins
# to (api/version_pin.py), as Ironic's RELEASE_MAPPING 'api'. Add a
# release's line when it is cut.
RELEASED = {'2026.1.0': '2.9'}
# The pin in force in this process; None: MAX_VERSION.
_pinned = None


def min_version():
    return MIN_VERSION


def max_version():
    """The newest version served now: MAX_VERSION, or lower while
    [upgrade_levels]api pins it (a mixed API tier)."""
    pinned = _pinned
    return MAX_VERSION if pinned is None else min(pinned, MAX_VERSION)


def pin(version):
    """Serve no version newer than ``version`` (a Version; None: no
    pin)."""
    global _pinned
    _pinned = version


class NotAcceptableVersion(ValueError):
    """The requested version is malformed or outside [min, max]."""


# The header as a WSGI environ key (PEP 3333).
ENVIRON_HEADER = 'HTTP_' + HEADER.upper().replace('-', '_')


# A bare version: one "X.Y" or "latest" and nothing else.
_BARE_VERSION = re.compile(r'\s*(\d+\.\d+|latest)\s*',
                           re.IGNORECASE | re.ASCII)


def _requested(raw):
    """The version text ``raw`` (the header's value) asks us for; None
    when it names none, which is the minimum version.

    microversion-parse's reading, as Nova and Placement use it: only an
    "accelerator <version>" entry counts, so an empty header, a bare
    "accelerator" or another service's entry ("compute 2.90", as a client
    sharing headers sends) is no version. Ours adds a bare "2.1", with a
    warning.
    """
    text = microversion_parse.get_version({HEADER: raw},
                                          service_type=SERVICE_TYPE)
    if text is None and _BARE_VERSION.fullmatch(raw):
        text = raw.strip()
        LOG.warning("%s header without the service type; clients "
                    "should send '%s: %s <version>'.", HEADER, HEADER,
                    SERVICE_TYPE)
    return text


def negotiate(environ):
    """The Version a request asks for, from its WSGI environ."""
    # NOTE: only the one header, not every header folded into a dict by
    # microversion_parse (a twentieth of a small request's time).
    raw = environ.get(ENVIRON_HEADER)
    text = None if raw is None else _requested(raw)
    if text is None:
        return min_version()
    if text.strip().lower() == 'latest':
        return max_version()
    try:
        version = parse(text.strip())
    except ValueError:
        raise NotAcceptableVersion(
            'Invalid value %r for the %s header. The supported version '
            'range is: [%s, %s].' % (text, HEADER, min_version(),
                                     max_version()))
    if not min_version() <= version <= max_version():
        raise NotAcceptableVersion(
            'Version %s was requested but is not supported by this service. '
            'The supported version range is: [%s, %s].'
            % (version, min_version(), max_version()))
    return version


def of(req):
    """The negotiated Version of a webob request."""
    return req.environ.get(ENVIRON_KEY, MIN_VERSION)


def require(req, version, what):
    """Raise NotFound unless the request's version is ``version`` or later.

    A route newer than the asked version does not exist for that client,
    as Placement answers; the message says which version adds it, so the
    404 is not mistaken for a missing object.
    """
    if not of(req).matches(version):
        raise exception.NotFound(
            message='%s needs API version %s or later (send '
                    '"%s: %s %s"); this request is version %s.'
                    % (what, version, HEADER, SERVICE_TYPE, version,
                       of(req)))


def response_headers(version):
    """Headers every response carries (the negotiated one when known), a
    tuple of (name, value)."""
    return _headers(version, max_version())


# NOTE: every response carries them: made once for each version (and
# maximum: a pin moves it).
@functools.lru_cache(maxsize=64)
def _headers(version, newest):
    headers = ((MIN_HEADER, str(min_version())),
               (MAX_HEADER, str(newest)),
               ('Vary', HEADER))
    if version is not None:
        headers += ((HEADER, '%s %s' % (SERVICE_TYPE, version)),)
    return headers
