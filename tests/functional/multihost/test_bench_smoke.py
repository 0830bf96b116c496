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


def _run(script, *args):
    # NOTE: the bench starts its own servers; skip/fail like the tests do
    # when the binaries are missing.
    from tests import servers
    servers.require_binary('initdb', 'postgresql',
                           ['/usr/lib/postgresql/*/bin/initdb'])
    servers.require_binary(
        'rabbitmq-server', 'rabbitmq-server',
        ['/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server'])
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'bench',
                                                        script)] +
                          list(args), capture_output=True, text=True,
                          timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_agent_idle_bench_runs():
    out = _run('agent_idle.py', '--seconds', '2', '--settle', '0')
    assert re.search(r'agent idle: .* [0-9.]+% of one core', out), out


def test_service_memory_bench_runs():
    out = _run('service_memory.py', '--cycles', '6', '--warmup', '2')
    assert '6 report cycles' in out, out
    for name in ('api', 'conductor-a', 'host-0'):
        assert re.search(r'^%s +RSS after +2 cycles +[0-9.]+ MiB' % name,
                         out, re.M), out
