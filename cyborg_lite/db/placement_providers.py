"""Our resource providers as a conductor last read or wrote them in
Placement, each at a generation (the placement_providers table).

Placement bumps a provider's generation with every change of its
inventories, traits or allocations, so a (generation, inventories,
traits) read or written together stays true of that generation. A
conductor that lists a host's tree and finds a provider at a recorded
generation knows it without two GETs; this is what lets a conductor
publish a host another conductor (or itself before a restart) published
last for the price of one listing (placement/reporter.py).

Any true record will do, so writers do not coordinate: the last one
stays. A deleted provider's record goes with it, and a provider made
again (its uuid is derived from names, see placement/naming.py) overwrites
its record at creation, so an older incarnation's record never stands
for it.
"""
import collections
import json

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg_lite.common import canonical_json
from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db.sql import session

LOG = logging.getLogger(__name__)
# What a record not read or written costs is reads of Placement later,
# never a wrong write: the database being down must not fail a publish.
_DB_ERRORS = (exception.DatabaseUnavailable, sa.exc.DBAPIError)

Record = collections.namedtuple('Record',
                                ['generation', 'inventories', 'traits'])

_TABLE = models.PlacementProvider.__table__
_LOAD = sa.select(_TABLE).where(
    _TABLE.c.rp_uuid.in_(sa.bindparam('uuids', expanding=True)))
_FORGET = sa.delete(_TABLE).where(
    _TABLE.c.rp_uuid.in_(sa.bindparam('uuids', expanding=True)))
_CHANGING = ('generation', 'inventories', 'traits')


def _upsert(dialect_name):
    """INSERT that replaces the row of the same provider, per dialect."""
    if dialect_name == 'mysql':
        stmt = mysql.insert(_TABLE)
        return stmt.on_duplicate_key_update(
            {c: stmt.inserted[c] for c in _CHANGING})
    insert = {'postgresql': postgresql.insert,
              'sqlite': sqlite.insert}[dialect_name]
    stmt = insert(_TABLE)
    return stmt.on_conflict_do_update(
        index_elements=['rp_uuid'],
        set_={c: stmt.excluded[c] for c in _CHANGING})


_UPSERTS = {name: _upsert(name) for name in ('mysql', 'postgresql',
                                             'sqlite')}


def load(uuids, url=None):
    """{rp_uuid: Record} of those of ``uuids`` recorded."""
    if not uuids:
        return {}
    with session.core_reader(url) as conn:
        rows = conn.execute(_LOAD, {'uuids': sorted(uuids)}).all()
    return {row.rp_uuid: Record(row.generation, json.loads(row.inventories),
                                frozenset(json.loads(row.traits)))
            for row in rows}


def save(records, url=None):
    """Record ``{rp_uuid: Record}`` (or anything with the same three
    attributes), replacing what each had."""
    if not records:
        return
    params = [{'rp_uuid': uuid, 'generation': r.generation,
               'inventories': canonical_json.dumps(r.inventories),
               'traits': canonical_json.dumps(sorted(r.traits))}
              for uuid, r in sorted(records.items())]
    with session.core_writer(url) as conn:
        conn.execute(_UPSERTS[conn.dialect.name], params)


def forget(uuids, url=None):
    """Drop the records of ``uuids`` (providers deleted)."""
    if not uuids:
        return
    with session.core_writer(url) as conn:
        conn.execute(_FORGET, {'uuids': sorted(uuids)})


class Store:
    """The records of one database, as the Placement reporter uses them:
    a database error is logged and taken for "nothing recorded"."""

    def __init__(self, url=None):
        self.url = url

    def load(self, uuids):
        try:
            return load(uuids, self.url)
        except _DB_ERRORS as exc:
            LOG.warning('Recorded resource providers not read: %s', exc)
            return {}

    def save(self, records):
        """True when written."""
        try:
            save(records, self.url)
        except _DB_ERRORS as exc:
            LOG.warning('Resource providers not recorded: %s', exc)
            return False
        return True

    def forget(self, uuids):
        """True when dropped."""
        try:
            forget(uuids, self.url)
        except _DB_ERRORS as exc:
            LOG.warning('Records of deleted resource providers %s not '
                        'dropped: %s', sorted(uuids), exc)
            return False
        return True
