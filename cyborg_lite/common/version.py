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
