"""The cleanup between tenants over inproc://: an Env (tests/functional/
programming_env.py) whose FAKE driver's simulated local memory is the
hardware the tests look at, and a FAKE driver whose clean the test holds
half way."""
import threading

import pytest

from cyborg_lite.common import context
from cyborg_lite.drivers import fake
from tests import waiting
from tests import releases
from tests.functional import programming_env as pe
from tests.unit.conductor import bind_helpers

TENANT_DATA = 'secret of tenant A\n'
INSTANCE = 'c0ffee00-0000-4000-8000-00000000c1ea'


class GatedFake(fake.FakeDriver):
    """The FAKE driver, whose clean waits for the test's go: the hardware
    held still half way, as a long GPU reset or scrub image would be."""

    def __init__(self, conf):
        super().__init__(conf)
        self.name = 'fake'
        self.go = threading.Event()
        self.started = threading.Event()
        self.cleans = 0

    def clean(self, identity, deployable_name):
        self.started.set()
        assert self.go.wait(60)
        super().clean(identity, deployable_name)
        self.cleans += 1


@pytest.fixture
def make_gated_env(conf, sqlite_db, tmp_path):
    """make_gated_env(**[fake_driver] overrides) -> a started Env whose
    first agent cleans through a GatedFake (``env.gated``); configure
    [placement] first to publish. Stopped after the test."""
    envs = []

    def make(**fake_driver):
        pe.configure(conf, tmp_path)
        for name, value in fake_driver.items():
            conf.set_override(name, value, group='fake_driver')
        env = pe.Env(conf)
        env.gated = GatedFake(conf)
        first, plain = iter([env.gated]), env.new_driver
        env.new_driver = lambda: next(first, None) or plain()
        envs.append(env)
        return env.start()
    yield make
    for env in envs:
        env.gated.go.set()
        env.stop()


def memory(env, region='region0'):
    with open(env.new_driver().local_memory_path(pe.CARD, region)) as f:
        return f.read()


def give_tenant_data(env, region='region0'):
    with open(env.new_driver().local_memory_path(pe.CARD, region),
              'w') as f:
        f.write(TENANT_DATA)


def try_bind(env, region='region0'):
    """Bind a new ARQ to the region through the conductor; the ARQ once
    resolved (Bound or BindFailed)."""
    arq_uuid = bind_helpers.make_arq()
    env.api.bind_arqs(context.get_admin_context(), {arq_uuid: {
        'hostname': pe.HOST, 'device_rp_uuid': env.region(region).rp_uuid,
        'instance_uuid': INSTANCE}})
    arq = waiting.until(lambda: _resolved(arq_uuid))
    assert arq, 'ARQ %s never resolved' % arq_uuid
    return arq


def bind(env, region='region0'):
    """A Bound ARQ's uuid on the region, with the tenant's data in its
    memory."""
    arq = try_bind(env, region)
    assert arq.state == 'Bound', arq.error
    assert env.region(region).device_state == 'allocated'
    give_tenant_data(env, region)
    return arq.uuid


def _resolved(arq_uuid):
    arq = bind_helpers.get_arq(arq_uuid)
    return arq if arq.state in ('Bound', 'BindFailed') else None


def unbind(env, arq_uuid):
    releases.unbind(env.api, context.get_admin_context(), [arq_uuid])


def wait_state(env, state, region='region0', timeout=20):
    return waiting.read_until(lambda: env.region(region),
                              lambda dep: dep.device_state == state,
                              timeout, what='%s %s' % (region, state))
