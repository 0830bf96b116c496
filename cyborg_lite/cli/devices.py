"""``device list|show|enable|disable``: the physical cards per host.

From API 2.5 a device says why it is not offered or bound now
(``unavailable_reasons``: maintaining, unhealthy, agent_down, ...), so
list and show ask for 2.5 (or the version given, if newer); an API that
refuses 2.5 with 406 (a stock Cyborg) is asked again at the version given.
"""
import urllib.parse

from cyborg_lite.cli import base
from cyborg_lite.cli import versioned

REASONS_API_VERSION = '2.5'


def device_path(uuid, suffix=''):
    return '/devices/%s%s' % (urllib.parse.quote(uuid, safe=''), suffix)


class _WithReasons(versioned.FallbackMixin):
    min_api_version = REASONS_API_VERSION


class ListDevice(_WithReasons, base.ListCommand):
    """List devices (physical accelerator cards)."""

    columns = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status',
               'unavailable_reasons')

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
        return self.fetch_any_version(
            lambda api: api.get_all('/devices', 'devices', params))


class ShowDevice(_WithReasons, base.ShowCommand):
    """Show one device."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<uuid>', help='Device UUID')
        return parser

    def fetch(self, parsed_args):
        return self.fetch_any_version(
            lambda api: api.get(device_path(parsed_args.device)))


class _SetStatus(base.Command):
    action = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<uuid>', help='Device UUID')
        return parser

    def take_action(self, parsed_args):
        self.api.post(device_path(parsed_args.device, '/' + self.action),
                      None)


class DisableDevice(_SetStatus):
    """Disable a device for maintenance (status maintaining): it is no
    longer offered to schedulers nor bound; what is bound stays."""

    action = 'disable'


class EnableDevice(_SetStatus):
    """Enable a device after maintenance (status enabled)."""

    action = 'enable'
