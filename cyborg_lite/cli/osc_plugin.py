"""OpenStackClient plugin: ``openstack accelerator ...`` commands of
cyborg_lite that python-openstackclient and python-cyborgclient lack.

Why API_NAME is ``cyborg_lite`` and not ``accelerator``: OSC keeps one
client per API_NAME and skips an extension whose name a base module
already has; ``accelerator`` belongs to OSC itself (and to
python-cyborgclient), whose commands expect an openstacksdk proxy. Our
commands use our own client, reached as ``client_manager.cyborg_lite``;
their entry-point names (``accelerator_...``) still put them under
``openstack accelerator``.

The microversion comes from the existing ``--os-accelerator-api-version``
(one knob for one service): a value with a minor part (``2.3``) is sent
as is, a bare major (OSC's default ``2``) sends our default.
"""
import logging

from cyborg_lite.cli import client as cl_client

LOG = logging.getLogger(__name__)

API_NAME = 'cyborg_lite'
API_VERSION_OPTION = 'os_accelerator_api_version'
DEFAULT_API_VERSION = '2'
API_VERSIONS = ('2',)


def microversion(version):
    version = str(version or '')
    return version if '.' in version else cl_client.DEFAULT_API_VERSION


def make_client(instance):
    """Our Client on the session OSC authenticated (or its noauth one)."""
    endpoint = instance.get_endpoint_for_service_type(
        cl_client.SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    if not endpoint:
        raise cl_client.ClientError(
            'No %r endpoint in the catalog' % cl_client.SERVICE_TYPE)
    version = microversion(instance._api_version.get(API_NAME))
    LOG.debug('cyborg_lite client on %s, microversion %s', endpoint, version)
    return cl_client.Client(instance.session, endpoint, api_version=version)


def build_option_parser(parser):
    # --os-accelerator-api-version is added by OSC's own accelerator
    # module; adding it again would be an argparse conflict.
    return parser


def check_api_version(version):
    """Accept any 2.x; True tells OSC to skip its exact-match check."""
    return str(version).split('.')[0] == '2'
