"""db/device_history.mean_durations: what a bind that could wait for a
busy region reads of its device's recent history (conductor/bind_wait.py):
programming seconds, holds (an ARQ's bind to its release), cleans (a
try's start to its end), each paired by its object."""
import datetime

from cyborg_lite.db import device_history
from cyborg_lite.db import models
from cyborg_lite.db.sql import session

T0 = datetime.datetime(2026, 12, 7, 3, 0, 0)


def _rows(device_uuid, *rows):
    """(seconds after T0, event, object uuid[, job seconds]) rows."""
    with session.writer() as s:
        for at, event, obj, *seconds in rows:
            s.add(models.DeviceHistory(
                device_uuid=device_uuid, deployable_uuid='r1', event=event,
                object_uuid=obj, seconds=seconds[0] if seconds else None,
                created_at=T0 + datetime.timedelta(seconds=at)))


def test_each_kind_is_the_mean_of_its_spans_on_the_device(sqlite_db):
    _rows('dev1',
          (0, 'programming_job.program.end', 'job1', 20.0),
          (1, 'arq.bind.end', 'arq1'), (5, 'arq.unbind', 'arq1'),
          (5, 'deployable.clean.start', 'try1'),
          (6, 'deployable.clean.end', 'try1'),
          # The same ARQ bound again, then deleted: a span of its own.
          (10, 'arq.bind.end', 'arq1'), (12, 'arq.delete', 'arq1'),
          (12, 'deployable.clean.start', 'try2'),
          (15, 'deployable.clean.end', 'try2'),
          (16, 'programming_job.program.end', 'job2', 30.0),
          # A release whose bind's row was pruned, and a hold going on.
          (17, 'arq.unbind', 'arq-old'), (18, 'arq.bind.end', 'arq2'))
    _rows('dev2', (0, 'arq.bind.end', 'arq9'), (100, 'arq.delete', 'arq9'))

    found = device_history.mean_durations('dev1')

    assert found == device_history.Durations(program=25.0, hold=3.0,
                                              clean=2.0)


def test_nothing_known_of_a_kind_is_none(sqlite_db):
    _rows('dev1', (0, 'arq.bind.end', 'arq1'))
    assert device_history.mean_durations('dev1') == \
        device_history.Durations(None, None, None)
