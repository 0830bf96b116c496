"""While a released region is wiped, the real Placement has it reserved
(reserved = total) and binds are refused; once wiped it is offered again.

The conductor and agent run in this process over inproc:// (programming_env)
and publish to a real openstack-placement server; the FAKE driver's clean
is held half way by the test (cleaning_env.GatedFake).
"""
from cyborg_lite.placement import client as client_mod
from tests import waiting
from tests.functional import cleaning_env as ce
from tests.functional.cleaning_env import make_gated_env  # noqa: F401
from tests.functional.placement.conftest import configure_placement

OFFERED = {'FPGA': (1, 0), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 0)}
RESERVED = {'FPGA': (1, 1), 'CUSTOM_FPGA_LOCAL_MEMORY_MB': (4096, 4096)}


def _inventory(env, rp_uuid):
    """{rc: (total, reserved)} of a provider in Placement ({} while it
    does not exist)."""
    client = client_mod.PlacementClient(client_mod.adapter_from_conf(
        env.conf))
    try:
        inv = client.get('/resource_providers/%s/inventories'
                         % rp_uuid)['inventories']
    except Exception:
        return {}
    return {rc: (i['total'], i['reserved']) for rc, i in inv.items()}


def _wait_inventory(env, region, expected):
    return waiting.read_until(
        lambda: _inventory(env, env.region(region).rp_uuid),
        lambda inv: inv == expected, 20,
        what='%s inventory %s' % (region, expected))


def test_region_is_reserved_while_wiped_and_offered_after(
        conf, placement, make_gated_env):  # noqa: F811
    conf.set_override('local_memory_mb', 4096, group='fake_driver')
    configure_placement(conf, placement.endpoint)
    env = make_gated_env()
    _wait_inventory(env, 'region0', OFFERED)
    arq_uuid = ce.bind(env)
    # Bound: still offered (Placement's allocation, not reserved, holds it).
    assert _inventory(env, env.region().rp_uuid) == OFFERED

    ce.unbind(env, arq_uuid)
    assert env.gated.started.wait(20)

    # Mid-clean: reserved = total. Both regions are reached through the
    # card's PF, offered by one provider, which the tenant had: both are
    # wiped, and neither is handed over before both are.
    assert env.region().device_state == 'cleaning'
    assert env.region('region1').rp_uuid == env.region().rp_uuid
    _wait_inventory(env, 'region0', RESERVED)
    # A bind now is refused, and says why.
    refused = ce.try_bind(env)
    assert refused.state == 'BindFailed'
    assert ('region0: unavailable [shared_function_unclean, cleaning]'
            in refused.error)
    assert 'region1: unavailable [shared_function_unclean, ' in refused.error
    assert ce.memory(env) == ce.TENANT_DATA

    env.gated.go.set()

    ce.wait_state(env, 'available')
    ce.wait_state(env, 'available', 'region1')
    assert ce.memory(env) == ''
    _wait_inventory(env, 'region0', OFFERED)
    assert ce.try_bind(env).state == 'Bound'
