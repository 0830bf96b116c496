"""MIG-backed vGPUs: a MIG instance made at Nova's bind and handed to the
guest on an SR-IOV VF (vendor-specific VFIO, Hopper and later, kernel
>= 6.8). A guest cannot be given a MIG instance otherwise.

The GPU is in MIG mode with its VFs enabled (``sriov-manage -e`` first:
it wipes every GPU instance). ``nvidia-smi vgpu -s -v`` gives each
MIG-backed type its ``GPU Instance Profile ID`` (``N/A`` for a
time-sliced type). A VF lists a MIG-backed type in its
``creatable_vgpu_types`` only while a GPU instance of that profile is
there with room for it (none: the list is only the header, and a write
of the type fails with EIO); the driver, not the writer, picks the GPU
instance the vGPU lands on, and the VF's ``nvidia/gpu_instance_id``
reads it back once a type is set (ENXIO before).

Offered per MIG-backed type (``vgpu_<id>``, as a time-sliced type is,
drivers/nvidia_vgpu_vfio.py): what the GPU's free memory slices can
still make of its profile, never more than the free VFs or the type's
Max Instances; its handles the free VFs and those holding one this host
made. Placement cannot see where an instance sits, so each type's count
is checked after the claim: the bind makes the instance where it fits
best now (common/mig_placements.best_first) or is refused, and the
report before the bind returns takes what it made out of every type and
placement that overlaps it.

A bind (``make``): the GPU instance is made (noted before and after
``-cgi``), the type written into the handle's VF, and the VF's
``gpu_instance_id`` must read the instance made (another free instance
of the profile, someone else's, would be the driver's pick: undone,
refused). Its release (``remove``) writes ``0`` into the VF, then
destroys the instance; the type's clean does both for every vGPU of the
type this host made, and destroys an instance noted whose vGPU never
came (a bind killed between the two).

``Noted`` keeps it in a JSON file, ``{VF address: {"gpu": PF, "type":
type id, "placement": "<profile id>:<start>", "gi": GPU instance id or
null}}``: noted before ``-cgi``, its id after, left out after the
instance is destroyed. The VF's type is in nvidia_vgpu_vfio.MadeHere as
any vGPU this host made.
"""
import dataclasses
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.drivers import nvidia_vgpu_vfio
from cyborg_lite.drivers import state_file
from cyborg_lite.drivers import sysfs


_TYPE_ID_RE = re.compile(r'\s*vGPU Type ID\s*:\s*0x([0-9a-fA-F]{1,8})\s*')
_PROFILE_RE = re.compile(r'\s*GPU Instance Profile ID\s*:\s*(.*?)\s*')


def parse_profiles(text):
    """{vGPU type id: GPU instance profile id} of the MIG-backed types
    of ``nvidia-smi vgpu -s -v`` (a time-sliced type's ``N/A`` left
    out)."""
    found, current = {}, None
    for line in (text or '').splitlines():
        match = _TYPE_ID_RE.fullmatch(line)
        if match:
            current = int(match.group(1), 16)
            continue
        match = _PROFILE_RE.fullmatch(line)
        if match and current is not None and match.group(1).isdigit():
            found[current] = int(match.group(1))
    return found


def gpu_instance_of(sysfs_root, vf):
    """The GPU instance id the VF's vGPU is on, or None (no type set:
    ENXIO; or a type not backed by MIG)."""
    path = '%s/bus/pci/devices/%s/nvidia/gpu_instance_id' % (sysfs_root, vf)
    try:
        return sysfs.read_int(path, 0, 1 << 16)
    except exception.HostDataError:
        return None


@dataclasses.dataclass(frozen=True)
class Gpu:
    """What the offer of one MIG GPU with VFs is made from."""
    profiles: tuple         # nvidia_mig.Profile
    instances: tuple        # nvidia_mig.Instance, every one there
    vfs: tuple              # nvidia_vgpu_vfio.VirtualFunction


def deployables(gpu, supported, type_profiles, device_id, traits,
                made_here):
    """One VGPU deployable per MIG-backed type whose profile the GPU has
    (``supported``: nvidia_vgpu_vfio.parse_supported's; ``type_profiles``:
    ``parse_profiles``'; ``made_here``: {VF: type id} this host made)."""
    by_id = {p.id: p for p in gpu.profiles}
    free = nvidia_mig.free_slices(nvidia_mig.slice_count(gpu.profiles),
                                  gpu.instances)
    records = []
    for type_id, profile_id in sorted(type_profiles.items()):
        profile = by_id.get(profile_id)
        if profile is None:
            continue
        name, most = supported.get(type_id, (None, None))
        name = name or str(type_id)
        made = [vf for vf in gpu.vfs if vf.current == type_id]
        ours = [vf for vf in made if made_here.get(vf.address) == type_id]
        free_vfs = [vf for vf in gpu.vfs if not vf.current]
        same = sum(1 for i in gpu.instances if i.profile_id == profile_id)
        can = min(nvidia_mig.makeable(profile, free, same), len(free_vfs))
        if most is not None:
            can = min(can, max(0, most - len(made)))
        records.append(device_records.DeployableRecord(
            name='vgpu_%d' % type_id, resource_class='VGPU',
            num_accelerators=can + len(ours),
            local_memory_mb=int(profile.memory_gib * 1024),
            traits=list(traits) + [nvidia_vgpu_vfio.type_trait(device_id,
                                                               name)],
            # A bind makes it; Kubernetes' Prepare takes MIG placements,
            # not these (no counters' attributes: kubernetes/view.py).
            attributes=dict([device_records.MAKES_INSTANCE],
                            vgpu_type_id=str(type_id), vgpu_type_name=name,
                            made=str(len(made)),
                            mig_backed_profile=profile.name,
                            mig_backed_profile_id=str(profile_id)),
            # A VF's handle, as a time-sliced type's: the database locks
            # the VF, whichever type it is given (db/attach_handles).
            attach_handles=[nvidia_vgpu_vfio.handle(vf, type_id) for vf in
                            sorted(ours + free_vfs,
                                   key=lambda v: v.address)]))
    return records


class Noted:
    """The GPU instances this host's binds made for MIG-backed vGPUs, by
    VF, in a file that survives the agent (kill -9 included)."""

    def __init__(self, path):
        self.path = path
        self._file = state_file.StateFile(path)

    def read(self):
        """{VF: {"gpu", "type", "placement", "gi"}}."""
        return {str(vf): dict(entry) for vf, entry in
                self._file.read().items() if isinstance(entry, dict)}

    def note(self, vf, gpu, type_id, placement, gi_id=None):
        def edit(noted):
            noted[vf] = {'gpu': gpu, 'type': type_id,
                         'placement': placement, 'gi': gi_id}
        self._file.change(edit)

    def forget(self, vf):
        self._file.change(lambda noted: noted.pop(vf, None))

    def instances(self, gpu):
        """The GI ids noted on ``gpu``."""
        return {e['gi'] for e in self.read().values()
                if e['gpu'] == gpu and e['gi'] is not None}


class Refused(exception.DriverError):
    """A MIG-backed vGPU could not be made; nothing was left made."""
    msg_fmt = 'MIG-backed vGPU on %(address)s: %(reason)s'


def choose_start(gpu_profiles, instances, profile_id):
    """(profile, start) where an instance of ``profile_id`` goes now:
    the best fit on the GPU's free slices; Refused when none fits."""
    by_id = {p.id: p for p in gpu_profiles}
    profile = by_id.get(profile_id)
    if profile is None:
        raise Refused(address='?', reason='the GPU has no MIG profile %d'
                      % profile_id)
    free = nvidia_mig.free_slices(nvidia_mig.slice_count(gpu_profiles),
                                  instances)
    starts = mig_placements.best_first(
        profile.size, profile.starts, free,
        [(p.size, p.starts) for p in gpu_profiles])
    if not starts:
        raise Refused(address='?', reason='no room for MIG profile %s on '
                      'the GPU now (its free memory slices: %s)' % (
                          profile.name, sorted(free) or 'none'))
    return profile, starts[0]


def adopt(noted, gpu, instances):
    """Give each VF noted on ``gpu`` before its ``-cgi`` finished the id
    of the instance found at its placement; forget one with none there."""
    at = {nvidia_mig_made.placement_key(i.profile_id, i.start): i.gi_id
          for i in instances}
    for vf, entry in noted.read().items():
        if entry['gpu'] != gpu:
            continue
        found = at.get(entry['placement'])
        if found is None:
            noted.forget(vf)
        elif entry['gi'] is None:
            noted.note(vf, gpu, entry['type'], entry['placement'], found)
        elif entry['gi'] != found:
            # NOTE: ours was destroyed outside us and someone made
            # another there: theirs now.
            noted.forget(vf)
