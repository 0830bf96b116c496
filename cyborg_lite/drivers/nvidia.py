"""NVIDIA GPUs from ``nvidia-smi -q -x``, with MIG and vGPU children.

Element names checked against public recordings of ``nvidia-smi -q -x``
(driver 515-580): root <nvidia_smi_log>, one <gpu id="00000000:3B:00.0">
per GPU with <product_name>, <uuid>, <pci><pci_bus_id>, <pci_device_id>
(device << 16 | vendor, e.g. 20B510DE)</pci>, <fb_memory_usage><total>
81920 MiB</total>, <mig_mode><current_mig>Enabled|Disabled|N/A, and
<mig_devices> holding <mig_device> elements (index, gpu_instance_id,
device_attributes/shared/multiprocessor_count, fb_memory_usage/total) or
the text "None". The XML carries no MIG profile name (that is only in
``nvidia-smi -L``), so MIG children are named by what the XML does show:
``mig_<SMs>sm_<MiB>mb``.

vGPU types are the mdev types the vGPU host driver publishes in
<sysfs>/bus/pci/devices/<address>/mdev_supported_types/<type>/{name,
available_instances,device_api} (as Cyborg's nvidia driver reads them),
or, on the vendor-specific VFIO framework (kernel >= 6.8, no mdev), the
types its SR-IOV VFs can make (drivers/nvidia_vgpu_vfio.py).

A GPU is offered one way at a time: as MIG instances when MIG is on
(with ``mig_on_demand``, its placements and, when its VFs make vGPUs,
its MIG-backed vGPU types: drivers/nvidia_mig_vgpu.py), as vGPU types
when the host driver publishes them, else whole (``pgpu``). Offering
two ways would let a scheduler place two workloads on one card.

Cleaning between tenants (GPU reset, MIG instances destroyed and made
again) is in drivers/nvidia_cleaning.py; health signals (temperatures,
ECC, row remapping, slowdowns, reset required) in drivers/nvidia_health
.py, read from the same XML the scan parsed, with the GPU's AER counters
from sysfs. Every nvidia-smi run goes through ``self.run_tool``
(tools.run_tool), the one injectable edge.
"""
import collections
import functools
import logging
import os
import re
import threading

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.drivers import base
from cyborg_lite.drivers import nvidia_cleaning
from cyborg_lite.drivers import nvidia_device_nodes
from cyborg_lite.drivers import nvidia_health
from cyborg_lite.drivers import nvidia_mig_commands
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.drivers import nvidia_mig_vgpu
from cyborg_lite.drivers import nvidia_modes
from cyborg_lite.drivers import nvidia_vfio_nodes
from cyborg_lite.drivers import nvidia_vgpu_vfio
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import safe_xml
from cyborg_lite.drivers import sysfs
from cyborg_lite.drivers import tools
from cyborg_lite.drivers import topology

LOG = logging.getLogger(__name__)

VENDOR = '0x10de'
MIB_RE = re.compile(r'([0-9]{1,9}) MiB')


def _text(element, path):
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def parse_mib(text, where):
    """'81920 MiB' -> 81920; 'N/A' or absent -> None; garbage -> error."""
    if text in (None, 'N/A', '[N/A]'):
        return None
    match = MIB_RE.fullmatch(text)
    if not match:
        raise exception.HostDataError(where=where, reason='expected "<n> '
                                      'MiB", got %r' % text[:40])
    return int(match.group(1))


def gpu_traits(product_name):
    """CUSTOM_GPU_NVIDIA plus one for the model, e.g. ..._A100_80GB_PCIE."""
    model = re.sub(r'^NVIDIA\s+', '', product_name or '', flags=re.I)
    model = re.sub(r'[^A-Z0-9]+', '_', model.upper()).strip('_')
    traits = ['CUSTOM_GPU_NVIDIA']
    if model:
        traits.append('CUSTOM_GPU_NVIDIA_%s' % model[:200])
    return traits


def _mig_key(mig_device, where):
    sms = _text(mig_device, 'device_attributes/shared/multiprocessor_count')
    if sms is None or not sms.isdigit():
        raise exception.HostDataError(where=where, reason='bad '
                                      'multiprocessor_count %r' % (sms,))
    memory = parse_mib(_text(mig_device, 'fb_memory_usage/total'), where)
    if memory is None:
        raise exception.HostDataError(where=where,
                                      reason='MIG device without memory')
    return int(sms), memory


def mig_deployables(gpu, traits, where, skip=(), present=None):
    """One deployable per kind of MIG instance (same SMs and memory);
    the GPU instance ids ``skip`` (made here) left out, and, with
    ``present``, those not among its ids (destroyed since the XML was
    read)."""
    groups = collections.OrderedDict()
    skip = {str(i) for i in skip}
    present = None if present is None else {str(i) for i in present}
    for mig in gpu.findall('mig_devices/mig_device'):
        gi_id = _text(mig, 'gpu_instance_id') or '?'
        if gi_id in skip or (present is not None and gi_id not in present):
            continue
        groups.setdefault(_mig_key(mig, where), []).append(gi_id)
    return [
        device_records.DeployableRecord(
            name='mig_%dsm_%dmb' % (sms, memory), resource_class='VGPU',
            num_accelerators=len(instances), local_memory_mb=memory,
            traits=list(traits),
            attributes={'multiprocessor_count': sms,
                        'gpu_instance_ids': ','.join(instances)})
        for (sms, memory), instances in groups.items()]


def mdev_attach_info(mdev_type, parent, index):
    """A Cyborg MDEV handle's attach_info, as Cyborg's nvidia driver
    writes it and Nova's libvirt driver reads it
    (``LibvirtDriver._allocate_cyborg_mdevs``: the mdev of type
    ``asked_type`` is made under the parent's PCI address with the
    handle's uuid): the parent's domain, bus, device and function,
    ``asked_type`` and ``vgpu_mark`` (``<type>_<n>``, one per instance
    the type can hold, made or not)."""
    return dict(sysfs.pci_attach_info(parent), asked_type=mdev_type,
                vgpu_mark='%s_%d' % (mdev_type, index))


def _mdev_type(type_dir, address, traits):
    name = os.path.basename(type_dir)
    available = sysfs.read_int(os.path.join(type_dir,
                                            'available_instances'),
                               0, device_records.MAX_ACCELERATORS)
    if available is None:
        raise exception.HostDataError(where=type_dir,
                                      reason='no available_instances')
    created = sysfs.list_dir(os.path.join(type_dir, 'devices'))
    handles = [mdev_attach_info(name, address, i)
               for i in range(len(created) + available)]
    return device_records.DeployableRecord(
        name='vgpu_%s' % name, resource_class='VGPU',
        num_accelerators=len(handles), traits=list(traits),
        attributes={'mdev_type_name': sysfs.read_text(
                        os.path.join(type_dir, 'name')) or name,
                    'device_api': sysfs.read_text(
                        os.path.join(type_dir, 'device_api')) or ''},
        attach_handles=[device_records.AttachHandleRecord('MDEV', info)
                        for info in handles])


def vgpu_deployables(sysfs_root, address, traits):
    """vGPU types of one GPU; a type with a bad file is logged, skipped."""
    types_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices', address,
                             'mdev_supported_types')
    deployables = []
    for name in sysfs.list_dir(types_dir):
        try:
            deployables.append(_mdev_type(os.path.join(types_dir, name),
                                          address, traits))
        except exception.HostDataError as e:
            LOG.warning('Skipping vGPU type %s of %s: %s', name, address, e)
    return deployables


def _pgpu(address, memory, traits):
    return device_records.DeployableRecord(
        name='pgpu', resource_class='PGPU', local_memory_mb=memory or 0,
        traits=list(traits),
        attach_handles=[device_records.AttachHandleRecord(
            'PCI', sysfs.pci_attach_info(address))])


def _board_info(gpu):
    info = {'vendor_id': VENDOR}
    device_id = _text(gpu, 'pci/pci_device_id') or ''
    if re.fullmatch(r'(0x)?[0-9a-fA-F]{8}', device_id):
        info['device_id'] = '0x%04x' % (int(device_id, 16) >> 16)
    return info


def _vfio_deployables(sysfs_root, address, info, traits, supported_types,
                      made_here):
    """The vGPU types of a vendor-VFIO PF, or None if it is not one."""
    if not nvidia_vgpu_vfio.is_vfio_pf(sysfs_root, address):
        return None
    supported = supported_types(address) if supported_types else {}
    return nvidia_vgpu_vfio.deployables(
        nvidia_vgpu_vfio.read_vfs(sysfs_root, address), supported,
        info.get('device_id', '0x0000'), traits, made_here)


def _mig(gpu, address, traits, where, mig_tables):
    """A MIG GPU's deployables: the instances someone made and, when
    ``mig_tables(address, device id, traits)`` gives (profiles,
    instances, the GI ids Prepares made here, MIG-backed vGPU types'
    deployables, the GI ids their vGPUs are on), every placement it can
    make (drivers/nvidia_mig_made.py) and its MIG-backed vGPU types
    (drivers/nvidia_mig_vgpu.py)."""
    if mig_tables is None:
        return mig_deployables(gpu, traits, where)
    profiles, instances, ours, vgpus, in_guests = mig_tables(
        address, _board_info(gpu).get('device_id', '0x0000'), traits)
    # NOTE: the XML was read before the lock: an instance destroyed
    # since (a release's) is not someone else's to offer.
    return (mig_deployables(gpu, traits, where, skip=ours | in_guests,
                            present={i.gi_id for i in instances}) +
            nvidia_mig_made.placement_deployables(address, profiles,
                                                  instances, ours, traits) +
            vgpus)


def gpu_record(gpu, sysfs_root, places=None, supported_types=None,
               made_here=None, mig_tables=None, settle=None):
    """The DeviceRecord of one <gpu> element; HostDataError if unusable.

    ``supported_types(address)``: {vGPU type id: (name, Max Instances)}
    of a vendor-VFIO GPU (``nvidia-smi vgpu -s -v``); ``made_here``: {VF
    address: type id} this host's binds made (nvidia_vgpu_vfio.MadeHere);
    ``mig_tables``: see ``_mig`` (None: MIG placements are not offered);
    ``settle(address, mode, deployables)``: what to report of a GPU
    whose mode changed under what this host made (nvidia_modes)."""
    address = sysfs.normalise_pci_address(
        _text(gpu, 'pci/pci_bus_id') or gpu.get('id'))
    where = 'nvidia-smi gpu %s' % address
    product = _text(gpu, 'product_name') or 'NVIDIA GPU'
    memory = parse_mib(_text(gpu, 'fb_memory_usage/total'), where)
    traits = gpu_traits(product)
    if (_text(gpu, 'mig_mode/current_mig') or '').lower() == 'enabled':
        mode = nvidia_modes.MIG
        deployables = _mig(gpu, address, traits, where, mig_tables)
    else:
        deployables = _vfio_deployables(sysfs_root, address,
                                        _board_info(gpu), traits,
                                        supported_types, made_here)
        mode = nvidia_modes.WHOLE if deployables is None else \
            nvidia_modes.VGPU
        deployables = (deployables or
                       vgpu_deployables(sysfs_root, address, traits) or
                       [_pgpu(address, memory, traits)])
    if settle is not None:
        deployables = settle(address, mode, deployables)
    vendor_info = {'uuid': _text(gpu, 'uuid') or '',
                   'mig_mode': _text(gpu, 'mig_mode/current_mig') or 'N/A'}
    if memory is not None:
        vendor_info['memory_mb'] = memory
    return device_records.DeviceRecord(
        type='GPU', vendor=VENDOR, model=product, identity=address,
        pci_address=address, std_board_info=_board_info(gpu),
        vendor_board_info=vendor_info, deployables=deployables,
        topology=(places or topology.Reader(sysfs_root)).pci(address))


def parse_nvidia_smi(data, sysfs_root, elements=None, supported_types=None,
                     made_here=None, mig_tables=None, settle=None):
    """DeviceRecords from ``nvidia-smi -q -x`` output (bytes);
    ``elements``, a dict, gets {identity: <gpu> element} of each."""
    if not data.strip():
        raise exception.HostDataError(where='nvidia-smi -q -x',
                                      reason='empty output')
    root = safe_xml.parse(data, 'nvidia-smi -q -x')
    if root.tag != 'nvidia_smi_log':
        raise exception.HostDataError(where='nvidia-smi -q -x',
                                      reason='root element is <%s>, '
                                      'expected <nvidia_smi_log>' % root.tag)
    records = []
    places = topology.Reader(sysfs_root)
    for gpu in root.findall('gpu'):
        try:
            records.append(gpu_record(gpu, sysfs_root, places,
                                      supported_types, made_here,
                                      mig_tables, settle))
        except exception.HostDataError as e:
            LOG.warning('Skipping a GPU in nvidia-smi output: %s', e)
            continue
        if elements is not None:
            elements[records[-1].identity] = gpu
    return records


class NvidiaDriver(base.Driver, base.DiscoveryInterface,
                   base.CleaningInterface, topology.SysfsHostTopology,
                   base.HealthInterface, base.InstanceInterface,
                   base.ContainerDevicesInterface,
                   nvidia_mig_commands.MigCommands):
    """GPUs as whole devices, MIG instances or vGPU (mdev) types; on
    the vendor-specific VFIO framework, vGPU types a bind makes."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.nvidia_driver
        self.nvidia_smi_path = group.nvidia_smi_path
        self.timeout = group.timeout
        self.sysfs_root = group.sysfs_root
        self.dev_root, self.proc_root = group.dev_root, group.proc_root
        self.correctable_step = conf.health.correctable_errors_per_scan
        # The tool edge: run_tool(driver name, argv, timeout) -> stdout.
        self.run_tool = tools.run_tool
        # {identity: <gpu> element} of the last scan, for read_health.
        self._gpus = {}
        # The VFs this host's binds gave a vGPU type, and the sysfs write
        # edge (a simulated host's kernel in tests).
        self.made_here = nvidia_vgpu_vfio.MadeHere(group.vgpu_state_file)
        self.write_attribute = nvidia_vgpu_vfio.write_attribute
        # MIG placements offered to Kubernetes, made at its Prepare.
        self.mig_on_demand = group.mig_on_demand
        self.mig_made = nvidia_mig_made.Made(group.mig_state_file)
        # ... and the MIG instances Nova's binds made for MIG-backed vGPUs.
        self.mig_vgpus = nvidia_mig_vgpu.Noted(group.mig_vgpu_state_file)
        self.last_seen = nvidia_modes.LastSeen()
        # NOTE: a scan's adoption must not forget a placement noted by a
        # make whose -cgi is still running: one at a time.
        self._mig_lock = threading.RLock()

    @property
    def _name(self):
        return self.name or 'nvidia'

    def discover(self):
        tool = tools.find_tool(self.nvidia_smi_path)
        if tool is None:
            LOG.info('%s not found: no NVIDIA GPUs on this host',
                     self.nvidia_smi_path)
            return []
        return self._scan(tool)

    def _scan(self, tool):
        output = self.run_tool(self._name, [tool, '-q', '-x'], self.timeout)
        gpus = {}
        made_here, mig_noted = self.made_here.read(), self.mig_made.read()
        for_mig = self.mig_vgpus.read()
        vgpus = nvidia_vgpu_vfio.types_by_pf(self.sysfs_root, made_here)
        # A MIG-backed vGPU is the MIG mode's, not the vGPU mode's.
        held = nvidia_modes.held_modes(
            mig_noted, nvidia_vgpu_vfio.types_by_pf(
                self.sysfs_root, {vf: t for vf, t in made_here.items()
                                  if vf not in for_mig}),
            {entry['gpu'] for entry in for_mig.values()})

        def settle(address, mode, deployables):
            return self.last_seen.settle(
                address, mode, deployables, held.get(address, ()),
                mig_noted.get(address, {}),
                {str(t) for t in vgpus.get(address, ())})
        try:
            records = parse_nvidia_smi(
                output, self.sysfs_root, gpus,
                functools.partial(self._supported_types, tool), made_here,
                functools.partial(self._mig_tables, tool)
                if self.mig_on_demand else None, settle)
        except exception.HostDataError as e:
            raise exception.DriverError(driver=self._name,
                                        reason=e.format_message())
        self._gpus = gpus
        return records

    def _vgpu_listing(self, tool, address):
        """``nvidia-smi vgpu -s -v -i <GPU>``'s text."""
        return self.run_tool(self._name, [tool, 'vgpu', '-s', '-v', '-i',
                                          address],
                             self.timeout).decode('utf-8', 'replace')

    def _supported_types(self, tool, address):
        return nvidia_vgpu_vfio.parse_supported(
            self._vgpu_listing(tool, address),
            'nvidia-smi vgpu -s -v -i %s' % address)

    def _mig_tables(self, tool, address, device_id, traits):
        """What ``_mig`` offers of a MIG GPU from, read under the MIG lock
        (a bind's or a Prepare's instance is noted, or not there)."""
        profiles = self._profiles(tool, address)
        with self._mig_lock:
            instances = self._instances(tool, address)
            nvidia_mig_vgpu.adopt(self.mig_vgpus, address, instances)
            ours = self.mig_made.adopt(address, instances)
            vgpus, in_guests = self._mig_vgpus(tool, address, device_id,
                                               traits, profiles, instances)
        return profiles, instances, ours, vgpus, in_guests

    def _mig_vgpus(self, tool, address, device_id, traits, profiles,
                   instances):
        """A MIG GPU's MIG-backed vGPU types, when its VFs make vGPUs;
        and the GPU instances a VF's vGPU is on (or a bind made for one),
        which are no one else's to take."""
        if not nvidia_vgpu_vfio.is_vfio_pf(self.sysfs_root, address):
            return [], set()
        vfs = nvidia_vgpu_vfio.read_vfs(self.sysfs_root, address)
        in_guests = self.mig_vgpus.instances(address) | {
            nvidia_mig_vgpu.gpu_instance_of(self.sysfs_root, vf.address)
            for vf in vfs if vf.current} - {None}
        listing = self._vgpu_listing(tool, address)
        return nvidia_mig_vgpu.deployables(
            nvidia_mig_vgpu.Gpu(tuple(profiles), tuple(instances),
                                tuple(vfs)),
            nvidia_vgpu_vfio.parse_supported(
                listing, 'nvidia-smi vgpu -s -v -i %s' % address),
            nvidia_mig_vgpu.parse_profiles(listing), device_id, traits,
            self.made_here.read()), in_guests

    def read_health(self, devices, missing):
        signals = {}
        for record in devices:
            gpu = self._gpus.get(record.identity)
            readings = nvidia_health.gpu_readings(gpu) if gpu is not None \
                else []
            # NOTE: the link width is the XML's; a GPU lowers its link
            # speed when idle, so sysfs gives the AER counters only.
            readings += [r for r in pci_health.function_readings(
                self.sysfs_root, record.pci_address, check_speed=False,
                correctable_step=self.correctable_step)
                if r.signal != 'link_width']
            signals[record.identity] = health.Signals(readings)
        for record in missing:
            gone = pci_health.vanished(self.sysfs_root, record.pci_address) \
                or self._lost(record)
            if gone is not None:
                signals[record.identity] = health.Signals([gone])
        return signals

    def _lost(self, record):
        """A GPU nvidia-smi no longer lists though the nvidia kernel
        driver still holds it (what an XID 79, "fallen off the bus",
        leaves); one rebound to vfio-pci was merely handed over."""
        driver = os.path.join(pci_health.function_dir(
            self.sysfs_root, record.pci_address), 'driver')
        if os.path.basename(os.path.realpath(driver)) != 'nvidia':
            return None
        return health.Condition('pci', 'unhealthy', 'pci %s is bound to the '
                                'nvidia driver but nvidia-smi no longer '
                                'lists it' % record.pci_address)

    def device_nodes(self, identity, deployable_name, attach_info=None):
        # NOTE: a GPU the agent has not scanned yet is looked for once.
        if identity not in self._gpus:
            self._scan(self._tool())
        gpu = self._gpus.get(identity)
        if gpu is None:
            raise exception.DriverError(driver=self._name, reason='no '
                                        'NVIDIA GPU %s on this host' % identity)
        theirs = {d.name: d.attributes['gpu_instance_ids'].split(',')
                  for d in mig_deployables(gpu, (), identity)}
        def made_here(key):
            return nvidia_mig_made.instance_at(
                self.mig_made, identity, key, lambda argv: self.run_tool(
                    self._name, argv, self.timeout), self._tool())
        return nvidia_device_nodes.of_deployable(
            gpu, identity, deployable_name, made_here, theirs,
            self.dev_root, self.proc_root, lambda: nvidia_vfio_nodes.nodes(
                self.sysfs_root, self.dev_root,
                nvidia_vfio_nodes.vf_of(identity, deployable_name,
                                        attach_info)))

    def _vgpu_type(self, identity, deployable_name, attach_info):
        """The type id a vendor-VFIO vGPU handle's bind writes; its VF
        must be one of GPU ``identity``'s."""
        type_id = str(attach_info.get('vgpu_type', ''))
        if deployable_name != 'vgpu_' + type_id or not type_id.isdigit():
            raise exception.DriverError(
                driver=self._name, reason='%s of GPU %s is not a vGPU type '
                'of the vendor-specific VFIO framework (handle %s)'
                % (deployable_name, identity, attach_info))
        return int(type_id)

    def _tool(self):
        tool = tools.find_tool(self.nvidia_smi_path)
        if tool is None:
            raise exception.DriverError(driver=self._name, reason='%s not '
                                        'found' % self.nvidia_smi_path)
        return tool

    def make_instance(self, identity, deployable_name, attach_info):
        placement = nvidia_mig_made.parse_placement(attach_info)
        if placement is not None:
            with self._mig_lock:
                return self._make_mig(identity, placement, attach_info)
        type_id = self._vgpu_type(identity, deployable_name, attach_info)
        profile_id = self._mig_backed_profile(identity, type_id)
        if profile_id is not None:
            with self._mig_lock:
                return self._make_mig_vgpu(identity, attach_info, type_id,
                                           profile_id)
        made = nvidia_vgpu_vfio.make(
            self.sysfs_root, identity,
            device_records.pci_address(attach_info), type_id,
            self.made_here, self.write_attribute)
        LOG.info('Made vGPU type %d on VF %s of GPU %s', type_id,
                 device_records.pci_address(made), identity)
        return made

    def _mig_backed_profile(self, identity, type_id):
        """The GPU instance profile of a MIG-backed type, read now, not
        kept in the handle (the VF's function key is the handle less its
        type only); None for a time-sliced type, and on a GPU its last
        scan found out of MIG mode (no ``nvidia-smi`` run then)."""
        gpu = self._gpus.get(identity)
        if gpu is not None and (_text(gpu, 'mig_mode/current_mig') or
                                '').lower() != 'enabled':
            return None
        return nvidia_mig_vgpu.parse_profiles(self._vgpu_listing(
            self._tool(), identity)).get(type_id)

    def remove_instance(self, identity, deployable_name, attach_info):
        placement = nvidia_mig_made.parse_placement(attach_info)
        if placement is not None:
            with self._mig_lock:
                return self._destroy_mig(identity, placement)
        type_id = self._vgpu_type(identity, deployable_name, attach_info)
        if device_records.pci_address(attach_info) in self.mig_vgpus.read():
            with self._mig_lock:
                return self._remove_mig_vgpu(identity, attach_info, type_id)
        removed = nvidia_vgpu_vfio.remove(
            self.sysfs_root, identity,
            device_records.pci_address(attach_info), type_id,
            self.made_here, self.write_attribute)
        if removed:
            LOG.info('Removed vGPU type %d from VF %s of GPU %s', type_id,
                     device_records.pci_address(attach_info), identity)
        return removed

    def clean(self, identity, deployable_name):
        tool = tools.find_tool(self.nvidia_smi_path)
        if tool is None:
            raise exception.CleaningError(
                reason='%s not found: cannot clean %s'
                % (self.nvidia_smi_path, identity))
        placement = nvidia_mig_made.placement_of_name(deployable_name)
        try:
            if placement is not None:
                # The wipe of a MIG placement is destroying what this
                # host made there: no scan, it may be offered no more.
                with self._mig_lock:
                    self._destroy_mig(identity, placement)
                LOG.info('Cleaned GPU %s %s', identity, deployable_name)
                return
            deployable = self._deployable(tool, identity, deployable_name)
            if 'mig_backed_profile_id' in deployable.attributes:
                with self._mig_lock:
                    self._clean_mig_vgpus(tool, identity, int(
                        deployable.attributes['vgpu_type_id']))
            elif 'vgpu_type_id' in deployable.attributes:
                nvidia_vgpu_vfio.remove_made_here(
                    self.sysfs_root, identity,
                    int(deployable.attributes['vgpu_type_id']),
                    self.made_here, self.write_attribute)
            for argv in self._clean_commands(tool, identity, deployable):
                self.run_tool(self._name, argv, self.timeout)
        except exception.InstanceBusy:
            raise       # a guest still has it: tried again (agent/cleaning)
        except exception.DriverError as e:
            raise exception.CleaningError(reason=e.format_message())
        LOG.info('Cleaned GPU %s %s', identity, deployable_name)

    def _deployable(self, tool, identity, deployable_name):
        for record in self._scan(tool):
            if record.identity != identity:
                continue
            for deployable in record.deployables:
                if deployable.name == deployable_name:
                    return deployable
            raise exception.CleaningError(
                reason='GPU %s has no deployable %s (it has %s)' % (
                    identity, deployable_name,
                    ', '.join(d.name for d in record.deployables)))
        raise exception.CleaningError(reason='no NVIDIA GPU %s on this '
                                             'host' % identity)

    def _clean_commands(self, tool, identity, deployable):
        if deployable.resource_class == 'PGPU':
            return nvidia_cleaning.reset_commands(tool, identity)
        if deployable.name.startswith('mig_'):
            ids = nvidia_cleaning.instance_ids(deployable)
            profiles = nvidia_cleaning.parse_gpu_instances(self.run_tool(
                self._name, [tool, 'mig', '-lgi', '-i', identity],
                self.timeout))
            return nvidia_cleaning.mig_commands(tool, identity, ids,
                                                profiles)
        if 'vgpu_type_id' in deployable.attributes:
            # Vendor-specific VFIO: the wipe is removing what the binds
            # made (clean, above), no command.
            return []
        raise exception.CleaningError(
            reason='%s of GPU %s is a vGPU type; its instances are '
                   'cleaned by the vGPU manager, not by this driver'
            % (deployable.name, identity))
