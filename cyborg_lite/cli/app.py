"""The standalone ``cyborg-lite`` command: a cliff App needing no Keystone.

    cyborg-lite --os-endpoint http://127.0.0.1:6666 device list -f json
    CYBORG_LITE_URL=http://127.0.0.1:6666 cyborg-lite arq list
    source openrc && cyborg-lite device list      # Keystone, catalog

Errors print one line on stderr and exit 1 (cliff's own handling of an
exception from a command); ``--debug`` shows the traceback.
"""
import logging
import sys

from cliff import app
from cliff import commandmanager

from cyborg_lite.cli import auth
from cyborg_lite.cli import commands
from cyborg_lite.common import version


class ClientManager:
    """What OSC's ClientManager is to the OSC plugin: ``.cyborg_lite``."""

    def __init__(self, options):
        self._options = options
        self._client = None

    @property
    def cyborg_lite(self):
        # Built on first use, so `help` works without any endpoint.
        if self._client is None:
            self._client = auth.make_client(self._options)
        return self._client


def build_command_manager():
    # No entry-point namespace: the command set is the fixed table, so an
    # installed OSC plugin can never add to or shadow it.
    manager = commandmanager.CommandManager('cyborg_lite.cli.standalone')
    for name, cls in commands.COMMANDS.items():
        manager.add_command(name, cls)
    return manager


class CyborgLiteApp(app.App):

    def __init__(self, argv):
        # keystoneauth registers a plugin's options from argv, and cliff
        # builds the parser in __init__, so argv must be known first.
        self._argv = list(argv)
        self.client_manager = None
        super().__init__(
            description='Manage accelerators through the cyborg_lite API',
            version=version.VERSION,
            command_manager=build_command_manager(),
            deferred_help=True)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        auth.register_options(parser, self._argv)
        return parser

    def configure_logging(self):
        super().configure_logging()
        if self.options.verbose_level < 2 and not self.options.debug:
            # keystoneauth warns on stderr before failing (e.g. version
            # discovery); the failure itself is our one line. oslo.service
            # logs its backend choice when a command loads the option
            # registry (bitstream sample).
            logging.getLogger('keystoneauth').setLevel(logging.ERROR)
            logging.getLogger('oslo_service').setLevel(logging.WARNING)

    def initialize_app(self, argv):
        self.client_manager = ClientManager(self.options)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return CyborgLiteApp(argv).run(argv)


if __name__ == '__main__':
    sys.exit(main())
