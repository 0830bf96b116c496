"""What release this code is, and which release it upgrades from.

Versions are ``YEAR.N.PATCH``: the Nth release cut from main in YEAR (as
OpenStack names its series 2026.1, 2026.2), PATCH for fixes on it. Code
between releases is the next one's ``.devN`` (PEP 440), so it compares
newer than the release it grew from and older than the one it becomes.
releases.yaml at the repository's root records each release's commit
(the git tag of the same name points at it too).

setup.cfg reads VERSION from here (``attr:``), so there is one home.
"""
VERSION = '2026.2.0.dev0'

# The release an upgrade to this code starts from: services of it may run
# beside this code; anything older must be upgraded to it first.
PREVIOUS_RELEASE = '2026.1.0'

# The release whose services record no release with their heartbeat (the
# services table came after it): a service saying none runs this one.
UNRECORDED_RELEASE = '2026.1.0'


def too_old(release):
    """Whether a service of ``release`` (None: UNRECORDED_RELEASE) is
    older than PREVIOUS_RELEASE, so it may not run beside this code."""
    from packaging import version as pep440
    return (pep440.Version(release or UNRECORDED_RELEASE) <
            pep440.Version(PREVIOUS_RELEASE))


def refuse_if_too_old(kind, host, release):
    """ServiceTooOld naming both releases when ``too_old(release)``."""
    from cyborg_lite.common import exception
    if too_old(release):
        raise exception.ServiceTooOld(
            kind=kind, host=host, release=release or UNRECORDED_RELEASE,
            oldest=PREVIOUS_RELEASE, this=VERSION)
