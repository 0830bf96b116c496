"""The cleanup between tenants end to end over inproc://: unbind or delete ->
conductor -> agent -> FAKE driver, whose simulated local memory is the
hardware the test looks at (tenant data written there must be gone
before the region is available again)."""
import pytest

from cyborg_lite.common import context
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import cleaning as cleaning_db
from tests.functional import cleaning_env as ce
from tests.functional.cleaning_env import make_gated_env  # noqa: F401
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401


@pytest.mark.parametrize('sriov', [True, False], ids=['vf', 'pf'])
def test_unbind_wipes_the_region_before_the_next_tenant(make_env, sriov):
    """The tenant had region0's function: with SR-IOV its own VF, so
    region0 only is wiped; without, the card's PF, through which it could
    write region1 too: both are wiped before either is bound again."""
    env = make_env(sriov=sriov)
    arq_uuid = ce.bind(env)
    ce.give_tenant_data(env, 'region1')

    ce.unbind(env, arq_uuid)

    region = ce.wait_state(env, 'available')
    assert ce.memory(env) == ''
    assert (region.cleaning_error, region.cleaning_attempts) == (None, 0)
    if sriov:
        # Only the released region was wiped.
        assert ce.memory(env, 'region1') == ce.TENANT_DATA
        assert env.region('region1').device_state == 'available'
    else:
        ce.wait_state(env, 'available', 'region1')
        assert ce.memory(env, 'region1') == ''
    # And the next tenant binds it.
    ce.bind(env)


def test_delete_wipes_the_region_too(make_env):
    env = make_env()
    arq_uuid = ce.bind(env)

    released = arq_releases.delete_by_uuids(
        arqs_db.ALL, [arq_uuid]).clean_hosts
    assert released == {pe.HOST}
    assert env.region().device_state == 'pending_cleaning'
    env.api.start_cleaning(context.get_admin_context(), released)

    ce.wait_state(env, 'available')
    assert ce.memory(env) == ''


def test_failed_clean_is_an_error_until_repaired_and_retried(conf, make_env):
    env = make_env(fail_clean_regions=['%s/region0' % pe.CARD])
    arq_uuid = ce.bind(env)
    ce.unbind(env, arq_uuid)

    region = ce.wait_state(env, 'error')
    assert 'simulated failure cleaning' in region.cleaning_error
    assert ce.memory(env) == ce.TENANT_DATA
    # Not bindable, with the reason.
    arq = ce.try_bind(env)
    assert arq.state == 'BindFailed'
    # Its sibling behind the card's PF with it.
    assert 'region0: unavailable [cleaning_failed]' in arq.error
    assert 'region1: unavailable [shared_function_unclean]' in arq.error

    # The operator repairs the card (no more failure) and retries.
    env.agent.stop()
    conf.set_override('fail_clean_regions', [], group='fake_driver')
    env.start_agent()
    cleaning_db.reclean(region.uuid)
    env.api.start_cleaning(context.get_admin_context(), [pe.HOST])

    region = ce.wait_state(env, 'available')
    assert region.cleaning_error is None
    assert ce.memory(env) == ''


def test_a_long_clean_is_kept_alive_by_heartbeats(conf, make_env):
    conf.set_override('heartbeat_interval', 1, group='cleaning')
    conf.set_override('heartbeat_timeout', 3, group='cleaning')
    conf.set_override('reap_interval', 1, group='cleaning')
    # The clean outlasts heartbeat_timeout.
    env = make_env(clean_delay=4.5)
    arq_uuid = ce.bind(env)
    ce.unbind(env, arq_uuid)

    ce.wait_state(env, 'cleaning')
    region = ce.wait_state(env, 'available', timeout=30)
    assert (region.cleaning_error, region.cleaning_attempts) == (None, 0)
    assert ce.memory(env) == ''


def test_agent_killed_mid_clean_resumes_after_restart(
        make_gated_env):  # noqa: F811
    # A VF each: the one region released is the one try abandoned.
    env = make_gated_env(sriov=True)
    arq_uuid = ce.bind(env)
    ce.unbind(env, arq_uuid)
    assert env.gated.started.wait(20)
    first_try = ce.wait_state(env, 'cleaning').cleaning_uuid

    env.kill_agent()
    # Nothing wiped, nothing offered.
    assert ce.memory(env) == ce.TENANT_DATA
    assert env.region().device_state == 'cleaning'

    env.start_agent()   # agent_started: the clean starts over

    region = ce.wait_state(env, 'available')
    assert region.cleaning_uuid != first_try
    # One try abandoned with the agent; the success clears its reason.
    assert (region.cleaning_attempts, region.cleaning_error) == (1, None)
    assert ce.memory(env) == ''
    # The dead agent's try ends late; its report is refused.
    env.gated.go.set()
    assert env.orphans_done()
    assert env.gated.cleans == 1
    assert env.region().cleaning_uuid == region.cleaning_uuid


def test_release_whose_cast_was_lost_is_cleaned_by_the_periodic_task(
        conf, make_env):
    conf.set_override('reap_interval', 1, group='cleaning')
    env = make_env()
    arq_uuid = ce.bind(env)

    # A conductor that dies right after the unbind's commit: no cast.
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    assert env.region().device_state == 'pending_cleaning'

    ce.wait_state(env, 'available')
    assert ce.memory(env) == ''


def test_try_whose_cast_was_lost_is_sent_again_without_counting(
        conf, make_env):
    conf.set_override('heartbeat_timeout', 1, group='cleaning')
    conf.set_override('reap_interval', 1, group='cleaning')
    env = make_env()
    arq_uuid = ce.bind(env)
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    # A conductor that dies after beginning the try, before its cast.
    lost = cleaning_db.begin(env.region().id)
    assert lost is not None

    region = ce.wait_state(env, 'available')
    assert region.cleaning_uuid != lost.cleaning_uuid
    # The lost try never reached an agent: not counted as one.
    assert (region.cleaning_attempts, region.cleaning_error) == (0, None)
    assert ce.memory(env) == ''
