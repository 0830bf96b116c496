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
"""
from cyborg_lite.kubernetes import names as k8s_names

SLICE = 'memory-slice-%d'
MULTIPROCESSORS = 'multiprocessors'
MEMORY = 'memory'
# The attributes the driver writes (drivers/nvidia_mig_made.py).
_START, _SIZE, _SMS = 'mig_start', 'mig_size', 'multiprocessor_count'
_GPU_SLICES, _GPU_SMS = 'gpu_memory_slices', 'gpu_multiprocessors'
_GPU_MEMORY = 'gpu_mig_memory_mb'
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
