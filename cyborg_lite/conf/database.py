"""Options of the [database] group."""
from oslo_config import cfg

GROUP = cfg.OptGroup('database', title='Database options')

OPTS = [
    cfg.StrOpt('connection',
               secret=True,
               default='sqlite:///$state_path/cyborg_lite.sqlite',
               help='SQLAlchemy URL of the database. SQLite is the embedded '
                    'default; PostgreSQL (postgresql://user:pw@host/db) and '
                    'MySQL (mysql+pymysql://...) are the production '
                    'targets.'),
    cfg.BoolOpt('connection_debug',
                default=False,
                help='Log every SQL statement (SQLAlchemy echo).'),
    cfg.IntOpt('pool_size',
               default=10,
               min=1,
               max=1000,
               help='Connections kept open per process (not SQLite).'),
    cfg.StrOpt('sqlite_journal_mode',
               default='wal',
               choices=[('wal', 'write-ahead log with synchronous=NORMAL: '
                                'readers never wait for the writer and a '
                                'commit does not fsync; a power loss may '
                                'drop the last commits, a crash does not'),
                        ('delete', "SQLite's default rollback journal with "
                                   'synchronous=FULL: an fsync per commit')],
               help='Journal of a SQLite database (ignored for other '
                    'backends). bench/sqlite_writers.py measures both.'),
    # NOTE: oslo.db's names and defaults, which operators know.
    cfg.IntOpt('max_retries',
               default=10,
               min=-1,
               help='How many more times a service starting (the '
                    'conductor) tries to reach the database when it cannot, '
                    'before it exits with status 1; -1 tries forever. A '
                    'database that answers but is not migrated fails at '
                    'once.'),
    cfg.IntOpt('retry_interval',
               default=10,
               min=1,
               max=3600,
               help='Seconds between those tries.'),
    cfg.IntOpt('sqlite_busy_timeout_ms',
               default=30000,
               min=0,
               max=3600 * 1000,
               help='How long a SQLite writer waits for the lock before '
                    'failing, in milliseconds.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
