"""Reader of the Linux DFL FPGA sysfs layout (Intel PAC-style cards).

Layout (kernel Documentation/fpga/dfl.rst and the sysfs ABI files)::

  <sys>/class/fpga_region/regionN
      -> ../../devices/pci.../<PF>/fpga_region/regionN
      dfl-fme.K/                       the card's FME: one per card
          bitstream_id, ports_num, dev
          dfl-fme-mgr.*/fpga_manager/fpgaM/{state,status}
          dfl-fme-region.*/fpga_region/regionY/compat_id   one per port
      dfl-port.P/{id,afu_id,dev}       one per port the PF owns
  <PF>/sriov_totalvfs, sriov_numvfs    on an SR-IOV capable PF
  <PF>/virtfnN -> ../<VF address>      VF number N (sysfs-bus-pci ABI)
  <VF>/physfn -> ../<PF address>
  <VF>/fpga_region/regionM/dfl-port.P  the one port a VF hosts

A regionN is a card (a "base region") iff it holds a dfl-fme.*. The
FME's PR regions are created in port order, so the i-th dfl-fme-region
(by number) is the PR region of port i; both are reported as the
deployable ``region<i>`` (i is the port's ``id``: its number in the card).

SR-IOV (dfl.rst "FPGA virtualization - PCIe SRIOV"): the FME always stays
on the PF; a port released from the PF (DFL_FPGA_FME_PORT_RELEASE) and
exposed through a VF disappears from the PF's base region and shows up
in the VF's own base region. A port is attached through the PCI function
whose region holds it: its VF, so each region has its own handle; or the
PF, which every region the PF still holds then shares (see
``DeviceRecord.shared_groups``). A VF passed through to a guest is bound
to vfio-pci, so the host no longer sees its port until it comes back.
Used by the fpga_sysfs driver on real hosts and by the fake driver on its
simulated tree, so both run the same parsing.
"""
import dataclasses
import errno
import logging
import os

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.common import shared_functions
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import sysfs

LOG = logging.getLogger(__name__)

# The deployable of a whole card beside its regions (``_whole_card``).
WHOLE_CARD_NAME = 'card'
# (vendor, device) -> (model, trait suffix). Device ids from the kernel's
# drivers/fpga/dfl-pci.c and DPDK's ifpga_rawdev.c.
KNOWN_CARDS = {
    (0x8086, 0x09c4): ('Intel PAC Arria 10 GX', 'PAC_A10'),
    (0x8086, 0x0b30): ('Intel PAC N3000', 'N3000'),
    (0x8086, 0x0b2b): ('Intel PAC D5005', 'D5005'),
    (0x8086, 0xbcc0): ('Intel Xeon+FPGA (integrated)', 'INTEGRATED'),
}
VENDOR_TRAITS = {0x8086: 'CUSTOM_FPGA_INTEL', 0x1c2c: 'CUSTOM_FPGA_SILICOM'}
# fpga-mgr.c state strings that mean the manager is broken.
MANAGER_ERROR_STATES = ('firmware request error', 'write init error',
                        'write error', 'write complete error',
                        'parse header error')
# FME error registers (sysfs-platform-dfl-fme, "0x%llx\n" bit masks that
# stay set until cleared): what a bit set in each means for the card.
FME_ERRORS = (('catfatal_errors', 'unhealthy'),
              ('nonfatal_errors', 'degraded'),
              ('pcie0_errors', 'degraded'),
              ('pcie1_errors', 'degraded'))


@dataclasses.dataclass
class Port:
    """One DFL port and the PR region that feeds it."""
    port_id: int
    port_dir: str
    # The PCI function (VF, or the PF) whose region holds the port.
    pci_address: str
    region_type: str | None = None
    function_id: str | None = None
    pr_region: str | None = None

    @property
    def region_name(self):
        return 'region%d' % self.port_id


@dataclasses.dataclass
class Card:
    """One DFL card (PF) as read from sysfs."""
    pci_address: str
    pf_dir: str
    fme_name: str
    fme_dir: str
    vendor_id: int
    device_id: int
    ports: list = dataclasses.field(default_factory=list)
    vfs: list = dataclasses.field(default_factory=list)
    manager_status_path: str | None = None
    problems: list = dataclasses.field(default_factory=list)
    manager_error: str | None = None
    manager_status: str | None = None
    bitstream_id: str | None = None

    @property
    def health(self):
        """Without the agent's health monitor: what the tree says now."""
        if self.manager_error:
            return 'unhealthy'
        return 'degraded' if self.problems or self.manager_status \
            else 'healthy'

    def port(self, region_name):
        for port in self.ports:
            if port.region_name == region_name:
                return port
        return None


def scan_cards(sysfs_root):
    """All DFL cards under ``sysfs_root``; a bad card is logged, skipped."""
    class_dir = os.path.join(sysfs_root, 'class', 'fpga_region')
    if not os.path.isdir(class_dir):
        return []
    cards = []
    for region in sysfs.numbered(sysfs.list_dir(class_dir), 'region'):
        region_dir = os.path.join(class_dir, region)
        fmes = sysfs.numbered(sysfs.list_dir(region_dir), 'dfl-fme.')
        if not fmes:
            continue  # a PR (child) region or a VF's region: not a card
        try:
            cards.append(read_card(region_dir, fmes[0]))
        except exception.HostDataError as e:
            LOG.warning('Skipping DFL card at %s: %s', region_dir, e)
    return cards


def read_card(region_dir, fme_name):
    """One card from its base region directory; HostDataError if unusable."""
    pf_dir = sysfs.pci_device_dir(region_dir)
    if pf_dir is None:
        raise exception.HostDataError(where=region_dir,
                                      reason='no PCI device above it')
    vendor = sysfs.read_hex_int(os.path.join(pf_dir, 'vendor'), 16)
    device = sysfs.read_hex_int(os.path.join(pf_dir, 'device'), 16)
    if vendor is None or device is None:
        raise exception.HostDataError(where=pf_dir,
                                      reason='no vendor/device file')
    fme_dir = os.path.join(region_dir, fme_name)
    card = Card(pci_address=os.path.basename(pf_dir), pf_dir=pf_dir,
                fme_name=fme_name, fme_dir=fme_dir, vendor_id=vendor,
                device_id=device, vfs=sysfs.virtual_functions(pf_dir))
    _read_optional(card, 'bitstream_id',
                   lambda: sysfs.read_text(os.path.join(fme_dir,
                                                        'bitstream_id')))
    card.ports = _all_ports(card, region_dir, pf_dir)
    _match_pr_regions(card)
    _read_manager(card)
    return card


def _read_optional(card, attr, reader):
    """Set card.<attr> from reader(); a bad value is a problem, not fatal."""
    try:
        setattr(card, attr, reader())
    except exception.HostDataError as e:
        card.problems.append(str(e))


def _all_ports(card, region_dir, pf_dir):
    """The ports the PF holds and those its VFs host, by port id."""
    ports = _read_ports(card, region_dir, card.pci_address)
    for vf_dir in sysfs.virtual_function_dirs(pf_dir):
        vf_regions = os.path.join(vf_dir, 'fpga_region')
        for region in sysfs.numbered(sysfs.list_dir(vf_regions), 'region'):
            ports += _read_ports(card, os.path.join(vf_regions, region),
                                 os.path.basename(vf_dir))
    unique = {}
    for port in sorted(ports, key=lambda p: p.port_id):
        if port.port_id in unique:
            card.problems.append('port id %d appears twice (%s, %s)' % (
                port.port_id, unique[port.port_id].port_dir,
                port.port_dir))
            continue
        unique[port.port_id] = port
    return list(unique.values())


def _read_ports(card, region_dir, pci_address):
    ports = []
    for name in sysfs.numbered(sysfs.list_dir(region_dir), 'dfl-port.'):
        port_dir = os.path.join(region_dir, name)
        try:
            port_id = sysfs.read_int(os.path.join(port_dir, 'id'), 0, 255)
        except exception.HostDataError as e:
            card.problems.append(str(e))
            continue
        if port_id is None:
            card.problems.append('%s has no id file' % port_dir)
            continue
        port = Port(port_id=port_id, port_dir=port_dir,
                    pci_address=pci_address)
        port.function_id = _read_afu_id(card, port_dir)
        ports.append(port)
    return ports


def read_afu_id(port_dir):
    """The port's loaded AFU id; None while the port is disabled (EBUSY)."""
    try:
        return sysfs.read_hex_id(os.path.join(port_dir, 'afu_id'))
    except exception.HostDataError as e:
        # afu_id_show() returns -EBUSY while the port is in reset; that is
        # a transient state, not garbage.
        if e.kwargs.get('errno') == errno.EBUSY:
            return None
        raise


def _read_afu_id(card, port_dir):
    try:
        return read_afu_id(port_dir)
    except exception.HostDataError as e:
        card.problems.append(str(e))
        return None


def _pr_region_dirs(fme_dir):
    """The FME's PR region directories, in port order."""
    found = []
    for holder in sysfs.numbered(sysfs.list_dir(fme_dir), 'dfl-fme-region.'):
        class_dir = os.path.join(fme_dir, holder, 'fpga_region')
        for region in sysfs.numbered(sysfs.list_dir(class_dir), 'region'):
            found.append(os.path.join(class_dir, region))
    return found


def _match_pr_regions(card):
    regions = _pr_region_dirs(card.fme_dir)
    for port in card.ports:
        if port.port_id >= len(regions):
            card.problems.append('no PR region for port %d' % port.port_id)
            continue
        region_dir = regions[port.port_id]
        port.pr_region = os.path.basename(region_dir)
        try:
            port.region_type = sysfs.read_hex_id(
                os.path.join(region_dir, 'compat_id'))
        except exception.HostDataError as e:
            card.problems.append(str(e))
        if port.region_type is None and port.pr_region:
            card.problems.append('%s has no compat_id' % region_dir)


def _manager_dir(fme_dir):
    for holder in sysfs.numbered(sysfs.list_dir(fme_dir), 'dfl-fme-mgr.'):
        class_dir = os.path.join(fme_dir, holder, 'fpga_manager')
        managers = sysfs.numbered(sysfs.list_dir(class_dir), 'fpga')
        if managers:
            return os.path.join(class_dir, managers[0])
    return None


def _read_manager(card):
    """Health from the FPGA manager: error states make the card unhealthy.

    DFL's FME manager may report 'unknown' for state (it has no state op
    of its own), so 'unknown' and 'operating' both count as fine; a
    non-empty ``status`` lists reconfiguration errors of the last PR.
    """
    manager = _manager_dir(card.fme_dir)
    if manager is None:
        card.problems.append('%s has no fpga_manager' % card.fme_dir)
        return
    card.manager_status_path = os.path.join(manager, 'status')
    try:
        state = sysfs.read_text(os.path.join(manager, 'state'))
        status = sysfs.read_text(card.manager_status_path)
    except exception.HostDataError as e:
        card.problems.append(str(e))
        return
    if state in MANAGER_ERROR_STATES:
        card.manager_error = 'fpga_manager state is %r' % state
    elif status:
        card.manager_status = status.replace('\n', '; ')


def card_traits(card):
    traits = []
    vendor_trait = VENDOR_TRAITS.get(card.vendor_id)
    if vendor_trait:
        traits.append(vendor_trait)
        known = KNOWN_CARDS.get((card.vendor_id, card.device_id))
        if known:
            traits.append('%s_%s' % (vendor_trait, known[1]))
    return traits


def _attach_handles(port):
    """The function the port is reached through: its VF, or the PF."""
    return [device_records.AttachHandleRecord(
        attach_type='PCI',
        attach_info=sysfs.pci_attach_info(port.pci_address))]


def _deployable(card, port, local_memory_mb, places):
    return device_records.DeployableRecord(
        name=port.region_name, resource_class='FPGA',
        region_type=port.region_type, function_id=port.function_id,
        local_memory_mb=local_memory_mb, traits=card_traits(card),
        attributes={'port': os.path.basename(port.port_dir),
                    'fpga_region': port.pr_region or ''},
        attach_handles=_attach_handles(port),
        # A region behind its own VF sits where the VF does.
        topology=places.pci(port.pci_address)
        if places is not None and port.pci_address != card.pci_address
        else None)


def _whole_card(card):
    """The card as one deployable, reached through its PF: reported only
    for a card of several regions each behind its own VF. A card whose
    regions sit behind the PF has one function for all of them already
    (a region's bind hands over the whole card), and a single region is
    the card."""
    if len(card.ports) < 2 or any(p.pci_address == card.pci_address
                                  for p in card.ports):
        return []
    return [device_records.DeployableRecord(
        name=WHOLE_CARD_NAME, resource_class='FPGA',
        traits=card_traits(card) + [shared_functions.WHOLE_CARD_TRAIT],
        attributes={'regions': str(len(card.ports))},
        attach_handles=[device_records.AttachHandleRecord(
            attach_type='PCI',
            attach_info=sysfs.pci_attach_info(card.pci_address))])]


def _deployables(card, local_memory_mb, places, whole_card):
    regions = [_deployable(card, p, local_memory_mb, places)
               for p in card.ports]
    whole = _whole_card(card) if whole_card else []
    for region in regions if whole else ():
        region.attributes[shared_functions.WHOLE_CARD_ATTRIBUTE] = \
            WHOLE_CARD_NAME
    return regions + whole


def card_to_record(card, local_memory_mb=0, extra_info=None, places=None,
                   whole_card=False):
    """The DeviceRecord of a card; ``extra_info`` goes to vendor info;
    ``places`` (drivers/topology.Reader of the card's tree) says where
    the card and its regions sit; ``whole_card``: the card itself
    offered too, exclusive with its regions (``_whole_card``)."""
    known = KNOWN_CARDS.get((card.vendor_id, card.device_id))
    model = known[0] if known else 'DFL FPGA %04x:%04x' % (card.vendor_id,
                                                           card.device_id)
    vendor_info = {'fme': card.fme_name, 'ports': len(card.ports),
                   'vfs': len(card.vfs)}
    if card.bitstream_id:
        vendor_info['bitstream_id'] = card.bitstream_id
    vendor_info.update(extra_info or {})
    for problem in card.problems:
        LOG.warning('DFL card %s: %s', card.pci_address, problem)
    return device_records.DeviceRecord(
        type='FPGA', vendor='0x%04x' % card.vendor_id, model=model,
        identity=card.pci_address, pci_address=card.pci_address,
        health=card.health,
        std_board_info={'vendor_id': '0x%04x' % card.vendor_id,
                        'device_id': '0x%04x' % card.device_id},
        vendor_board_info=vendor_info,
        deployables=_deployables(card, local_memory_mb, places, whole_card),
        topology=places.pci(card.pci_address) if places is not None
        else None)


def port_device_nodes(sysfs_root, dev_root, identity, region_name):
    """[(container path, host path)] of the region's port device."""
    _card, port = find_port(sysfs_root, identity, region_name)
    name = os.path.basename(port.port_dir)
    return [('/dev/' + name, os.path.join(dev_root, name))]


def find_port(sysfs_root, identity, region_name):
    """(card, port) for a device identity and region name, or raises."""
    for card in scan_cards(sysfs_root):
        if card.pci_address != identity:
            continue
        port = card.port(region_name)
        if port is not None:
            return card, port
        raise exception.DriverError(
            driver='dfl', reason='device %s has no region %s (it has %s)'
            % (identity, region_name,
               ', '.join(p.region_name for p in card.ports) or 'none'))
    raise exception.DriverError(driver='dfl',
                                reason='no DFL card %s on this host'
                                % identity)


# --- health signals (drivers/base.HealthInterface) -------------------------

def _error_mask(path, signal, level):
    """A Condition when the error register has a bit set, None when it
    is clear, Unreadable when it cannot be read or is not there (the
    kernel makes a feature's registers all or none: one gone is not a
    clear one, and where there never was one, nothing was found to
    keep)."""
    try:
        value = sysfs.read_hex_int(path, 64)
    except exception.HostDataError as e:
        return health.Unreadable(signal, str(e))
    if value is None:
        return health.Unreadable(signal, '%s is not there' % path)
    if not value:
        return None
    return health.Condition(signal, level, '%s 0x%x' % (signal, value))


def _fme_error_readings(fme_dir):
    readings = []
    for name, level in FME_ERRORS:
        found = _error_mask(os.path.join(fme_dir, 'errors', name), name,
                            level)
        if found is not None:
            readings.append(found)
    return readings


def _hwmon_value(path, scale):
    value = sysfs.read_int(path, -(1 << 40), 1 << 40)
    return None if value is None else value / scale


def _thermal(hwmon):
    """temp1_input against temp1_max (hardware throttles, degraded) and
    temp1_crit (full throttling, unhealthy), millidegrees Celsius."""
    value = _hwmon_value(os.path.join(hwmon, 'temp1_input'), 1000)
    if value is None:
        # NOTE: a thermal hwmon without its input cannot be read: its
        # last finding stands.
        return [health.Unreadable('temperature', 'no temp1_input in %s'
                                  % hwmon)]
    limits = [(_hwmon_value(os.path.join(hwmon, name), 1000), name[6:])
              for name in ('temp1_max', 'temp1_crit')]
    warn, fault = [(v, n) if v is not None else None for v, n in limits]
    return [health.Gauge('temperature', value, '°C', warn, fault)]


def _power(hwmon):
    """power1_input in microwatts; at power1_max the hardware throttles."""
    value = _hwmon_value(os.path.join(hwmon, 'power1_input'), 1e6)
    if value is None:
        return [health.Unreadable('power', 'no power1_input in %s'
                                  % hwmon)]
    limit = _hwmon_value(os.path.join(hwmon, 'power1_max'), 1e6)
    return [health.Gauge('power', value, 'W',
                         (limit, 'max') if limit else None)]


# hwmon name -> (the signal it gives, its reader).
_HWMON_READERS = {'dfl_fme_thermal': ('temperature', _thermal),
                  'dfl_fme_power': ('power', _power)}


def _hwmon_readings(fme_dir):
    """The FME's hwmon devices (sysfs-platform-dfl-fme: one named
    dfl_fme_thermal, one dfl_fme_power)."""
    readings = []
    hwmon_dir = os.path.join(fme_dir, 'hwmon')
    for name in sysfs.numbered(sysfs.list_dir(hwmon_dir), 'hwmon'):
        path = os.path.join(hwmon_dir, name)
        try:
            kind = sysfs.read_text(os.path.join(path, 'name'))
        except exception.HostDataError as e:
            # Either of them: keep both as they were last read.
            readings += [health.Unreadable(signal, str(e)) for signal, _r
                         in _HWMON_READERS.values()]
            continue
        signal, reader = _HWMON_READERS.get(kind, (None, None))
        if reader is None:
            continue
        try:
            readings += reader(path)
        except exception.HostDataError as e:
            # NOTE: the finding's own signal, so that an unreadable scan
            # keeps its last finding instead of reading as all clear.
            readings.append(health.Unreadable(signal, str(e)))
    return readings


def _manager_readings(card):
    if card.manager_error:
        return [health.Condition('fpga_manager', 'unhealthy',
                                 card.manager_error)]
    if card.manager_status:
        return [health.Condition('fpga_manager', 'degraded',
                                 'fpga_manager status: %s'
                                 % card.manager_status)]
    return []


def _port_readings(card, port, sysfs_root, correctable_step):
    """A port's errors/errors (sysfs-platform-dfl-port) and, behind its
    own VF, that function's PCI signals."""
    readings = []
    found = _error_mask(os.path.join(port.port_dir, 'errors', 'errors'),
                        'port_errors', 'unhealthy')
    if found is not None:
        readings.append(found)
    if port.pci_address != card.pci_address:
        readings += pci_health.function_readings(
            sysfs_root, port.pci_address, correctable_step=correctable_step)
    return readings


def card_signals(card, sysfs_root, correctable_step=0):
    """The health Signals of one card read now: FME error registers,
    hwmon, its FPGA manager, the PF's PCI signals; per region, its port's
    errors."""
    device = (_fme_error_readings(card.fme_dir) +
              _hwmon_readings(card.fme_dir) + _manager_readings(card) +
              pci_health.function_readings(
                  sysfs_root, card.pci_address,
                  correctable_step=correctable_step))
    if card.problems:
        device.append(health.Condition('dfl_tree', 'degraded',
                                       'dfl_tree: %s' % card.problems[0]))
    return health.Signals(device, {
        port.region_name: _port_readings(card, port, sysfs_root,
                                         correctable_step)
        for port in card.ports})


def read_signals(cards, records, missing, sysfs_root, correctable_step=0):
    """HealthInterface.read_health over the cards a scan read."""
    by_address = {card.pci_address: card for card in cards}
    signals = {}
    for record in records:
        card = by_address.get(record.identity)
        if card is not None:
            signals[record.identity] = card_signals(card, sysfs_root,
                                                    correctable_step)
    for record in missing:
        gone = pci_health.vanished(sysfs_root, record.pci_address)
        if gone is not None:
            signals[record.identity] = health.Signals([gone])
    return signals
