"""Shared pieces of the command classes.

Commands reach the API through ``self.app.client_manager.cyborg_lite``: the
standalone app and the OpenStackClient plugin both provide that attribute,
so one class works in both front ends.
"""
import abc
import argparse
import json

from cliff import columns as cliff_columns
from cliff import command
from cliff import lister
from cliff import show

# Fields every API object carries that say nothing on a terminal.
HIDDEN_FIELDS = ('links',)


class JSONColumn(cliff_columns.FormattableColumn):
    """A dict or list: compact JSON in tables, the structure in json/yaml."""

    def human_readable(self):
        return json.dumps(self._value, sort_keys=True)


def _cell(value):
    if isinstance(value, (dict, list)):
        return JSONColumn(value)
    return value


def show_fields(obj):
    """(columns, values) of every field of ``obj`` but the hidden ones."""
    names = tuple(sorted(k for k in obj if k not in HIDDEN_FIELDS))
    return names, tuple(_cell(obj[k]) for k in names)


def list_rows(objs, columns, long_=False):
    """(columns, rows); ``long_`` adds every other field the API returned."""
    columns = tuple(columns)
    if long_:
        extra = sorted({k for o in objs for k in o} - set(columns)
                       - set(HIDDEN_FIELDS))
        columns += tuple(extra)
    rows = (tuple(_cell(o.get(c)) for c in columns) for o in objs)
    return columns, rows


def parse_key_values(text):
    """``k1=v1,k2=v2`` into a dict (an argparse ``type``: usage error)."""
    result = {}
    for item in text.split(','):
        key, sep, value = item.partition('=')
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(
                'expected key=value[,key=value...], got %r' % text)
        result[key.strip()] = value.strip()
    return result


class ApiMixin:
    """The accelerator API client of whichever app runs the command."""

    @property
    def api(self):
        return self.app.client_manager.cyborg_lite


class Command(ApiMixin, command.Command):
    """An action that prints nothing when it succeeds."""


class ListCommand(ApiMixin, lister.Lister):
    """A list with default columns; ``--long`` shows every field."""

    columns = ()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--long', action='store_true', default=False,
                            help='List every field the API returns')
        return parser

    @abc.abstractmethod
    def fetch(self, parsed_args):
        """The object(s) to print, as dicts from the API."""

    def take_action(self, parsed_args):
        return list_rows(self.fetch(parsed_args), self.columns,
                         parsed_args.long)


class ShowCommand(ApiMixin, show.ShowOne):
    """One object, every field."""

    @abc.abstractmethod
    def fetch(self, parsed_args):
        """The object(s) to print, as dicts from the API."""

    def take_action(self, parsed_args):
        return show_fields(self.fetch(parsed_args))
