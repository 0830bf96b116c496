"""``deployable list`` and ``deployable show``: the schedulable parts of
devices (for an FPGA, its partial-reconfiguration regions).

From API 2.5 a deployable shows ``device_state`` (available, allocated,
pending_cleaning, cleaning, error) and ``cleaning_error``, from 2.6 where
it sits (``numa_node``, ``local_cpulist``, ``socket``, ``pcie_root``,
``pci_bus_id``: ``list --long`` and ``show``), from 2.7 its own health.
List and show ask for 2.7 (or the version given, if newer) and ask again
at 2.6 and 2.5, then at the version given, when the API refuses one with
406.
"""
from cyborg_lite.cli import base
from cyborg_lite.cli import versioned

CLEANING_API_VERSION = '2.5'


class _WithDeviceState(versioned.FallbackMixin):
    min_api_version = versioned.HEALTH_API_VERSION
    older_api_versions = (versioned.TOPOLOGY_API_VERSION,
                          CLEANING_API_VERSION)


class ListDeployable(_WithDeviceState, base.ListCommand):
    """List deployables (FPGA regions, GPUs, ...)."""

    columns = ('uuid', 'name', 'num_accelerators', 'rp_uuid',
               'bitstream_id', 'device_state', 'health')

    def fetch(self, parsed_args):
        return self.fetch_any_version(
            lambda api: api.get_all('/deployables', 'deployables'))


class ShowDeployable(_WithDeviceState, base.ShowCommand):
    """Show one deployable."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<uuid>',
                            help='Deployable UUID')
        return parser

    def fetch(self, parsed_args):
        path = '/deployables/%s' % parsed_args.deployable
        return self.fetch_any_version(lambda api: api.get(path))
