"""``arq create|list|show|bind|unbind|delete``: accelerator requests."""
from cliff import lister

from cyborg_lite.cli import base
from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import versioned
from cyborg_lite.cli import waiting
from cyborg_lite.common import states

COLUMNS = ('uuid', 'state', 'device_profile_name', 'hostname',
           'device_rp_uuid', 'instance_uuid', 'attach_handle_type',
           'attach_handle_info')
BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')


# The API's microversion.BIND_WAITS (a test keeps the two equal): an
# ARQ shows the region its bind waits for (bind_waits_for).
BIND_WAITS_API_VERSION = '2.13'


def arq_path(uuid):
    return '/accelerator_requests/%s' % uuid


def shown(command, uuid):
    """The ARQ as the API shows it at BIND_WAITS_API_VERSION or later,
    or, where the API refuses that (406: a stock Cyborg, an older
    cyborg_lite), at the version given."""
    client = command.app.client_manager.cyborg_lite
    try:
        return versioned.VersionedApi(client, BIND_WAITS_API_VERSION).get(
            arq_path(uuid))
    except cl_client.ApiError as exc:
        if exc.status != 406:
            raise
    return command.api.get(arq_path(uuid))


class CreateArq(base.ApiMixin, lister.Lister):
    """Create the ARQs a device profile asks for (one per accelerator)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device_profile', metavar='<device-profile>',
                            help='Device profile name')
        return parser

    def take_action(self, parsed_args):
        body = self.api.post('/accelerator_requests',
                             {'device_profile_name':
                              parsed_args.device_profile})
        return base.list_rows(body['arqs'], COLUMNS)


class ListArq(base.ListCommand):
    """List accelerator requests."""

    columns = ('uuid', 'state', 'device_profile_name', 'instance_uuid',
               'attach_handle_type', 'attach_handle_info')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Only the ARQs of this instance')
        parser.add_argument('--bind-state', choices=['resolved'],
                            help='With --instance: fail (HTTP 423) unless '
                                 'every ARQ is resolved')
        return parser

    def fetch(self, parsed_args):
        params = {}
        if parsed_args.instance:
            params['instance'] = parsed_args.instance
        if parsed_args.bind_state:
            params['bind_state'] = parsed_args.bind_state
        return self.api.get_all('/accelerator_requests', 'arqs', params)


class ShowArq(base.ShowCommand):
    """Show one accelerator request."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('arq', metavar='<uuid>')
        return parser

    def fetch(self, parsed_args):
        return shown(self, parsed_args.arq)


class BindArq(ShowArq):
    """Bind an ARQ to a host, device resource provider and instance."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        parser.add_argument('instance_uuid', metavar='<instance-uuid>')
        parser.add_argument('device_rp_uuid', metavar='<device-rp-uuid>')
        parser.add_argument('--project-id', metavar='<project>',
                            help='Owner project (admin, microversion 2.1+)')
        parser.add_argument('--wait', action='store_true',
                            help='Wait until the bind resolves, showing '
                                 'state changes on stderr')
        parser.add_argument('--timeout', type=float, default=300,
                            help='Seconds --wait waits (default 300)')
        return parser

    def _patch(self, parsed_args):
        fields = list(BIND_FIELDS)
        if parsed_args.project_id:
            fields.append('project_id')
        return [{'op': 'add', 'path': '/' + f,
                 'value': getattr(parsed_args, f)} for f in fields]

    def fetch(self, parsed_args):
        # The API answers 202 and binds in the background.
        self.api.patch('/accelerator_requests',
                       {parsed_args.arq: self._patch(parsed_args)})
        if not parsed_args.wait:
            return super().fetch(parsed_args)
        arq = waiting.wait_for_state(
            lambda: super(BindArq, self).fetch(parsed_args),
            states.ARQ_RESOLVED, parsed_args.timeout,
            report=waiting.state_reporter(label=parsed_args.arq + ': '))
        if arq['state'] != 'Bound':
            raise cl_client.ClientError('ARQ %s: bind ended %s: %s' % (
                parsed_args.arq, arq['state'], arq.get('error') or ''))
        return arq


class UnbindArq(ShowArq):
    """Unbind an ARQ from its instance; shows it once it is Unbound."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--timeout', type=float, default=300,
                            help='Seconds to wait for the unbind '
                                 '(default 300)')
        return parser

    def fetch(self, parsed_args):
        patch = [{'op': 'remove', 'path': '/' + f} for f in BIND_FIELDS]
        # The API answers 202 and unbinds in the background: what it
        # showed right after would still be the state before.
        self.api.patch('/accelerator_requests', {parsed_args.arq: patch})
        return waiting.wait_for_state(
            lambda: super(UnbindArq, self).fetch(parsed_args),
            ('Unbound',), parsed_args.timeout)


class DeleteArq(base.Command):
    """Delete ARQs by UUID, or all ARQs of an instance."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('arqs', metavar='<uuid>', nargs='*')
        parser.add_argument('--instance', metavar='<uuid>',
                            help='Delete every ARQ of this instance')
        return parser

    def take_action(self, parsed_args):
        # The API takes exactly one of the two query forms.
        if bool(parsed_args.arqs) == bool(parsed_args.instance):
            raise cl_client.ClientError(
                'Give ARQ UUIDs or --instance, not both and not neither')
        if parsed_args.instance:
            params = {'instance': parsed_args.instance}
        else:
            params = {'arqs': ','.join(parsed_args.arqs)}
        self.api.delete('/accelerator_requests', params=params)
