"""db/cleaning.py on SQLite, PostgreSQL and MariaDB: the cleaning state of
regions, moved only by conditional UPDATEs on the state (and try) they
were decided on."""
import datetime
import functools

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import report
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.conductor import bind_helpers as h
from tests.unit.conductor import report_helpers as rh


def _bind(region, hostname='host1'):
    arq_uuid = h.make_arq()
    result = bind.bind_arqs(None, {arq_uuid: h.binding(region, hostname)},
                            notifier=h.RecordingNotifier())
    return arq_uuid, result[arq_uuid]


def _region(region):
    with session.reader() as s:
        return s.get(models.Deployable, region['deployable_id'])


def _state(region):
    return _region(region).device_state


def _released(handles=1):
    """A region whose tenant just unbound it: pending_cleaning."""
    region = h.make_region(handles=handles)
    arq_uuid, state = _bind(region)
    assert state == 'Bound'
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    return region


def test_bind_allocates_and_unbind_releases_in_its_transaction(db):
    region = h.make_region()
    assert _state(region) == 'available'
    arq_uuid, state = _bind(region)
    assert (state, _state(region)) == ('Bound', 'allocated')

    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])

    assert _state(region) == 'pending_cleaning'
    assert not h.handles_of(region)[0].in_use


def test_release_fails_with_the_unbind_that_frees_the_handle(
        db, monkeypatch):
    region = h.make_region()
    arq_uuid, _state_ = _bind(region)

    def broken(s, handle_id):
        raise RuntimeError('database went away')
    monkeypatch.setattr(cleaning_db, 'release', broken)
    with pytest.raises(RuntimeError):
        arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])

    # One transaction: the handle is not freed without its region dirty.
    assert h.handles_of(region)[0].in_use
    assert h.get_arq(arq_uuid).state == 'Bound'


def test_delete_releases_and_names_the_host(db):
    region = h.make_region(hostname='host7')
    idle = h.make_arq()
    arq_uuid, _state_ = _bind(region, 'host7')

    assert arq_releases.delete_by_uuids(
        arqs_db.ALL, [arq_uuid, idle]).clean_hosts == {'host7'}
    assert _state(region) == 'pending_cleaning'
    # An ARQ that held no region releases none.
    assert arq_releases.delete_by_uuids(
        arqs_db.ALL, [h.make_arq()]).clean_hosts == set()


@pytest.mark.parametrize('state,why', [
    ('pending_cleaning', 'waiting to be wiped after its last tenant'),
    ('cleaning', 'being wiped after its last tenant'),
    ('error', 'its wipe after the last tenant failed'),
])
def test_bind_is_refused_until_the_region_is_wiped(db, state, why):
    region = _released()
    if state != 'pending_cleaning':
        started = cleaning_db.begin(region['deployable_id'])
        if state == 'error':
            cleaning_db.finish(started.uuid, started.cleaning_uuid,
                               error='reset refused')
    assert _state(region) == state

    arq_uuid, result = _bind(region)

    assert result == 'BindFailed'
    reason = 'cleaning_failed' if state == 'error' else state
    error = h.get_arq(arq_uuid).error
    assert 'deployable %s (' % region['deployable_uuid'] in error
    assert 'is unavailable [%s]: %s' % (reason, why) in error
    assert not any(handle.in_use for handle in h.handles_of(region))
    assert _state(region) == state


def test_region_is_wiped_only_once_its_last_handle_is_free(db):
    region = h.make_region(handles=2)
    first, _s1 = _bind(region)
    second, _s2 = _bind(region)
    arq_releases.unbind_all(arqs_db.ALL, [first])
    assert _state(region) == 'pending_cleaning'
    # Its other tenant still runs on it: nothing is wiped yet, and the
    # freed handle is not offered to a third.
    assert cleaning_db.ready() == []
    assert cleaning_db.begin(region['deployable_id']) is None
    assert _bind(region)[1] == 'BindFailed'

    arq_releases.unbind_all(arqs_db.ALL, [second])

    assert [r.uuid for r in cleaning_db.ready()] == \
        [region['deployable_uuid']]
    assert cleaning_db.begin(region['deployable_id']).device_state == \
        'cleaning'


def test_the_regions_ready_are_those_of_the_hosts_asked(db):
    """ready(hostnames) keeps to those hosts (its statement is built
    once: the names are its parameter)."""
    released = {}
    for host in ('host1', 'host2'):
        region = h.make_region(hostname=host)
        arq_uuid, state = _bind(region, host)
        assert state == 'Bound'
        arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
        released[host] = region['deployable_uuid']

    def ready(hostnames):
        return sorted(r.uuid for r in cleaning_db.ready(hostnames))

    assert ready(['host1']) == [released['host1']]
    assert ready(['host2', 'host1']) == ready(None) == sorted(
        released.values())
    assert ready(['host3']) == []


def test_a_try_is_begun_once(db):
    region = _released()
    first = cleaning_db.begin(region['deployable_id'])
    assert first.device_state == 'cleaning'
    assert cleaning_db.begin(region['deployable_id']) is None
    assert _region(region).cleaning_uuid == first.cleaning_uuid


def test_no_clean_runs_under_an_active_programming_job(db):
    region = _released()
    bitstream = add_bitstream()
    with session.writer() as s:
        s.add(models.ProgrammingJob(
            uuid='job-1', deployable_id=region['deployable_id'],
            bitstream_id=bitstream.id,
            active_deployable_id=region['deployable_id']))
    assert cleaning_db.ready() == []
    assert cleaning_db.begin(region['deployable_id']) is None
    assert _state(region) == 'pending_cleaning'


@pytest.mark.parametrize('started', [False, True])
def test_no_programming_job_while_a_clean_is_due_or_running(db, started):
    region = _released()
    if started:
        cleaning_db.begin(region['deployable_id'])
    state = _state(region)
    with pytest.raises(exception.Conflict,
                       match='is %s .*program it once it is available'
                       % state):
        jobs_db.create_job(region['deployable_id'], add_bitstream().id)
    assert jobs_db.list_jobs() == []


def test_only_the_current_try_may_end_the_clean(db):
    region = _released()
    old = cleaning_db.begin(region['deployable_id'])
    cleaning_db.finish(old.uuid, old.cleaning_uuid)
    assert _state(region) == 'available'
    # The same report again (an RPC retry) is harmless.
    assert cleaning_db.finish(old.uuid, old.cleaning_uuid).device_state == \
        'available'
    # Next tenant, next release, next try.
    arq_uuid, _state_ = _bind(region)
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    new = cleaning_db.begin(region['deployable_id'])

    # A late report of the old try makes nothing available.
    with pytest.raises(exception.CleaningConflict, match='no longer'):
        cleaning_db.finish(old.uuid, old.cleaning_uuid)
    with pytest.raises(exception.CleaningConflict):
        cleaning_db.beat(old.uuid, old.cleaning_uuid)
    assert (_state(region), _region(region).cleaning_uuid) == \
        ('cleaning', new.cleaning_uuid)
    cleaning_db.beat(new.uuid, new.cleaning_uuid)
    assert cleaning_db.finish(new.uuid, new.cleaning_uuid).device_state == \
        'available'


def _requests():
    with session.reader() as s:
        return s.execute(sa.select(models.PublishRequest.hostname,
                                   models.PublishRequest.reason)).all()


def _clear_requests():
    with session.writer() as s:
        s.execute(sa.delete(models.PublishRequest))


def test_the_end_of_a_clean_requests_its_publish_in_its_transaction(
        db, monkeypatch):
    finished, skipped = _released(), _released()
    started = cleaning_db.begin(finished['deployable_id'])
    add = publish_requests.add

    def add_then_fail(s, hostname, reason):
        add(s, hostname, reason)
        raise RuntimeError('the database went away')
    for region, end in (
            (finished, functools.partial(cleaning_db.finish, started.uuid,
                                         started.cleaning_uuid)),
            (skipped, functools.partial(cleaning_db.skip,
                                        skipped['deployable_id']))):
        before = _state(region)
        _clear_requests()
        monkeypatch.setattr(publish_requests, 'add', add_then_fail)
        with pytest.raises(RuntimeError):
            end()
        # Neither the move nor its request: the host cannot be left
        # offering less than it has with nobody asked to publish it.
        assert (_state(region), _requests()) == (before, [])

        monkeypatch.setattr(publish_requests, 'add', add)
        end()
        assert _state(region) == 'available'
        assert _requests() == [('host1', 'region now available')]


def test_a_heartbeat_of_a_try_that_ended_is_refused(db):
    # Still the region's last try (nothing began another), but over: a
    # late beat must not count as a clean running.
    for ended in ('available', 'error'):
        region = _released()
        started = cleaning_db.begin(region['deployable_id'])
        cleaning_db.beat(started.uuid, started.cleaning_uuid)
        cleaning_db.finish(started.uuid, started.cleaning_uuid,
                           error='boom' if ended == 'error' else None)
        row = _region(region)
        assert (row.device_state, row.cleaning_uuid) == (
            ended, started.cleaning_uuid)

        with pytest.raises(exception.CleaningConflict, match=ended):
            cleaning_db.beat(started.uuid, started.cleaning_uuid)

        after = _region(region)
        assert (after.device_state, after.device_state_at,
                after.cleaning_started_at) == (
            ended, row.device_state_at, row.cleaning_started_at)


def test_abandoned_tries_count_only_once_an_agent_began_them(db):
    region = _released()
    dep_id, dep_uuid = region['deployable_id'], region['deployable_uuid']
    # A try no agent ever began (the agent was down, or the cast lost).
    cleaning_db.begin(dep_id)
    assert cleaning_db.abandon('gone', 2, hostname='host1') == \
        [(dep_uuid, 'host1', 'pending_cleaning')]
    assert (_region(region).cleaning_attempts,
            _region(region).cleaning_error) == (0, None)
    # Begun (a heartbeat), then the agent died: counted.
    started = cleaning_db.begin(dep_id)
    cleaning_db.beat(dep_uuid, started.cleaning_uuid)
    cleaning_db.abandon('the agent died', 2, hostname='host1')
    row = _region(region)
    assert (row.device_state, row.cleaning_attempts) == \
        ('pending_cleaning', 1)
    assert row.cleaning_error == 'the agent died; cleaning again (try 2 of 2)'
    # Without tries left: error, reserved until an operator retries.
    started = cleaning_db.begin(dep_id)
    cleaning_db.beat(dep_uuid, started.cleaning_uuid)
    cleaning_db.abandon('the agent died', 2, hostname='host1')
    row = _region(region)
    assert (row.device_state, row.cleaning_attempts) == ('error', 2)
    assert row.cleaning_error == 'the agent died; no tries left (2 of 2 used)'
    # Other hosts' tries are not touched.
    assert cleaning_db.abandon('x', 2, hostname='host9') == []


def test_the_start_of_a_past_clean_never_counts_for_the_next(db):
    region = _released()
    done = cleaning_db.begin(region['deployable_id'])
    cleaning_db.beat(done.uuid, done.cleaning_uuid)
    cleaning_db.finish(done.uuid, done.cleaning_uuid)
    arq_uuid, _state_ = _bind(region)
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    assert _region(region).cleaning_started_at is None
    # The next try dies before any agent began it: not counted.
    cleaning_db.begin(region['deployable_id'])
    cleaning_db.abandon('gone', 2, hostname='host1')
    assert (_state(region), _region(region).cleaning_attempts) == \
        ('pending_cleaning', 0)


def test_silence_is_measured_with_the_database_clock(db):
    region = _released()
    started = cleaning_db.begin(region['deployable_id'])
    cleaning_db.beat(started.uuid, started.cleaning_uuid)
    assert cleaning_db.abandon('silent', 3, silent_for=3600) == []
    last_beat = _region(region).device_state_at
    with session.writer() as s:
        s.execute(sa.update(models.Deployable)
                  .where(models.Deployable.id == region['deployable_id'])
                  .values(device_state_at=last_beat -
                          datetime.timedelta(hours=2)))
    assert cleaning_db.abandon('silent', 3, silent_for=3600) == \
        [(region['deployable_uuid'], 'host1', 'pending_cleaning')]


@pytest.mark.parametrize('state,allowed', [
    ('available', True), ('error', True), ('allocated', False),
    ('pending_cleaning', False), ('cleaning', False)])
def test_an_operator_may_ask_for_a_clean_when_idle_or_failed(db, state,
                                                             allowed):
    region = h.make_region()
    if state == 'allocated':
        _bind(region)
    elif state != 'available':
        region = _released()
        if state in ('cleaning', 'error'):
            started = cleaning_db.begin(region['deployable_id'])
        if state == 'error':
            cleaning_db.finish(started.uuid, started.cleaning_uuid,
                               error='boom')
    assert _state(region) == state
    if allowed:
        done = cleaning_db.reclean(region['deployable_uuid'])
        assert (done.device_state, done.cleaning_error,
                done.cleaning_attempts) == ('pending_cleaning', None, 0)
    else:
        with pytest.raises(exception.Conflict, match='is %s' % state):
            cleaning_db.reclean(region['deployable_uuid'])
        assert _state(region) == state


def test_every_move_leaves_the_regions_version(db):
    # A report reads a region's version and updates the row on it
    # (db/inventory.py): a move that bumped it would spoil the report.
    region = h.make_region()
    dep_id, dep_uuid = region['deployable_id'], region['deployable_uuid']
    version = _region(region).version
    arqs, tries = [], []

    def begin():
        tries.append(cleaning_db.begin(dep_id).cleaning_uuid)
    moves = [
        (lambda: arqs.append(_bind(region)[0]), 'allocated'),
        (lambda: arq_releases.unbind_all(arqs_db.ALL, [arqs[0]]),
         'pending_cleaning'),
        (begin, 'cleaning'),
        (lambda: cleaning_db.beat(dep_uuid, tries[-1]), 'cleaning'),
        (lambda: cleaning_db.abandon('gone', 3, hostname='host1'),
         'pending_cleaning'),
        (begin, 'cleaning'),
        (lambda: cleaning_db.finish(dep_uuid, tries[-1], error='x'),
         'error'),
        (lambda: cleaning_db.reclean(dep_uuid), 'pending_cleaning'),
        (lambda: cleaning_db.skip(dep_id), 'available'),
        (lambda: cleaning_db.reclean(dep_uuid), 'pending_cleaning'),
        (begin, 'cleaning'),
        (lambda: cleaning_db.finish(dep_uuid, tries[-1]), 'available'),
    ]
    for move, state in moves:
        move()
        row = _region(region)
        assert (row.device_state, row.version) == (state, version)


def _reported_card(hostname, sriov):
    """{region name: (deployable id, its handle's id)} of a card the
    report stores for ``hostname`` (the same PCI address on every host):
    a VF each with ``sriov``, else every region behind its PF."""
    card = rh.fpga(regions=3)
    for dep in card['deployables']:
        if not sriov:
            dep['attach_handles'][0]['attach_info']['function'] = '0'
    report.handle_report(hostname, [rh.ok('fpga', card)])
    with session.reader() as s:
        rows = s.execute(
            sa.select(models.Deployable.name, models.Deployable.id,
                      models.AttachHandle.id)
            .join(models.AttachHandle,
                  models.AttachHandle.deployable_id == models.Deployable.id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .where(models.Device.hostname == hostname)).all()
    return {name.rsplit('_', 1)[1]: (dep_id, handle_id)
            for name, dep_id, handle_id in rows}


def _states(card):
    with session.reader() as s:
        return {name: s.get(models.Deployable, dep_id).device_state
                for name, (dep_id, _handle) in card.items()}


@pytest.mark.parametrize('sriov', [False, True], ids=['pf', 'vf'])
def test_a_released_function_has_every_region_behind_it_wiped(db, sriov):
    """Region0's tenant had its handle's function: a card's PF reaches
    every region (each then waits for its own wipe, why in its history;
    one failed already stays failed), a VF its region only. The same
    address on another host is another function."""
    card = _reported_card('host1', sriov)
    other_host = _reported_card('host2', sriov)
    with session.writer() as s:
        s.get(models.Deployable, card['region2'][0]).device_state = 'error'
    _clear_requests()

    with session.writer() as s:
        assert cleaning_db.release(s, card['region0'][1]) == 'host1'

    behind = 'available' if sriov else 'pending_cleaning'
    assert _states(card) == {'region0': 'pending_cleaning',
                             'region1': behind, 'region2': 'error'}
    assert set(_states(other_host).values()) == {'available'}
    with session.reader() as s:
        shared = [(r.deployable_uuid, r.state, r.reason) for r in s.scalars(
            sa.select(models.DeviceHistory).where(
                models.DeviceHistory.event == 'deployable.clean.shared'))]
        region1 = s.get(models.Deployable, card['region1'][0])
    assert shared == ([] if sriov else [(
        region1.uuid, 'pending_cleaning',
        'its PCI function was handed over with region '
        'host1_0000:5e:00.0_region0')])
    assert _requests() == [('host1', 'released: waits for its wipe')]
