#!/usr/bin/env python3
"""CPU use of an idle cyborg-lite-agent with the default report interval.

Starts a one-host cluster as separate processes (PostgreSQL, RabbitMQ,
Placement, cyborg-lite-api, one cyborg-lite-conductor and one
cyborg-lite-agent with the fake FPGA driver, 2 cards x 2 regions; see
tests/functional/multihost/cluster.py), waits until the agent's first
report reached Placement, then samples the agent's CPU time from
/proc/<pid>/stat (utime + stime, via psutil) for --seconds and prints the
average, in percent of one core. The agent runs with the shipped
[agent]report_interval (60 s) and full_report_every (10).

    .venv/bin/python bench/agent_idle.py [--seconds 60]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import psutil  # noqa: E402

from tests.functional.multihost import cluster as cluster_mod  # noqa: E402


def cpu_seconds(proc):
    times = proc.cpu_times()
    return times.user + times.system


def start_cluster():
    """The one-host cluster this bench and bench/service_memory.py
    measure, with the shipped report interval."""
    cluster = cluster_mod.Cluster(agents=1, conductors=1,
                                  report_interval=None,
                                  full_report_every=None)
    return cluster.start()


def measure(cluster, seconds, settle):
    """The idle agent's CPU over `seconds`, as the line main prints."""
    agent = psutil.Process(cluster.services['host-0'].pid)
    time.sleep(settle)
    cpu0, t0 = cpu_seconds(agent), time.monotonic()
    time.sleep(seconds)
    cpu1, t1 = cpu_seconds(agent), time.monotonic()
    rss = agent.memory_info().rss
    percent = 100.0 * (cpu1 - cpu0) / (t1 - t0)
    return ('agent idle: %.1f s sampled, CPU %.3f s used, %.3f%% of one core '
            '(report_interval 60 s, 1 fake driver, 4 regions); RSS %.1f MiB'
            % (t1 - t0, cpu1 - cpu0, percent, rss / 2 ** 20))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=60.0,
                        help='sampling window (default 60)')
    parser.add_argument('--settle', type=float, default=5.0,
                        help='seconds to wait after the first report')
    args = parser.parse_args(argv)
    cluster = start_cluster()
    try:
        line = measure(cluster, args.seconds, args.settle)
    finally:
        cluster.stop()
    print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
