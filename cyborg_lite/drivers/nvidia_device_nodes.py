"""The device nodes a container needs to use an NVIDIA GPU or MIG
instances of it (drivers/base.ContainerDevicesInterface).

What they are, from NVIDIA's documents and sources:

* a GPU: the driver's control nodes ``/dev/nvidiactl``, ``/dev/nvidia-uvm``
  and ``/dev/nvidia-uvm-tools``, and the GPU's own ``/dev/nvidia<minor>``
  (MIG user guide, "Device Nodes and Capabilities",
  https://docs.nvidia.com/datacenter/tesla/mig-user-guide/device-nodes-and-capabilities.html);
  the minor is the GPU's ``<minor_number>`` in ``nvidia-smi -q -x``
  (nvmlDeviceGetMinorNumber: "the device node file for each GPU will have
  the form /dev/nvidia[minor number]");
* a MIG instance: its GPU's nodes, and the capability nodes
  ``/dev/nvidia-caps/nvidia-cap<N>`` of its GPU instance and of its
  compute instance. N is the capability's minor: the kernel module
  (open-gpu-kernel-modules kernel-open/nvidia/nv-caps.c) prints it in
  ``/proc/driver/nvidia/capabilities/gpu<GPU minor>/mig/gi<GI>/access``
  and ``.../gi<GI>/ci<CI>/access`` as ``DeviceFileMinor: N`` (then
  ``DeviceFileMode`` and ``DeviceFileModify`` lines), and lists the same
  minors for every possible instance in ``/proc/driver/nvidia-caps/
  mig-minors`` (``gpu<minor>/gi<GI>/access N``), which the container
  toolkit reads (nvidia-container-toolkit internal/nvcaps). The
  per-instance file is read here: it exists only while the instance
  does, so reading it checks that too.

Only nodes the host has are named: one it lacks is an error, as a
container given a path that is not there would not start; but
``nvidia-uvm-tools`` (profilers and debuggers read it, CUDA itself does
not) is left out where the host has none.
"""
import os
import re

from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia_mig_made

CONTROL_NODES = ('nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools')
# Named only where the host has it.
OPTIONAL_NODES = frozenset(['nvidia-uvm-tools'])
CAPS_DIR = 'nvidia-caps'
_MINOR_RE = re.compile(r'^DeviceFileMinor: ([0-9]{1,5})$', re.M)


def _error(reason):
    return exception.DriverError(driver='nvidia', reason=reason)


def gpu_minor(gpu, identity):
    """The ``<minor_number>`` of a ``<gpu>`` element of ``nvidia-smi -q
    -x``."""
    found = gpu.find('minor_number')
    text = (found.text or '').strip() if found is not None else ''
    if not text.isdigit():
        raise _error('nvidia-smi shows no minor number for GPU %s (%r): '
                     'its device node is unknown' % (identity, text or None))
    return int(text)


def capability_file(proc_root, minor, gi_id, ci_id=None):
    """The /proc file of a GPU instance's capability (or, with ``ci_id``,
    of its compute instance's)."""
    path = os.path.join(proc_root, 'driver', 'nvidia', 'capabilities',
                        'gpu%d' % minor, 'mig', 'gi%d' % gi_id)
    if ci_id is not None:
        path = os.path.join(path, 'ci%d' % ci_id)
    return os.path.join(path, 'access')


def capability_minor(proc_root, minor, gi_id, ci_id=None):
    """N of the instance's ``nvidia-cap<N>``, from its /proc file."""
    path = capability_file(proc_root, minor, gi_id, ci_id)
    what = 'GPU instance %d' % gi_id if ci_id is None else \
        'compute instance %d of GPU instance %d' % (ci_id, gi_id)
    try:
        with open(path) as f:
            text = f.read(4096)
    except FileNotFoundError:
        raise _error('no MIG %s on the GPU of minor %d (%s is absent)'
                     % (what, minor, path))
    except OSError as e:
        raise _error('cannot read %s: %s' % (path, e))
    match = _MINOR_RE.search(text)
    if match is None:
        raise _error('%s has no "DeviceFileMinor: <n>" line: %r'
                     % (path, text[:80]))
    return int(match.group(1))


def _node(dev_root, name):
    """(path in the container, path on the host) of /dev/<name>, which
    the host must have."""
    host_path = os.path.join(dev_root, name)
    if not os.path.exists(host_path):
        raise _error('the host has no %s: the container could not use '
                     'the GPU' % host_path)
    return '/dev/' + name, host_path


def nodes(dev_root, proc_root, minor, instances=()):
    """[(path in the container, path on the host)] of the GPU of
    ``minor`` and of its MIG ``instances``, [(GI id, CI id)]."""
    names = list(CONTROL_NODES) + ['nvidia%d' % minor]
    for gi_id, ci_id in instances:
        for cap in (capability_minor(proc_root, minor, gi_id),
                    capability_minor(proc_root, minor, gi_id, ci_id)):
            names.append('%s/nvidia-cap%d' % (CAPS_DIR, cap))
    return [_node(dev_root, name) for name in names
            if name not in OPTIONAL_NODES or
            os.path.exists(os.path.join(dev_root, name))]


def xml_instances(gpu, gi_ids):
    """[(GI id, CI id)] of the ``<mig_device>`` elements whose GPU
    instance is one of ``gi_ids``, as ``nvidia-smi -q -x`` lists them."""
    wanted = {str(i) for i in gi_ids}
    out = []
    for mig in gpu.findall('mig_devices/mig_device'):
        gi = (mig.findtext('gpu_instance_id') or '').strip()
        ci = (mig.findtext('compute_instance_id') or '').strip()
        if gi in wanted and gi.isdigit() and ci.isdigit():
            out.append((int(gi), int(ci)))
    return out


def of_deployable(gpu, identity, deployable_name, made_here, someone_made,
                  dev_root, proc_root, vf_nodes=None):
    """The nodes of one deployable of the GPU ``gpu`` (its ``<gpu>``
    element): ``pgpu`` the GPU's; a MIG placement made at Prepare
    (drivers/nvidia_mig_made.py) those of the GPU and compute instance
    this host made there, ``made_here("<profile id>:<start>")`` -> (GI id,
    CI id) or None; a kind of MIG instance someone made (one Kubernetes
    device holding them all) those of each, ``someone_made`` {deployable
    name: [GI id]}; a vGPU type those of the VF the claim's handle
    names, ``vf_nodes()`` (drivers/nvidia_vfio_nodes.py)."""
    placement = nvidia_mig_made.placement_of_name(deployable_name)
    if placement is not None:
        made = made_here(nvidia_mig_made.placement_key(*placement))
        instances = [made] if made is not None else []
    elif deployable_name in someone_made:
        instances = xml_instances(gpu, someone_made[deployable_name])
    elif deployable_name == 'pgpu':
        instances = None
    elif deployable_name.startswith('vgpu_') and vf_nodes is not None:
        return vf_nodes()
    else:
        raise _error('GPU %s has no deployable %s' % (identity,
                                                      deployable_name))
    if instances == []:
        raise _error('GPU %s has no MIG instance for %s now'
                     % (identity, deployable_name))
    return nodes(dev_root, proc_root, gpu_minor(gpu, identity),
                 instances or ())
