"""Fixtures of the API tests: the full WSGI stack over a migrated
database, callers with different roles, and rows to read."""
import json
import uuid

import pytest
import webtest
from keystoneauth1 import loading as ks_loading

from cyborg_lite.api import deploy
from cyborg_lite.api import policy
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests import real_keystone

ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'admin-project',
         'X-User-Id': 'admin'}
MEMBER_A = {'X-Roles': 'member,reader', 'X-Project-Id': 'project-a',
            'X-User-Id': 'alice'}
MANAGER_A = {'X-Roles': 'manager,member,reader', 'X-Project-Id': 'project-a',
             'X-User-Id': 'anne'}
MEMBER_B = {'X-Roles': 'member,reader', 'X-Project-Id': 'project-b',
            'X-User-Id': 'bob'}
ANONYMOUS = {'X-Roles': ''}

GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'}


class RecordingConductor:
    """Stands in for the conductor RPC client where only the call the API
    makes is under test; tests/functional/api/test_arq_bind_rpc.py runs the
    real conductor over inproc:// RPC."""

    def __init__(self):
        self.calls = []

    def bind_arqs(self, ctxt, bindings):
        self.calls.append(('bind_arqs', ctxt.project_id, bindings))

    def start_cleaning(self, ctxt, hostnames):
        self.calls.append(('start_cleaning', ctxt.project_id, hostnames))

    def publish_requested(self, ctxt):
        self.calls.append(('publish_requested', ctxt.project_id))

    def publish_hosts(self, ctxt, hostnames, timeout=None):
        self.calls.append(('publish_hosts', ctxt.project_id, hostnames))
        return {hostname: True for hostname in hostnames}

    def release(self, ctxt, publish_hosts, clean_hosts, timeout=None):
        self.calls.append(('release', ctxt.project_id,
                           (publish_hosts, clean_hosts)))
        return {hostname: True for hostname in publish_hosts}


def error_of(resp):
    """The faultstring of a Cyborg error body (after checking its form)."""
    outer = resp.json
    assert set(outer) == {'error_message'}
    fault = json.loads(outer['error_message'])
    assert fault['debuginfo'] is None
    assert fault['faultcode'] == ('Server' if resp.status_int >= 500
                                  else 'Client')
    return fault['faultstring']


@pytest.fixture
def api_conf(conf):
    conf.set_override('auth_strategy', 'noauth', group='api')
    policy.reset()
    yield conf
    policy.reset()


def configure_keystone(conf, keystone_url):
    """[api] auth_strategy keystone, keystonemiddleware's service user
    against the Keystone at ``keystone_url`` (a KeystoneStandIn or the
    real one of the ``keystone`` fixture)."""
    group = 'keystone_authtoken'
    conf.set_override('auth_strategy', 'keystone', group='api')
    # NOTE: keystoneauth registers a plugin's options only when it loads
    # the plugin; register them first so they can be set.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('password'),
                       group=group)
    options = real_keystone.authtoken_options(keystone_url + '/v3')
    for name, value in options.items():
        conf.set_override(name, value, group=group)


@pytest.fixture(scope='session')
def keystone(tmp_path_factory):
    """A real Keystone (tests/real_keystone.py) for the worker's session:
    its tests share the xdist group ``keystone``, and other modules' tests
    may run between them. keystonemiddleware's user (``cyborg``) and
    Nova's have the service role, as devstack gives them; alice, rita and
    anne are project-a's member, reader and manager, bob project-b's
    member."""
    server = real_keystone.KeystoneServer(
        tmp_path_factory.mktemp('keystone')).start()
    try:
        server.user('cyborg', 'service', ['service'])
        server.user('nova', 'service', ['service'])
        server.user('alice', 'project-a', ['member'])
        server.user('rita', 'project-a', ['reader'])
        server.user('anne', 'project-a', ['manager'])
        server.user('bob', 'project-b', ['member'])
        yield server
    finally:
        server.stop()


@pytest.fixture
def conductor():
    return RecordingConductor()


@pytest.fixture
def app(sqlite_db, api_conf, conductor):
    return webtest.TestApp(deploy.loadapp(api_conf,
                                          conductor_factory=lambda: conductor))


@pytest.fixture
def pg_app(db, api_conf, conductor):
    """The app over each backend (SQLite and PostgreSQL)."""
    return webtest.TestApp(deploy.loadapp(api_conf,
                                          conductor_factory=lambda: conductor))


def add_device(hostname='host1', type_='FPGA', vendor='8086',
               identity=None, status='enabled'):
    with session.writer() as s:
        device = models.Device(
            uuid=str(uuid.uuid4()), type=type_, vendor=vendor,
            model='PAC', hostname=hostname, driver_name='fake',
            identity=identity or str(uuid.uuid4())[:8], status=status,
            std_board_info='{"product_id": "09c4"}')
        s.add(device)
    return device


def add_deployable(device, name=None, attributes=()):
    with session.writer() as s:
        dep = models.Deployable(
            uuid=str(uuid.uuid4()), device_id=device.id,
            name=name or 'dep-' + str(uuid.uuid4())[:8],
            num_accelerators=1, driver_name='fake',
            rp_uuid=str(uuid.uuid4()), region_type='pr-1')
        s.add(dep)
        s.flush()
        for key, value in attributes:
            s.add(models.Attribute(uuid=str(uuid.uuid4()),
                                   deployable_id=dep.id, key=key,
                                   value=value))
    return dep


def add_handle(deployable, in_use=True):
    with session.writer() as s:
        handle = models.AttachHandle(
            uuid=str(uuid.uuid4()), deployable_id=deployable.id,
            in_use=in_use, attach_type='PCI',
            attach_info='{"domain": "0000", "bus": "5e", "device": "00", '
                        '"function": "1"}')
        s.add(handle)
    return handle


def set_arq(uuid_, **values):
    """Change an ARQ row as the conductor would (state, binding)."""
    with session.writer() as s:
        arq = s.query(models.AcceleratorRequest).filter_by(
            uuid=uuid_).one()
        for key, value in values.items():
            setattr(arq, key, value)


def create_profile(app, headers, name='dp1', groups=(GROUP,), status=201):
    body = [{'name': name, 'groups': list(groups)}]
    return app.post_json('/v2/device_profiles', body, headers=headers,
                         status=status)


def create_arqs(app, headers, name='dp1', status=201):
    return app.post_json('/v2/accelerator_requests',
                         {'device_profile_name': name}, headers=headers,
                         status=status)
