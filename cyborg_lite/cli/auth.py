"""How the standalone ``cyborg-lite`` finds and authenticates to the API.

Two modes, chosen from the command line and the environment:

- **noauth**: ``--os-endpoint`` (or ``CYBORG_LITE_URL``) and no explicit
  ``--os-auth-type``/``OS_AUTH_TYPE``: requests go straight to that URL,
  no Keystone involved (the all-in-one and tests).
- **keystone**: otherwise, keystoneauth's own options and OS_* variables
  (``password`` unless told otherwise); the endpoint comes from the
  catalog (service type ``accelerator``), or from ``--os-endpoint`` when
  both are given.

keystoneauth (and requests under it) is imported only when a command
needs it: ``cyborg-lite --help`` and ``cyborg-lite help ...`` talk to
nobody, and importing it was most of their start-up time
(docs/benchmarks.md, "CLI start-up").
"""
import argparse
import os

from cyborg_lite.cli import client as cl_client

NOAUTH_TYPES = ('none', 'noauth')
HELP_ARGS = ('-h', '--help')
# Our own --os-* options; any other one is keystoneauth's.
OWN_OPTIONS = ('--os-endpoint', '--os-accelerator-api-version',
               '--os-interface', '--os-region-name', '--os-auth-type',
               '--os-auth-plugin')
KEYSTONE_HELP = (
    'keystoneauth options: --os-auth-type (default password with no '
    '--os-endpoint), --os-auth-url, --os-username, --os-password, '
    '--os-project-name, --os-user-domain-name, --os-project-domain-name '
    'and the rest of the chosen plugin, and the session options '
    '--insecure, --os-cacert, --os-cert, --os-key, --timeout; each also '
    'from its OS_* variable. `cyborg-lite --os-auth-type <type> --help` '
    'lists a plugin\'s options.')


def _pre_parse(argv):
    # keystoneauth decides which plugin options exist from argv, before the
    # real parser runs, so we must look at the same two options first.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument('--os-endpoint',
                     default=os.environ.get('CYBORG_LITE_URL'))
    pre.add_argument('--os-auth-type', '--os-auth-plugin',
                     default=os.environ.get(
                         'OS_AUTH_TYPE', os.environ.get('OS_AUTH_PLUGIN')))
    return pre.parse_known_args(argv)[0]


def is_noauth(endpoint, auth_type):
    return auth_type in NOAUTH_TYPES or bool(endpoint and not auth_type)


def _default_auth_type(pre):
    """The keystoneauth plugin to register, or None for noauth."""
    if is_noauth(pre.os_endpoint, pre.os_auth_type):
        return None
    return pre.os_auth_type or 'password'


def only_help(argv):
    """Whether ``argv`` asks for help and nothing else: no command runs,
    so no keystoneauth option is needed to parse it."""
    words = [a for a in argv if not a.startswith('-')]
    asked = bool(set(argv) & set(HELP_ARGS)) or words[:1] == ['help']
    keystone = [a for a in argv if a.startswith('--os-') and
                a.split('=', 1)[0] not in OWN_OPTIONS]
    return asked and not keystone and not _pre_parse(argv).os_auth_type


def register_options(parser, argv):
    """Add endpoint, version, session and auth options to ``parser``."""
    parser.add_argument(
        '--os-endpoint', metavar='<url>',
        default=os.environ.get('CYBORG_LITE_URL'),
        help='API URL; without --os-auth-type no Keystone is used '
             '(Env: CYBORG_LITE_URL)')
    parser.add_argument(
        '--os-accelerator-api-version', metavar='<version>',
        default=os.environ.get('OS_ACCELERATOR_API_VERSION',
                               cl_client.DEFAULT_API_VERSION),
        help='Microversion sent as OpenStack-API-Version (default %s, '
             'Env: OS_ACCELERATOR_API_VERSION)'
             % cl_client.DEFAULT_API_VERSION)
    parser.add_argument('--os-interface', metavar='<interface>',
                        default=os.environ.get('OS_INTERFACE', 'public'),
                        help='Catalog interface (Env: OS_INTERFACE)')
    parser.add_argument('--os-region-name', metavar='<region>',
                        default=os.environ.get('OS_REGION_NAME'),
                        help='Catalog region (Env: OS_REGION_NAME)')
    pre = _pre_parse(argv)
    if only_help(argv):
        parser.add_argument('--os-auth-type', '--os-auth-plugin',
                            metavar='<name>', default=pre.os_auth_type,
                            help='Authentication type (Env: OS_AUTH_TYPE)')
        parser.add_argument_group('Keystone authentication', KEYSTONE_HELP)
        return
    from keystoneauth1 import loading
    loading.register_session_argparse_arguments(parser)
    if _default_auth_type(pre) is None:
        # keystoneauth's "none" plugin would add its own --os-endpoint and
        # clash with ours; noauth needs no more options anyway.
        parser.add_argument('--os-auth-type', '--os-auth-plugin',
                            metavar='<name>', default=pre.os_auth_type,
                            help='Authentication type (Env: OS_AUTH_TYPE)')
        return
    loading.register_auth_argparse_arguments(
        parser, argv, default=_default_auth_type(pre))


def _noauth_session(options):
    from keystoneauth1 import loading
    from keystoneauth1 import noauth
    if not options.os_endpoint:
        raise cl_client.ClientError(
            'No API endpoint: give --os-endpoint or set CYBORG_LITE_URL')
    return loading.load_session_from_argparse_arguments(
        options, auth=noauth.NoAuth(endpoint=options.os_endpoint))


def _keystone_session(options):
    from keystoneauth1 import exceptions as ksa_exc
    from keystoneauth1 import loading
    try:
        auth = loading.load_auth_from_argparse_arguments(options)
    except ksa_exc.ClientException as exc:
        raise cl_client.ClientError(
            '%s (give --os-endpoint or set CYBORG_LITE_URL to use the API '
            'without Keystone)' % exc)
    return loading.load_session_from_argparse_arguments(options, auth=auth)


def _catalog_endpoint(sess, options):
    from keystoneauth1 import exceptions as ksa_exc
    try:
        endpoint = sess.get_endpoint(service_type=cl_client.SERVICE_TYPE,
                                     interface=options.os_interface,
                                     region_name=options.os_region_name)
    except ksa_exc.ConnectFailure:
        raise cl_client.ClientError('Unable to connect to Keystone at %s'
                                    % getattr(options, 'os_auth_url', None))
    except ksa_exc.ClientException as exc:
        raise cl_client.ClientError('Keystone: %s' % exc)
    if not endpoint:
        raise cl_client.ClientError(
            'The Keystone catalog has no %r endpoint'
            % cl_client.SERVICE_TYPE)
    return endpoint


def make_client(options):
    """A Client from parsed options; raises ClientError when it cannot."""
    if is_noauth(options.os_endpoint, options.os_auth_type):
        sess = _noauth_session(options)
        endpoint = options.os_endpoint
    else:
        sess = _keystone_session(options)
        endpoint = options.os_endpoint or _catalog_endpoint(sess, options)
    return cl_client.Client(sess, endpoint,
                            api_version=options.os_accelerator_api_version)
