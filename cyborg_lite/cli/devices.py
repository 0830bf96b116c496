"""``device list`` and ``device show``: the physical cards per host."""
from cyborg_lite.cli import base


class ListDevice(base.ListCommand):
    """List devices (physical accelerator cards)."""

    columns = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        # The API's own query filters; Cyborg v2 names.
        parser.add_argument('--type', help='Only devices of this type '
                                           '(FPGA, GPU, ...)')
        parser.add_argument('--vendor', help='Only this vendor id')
        parser.add_argument('--hostname', help='Only devices on this host')
        return parser

    def fetch(self, parsed_args):
        params = {k: getattr(parsed_args, k)
                  for k in ('type', 'vendor', 'hostname')
                  if getattr(parsed_args, k)}
        return self.api.get_all('/devices', 'devices', params)


class ShowDevice(base.ShowCommand):
    """Show one device."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<uuid>', help='Device UUID')
        return parser

    def fetch(self, parsed_args):
        return self.api.get('/devices/%s' % parsed_args.device)
