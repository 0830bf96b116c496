#!/usr/bin/env python3
"""RSS of cyborg-lite-api, -conductor and -agent over N report cycles.

Starts a one-host cluster as separate processes (PostgreSQL, RabbitMQ,
Placement, api, one conductor, one agent with the fake driver; see
tests/functional/multihost/cluster.py). One cycle is a full round trip
through every service, driven fast instead of waiting the report
interval: the bench changes the function loaded in a simulated region
(its afu_id file), casts ``request_report`` to the agent over RabbitMQ,
the agent scans and sends the changed report, the conductor applies it to
PostgreSQL and syncs Placement, and the bench reads the new function back
through the API. Every cycle therefore writes the database and Placement:
a worst case for growth, not an idle one.

RSS (resident set, psutil; for the api, gunicorn's master plus workers)
is taken after --warmup cycles and after --cycles; the difference is the
growth.

    .venv/bin/python bench/service_memory.py [--cycles 1000] [--warmup 100]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import psutil  # noqa: E402

from bench import agent_idle  # noqa: E402

FUNCTIONS = ('%032x' % 0xa1, '%032x' % 0xb2)
SERVICES = ('api', 'conductor-a', 'host-0')


def rss(pid):
    proc = psutil.Process(pid)
    total = proc.memory_info().rss
    for child in proc.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def snapshot(cluster):
    return {name: rss(cluster.services[name].pid) for name in SERVICES}


def one_cycle(cluster, region, agent_api, ctxt, function_id, timeout=30):
    cluster.load_function(region, function_id)
    agent_api.request_report(ctxt, region.host)
    deadline = time.monotonic() + timeout
    while cluster.api_function_id(region) != function_id:
        if time.monotonic() > deadline:
            raise RuntimeError('cycle not done after %ss:\n%s'
                               % (timeout, cluster.logs()))
        time.sleep(0.01)


def measure(cluster, cycles, warmup):
    """Drive `cycles` report cycles through a running one-host cluster
    (bench/agent_idle.start_cluster); returns the lines main prints."""
    # This process is an RPC client on the cluster's broker.
    from cyborg_lite.rpc import agent_client as agent_rpcapi
    from cyborg_lite.common import context
    from cyborg_lite.rpc import transport as rpc
    from cyborg_lite.conf import CONF
    CONF([], project='cyborg_lite', default_config_files=[])
    CONF.set_override('transport_url', cluster.rabbit.url)
    agent_api = agent_rpcapi.AgentAPI()
    ctxt = context.get_admin_context()
    region = cluster.region_rps()[0]
    start = time.monotonic()
    before = None
    checkpoints = []
    step = max(1, (cycles - warmup) // 4)
    try:
        for i in range(1, cycles + 1):
            one_cycle(cluster, region, agent_api, ctxt,
                      FUNCTIONS[i % 2])
            if i == warmup:
                before = snapshot(cluster)
            if i >= warmup and (i - warmup) % step == 0:
                checkpoints.append((i, snapshot(cluster)))
        after = snapshot(cluster)
        elapsed = time.monotonic() - start
    finally:
        rpc.cleanup()
    before = before or after
    lines = ['%d report cycles in %.0f s (%.0f ms each)'
             % (cycles, elapsed, 1000.0 * elapsed / cycles)]
    for name in SERVICES:
        lines.append(
            '%-12s RSS after %4d cycles %7.1f MiB, after %4d %7.1f MiB, '
            'growth %+6.1f MiB' % (
                name, warmup, before[name] / 2 ** 20, cycles,
                after[name] / 2 ** 20,
                (after[name] - before[name]) / 2 ** 20))
    # The trend, to tell a leak (steady climb) from allocator settling.
    lines.append('RSS (MiB) at cycle: ' + '  '.join(
        '%d: %s' % (i, '/'.join('%.1f' % (snap[n] / 2 ** 20)
                                for n in SERVICES))
        for i, snap in checkpoints) + '  (%s)' % '/'.join(SERVICES))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--cycles', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=100)
    args = parser.parse_args(argv)
    cluster = agent_idle.start_cluster()
    try:
        lines = measure(cluster, args.cycles, args.warmup)
    finally:
        cluster.stop()
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
