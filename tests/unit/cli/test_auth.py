"""Choosing noauth or Keystone from the command line and OS_* variables."""
import argparse

import pytest
from keystoneauth1 import noauth
from keystoneauth1.identity.generic import password

from cyborg_lite.cli import auth
from cyborg_lite.cli import client

ENV_VARS = ('CYBORG_LITE_URL', 'OS_AUTH_TYPE', 'OS_AUTH_PLUGIN',
            'OS_AUTH_URL', 'OS_USERNAME', 'OS_PASSWORD', 'OS_PROJECT_NAME',
            'OS_USER_DOMAIN_NAME', 'OS_PROJECT_DOMAIN_NAME',
            'OS_ACCELERATOR_API_VERSION', 'OS_INTERFACE', 'OS_REGION_NAME')


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _parse(argv):
    parser = argparse.ArgumentParser()
    auth.register_options(parser, argv)
    return parser.parse_known_args(argv)[0]


def test_endpoint_flag_means_noauth():
    options = _parse(['--os-endpoint', 'http://127.0.0.1:1'])
    api = auth.make_client(options)
    assert isinstance(api._adapter.session.auth, noauth.NoAuth)
    assert api.endpoint == 'http://127.0.0.1:1/v2'
    assert api.api_version == client.DEFAULT_API_VERSION


def test_cyborg_lite_url_means_noauth(clean_env):
    clean_env.setenv('CYBORG_LITE_URL', 'http://127.0.0.1:2/v2')
    clean_env.setenv('OS_ACCELERATOR_API_VERSION', '2.1')
    api = auth.make_client(_parse([]))
    assert isinstance(api._adapter.session.auth, noauth.NoAuth)
    assert api.endpoint == 'http://127.0.0.1:2/v2'
    assert api.api_version == '2.1'


def test_os_variables_mean_keystone_password(clean_env):
    clean_env.setenv('OS_AUTH_URL', 'http://127.0.0.1:3/identity/v3')
    clean_env.setenv('OS_USERNAME', 'alice')
    clean_env.setenv('OS_PASSWORD', 'secret')
    clean_env.setenv('OS_PROJECT_NAME', 'demo')
    clean_env.setenv('OS_USER_DOMAIN_NAME', 'Default')
    clean_env.setenv('OS_PROJECT_DOMAIN_NAME', 'Default')
    sess = auth._keystone_session(_parse([]))
    assert isinstance(sess.auth, password.Password)
    assert sess.auth.auth_url == 'http://127.0.0.1:3/identity/v3'
    assert (sess.auth._username, sess.auth._password,
            sess.auth._project_name) == ('alice', 'secret', 'demo')


def test_explicit_auth_type_with_endpoint_uses_keystone(clean_env):
    clean_env.setenv('OS_AUTH_TYPE', 'password')
    options = _parse(['--os-endpoint', 'http://127.0.0.1:4'])
    assert not auth.is_noauth(options.os_endpoint, options.os_auth_type)
    # Keystone options were registered, so OS_* credentials are read.
    assert hasattr(options, 'os_username')


def test_auth_type_none_needs_an_endpoint():
    options = _parse(['--os-auth-type', 'none'])
    with pytest.raises(client.ClientError, match='No API endpoint'):
        auth.make_client(options)


def test_nothing_configured_says_what_to_set():
    with pytest.raises(client.ClientError, match='auth_url.*--os-endpoint'):
        auth.make_client(_parse([]))
