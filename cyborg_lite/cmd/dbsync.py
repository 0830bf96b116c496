"""cyborg-lite-dbsync: create and migrate the database schema.

    cyborg-lite-dbsync [--config-file F] upgrade [REVISION]
    cyborg-lite-dbsync [--config-file F] downgrade REVISION
    cyborg-lite-dbsync [--config-file F] current
    cyborg-lite-dbsync [--config-file F] online_data_migrations \
        [--max-count N]

online_data_migrations (db/online_migrations.py) exits 0 when nothing is
left to migrate, 1 when --max-count stopped it with rows left (run it
again), 2 when a migration failed (the others still ran).
"""
import sys

from oslo_config import cfg

from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import migration
from cyborg_lite.db import online_migrations


def _add_commands(subparsers):
    up = subparsers.add_parser('upgrade', help='upgrade to a revision')
    up.add_argument('revision', nargs='?', default='head')
    up.set_defaults(func=lambda: _upgrade(CONF.command.revision))
    down = subparsers.add_parser('downgrade', help='downgrade to a revision')
    down.add_argument('revision')
    down.set_defaults(func=lambda: _downgrade(CONF.command.revision))
    cur = subparsers.add_parser('current', help='show the revision in use')
    cur.set_defaults(func=_current)
    odm = subparsers.add_parser(
        'online_data_migrations',
        help='fill what expand revisions left for old rows, in batches, '
             'while the services run')
    odm.add_argument('--max-count', type=_positive, default=None,
                     help='migrate at most this many rows, then exit 1 if '
                          'more are left (default: all, in batches)')
    odm.set_defaults(func=lambda: _online_data_migrations(
        CONF.command.max_count))


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


# Rows per batch (one transaction each) when --max-count is not given.
BATCH = 50


def _positive(text):
    value = int(text)
    if value < 1:
        raise ValueError('--max-count must be 1 or more')
    return value


def _online_data_migrations(max_count):
    """Exit status: 0 done, 1 more to do, 2 a migration failed."""
    totals = {}
    errors = {}
    while True:
        batch = BATCH if max_count is None else max_count
        results = online_migrations.run(batch)
        moved = 0
        for name, found, done, error in results:
            if error:
                errors[name] = error
            else:
                totals.setdefault(name, [found, 0])[1] += done
            moved += done
        if max_count is not None or moved == 0:
            break
    print('%-28s %10s %10s' % ('migration', 'found', 'done'))
    for name, (found, done) in totals.items():
        print('%-28s %10d %10d' % (name, found, done))
    for name, error in errors.items():
        print('%-28s error: %s' % (name, error))
    if errors:
        return 2
    left = sum(online_migrations.remaining().values())
    return 1 if left else 0


COMMAND_OPT = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_commands)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if 'command' not in CONF:
        CONF.register_cli_opt(COMMAND_OPT)
    try:
        config.parse_args(argv, setup_logging=False)
        status = CONF.command.func()
    except exception.CyborgLiteException as exc:
        print('cyborg-lite-dbsync: error: %s' % exc, file=sys.stderr)
        return 1
    except Exception as exc:  # a DB that refuses us, for instance
        print('cyborg-lite-dbsync: error: %s: %s'
              % (type(exc).__name__, exc), file=sys.stderr)
        return 1
    return status or 0


if __name__ == '__main__':
    sys.exit(main())
