"""``resource-slice show <host>``: the Kubernetes ResourceSlices the
conductor would publish for a host (API 2.5, admin), printed as the
manifests they are: YAML documents (``--output yaml``, as kubectl shows
them) or one JSON list (``--output json``). A line on stderr says when
the host is not in the conductor's [kubernetes]hosts."""
import json
import sys
import urllib.parse

from cyborg_lite.cli import versioned

OUTPUTS = ('yaml', 'json')


class ShowResourceSlices(versioned.Command):
    """Show the ResourceSlices the conductor would publish for a host."""

    min_api_version = '2.5'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        parser.add_argument('--output', '-o', choices=OUTPUTS,
                            default='yaml',
                            help='yaml: one document per slice (default); '
                                 'json: a list')
        return parser

    def take_action(self, parsed_args):
        hostname = urllib.parse.quote(parsed_args.hostname, safe='')
        body = self.api.get('/resource_slices/%s' % hostname)
        slices = body['resource_slices']
        if not body['served']:
            print('Host %s is not in the conductor\'s [kubernetes]hosts: '
                  'these slices are not published.' % body['hostname'],
                  file=sys.stderr)
        if parsed_args.output == 'json':
            self.app.stdout.write(json.dumps(slices, indent=2,
                                             sort_keys=True) + '\n')
        else:
            import yaml  # only this output needs it: keeps --help quick
            self.app.stdout.write(yaml.safe_dump_all(
                slices, default_flow_style=False, sort_keys=False))
