"""The bind workflow's programmer: a region that must be programmed
first (the programmer here loads it before it returns; the conductor's
starts a job, tests/unit/conductor/test_bind_resume.py)."""
import sqlalchemy as sa

from cyborg_lite.conductor import bind
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h

FN = '3afb0000-aaaa-bbbb-cccc-000000000001'


def _arq_wanting(groups):
    return h.make_arq(profile_id=h.make_profile(groups))


def _bind(arq_uuid, region, program=None):
    notifier = h.RecordingNotifier()
    state = bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                           notifier=notifier, programmer=program)
    return state[arq_uuid], h.get_arq(arq_uuid)


def _load_function(deployable_uuid, function_id):
    with session.writer() as s:
        s.execute(sa.update(models.Deployable)
                  .where(models.Deployable.uuid == deployable_uuid)
                  .values(function_id=function_id))


def test_loaded_function_needs_no_programming(db):
    # Same id as the hardware prints it: upper case, no dashes.
    region = h.make_region(function_id=FN.replace('-', '').upper())
    arq_uuid = _arq_wanting([{'resources:FPGA': '1',
                              'accel:function_id': FN}])

    def program(ctxt, **kwargs):
        raise AssertionError('programmed a region that was ready')
    assert _bind(arq_uuid, region, program)[0] == 'Bound'


def test_missing_function_without_programmer_fails_clearly(db):
    region = h.make_region(function_id='other')
    arq_uuid = _arq_wanting([{'resources:FPGA': '1',
                              'accel:function_id': FN}])
    state, arq = _bind(arq_uuid, region)
    assert state == 'BindFailed'
    assert 'must be programmed with function_id %s' % FN in arq.error
    assert 'no programmer is configured' in arq.error
    assert not h.handles_of(region)[0].in_use


def test_programmer_is_called_then_bind_completes(db):
    region = h.make_region(function_id=None)
    arq_uuid = _arq_wanting([{'resources:FPGA': '1'},
                             {'resources:FPGA': '1',
                              'accel:bitstream_id': ' bs-1 '}])
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid)
                  .values(device_profile_group_id=1))
    calls = []

    def program(ctxt, **kwargs):
        calls.append(kwargs)
        with session.writer() as s:
            s.execute(sa.update(models.Deployable)
                      .where(models.Deployable.uuid
                             == kwargs['deployable_uuid'])
                      .values(bitstream_id=kwargs['bitstream_id']))
    state, arq = _bind(arq_uuid, region, program)
    assert state == 'Bound' and arq.attach_handle_id is not None
    assert calls == [{'arq_uuid': arq_uuid, 'bitstream_id': 'bs-1',
                      'deployable_uuid': region['deployable_uuid']}]


def test_programming_error_fails_the_bind(db):
    region = h.make_region()
    arq_uuid = _arq_wanting([{'accel:function_id': FN}])

    def program(ctxt, **kwargs):
        raise RuntimeError('fpgaconf exited 1')
    state, arq = _bind(arq_uuid, region, program)
    assert state == 'BindFailed' and 'fpgaconf exited 1' in arq.error


def test_region_still_wrong_after_programming_fails(db):
    region = h.make_region()
    arq_uuid = _arq_wanting([{'accel:function_id': FN}])
    state, arq = _bind(arq_uuid, region, lambda ctxt, **kw: None)
    assert state == 'BindFailed' and 'still lacks' in arq.error


def test_both_bitstream_and_function_is_refused(db):
    region = h.make_region()
    arq_uuid = _arq_wanting([{'accel:function_id': FN,
                              'accel:bitstream_id': 'bs-1'}])
    state, arq = _bind(arq_uuid, region, lambda ctxt, **kw: None)
    assert state == 'BindFailed' and 'mutually exclusive' in arq.error


def test_unbind_during_programming_wins(db):
    region = h.make_region()
    arq_uuid = _arq_wanting([{'accel:function_id': FN}])

    def program(ctxt, arq_uuid, deployable_uuid, function_id):
        # The instance went away while its region was being programmed.
        arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
        _load_function(deployable_uuid, function_id)
    state, arq = _bind(arq_uuid, region, program)
    assert (state, arq.state, arq.attach_handle_id) == (
        'Unbound', 'Unbound', None)
    assert not h.handles_of(region)[0].in_use
