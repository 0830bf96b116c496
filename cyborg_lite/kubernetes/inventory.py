"""What the ResourceSlice builder needs to know about one host.

A small neutral view that the conductor fills from its database
(kubernetes/sink.py's ``k8s_inventory``); the builder reads only these
fields.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Deployable:
    """A schedulable part of a device: an FPGA region, a whole GPU, a vGPU
    type. ``name`` is unique within its device (``region0``, ``pgpu``)."""
    uuid: str
    name: str
    resource_class: str
    region_type: str | None = None
    function_id: str | None = None       # what is loaded now
    bitstream_id: str | None = None      # the image we loaded, if known
    local_memory_mb: int = 0
    # Why it may not be allocated now: reason names of
    # inventory/views.unavailable_reasons, each published as a taint.
    unavailable: tuple = ()
    bound_to_nova: bool = False          # attached to an ARQ right now
    # Where it sits, when it is not where its device does (a region
    # behind its own VF); None: the device's.
    numa_node: int | None = None
    pcie_root: str | None = None
    pci_bus_id: str | None = None
    # The names of the deployables of its device that reach one PCI
    # function with it, itself included (common/shared_functions.groups:
    # a card without SR-IOV reports its PF in every region); empty when it
    # shares none.
    shares_function: frozenset = frozenset()
    # The counters of its card's counter set it consumes, where the card
    # is offered whole beside its regions (common/shared_functions.py):
    # a region its own, the whole card every region's; empty otherwise.
    card_counters: tuple = ()
    # A MIG placement or a vGPU type made at Prepare (drivers/
    # nvidia_mig_made.py, nvidia_vgpu_vfio.py): the (counter, quantity)
    # pairs of its GPU's counter set it consumes (kubernetes/
    # mig_counters.py, vgpu_counters.py), and the set's (counter,
    # quantity) totals; else empty.
    gpu_counters: tuple = ()
    gpu_counter_totals: tuple = ()
    # A MIG placement's (profile id, start, size), what its place among
    # its GPU's placements in the slices is ranked by (kubernetes/
    # mig_counters.ranked); else empty.
    mig_placement: tuple = ()
    # A MIG placement whose instance is held (for a claim, or made and
    # awaiting its removal): its slices are taken from those its GPU's
    # placements are ranked on.
    mig_held: bool = False
    # Offered still, each with an informational taint (effect None):
    # ('degraded',) when its health is.
    advisories: tuple = ()
    # The signal its health reason starts with (a health taint's value),
    # and the effect of its 'unhealthy' taint ([kubernetes]
    # unhealthy_taint_effect).
    health_signal: str | None = None
    unhealthy_effect: str = 'NoSchedule'


@dataclasses.dataclass(frozen=True)
class Device:
    """One physical card."""
    uuid: str
    type: str                            # FPGA, GPU, ... as in the database
    vendor: str
    model: str
    identity: str                        # stable per host (PCI address)
    pci_address: str | None = None       # 0000:5e:00.0
    pcie_root: str | None = None         # pci0000:5d, when the driver knows
    numa_node: int | None = None
    programmable: bool = False
    memory_mb: int | None = None         # GPU memory, when known
    deployables: tuple = ()


@dataclasses.dataclass(frozen=True)
class HostInventory:
    """The devices of one host that serves Kubernetes, and its Node."""
    hostname: str
    node_name: str
    devices: tuple = ()
    # The host's NUMA nodes (common/topology.NODE_KEYS), () if unknown:
    # what the list form of resource.kubernetes.io/numaNode is made of.
    numa_nodes: tuple = ()
