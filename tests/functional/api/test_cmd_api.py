"""cyborg-lite-api serves the app under gunicorn."""
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request

from tests import fork_server
from tests import servers
from tests import waiting
from tests.functional.api import test_http_server


def test_console_script_serves_the_api(sqlite_db, tmp_path):
    port = servers.free_port()
    config = tmp_path / 'api.conf'
    config.write_text('[DEFAULT]\nstate_path = %s\n[database]\n'
                      'connection = %s\n[api]\nport = %d\nworkers = 1\n'
                      'auth_strategy = noauth\n' % (tmp_path, sqlite_db,
                                                    port))
    script = os.path.join(os.path.dirname(sys.executable), 'cyborg-lite-api')
    proc = fork_server.popen([script, '--config-file', str(config)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        servers.wait_for_port(port, timeout=60, proc=proc)
        url = 'http://127.0.0.1:%d/v2/devices' % port
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert json.load(resp) == {'devices': []}
            assert resp.headers['OpenStack-API-Version'] == 'accelerator 2.0'
        # gunicorn streams request bodies: an oversized declared body is
        # refused, in JSON, from the headers alone.
        status, headers, body = test_http_server.exchange(port, (
            'POST /v2/device_profiles HTTP/1.1\r\nHost: x\r\n'
            'Content-Type: application/json\r\nContent-Length: %d\r\n'
            % (10 ** 9)))
        assert status == 413
        assert test_http_server.json_error(headers, body)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_bad_config_file_is_a_clear_error(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), 'cyborg-lite-api')
    proc = fork_server.run([script, '--config-file',
                            str(tmp_path / 'missing.conf')],
                           capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'missing.conf' in proc.stderr


def test_every_worker_counts_in_every_scrape(sqlite_db, tmp_path):
    """Two gunicorn workers: whichever answers a scrape, its counts are
    both workers' (prometheus_client's multi-process files)."""
    from prometheus_client import parser
    port = servers.free_port()
    metrics_dir = tmp_path / 'metrics'
    config = tmp_path / 'api.conf'
    config.write_text(
        '[DEFAULT]\nstate_path = %s\n[database]\nconnection = %s\n'
        '[api]\nport = %d\nworkers = 2\nauth_strategy = noauth\n'
        '[metrics]\nmultiprocess_dir = %s\n'
        % (tmp_path, sqlite_db, port, metrics_dir))
    script = os.path.join(os.path.dirname(sys.executable), 'cyborg-lite-api')
    env = dict(os.environ)
    env.pop('PROMETHEUS_MULTIPROC_DIR', None)
    proc = fork_server.popen([script, '--config-file', str(config)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env)
    try:
        servers.wait_for_port(port, timeout=60, proc=proc)
        base = 'http://127.0.0.1:%d' % port
        sent = 0
        # Bursts of concurrent requests until both workers answered some
        # (each keeps its values in a file of its own).
        while len(list(metrics_dir.glob('counter_*.db'))) < 2:
            assert sent < 2000, 'one worker answered everything'
            burst = [threading.Thread(target=_get,
                                      args=(base + '/v2/devices',))
                     for _ in range(16)]
            for thread in burst:
                thread.start()
            for thread in burst:
                thread.join()
            sent += len(burst)
        def counted():
            with urllib.request.urlopen(base + '/metrics', timeout=30) as r:
                text = r.read().decode()
            return [s.value for f in
                    parser.text_string_to_metric_families(text)
                    for s in f.samples
                    if s.name == 'cyborg_lite_api_requests_total' and
                    s.labels['route'] == '/v2/devices']
        # NOTE: a worker adds its requests up within FOLD_DELAY (a
        # second); from then on every scrape, whichever worker answers
        # it, has them all.
        waiting.read_until(counted, lambda c: c == [float(sent)],
                           what='both workers counted in one scrape')
        for _ in range(6):
            assert counted() == [float(sent)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        resp.read()
