"""``deployable list`` and ``deployable show``: the schedulable parts of
devices (for an FPGA, its partial-reconfiguration regions)."""
from cyborg_lite.cli import base


class ListDeployable(base.ListCommand):
    """List deployables (FPGA regions, GPUs, ...)."""

    columns = ('uuid', 'name', 'num_accelerators', 'rp_uuid',
               'bitstream_id')

    def fetch(self, parsed_args):
        return self.api.get_all('/deployables', 'deployables')


class ShowDeployable(base.ShowCommand):
    """Show one deployable."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<uuid>',
                            help='Deployable UUID')
        return parser

    def fetch(self, parsed_args):
        return self.api.get('/deployables/%s' % parsed_args.deployable)
