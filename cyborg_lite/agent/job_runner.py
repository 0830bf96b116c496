"""Runs the programming jobs the conductor sends, one thread per job.

A region runs one job at a time (the database already refuses a second
active job per region; this also ignores a job sent twice, e.g. again by
a reaper while the first try still runs here). Each job goes through
agent/programming.run_job with the driver that reported its device, the
configured image fetcher, and reports and heartbeats to the conductor.
After a job, whatever its end, ``after_job(driver)`` lets the agent
report that driver's fresh scan, so the database follows the hardware.

Jobs received before ``open()`` are held back: the agent opens the runner
once the conductor knows it (re)started, so that announcement never
abandons a try this agent itself has just begun.

``stop(drain=True)`` waits for running jobs: a write to an FPGA must not
be torn off. ``stop(drain=False)`` is what a dying process leaves: the
threads are cut off from the conductor (their reports and heartbeats are
refused, as a dead agent's would never arrive) and the conductor's
restart handling or reaper decides the job's fate.
"""
import logging
import os
import threading

from cyborg_lite.agent import programming
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)


class JobRunner:

    def __init__(self, host, drivers, conductor, fetch_image, tmp_dir=None,
                 after_job=None):
        self.host = host
        self.drivers = {d.name: d for d in drivers}
        self.conductor = conductor
        self.fetch_image = fetch_image
        self.tmp_dir = tmp_dir
        self.after_job = after_job
        # (identity, region name) -> (job uuid, thread)
        self._running = {}
        self._lock = threading.Lock()
        self._open = False
        self._held = []
        self._closed = False
        self._cut = threading.Event()

    def open(self):
        """Start running jobs, first those held back until now."""
        with self._lock:
            self._open = True
            held, self._held = self._held, []
        for job in held:
            self.submit(job)

    def submit(self, job):
        """Start ``job`` in the background; False if it is not started."""
        key = (job['identity'], job['region_name'])
        with self._lock:
            if not self._open and not self._closed:
                self._held.append(job)
                return False
            if self._closed:
                LOG.info('Job %s not started: the agent is stopping',
                         job['uuid'])
                return False
            if key in self._running:
                LOG.info('Job %s not started: job %s runs on %s %s',
                         job['uuid'], self._running[key][0], *key)
                return False
            thread = threading.Thread(target=self._run, args=(key, job),
                                      name='job-%s' % job['uuid'],
                                      daemon=True)
            self._running[key] = (job['uuid'], thread)
            thread.start()
        return True

    def running(self):
        """{(identity, region name): job uuid} of the jobs running now."""
        with self._lock:
            return {key: value[0] for key, value in self._running.items()}

    def _run(self, key, job):
        try:
            driver = self.drivers.get(job.get('driver'))
            if not isinstance(driver, base.ProgrammingInterface):
                self._fail_unrunnable(job)
                return
            state, detail = programming.run_job(
                job, driver, self.fetch_image, self._report,
                heartbeat=self._heartbeat, tmp_dir=self._tmp_dir())
            LOG.info('Job %s on %s %s ended here: %s (%s)', job['uuid'],
                     key[0], key[1], state, detail)
            if self.after_job is not None and not self._cut.is_set():
                self.after_job(driver)
        except Exception:
            LOG.exception('Job %s: unexpected error in its runner',
                          job['uuid'])
        finally:
            with self._lock:
                self._running.pop(key, None)

    def _fail_unrunnable(self, job):
        error = ('no loaded driver named %r can program device %s on %s'
                 % (job.get('driver'), job['identity'], self.host))
        LOG.error('Job %s: %s', job['uuid'], error)
        try:
            self._report(job['uuid'], 'failed', error=error)
        except Exception:
            LOG.exception('could not report job %s as failed', job['uuid'])

    def _tmp_dir(self):
        if self.tmp_dir is not None:
            os.makedirs(self.tmp_dir, exist_ok=True)
        return self.tmp_dir

    def _report(self, job_uuid, state, error=None, **extra):
        if self._cut.is_set():
            raise exception.Conflict(reason='the agent stopped')
        self.conductor.job_progress(context.get_admin_context(), job_uuid,
                                    state, error=error, **extra)

    def _heartbeat(self, job_uuid):
        if self._cut.is_set():
            raise exception.Conflict(reason='the agent stopped')
        self.conductor.job_heartbeat(context.get_admin_context(), job_uuid,
                                     self.host)

    def stop(self, drain=True, timeout=None):
        """Stop taking jobs; wait for running ones or cut them off."""
        with self._lock:
            self._closed = True
            threads = [value[1] for value in self._running.values()]
            if not drain:
                self._cut.set()
        if drain:
            for thread in threads:
                thread.join(timeout)
