"""[upgrade_levels]api: during a mixed API tier every API serves the
microversions of the oldest, so a client sent to any of them never sees
the maximum go backwards (Ironic pins its API by release the same way).

``refresh`` sets api/microversion's pin: at an API process's start,
before it serves, and after each of its heartbeats (api/
service_heartbeat.py), so ``auto`` lifts once the last older API has
stopped beating.
"""
from oslo_log import log
from packaging import version as pep440

from cyborg_lite.api import microversion
from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.db import services as services_db

LOG = log.getLogger(__name__)


def newest_served(release):
    """The newest microversion an API of ``release`` (None: one that
    records none, common/version.UNRECORDED_RELEASE) serves."""
    release = release or version.UNRECORDED_RELEASE
    if release in microversion.RELEASED:
        return microversion.parse(microversion.RELEASED[release])
    if pep440.Version(release) >= pep440.Version(version.VERSION):
        return microversion.MAX_VERSION
    # A fix release serves its series' versions: the newest release
    # recorded at or below it.
    older = [r for r in microversion.RELEASED
             if pep440.Version(r) <= pep440.Version(release)]
    if not older:
        return microversion.MIN_VERSION
    return microversion.parse(microversion.RELEASED[
        max(older, key=pep440.Version)])


def resolve(level, running=None):
    """The pin of ``level``; None: none. ``running``: for ``auto``, a
    callable returning the releases of the running APIs."""
    if not level:
        return None
    if level == 'auto':
        releases = running()
        return min(map(newest_served, releases)) if releases else None
    if level in microversion.RELEASED:
        return microversion.parse(microversion.RELEASED[level])
    if level in microversion.VERSIONS:
        return microversion.parse(level)
    raise exception.ConfigError(
        reason='[upgrade_levels] api %r is neither "auto", a release (%s) '
               'nor a microversion this API serves (%s to %s)'
        % (level, ', '.join(sorted(microversion.RELEASED)),
           microversion.MIN_VERSION, microversion.MAX_VERSION))


def check(conf=CONF):
    """ConfigError for a value that cannot pin; what cyborg-lite-api
    checks at start."""
    if conf.upgrade_levels.api != 'auto':
        resolve(conf.upgrade_levels.api)


def refresh(conf=CONF):
    """Pin this process's microversions as [upgrade_levels]api says now."""
    pinned = resolve(conf.upgrade_levels.api, lambda: [
        s['release'] for s in services_db.list_all()
        if s['kind'] == 'api' and
        s['heartbeat_age'] < conf.conductor.agent_down_time])
    before = microversion.max_version()
    microversion.pin(pinned)
    if microversion.max_version() != before:
        LOG.info('API microversions served now: up to %s',
                 microversion.max_version())
    return pinned


def refresh_or_hold(conf=CONF):
    """``refresh``; when the services cannot be read, the pin stays, or
    at first (none yet under ``auto``) is the previous release's, the
    lowest an API beside this one may serve."""
    try:
        return refresh(conf)
    except Exception as exc:   # the database down: the next beat tries
        LOG.warning('API microversion pin not refreshed: %s', exc)
        if conf.upgrade_levels.api == 'auto' and \
                microversion.max_version() == microversion.MAX_VERSION:
            microversion.pin(newest_served(version.PREVIOUS_RELEASE))
        return None
