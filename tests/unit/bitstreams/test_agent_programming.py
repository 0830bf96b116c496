"""agent/programming.run_job with a recording driver and callbacks."""
import hashlib
import io
import os
import threading

import pytest

from cyborg_lite.agent import programming
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from tests import signing_keys as sk
from tests.unit.bitstreams import builders
from tests.unit.bitstreams.conftest import FUNCTION_ID
from tests.unit.bitstreams.conftest import REGION_TYPE

IMAGE = builders.build_gbs()


class RecordingDriver(base.Driver, base.DiscoveryInterface,
                      base.ProgrammingInterface):
    name = 'recording'

    def __init__(self, loaded=builders.AFU_UUID, fail=None):
        super().__init__(conf=None)
        self.loaded, self.fail, self.programmed = loaded, fail, []

    def discover(self):
        return []

    def program(self, identity, region_name, image_path):
        with open(image_path, 'rb') as f:
            self.programmed.append((identity, region_name, f.read()))
        if self.fail:
            raise exception.ProgrammingError(reason=self.fail)

    def loaded_function(self, identity, region_name):
        return self.loaded


class Reports:
    def __init__(self, refuse=None):
        self.calls, self.refuse = [], refuse

    def __call__(self, job_uuid, state, error=None, **extra):
        if state == self.refuse:
            raise exception.JobStateConflict(
                uuid=job_uuid, state='cancelled', action=state,
                expected='downloading')
        self.calls.append((state, error, extra))

    @property
    def states(self):
        return [c[0] for c in self.calls]


def _job(image=IMAGE, **bitstream):
    values = {'uuid': 'bs1', 'sha256': hashlib.sha256(image).hexdigest(),
              'size': len(image), 'format': 'gbs',
              'region_type': REGION_TYPE, 'function_id': FUNCTION_ID}
    values.update(bitstream)
    return {'uuid': 'job1', 'identity': '0000:5e:00.0',
            'region_name': 'region0', 'region_type': REGION_TYPE,
            'bitstream': values}


@pytest.fixture
def tmp_dir(tmp_path):
    path = tmp_path / 'agent'
    path.mkdir()
    yield str(path)
    # Whatever happened, no temp image survives.
    assert os.listdir(str(path)) == []


def _run(job, driver, image=IMAGE, reports=None, tmp_dir=None, **kw):
    reports = reports or Reports()
    result = programming.run_job(job, driver, lambda bs: io.BytesIO(image),
                                 reports, tmp_dir=tmp_dir, **kw)
    return result, reports


def test_success(tmp_dir):
    driver = RecordingDriver()
    result, reports = _run(_job(), driver, tmp_dir=tmp_dir)
    assert result == ('succeeded', FUNCTION_ID)
    assert reports.states == ['downloading', 'programming', 'verifying',
                              'succeeded']
    assert reports.calls[-1][2] == {'function_id': FUNCTION_ID}
    assert driver.programmed == [('0000:5e:00.0', 'region0', IMAGE)]


def test_checksum_mismatch_never_reaches_driver(tmp_dir):
    driver = RecordingDriver()
    tampered = IMAGE[:-1] + b'\x00'
    result, reports = _run(_job(), driver, image=tampered, tmp_dir=tmp_dir)
    assert result[0] == 'failed' and 'sha256 mismatch' in result[1]
    assert reports.states == ['downloading', 'failed']
    assert driver.programmed == []


def test_image_larger_than_recorded_size(tmp_dir):
    driver = RecordingDriver()
    result, _ = _run(_job(size=10), driver, tmp_dir=tmp_dir)
    assert result[0] == 'failed' and 'larger than the 10 bytes' in result[1]
    assert driver.programmed == []


def test_header_region_type_differs_from_target(tmp_dir):
    driver = RecordingDriver()
    job = _job()
    job['region_type'] = 'ab' * 16
    result, reports = _run(job, driver, tmp_dir=tmp_dir)
    assert result[0] == 'failed'
    assert 'region_type (target region region0)' in result[1]
    assert reports.states == ['downloading', 'failed']
    assert driver.programmed == []


def test_header_contradicts_bitstream_record(tmp_dir):
    driver = RecordingDriver()
    result, _ = _run(_job(function_id='cd' * 16), driver, tmp_dir=tmp_dir)
    assert result[0] == 'failed' and 'declared function_id' in result[1]
    assert driver.programmed == []


def test_raw_image_uses_recorded_region_type(tmp_dir):
    raw = b'raw PR bits'
    driver = RecordingDriver(loaded='ab' * 16)
    job = _job(image=raw, format='raw', function_id=None)
    result, _ = _run(job, driver, image=raw, tmp_dir=tmp_dir)
    assert result == ('succeeded', 'ab' * 16)
    assert driver.programmed[0][2] == raw


@pytest.mark.parametrize('raw', [False, True])
def test_a_region_reading_back_no_function_is_no_success(tmp_dir, raw):
    """A DFL port still in reset reads back no AFU: nothing vouches for
    the write, with or without a function the image declared."""
    image = b'raw PR bits' if raw else IMAGE
    job = _job(image=image, format='raw', function_id=None) if raw \
        else _job()
    result, reports = _run(job, RecordingDriver(loaded=None), image=image,
                           tmp_dir=tmp_dir)
    assert result[0] == 'failed'
    assert 'region region0 reports no function after programming' \
        in result[1]
    assert reports.states[-2:] == ['verifying', 'failed']


class SwapOnProgramming(Reports):
    """Someone with the agent's rights swaps every file they can reach
    under ``tmp_dir`` for another image once the checks are done (the
    'programming' report), and notes the modes of what is there."""

    def __init__(self, tmp_dir, other):
        super().__init__()
        self.tmp_dir, self.other, self.seen = tmp_dir, other, []

    def __call__(self, job_uuid, state, error=None, **extra):
        super().__call__(job_uuid, state, error, **extra)
        if state != 'programming':
            return
        for root, dirs, files in os.walk(self.tmp_dir):
            self.seen += [(name, os.stat(os.path.join(root, name)).st_mode
                           & 0o777) for name in dirs]
            for name in files:
                self.seen.append((name, 'file'))
                with open(os.path.join(root, name), 'wb') as f:
                    f.write(self.other)


def test_what_is_checked_is_what_is_written(tmp_dir):
    other = builders.build_gbs(builders.gbs_metadata(
        afu_uuid='5f0e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6'))
    reports = SwapOnProgramming(tmp_dir, other)
    driver = RecordingDriver()
    result, _ = _run(_job(), driver, reports=reports, tmp_dir=tmp_dir)
    assert result == ('succeeded', FUNCTION_ID)
    assert driver.programmed == [('0000:5e:00.0', 'region0', IMAGE)]
    # One directory of its own, 0700, and no file name in it to reach.
    [(name, mode)] = reports.seen
    assert name.startswith('job-') and mode == 0o700


def test_driver_failure_reported(tmp_dir):
    driver = RecordingDriver(fail='EIO from DFL_FPGA_FME_PORT_PR')
    result, reports = _run(_job(), driver, tmp_dir=tmp_dir)
    assert result == ('failed', 'Programming failed: EIO from '
                      'DFL_FPGA_FME_PORT_PR')
    assert reports.states == ['downloading', 'programming', 'failed']


def test_readback_mismatch_fails(tmp_dir):
    driver = RecordingDriver(loaded='11' * 16)
    result, reports = _run(_job(), driver, tmp_dir=tmp_dir)
    assert result[0] == 'failed'
    assert 'reports function %s' % ('11' * 16) in result[1]
    assert reports.states[-2:] == ['verifying', 'failed']


def test_cancelled_job_stops_before_hardware(tmp_dir):
    driver = RecordingDriver()
    result, reports = _run(_job(), driver, reports=Reports(
        refuse='programming'), tmp_dir=tmp_dir)
    assert result[0] == 'stopped' and 'is cancelled' in result[1]
    assert reports.states == ['downloading']
    assert driver.programmed == []


def test_fetch_error_reported(tmp_dir):
    def fetch(_bitstream):
        raise OSError('conductor unreachable')
    reports = Reports()
    result = programming.run_job(_job(), RecordingDriver(), fetch, reports,
                                 tmp_dir=tmp_dir)
    assert result == ('failed', 'OSError: conductor unreachable')


def test_heartbeats_while_programming(tmp_dir):
    beats = []
    release = threading.Event()

    class SlowDriver(RecordingDriver):
        def program(self, identity, region_name, image_path):
            # Wait until two heartbeats went out, or give up.
            release.wait(5)
            super().program(identity, region_name, image_path)

    def heartbeat(job_uuid):
        beats.append(job_uuid)
        if len(beats) >= 2:
            release.set()

    result, _ = _run(_job(), SlowDriver(), tmp_dir=tmp_dir,
                     heartbeat=heartbeat, heartbeat_interval=0.01)
    assert result[0] == 'succeeded'
    assert beats[:2] == ['job1', 'job1']


# --- the agent's signature check --------------------------------------------

def _signed_job(key, image=IMAGE, policy='enforce', **check):
    job = _job()
    values = {'policy': policy, 'status': 'verified',
              'signature': sk.sign(key, image), 'key_id': sk.key_id(key),
              'algorithm': 'ed25519', 'public_key': sk.public_pem(key)}
    values.update(check)
    job['signature'] = {k: v for k, v in values.items() if v is not None}
    return job


def test_a_signature_that_verifies_over_the_bytes_programs(tmp_dir):
    driver = RecordingDriver()
    result, _ = _run(_signed_job(sk.new_key()), driver, tmp_dir=tmp_dir)
    assert result == ('succeeded', FUNCTION_ID)
    assert driver.programmed == [('0000:5e:00.0', 'region0', IMAGE)]


@pytest.mark.parametrize('case,match', [
    ('bytes changed', 'does not verify over it'),
    ('signature of another image', 'does not verify over it'),
    ('no key sent', 'its signature is unsigned: the conductor sent no key'),
    ('unreadable signature', 'the signature sent cannot be checked'),
    ('unreadable key', 'the key sent cannot be read'),
    ('malformed check', 'is not an object'),
])
def test_under_enforce_the_agent_refuses_before_the_driver(tmp_dir, case,
                                                           match):
    key = sk.new_key()
    driver = RecordingDriver()
    image = IMAGE
    if case == 'bytes changed':
        job, image = _signed_job(key), IMAGE[:-1] + b'\x00'
    elif case == 'signature of another image':
        job = _signed_job(key, image=IMAGE + b'x')
    elif case == 'no key sent':
        job = _signed_job(key, status='unsigned', signature=None,
                          public_key=None, key_id=None, algorithm=None)
    elif case == 'unreadable signature':
        job = _signed_job(key, signature='@@')
    elif case == 'unreadable key':
        job = _signed_job(key, public_key='-----BEGIN PUBLIC KEY-----\n'
                          'AAAA\n-----END PUBLIC KEY-----\n')
    else:
        job = _signed_job(key)
        job['signature'] = ['enforce']
    result, reports = _run(job, driver, image=image, tmp_dir=tmp_dir)
    assert result[0] == 'failed'
    assert result[1].startswith('Signature check on the agent failed for '
                                'bitstream bs1: ')
    assert match in result[1]
    assert reports.states == ['downloading', 'failed']
    assert driver.programmed == []


def test_under_warn_a_bad_signature_is_logged_and_programmed(tmp_dir,
                                                             caplog):
    key = sk.new_key()
    driver = RecordingDriver()
    job = _signed_job(key, image=IMAGE + b'x', policy='warn')
    result, _ = _run(job, driver, tmp_dir=tmp_dir)
    assert result[0] == 'succeeded'
    assert 'does not verify over it' in caplog.text
    # Still never bytes that differ from the record.
    result, _ = _run(job, RecordingDriver(), image=IMAGE[:-1] + b'\0',
                     tmp_dir=tmp_dir)
    assert result[0] == 'failed' and 'sha256 mismatch' in result[1]


def test_a_restarted_agent_removes_the_job_directories_a_kill_left(
        tmp_path):
    tmp_dir = tmp_path / 'programming'
    (tmp_dir / 'job-left1').mkdir(parents=True, mode=0o700)
    (tmp_dir / 'not-ours').mkdir()
    programming.JobRunner('node1', [], conductor=None, fetch_image=None,
                          tmp_dir=str(tmp_dir))
    assert os.listdir(str(tmp_dir)) == ['not-ours']
