"""A heartbeat that lands between the mark-down's SELECT of silent hosts
and its UPDATE, made so deterministically: the mark-down is held at its
UPDATE (db/sql/conditional.before_update) while the heartbeat commits. The
UPDATE repeats the silence condition, so the host that just beat stays
up, and nobody is asked to publish it down.
"""
import threading

import sqlalchemy as sa

from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from tests.unit.db.test_races import _age_heartbeat


def test_a_heartbeat_between_the_mark_downs_select_and_update(
        server_db, monkeypatch):
    agents_db.heartbeat('host1')
    _age_heartbeat('host1', 120)
    selected, release = threading.Event(), threading.Event()
    in_mark_down = threading.local()

    def hold(table):
        if table == 'agents' and getattr(in_mark_down, 'on', False):
            selected.set()         # host1 read as silent; not written yet
            release.wait(30)
    monkeypatch.setattr(conditional, 'before_update', hold)
    moved = []

    def mark_down():
        in_mark_down.on = True
        moved.append(agents_db.mark_silent_down(60))
    thread = threading.Thread(target=mark_down)
    thread.start()
    try:
        assert selected.wait(30)
        assert agents_db.heartbeat('host1') is False   # up, and beating
    finally:
        release.set()
        thread.join(30)

    assert moved == [[]]
    assert agents_db.get('host1').state == 'up'
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(
            models.PublishRequest)) == 0
