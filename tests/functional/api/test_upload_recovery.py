"""An upload whose process died (kill -9) leaves its bitstream ``saving``
and its staging area: the next PUT or DELETE of it, or any API process
starting, clears them; a live upload is never taken over.

The first tests hold or abandon a staging area in this process; the last
one kills a real ``cyborg-lite-api`` (gunicorn) mid-upload."""
import os
import signal
import socket
import subprocess
import sys

import requests

from cyborg_lite.api.handlers import bitstream_file
from cyborg_lite.bitstreams import staging as image_staging
from cyborg_lite.db import bitstreams as bitstreams_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of
from tests.unit.bitstreams import builders
from tests import fork_server
from tests import servers
from tests import waiting


def _abandoned(app, store_dir):
    """A bitstream as a killed upload leaves it: 'saving', a half-written
    file in its staging directory, the lock file there but not held."""
    uuid = bh.create(app, MEMBER_A).json['uuid']
    claim = image_staging.claim(store_dir, uuid)
    bitstreams_db.begin_upload(uuid)
    with open(os.path.join(claim.fresh_dir(), '.upload-x'), 'wb') as f:
        f.write(b'half an image')
    # Unlocked as a dying process's lock is, files left where they were.
    os.close(claim._fd)
    image_staging._held.discard((store_dir, uuid))
    assert image_staging.leftover_keys(store_dir) == {uuid}
    return uuid


def _status(app, uuid):
    return app.get('/v2/bitstreams/' + uuid,
                   headers=bh.h(MEMBER_A)).json['status']


def test_put_takes_over_an_abandoned_upload(app, conf):
    store_dir = conf.bitstreams.store_dir
    uuid = _abandoned(app, store_dir)
    assert _status(app, uuid) == 'saving'
    data = builders.build_gbs()
    bh.upload(app, MEMBER_A, uuid, data)
    assert _status(app, uuid) == 'active'
    assert bh.stored_files(store_dir) == [os.path.join(
        store_dir, bh.sha256(data)[:2], bh.sha256(data))]


def test_delete_removes_what_an_abandoned_upload_left(app, conf):
    store_dir = conf.bitstreams.store_dir
    uuid = _abandoned(app, store_dir)
    app.delete('/v2/bitstreams/' + uuid, headers=bh.h(MEMBER_A), status=204)
    assert os.listdir(store_dir) == []


def test_start_up_recovery_queues_abandoned_uploads_again(app, conf):
    store_dir = conf.bitstreams.store_dir
    uuid = _abandoned(app, store_dir)
    # A staging area whose bitstream is gone (deleted by an older
    # version while its upload ran) goes too.
    os.makedirs(image_staging.staging_dir(store_dir, 'gone'))
    assert bitstream_file.recover_abandoned_uploads() == [uuid]
    assert _status(app, uuid) == 'queued'
    assert os.listdir(store_dir) == []
    assert bitstream_file.recover_abandoned_uploads() == []


def test_a_live_upload_is_left_alone(app, conf):
    store_dir = conf.bitstreams.store_dir
    uuid = bh.create(app, MEMBER_A).json['uuid']
    claim = image_staging.claim(store_dir, uuid)
    bitstreams_db.begin_upload(uuid)
    try:
        resp = bh.upload(app, MEMBER_A, uuid, builders.build_gbs(),
                         status=409)
        assert 'in progress' in error_of(resp)
        resp = app.delete('/v2/bitstreams/' + uuid, headers=bh.h(MEMBER_A),
                          status=409)
        assert 'in progress' in error_of(resp)
        assert bitstream_file.recover_abandoned_uploads() == []
        assert _status(app, uuid) == 'saving'
    finally:
        claim.release()


# --- a real API process, killed mid-upload --------------------------------

class ApiProcess:
    """cyborg-lite-api (gunicorn, one worker) in its own process group."""

    def __init__(self, tmp_path, db_url):
        self.port = servers.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.store_dir = str(tmp_path / 'store')
        self.config = tmp_path / 'api.conf'
        self.config.write_text(
            '[DEFAULT]\nstate_path = %s\n[database]\nconnection = %s\n'
            '[api]\nport = %d\nworkers = 1\nauth_strategy = noauth\n'
            '[bitstreams]\nstore_dir = %s\nchunk_size = 4096\n'
            % (tmp_path, db_url, self.port, self.store_dir))
        self.log = open(tmp_path / 'api.log', 'ab')
        self.proc = None

    def start(self):
        script = os.path.join(os.path.dirname(sys.executable),
                              'cyborg-lite-api')
        self.proc = fork_server.popen(
            [script, '--config-file', str(self.config)], stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        servers.wait_for_port(self.port, timeout=60, proc=self.proc)
        return self

    def signal(self, signum):
        os.killpg(self.proc.pid, signum)
        returncode = self.proc.wait(timeout=30)
        # NOTE: the worker may outlive the master for a moment, still
        # listening; a restart probed through its socket would be reset.
        servers.wait_for_port_closed(self.port)
        return returncode

    def bitstream(self, uuid):
        return requests.get('%s/v2/bitstreams/%s' % (self.url, uuid),
                            headers=bh.h(MEMBER_A), timeout=30).json()


def _begin_chunked_upload(api, uuid, first_part):
    """Send the request head and one chunk, then nothing more: an upload
    in progress. Returns the open socket."""
    sock = socket.create_connection(('127.0.0.1', api.port), timeout=30)
    head = ['PUT /v2/bitstreams/%s/file HTTP/1.1' % uuid, 'Host: x',
            'Content-Type: application/octet-stream',
            'Transfer-Encoding: chunked']
    head += ['%s: %s' % item for item in bh.h(MEMBER_A).items()]
    sock.sendall(('\r\n'.join(head) + '\r\n\r\n').encode('latin-1'))
    sock.sendall(b'%x\r\n%s\r\n' % (len(first_part), first_part))
    return sock


def test_kill_9_mid_upload_then_restart(tmp_path, sqlite_db):
    api = ApiProcess(tmp_path, sqlite_db).start()
    data = builders.build_gbs(payload=bytes(64 * 1024))
    try:
        uuid = requests.post(api.url + '/v2/bitstreams',
                             json=bh.metadata(), headers=bh.h(MEMBER_A),
                             timeout=30).json()['uuid']
        sock = _begin_chunked_upload(api, uuid, data[:16 * 1024])
        staging = image_staging.staging_dir(api.store_dir, uuid)
        assert waiting.until(lambda: api.bitstream(uuid)['status'] ==
                             'saving' and os.listdir(staging), timeout=30)
        assert api.signal(signal.SIGKILL) == -signal.SIGKILL
        sock.close()
        # Dead mid-upload: still 'saving', the partial file still there.
        assert bitstreams_db.get(uuid).status == 'saving'
        assert os.listdir(staging)

        api.start()
        assert api.bitstream(uuid)['status'] == 'queued'
        assert image_staging.leftover_keys(api.store_dir) == set()
        resp = requests.put(
            '%s/v2/bitstreams/%s/file' % (api.url, uuid), data=data,
            headers=bh.h(MEMBER_A, **{'Content-Type': bh.OCTETS}),
            timeout=60)
        assert resp.status_code == 204, resp.text
        assert api.bitstream(uuid)['status'] == 'active'
        assert bh.stored_files(api.store_dir) == [os.path.join(
            api.store_dir, bh.sha256(data)[:2], bh.sha256(data))]
    finally:
        if api.proc.poll() is None:
            api.signal(signal.SIGTERM)
        api.log.close()
        # What the API said is the first thing to read when this fails.
        print((tmp_path / 'api.log').read_text(errors='replace')[-4000:])
