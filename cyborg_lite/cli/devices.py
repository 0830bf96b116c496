"""``device list|show|enable|disable|history``: the physical cards per
host.

From API 2.5 a device says why it is not offered or bound now
(``unavailable_reasons``: maintaining, unhealthy, agent_down, ...), from
2.6 where it sits (``numa_node``, ``local_cpulist``, ``socket``,
``pcie_root``, ``pci_bus_id``), from 2.7 its health and why. List and
show ask for 2.7 (or the version given, if newer); an API that refuses it
with 406 is asked again at 2.6 and 2.5 (an older cyborg_lite), then at
the version given (a stock Cyborg). ``enable`` asks for 2.7 too, so an
unhealthy device is refused with the reason.
"""
import urllib.parse

from cyborg_lite.cli import base
from cyborg_lite.cli import versioned

REASONS_API_VERSION = '2.5'
# GET /v2/devices/{uuid}/history (api/microversion.DEVICE_HISTORY).
HISTORY_API_VERSION = '2.9'


def device_path(uuid, suffix=''):
    return '/devices/%s%s' % (urllib.parse.quote(uuid, safe=''), suffix)


class _WithReasons(versioned.FallbackMixin):
    min_api_version = versioned.HEALTH_API_VERSION
    older_api_versions = (versioned.TOPOLOGY_API_VERSION,
                          REASONS_API_VERSION)


class ListDevice(_WithReasons, base.ListCommand):
    """List devices (physical accelerator cards)."""

    columns = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status',
               'health', 'unavailable_reasons')

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


class _SetStatus(versioned.FallbackMixin, base.Command):
    action = None
    min_api_version = versioned.HEALTH_API_VERSION

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<uuid>', help='Device UUID')
        return parser

    def take_action(self, parsed_args):
        path = device_path(parsed_args.device, '/' + self.action)
        self.fetch_any_version(lambda api: api.post(path, None))


class DisableDevice(_SetStatus):
    """Disable a device for maintenance (status maintaining): it is no
    longer offered to schedulers nor bound; what is bound stays."""

    action = 'disable'


class EnableDevice(_SetStatus):
    """Enable a device after maintenance (status enabled); refused while
    the device is unhealthy (it is offered again once its fault
    clears)."""

    action = 'enable'


class HistoryDevice(versioned.ListCommand):
    """Show a device's history: every transition, oldest first, with who
    held it (project and instance, or Kubernetes namespace and claim)
    and why."""

    min_api_version = HISTORY_API_VERSION
    columns = ('created_at', 'event', 'state', 'deployable_uuid',
               'project_id', 'instance_uuid', 'namespace', 'claim_name',
               'reason')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<uuid>', help='Device UUID')
        parser.add_argument('--limit', type=int, metavar='<n>',
                            help='Only the newest <n> transitions (at '
                                 'most the API\'s [api]max_limit, its '
                                 'default)')
        return parser

    def fetch(self, parsed_args):
        path = device_path(parsed_args.device, '/history')
        if parsed_args.limit is not None:
            path += '?limit=%d' % parsed_args.limit
        return self.api.get(path)['history']
