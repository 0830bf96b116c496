"""db/publish_requests.py: request ids only ever grow, on every backend.

``served`` deletes a host's requests up to the id a publish read before,
and ``published_hosts`` keeps the highest id served: both are right only
if a request added later has a higher id than any before it, even once
every request was served and deleted (SQLite hands out an emptied table's
ids again unless the table is AUTOINCREMENT).
"""
import sqlalchemy as sa

from cyborg_lite.db import migration
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session

HOST = 'node1'


def _add(hostname, reason='test'):
    with session.writer() as s:
        publish_requests.add(s, hostname, reason)
    return publish_requests.state(hostname).last_id


def test_ids_grow_after_every_request_was_served(db):
    _add(HOST)
    served_up_to = _add(HOST)
    publish_requests.served(HOST, served_up_to, 'publisher-a')
    assert publish_requests.pending() == {}

    again = _add(HOST)

    assert again > served_up_to


def test_a_publisher_serving_after_the_table_emptied_is_recorded(db):
    _add(HOST)
    publish_requests.served(HOST, _add(HOST), 'publisher-a')

    publish_requests.served(HOST, _add(HOST), 'publisher-b')

    assert publish_requests.state(HOST).publisher == 'publisher-b'


def test_a_slow_publish_does_not_delete_a_request_added_after_its_read(db):
    # Publisher A reads the host's state; B serves the host meanwhile and
    # the table empties; a new change then requests a publish. A's serve
    # (up to what it read) must leave the new request for a publish that
    # reads the new change.
    read_by_a = _add(HOST)
    publish_requests.served(HOST, read_by_a, 'publisher-b')
    _add(HOST, 'a change after A read the host')

    publish_requests.served(HOST, read_by_a, 'publisher-a')

    assert list(publish_requests.pending()) == [HOST]


def test_the_sqlite_upgrade_continues_above_every_id_used(tmp_path, conf):
    # A SQLite database at 0009 that served requests up to 57 and has one
    # pending: the first request after the upgrade must not reuse an id.
    sqlite_url = 'sqlite:///%s' % (tmp_path / 'at-0009.sqlite')
    migration.upgrade('0009', url=sqlite_url)
    with session.get_engine(sqlite_url).begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO published_hosts (hostname, publisher, request_id,"
            " updated_at) VALUES ('node1', 'publisher-a', 57,"
            " CURRENT_TIMESTAMP)"))
        conn.execute(sa.text(
            "INSERT INTO publish_requests (id, hostname, reason, created_at)"
            " VALUES (12, 'node2', 'pending', CURRENT_TIMESTAMP)"))
    conf.set_override('connection', sqlite_url, group='database')

    migration.upgrade(url=sqlite_url)

    try:
        assert publish_requests.pending() == {'node2': 12}
        assert _add(HOST) == 58
    finally:
        session.dispose_all()
