"""cyborg-lite-dbsync: create and migrate the database schema.

    cyborg-lite-dbsync [--config-file F] upgrade [REVISION]
    cyborg-lite-dbsync [--config-file F] downgrade REVISION
    cyborg-lite-dbsync [--config-file F] current
"""
import sys

from oslo_config import cfg

from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import migration


def _add_commands(subparsers):
    up = subparsers.add_parser('upgrade', help='upgrade to a revision')
    up.add_argument('revision', nargs='?', default='head')
    up.set_defaults(func=lambda: _upgrade(CONF.command.revision))
    down = subparsers.add_parser('downgrade', help='downgrade to a revision')
    down.add_argument('revision')
    down.set_defaults(func=lambda: _downgrade(CONF.command.revision))
    cur = subparsers.add_parser('current', help='show the revision in use')
    cur.set_defaults(func=_current)


def _upgrade(revision):
    before = migration.current()
    migration.upgrade(revision)
    after = migration.current()
    if before == after:
        print('Database already at revision %s; nothing to do.' % after)
    else:
        print('Database upgraded from %s to %s.' % (before or '<empty>',
                                                   after))


def _downgrade(revision):
    migration.downgrade(revision)
    print('Database now at revision %s.' % (migration.current() or
                                           '<empty>'))


def _current():
    rev = migration.current()
    print(rev or 'none (database not initialised)')


COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_commands)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if 'command' not in CONF:
        CONF.register_cli_opt(COMMAND_OPT)
    try:
        config.parse_args(argv, setup_logging=False)
        CONF.command.func()
    except exception.CyborgLiteException as exc:
        print('cyborg-lite-dbsync: error: %s' % exc, file=sys.stderr)
        return 1
    except Exception as exc:  # a DB that refuses us, for instance
        print('cyborg-lite-dbsync: error: %s: %s'
              % (type(exc).__name__, exc), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
