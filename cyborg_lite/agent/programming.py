"""Programming jobs, agent side: fetch, verify, program, read back.

``run_job`` runs one job and gets everything injected (the job as a plain
dict from the conductor, the driver, a way to fetch the image, a way to
report), so it knows nothing of RPC. The image is checked before the
driver sees it - its signature (when the job carries one: the conductor's
``[bitstreams]signature_policy`` is not ``disabled``) and its sha256, both
over the digest of the bytes fetched, then its header against the
bitstream and the target region - because the hardware may not stop a
bad image. The image is fetched into a file of the agent's own, in a
directory of its own (mode 0700), whose name is removed at once: the
checks read that open file and the driver is given a path to the same
open file (``/proc/<pid>/fd/<n>``), so what was hashed and checked is
what is written. A region that reads back no function after the write
fails the job: nothing vouches for what it holds.

``JobRunner`` runs the jobs the conductor sends, one thread per job, with
the driver that reported the job's device, reporting and beating to the
conductor. A region runs one job at a time (the database already refuses
a second active job per region; this also ignores a job sent twice, e.g.
again by a reaper while the first try still runs here). A job's region is
free again as soon as the job's work on the hardware is over, before its
final report: the conductor may accept a next job on the region the
moment that report lands, and its cast must find the region free. Reports
and heartbeats carry the job's try number (``job['try']``): the conductor
refuses those of a try it has since abandoned, and that try stops. After a
job, whatever its end, ``after_job(driver)`` lets the agent report that
driver's fresh scan, so the database follows the hardware.

Jobs received before ``open()`` are held back: the agent opens the runner
once the conductor knows it (re)started, so that announcement never
abandons a try this agent itself has just begun.

``stop(drain=True)`` waits for running jobs: a write to an FPGA must not
be torn off. ``stop(drain=False)`` is what a dying process leaves: the
threads are cut off from the conductor (their reports and heartbeats are
refused, as a dead agent's would never arrive) and the conductor's
restart handling or reaper decides the job's fate.
"""
import contextlib
import logging
import os
import tempfile
import threading

import oslo_messaging as messaging

from cyborg_lite.agent import gated_runner
from cyborg_lite.bitstreams import formats
from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conf import CONF
from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)
_CHUNK = 1024 * 1024
_JOB_DIR_PREFIX = 'job-'


class _Stop(Exception):
    """The conductor refused a report: the job was cancelled or reaped."""


def _report(report_progress, job_uuid, state, error=None, **extra):
    try:
        report_progress(job_uuid, state, error=error, **extra)
    except exception.Conflict as exc:
        raise _Stop(str(exc))


@contextlib.contextmanager
def _private_image(tmp_dir):
    """An empty file only this process can reach, open for reading and
    writing: made in a directory of its own (mode 0700) under
    ``tmp_dir`` and its name removed at once, so no one can replace or
    rewrite it between its checks and the write to the device. Yields
    (the open file, the path that names that open file: what the driver
    is given, through /proc, and opens again as the same file)."""
    directory = tempfile.mkdtemp(dir=tmp_dir, prefix=_JOB_DIR_PREFIX)
    try:
        fd, path = tempfile.mkstemp(dir=directory, prefix='bitstream-')
        os.unlink(path)
        with os.fdopen(fd, 'w+b') as image:
            yield image, '/proc/%d/fd/%d' % (os.getpid(), fd)
    finally:
        os.rmdir(directory)


def _remove_left_job_dirs(tmp_dir):
    """The job directories an agent killed outright left (empty: a job's
    image has no name); run before any job of this agent starts."""
    if tmp_dir is None or not os.path.isdir(tmp_dir):
        return
    for name in os.listdir(tmp_dir):
        if name.startswith(_JOB_DIR_PREFIX):
            try:
                os.rmdir(os.path.join(tmp_dir, name))
            except OSError as exc:
                LOG.warning('Left job directory %s not removed: %s',
                            name, exc)


def _fetch_verified(job, fetch_image, image):
    """Download into the open file ``image``, hashing it; returns once
    its signature and sha256 vouch for what it holds."""
    bitstream = job['bitstream']
    limit = bitstream.get('size') or float('inf')
    try:
        sha256, _size = image_store.copy_hashed(
            fetch_image(bitstream), image, limit, _CHUNK)
    except exception.ImageTooLarge:
        raise exception.ProgrammingError(
            reason='the image is larger than the %s bytes recorded' % limit)
    image.flush()
    check_signature(job, sha256)
    if sha256 != bitstream['sha256']:
        raise exception.ChecksumMismatch(declared=bitstream['sha256'],
                                         actual=sha256)


def _signature_problem(check, sha256):
    """Why the job's signature does not vouch for the digest ``sha256``
    of the bytes fetched; None when it does."""
    if 'public_key' not in check:
        return ('its signature is %s: the conductor sent no key that '
                'verifies it' % check.get('status'))
    try:
        raw = signatures.decode_signature(check.get('signature'))
        good = signatures.verify(check['public_key'], raw, sha256)
    except exception.CyborgLiteException as exc:
        return 'the signature sent cannot be checked: %s' % exc
    except Exception as exc:  # any unusable key fails the check
        return 'the key sent cannot be read: %s' % exception.error_text(exc)
    if not good:
        return ('the image fetched hashes to %s and the signature of key '
                '%s does not verify over it' % (sha256, check.get('key_id')))
    return None


def check_signature(job, sha256):
    """The agent's own signature check, over the digest of the bytes it
    is about to write: under ``enforce`` a problem fails the job
    (SignatureCheckFailed), under ``warn`` it is logged."""
    check = job.get('signature')
    if check is not None and not isinstance(check, dict):
        # Fail closed: which policy it carried cannot be told.
        raise exception.SignatureCheckFailed(
            uuid=job['bitstream'].get('uuid'),
            reason='the job\'s signature check is not an object: %r'
                   % (check,))
    enforce = bool(check) and check.get('policy') == signatures.ENFORCE
    if not check or ('public_key' not in check and not enforce):
        return      # nothing to check (the conductor logged why)
    problem = _signature_problem(check, sha256)
    if problem is None:
        return
    if enforce:
        raise exception.SignatureCheckFailed(uuid=job['bitstream']['uuid'],
                                             reason=problem)
    LOG.warning('Job %s: bitstream %s is written although %s (signature '
                'policy warn)', job['uuid'], job['bitstream']['uuid'],
                problem)


def _check_header(job, image):
    """The header of the open file ``image`` must agree with the
    bitstream and fit the region."""
    bitstream = job['bitstream']
    header = formats.parse(image)
    filled = formats.cross_check(header, {
        'format': bitstream.get('format'),
        'region_type': bitstream.get('region_type'),
        'function_id': bitstream.get('function_id')})
    target = formats.normalise_id(job.get('region_type'), 'region_type')
    if filled['region_type'] is None or filled['region_type'] != target:
        raise exception.BitstreamHeaderMismatch(
            field='region_type (target region %s)' % job['region_name'],
            header=filled['region_type'], declared=target)
    return filled


def _verify(job, driver, expected):
    loaded = formats.normalise_id(
        driver.loaded_function(job['identity'], job['region_name']),
        'loaded function id')
    if loaded is None:
        # NOTE: nothing vouches for the write then (a DFL port still in
        # reset reads back none), whatever the image declared.
        raise exception.ProgrammingError(
            reason='region %s reports no function after programming%s'
            % (job['region_name'], ', expected %s' % expected
               if expected else ''))
    if expected is not None and loaded != expected:
        raise exception.ProgrammingError(
            reason='region %s reports function %s after programming, '
                   'expected %s' % (job['region_name'], loaded, expected))
    return loaded


@contextlib.contextmanager
def _heartbeats(job_uuid, heartbeat, interval):
    """Call ``heartbeat(job_uuid)`` every ``interval`` s inside the block."""
    if heartbeat is None:
        yield
        return
    stop = threading.Event()

    def beat():
        while not stop.wait(interval):
            try:
                heartbeat(job_uuid)
            except Exception:  # a lost beat must not kill the job
                LOG.warning('heartbeat of job %s failed', job_uuid,
                            exc_info=True)

    thread = threading.Thread(target=beat, daemon=True,
                              name='heartbeat-%s' % job_uuid)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _steps(job, driver, fetch_image, report_progress, tmp_dir):
    _report(report_progress, job['uuid'], 'downloading')
    with _private_image(tmp_dir) as (image, path):
        _fetch_verified(job, fetch_image, image)
        filled = _check_header(job, image)
        _report(report_progress, job['uuid'], 'programming')
        driver.program(job['identity'], job['region_name'], path)
    _report(report_progress, job['uuid'], 'verifying')
    loaded = _verify(job, driver, filled['function_id'])
    _report(report_progress, job['uuid'], 'succeeded', function_id=loaded)
    return loaded


def run_job(job, driver, fetch_image, report_progress, heartbeat=None,
            heartbeat_interval=None, tmp_dir=None):
    """Run one programming job; return ('succeeded'|'failed'|'stopped', text).

    ``fetch_image(bitstream_dict)`` returns a binary file object or an
    iterable of bytes; ``report_progress(job_uuid, state, error=None,
    **extra)`` tells the conductor. Any error is reported as 'failed' with
    its text; a report the conductor refuses (job cancelled or reaped)
    stops the job where it is ('stopped'). The image never survives the
    job: it has no name, and its directory is removed (one a killed agent
    left, when the next JobRunner is made).
    ``heartbeat(job_uuid)``, if given, is called every
    ``heartbeat_interval`` s ([programming]heartbeat_interval by default).
    """
    interval = heartbeat_interval or CONF.programming.heartbeat_interval
    try:
        with _heartbeats(job['uuid'], heartbeat, interval):
            loaded = _steps(job, driver, fetch_image, report_progress,
                            tmp_dir)
        return 'succeeded', loaded
    except _Stop as exc:
        LOG.warning('job %s stopped: %s', job['uuid'], exc)
        return 'stopped', str(exc)
    except Exception as exc:
        error = exception.error_text(exc)
        LOG.error('job %s failed: %s', job['uuid'], error)
        try:
            report_progress(job['uuid'], 'failed', error=error)
        except Exception:
            # The conductor's reaper fails the job if this report is lost.
            LOG.exception('could not report job %s as failed', job['uuid'])
        return 'failed', error


class JobRunner(gated_runner.GatedRunner):
    # A call taken by a conductor that died before answering times out;
    # the same report sent again reaches a live one, which takes it even
    # if the dead one had applied it (conductor/programming.record_progress).
    REPORT_TRIES = 3

    def __init__(self, host, drivers, conductor, fetch_image, tmp_dir=None,
                 after_job=None):
        super().__init__()
        self.host = host
        self.drivers = {d.name: d for d in drivers}
        self.conductor = conductor
        self.fetch_image = fetch_image
        self.tmp_dir = tmp_dir
        self.after_job = after_job
        # (identity, region name) -> uuid of the job working on it.
        self._regions = {}
        _remove_left_job_dirs(tmp_dir)

    def submit(self, job):
        """Start ``job`` in the background; False if it is not started."""
        key = (job['identity'], job['region_name'])
        with self._lock:
            if self._gate(job, 'Job %s' % job['uuid']) != gated_runner.RUN:
                return False
            if key in self._regions:
                LOG.info('Job %s not started: job %s runs on %s %s',
                         job['uuid'], self._regions[key], *key)
                return False
            self._regions[key] = job['uuid']
            self._start_thread(self._run, (key, job), 'job-%s' % job['uuid'])
        return True

    def running(self):
        """{(identity, region name): job uuid} of the jobs working on a
        region now."""
        with self._lock:
            return dict(self._regions)

    def idle(self):
        """True when no job thread is alive (a job's thread outlives its
        region's use by its final report and after_job)."""
        with self._lock:
            return not self._busy()

    def _free_region(self, job_uuid):
        with self._lock:
            for key, holder in list(self._regions.items()):
                if holder == job_uuid:
                    del self._regions[key]

    def _run(self, key, job):
        try:
            driver = self.drivers.get(job.get('driver'))
            if not isinstance(driver, base.ProgrammingInterface):
                self._fail_unrunnable(job)
                return
            try_number = job.get('try')

            def report(job_uuid, state, error=None, **extra):
                self._report(job_uuid, state, error=error,
                             try_number=try_number, **extra)
            state, detail = run_job(
                job, driver, self.fetch_image, report,
                heartbeat=lambda job_uuid: self._heartbeat(job_uuid,
                                                           try_number),
                tmp_dir=self._tmp_dir())
            LOG.info('Job %s on %s %s ended here: %s (%s)', job['uuid'],
                     key[0], key[1], state, detail)
            if self.after_job is not None and not self._cut.is_set():
                self.after_job(driver)
        except Exception:
            LOG.exception('Job %s: unexpected error in its runner',
                          job['uuid'])
        finally:
            self._free_region(job['uuid'])

    def _fail_unrunnable(self, job):
        error = ('no loaded driver named %r can program device %s on %s'
                 % (job.get('driver'), job['identity'], self.host))
        LOG.error('Job %s: %s', job['uuid'], error)
        try:
            self._report(job['uuid'], 'failed', error=error,
                         try_number=job.get('try'))
        except Exception:
            LOG.exception('could not report job %s as failed', job['uuid'])

    def _tmp_dir(self):
        if self.tmp_dir is not None:
            os.makedirs(self.tmp_dir, exist_ok=True)
        return self.tmp_dir

    def _report(self, job_uuid, state, error=None, try_number=None,
                **extra):
        if try_number is not None:
            extra['try_number'] = try_number
        if state in states.JOB_TERMINAL:
            # NOTE: the work on the hardware is over. Freed before the
            # report: once it lands, the conductor may send the region's
            # next job at once, and that one must not be turned away.
            self._free_region(job_uuid)

        def send():
            return self.conductor.job_progress(
                context.get_admin_context(), job_uuid, state, error=error,
                **extra)

        # NOTE: past the heartbeat timeout of an outage, the reaper
        # decides (once the database is back).
        what = 'Report %r of job %s' % (state, job_uuid)
        for attempt in range(1, self.REPORT_TRIES + 1):
            try:
                return self._through_outage(
                    send, what, CONF.programming.heartbeat_interval,
                    CONF.programming.heartbeat_timeout)
            except messaging.MessagingTimeout:
                if attempt == self.REPORT_TRIES:
                    raise
                LOG.warning('%s got no answer; sending it again', what)

    def _heartbeat(self, job_uuid, try_number=None):
        if self._cut.is_set():
            raise exception.Conflict(reason='the agent stopped')
        self.conductor.job_heartbeat(context.get_admin_context(), job_uuid,
                                     self.host, try_number=try_number)
