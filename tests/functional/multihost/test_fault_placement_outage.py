"""Stop Placement for a while: the conductors keep applying reports to the
database; once Placement is back they bring it in line (retry loop)."""
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

OLD_TRAIT = 'CUSTOM_FUNCTION_ID_%s'
NEW_FUNCTION = 'feedfacefeedfacefeedfacefeedface'


def test_reports_kept_while_placement_down_then_converge(cluster):
    region = [r for r in cluster.region_rps() if r.host == 'host-2'][-1]
    old_function = cluster.api_function_id(region)
    new_trait = OLD_TRAIT % NEW_FUNCTION.upper()
    assert new_trait not in cluster.placement_traits(region)

    cluster.stop_placement()
    try:
        cluster.load_function(region, NEW_FUNCTION)
        # The report reaches the database while Placement is away.
        cluster.wait_for(
            lambda: cluster.api_function_id(region) == NEW_FUNCTION, 30,
            'the report stored with Placement down')
        # Several failed syncs and retries while it stays down.
        time.sleep(3)
    finally:
        cluster.start_placement()

    cluster.wait_for(lambda: new_trait in cluster.placement_traits(region),
                     60, 'Placement catching up after the outage')
    traits = cluster.placement_traits(region)
    assert OLD_TRAIT % old_function.upper() not in traits
    # Nothing was lost meanwhile: every region is still in Placement.
    assert len(cluster.region_rps()) == cluster.expected_regions()
