"""cyborg-lite-status: ``upgrade check`` (oslo.upgradecheck), what an
operator runs before and during an upgrade.

    cyborg-lite-status [--config-file F ...] upgrade check [--json]

Exit status as oslo.upgradecheck defines it: 0 every check passed, 1 a
warning to read, 2 a failure to fix first, 255 a check that could not
run. The checks: the schema is at head, no service runs a release older
than the previous one (common/version.PREVIOUS_RELEASE), and Placement
offers the microversion this code sends (placement/client.MICROVERSION).
"""
import sys

from oslo_upgradecheck import upgradecheck

from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.db import migration
from cyborg_lite.db import services as services_db
from cyborg_lite.placement import client as placement_client

Code = upgradecheck.Code
Result = upgradecheck.Result


def check_schema():
    current, head = migration.current(), migration.head()
    if current == head:
        return Result(Code.SUCCESS, 'schema at %s' % head)
    return Result(Code.FAILURE, 'the database is at revision %s, this code '
                  'needs %s: run cyborg-lite-dbsync upgrade' % (current, head))


def check_service_releases():
    if migration.current() != migration.head():
        # The services table may not be there yet (revision 0017).
        return Result(Code.WARNING, 'not checked: the schema is not at '
                      'head')
    too_old = ['%s %s runs %s' % (s['kind'], s['host'],
                                  s['release'] or version.UNRECORDED_RELEASE)
               for s in services_db.list_all()
               if version.too_old(s['release'])]
    if too_old:
        return Result(Code.FAILURE, 'older than the previous release %s '
                      '(upgrade them to it first): %s'
                      % (version.PREVIOUS_RELEASE, '; '.join(too_old)))
    return Result(Code.SUCCESS, 'every service runs %s or newer'
                  % version.PREVIOUS_RELEASE)


def check_placement_microversion():
    if CONF.placement.auth_type is None:
        return Result(Code.WARNING, '[placement] is not configured: '
                      'Placement not asked')
    needed = placement_client.MICROVERSION
    client = placement_client.PlacementClient.from_conf(CONF)
    resp = client.adapter.get('/', raise_exc=False)
    if resp.status_code != 200:
        return Result(Code.FAILURE, 'Placement answered GET / with %s'
                      % resp.status_code)
    newest = max(v['max_version'] for v in resp.json()['versions'])
    if _mv(newest) < _mv(needed):
        return Result(Code.FAILURE, 'Placement offers microversions up to '
                      '%s; this code needs %s' % (newest, needed))
    return Result(Code.SUCCESS, 'Placement offers %s (needed %s)'
                  % (newest, needed))


def _mv(text):
    major, minor = text.split('.')
    return int(major), int(minor)


class Checks(upgradecheck.UpgradeCommands):
    # oslo.upgradecheck calls each with the Checks instance.
    _upgrade_checks = (
        ('Database schema', lambda _self: check_schema()),
        ('Service releases', lambda _self: check_service_releases()),
        ('Placement microversion',
         lambda _self: check_placement_microversion()),
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return upgradecheck.main(CONF, project='cyborg_lite',
                             upgrade_command=Checks(), argv=argv)


if __name__ == '__main__':
    sys.exit(main())
