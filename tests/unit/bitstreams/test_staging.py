"""Staging areas of uploads: the lock is the owner, and it dies with the
process that held it (a real second process, killed with SIGKILL)."""
import os
import signal
import subprocess
import sys

from cyborg_lite.bitstreams import staging as image_staging

KEY = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'
HOLDER = '''
import sys
from cyborg_lite.bitstreams import staging as image_staging
claim = image_staging.claim(sys.argv[1], sys.argv[2])
with open(claim.fresh_dir() + '/part', 'w') as f:
    f.write('half an image')
print('held', flush=True)
sys.stdin.read()
'''


def _holder(directory):
    proc = subprocess.Popen([sys.executable, '-c', HOLDER, str(directory),
                             KEY], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == 'held'
    return proc


def test_a_live_owner_in_another_process_keeps_it(tmp_path):
    proc = _holder(tmp_path)
    try:
        assert image_staging.claim(str(tmp_path), KEY) is None
        assert image_staging.leftover_keys(str(tmp_path)) == {KEY}
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_dies_with_a_killed_owner(tmp_path):
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # What the dead upload left is still there...
    staging = image_staging.staging_dir(str(tmp_path), KEY)
    assert os.listdir(staging) == ['part']
    # ...until the next owner, who gets the lock at once, clears it.
    claim = image_staging.claim(str(tmp_path), KEY)
    assert claim is not None
    assert os.listdir(claim.fresh_dir()) == []
    claim.release()
    assert os.listdir(tmp_path) == []


def test_two_claims_in_one_process_exclude_each_other(tmp_path):
    first = image_staging.claim(str(tmp_path), KEY)
    assert image_staging.claim(str(tmp_path), KEY) is None
    other = image_staging.claim(str(tmp_path), 'another')
    assert other is not None
    first.release()
    other.release()
    again = image_staging.claim(str(tmp_path), KEY)
    assert again is not None
    again.release()
    assert image_staging.leftover_keys(str(tmp_path)) == set()
