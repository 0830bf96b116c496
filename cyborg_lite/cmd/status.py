"""cyborg-lite-status: ``upgrade check`` (oslo.upgradecheck), what an
operator runs before and during an upgrade.

    cyborg-lite-status [--config-file F ...] upgrade check [--json]
    cyborg-lite-status --version

Exit status as oslo.upgradecheck defines it: 0 every check passed, 1 a
warning to read, 2 a failure to fix first, 255 a check that could not
run. The checks: the schema is at head, no service runs a release older
than the previous one (common/version.PREVIOUS_RELEASE), Placement
offers the microversion this code sends (placement/client.MICROVERSION),
the online data migrations are done (db/online_migrations.py), and no
option of ours set in the configuration files is deprecated for removal
or unknown to this release.
"""
import configparser
import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.conf import opts as conf_opts
from cyborg_lite.db import migration
from cyborg_lite.db import online_migrations
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


def check_online_migrations():
    if migration.current() != migration.head():
        return Result(Code.WARNING, 'not checked: the schema is not at '
                      'head')
    left = {name: count for name, count in
            online_migrations.remaining().items() if count}
    if left:
        return Result(Code.WARNING, 'rows left to migrate (%s): run '
                      'cyborg-lite-dbsync online_data_migrations until it '
                      'exits 0, before the next release\'s schema'
                      % ', '.join('%s: %d' % item
                                  for item in sorted(left.items())))
    return Result(Code.SUCCESS, 'online data migrations done')


def check_options():
    """Options of ours set in the configuration files that this release
    deprecated for removal, or does not know (removed ones)."""
    ours = {str(group): {opt.dest for opt in opts}
            for group, opts in conf_opts.list_opts()}
    ours.setdefault('DEFAULT', set())
    found = []
    for group, opts in conf_opts.list_opts():
        for opt in opts:
            if opt.deprecated_for_removal and _set_in_files(opt.dest,
                                                            str(group)):
                found.append('[%s] %s is deprecated for removal%s'
                             % (group, opt.dest,
                                ': %s' % opt.deprecated_reason
                                if opt.deprecated_reason else ''))
    for group, option in _file_options():
        if group in ours and group != 'DEFAULT' and \
                option not in ours[group]:
            found.append('[%s] %s is not an option of this release '
                         '(removed?)' % (group, option))
    if found:
        return Result(Code.WARNING, '; '.join(sorted(set(found))))
    return Result(Code.SUCCESS, 'no deprecated or unknown option set')


def _set_in_files(name, group):
    location = CONF.get_location(name, None if group == 'DEFAULT'
                                 else group)
    return location is not None and \
        location.location == cfg.Locations.user


def _file_options():
    """(group, option) of every line of the configuration files."""
    parser = configparser.RawConfigParser(strict=False,
                                          default_section='\0none')
    parser.optionxform = str
    parser.read(CONF.config_file or [])
    return [(section, option) for section in parser.sections()
            for option in parser.options(section)]


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
        ('Online data migrations',
         lambda _self: check_online_migrations()),
        ('Deprecated or removed options', lambda _self: check_options()),
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ['--version']:
        print(version.VERSION)
        return 0
    return upgradecheck.main(CONF, project='cyborg_lite',
                             upgrade_command=Checks(), argv=argv)


if __name__ == '__main__':
    sys.exit(main())
