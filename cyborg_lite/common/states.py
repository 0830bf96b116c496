"""The state machines of cyborg_lite, each defined once.

The API, the conductor and the database layer all consult these: the
CHECK constraints of db/models/ list ``states``, the conditional
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
                  # An operator asks for a clean, e.g. after maintenance;
                  # or the PCI function behind it, which a sibling's
                  # tenant had (a card's PF), is released.
                  'pending_cleaning'),
    # Unbind or delete: the next tenant must not see the last one's data.
    # Or, of a type whose instances are removed one by one (a vGPU type:
    # db/instance_removals.py), the last one removed: nothing left to wipe.
    'allocated': ('pending_cleaning', 'available'),
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
# reason named by inventory/views.py and the bind's refusal.
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


# --- health: what the hardware's own signals say ----------------------------
#
# One machine per device, and per region where a signal is the region's own
# (a DFL port's errors). The agent runs it over each scan's findings
# (agent/health.py); the conductor stores the state it reports and
# inventory/views.py turns it into availability.

HEALTH = StateMachine('health', (
    'healthy', 'degraded', 'unhealthy', 'recovering'), {
    'healthy': ('degraded', 'unhealthy'),
    'degraded': ('healthy', 'unhealthy'),
    # Its signals cleared: kept from schedulers until they stay clear.
    'unhealthy': ('recovering',),
    'recovering': ('healthy', 'degraded', 'unhealthy'),
})
# Kept from schedulers and binds (inventory/views.py).
HEALTH_UNAVAILABLE = ('unhealthy', 'recovering')
# Offered still, with a note (an informational taint in Kubernetes).
HEALTH_ADVISORY = ('degraded',)
# How bad one reading is: the findings' worst level, None when clear.
HEALTH_LEVELS = (None, 'degraded', 'unhealthy')
MAX_HEALTH_REASON = 255


def _rank(level):
    return HEALTH_LEVELS.index(level)


class HealthMachine:
    """A device's (or region's) health over successive readings.

    ``observe(findings)`` takes one scan's findings (common/health.Finding:
    ``signal``, ``level`` 'degraded' or 'unhealthy', ``text``) and moves
    the state only when ``to_fault`` consecutive readings argue for a
    worse state or ``to_clear`` consecutive ones for a better one; the
    readings that caused a move never count for the next. So a sensor
    hovering around a threshold moves the state at most once per window.
    The first reading of a machine with no state sets it directly: there
    is nothing to flap from yet.

    Every state but healthy has a reason, the findings' texts when it was
    entered. While the state holds, the reason changes only when another
    set of signals explains it for ``to_fault`` readings in a row, so a
    value that changes every scan (a temperature) never rewrites it.
    """

    def __init__(self, to_fault, to_clear, state=None, reason=None,
                 signals=()):
        if state is not None and state not in HEALTH.states:
            raise ValueError('unknown health state %r' % (state,))
        self.to_fault = to_fault
        self.to_clear = to_clear
        self.state = state
        self.reason = reason
        self.signals = tuple(signals)
        self._levels = []
        self._next_signals = None
        self._next_count = 0
        # How many readings made the last move (1 for a first reading).
        self.window = 1

    def observe(self, findings):
        """Take one reading; True when the state or its reason changed."""
        level = max((f.level for f in findings), key=_rank, default=None)
        if self.state is None:
            self._enter({None: 'healthy'}.get(level, level), findings)
            return True
        self._levels.append(level)
        del self._levels[:-max(self.to_fault, self.to_clear)]
        target = self._target()
        if target is not None and target != self.state:
            # Worse states come by the fault window, better by the clear.
            self.window = (self.to_fault if target == 'unhealthy' or
                           self.state == 'healthy' else self.to_clear)
            self._enter(target, findings)
            return True
        return self._update_reason(findings)

    def _last(self, count, test):
        recent = self._levels[-count:]
        return len(recent) == count and all(test(_rank(lv)) for lv in recent)

    def _target(self):
        fault = self._last(self.to_fault, lambda r: r == 2)
        if self.state == 'healthy':
            if self._last(self.to_fault, lambda r: r >= 1):
                return 'unhealthy' if fault else 'degraded'
            return None
        if self.state == 'unhealthy':
            return 'recovering' if self._last(self.to_clear,
                                              lambda r: r < 2) else None
        if fault:
            return 'unhealthy'
        if self.state == 'degraded':
            return 'healthy' if self._last(self.to_clear,
                                           lambda r: r == 0) else None
        # recovering
        if self._last(self.to_clear, lambda r: r < 2):
            return 'healthy' if self._last(self.to_clear,
                                           lambda r: r == 0) else 'degraded'
        return None

    def _enter(self, state, findings):
        previous = self.reason
        self.state = state
        self._levels = []
        self._next_signals, self._next_count = None, 0
        if state == 'recovering':
            self.reason = _cut('%s (cleared)' % (previous or 'fault'), 12)
            return
        self._explain(findings)

    def _explain(self, findings):
        shown = [f for f in findings if f.level == self.state]
        self.signals = tuple(f.signal for f in shown)
        self.reason = _cut('; '.join(f.text for f in shown)) if shown \
            else None

    def _update_reason(self, findings):
        if self.state not in ('degraded', 'unhealthy'):
            return False
        signals = tuple(f.signal for f in findings if f.level == self.state)
        if not signals or signals == self.signals:
            self._next_signals, self._next_count = None, 0
            return False
        if signals != self._next_signals:
            self._next_signals, self._next_count = signals, 0
        self._next_count += 1
        if self._next_count < self.to_fault:
            return False
        self._next_signals, self._next_count = None, 0
        self._explain(findings)
        return True


def _cut(text, keep_tail=0):
    """``text`` within MAX_HEALTH_REASON characters; the last
    ``keep_tail`` characters survive the cut."""
    if len(text) <= MAX_HEALTH_REASON:
        return text
    head = MAX_HEALTH_REASON - keep_tail - 1
    return text[:head] + '…' + (text[-keep_tail:] if keep_tail else '')
