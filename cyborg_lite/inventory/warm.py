"""Warm placement: which free region a request for a function takes, and
whether it had better wait for a busy one. Pure: no I/O, no clock.

The region choice (``preference``), used by every bind that picks
among siblings (inventory/views.choose_member: the ARQ bind of
conductor/bind.py; bench/program_trace.py drives the same call):

1. a region that runs the function already (``loaded``): no programming;
2. then the region whose function was asked for least recently
   (``asked_at``: when, None for never: a blank region, or one whose
   history is pruned, goes first), so a function in demand is the last
   to be reprogrammed for another;
3. then by name, so the choice is the same on every conductor.

Least recently asked is the online stand-in for the offline choice
(Belady: evict what is asked for again furthest in the future). On
bench/program_trace's traces it reprograms about as often as that
offline choice summed over seeds (docs/benchmarks.md); the rules tried
beside it (demand per copy in a window, duplicated functions first) did
no better, so it stays.

The wait (``worth_waiting``): when no free region runs the function but
a busy one does, the request may wait for it instead of reprogramming a
free one. Worth it only when that region is expected to be freed sooner
than programming takes, and only one waiting request per busy region
(a second would wait behind the first). The expected wait is the mean
of the holds seen so far (with holds of no memory, as the bench's, the
time a busy region has been held says nothing more), and of the clean
after it. The ARQ bind waits so (conductor/bind_wait.py), on the means
of its device's recent history (``expected_free``).
"""

# The reasons a region is unavailable for that end by themselves: the
# wipe after its last tenant, waiting or running (not a failed one).
_CLEANING = ('pending_cleaning', 'cleaning')


def expected_free(reasons, free_handle, hold_s, clean_s):
    """Seconds until a region that runs the function asked for is
    expected to be freed: 0 when it is free (no ``reasons`` to refuse it,
    a ``free_handle``), the clean's mean ``clean_s`` while it is wiped,
    the hold's mean ``hold_s`` and then the clean's while a tenant holds
    it; None when that cannot be said (a fault, maintenance, a mean not
    known yet: a clean's unknown mean counts 0, a driver may not clean)."""
    if not reasons:
        if free_handle:
            return 0.0
        return None if hold_s is None else hold_s + (clean_s or 0.0)
    if set(reasons) <= set(_CLEANING):
        return clean_s or 0.0
    return None


def preference(loaded, asked_at):
    """The sort key of a region among free siblings, smallest first:
    ``loaded`` (bool: it runs the function asked for), ``asked_at``
    (when its function was last asked for; None for never)."""
    return (not loaded, () if asked_at is None else (asked_at,))


def worth_waiting(busy_running, already_waiting, expected_free_s,
                  program_s):
    """Whether a request for a function that no free region runs should
    wait for one of the ``busy_running`` busy regions running it, that
    ``already_waiting`` earlier requests wait for already, rather than
    reprogram a free region: when one is left to wait for and it is
    expected to be freed (``expected_free_s``, None when unknown) sooner
    than programming takes (``program_s``, None when unknown)."""
    if busy_running <= already_waiting or None in (expected_free_s,
                                                    program_s):
        return False
    return expected_free_s < program_s
