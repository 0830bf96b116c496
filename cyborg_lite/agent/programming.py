"""Programming jobs, agent side: fetch, verify, program, read back.

``run_job`` gets everything injected (the job as a plain dict from the
conductor, the driver, a way to fetch the image, a way to report), so it
knows nothing of RPC. The image is checked twice before the driver sees
it - its sha256, then its header against the bitstream and the target
region - because the hardware may not stop a bad image.
"""
import contextlib
import logging
import os
import tempfile
import threading

from cyborg_lite.common import bitstream_formats as formats
from cyborg_lite.common import exception
from cyborg_lite.common import image_store
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)
_CHUNK = 1024 * 1024


class _Stop(Exception):
    """The conductor refused a report: the job was cancelled or reaped."""


def _report(report_progress, job_uuid, state, error=None, **extra):
    try:
        report_progress(job_uuid, state, error=error, **extra)
    except exception.Conflict as exc:
        raise _Stop(str(exc))


def _fetch_verified(job, fetch_image, tmp_dir):
    """Download into a temp file; return its path once its sha256 matches."""
    bitstream = job['bitstream']
    fd, path = tempfile.mkstemp(dir=tmp_dir, prefix='bitstream-')
    try:
        with os.fdopen(fd, 'wb') as out:
            limit = bitstream.get('size') or float('inf')
            try:
                sha256, _size = image_store.copy_hashed(
                    fetch_image(bitstream), out, limit, _CHUNK)
            except exception.ImageTooLarge:
                raise exception.ProgrammingError(
                    reason='the image is larger than the %s bytes recorded'
                    % limit)
        if sha256 != bitstream['sha256']:
            raise exception.ChecksumMismatch(declared=bitstream['sha256'],
                                             actual=sha256)
    except BaseException:
        os.unlink(path)
        raise
    return path


def _check_header(job, path):
    """The header must agree with the bitstream and fit the region."""
    bitstream = job['bitstream']
    header = formats.parse(path)
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
    path = _fetch_verified(job, fetch_image, tmp_dir)
    try:
        filled = _check_header(job, path)
        _report(report_progress, job['uuid'], 'programming')
        driver.program(job['identity'], job['region_name'], path)
    finally:
        os.unlink(path)
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
    stops the job where it is ('stopped'). The temp file never survives.
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
        error = _error_text(exc)
        LOG.error('job %s failed: %s', job['uuid'], error)
        try:
            report_progress(job['uuid'], 'failed', error=error)
        except Exception:
            # The conductor's reaper fails the job if this report is lost.
            LOG.exception('could not report job %s as failed', job['uuid'])
        return 'failed', error


def _error_text(exc):
    if isinstance(exc, exception.CyborgLiteException):
        return exc.format_message()
    return '%s: %s' % (type(exc).__name__, exc)
