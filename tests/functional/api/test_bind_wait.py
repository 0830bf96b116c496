"""A bind waits for a busy warm region (issue 43, conductor/bind_wait.py),
through the API as Nova drives it: one simulated card of two regions,
each on its own SR-IOV VF, offered by the card's provider as two FPGA
slots (``[fake_driver] whole_card``), so a bind on that provider picks
the region. region1 runs the function asked for and is held by ARQ A;
region0, free, runs another. The device's history says a hold and a
clean take far less than programming (the fake card programs in 1.5 s),
so ARQ B waits for region1 rather than reprogram region0; A's delete
frees region1 (its clean's end), and B is Bound to it with no
programming job. A bind still waiting after [arq]warm_wait_timeout
programs region0; one still waiting at [arq]bind_timeout is failed,
naming the region. A conductor killed while B waits leaves nothing to
it: another one resumes B.

The API app, the real ConductorService and an agent with the FAKE driver
over inproc:// (tests/functional/programming_env.py)."""
import pytest

from cyborg_lite.conductor import bind_wait
from cyborg_lite.conductor import cleaning as cleaning_mod
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import arq_waits
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.test_warm_bind import NOVA
from tests.functional.api.test_warm_bind import PATH
from tests.functional.api.test_warm_bind import _handle_of
from tests.functional.api.test_warm_bind import _jobs
from tests.functional.programming_env import make_env  # noqa: F401


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env(program_delay=1.5, sriov=True, whole_card=True,
                    clean_delay=0.05)


class Card:
    """The card's provider and the binds and deletes Nova makes on it."""

    def __init__(self, env, app):
        self.env, self.app = env, app
        [self.rp_uuid] = {env.region(name).rp_uuid
                          for name in ('region0', 'region1')}
        self.instances = 0

    def bind(self):
        """Create an ARQ and PATCH its bind; its uuid (not resolved)."""
        arq = fx.create_arqs(self.app, MEMBER_A).json['arqs'][0]
        self.instances += 1
        instance = 'c0ffee00-0000-4000-8000-%012d' % self.instances
        self.app.patch_json(PATH, {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': pe.HOST},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': self.rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
            headers=NOVA, status=202)
        return arq['uuid']

    def arq(self, arq_uuid):
        return self.app.get('%s/%s' % (PATH, arq_uuid),
                            headers=MEMBER_A).json

    def resolved(self, arq_uuid, reap=None):
        """The ARQ once Bound or BindFailed (``reap()`` called meanwhile,
        as a conductor's periodic task would)."""
        def read():
            if reap is not None:
                reap()
            return self.arq(arq_uuid)
        return waiting.read_until(
            read, lambda seen: seen['state'] in ('Bound', 'BindFailed'),
            what='ARQ %s resolved' % arq_uuid)

    def delete(self, arq_uuid):
        self.app.delete('%s/%s' % (PATH, arq_uuid), headers=MEMBER_A,
                        status=204)

    def region_free(self, name):
        return waiting.until(lambda: self.env.region(name).device_state
                             == 'available')


def _waits(arq_uuid):
    """The region ARQ ``arq_uuid``'s bind waits for, once it waits."""
    found = waiting.until(lambda: [w.region_uuid
                                   for w in arq_waits.waiting()
                                   if w.started.uuid == arq_uuid])
    assert found, 'the bind of ARQ %s never waited' % arq_uuid
    return found[0]


def _waiting_bind(card):
    """A new bind, once it waits for region1 (held by the holder)."""
    waiter = card.bind()
    assert _waits(waiter) == card.env.region('region1').uuid
    return waiter


def _bound_warm(card, bound):
    """``bound`` is Bound to region1, and region0 was not programmed."""
    assert bound['state'] == 'Bound', bound
    assert bound['attach_handle_uuid'] == _handle_of(card.env, 'region1')
    assert card.env.hardware('region0') == pe.OLD_FUNCTION


@pytest.fixture
def card(env, api_conf):
    """region1 programmed with the function; one ARQ bound to it and
    deleted (the hold and the clean in the device's history); then ARQ A
    Bound to it: (Card, A's uuid)."""
    app = env.api_app(api_conf)
    bitstream = env.add_bitstream()
    assert env.wait_job(env.program(bitstream.uuid, 'region1')['uuid']
                        ).state == 'succeeded'
    fx.create_profile(app, ADMIN, groups=[{
        'resources:FPGA': '1', 'accel:function_id': pe.NEW_FUNCTION}])
    card = Card(env, app)
    first = card.bind()
    assert card.resolved(first)['attach_handle_uuid'] == _handle_of(
        env, 'region1')
    card.delete(first)
    assert card.region_free('region1')
    holder = card.bind()
    assert card.resolved(holder)['attach_handle_uuid'] == _handle_of(
        env, 'region1')
    return card, holder


def test_a_bind_waits_for_the_warm_region_and_takes_it_unprogrammed(
        card, env):
    card, holder = card
    jobs_before = _jobs(card.app)

    waiter = card.bind()

    assert _waits(waiter) == env.region('region1').uuid
    # Any conductor's periodic reap leaves a bind that waits within its
    # time alone.
    bind_wait.reap(programmer=env.conductor.manager.bind_programmer)
    assert card.arq(waiter)['state'] == 'BindStarted'
    assert env.region('region0').device_state == 'available'
    card.delete(holder)
    _bound_warm(card, card.resolved(waiter))
    # No programming for the bind.
    assert _jobs(card.app) == jobs_before
    assert arq_waits.waiting() == []


def _seen_at(card, arq_uuid, version):
    """The ARQ as GET and the list show it at ``version``."""
    headers = dict(MEMBER_A, **{'OpenStack-API-Version':
                                'accelerator %s' % version})
    one = card.app.get('%s/%s' % (PATH, arq_uuid), headers=headers).json
    [listed] = [a for a in card.app.get(PATH, headers=headers).json['arqs']
                if a['uuid'] == arq_uuid]
    return one, listed


def test_the_region_a_bind_waits_for_is_shown_from_2_13(card, env):
    card, holder = card
    waiter = _waiting_bind(card)
    region1 = env.region('region1').uuid

    for seen in _seen_at(card, waiter, '2.13'):
        assert (seen['state'], seen['bind_waits_for']) == (
            'BindStarted', region1)
    for seen in _seen_at(card, holder, '2.13'):
        assert seen['bind_waits_for'] is None
    for seen in _seen_at(card, waiter, '2.12'):
        assert 'bind_waits_for' not in seen

    card.delete(holder)
    _bound_warm(card, card.resolved(waiter))
    for seen in _seen_at(card, waiter, '2.13'):
        assert seen['bind_waits_for'] is None


def test_a_bind_waiting_too_long_programs_a_free_region(card, env, conf):
    card, holder = card
    conf.set_override('warm_wait_timeout', 1, group='arq')
    waiter = _waiting_bind(card)

    bound = card.resolved(waiter, reap=lambda: bind_wait.reap(
        programmer=env.conductor.manager.bind_programmer))

    assert bound['state'] == 'Bound', bound
    assert bound['attach_handle_uuid'] == _handle_of(env, 'region0')
    [job] = [job for job in _jobs(card.app)
             if job['deployable_uuid'] == env.region('region0').uuid]
    assert job['state'] == 'succeeded'
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert card.arq(holder)['state'] == 'Bound'


def test_a_bind_waiting_past_bind_timeout_fails_naming_the_region(
        card, env, conf):
    card, _holder = card
    waiter = _waiting_bind(card)
    conf.set_override('bind_timeout', 1, group='arq')

    failed = card.resolved(waiter, reap=lambda: bind_wait.reap(
        programmer=env.conductor.manager.bind_programmer))

    assert failed['state'] == 'BindFailed', failed
    assert 'waited for region %s' % env.region('region1').uuid in \
        failed['error']
    assert env.region('region0').device_state == 'available'


def test_another_conductor_resumes_a_bind_whose_conductor_died(
        card, env, conf):
    card, holder = card
    waiter = _waiting_bind(card)
    # The conductor that took the bind is gone; another serves the
    # agents and the API from now on.
    env.conductor.stop()
    env.conductor = conductor_service.ConductorService(conf, host='cond2')
    env.conductor.start()

    card.delete(holder)

    _bound_warm(card, card.resolved(waiter))


def test_a_bind_whose_region_freed_unseen_is_resumed_by_the_reap(
        card, env, monkeypatch):
    """The conductor that took the clean's end died before it resumed
    the waiting bind: any conductor's periodic reap does."""
    card, holder = card
    waiter = _waiting_bind(card)
    monkeypatch.setattr(type(env.conductor.manager),
                        '_resume_waiting_binds', lambda self, **which: None)
    card.delete(holder)
    assert card.region_free('region1')
    assert card.arq(waiter)['state'] == 'BindStarted'

    bind_wait.reap(programmer=env.conductor.manager.bind_programmer)

    _bound_warm(card, card.arq(waiter))


def test_a_region_whose_driver_does_not_clean_resumes_at_its_release(
        card, env, monkeypatch):
    """Freed at once by the release (no clean to end): the conductor's
    release resumes the waiting bind (after its answer)."""
    card, holder = card
    waiter = _waiting_bind(card)
    monkeypatch.setattr(cleaning_mod, 'driver_cleans', lambda name: False)

    card.delete(holder)

    _bound_warm(card, card.resolved(waiter))
