"""Engines, URL validation and transactions."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import session


@pytest.mark.parametrize('url', ['foo://x/y', 'not a url', 'oracle://u@h/d'])
def test_unknown_db_url_is_a_clear_error(url):
    with pytest.raises(exception.DatabaseURLError) as info:
        session.validate_url(url)
    assert url in str(info.value)


def test_sqlite_in_missing_directory_is_a_clear_error(tmp_path, conf):
    url = 'sqlite:///%s/nope/db.sqlite' % tmp_path
    with pytest.raises(exception.DatabaseURLError, match='does not exist'):
        session.create_engine(url)


def _device(uuid):
    return models.Device(uuid=uuid, type='GPU', vendor='10de', model='m',
                         hostname='h', driver_name='nvidia', identity=uuid)


def test_writer_rolls_back_everything_on_error(db):
    with pytest.raises(RuntimeError):
        with session.writer() as s:
            s.add(_device('a'))
            s.flush()
            raise RuntimeError('boom')
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def test_reader_commits_nothing(db):
    with session.reader() as s:
        s.add(_device('b'))
        s.flush()
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def test_stale_version_is_detected(db):
    with session.writer() as s:
        s.add(_device('c'))
    with session.reader() as s:
        stale = s.scalars(sa.select(models.Device)).one()
    with session.writer() as s:
        fresh = s.scalars(sa.select(models.Device)).one()
        fresh.model = 'new'
    with pytest.raises(sa.orm.exc.StaleDataError):
        with session.writer() as s:
            stale = s.merge(stale, load=False)
            stale.model = 'lost update'
    with session.reader() as s:
        assert s.scalars(sa.select(models.Device)).one().model == 'new'
