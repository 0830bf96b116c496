"""Stop Placement for a while: the conductors keep applying reports to the
database; their syncs of the host fail and are retried with backoff
(each failure logged as deferred), and once Placement is back they bring
it in line."""
import re

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

OLD_TRAIT = 'CUSTOM_FUNCTION_ID_%s'
NEW_FUNCTION = 'feedfacefeedfacefeedfacefeedface'
DEFERRED = re.compile(r'Placement sync of host-2 deferred: ')


def _deferred(cluster, offsets):
    return sum(len(DEFERRED.findall(text))
               for text in cluster.logs_since(offsets).values())


def test_reports_kept_while_placement_down_then_converge(cluster):
    region = [r for r in cluster.region_rps() if r.host == 'host-2'][-1]
    old_function = cluster.api_function_id(region)
    new_trait = OLD_TRAIT % NEW_FUNCTION.upper()
    assert new_trait not in cluster.placement_traits(region)
    offsets = cluster.log_offsets(*cluster.conductor_names)

    cluster.stop_placement()
    try:
        cluster.load_function(region, NEW_FUNCTION)
        # The report reaches the database while Placement is away.
        cluster.wait_for(
            lambda: cluster.api_function_id(region) == NEW_FUNCTION, 30,
            'the report stored with Placement down')
        # The sync that followed failed, and so did at least two retries.
        cluster.wait_for(lambda: _deferred(cluster, offsets) >= 3, 60,
                         'three failed syncs of host-2')
        failed_while_down = _deferred(cluster, offsets)
    finally:
        cluster.start_placement()

    cluster.wait_for(lambda: new_trait in cluster.placement_traits(region),
                     60, 'Placement catching up after the outage')
    # The card's provider shows the functions its regions run now: the
    # old one only if a sibling region still runs it.
    traits = cluster.placement_traits(region)
    running = {d['function_id'] for d in cluster.call(
        'GET', '/deployables', 200,
        params={'rp_uuid': region.rp_uuid}).json()['deployables']}
    assert old_function != NEW_FUNCTION and NEW_FUNCTION in running
    assert {t for t in traits if t.startswith(OLD_TRAIT % '')} == {
        OLD_TRAIT % f.upper() for f in running if f}
    # Nothing was lost meanwhile: every region is still in Placement.
    assert len(cluster.region_rps()) == cluster.expected_regions()
    print('%d failed syncs of host-2 while Placement was down'
          % failed_while_down)
