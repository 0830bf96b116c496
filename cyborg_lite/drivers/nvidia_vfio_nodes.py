"""The VFIO device nodes a container needs to drive a vGPU VF
(drivers/base.ContainerDevicesInterface): a Kubernetes Prepare of a
vendor-specific VFIO vGPU (drivers/nvidia_vgpu_vfio.py) hands the VF over
by PCI address, and the VMM in the pod opens it through VFIO.

What they are, from the kernel's Documentation/driver-api/vfio.rst:

* the group interface: the VF's IOMMU group N is the target of its sysfs
  link ``/sys/bus/pci/devices/<BDF>/iommu_group`` (``readlink`` gives
  ``../../../../kernel/iommu_groups/26``; Documentation/ABI/testing/
  sysfs-kernel-iommu_groups); the VMM opens the container
  ``/dev/vfio/vfio`` and the group ``/dev/vfio/N``;
* the device cdev interface (iommufd, kernel >= 6.6): a device bound to
  a VFIO driver has ``/sys/bus/pci/devices/<BDF>/vfio-dev/vfioX``
  (Documentation/ABI/testing/sysfs-devices-vfio-dev) and the node
  ``/dev/vfio/devices/vfioX``, which gives nothing until it is bound to
  an iommufd, ``/dev/iommu``. "VFIO device cdev doesn't rely on VFIO
  group/container/iommu drivers": a kernel may have compiled those out.

So a VF with a cdev needs its cdev and ``/dev/iommu``, and is given the
group's nodes too where the host has them (QEMU, KubeVirt's
virt-launcher, use iommufd when both are in the pod, else the group); a
VF without one needs the group's two. A node the host lacks is an
error, as in nvidia_device_nodes.py: the container could not start.
"""
import os
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception

GROUP_NODES = ('vfio/vfio',)
CDEV_NODES = ('iommu',)


def _error(reason):
    return exception.DriverError(driver='nvidia', reason=reason)


def _function_dir(sysfs_root, address):
    return os.path.join(sysfs_root, 'bus', 'pci', 'devices', address)


def iommu_group(sysfs_root, address):
    """N of the IOMMU group of PCI function ``address``."""
    link = os.path.join(_function_dir(sysfs_root, address), 'iommu_group')
    if not os.path.islink(link):
        raise _error('PCI %s has no IOMMU group (%s is absent): VFIO '
                     'cannot hand it over; is the IOMMU on?' % (address,
                                                               link))
    group = os.path.basename(os.readlink(link))
    if not group.isdigit():
        raise _error('%s links to %r, not an IOMMU group number'
                     % (link, os.readlink(link)))
    return int(group)


def cdev(sysfs_root, address):
    """``vfioX`` of the function's VFIO device cdev, or None."""
    found = [n for n in _list(os.path.join(
        _function_dir(sysfs_root, address), 'vfio-dev'))
        if re.fullmatch(r'vfio[0-9]{1,6}', n)]
    return found[0] if len(found) == 1 else None


def _list(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _node(dev_root, name, address):
    host_path = os.path.join(dev_root, name)
    if not os.path.exists(host_path):
        raise _error('the host has no %s: the container could not use the '
                     'vGPU VF %s' % (host_path, address))
    return '/dev/' + name, host_path


def nodes(sysfs_root, dev_root, address):
    """[(path in the container, path on the host)] of VF ``address``."""
    group = ['vfio/%d' % iommu_group(sysfs_root, address)] + \
        list(GROUP_NODES)
    device = cdev(sysfs_root, address)
    if device is None:
        return [_node(dev_root, name, address) for name in group]
    needed = ['vfio/devices/' + device] + list(CDEV_NODES)
    return [_node(dev_root, name, address) for name in needed + [
        name for name in group
        if os.path.exists(os.path.join(dev_root, name))]]


def vf_of(identity, deployable_name, attach_info):
    """The VF address of a vGPU claim's handle (``attach_info``)."""
    try:
        return device_records.pci_address(attach_info or {})
    except (KeyError, TypeError, ValueError):
        raise _error('no VF of %s of GPU %s was named by the claim\'s '
                     'handle (%r): its VFIO nodes are unknown'
                     % (deployable_name, identity, attach_info))
