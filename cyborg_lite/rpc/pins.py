"""[upgrade_levels]: the version cap of an RPC client during an upgrade.

A client capped at a version sends nothing newer (oslo.messaging raises
RPCVersionCapError instead); each client method asks
``can_send_version`` and falls back to what an older peer takes. Pure:
``auto`` gets the running peers from its caller (db/services.py).
"""
import re

from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.rpc import transport
from cyborg_lite.rpc import versions

_RPC_VERSION = re.compile(r'^[1-9][0-9]*\.(0|[1-9][0-9]*)$')


class InvalidLevel(ValueError):
    """An [upgrade_levels] value that names no release or version."""


def version_cap(topic, level, running=None):
    """The cap for clients of ``topic`` under ``level`` (an
    [upgrade_levels] value); None: no cap.

    ``running``: for ``auto``, a callable returning the RPC versions
    ({topic: version}, or None for a service of a release that records
    none: common/version.UNRECORDED_RELEASE) of every running service of
    that topic.
    None of them running: no cap (a fresh deployment; nothing older to
    wait for).
    """
    if not level:
        return None
    if level == 'auto':
        return _oldest(topic, running())
    if level in versions.RELEASED:
        return versions.RELEASED[level][topic]
    if _RPC_VERSION.match(level):
        newest = versions.spoken()[topic]
        if _key(level) > _key(newest):
            raise InvalidLevel('%s is newer than this '
                               'code speaks on %s (%s)'
                               % (level, topic, newest))
        return level
    raise InvalidLevel('%r is neither "auto", a release '
                       '(%s) nor an RPC version like "1.8"'
                       % (level, ', '.join(sorted(versions.RELEASED))))


def check(conf):
    """ConfigError for an [upgrade_levels] value that cannot pin (``auto``
    passes without reading who runs): what a service checks at start, so
    a release name it does not know fails it there, not its first
    message. (The option's regex refused other shapes already.)"""
    for topic, option in ((transport.CONDUCTOR_TOPIC, 'conductor'),
                          (transport.AGENT_TOPIC, 'agent')):
        level = conf.upgrade_levels[option]
        if level == 'auto':
            continue
        try:
            version_cap(topic, level)
        except InvalidLevel as exc:
            where = getattr(conf.get_location(option, 'upgrade_levels'),
                            'detail', None)
            raise exception.ConfigError(
                reason='[upgrade_levels] %s%s is not valid: %s'
                % (option, ' in %s' % where if where else '', exc))


def _oldest(topic, peers):
    if not peers:
        return None
    silent = versions.RELEASED[version.UNRECORDED_RELEASE][topic]
    spoken = [(peer or {}).get(topic) or silent for peer in peers]
    return min(spoken, key=_key)


def _key(rpc_version):
    major, minor = rpc_version.split('.')
    return int(major), int(minor)
