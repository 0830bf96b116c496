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

A Nova bind or a Kubernetes Prepare makes the vGPU (``make``): the
conductor holds a VF's handle, the agent writes the type into it and
hands the VF over as a PCI device (asked again, it answers the same VF);
the type's clean, once nothing holds it, writes ``0`` into the VFs this
host made (``remove_made_here``), again while a guest has one open.
"""
import dataclasses
import errno
import os
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import state_file
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


def types_by_pf(sysfs_root, made_here):
    """{PF address: {type id}} of the VFs ``made_here`` ({VF address:
    type id}) still on the bus."""
    found = {}
    for vf, type_id in made_here.items():
        link = os.path.join(_function_dir(sysfs_root, vf), 'physfn')
        if os.path.islink(link):
            found.setdefault(os.path.basename(os.path.realpath(link)),
                             set()).add(type_id)
    return found


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


def handle(vf, type_id):
    """A VF as a PCI attach handle of one type: its address, and the type
    a bind writes into it (``vgpu_type``; a handle per type, so that no
    two types are one accelerator to a scheduler, common/
    shared_functions.py; the database's lock is the VF's:
    db/attach_handles.function_key leaves the type out)."""
    return device_records.AttachHandleRecord(
        'PCI', dict(sysfs.pci_attach_info(vf.address),
                    vgpu_type=str(type_id)))


def deployables(vfs, supported, device_id, traits, made_here=None):
    """One VGPU deployable per type the card supports or lists.

    ``made_here``: {VF address: type id} this host's binds made (a
    ``MadeHere``). A type's handles are the free VFs that list it and the
    VFs holding it that were made here; its count, what the card can
    still make plus those made here (their binds' allocations hold them).
    A vGPU made by someone else is neither: left alone, counted as used.
    """
    made_here = made_here or {}
    names = {i: n for i, (n, _) in supported.items() if n}
    for vf in vfs:
        names.update(vf.creatable)
    made = {vf.current for vf in vfs if vf.current}
    records = []
    for type_id in sorted(set(names) | made):
        name = names.get(type_id) or str(type_id)
        most = supported.get(type_id, (None, None))[1]
        ours = [vf for vf in vfs if vf.current == type_id and
                made_here.get(vf.address) == type_id]
        free = [vf for vf in vfs if not vf.current and
                type_id in vf.creatable]
        records.append(device_records.DeployableRecord(
            name='vgpu_%d' % type_id, resource_class='VGPU',
            num_accelerators=can_still_make(vfs, type_id, most) + len(ours),
            traits=list(traits) + [type_trait(device_id, name)],
            # A bind makes the vGPU: device_records.MAKES_INSTANCE.
            attributes=dict([device_records.MAKES_INSTANCE],
                            vgpu_type_id=str(type_id), vgpu_type_name=name,
                            made=str(sum(1 for vf in vfs
                                         if vf.current == type_id)),
                            # What Kubernetes' counters of the card are
                            # made of (kubernetes/vgpu_counters.py).
                            gpu_vfs=str(len(vfs)),
                            **({'vgpu_max_instances': str(most)}
                               if most else {})),
            attach_handles=[handle(vf, type_id) for vf in
                            sorted(ours + free, key=lambda v: v.address)]))
    return records


class MadeHere:
    """The VFs this host's binds gave a type, kept in a file (JSON
    ``{VF address: type id}``) so that an agent restarted (kill -9
    included) still tells its own vGPUs from those someone else made.
    A VF is written here before its type is written to sysfs and left
    out after its ``0`` is: a crash between the two leaves a VF noted
    that may hold nothing, never one made and forgotten (which would
    then be someone else's, left alone for ever)."""

    def __init__(self, path):
        self.path = path
        self._file = state_file.StateFile(path)

    def read(self):
        return {str(vf): int(t) for vf, t in self._file.read().items()}

    def _change(self, address, type_id):
        def edit(noted):
            if type_id:
                noted[address] = type_id
            else:
                noted.pop(address, None)
        self._file.change(edit)

    def note(self, address, type_id):
        self._change(address, type_id)

    def forget(self, address):
        self._change(address, 0)


class VgpuRefused(exception.DriverError):
    """A vGPU could not be made or removed on a VF; nothing was changed."""
    msg_fmt = 'vGPU on %(address)s: %(reason)s'


class VgpuBusy(VgpuRefused, exception.InstanceBusy):
    """The kernel refused with EBUSY: a guest has the VF open."""
    msg_fmt = VgpuRefused.msg_fmt


def write_attribute(path, text):
    """Write a sysfs attribute as the kernel takes it (one write; the
    kernel's refusal is the OSError's errno)."""
    with open(path, 'w') as f:
        f.write(text)


def _current_file(sysfs_root, address):
    return os.path.join(_function_dir(sysfs_root, address), 'nvidia',
                        'current_vgpu_type')


def read_vf(sysfs_root, pf, address):
    """VF ``address`` of GPU ``pf`` as it is now; VgpuRefused when it is
    not one of its VFs."""
    for vf in read_vfs(sysfs_root, pf):
        if vf.address == address:
            return vf
    raise VgpuRefused(address=address, reason='not a VF of GPU %s' % pf)


def _written(sysfs_root, pf, address, text, write):
    """Write ``text`` into the VF's current_vgpu_type; VgpuRefused with
    the kernel's errno when it refuses."""
    try:
        write(_current_file(sysfs_root, address), text)
    except OSError as e:
        refused = VgpuBusy if e.errno == errno.EBUSY else VgpuRefused
        raise refused(address=address, reason='writing %s to '
                          'current_vgpu_type refused: %s (%s)' % (
                              text.strip(), errno.errorcode.get(
                                  e.errno, e.errno), e.strerror))
    return read_vf(sysfs_root, pf, address)


def make(sysfs_root, pf, address, type_id, made_here,
         write=write_attribute):
    """Make a vGPU of ``type_id`` on VF ``address`` of GPU ``pf``; its
    PCI attach info.

    The VF is read again first: it must be free and list the type now (a
    sibling made since may have narrowed it); the kernel decides last
    (ENOSPC, EBUSY, ...), and the VF is read back after the write. It is
    noted in ``made_here`` before the write and left out again when no
    vGPU was made. VgpuRefused names why when none was."""
    vf = read_vf(sysfs_root, pf, address)
    if vf.current == type_id and made_here.read().get(address) == type_id:
        # Made here already for the handle's holder: a Prepare the kubelet
        # asks again (the handle is only free again after its clean).
        return sysfs.pci_attach_info(address)
    if vf.current:
        raise VgpuRefused(address=address, reason='it holds vGPU type %d '
                          'already' % vf.current)
    if type_id not in vf.creatable:
        raise VgpuRefused(address=address, reason='type %d is not among '
                          'those it can make now (%s)' % (
                              type_id, ', '.join(map(str, sorted(
                                  vf.creatable))) or 'none: the card is '
                              'full'))
    made_here.note(address, type_id)
    try:
        made = _written(sysfs_root, pf, address, '%d\n' % type_id, write)
    except VgpuRefused:
        made_here.forget(address)
        raise
    if made.current != type_id:
        if not made.current:
            made_here.forget(address)
        raise VgpuRefused(address=address, reason='current_vgpu_type reads '
                          '%d after writing %d' % (made.current, type_id))
    return sysfs.pci_attach_info(address)


def remove(sysfs_root, pf, address, type_id, made_here,
           write=write_attribute):
    """Remove the vGPU of ``type_id`` that this host made on VF
    ``address``: True when one was removed, False when the VF holds none
    (removed already). One someone else made, or of another type, is left
    alone (VgpuRefused), and so is one a guest still has open (EBUSY:
    nothing changed, a later try removes it)."""
    vf = read_vf(sysfs_root, pf, address)
    if not vf.current:
        made_here.forget(address)
        return False
    if vf.current != type_id or made_here.read().get(address) != type_id:
        raise VgpuRefused(address=address, reason='it holds type %d, which '
                          'this host did not make there: left alone'
                          % vf.current)
    removed = _written(sysfs_root, pf, address, '0\n', write)
    if removed.current:
        raise VgpuRefused(address=address, reason='current_vgpu_type reads '
                          '%d after writing 0' % removed.current)
    made_here.forget(address)
    return True


def remove_made_here(sysfs_root, pf, type_id, made_here,
                     write=write_attribute):
    """Remove every vGPU of ``type_id`` this host made on GPU ``pf``'s
    VFs (the wipe of a type nothing holds any more: a removed vGPU's
    memory goes with it); the addresses removed. VgpuBusy when a guest
    still has one open: those before it are removed, it and those after
    are left for the next try."""
    ours = {vf.address for vf in read_vfs(sysfs_root, pf)
            if made_here.read().get(vf.address) == type_id}
    return [address for address in sorted(ours)
            if remove(sysfs_root, pf, address, type_id, made_here, write)]
