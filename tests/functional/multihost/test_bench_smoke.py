"""The resource-use bench scripts run end to end at a tiny size.

No timing or size assertion: the figures depend on the machine; this only
proves the scripts work (docs/deployment.md, "Resource use", has the real
figures and the commands that produced them).
"""
import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


# Both benches measure the same one-host cluster (bench/agent_idle.py's
# start_cluster), so one start serves both: the idle agent first, as on a
# fresh cluster, then the report cycles. What is printed is what each
# bench's main prints (main is start_cluster, measure, stop, print).
_BOTH = """
from bench import agent_idle, service_memory
cluster = agent_idle.start_cluster()
try:
    print(agent_idle.measure(cluster, seconds=2, settle=0))
    print('\\n'.join(service_memory.measure(cluster, cycles=6, warmup=2)))
finally:
    cluster.stop()
"""


@pytest.fixture(scope='module')
def bench_output():
    # NOTE: the benches start their own servers; skip/fail like the tests
    # do when the binaries are missing.
    from tests import servers
    servers.require_binary('initdb', 'postgresql',
                           ['/usr/lib/postgresql/*/bin/initdb'])
    servers.require_binary(
        'rabbitmq-server', 'rabbitmq-server',
        ['/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server'])
    proc = subprocess.run([sys.executable, '-c', _BOTH],
                          capture_output=True, text=True, timeout=360,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_agent_idle_bench_runs(bench_output):
    out = bench_output
    assert re.search(r'agent idle: .* [0-9.]+% of one core', out), out


def test_service_memory_bench_runs(bench_output):
    out = bench_output
    assert '6 report cycles' in out, out
    for name in ('api', 'conductor-a', 'host-0'):
        assert re.search(r'^%s +RSS after +2 cycles +[0-9.]+ MiB' % name,
                         out, re.M), out


@pytest.mark.parametrize('script,options', [
    ('agent_idle.py', ('--seconds', '--settle')),
    ('service_memory.py', ('--cycles', '--warmup'))])
def test_the_bench_scripts_take_their_options(script, options):
    # The shared run above calls the benches' functions; their command
    # lines (docs/benchmarks.md) are run as scripts here.
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'bench',
                                                        script), '--help'],
                          capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    for option in options:
        assert option in proc.stdout
