"""Schema migrations with alembic; the revisions live in db/migrations/."""
import contextlib
import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from cyborg_lite.common import exception
from cyborg_lite.db.sql import session

MIGRATIONS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), 'db', 'migrations')


def _config(url):
    if not os.path.isdir(MIGRATIONS_DIR):
        raise exception.ConfigError(
            reason='migrations not found at %s; install cyborg_lite from '
                   'its source tree (pip install -e .)' % MIGRATIONS_DIR)
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', MIGRATIONS_DIR)
    # NOTE: '%' must be escaped for configparser; passwords may carry it.
    cfg.set_main_option('sqlalchemy.url', url.replace('%', '%%'))
    return cfg


def _url(url):
    from cyborg_lite.conf import CONF
    url = url or CONF.database.connection
    session.validate_url(url)
    return url


@contextlib.contextmanager
def _migrating(url):
    """A connection in one transaction, for alembic.

    On SQLite, foreign keys are off meanwhile: a batch migration recreates
    a table (copy, drop, rename), and dropping the old table with them on
    would delete every row that refers to it (ON DELETE CASCADE). They are
    checked before the commit and on again after.
    """
    engine = session.get_engine(url)
    with engine.connect() as conn:
        raw = None
        if engine.dialect.name == 'sqlite':
            # NOTE: on the driver's connection, outside any transaction
            # (it autocommits): inside one SQLite ignores the pragma.
            raw = conn.connection.driver_connection
            raw.execute('PRAGMA foreign_keys=OFF')
        try:
            with conn.begin():
                yield conn
                if raw is not None:
                    broken = conn.exec_driver_sql(
                        'PRAGMA foreign_key_check').fetchall()
                    if broken:
                        raise RuntimeError('the migration left rows whose '
                                           'foreign keys point nowhere: %s'
                                           % broken[:10])
        finally:
            if raw is not None:
                raw.execute('PRAGMA foreign_keys=ON')


def upgrade(revision='head', url=None):
    """Upgrade to ``revision``; at that revision already, a no-op."""
    url = _url(url)
    with _migrating(url) as conn:
        cfg = _config(url)
        cfg.attributes['connection'] = conn
        command.upgrade(cfg, revision)


def downgrade(revision, url=None):
    url = _url(url)
    with _migrating(url) as conn:
        cfg = _config(url)
        cfg.attributes['connection'] = conn
        command.downgrade(cfg, revision)


def current(url=None):
    """The revision the database is at, or None when never migrated."""
    url = _url(url)
    with session.get_engine(url).connect() as conn:
        return alembic_migration.MigrationContext.configure(
            conn).get_current_revision()


def head():
    return alembic_script.ScriptDirectory.from_config(
        _config('sqlite://')).get_current_head()
