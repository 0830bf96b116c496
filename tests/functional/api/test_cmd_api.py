"""cyborg-lite-api serves the app under gunicorn."""
import json
import os
import signal
import subprocess
import sys
import urllib.request

from tests import servers
from tests.functional.api import test_http_server


def test_console_script_serves_the_api(sqlite_db, tmp_path):
    port = servers.free_port()
    config = tmp_path / 'api.conf'
    config.write_text('[DEFAULT]\nstate_path = %s\n[database]\n'
                      'connection = %s\n[api]\nport = %d\nworkers = 1\n'
                      'auth_strategy = noauth\n' % (tmp_path, sqlite_db,
                                                    port))
    script = os.path.join(os.path.dirname(sys.executable), 'cyborg-lite-api')
    proc = subprocess.Popen([script, '--config-file', str(config)],
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
    proc = subprocess.run([script, '--config-file',
                           str(tmp_path / 'missing.conf')],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert 'missing.conf' in proc.stderr
