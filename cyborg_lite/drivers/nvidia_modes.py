"""A GPU's mode changes only once nothing this host made on it is left.

Each GPU of a host runs one mode at a time: ``whole`` (passthrough, a
container's whole GPU), ``mig`` (MIG mode: instances made at Prepare,
nvidia_mig_made.py, or at a bind for a MIG-backed vGPU on a VF,
nvidia_mig_vgpu.py) or ``vgpu`` (SR-IOV VFs making time-sliced vGPUs,
nvidia_vgpu_vfio.py); the three meet on one host. Should a GPU show
another mode while instances this host made in the old one are not
cleaned yet (their holders, a claim or a bind, have them; the hardware
would normally refuse), the driver goes on reporting the GPU as its last
scan in the old mode found those of it: nothing of the new mode is
offered beside what is held, the held deployables stay in the report (so
their clean, which waits for a reported region, starts at their
release), and once the clean removed what was made, the next scan
reports the new mode. An agent restarted meanwhile has no last scan: it
reports nothing of the GPU (the conductor keeps what is held, out of
view).
"""
import logging

from cyborg_lite.drivers import nvidia_mig_made

LOG = logging.getLogger(__name__)

WHOLE, MIG, VGPU = 'whole', 'mig', 'vgpu'


def held_modes(mig_noted, vgpu_pfs, mig_vgpu_pfs=()):
    """{GPU address: modes of the instances this host made on it and has
    not cleaned}: ``mig_noted``, nvidia_mig_made.Made.read(); ``vgpu_pfs``,
    the PFs of the VFs nvidia_vgpu_vfio.MadeHere notes
    (nvidia_vgpu_vfio.types_by_pf) but for MIG-backed vGPUs, whose PFs
    are ``mig_vgpu_pfs`` (nvidia_mig_vgpu.Noted)."""
    modes = {gpu: {MIG} for gpu, noted in mig_noted.items() if noted}
    for pf in mig_vgpu_pfs:
        modes.setdefault(pf, set()).add(MIG)
    for pf in vgpu_pfs:
        modes.setdefault(pf, set()).add(VGPU)
    return modes


def _made_here(deployable, mig_keys, vgpu_types):
    placement = nvidia_mig_made.placement_of_name(deployable.name)
    if placement is not None:
        return nvidia_mig_made.placement_key(*placement) in mig_keys
    return deployable.attributes.get('vgpu_type_id') in vgpu_types


class LastSeen:
    """Each GPU's mode and deployables as its last scan found them."""

    def __init__(self):
        self._seen = {}

    def settle(self, address, mode, deployables, held, mig_keys=(),
               vgpu_types=()):
        """The deployables to report for GPU ``address`` scanned in
        ``mode``: ``deployables`` themselves, unless ``held`` (the
        modes of what this host made there) names another mode; then
        those of the last scan this host made something of
        (``mig_keys``: its noted placements' keys; ``vgpu_types``: the
        type ids, as text, its VFs hold)."""
        others = set(held) - {mode}
        if not others:
            self._seen[address] = (mode, deployables)
            return deployables
        last_mode, last = self._seen.get(address, (None, []))
        kept = [d for d in last if last_mode in others and
                _made_here(d, set(mig_keys), set(vgpu_types))]
        LOG.warning('GPU %s shows %s mode while %s instances this host made '
                    'on it are not cleaned yet: %d of its %s deployables '
                    'reported as last seen, nothing of the new mode',
                    address, mode, ', '.join(sorted(others)), len(kept),
                    last_mode or 'earlier')
        return kept
