"""The offline optimum of bench/mig_pack: the most requests any choice
knowing every arrival and departure could have granted.

``solve``: a 0/1 program solved by HiGHS (scipy.optimize.milp), exact
when it finishes within the time limit, else its dual bound (an upper
bound on the optimum). ``search``: an exhaustive branch and bound in
plain Python, exact, for small traces (the check of the program).

Requests are ``(arrival, departure, profile id)``, each holding its
instance over [arrival, departure); GPUs ``(model, {profile id:
Profile})`` as bench/mig_pack.fleet gives them.
"""
import time

from cyborg_lite.common import mig_placements


def _choices(gpus, pid):
    """[(GPU index, start, slices)] a request for ``pid`` may take."""
    return [(g, s, mig_placements.slices(s, profiles[pid].size))
            for g, (_, profiles) in enumerate(gpus) if pid in profiles
            for s in profiles[pid].starts]


def _instants(requests):
    """The arrivals at which the holders are a largest set: those with a
    departure after them and no later than the next arrival (every pair
    of overlapping holds overlaps at the later one's arrival)."""
    arrivals = sorted(a for a, _, _ in requests)
    departures = sorted(d for _, d, _ in requests)
    kept, j = [], 0
    for k, arrive in enumerate(arrivals):
        following = arrivals[k + 1] if k + 1 < len(arrivals) else None
        while j < len(departures) and departures[j] <= arrive:
            j += 1
        if following is None or (j < len(departures) and
                                 departures[j] <= following):
            kept.append(arrive)
    return kept


def solve(requests, gpus, time_limit):
    """{'bound', 'exact', 'found', 'schedule', 'relaxation', 'status',
    'seconds', 'variables', 'rows'}: ``schedule``, the grants [(request
    index, GPU index, start)] of the best solution found (``found`` of
    them), or None."""
    import numpy
    from scipy import optimize
    from scipy import sparse

    began = time.monotonic()
    columns, owner, starts = [], [], []
    for r, (_, _, pid) in enumerate(requests):
        for g, s, taken in _choices(gpus, pid):
            columns.append((g, taken))
            owner.append(r)
            starts.append(s)
    rows, cols = [], []
    for c, r in enumerate(owner):           # one choice a request at most
        rows.append(r)
        cols.append(c)
    by_request = {}
    for c, r in enumerate(owner):
        by_request.setdefault(r, []).append(c)
    row = len(requests)
    order = sorted(range(len(requests)), key=lambda r: requests[r][0])
    for instant in _instants(requests):
        holders = [r for r in order if requests[r][0] <= instant <
                   requests[r][1]]
        cells = {}
        for r in holders:
            for c in by_request.get(r, ()):
                g, taken = columns[c]
                for s in taken:
                    cells.setdefault((g, s), []).append(c)
        for members in cells.values():
            if len(members) > 1:
                rows += [row] * len(members)
                cols += members
                row += 1
    matrix = sparse.csr_array(
        (numpy.ones(len(rows)), (rows, cols)), shape=(row, len(columns)))
    ones = -numpy.ones(len(columns))
    # The relaxation first: its optimum bounds the program's from above
    # whatever the search below reaches in its time.
    relaxed = optimize.linprog(ones, A_ub=matrix, b_ub=numpy.ones(row),
                               bounds=(0, 1), method='highs')
    bound = len(requests)
    if relaxed.status == 0:
        bound = min(bound, int(-relaxed.fun + 1e-6))
    left = max(1.0, time_limit - (time.monotonic() - began))
    result = optimize.milp(
        c=ones, integrality=numpy.ones(len(columns)),
        bounds=optimize.Bounds(0, 1),
        constraints=optimize.LinearConstraint(matrix, 0, 1),
        options={'time_limit': left})
    exact = result.status == 0
    if exact:
        bound = int(round(-result.fun))
    elif getattr(result, 'mip_dual_bound', None) is not None:
        bound = min(bound, int(-result.mip_dual_bound + 1e-6))
    found = schedule = None
    if result.x is not None:
        found = int(round(-result.fun))
        schedule = sorted((owner[c], columns[c][0], starts[c])
                          for c, x in enumerate(result.x) if x > 0.5)
    return {'bound': bound, 'exact': exact, 'found': found,
            'schedule': schedule,
            'relaxation': None if relaxed.status else round(-relaxed.fun, 2),
            'status': result.message,
            'seconds': round(time.monotonic() - began, 1),
            'variables': len(columns), 'rows': row}


def search(requests, gpus):
    """The optimum by branch and bound over every choice: a branch is
    cut when granting all that is left could not beat the best found,
    or when its state (next request, instances held) was reached before
    with as many granted (small traces only)."""
    order = sorted(range(len(requests)), key=lambda r: requests[r][0])
    choices = [_choices(gpus, requests[r][2]) for r in order]
    best, seen = [0], {}

    def step(k, held, granted):
        if granted + len(order) - k <= best[0] or \
                seen.get((k, held), -1) >= granted:
            return
        seen[(k, held)] = granted
        if k == len(order):
            best[0] = granted
            return
        arrive, depart, _ = requests[order[k]]
        held = frozenset(h for h in held if h[0] > arrive)
        for g, _, taken in choices[k]:
            if not any(h[1] == g and h[2] & taken for h in held):
                step(k + 1, held | {(depart, g, taken)}, granted + 1)
        step(k + 1, held, granted)

    step(0, frozenset(), 0)
    return best[0]
