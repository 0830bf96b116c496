"""Schema changes after a release only expand it: every table and column
the last release's code reads (its alembic head, releases.yaml) is still
there, under the same name, after the migrations of this release, and
each column they add to such a table can be left out by that code
(nullable or with a server default). Contract migrations (drop, rename)
wait for the release after (docs/deployment.md)."""
import ast
import os

import sqlalchemy as sa
import yaml

from cyborg_lite.db import migration
from cyborg_lite.db.sql import session

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
VERSIONS = os.path.join(ROOT, 'db', 'migrations', 'versions')
# Alembic calls that remove or rename what an older reader uses.
CONTRACTING = {'drop_table', 'drop_column', 'rename_table'}


def last_release():
    with open(os.path.join(ROOT, 'releases.yaml')) as f:
        return yaml.safe_load(f)['releases'][-1]


def _columns(url):
    inspector = sa.inspect(session.get_engine(url=url))
    return {table: {c['name']: c for c in inspector.get_columns(table)}
            for table in inspector.get_table_names()
            if table != 'alembic_version'}


def test_the_last_releases_tables_and_columns_all_stay(db_url, conf):
    migration.upgrade(str(last_release()['schema']), url=db_url)
    before = _columns(db_url)
    migration.upgrade(url=db_url)
    after = _columns(db_url)
    gone = sorted('%s.%s' % (t, c) for t, cols in before.items()
                  for c in cols if c not in after.get(t, {}))
    assert gone == [], 'dropped or renamed since the last release'
    required = sorted(
        '%s.%s' % (t, name) for t in before for name, col in after[t].items()
        if name not in before[t] and not col['nullable'] and
        col.get('default') is None)
    assert required == [], ('a column the last release cannot fill: make it '
                            'nullable or give it a server default')


def _later_scripts():
    first = int(last_release()['schema'])
    return sorted(name for name in os.listdir(VERSIONS)
                  if name.endswith('.py') and int(name[:4]) > first)


def _contracting_calls(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    upgrade = [node for node in tree.body
               if isinstance(node, ast.FunctionDef) and node.name == 'upgrade']
    found = []
    for node in ast.walk(upgrade[0]):
        if isinstance(node, ast.Call):
            name = getattr(node.func, 'attr', getattr(node.func, 'id', ''))
            if name in CONTRACTING or name == 'alter_column' and any(
                    k.arg == 'new_column_name' for k in node.keywords):
                found.append(name)
    return found


def test_no_migration_after_the_last_release_contracts():
    scripts = _later_scripts()
    assert scripts, 'this release has migrations (0016 at least)'
    assert {name: _contracting_calls(os.path.join(VERSIONS, name))
            for name in scripts} == {name: [] for name in scripts}
