"""The ARQ state matrix: every legal transition, and refusals of the rest."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conductor import bind
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from tests.unit.conductor import bind_helpers as h


@pytest.mark.parametrize('target',
                         sorted(states.ARQ_STATES_TRANSFORM_MATRIX))
def test_each_source_state_is_allowed_or_refused(db, target):
    allowed = states.ARQ_STATES_TRANSFORM_MATRIX[target]
    profile = h.make_profile()
    for source in models.ARQ_STATES:
        arq_uuid = h.make_arq(profile_id=profile, state=source)
        before = h.get_arq(arq_uuid)
        if source in allowed:
            version = arqs_db.transition(arq_uuid, target)
            after = h.get_arq(arq_uuid)
            assert (after.state, after.version) == (target, version)
            assert version == before.version + 1
        else:
            with pytest.raises(exception.ARQStateConflict) as info:
                arqs_db.transition(arq_uuid, target)
            assert source in str(info.value) and target in str(info.value)
            after = h.get_arq(arq_uuid)
            assert (after.state, after.version) == (source, before.version)


def test_matrix_is_cyborgs():
    assert states.ARQ_STATES_TRANSFORM_MATRIX['BindStarted'] == (
        'Initial', 'Unbound')
    assert states.ARQ_STATES_TRANSFORM_MATRIX['Bound'] == ('BindStarted',)
    assert set(states.ARQ_STATES_TRANSFORM_MATRIX['Unbound']) == {
        'Initial', 'BindStarted', 'Bound', 'BindFailed'}
    assert set(states.ARQ_STATES_TRANSFORM_MATRIX['BindFailed']) == {
        'BindStarted', 'Bound'}
    assert 'UnbindFailed' not in \
        states.ARQ_STATES_TRANSFORM_MATRIX['Deleting']


def test_a_changed_version_is_refused(db):
    arq_uuid = h.make_arq()
    seen = h.get_arq(arq_uuid).version
    arqs_db.transition(arq_uuid, 'Unbound')
    with pytest.raises(exception.ARQStateConflict):
        arqs_db.transition(arq_uuid, 'BindStarted', expected_version=seen)
    assert h.get_arq(arq_uuid).state == 'Unbound'


def test_unknown_arq_is_not_found(db):
    with pytest.raises(exception.ARQNotFound):
        arqs_db.transition('00000000-0000-0000-0000-000000000000', 'Unbound')


@pytest.mark.parametrize('target', ['Unbound', 'BindFailed'])
def test_leaving_bound_frees_the_handle(db, target):
    region = h.make_region()
    arq_uuid = h.make_arq()
    bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                   notifier=h.RecordingNotifier())
    assert h.handles_of(region)[0].in_use
    arqs_db.transition(arq_uuid, target)
    assert h.get_arq(arq_uuid).attach_handle_id is None
    assert not h.handles_of(region)[0].in_use
    h.check_no_handle_double_use()
