"""The state machines of cyborg_lite, each defined once.

The API, the conductor and the database layer all consult these: the
CHECK constraints of db/models.py list ``states``, the conditional
UPDATEs of db/ take their "from" states from ``sources``, and the API
refuses a request whose ARQ could not make the move.

- ``ARQ``: an accelerator request's bind life (Cyborg's
  ARQ_STATES_TRANSFORM_MATRIX).
- ``JOB``: a programming job, queued on the conductor to a terminal state.
- ``DEVICE``: a deployable's allocation and secure-cleaning life (Cyborg
  17's ``device_state``), driven by conductor/cleaning.py.
"""


class StateMachine:
    """States and the moves allowed between them.

    ``moves`` maps each state to the states it may go to; a state with no
    entry is terminal. ``states`` keeps the order in which they are listed
    (the order of the database's CHECK constraint).
    """

    def __init__(self, name, states, moves):
        named = set(moves).union(*moves.values())
        unknown = named - set(states)
        if unknown:
            raise ValueError('%s machine: unknown states %s'
                             % (name, sorted(unknown)))
        self.name = name
        self.states = tuple(states)
        self.moves = {s: tuple(moves.get(s, ())) for s in self.states}

    def allows(self, current, target):
        return target in self.moves.get(current, ())

    def sources(self, target):
        """The states that may move to ``target``, in ``states`` order."""
        return tuple(s for s in self.states if target in self.moves[s])

    def targets(self, current):
        return self.moves.get(current, ())

    @property
    def terminal(self):
        return tuple(s for s in self.states if not self.moves[s])


# --- accelerator requests ---------------------------------------------------

ARQ = StateMachine('ARQ', (
    'Initial', 'BindStarted', 'Bound', 'Unbound', 'BindFailed',
    'UnbindFailed', 'Deleting'), {
    'Initial': ('BindStarted', 'Unbound', 'Deleting'),
    'BindStarted': ('Bound', 'Unbound', 'BindFailed', 'Deleting'),
    'Bound': ('Unbound', 'BindFailed', 'Deleting'),
    'Unbound': ('BindStarted', 'Deleting'),
    'BindFailed': ('Unbound', 'Deleting'),
    # NOTE: Cyborg lets nothing leave UnbindFailed but an operator's fix.
    'UnbindFailed': (),
    'Deleting': ('Deleting',),
})
# Cyborg's ARQ_STATES_TRANSFORM_MATRIX: target <- the states it may come
# from, for the targets a workflow moves ARQs to.
ARQ_STATES_TRANSFORM_MATRIX = {
    target: ARQ.sources(target)
    for target in ('BindStarted', 'Bound', 'Unbound', 'BindFailed',
                   'Deleting')}
# Leaving Bound for one of these gives the attach handle back.
ARQ_RELEASING = ('Unbound', 'BindFailed', 'Deleting')
# Cyborg's "resolved" bind states: the bind ended, one way or the other.
ARQ_RESOLVED = ('Bound', 'BindFailed', 'Deleting')
# Bind in flight: the conductor is working on the row (not deletable).
ARQ_BUSY = ('BindStarted',)
# What the API accepts a bind and an unbind from; unbinding an Unbound
# ARQ is a harmless repeat.
ARQ_BINDABLE = ARQ.sources('BindStarted')
ARQ_UNBINDABLE = ARQ.sources('Unbound') + ('Unbound',)


# --- programming jobs -------------------------------------------------------

JOB = StateMachine('programming job', (
    'queued', 'downloading', 'programming', 'verifying', 'succeeded',
    'failed', 'cancelled'), {
    # 'queued' after an active state is a retry by the reaper.
    'queued': ('downloading', 'failed', 'cancelled', 'queued'),
    'downloading': ('programming', 'failed', 'cancelled', 'queued'),
    # Cancelling stops before any byte may have reached hardware.
    'programming': ('verifying', 'failed', 'queued'),
    # Success only follows verification.
    'verifying': ('succeeded', 'failed', 'queued'),
})
JOB_ACTIVE = tuple(s for s in JOB.states if s not in JOB.terminal)
JOB_TERMINAL = JOB.terminal
JOB_CANCELLABLE = JOB.sources('cancelled')
# States in which an agent has taken the job; a queued job never started.
JOB_STARTED = tuple(s for s in JOB_ACTIVE if s != 'queued')
# How one try of a job ended ('running' until it does): 'abandoned' when
# its agent went silent or restarted, and the job was retried or failed.
JOB_TRY_OUTCOMES = ('running', 'succeeded', 'failed', 'abandoned',
                    'cancelled')
# What an agent may report, and from which states each report may come
# (the reaper's retry to 'queued' is not an agent's report).
JOB_PROGRESS_FROM = {
    state: JOB.sources(state)
    for state in ('downloading', 'programming', 'verifying', 'succeeded',
                  'failed')}


# --- devices: allocation and secure cleaning --------------------------------
#
# Cyborg 17's ``device_state``, kept per deployable (a region of one card
# serves one tenant while its sibling serves another): db/cleaning.py
# moves it, conductor/cleaning.py drives it.

DEVICE = StateMachine('device', (
    'available', 'allocated', 'pending_cleaning', 'cleaning', 'error'), {
    'available': ('allocated',
                  # An operator asks for a clean, e.g. after maintenance.
                  'pending_cleaning'),
    # Unbind or delete: the next tenant must not see the last one's data.
    'allocated': ('pending_cleaning',),
    # Its driver has no CleaningInterface: nothing to run, the conductor
    # makes it available at once.
    'pending_cleaning': ('cleaning', 'available'),
    'cleaning': ('available', 'error',
                 # The agent died while cleaning: clean again from scratch.
                 'pending_cleaning'),
    # An operator retries the clean after repairing the device.
    'error': ('pending_cleaning',),
})
# What may be offered to a scheduler and bound: an allocated deployable
# still offers the accelerators none of its handles serves yet.
DEVICE_SCHEDULABLE = ('available', 'allocated')
# Why a deployable in the other states is neither offered nor bound: the
# reason named by objects/host_inventory.py and the bind's refusal.
DEVICE_UNSCHEDULABLE_WHY = {
    'pending_cleaning': 'waiting to be wiped after its last tenant',
    'cleaning': 'being wiped after its last tenant',
    'error': 'its wipe after the last tenant failed; an operator must '
             'retry it',
}
# A release (unbind, delete) makes these dirty; in the others a clean is
# already due or running.
DEVICE_RELEASABLE = ('available', 'allocated')
# An operator may ask for a clean from these.
DEVICE_RECLEANABLE = ('available', 'error')
