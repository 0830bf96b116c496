"""Options of the host drivers: one group per driver.

Every driver that reads the host has a root path option, so tests and
the all-in-one can point it at a fixture or simulated tree.
"""
from oslo_config import cfg

FAKE = cfg.OptGroup('fake_driver', title='Fake (simulated) FPGA driver')
FPGA_SYSFS = cfg.OptGroup('fpga_sysfs',
                          title='Linux DFL / FPGA sysfs driver')
PCI = cfg.OptGroup('pci_driver', title='Generic PCI accelerator driver')
NVIDIA = cfg.OptGroup('nvidia_driver', title='NVIDIA GPU driver')
XILINX = cfg.OptGroup('xilinx_driver', title='Xilinx Alveo driver')
SRIOV_NIC = cfg.OptGroup(
    'sriov_nic_driver',
    title='SR-IOV network-function accelerator (SmartNIC) driver')

_HEX32 = r'^[0-9a-f]{32}\Z'


def _whole_card():
    # The same option in [fake_driver] and [fpga_sysfs]: both report DFL
    # cards.
    return cfg.BoolOpt(
        'whole_card', default=False,
        help='Report each card of several regions, each behind its own '
             'SR-IOV virtual function, as a whole-card deployable too '
             '(reached through its physical function, trait '
             'CUSTOM_FPGA_WHOLE_CARD), exclusive with its regions: the '
             'card\'s resource provider then offers the card and its '
             'regions as one FPGA slot per region, and allocations on the '
             'regions\' providers move there. Cards whose regions share '
             'the physical function, and single-region cards, are whole '
             'cards already.')


FAKE_OPTS = [
    cfg.IntOpt('num_cards', default=2, min=0, max=64,
               help='Number of simulated FPGA cards.'),
    cfg.IntOpt('regions_per_card', default=2, min=1, max=16,
               help='Partial reconfiguration regions (DFL ports) per '
                    'simulated card.'),
    cfg.IntOpt('local_memory_mb', default=8192, min=0, max=1 << 30,
               help='Local memory of each simulated region, in MiB.'),
    cfg.ListOpt('region_types',
                default=['9346116d5a7d4b3a9b1b8e5b5d7a1c2e'],
                item_type=cfg.types.String(regex=_HEX32),
                help='PR interface ids (compat_id: 32 lowercase hex '
                     'digits) given to the simulated regions in turn: '
                     'region i of card c gets entry (c * regions + i) '
                     'modulo the list length.'),
    cfg.StrOpt('initial_function_id',
               default='d8424dc4a4a3c413f89e433683f9040b',
               regex=_HEX32,
               help='AFU id loaded in every simulated region when the '
                    'simulated tree is first created.'),
    cfg.BoolOpt('sriov', default=False,
                help='Expose each simulated port through its own SR-IOV '
                     'virtual function (sriov_numvfs, virtfnN and physfn '
                     'links as on an Intel PAC), so every region has its '
                     'own attach handle. When false, all regions of a card '
                     'are reached through its physical function and share '
                     'it as attach handle.'),
    _whole_card(),
    cfg.IntOpt('numa_nodes', default=1, min=1, max=8,
               help='NUMA nodes of the simulated host, two per socket '
                    'from three on (distance 10 to itself, 12 within a '
                    'socket, 21 across, as the ACPI SLIT of a two-socket '
                    'server reads); card c sits on node c modulo this.'),
    cfg.StrOpt('state_dir', default='$state_path/fake_fpga',
               help='Directory holding the simulated sysfs and /dev trees; '
                    'created when missing, kept across restarts so '
                    'programmed functions persist.'),
    cfg.FloatOpt('program_delay', default=0.5, min=0, max=3600,
                 help='Seconds a simulated programming takes.'),
    cfg.BoolOpt('fail_program', default=False,
                help='Failure injection: every programming fails after '
                     'program_delay, leaving the region as it was.'),
    cfg.ListOpt('fail_program_regions', default=[],
                help='Failure injection for some regions only, as '
                     '<pci address>/<region name> entries, e.g. '
                     '0000:5e:00.0/region1.'),
    cfg.FloatOpt('clean_delay', default=0.2, min=0, max=3600,
                 help='Seconds a simulated cleaning (port reset, scrub) '
                      'takes.'),
    cfg.BoolOpt('fail_clean', default=False,
                help='Failure injection: every cleaning fails after '
                     'clean_delay, leaving the region as it was.'),
    cfg.ListOpt('fail_clean_regions', default=[],
                help='Cleaning failure injection for some regions only, '
                     'as <pci address>/<region name> entries.'),
    cfg.StrOpt('scrub_function_id', regex=_HEX32,
               help='AFU id a cleaned region is left with, as if a scrub '
                    'bitstream were programmed. Unset: cleaning only '
                    'empties the simulated local memory (the port reset) '
                    'and the loaded function stays.'),
]

FPGA_SYSFS_OPTS = [
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree to read (class/fpga_region, '
                    'bus/pci/devices).'),
    cfg.StrOpt('dev_root', default='/dev',
               help='Directory of the dfl-fme.N character devices that '
                    'programming opens.'),
    cfg.IntOpt('local_memory_mb', default=0, min=0, max=1 << 30,
               help='Local memory per region in MiB. DFL sysfs does not '
                    'show the card memory, so it is configured.'),
    _whole_card(),
    cfg.ListOpt('scrub_bitstreams', default=[],
                item_type=cfg.types.String(
                    regex=r'^[0-9a-f]{32}:/[^,]+\Z'),
                help='Scrub (blank) GBS images programmed into a region '
                     'when it is cleaned between tenants, after the port '
                     'reset, as <region interface id (compat_id, 32 '
                     'lowercase hex digits)>:<absolute path> entries. A '
                     'region whose interface id has no entry gets the port '
                     'reset only.'),
]

PCI_OPTS = [
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree to read (bus/pci/devices).'),
    cfg.ListOpt('accelerator_classes', default=['0x1200', '0x0b40'],
                item_type=cfg.types.String(regex=r'^0x[0-9a-fA-F]{2,4}$'),
                help='PCI class codes (base class 0xBB or base+subclass '
                     '0xBBSS) reported for any vendor: processing '
                     'accelerators and co-processors.'),
    cfg.ListOpt('display_classes', default=['0x0300', '0x0302'],
                item_type=cfg.types.String(regex=r'^0x[0-9a-fA-F]{2,4}$'),
                help='PCI class codes (VGA, 3D controller) reported only '
                     'for functions on the allowed_ids list, so an '
                     'on-board VGA chip is never offered as an '
                     'accelerator.'),
    cfg.ListOpt('allowed_ids', default=[],
                item_type=cfg.types.String(
                    regex=r'^0x[0-9a-fA-F]{4}(:0x[0-9a-fA-F]{4})?$'),
                help='Vendor (0x10de) or vendor:device (0x10de:0x20b5) '
                     'ids whose display-class functions are accelerators.'),
    cfg.ListOpt('ignored_ids', default=[],
                item_type=cfg.types.String(
                    regex=r'^0x[0-9a-fA-F]{4}(:0x[0-9a-fA-F]{4})?$'),
                help='Vendor or vendor:device ids never reported, e.g. '
                     'cards another enabled driver (fpga_sysfs, nvidia) '
                     'already reports.'),
]

NVIDIA_OPTS = [
    cfg.StrOpt('nvidia_smi_path', default='nvidia-smi',
               help='nvidia-smi to run (a name looked up in PATH, or a '
                    'path). When it is absent the host has no NVIDIA '
                    'GPUs to report.'),
    cfg.IntOpt('timeout', default=30, min=1, max=600,
               help='Seconds nvidia-smi may run before the scan fails.'),
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree where vGPU (mdev) types are '
                    'read: bus/pci/devices/<address>/mdev_supported_types.'),
    cfg.StrOpt('dev_root', default='/dev',
               help='Directory of the NVIDIA device nodes a Kubernetes '
                    'container is given (nvidiactl, nvidia-uvm, '
                    'nvidia-uvm-tools, nvidia<minor>, '
                    'nvidia-caps/nvidia-cap<N>); a node missing there '
                    'fails the Prepare.'),
    cfg.StrOpt('proc_root', default='/proc',
               help='Root of the procfs tree where a MIG instance\'s '
                    'capability minors are read: driver/nvidia/'
                    'capabilities/gpu<minor>/mig/gi<id>/access and '
                    '.../ci<id>/access.'),
    cfg.StrOpt('vgpu_state_file',
               default='$state_path/nvidia/vgpus_made.json',
               help='Where the agent notes the VFs its binds gave a vGPU '
                    'type (vendor-specific VFIO vGPU, kernel 6.8 and '
                    'later), so that it tells them from vGPUs someone else '
                    'made, which it leaves alone, across restarts (kill -9 '
                    'included). No vGPU survives a reboot: a file under '
                    '/run, gone with it too, suits it best.'),
    cfg.BoolOpt('mig_on_demand', default=False,
                help='Offer each GPU in MIG mode to Kubernetes as every '
                     'MIG profile at every placement its free memory '
                     'slices allow (one device each, consuming the GPU\'s '
                     'memory-slice-<i> counters; the cluster needs '
                     'DRAPartitionableDevices), the instance made at '
                     'Prepare and destroyed at release; and, to Nova, a '
                     'GPU in MIG mode whose SR-IOV VFs make vGPUs (the '
                     'vendor-specific VFIO framework) as its MIG-backed '
                     'vGPU types, the instance made at bind where it fits '
                     'best. Off: the MIG instances someone made are '
                     'offered, as before.'),
    cfg.StrOpt('mig_state_file',
               default='$state_path/nvidia/mig_made.json',
               help='Where the agent notes the MIG instances its Prepares '
                    'made (GPU, profile and placement, then the GPU '
                    'instance id), so that across restarts (kill -9 '
                    'included) it destroys only its own and leaves '
                    'instances someone else made alone.'),
    cfg.StrOpt('mig_vgpu_state_file',
               default='$state_path/nvidia/mig_vgpus_made.json',
               help='Where the agent notes the MIG instances its binds made '
                    'for MIG-backed vGPUs (the VF, its type, the placement, '
                    'then the GPU instance id), so that across restarts '
                    '(kill -9 included) it destroys only its own.'),
]

XILINX_OPTS = [
    cfg.StrOpt('xbutil_path', default='xbutil',
               help='xbutil to run (a name looked up in PATH, or a path). '
                    'When it is absent the host has no Alveo cards to '
                    'report.'),
    cfg.IntOpt('timeout', default=60, min=1, max=600,
               help='Seconds one xbutil command may run before the scan '
                    'fails.'),
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree where the NUMA node and PCIe '
                    'root of each card, and its PCI function\'s AER '
                    'counters and link, are read (bus/pci/devices/<bdf>, '
                    'devices/system/node).'),
    cfg.IntOpt('thermal_warn_celsius', default=85, min=0, max=200,
               help='Hottest sensor of xbutil\'s thermal report at or above '
                    'which a card is degraded. xbutil reports no '
                    'thresholds: take them from the card\'s data sheet.'),
    cfg.IntOpt('thermal_crit_celsius', default=95, min=0, max=200,
               help='Hottest sensor at or above which a card is unhealthy '
                    '(not offered nor bound until it cools down).'),
]

# <name>:<PF address>[|<PF address>...]; the driver checks each part.
_MAPPING = r'^[^:|,\s]+:[0-9a-fA-F:.]+(\|[0-9a-fA-F:.]+)*\Z'

SRIOV_NIC_OPTS = [
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree to read (bus/pci/devices).'),
    cfg.ListOpt('physical_device_mappings', default=[],
                item_type=cfg.types.String(regex=_MAPPING),
                help='The network-function accelerators (SmartNIC physical '
                     'functions) to report, as <physical_network>:<PF PCI '
                     'address>[|<PF PCI address>...] entries, e.g. '
                     'physnet1:0000:1b:00.0|0000:1b:00.1. Each PF\'s '
                     'enabled SR-IOV VFs are offered as CUSTOM_NIC '
                     'accelerators whose attach handles carry the '
                     'physical network (what Nova passes to Neutron for a '
                     'port of vnic type accelerator-direct). A PF may be '
                     'in one entry only.'),
    cfg.ListOpt('function_device_mappings', default=[],
                item_type=cfg.types.String(regex=_MAPPING),
                help='The network function each PF runs, as '
                     '<function name>:<PF PCI address>[|...] entries, e.g. '
                     'GTPv1:0000:1b:00.0. The function is reported as the '
                     'deployable\'s function_name and as the trait '
                     'CUSTOM_<FUNCTION NAME> a device profile can require. '
                     'Every PF named here must also be in '
                     'physical_device_mappings.'),
]

GROUPS = [(FAKE, FAKE_OPTS), (FPGA_SYSFS, FPGA_SYSFS_OPTS), (PCI, PCI_OPTS),
          (NVIDIA, NVIDIA_OPTS), (XILINX, XILINX_OPTS),
          (SRIOV_NIC, SRIOV_NIC_OPTS)]


def register_opts(conf):
    for group, opts in GROUPS:
        conf.register_group(group)
        conf.register_opts(opts, group=group)


def list_opts():
    return list(GROUPS)
