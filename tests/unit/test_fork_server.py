"""tests/fork_server.py starts a real process, as subprocess.Popen would."""
import json
import os
import signal
import subprocess
import sys

import pytest

from tests import fork_server

MODULE = 'tests.unit.fork_server_child'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _argv(*args):
    return [sys.executable, '-m', MODULE] + [str(a) for a in args]


def test_a_module_runs_as_main_in_a_process_of_its_own(tmp_path):
    out = tmp_path / 'out'
    with open(out, 'wb') as f:
        proc = fork_server.popen(_argv('x', 3), stdout=f,
                                 stderr=subprocess.STDOUT, cwd=ROOT,
                                 env=dict(os.environ, FORK_SERVER_TEST='seen'))
    assert isinstance(proc, fork_server.ForkedProcess)
    assert proc.wait(30) == 3
    first, second = out.read_text().splitlines()
    seen = json.loads(first)
    assert seen['pid'] == proc.pid != os.getpid()
    assert seen['ppid'] != os.getpid()
    assert seen['name'] == '__main__'
    assert seen['argv'][1:] == ['x', '3']
    assert seen['cwd'] == ROOT
    assert seen['env'] == 'seen'
    assert second == 'to stderr'


def test_pipes_a_new_session_and_a_status_at_once(tmp_path):
    proc = fork_server.popen(_argv('echo'), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, start_new_session=True)
    out, err = proc.communicate('hello', timeout=30)
    seen = json.loads(out)
    assert seen['stdin'] == 'hello'
    assert seen['sid'] == seen['pgid'] == proc.pid
    assert err == 'to stderr\n'
    assert proc.returncode == 0


def test_a_signal_ends_it_as_it_ends_a_popen():
    proc = fork_server.popen(_argv('hang'), stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout.readline() == b'ready\n'
    with open('/proc/%d/cmdline' % proc.pid, 'rb') as f:
        assert b' -m %s hang' % MODULE.encode() in f.read()
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.1)
    assert proc.poll() is None
    proc.kill()
    assert proc.wait(30) == -signal.SIGKILL
    proc.kill()  # ended: nothing sent, nothing raised
    proc.stdout.close()


def test_run_captures_like_subprocess_run():
    done = fork_server.run(_argv(5), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 5
    assert json.loads(done.stdout)['argv'][1:] == ['5']
    assert done.stderr == 'to stderr\n'
    with pytest.raises(subprocess.CalledProcessError):
        fork_server.run(_argv(5), capture_output=True, cwd=ROOT, check=True)


@pytest.mark.parametrize('argv, env', [
    ([sys.executable, '-c', 'pass'], {}),
    ([sys.executable, '-X', 'importtime', '-m', MODULE], {}),
    (_argv(), {'PYTHONPATH': '/nowhere'}),
    (_argv(), {'PROMETHEUS_MULTIPROC_DIR': '/nowhere'}),
    (['true'], {}),
])
def test_what_it_cannot_give_exactly_is_a_popen(argv, env):
    proc = fork_server.popen(argv, stdout=subprocess.DEVNULL, cwd=ROOT,
                             env=dict(os.environ, **env))
    assert isinstance(proc, subprocess.Popen)
    proc.wait(30)


def test_a_console_script_of_this_venv_is_forked(tmp_path):
    script = os.path.join(fork_server.BIN, 'cyborg-lite-dbsync')
    done = fork_server.run([script, '--config-file', tmp_path / 'none.conf',
                            'current'], capture_output=True, text=True)
    assert done.returncode == 1
    assert 'does not exist' in done.stderr
    assert fork_server._program([script])[0] == ('script', script)


def test_the_agent_starts_from_a_server_of_its_own():
    """The agent imports prometheus_client; the other services' server
    must not (a conductor with workers names its directory first)."""
    for script in ('cyborg-lite-agent', 'cyborg-lite-conductor'):
        argv = [os.path.join(fork_server.BIN, script), '--version']
        done = fork_server.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    servers = fork_server._servers
    assert servers['agent'].proc.pid != servers['services'].proc.pid
