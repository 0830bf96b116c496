"""NVIDIA vGPU on the vendor-specific VFIO framework (vGPU >= 17 on
Ada/Hopper/Blackwell, kernel >= 6.8): no mdev.

The GPU is an SR-IOV physical function bound to ``nvidia``
(``sriov_totalvfs`` present); its VFs (``virtfnN`` links, each with a
``physfn`` link back) stay bound to ``nvidia`` and each has
``nvidia/creatable_vgpu_types`` (the header ``ID    : vGPU Name``, then
``<id> : <name>`` per type this VF may make now: it shrinks as siblings
are given types, only the header once the card is full; ids are per card)
and ``nvidia/current_vgpu_type`` (``0``: none; writing an id makes the
vGPU, ``0`` removes it; nothing survives a reboot).

How many of a type the card can still make is not in sysfs: it is the
type's ``Max Instances`` (``nvidia-smi vgpu -s -v -i <GPU>``) less the
vGPUs of that type already made, and never more than the free VFs that
list the type. A vGPU someone else made is left alone and counts as used.
A type's deployable is ``vgpu_<id>``, resource class ``VGPU`` and trait
``CUSTOM_NVIDIA_<device id>_<type name>`` (Cyborg's nvidia driver's
naming: ``CUSTOM_NVIDIA_1EB8_T4_2B`` for "GRID T4-2B").
"""
import dataclasses
import os
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import sysfs

HEADER = ('ID', 'vGPU Name')
_LINE_RE = re.compile(r'\s*([0-9]{1,9})\s*:\s*(\S.*?)\s*')
_TYPE_ID_RE = re.compile(r'\s*vGPU Type ID\s*:\s*0x([0-9a-fA-F]{1,8})\s*')
_FIELD_RE = re.compile(r'\s*(Name|Max Instances)\s*:\s*(.*?)\s*')


@dataclasses.dataclass(frozen=True)
class VirtualFunction:
    address: str
    current: int            # 0: no vGPU on it
    creatable: dict         # {type id: name} it may make now


def parse_creatable(text, where):
    """{id: name} of a ``creatable_vgpu_types`` file; its header skipped."""
    types = {}
    for line in (text or '').splitlines():
        if not line.strip() or tuple(
                p.strip() for p in line.split(':', 1)) == HEADER:
            continue
        match = _LINE_RE.fullmatch(line)
        if match is None:
            raise exception.HostDataError(where=where, reason='not "<id> : '
                                          '<name>": %r' % line[:80])
        types[int(match.group(1))] = match.group(2)
    return types


def parse_supported(text, where):
    """{id: (name, Max Instances or None)} of ``nvidia-smi vgpu -s -v``."""
    types, current = {}, None
    for line in (text or '').splitlines():
        match = _TYPE_ID_RE.fullmatch(line)
        if match:
            current = int(match.group(1), 16)
            types[current] = [None, None]
            continue
        field = _FIELD_RE.fullmatch(line)
        if field is None or current is None:
            continue
        name, value = field.groups()
        if name == 'Name':
            types[current][0] = value
        elif value.isdigit():
            types[current][1] = int(value)
        else:
            raise exception.HostDataError(where=where, reason='Max '
                                          'Instances %r' % value[:40])
    return {i: tuple(v) for i, v in types.items()}


def _function_dir(sysfs_root, address):
    return os.path.join(sysfs_root, 'bus', 'pci', 'devices', address)


def is_vfio_pf(sysfs_root, address):
    """An SR-IOV PF bound to ``nvidia`` whose VFs carry ``nvidia/``."""
    pf = _function_dir(sysfs_root, address)
    if not os.path.exists(os.path.join(pf, 'sriov_totalvfs')):
        return False
    if os.path.basename(os.path.realpath(os.path.join(pf, 'driver'))) \
            != 'nvidia':
        return False
    return any(os.path.isdir(os.path.join(vf, 'nvidia'))
               for vf in sysfs.virtual_function_dirs(pf))


def read_vfs(sysfs_root, address):
    """The PF's VFs, each with its current and creatable types."""
    vfs = []
    for vf_dir in sysfs.virtual_function_dirs(
            _function_dir(sysfs_root, address)):
        nvidia = os.path.join(vf_dir, 'nvidia')
        where = os.path.join(nvidia, 'current_vgpu_type')
        current = sysfs.read_int(where, 0, 1 << 31)
        if current is None:
            raise exception.HostDataError(where=where, reason='unreadable')
        creatable = os.path.join(nvidia, 'creatable_vgpu_types')
        vfs.append(VirtualFunction(
            os.path.basename(vf_dir), current,
            parse_creatable(sysfs.read_text(creatable), creatable)))
    return vfs


def type_trait(device_id, name):
    """'0x2335', 'NVIDIA H200X-35C' -> CUSTOM_NVIDIA_2335_H200X_35C."""
    short = re.sub(r'^(NVIDIA|GRID)\s+', '', name, flags=re.I)
    short = re.sub(r'[^A-Z0-9]+', '_', short.upper()).strip('_')
    return 'CUSTOM_NVIDIA_%s_%s' % (device_id[-4:].upper(), short)


def can_still_make(vfs, type_id, most):
    """How many vGPUs of ``type_id`` the card can still make: free VFs
    listing it, never past ``most`` (None: unknown) less those made."""
    free = sum(1 for vf in vfs if not vf.current and type_id in vf.creatable)
    if most is None:
        return free
    made = sum(1 for vf in vfs if vf.current == type_id)
    return max(0, min(free, most - made))


def deployables(vfs, supported, device_id, traits):
    """One VGPU deployable per type the card supports or lists."""
    names = {i: n for i, (n, _) in supported.items() if n}
    for vf in vfs:
        names.update(vf.creatable)
    made = {vf.current for vf in vfs if vf.current}
    records = []
    for type_id in sorted(set(names) | made):
        name = names.get(type_id) or str(type_id)
        most = supported.get(type_id, (None, None))[1]
        records.append(device_records.DeployableRecord(
            name='vgpu_%d' % type_id, resource_class='VGPU',
            num_accelerators=can_still_make(vfs, type_id, most),
            traits=list(traits) + [type_trait(device_id, name)],
            # NOTE: no bind writes current_vgpu_type yet: shown, not
            # offered (inventory/views.py 'bind_unsupported').
            attributes={'bind': 'unsupported',
                        'vgpu_type_id': str(type_id),
                        'vgpu_type_name': name,
                        'made': str(sum(1 for vf in vfs
                                        if vf.current == type_id))}))
    return records
