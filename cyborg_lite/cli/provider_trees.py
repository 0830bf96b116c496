"""``resource-provider tree <host>``: a host's Placement tree as the
conductor sees it (API 2.4, admin).

The API gives the providers flat, parents first, each with its
``parent_uuid``; the root is the compute node, with Placement's uuid, or
null and in ``placement`` why ("not yet created": Placement has no
provider of the host's name yet).
A table shows them depth first, names indented under their parent;
json/yaml/value/csv give each provider's plain fields.
"""
import urllib.parse

from cliff import columns as cliff_columns
from cliff import lister

from cyborg_lite.cli import versioned

INDENT = '  '
COLUMNS = ('name', 'uuid', 'parent_uuid', 'inventories', 'traits')


class IndentedName(cliff_columns.FormattableColumn):
    """A name indented by depth in a table, plain elsewhere."""

    def __init__(self, value, depth):
        super().__init__(value)
        self.depth = depth

    def human_readable(self):
        return INDENT * self.depth + self._value


class Inventories(cliff_columns.FormattableColumn):
    """``FPGA=1`` per resource class in a table (with what is reserved)."""

    def human_readable(self):
        return '\n'.join(
            '%s=%s%s' % (rc, inv['total'], ' (%s reserved)' % inv['reserved']
                         if inv.get('reserved') else '')
            for rc, inv in sorted(self._value.items()))


class Traits(cliff_columns.FormattableColumn):
    """One trait a line in a table."""

    def human_readable(self):
        return '\n'.join(self._value)


def depth_first(root_uuid, providers):
    """(provider, depth) below the root, each parent before its children,
    siblings by name."""
    children = {}
    for provider in providers:
        children.setdefault(provider['parent_uuid'], []).append(provider)
    stack = [(p, 1) for p in sorted(children.get(root_uuid, ()),
                                    key=lambda p: p['name'], reverse=True)]
    while stack:
        provider, depth = stack.pop()
        yield provider, depth
        stack.extend((child, depth + 1) for child in sorted(
            children.get(provider['uuid'], ()), key=lambda p: p['name'],
            reverse=True))


def row(provider, depth):
    return (IndentedName(provider['name'], depth), provider['uuid'],
            provider['parent_uuid'], Inventories(provider['inventories']),
            Traits(provider['traits']))


def root_uuid_text(root):
    """The compute node's uuid, or why there is none to show."""
    if root.get('uuid'):
        return root['uuid']
    placement = root.get('placement')
    if placement == 'not yet created':
        return 'not yet created'
    return 'unknown (Placement %s)' % (placement or 'not asked')


def tree_rows(body):
    root = dict(body['root'], parent_uuid=None, inventories={}, traits=[])
    yield row(dict(root, uuid=root_uuid_text(root)), 0)
    for provider, depth in depth_first(root['uuid'],
                                       body['resource_providers']):
        yield row(provider, depth)


class ShowResourceProviderTree(versioned.Mixin, lister.Lister):
    """Show a host's resource provider tree as the conductor sees it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hostname', metavar='<hostname>')
        return parser

    def take_action(self, parsed_args):
        hostname = urllib.parse.quote(parsed_args.hostname, safe='')
        body = self.api.get('/resource_provider_trees/%s' % hostname)
        return COLUMNS, list(tree_rows(body))
