"""``device profile create|list|show|delete|explain``: named request
groups, and why one gets no accelerator."""
import urllib.parse

from cyborg_lite.cli import base
from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import versioned

# The API's microversion.PROFILE_EXPLAIN (a test keeps the two equal).
EXPLAIN_API_VERSION = '2.10'


def _unwrap(body):
    # GET one answers {"device_profile": {...}} (Cyborg v2); POST answers
    # the profile itself. Accept both so either shape prints the same.
    return body.get('device_profile', body)


def get_profile(api, name_or_uuid):
    """One profile by name or UUID (by name needs microversion >= 2.2)."""
    return _unwrap(api.get('/device_profiles/%s' % name_or_uuid))


class CreateDeviceProfile(base.ShowCommand):
    """Create a device profile from one or more request groups."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='Unique name ([a-zA-Z0-9-_]+)')
        parser.add_argument(
            '--group', metavar='<key=value,...>', action='append',
            required=True, type=base.parse_key_values,
            help='A request group, e.g. resources:FPGA=1,'
                 'trait:CUSTOM_FPGA_INTEL=required; repeat for more groups')
        parser.add_argument('--description', metavar='<text>')
        return parser

    def fetch(self, parsed_args):
        profile = {'name': parsed_args.name, 'groups': parsed_args.group}
        if parsed_args.description is not None:
            profile['description'] = parsed_args.description
        # The API takes a list with exactly one profile (Cyborg v2).
        return _unwrap(self.api.post('/device_profiles', [profile]))


class ListDeviceProfile(base.ListCommand):
    """List device profiles."""

    columns = ('uuid', 'name', 'groups', 'description')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', action='append', metavar='<name>',
                            help='Only this profile; repeat for more')
        return parser

    def fetch(self, parsed_args):
        params = {'name': ','.join(parsed_args.name)} if parsed_args.name \
            else None
        return self.api.get_all('/device_profiles', 'device_profiles',
                                params)


class ShowDeviceProfile(base.ShowCommand):
    """Show one device profile."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<name-or-uuid>')
        return parser

    def fetch(self, parsed_args):
        return get_profile(self.api, parsed_args.profile)


class DeleteDeviceProfile(base.Command):
    """Delete device profiles."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profiles', metavar='<name-or-uuid>', nargs='+')
        return parser

    def _delete(self, name_or_uuid):
        # Resolve first: DELETE takes a UUID, users usually know the name.
        uuid = get_profile(self.api, name_or_uuid)['uuid']
        self.api.delete('/device_profiles/%s' % uuid)

    def take_action(self, parsed_args):
        failures = []
        for item in parsed_args.profiles:
            try:
                self._delete(item)
            except cl_client.ClientError as exc:
                failures.append('%s: %s' % (item, exc))
        if failures:
            raise cl_client.ClientError(
                'Failed to delete %d of %d device profiles: %s' % (
                    len(failures), len(parsed_args.profiles),
                    '; '.join(failures)))


def _holder(holder):
    if holder.get('kind') == 'kubernetes':
        return 'pod %s/%s (claim %s, project %s)' % (
            holder.get('namespace'), ','.join(holder.get('pods') or ()) or
            '?', holder.get('claim'), holder.get('project_id'))
    return 'instance %s (project %s)' % (holder.get('instance_uuid'),
                                         holder.get('project_id'))


def explain_rows(body):
    """The rows ``device profile explain`` prints of the API's answer:
    each group's funnel, the blocking step marked with its kind and
    holders, then its near misses."""
    rows = []
    for group in body['groups']:
        blocking = group['blocking'] or {}
        for step in group['funnel']:
            blocked = step['step'] == blocking.get('step')
            rows.append({
                'group': group['group'], 'step': step['step'],
                'hosts': step['hosts'], 'devices': step['devices'],
                'blocking': blocking['kind'] if blocked else '',
                'detail': '; '.join(_holder(h) for h in blocking['holders'])
                if blocked else ''})
        for miss in group['near_misses']:
            rows.append({
                'group': group['group'], 'step': 'near miss',
                'hosts': '', 'devices': '', 'blocking': miss['failed'],
                'detail': '%s %s: %s' % (miss['hostname'],
                                         miss['deployable_name'],
                                         miss['why'])})
        hidden = group['near_misses_total'] - len(group['near_misses'])
        if hidden:
            rows.append({'group': group['group'], 'step': 'near miss',
                         'hosts': '', 'devices': '', 'blocking': '',
                         'detail': '%d more' % hidden})
    return rows


class ExplainDeviceProfile(versioned.ListCommand):
    """Why a device profile gets no accelerator: per request group, each
    constraint in the scheduler's order with the hosts and devices
    passing it, the first none passes (permanent or transient, with who
    holds the devices) and the near misses."""

    min_api_version = EXPLAIN_API_VERSION
    columns = ('group', 'step', 'hosts', 'devices', 'blocking', 'detail')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('profile', metavar='<name>')
        parser.add_argument('--host', metavar='<hostname>',
                            help='Only this host')
        return parser

    def fetch(self, parsed_args):
        path = '/device_profiles/%s/explain' % urllib.parse.quote(
            parsed_args.profile, safe='')
        if parsed_args.host is not None:
            path += '?' + urllib.parse.urlencode(
                {'hostname': parsed_args.host})
        return explain_rows(self.api.get(path))
