"""A MIG GPU's counter set (KEP-4815), as NVIDIA's DRA driver counts it.

Each GPU offered as MIG placements (drivers/nvidia_mig_made.py) gets one
counter set, named as the GPU's device (``gpu-0000-3b-00-0``), with one
counter ``memory-slice-<i>`` of value 1 per memory slice, plus the GPU's
own ``multiprocessors`` and ``memory`` (its largest profile's: the whole
GPU). A placement consumes the slices ``[start, start + size)``, so a
counter's index is the placement and the kube-scheduler never allocates
two placements that overlap, nor more multiprocessors or memory than
the GPU has. Pure: from a deployable's attributes ((key, value) pairs as
the database keeps them, values as text).

The order a GPU's placement devices are published in is the
kube-scheduler's placement policy (``ranked``, ``publication_order``):
its allocator walks the pools, each pool's slices and each slice's
``spec.devices`` in order and takes the first device whose selectors and
counters fit (k8s.io/dynamic-resource-allocation structured/internal/
stable/allocator_stable.go, ``allocator.allocateOne``). Only the order
within one slice is ours to set: ``GatherPools`` (pools_stable.go) puts
the pools in a Go map, so their order differs from call to call, and a
pool's slices come in the order of the list it is given (the informer's,
not defined).
"""
from cyborg_lite.common import mig_placements
from cyborg_lite.kubernetes import names as k8s_names

SLICE = 'memory-slice-%d'
MULTIPROCESSORS = 'multiprocessors'
MEMORY = 'memory'
# The attributes the driver writes (drivers/nvidia_mig_made.py).
_START, _SIZE, _SMS = 'mig_start', 'mig_size', 'multiprocessor_count'
_GPU_SLICES, _GPU_SMS = 'gpu_memory_slices', 'gpu_multiprocessors'
_GPU_MEMORY = 'gpu_mig_memory_mb'
_PROFILE = 'mig_profile_id'
_NEEDED = (_START, _SIZE, _SMS, _GPU_SLICES, _GPU_SMS, _GPU_MEMORY)


def _numbers(attributes):
    found = dict(attributes)
    if not all(key in found for key in _NEEDED):
        return None
    try:
        return {key: int(found[key]) for key in _NEEDED}
    except (TypeError, ValueError):
        return None


def consumed(attributes, memory_mb, quantity):
    """((counter, quantity), ...) a MIG placement consumes; () for any
    other deployable. ``memory_mb``: its memory (the deployable's local
    memory); ``quantity(MiB)``: the text of a memory quantity
    (kubernetes/slices.mib_quantity)."""
    numbers = _numbers(attributes)
    if numbers is None:
        return ()
    start, size = numbers[_START], numbers[_SIZE]
    pairs = [(SLICE % i, '1') for i in range(start, start + size)]
    pairs.append((MULTIPROCESSORS, str(numbers[_SMS])))
    pairs.append((MEMORY, quantity(memory_mb)))
    return tuple(sorted(pairs))


def totals(attributes, quantity):
    """((counter, quantity), ...) of the GPU's set; () for a deployable
    that is no MIG placement."""
    numbers = _numbers(attributes)
    if numbers is None:
        return ()
    pairs = [(SLICE % i, '1') for i in range(numbers[_GPU_SLICES])]
    pairs += [(MULTIPROCESSORS, str(numbers[_GPU_SMS])),
              (MEMORY, quantity(numbers[_GPU_MEMORY]))]
    return tuple(sorted(pairs))


def set_name(device):
    """The GPU's counter set: named as its device."""
    return k8s_names.dns_label(device.type.lower(), device.identity)


def gpu_sets(named):
    """{set name: {counter: quantity}} of the MIG GPUs among ``named``
    ({device name: (Device, Deployable)})."""
    sets = {}
    for device, dep in named.values():
        if dep.gpu_counter_totals:
            sets[set_name(device)] = dict(dep.gpu_counter_totals)
    return sets


def consuming(entry, device, dep):
    """The ``spec.devices`` entry consuming its placement's counters."""
    return dict(entry, consumesCounters=[{
        'counterSet': set_name(device),
        'counters': {c: {'value': q} for c, q in dep.gpu_counters}}])


def placement(attributes):
    """(profile id, start, size) of a MIG placement, what its place in
    the slices is ranked by (``ranked``); () for any other deployable."""
    numbers = _numbers(attributes)
    try:
        profile = int(dict(attributes)[_PROFILE])
    except (KeyError, TypeError, ValueError):
        return ()
    if numbers is None:
        return ()
    return (profile, numbers[_START], numbers[_SIZE])


def ranked(placements, held=()):
    """``placements`` ((profile, start, size) of one GPU, profiles given
    as comparable keys) in the order the slices publish them. Profiles
    smallest first (by slices, then the most placements, then the key),
    so a request several profiles satisfy gets the smallest; a profile's
    placements that fit now best fit first (common/mig_placements) on
    the GPU as it is now: the slices the placements cover, less those of
    the ``held`` ones (placements whose instance a claim holds). Then
    those that do not fit now, best fit first on the GPU as offered."""
    starts = {}
    for profile, start, size in placements:
        starts.setdefault((profile, size), set()).add(start)
    shapes = [(size, ss) for (_p, size), ss in starts.items()]
    offered = frozenset().union(*(mig_placements.slices(s, size)
                                  for size, ss in shapes for s in ss))
    free = offered.difference(*(mig_placements.slices(s, size)
                                for _p, s, size in held))
    out = []
    for (profile, size), ss in sorted(
            starts.items(), key=lambda i: (i[0][1], -len(i[1]), i[0][0])):
        now = mig_placements.best_first(size, ss, free, shapes)
        later = [s for s in mig_placements.best_first(size, ss, offered,
                                                      shapes)
                 if s not in now]
        out += [(profile, s, size) for s in now + later]
    return out


def placement_gpus(named):
    """{device name: its GPU's uuid} of the MIG placements among
    ``named`` ({device name: (Device, Deployable)})."""
    return {name: device.uuid for name, (device, dep) in named.items()
            if dep.mig_placement}


def publication_order(named):
    """{device name: sort key} of ``named`` ({device name: (Device,
    Deployable)}) for ``spec.devices``: every device by name, but a MIG
    GPU's placements together, where the first of their names sorts, in
    ``ranked`` order on the GPU as it is now (its placements in the
    inventory, those held for claims taken: an unchanged inventory keeps
    its order, and a claim's instance made or destroyed moves the order
    to where the best fit makes the next)."""
    keys = {name: (name, 0, '') for name in named}
    gpus = {}
    for name, gpu in placement_gpus(named).items():
        gpus.setdefault(gpu, []).append(name)
    for names in gpus.values():
        first = min(names)
        rank = {p: i for i, p in enumerate(ranked(
            [named[n][1].mig_placement for n in names],
            [named[n][1].mig_placement for n in names
             if named[n][1].mig_held]))}
        for name in names:
            keys[name] = (first, rank[named[name][1].mig_placement], name)
    return keys
