"""A real Keystone on a loopback port, for the tests where auth matters.

Keystone runs from a Python that has it installed:
CYBORG_LITE_KEYSTONE_PYTHON names it (.ci/run makes a venv with ``pip
install keystone==30.*``, the release of nova 34). Without it a test is
skipped on a developer's machine, and fails under CI=true, as for Nova's
code (tests/nova.py).

``KeystoneServer(basedir).start()`` does what a deployer does:
``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup`` and
``bootstrap`` (the admin user, project and role, and the member, reader,
manager and service roles Keystone creates), on SQLite in ``basedir``;
then serves Keystone's own WSGI application (tests/keystone_serve.py,
which runs those keystone-manage commands too, in children forked after
one import of keystone).
Users, projects, role assignments and the catalog are made through its
API with openstacksdk, as an operator would.
"""
import grp
import json
import os
import pwd
import subprocess

import openstack
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from cyborg_lite.cmd import processes
from tests import servers

ENV = 'CYBORG_LITE_KEYSTONE_PYTHON'
PASSWORD = 'secret'
DOMAIN = 'Default'
REGION = 'RegionOne'
SERVE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'keystone_serve.py')
CONF = """[DEFAULT]
log_file = {basedir}/keystone.log
[database]
connection = sqlite:///{basedir}/keystone.sqlite
[fernet_tokens]
key_repository = {basedir}/fernet-keys
[fernet_receipts]
key_repository = {basedir}/fernet-keys
[credential]
key_repository = {basedir}/credential-keys
[token]
provider = fernet
[identity]
# bcrypt's fewest rounds (12 by default, ~0.25 s a login here): tests
# create users and log in again and again.
password_hash_rounds = 4
[cache]
# Keystone's own cache of roles, catalog, tokens and revocations, in the
# one serving process (it invalidates what a write changes): each token a
# service validates is otherwise several SQL reads.
enabled = true
backend = dogpile.cache.memory
"""


def password_auth(auth_url, user, project=None, system_scope=None):
    """keystoneauth's password-auth arguments of ``user``, in the Default
    domain, scoped to ``project`` or the system (the test password)."""
    args = {'auth_url': auth_url, 'username': user, 'password': PASSWORD,
            'user_domain_name': DOMAIN}
    if project is not None:
        args.update(project_name=project, project_domain_name=DOMAIN)
    if system_scope is not None:
        args['system_scope'] = system_scope
    return args


def password_options(auth_url, user, project):
    """The same as a service's [keystone_authtoken] or [service_user]
    section holds them: with ``auth_type``."""
    return dict(password_auth(auth_url, user, project), auth_type='password')


def authtoken_options(auth_url):
    """keystonemiddleware's [keystone_authtoken] section of the API:
    its service user ``cyborg`` in project ``service``, against the
    Keystone whose identity endpoint is ``auth_url``."""
    return dict(password_options(auth_url, 'cyborg', 'service'),
                www_authenticate_uri=auth_url)


def python():
    """The path of a Python with keystone, or skip (fail under CI)."""
    return servers.require_python(ENV, (
        'set %s to a Python with keystone installed (python3 -m venv V && '
        'V/bin/pip install "keystone==30.*"; .ci/run does) to run the tests '
        'against a real Keystone' % ENV))


class KeystoneServer:
    """A real Keystone; ``url`` is its identity endpoint's base."""

    def __init__(self, basedir):
        self.python = python()
        self.basedir = str(basedir)
        self.conf = os.path.join(self.basedir, 'keystone.conf')
        self.port = servers.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.auth_url = self.url + '/v3'
        self.proc = None
        self._admin = None

    def start(self):
        os.makedirs(self.basedir, exist_ok=True)
        with open(self.conf, 'w') as f:
            f.write(CONF.format(basedir=self.basedir))
        owner = ['--keystone-user', pwd.getpwuid(os.getuid()).pw_name,
                 '--keystone-group', grp.getgrgid(os.getgid()).gr_name]
        # keystone-manage's commands, run by the serving process before it
        # serves (tests/keystone_serve.py): the first three are independent
        # and run side by side.
        stages = [[['db_sync'], ['fernet_setup'] + owner,
                   ['credential_setup'] + owner],
                  [['bootstrap', '--bootstrap-password', PASSWORD,
                    # Public, internal (keystonemiddleware's default
                    # interface) and admin, as deployment tools register
                    # them.
                    '--bootstrap-public-url', self.auth_url,
                    '--bootstrap-internal-url', self.auth_url,
                    '--bootstrap-admin-url', self.auth_url,
                    '--bootstrap-region-id', REGION]]]
        self._log = open(os.path.join(self.basedir, 'serve.log'), 'w')
        self.proc = subprocess.Popen(
            [self.python, '-W', 'ignore', SERVE, self.conf, str(self.port),
             json.dumps(stages)],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            servers.wait_for_port(self.port, timeout=120, proc=self.proc)
        except Exception as exc:
            self.stop()
            raise RuntimeError('Keystone did not start: %s\n%s' % (
                exc, self._tails())) from exc
        return self

    def stop(self):
        if self.proc is not None:
            processes.stop(self.proc, 15)
            self._log.close()

    def _tails(self):
        tails = []
        for name in ('serve.log', 'keystone.log'):
            try:
                with open(os.path.join(self.basedir, name),
                          errors='replace') as f:
                    tails.append('%s: ...%s' % (name, f.read()[-2000:]))
            except OSError:
                pass
        return '\n'.join(tails)

    # -- what an operator does, through Keystone's API -----------------

    @property
    def admin(self):
        """openstacksdk as the bootstrap admin (project admin)."""
        if self._admin is None:
            self._admin = openstack.connection.Connection(
                **self.auth('admin', 'admin'))
        return self._admin

    def auth(self, user, project=None, system_scope=None):
        """openstacksdk / keystoneauth password-auth arguments."""
        return password_auth(self.auth_url, user, project, system_scope)

    def user(self, name, project, roles):
        """A user with ``roles`` on ``project`` (both made if missing)."""
        identity = self.admin.identity
        found = identity.find_project(project, domain_id='default')
        if found is None:
            found = identity.create_project(name=project,
                                            domain_id='default')
        user = identity.find_user(name, domain_id='default')
        if user is None:
            user = identity.create_user(name=name, password=PASSWORD,
                                        domain_id='default',
                                        default_project_id=found.id)
        for role in roles:
            identity.assign_project_role_to_user(
                found, user, identity.find_role(role, ignore_missing=False))
        return user

    def password_options(self, user, project):
        """keystoneauth's password options of ``user`` in ``project``, as
        a service's configuration file holds them."""
        return password_options(self.auth_url, user, project)

    def login(self, user, project=None, system_scope=None):
        """keystoneauth's AccessInfo of a new token of ``user`` scoped to
        ``project`` (or the system): the token, its roles, its catalog."""
        session = ks_session.Session(
            auth=v3.Password(**self.auth(user, project, system_scope)))
        return session.auth.get_access(session)

    def token(self, user, project=None, system_scope=None):
        return self.login(user, project, system_scope).auth_token

    def revoke(self, token):
        """Revoke ``token`` (DELETE /v3/auth/tokens), as its user may."""
        resp = self.admin.session.delete(
            self.auth_url + '/auth/tokens',
            headers={'X-Subject-Token': token})
        assert resp.status_code == 204, resp.text

    def set_endpoint(self, service_type, url):
        """The catalog's one public ``service_type`` endpoint is ``url``;
        tokens issued after this carry it."""
        identity = self.admin.identity
        service = identity.find_service(service_type)
        if service is None:
            service = identity.create_service(type=service_type,
                                              name=service_type)
        endpoints = list(identity.endpoints(service_id=service.id))
        if endpoints:
            identity.update_endpoint(endpoints[0], url=url)
        else:
            identity.create_endpoint(service_id=service.id, url=url,
                                     interface='public', region_id=REGION)


def ini(sections):
    """An oslo.config file of {section: {option: value}}."""
    return ''.join('[%s]\n%s' % (name, ''.join(
        '%s = %s\n' % item for item in options.items()))
        for name, options in sections.items())
