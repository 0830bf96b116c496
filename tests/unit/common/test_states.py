"""The state machines of common/states.py."""
import pytest

from cyborg_lite.common import states


def test_a_machine_refuses_a_move_to_an_unknown_state():
    with pytest.raises(ValueError, match='unknown states'):
        states.StateMachine('x', ('a', 'b'), {'a': ('c',)})


def test_sources_targets_and_terminal_follow_the_moves():
    machine = states.StateMachine('x', ('a', 'b', 'c'),
                                  {'a': ('b', 'c'), 'b': ('c',)})
    assert machine.sources('c') == ('a', 'b')
    assert machine.targets('a') == ('b', 'c')
    assert machine.terminal == ('c',)
    assert machine.allows('a', 'b') and not machine.allows('b', 'a')
    assert not machine.allows('unknown', 'a')


def test_arq_states_are_cyborgs_in_schema_order():
    assert states.ARQ.states == (
        'Initial', 'BindStarted', 'Bound', 'Unbound', 'BindFailed',
        'UnbindFailed', 'Deleting')
    assert states.ARQ_BINDABLE == ('Initial', 'Unbound')
    # Unbinding an Unbound ARQ is accepted (a harmless repeat).
    assert set(states.ARQ_UNBINDABLE) == {
        'Initial', 'BindStarted', 'Bound', 'BindFailed', 'Unbound'}
    assert states.ARQ.terminal == ('UnbindFailed',)


def test_job_graph():
    assert states.JOB_ACTIVE == ('queued', 'downloading', 'programming',
                                 'verifying')
    assert states.JOB_TERMINAL == ('succeeded', 'failed', 'cancelled')
    assert states.JOB_CANCELLABLE == ('queued', 'downloading')
    assert states.JOB_STARTED == ('downloading', 'programming', 'verifying')
    # Nothing leaves a terminal state; success only follows verification.
    for state in states.JOB_TERMINAL:
        assert states.JOB.targets(state) == ()
    assert states.JOB.sources('succeeded') == ('verifying',)
    # An agent reports each step from the one before; the reaper's retry
    # to 'queued' is not an agent's report.
    assert states.JOB_PROGRESS_FROM['programming'] == ('downloading',)
    assert states.JOB_PROGRESS_FROM['failed'] == states.JOB_ACTIVE
    assert 'queued' not in states.JOB_PROGRESS_FROM


@pytest.mark.parametrize('path', [
    # Bound, unbound, cleaned, offered again.
    ('available', 'allocated', 'pending_cleaning', 'cleaning', 'available'),
    # A clean that fails, repaired during maintenance and cleaned again.
    ('allocated', 'pending_cleaning', 'cleaning', 'error',
     'pending_cleaning', 'cleaning', 'available'),
    # The agent died mid-clean: the clean starts over.
    ('pending_cleaning', 'cleaning', 'pending_cleaning', 'cleaning',
     'available'),
    # An operator asks for a clean of an idle device.
    ('available', 'pending_cleaning'),
    # Its driver cleans nothing: nothing to run (conductor/cleaning.py).
    ('allocated', 'pending_cleaning', 'available'),
    # A vGPU type whose last VF's instance was removed at its release
    # (db/instance_removals.py: each VF wiped by its removal).
    ('available', 'allocated', 'available'),
])
def test_device_cleaning_paths_are_allowed(path):
    for current, target in zip(path, path[1:]):
        assert states.DEVICE.allows(current, target), (current, target)


@pytest.mark.parametrize('current,target', [
    # The next tenant must never get an uncleaned device.
    ('error', 'available'),
    ('error', 'allocated'),
    ('pending_cleaning', 'allocated'),
    ('cleaning', 'allocated'),
    # A clean that has not started cannot have failed.
    ('pending_cleaning', 'error'),
])
def test_device_shortcuts_around_cleaning_are_refused(current, target):
    assert not states.DEVICE.allows(current, target)


def test_only_an_available_or_allocated_device_is_schedulable():
    # An allocated one still offers the accelerators no handle serves.
    assert states.DEVICE_SCHEDULABLE == ('available', 'allocated')
    assert set(states.DEVICE_UNSCHEDULABLE_WHY) == \
        set(states.DEVICE.states) - set(states.DEVICE_SCHEDULABLE)
    for group in (states.DEVICE_RELEASABLE, states.DEVICE_RECLEANABLE):
        assert all(states.DEVICE.allows(s, 'pending_cleaning')
                   for s in group)
    assert states.DEVICE.terminal == ()
    # Every state leads back to available.
    for state in states.DEVICE.states:
        seen, todo = set(), [state]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(states.DEVICE.targets(current))
        assert 'available' in seen, state
