"""Two conductors take the same bind the API recorded, on PostgreSQL,
with the first one's transaction held open after its UPDATE: the
second read the row before that commit (no conductor had taken it), so
only the version in its UPDATE's WHERE clause can refuse it.
"""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.db import arq_binds
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind

pytestmark = pytest.mark.postgresql


def test_two_conductors_taking_one_recorded_bind(pg_db, monkeypatch):
    region, arq_uuid = h.make_region(), h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    recorded = h.get_arq(arq_uuid)
    held, take = Held(), arq_binds._take_bind

    def take_and_hold(s, arq, conductor):
        version = take(s, arq, conductor)
        if conductor == 'cond-a':
            held.hold()      # its UPDATE done, its transaction open
        return version
    monkeypatch.setattr(arq_binds, '_take_bind', take_and_hold)

    results = blocked_behind(
        held, lambda: arq_binds.begin_binds({arq_uuid: binding}, 'cond-a'),
        lambda: arq_binds.begin_binds({arq_uuid: binding}, 'cond-b'))

    [started], refused = results['first']
    assert (started.uuid, started.version, refused) == (
        arq_uuid, recorded.version + 1, {})
    assert results['second'][0] == [], results['second']
    state, why = results['second'][1][arq_uuid]
    assert state == 'BindStarted'
    assert isinstance(why, exception.ARQStateConflict)
    assert 'changed meanwhile' in str(why)
    taken = h.get_arq(arq_uuid)
    assert (taken.bind_taken_by, taken.version) == ('cond-a',
                                                    recorded.version + 1)
