"""A vendor-VFIO vGPU card's counter set (KEP-4815): what keeps the
kube-scheduler from allocating more vGPUs than the card can make.

Each vGPU type of the card (drivers/nvidia_vgpu_vfio.py) is published as
``copies`` devices (its Max Instances, never more than the card's VFs:
``vgpu-<id>-<i>``), a DRA device being allocated once. Each consumes, of
the card's set (named as the card's device, as a MIG GPU's is):

* ``vfs`` 1: a vGPU takes a VF, and the operator may have enabled fewer
  VFs than a small type's Max Instances;
* ``card-shares`` L / Max Instances of its type, where L is the least
  common multiple of the card's types' Max Instances (the set's total):
  n vGPUs of one type fit exactly when n <= its Max Instances, which is
  how the driver limits creation (``nvidia-smi vgpu -s -v``: Max
  Instances per type, ENOSPC past it), and a mix never takes more than
  the whole card.

The driver's default, equal-size mode, also makes a card hold one type
at a time. No counters can say that: were two of type A and two of type
B each allowed while A and B together are not, every counter would give
A + B no more than the larger of 2A and 2B. So the slices offer only
the types the card lists now (``creatable_vgpu_types``: one type once it
holds one), and on an idle card two claims of two types allocated in one
instant leave the second Prepare refused by the driver's re-read of the
VF (nothing made; the scheduler tries again on the new slices).

A vGPU Kubernetes holds (a claim's handle) is counted by its allocated
device's consumption; every other vGPU of the card (made by a Nova bind
or by someone else) is taken out of the set's totals, so the slices
shrink and grow with the card. Pure: from the host_inventory views.
"""
import math

VFS = 'vfs'
SHARES = 'card-shares'
# The attributes drivers/nvidia_vgpu_vfio.py writes.
_TYPE, _MOST, _VFS, _MADE = ('vgpu_type_id', 'vgpu_max_instances',
                             'gpu_vfs', 'made')


def _number(attributes, key, default=None):
    try:
        return int(attributes[key])
    except (KeyError, TypeError, ValueError):
        return default


def _type_of(dep):
    """(vfs of the card, Max Instances) of a vGPU type, or None."""
    found = dict(dep.attributes)
    vfs = _number(found, _VFS)
    if _TYPE not in found or not vfs:
        return None
    most = _number(found, _MOST) or vfs
    return vfs, most


def held_by_kubernetes(dep):
    """How many of the type's handles a ResourceClaim holds."""
    return sum(1 for h in dep.attach_handles
               if h.in_use and h.k8s_claim is not None)


def _not_kubernetes(dep):
    """The type's vGPUs that no ResourceClaim holds: those made less the
    claims' (a claim's hold before its make counts as made), never fewer
    than Nova's holds (a bind's hold before its make)."""
    made = _number(dict(dep.attributes), _MADE, 0)
    nova = sum(1 for h in dep.attach_handles
               if h.in_use and h.k8s_claim is None)
    return max(made - held_by_kubernetes(dep), nova, 0)


def _card(device):
    """(vfs, L, {dep name: Max Instances}) of a vGPU card, or None."""
    types = {d.name: _type_of(d) for d in device.deployables}
    types = {name: t for name, t in types.items() if t is not None}
    if not types:
        return None
    vfs = max(v for v, _most in types.values())
    return (vfs, math.lcm(*(most for _vfs, most in types.values())),
            {name: most for name, (_v, most) in types.items()})


def copies(device, dep):
    """How many devices publish ``dep``: 0 for one that is no vGPU type,
    or one the card can make none of now and no claim holds (the slices
    shrink as ``creatable_vgpu_types`` does)."""
    card = _type_of(dep) and _card(device)
    if not card:
        return 0
    if dep.num_accelerators <= 0 and not held_by_kubernetes(dep):
        return 0
    return min(card[2][dep.name], card[0])


def consumed(device, dep):
    """((counter, quantity), ...) a device of the type consumes; ()
    for a deployable that is no vGPU type."""
    # NOTE: the card's types read only for a type (a host's regions
    # are many).
    card = _type_of(dep) and _card(device)
    if not card:
        return ()
    _vfs, shares, most = card
    return ((SHARES, str(shares // most[dep.name])), (VFS, '1'))


def totals(device):
    """((counter, quantity), ...) of the card's set: its VFs and shares
    less what the vGPUs no claim holds take; () for no vGPU card."""
    card = _card(device)
    if card is None:
        return ()
    vfs, shares, most = card
    others = {d.name: _not_kubernetes(d) for d in device.deployables
              if d.name in most}
    return ((SHARES, str(max(0, shares - sum(
                n * (shares // most[name]) for name, n in others.items())))),
            (VFS, str(max(0, vfs - sum(others.values())))))
