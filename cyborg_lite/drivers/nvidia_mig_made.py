"""MIG instances made at Kubernetes' Prepare: one deployable per
(profile, placement) a MIG GPU can make, and the instances this host made.

With ``[nvidia_driver]mig_on_demand`` on, a GPU in MIG mode is offered as
every profile at every placement its free memory slices allow
(``nvidia-smi mig -lgip`` / ``-lgipp``, drivers/nvidia_mig.py), as
NVIDIA's DRA driver offers it: the deployable ``mig-<profile>-<profile
id>-<start>`` (``mig-1g5gb-19-6``), whose one PCI handle is the GPU's
function with ``mig_placement: "<profile id>:<start>"``. In the
ResourceSlices each consumes the GPU's counters (kubernetes/view.py): one
``memory-slice-<i>`` per slice it takes, so the kube-scheduler never
allocates two that overlap. A placement whose slices an instance someone
else made takes is not offered; one of ours (made for a claim) is, since
Kubernetes' allocation holds its counters.

Prepare makes it (``make``): ``nvidia-smi mig -i <GPU> -cgi <profile
id>:<start> -C`` (a profile tuple's placement specifier: a colon and the
start), the GPU instance and its default compute instance. The clean of
the deployable destroys the one this host made there (``destroy``:
``-dci`` then ``-dgi`` on its GPU instance id), never another.

``Made`` keeps what this host made in a JSON file, ``{GPU address:
{"<profile id>:<start>": GPU instance id or null, "<profile id>:<start>/ci":
compute instance id}}``: the placement is noted (null) before ``-cgi``
runs and its ids after, so an agent killed in between finds, at its next
start, the instance at that placement and adopts it as its own
(``adopt``); a placement noted whose instance is not there is forgotten.
The compute instance's id names its capability node
(nvidia_device_nodes.py); it is read back from ``-C``'s second line, not
assumed 0. It has a key of its own, not a value beside the GI id, so that
the previous release (whose ``read`` takes each value as one int) reads
the file as it is; its ``adopt`` drops the key as a placement it does not
know. A placement without it (noted by that release, or adopted after a
kill) has its compute instance listed by ``nvidia-smi mig -lci`` when a
container asks for its nodes (``compute_instance``).
"""
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import state_file
from cyborg_lite.drivers import sysfs

# Attributes of a placement's deployable (kubernetes/view.py reads them).
PROFILE_ID = 'mig_profile_id'
START = 'mig_start'
SIZE = 'mig_size'
MULTIPROCESSORS = 'multiprocessor_count'
GPU_SLICES = 'gpu_memory_slices'
GPU_MULTIPROCESSORS = 'gpu_multiprocessors'
GPU_MEMORY_MB = 'gpu_mig_memory_mb'
# The handle's key naming the placement (common/device_records).
PLACEMENT_KEY = 'mig_placement'
# ``nvidia-smi mig -lgi`` exits with NVML's NOT_FOUND when a GPU has no
# GPU instance ("No GPU instances found: Not Found").
NOT_FOUND_EXIT = 6
_CREATED_GI_RE = re.compile(
    r'Successfully created GPU instance ID\s+([0-9]+) on GPU\s+[0-9]+ '
    r'using profile .*\(ID\s+([0-9]+)\)')
# ``-C``'s second line; its "(ID n)" is the compute instance profile's.
_CREATED_CI_RE = re.compile(
    r'Successfully created compute instance ID\s+([0-9]+) on GPU\s+[0-9]+'
    r' GPU instance ID\s+([0-9]+) using profile ')
# A row of ``nvidia-smi mig -lci``: GPU, GPU instance id, name, compute
# instance profile id, compute instance id, and (newer drivers)
# Placement Start:Size.
_LCI_ROW_RE = re.compile(
    r'\|\s+[0-9]+\s+([0-9]+)\s+MIG\s+\S+\s+[0-9]+\s+([0-9]+)'
    r'(?:\s+[0-9]+:[0-9]+)?\s+\|')
# The key of a placement's compute instance id in its GPU's map.
CI_SUFFIX = '/ci'


def placement_key(profile_id, start):
    return '%d:%d' % (profile_id, start)


def parse_placement(attach_info):
    """(profile id, start) of a placement handle's attach_info, or None
    when it names no placement."""
    value = (attach_info or {}).get(PLACEMENT_KEY)
    if value is None:
        return None
    match = re.fullmatch(r'([0-9]{1,4}):([0-9]{1,2})', str(value))
    if match is None:
        raise exception.DriverError(driver='nvidia', reason='bad MIG '
                                    'placement %r' % (value,))
    return int(match.group(1)), int(match.group(2))


def placement_of_name(deployable_name):
    """(profile id, start) of a placement deployable's name, or None."""
    match = re.fullmatch(r'mig-[a-z0-9]+-([0-9]{1,4})-([0-9]{1,2})',
                         deployable_name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _memory_mb(profile):
    return int(profile.memory_gib * 1024)


def deployable_name(profile, start):
    """``mig-<name without punctuation>-<profile id>-<start>``."""
    return 'mig-%s-%d-%d' % (re.sub(r'[^a-z0-9]', '', profile.name.lower()),
                             profile.id, start)


def placement_deployables(address, gpu_profiles, instances, ours, traits):
    """One DeployableRecord per (profile, start) whose slices no instance
    but ours takes; ``instances``: the GPU's (nvidia_mig.parse_lgi),
    ``ours``: the GPU instance ids this host made."""
    count = nvidia_mig.slice_count(gpu_profiles)
    free = nvidia_mig.free_slices(
        count, [i for i in instances if i.gi_id not in ours])
    gpu = {GPU_SLICES: count,
           GPU_MULTIPROCESSORS: max(p.multiprocessors for p in gpu_profiles),
           GPU_MEMORY_MB: max(_memory_mb(p) for p in gpu_profiles)}
    out = []
    for profile in gpu_profiles:
        for start in nvidia_mig.valid_starts(profile, free):
            info = dict(sysfs.pci_attach_info(address),
                        **{PLACEMENT_KEY: placement_key(profile.id, start)})
            attributes = dict(gpu, **{
                # Placement cannot see where an instance sits: Nova's bind
                # is refused; Kubernetes' Prepare makes it.
                'bind': 'unsupported',
                device_records.PREPARE_MAKES[0]:
                    device_records.PREPARE_MAKES[1],
                PROFILE_ID: profile.id, 'mig_profile': profile.name,
                START: start, SIZE: profile.size,
                MULTIPROCESSORS: profile.multiprocessors})
            out.append(device_records.DeployableRecord(
                name=deployable_name(profile, start), resource_class='VGPU',
                local_memory_mb=_memory_mb(profile), traits=list(traits),
                attributes=attributes,
                attach_handles=[device_records.AttachHandleRecord(
                    'PCI', info)]))
    return out


class Made:
    """The MIG instances this host made, by GPU and placement, in a file
    that survives the agent (kill -9 included) and is read by the next
    release as it is."""

    def __init__(self, path):
        self.path = path
        self._file = state_file.StateFile(path)

    def _placements(self):
        return {str(gpu): {str(k): (None if v is None else int(v))
                           for k, v in placements.items()}
                for gpu, placements in self._file.read().items()}

    def read(self):
        """{GPU address: {"<profile id>:<start>": GI id or None}}."""
        return {gpu: {k: v for k, v in placements.items()
                      if not k.endswith(CI_SUFFIX)}
                for gpu, placements in self._placements().items()}

    def compute_instances(self, gpu):
        """{"<profile id>:<start>": CI id} of the placements of ``gpu``
        whose compute instance id was noted."""
        return {k[:-len(CI_SUFFIX)]: v
                for k, v in self._placements().get(gpu, {}).items()
                if k.endswith(CI_SUFFIX) and v is not None}

    def _change(self, gpu, key, gi_id, ci_id=None, drop=False):
        def edit(noted):
            placements = noted.setdefault(gpu, {})
            placements.pop(key + CI_SUFFIX, None)
            if drop:
                placements.pop(key, None)
            else:
                placements[key] = gi_id
                if ci_id is not None:
                    placements[key + CI_SUFFIX] = ci_id
            if not placements:
                noted.pop(gpu)
        self._file.change(edit)

    def note(self, gpu, key, gi_id=None, ci_id=None):
        self._change(gpu, key, gi_id, ci_id)

    def forget(self, gpu, key):
        self._change(gpu, key, None, drop=True)

    def adopt(self, gpu, instances):
        """The GI ids of ``gpu``'s instances this host made: a placement
        noted before its ``-cgi`` whose id was not (the agent died in
        between) takes the id of the instance found there; one noted with
        nothing there is forgotten."""
        at = {placement_key(i.profile_id, i.start): i.gi_id
              for i in instances}
        ours = set()
        for key, gi_id in self.read().get(gpu, {}).items():
            found = at.get(key)
            if found is None:
                self.forget(gpu, key)
            elif gi_id is None or gi_id == found:
                if gi_id is None:
                    self.note(gpu, key, found)
                ours.add(found)
            else:
                # NOTE: ours was destroyed outside us and someone made
                # another there: theirs now.
                self.forget(gpu, key)
        return ours


def create_argv(tool, address, profile_id, start):
    return [tool, 'mig', '-i', address, '-cgi',
            placement_key(profile_id, start), '-C']


def destroy_argvs(tool, address, gi_id):
    return [[tool, 'mig', '-dci', '-i', address, '-gi', str(gi_id)],
            [tool, 'mig', '-dgi', '-i', address, '-gi', str(gi_id)]]


def created_gi(output, profile_id):
    """The GPU instance id ``-cgi`` printed it made of ``profile_id``."""
    text = output.decode('utf-8', 'replace') if isinstance(
        output, bytes) else output
    for match in _CREATED_GI_RE.finditer(text):
        if int(match.group(2)) == profile_id:
            return int(match.group(1))
    raise exception.HostDataError(where='nvidia-smi mig -cgi',
                                  reason='no "Successfully created GPU '
                                  'instance" line: %r' % text[:200])


def created_ci(output, gi_id):
    """The compute instance id ``-cgi ... -C`` printed it made in GPU
    instance ``gi_id`` ("Successfully created compute instance ID  0 on
    GPU  0 GPU instance ID  2 using profile MIG 3g.20gb (ID  2)", as the
    MIG user guide's examples show it), or None when it printed none."""
    text = output.decode('utf-8', 'replace') if isinstance(
        output, bytes) else output
    for match in _CREATED_CI_RE.finditer(text):
        if int(match.group(2)) == gi_id:
            return int(match.group(1))
    return None


def lci_argv(tool, address, gi_id):
    return [tool, 'mig', '-lci', '-i', address, '-gi', str(gi_id)]


def parse_lci(output, gi_id):
    """The compute instance ids of GPU instance ``gi_id`` in a ``nvidia-smi
    mig -lci`` table (rows ``|   0      7       MIG 1g.10gb          0
    0          0:1     |``: GPU, GPU instance, name, profile id, compute
    instance id, placement)."""
    text = output.decode('utf-8', 'replace') if isinstance(
        output, bytes) else output
    return sorted(int(m.group(2)) for m in map(_LCI_ROW_RE.fullmatch,
                                               text.splitlines())
                  if m is not None and int(m.group(1)) == gi_id)


def only_compute_instance(ci_ids, address, gi_id):
    """The one compute instance of a GPU instance made here whose id was
    not noted: ``-C`` made one; none or several (someone changed them)
    leave no node a container could be given."""
    if len(ci_ids) != 1:
        raise exception.DriverError(
            driver='nvidia', reason='MIG GPU instance %d of GPU %s has %s: '
            'its compute instance is unknown' % (
                gi_id, address, 'compute instances %s' % ', '.join(
                    map(str, ci_ids)) if ci_ids else 'no compute instance'))
    return ci_ids[0]


def listed_compute_instances(run, tool, address, gi_id):
    """The compute instance ids ``nvidia-smi mig -lci -i <GPU> -gi <GI>``
    lists (``run(argv)`` -> its output); none when it exits with NVML's
    NOT_FOUND ("No compute instances found: Not Found")."""
    try:
        output = run(lci_argv(tool, address, gi_id))
    except exception.DriverError as e:
        if ' exited with %d:' % NOT_FOUND_EXIT in e.format_message():
            return []
        raise
    return parse_lci(output, gi_id)


def instance_at(made, address, key, run, tool):
    """(GI id, CI id) of the instance this host made at placement ``key``
    of GPU ``address``, or None when it made none there: the CI id noted
    at ``-cgi``, else (noted by the previous release, or adopted) the one
    compute instance ``-lci`` lists in that GPU instance."""
    gi_id = made.read().get(address, {}).get(key)
    if gi_id is None:
        return None
    ci_id = made.compute_instances(address).get(key)
    if ci_id is None:
        ci_id = only_compute_instance(
            listed_compute_instances(run, tool, address, gi_id), address,
            gi_id)
    return gi_id, ci_id
