"""Where on a MIG GPU a new instance goes: the placement policy the
ResourceSlices carry (kubernetes/mig_counters.ranked, the order a GPU's
placements are published in, whose first fitting device the
kube-scheduler's allocator takes; bench/mig_pack measures it). Pure.

A GPU has a row of memory slices; a profile's instance takes ``size``
consecutive slices at one of its allowed ``starts``. A shape is a
profile as the policy sees it: ``(size, starts)``.

Best fit: the start after which the larger shapes keep the most
placements (the largest weighs first); among equals the highest start,
as small instances packed at the end leave the low-start large
placements whole.
"""


def slices(start, size):
    """The memory slices a placement takes."""
    return frozenset(range(start, start + size))


def fitting(size, starts, free):
    """The ``starts`` of a ``size`` wide shape whose slices are free."""
    return [s for s in starts if slices(s, size) <= free]


def kept_open(shapes, free):
    """How many placements of each shape stay possible on ``free``, the
    largest shape first: what a choice should keep highest."""
    ordered = sorted((size, tuple(sorted(starts))) for size, starts in shapes)
    ordered.sort(key=lambda shape: (-shape[0], len(shape[1])))
    return tuple(len(fitting(size, starts, free)) for size, starts in ordered)


def best_first(size, starts, free, shapes):
    """The fitting ``starts`` of a shape on ``free``, best fit first, on a
    GPU whose profiles are ``shapes``."""
    return sorted(fitting(size, starts, free), reverse=True, key=lambda s: (
        kept_open(shapes, free - slices(s, size)), s))
