"""96 concurrent binds aimed at 6 single regions -> exactly 6 Bound.

One region per card: the regions of a fake card without SR-IOV share its
PF, so a bind on one makes its sibling unavailable (test_agent_down.py
and tests/functional/placement/test_availability.py cover that).

The binds come in through the API (one HTTP PATCH per ARQ, 100 threads
released together); the two conductors share the RPC topic, so either
may take any of them. Only the database decides who wins a region.
"""
import re
import threading

import pytest
import requests

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

PER_REGION = 16


def test_binds_storm_one_region_per_card_exactly_one_bound_each(
        cluster, arq_cleanup):
    regions = cluster.region_per_card()
    cluster.create_profile('mh-storm')
    arqs = cluster.create_arqs('mh-storm', count=len(regions) * PER_REGION)
    arq_cleanup.extend(a['uuid'] for a in arqs)
    aimed = {a['uuid']: regions[i % len(regions)]
             for i, a in enumerate(arqs)}
    logged_before = {n: len(cluster.services[n].read_log(10 ** 9))
                     for n in cluster.conductor_names}

    barrier = threading.Barrier(len(aimed))
    errors = []

    def bind(arq_uuid, region):
        with requests.Session() as session:
            try:
                barrier.wait(60)
                cluster.bind(arq_uuid, region, session=session)
            except Exception as exc:  # reported by the assertion below
                errors.append(exc)
    threads = [threading.Thread(target=bind, args=item)
               for item in aimed.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []

    done = cluster.wait_resolved(aimed, timeout=90)
    bound = [u for u, a in done.items() if a['state'] == 'Bound']
    assert len(bound) == len(regions)
    # One winner per region, each on its own attach handle.
    assert sorted(done[u]['device_rp_uuid'] for u in bound) == \
        sorted(r.rp_uuid for r in regions)
    assert cluster.handle_double_use() == []
    failed = [a for a in done.values() if a['state'] == 'BindFailed']
    assert len(failed) == len(aimed) - len(regions)
    assert all(a['attach_handle_uuid'] is None for a in failed)
    # Both conductors took part (RabbitMQ spreads the casts over them).
    for name in cluster.conductor_names:
        log = cluster.services[name].read_log(10 ** 9)[logged_before[name]:]
        assert re.search(r'ARQ \S+ bound to deployable|Bind of ARQ \S+ '
                         r'failed', log), name
