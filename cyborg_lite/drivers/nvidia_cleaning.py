"""Cleaning NVIDIA GPUs between tenants with nvidia-smi.

* A whole GPU (``pgpu``) is reset: ``nvidia-smi -r -i <bus id>`` (the
  driver refuses while any process still uses the GPU, which is then a
  cleaning failure, as it must be).
* A MIG deployable (one kind of instance, see nvidia.mig_deployables) has
  its GPU instances destroyed and created again with the same profiles:
  ``nvidia-smi mig -dci`` and ``-dgi`` on those instance ids, then
  ``-cgi <profile ids> -C`` (each with its default compute instance).
  Destroying a GPU instance gives its memory slices back to the GPU; the
  new instances may get other ids, which the next discovery reports.
  The profile id of each instance is read from ``nvidia-smi mig -lgi``,
  whose rows look like (MIG user guide)::

    | GPU   Name          Profile  Instance   Placement  |
    |                       ID       ID       Start:Size |
    |====================================================|
    |   0  MIG 1g.5gb       19       13          6:1     |

* vGPU (mdev) types are not cleaned here: their memory belongs to the
  vGPU manager, not to anything nvidia-smi can reset per type.
"""
import re

from cyborg_lite.common import exception

LGI_ROW_RE = re.compile(
    r'\|\s+[0-9]+\s+MIG\s+\S+\s+([0-9]+)\s+([0-9]+)\s+[0-9]+:[0-9]+\s+\|')


def parse_gpu_instances(output):
    """{GPU instance id: profile id} from ``nvidia-smi mig -lgi`` output."""
    text = output.decode('utf-8', 'replace')
    instances = {}
    for line in text.splitlines():
        match = LGI_ROW_RE.fullmatch(line.strip())
        if match:
            instances[match.group(2)] = match.group(1)
    return instances


def reset_commands(tool, address):
    return [[tool, '-r', '-i', address]]


def mig_commands(tool, address, instance_ids, profiles):
    """Destroy the instances' compute and GPU instances, create them anew.

    :raises exception.CleaningError: an instance nvidia-smi does not list.
    """
    missing = [i for i in instance_ids if i not in profiles]
    if missing:
        raise exception.CleaningError(
            reason='GPU %s has no GPU instance %s (nvidia-smi mig -lgi '
                   'lists %s)' % (address, ', '.join(missing),
                                  ', '.join(sorted(profiles)) or 'none'))
    ids = ','.join(instance_ids)
    return [
        [tool, 'mig', '-dci', '-i', address, '-gi', ids],
        [tool, 'mig', '-dgi', '-i', address, '-gi', ids],
        [tool, 'mig', '-cgi', ','.join(profiles[i] for i in instance_ids),
         '-i', address, '-C'],
    ]


def instance_ids(deployable):
    """The GPU instance ids a MIG deployable groups, checked."""
    ids = deployable.attributes.get('gpu_instance_ids', '').split(',')
    if not all(re.fullmatch(r'[0-9]{1,4}', i) for i in ids):
        raise exception.CleaningError(
            reason='deployable %s lists GPU instances %r, not ids'
            % (deployable.name, ','.join(ids)))
    return ids
