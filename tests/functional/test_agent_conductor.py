"""Agent and conductor together: in one process over inproc://, and as the
console scripts (start, SIGTERM, bad configuration)."""
import os
import signal
import subprocess
import sys
import threading

import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import models
from cyborg_lite.drivers import fake
from cyborg_lite.rpc import agent_client as agent_rpcapi
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import transport as rpc
from tests import fork_server
from tests import servers
from tests import waiting
from tests.functional import console
from tests.unit.agent.scripted_driver import ScriptedDriver
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD = '0000:af:00.0'


@pytest.fixture
def fake_rpc(conf):
    conf.set_override('transport_url', 'inproc://')
    yield conf
    rpc.cleanup()


@pytest.fixture
def running(fake_rpc, sqlite_db):
    conf = fake_rpc
    conf.set_override('report_interval', 3600, group='agent')
    conductor = conductor_service.ConductorService(conf, host='cond1')
    fake_driver = fake.FakeDriver(conf)
    fake_driver.name = 'fake'
    scripted = ScriptedDriver(conf, 'scripted', [h.fpga(CARD)])
    agent = agent_manager.AgentManager(conf, host=HOST,
                                       drivers=[fake_driver, scripted])
    conductor.start()
    agent.start()
    yield agent, scripted
    agent.stop()
    conductor.stop()


def _identities(driver):
    return [d.identity for d in h.rows(models.Device, hostname=HOST,
                                       driver_name=driver)]


def _versions(driver):
    return [(d.uuid, d.version) for d in h.rows(
        models.Device, hostname=HOST, driver_name=driver)]


def test_agent_reports_over_rpc_and_conductor_asks_again(running):
    agent, scripted = running
    # The report at start reaches the conductor over inproc://.
    assert waiting.until(lambda: _identities('scripted') == [CARD])
    assert len(_identities('fake')) == 2
    fake_rows = _versions('fake')

    scripted.devices = [h.fpga(CARD, model='PAC D5005')]
    agent_rpcapi.AgentAPI().request_report(context.get_admin_context(),
                                           HOST)

    assert waiting.until(lambda: h.devices(HOST)[-1].model == 'PAC D5005')
    assert _versions('fake') == fake_rows

    scripted.error = 'sysfs unreadable'
    acked = agent.acked['scripted']
    agent_rpcapi.AgentAPI().request_report(context.get_admin_context(),
                                           HOST)
    # Acknowledged, and the failed scan deleted nothing.
    assert waiting.until(lambda: agent.acked['scripted'] != acked)
    assert _identities('scripted') == [CARD]


def test_rejected_report_comes_back_as_invalid_report(fake_rpc, sqlite_db):
    server = conductor_service.ConductorService(fake_rpc, host='cond1')
    server.start()
    try:
        with pytest.raises(exception.InvalidReport, match='more than once'):
            conductor_rpcapi.ConductorAPI(timeout=10).report(
                context.get_admin_context(), HOST,
                [h.ok('x', h.fpga(CARD), h.fpga(CARD))])
    finally:
        server.stop()
    assert h.devices() == []


def _config(tmp_path, text):
    path = tmp_path / 'cyborg-lite.conf'
    path.write_text(text)
    return str(path)


def _command(name, config_file):
    return [sys.executable, '-m', 'cyborg_lite.cmd.%s' % name,
            '--config-file', config_file]


@pytest.mark.parametrize('name,text,message', [
    ('agent', '[agent]\nreport_interval = soon\n', 'report_interval'),
    ('conductor', '[conductor]\nworkers = 0\n', 'workers'),
    ('conductor', '[DEFAULT]\ntransport_url = carrier-pigeon://x\n',
     'carrier-pigeon'),
    ('conductor', '[database]\nconnection = oracle://u@h/d\n', 'oracle'),
])
def test_bad_config_is_one_clear_line(tmp_path, name, text, message):
    proc = fork_server.run(_command(name, _config(tmp_path, text)),
                           capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines()
              if line.startswith('cyborg-lite-%s: error:' % name)]
    assert len(errors) == 1 and message in errors[0], proc.stderr


@pytest.mark.slow
def test_conductor_stops_cleanly_on_sigterm(tmp_path, sqlite_db):
    config_file = _config(tmp_path, '[DEFAULT]\ntransport_url = inproc://\n'
                          'state_path = %s\n[database]\nconnection = %s\n'
                          % (tmp_path, sqlite_db))
    # oslo.log writes to stdout unless use_stderr is set.
    proc = fork_server.popen(_command('conductor', config_file),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    # A conductor that never logs its start must not hang the test.
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            if 'Conductor' in line and 'started' in line:
                break
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[0]
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, rest
    assert 'stopped' in rest


@pytest.mark.slow
def test_conductor_workers_start_and_stop_on_sigterm(tmp_path, sqlite_db):
    # [conductor]workers > 1 forks; the parent waits for a stop signal or
    # a worker's exit, then stops every worker (cmd/stop_signals.py).
    rabbit = servers.RabbitMQServer().start()
    try:
        config_file = _config(tmp_path, (
            '[DEFAULT]\ntransport_url = %s\nstate_path = %s\n'
            '[database]\nconnection = %s\n[conductor]\nworkers = 2\n')
            % (rabbit.url, tmp_path, sqlite_db))
        script = console.Script('cyborg-lite-conductor', '--config-file',
                                config_file).start()
        try:
            assert waiting.until(lambda: sum(
                'Conductor' in line and 'started' in line
                for line in script._output()) == 2, timeout=90), \
                ''.join(script._output())
        finally:
            status = script.finish(signal.SIGTERM)
        assert status == 0, ''.join(script._output())
        assert sum('Conductor' in line and 'stopped' in line
                   for line in script._output()) == 2
    finally:
        rabbit.stop()
