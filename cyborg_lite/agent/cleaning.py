"""Secure cleanup between tenants, agent side: run the driver's ``clean``.

The conductor sends one request per try (conductor/cleaning.agent_request:
the try's ``cleaning_uuid``, the deployable, the driver that reported its
device). ``CleaningRunner`` runs each in a thread of its own, as
agent/programming.JobRunner runs jobs:

1. it reports 'cleaning' (a heartbeat) before touching anything: a try
   that is no longer current - the conductor began another one since,
   e.g. at this agent's restart - is refused and dropped here;
2. it waits while a programming job's thread still works on the region
   (the database lets no job and clean overlap; this covers a job whose
   try was reaped while its thread still ran);
3. the driver's ``clean`` runs, blocking, with heartbeats every
   [cleaning]heartbeat_interval seconds; its end is reported as
   'available' or 'error' with the driver's reason. A driver without
   CleaningInterface has nothing to clean with: 'available'. A region
   its driver's scan does not list (its function handed to vfio-pci, or
   any other holder) is never touched: the agent reports its full scan,
   then 'error' with why; the conductor, which knows from that scan the
   region is out of view (it notes it: db/inventory.py), has it wait for
   its function (db/cleaning.py). A scan the conductor did not take
   sends no end: its reaper sends the try again.

A region runs one try at a time. A request for a region that is busy
waits as its next one (a newer request replaces an older waiting one), so
the try the conductor sent last always runs. Requests received before
``open()`` are held: the agent opens the runner once the conductor knows
it (re)started. ``stop(drain=False)`` leaves the threads as a killed
agent would: cut off from the conductor, which then resumes the clean.
"""
import contextlib
import logging
import threading
import time

from cyborg_lite.agent import gated_runner
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)


class _Stop(Exception):
    """The conductor refused a report: the try is no longer current."""


def _in_view(driver, request):
    """Whether the driver's scan lists the request's region now (True
    when it cannot tell: its own clean then decides)."""
    if not isinstance(driver, base.DiscoveryInterface):
        return True
    try:
        records = driver.discover()
    except Exception as exc:
        LOG.warning('Driver %s could not scan before cleaning (%s)',
                    driver.name, exception.error_text(exc))
        return True
    return any(record.identity == request['identity'] and
               any(dep.name == request['deployable_name']
                   for dep in record.deployables)
               for record in records)


class CleaningRunner(gated_runner.GatedRunner):

    def __init__(self, host, drivers, conductor, heartbeat_interval,
                 region_busy=None, after_clean=None, busy_poll=0.5):
        super().__init__()
        self.host = host
        self.drivers = {d.name: d for d in drivers}
        self.conductor = conductor
        self.heartbeat_interval = heartbeat_interval
        # region_busy((identity, name)): a programming job works on it.
        self.region_busy = region_busy or (lambda key: False)
        # after_clean(driver, full=False): the agent reports the
        # driver's fresh scan (a scrub image changes what the region
        # runs); ``full``: every driver's, changed or not; the ack, or
        # None when the conductor did not take it.
        self.after_clean = after_clean
        self.busy_poll = busy_poll
        # (identity, deployable name) -> uuid of the try running on it,
        # and the request waiting for it.
        self._running = {}
        self._next = {}

    @staticmethod
    def _key(request):
        return request['identity'], request['deployable_name']

    def submit(self, request):
        """Run ``request`` in the background, now or after the try running
        on its region; False if it is dropped."""
        key = self._key(request)
        with self._lock:
            gate = self._gate(request,
                              'Cleaning try %s' % request['cleaning_uuid'])
            if gate != gated_runner.RUN:
                return gate == gated_runner.HELD
            running = self._running.get(key)
            if running == request['cleaning_uuid']:
                return False   # the same try sent twice
            if running is not None:
                self._next[key] = request
                return True
            self._start(key, request)
        return True

    def _start(self, key, request):
        # NOTE: called with the lock held.
        self._running[key] = request['cleaning_uuid']
        self._start_thread(self._run, (key, request),
                           'clean-%s' % request['cleaning_uuid'])

    def running(self):
        """{(identity, deployable name): try uuid} running now."""
        with self._lock:
            return dict(self._running)

    def idle(self):
        with self._lock:
            return not self._busy() and not self._next

    def _run(self, key, request):
        try:
            self._clean(request)
        except Exception:
            LOG.exception('Cleaning try %s: unexpected error in its runner',
                          request['cleaning_uuid'])
        finally:
            with self._lock:
                del self._running[key]
                waiting = self._next.pop(key, None)
                if waiting is not None and not self._closed:
                    self._start(key, waiting)

    def _clean(self, request):
        try_uuid = request['cleaning_uuid']
        where = '%s %s' % self._key(request)
        try:
            self._report(request, 'cleaning')
            while self.region_busy(self._key(request)):
                LOG.info('Cleaning try %s waits for the programming job on '
                         '%s', try_uuid, where)
                self._wait_beating(request)
        except _Stop as exc:
            LOG.info('Cleaning try %s of %s dropped: %s', try_uuid, where,
                     exc)
            return
        except Exception as exc:
            # NOTE: nothing touched yet; unheard, the try is sent again
            # by the conductor's reaper.
            LOG.warning('Cleaning try %s of %s not started: the conductor '
                        'did not take its start (%s)', try_uuid, where,
                        exception.error_text(exc))
            return
        driver = self.drivers.get(request.get('driver'))
        if driver is None:
            self._end(request, 'no loaded driver named %r can clean device '
                      '%s on %s' % (request.get('driver'),
                                    request['identity'], self.host))
            return
        if not isinstance(driver, base.CleaningInterface):
            LOG.info('Driver %s cleans nothing; %s is available', driver.name,
                     where)
            self._end(request)
            return
        if not _in_view(driver, request):
            self._out_of_view(driver, request)
            return
        LOG.info('Cleaning %s (try %s)', where, try_uuid)
        try:
            with self._heartbeats(request):
                self._clean_once_free(driver, request)
        except _Stop as exc:
            # NOTE: not wiped, not ended: the conductor's reaper sends the
            # clean again once this try's heartbeats stop.
            LOG.info('Cleaning try %s of %s dropped: %s', try_uuid, where,
                     exc)
            return
        except Exception as exc:
            error = exception.error_text(exc)
            LOG.error('Cleaning %s failed: %s', where, error)
            self._end(request, error)
        else:
            self._end(request)
        if self.after_clean is not None and not self._cut.is_set():
            self.after_clean(driver)

    def _clean_once_free(self, driver, request):
        """The driver's clean, tried again every ``busy_poll`` seconds
        while a guest still has what it removes open (InstanceBusy: a
        vGPU's VF); the try beats meanwhile and is never ended as wiped
        before it is."""
        while True:
            try:
                return driver.clean(request['identity'],
                                    request['deployable_name'])
            except exception.InstanceBusy as exc:
                LOG.info('Cleaning try %s waits: %s',
                         request['cleaning_uuid'], exc)
                if self._cut.wait(self.busy_poll):
                    raise _Stop('the agent stopped')

    def _out_of_view(self, driver, request):
        """The region is not in its driver's scan: its function is with
        another holder (vfio-pci for a guest). Nothing is touched; the
        full scan is reported first (unchanged since the conductor took
        the last, a diff would send nothing), so that the conductor
        knows it is out of view when the try's end says it did not run
        (it then waits)."""
        why = ('%s %s is not in the scan of driver %s on %s: its function '
               'is with another driver (e.g. vfio-pci); not touched'
               % (request['identity'], request['deployable_name'],
                  driver.name, self.host))
        LOG.warning('Cleaning try %s: %s', request['cleaning_uuid'], why)
        if self.after_clean is not None and not self._cut.is_set() and \
                not self.after_clean(driver, full=True):
            # Ended now, the conductor would take it for a failed wipe.
            LOG.warning('Cleaning try %s: the conductor did not take the '
                        'scan; the try is left to its reaper',
                        request['cleaning_uuid'])
            return
        self._end(request, why)

    def _wait_beating(self, request):
        deadline = time.monotonic() + self.heartbeat_interval
        while time.monotonic() < deadline and \
                self.region_busy(self._key(request)):
            if self._cut.wait(self.busy_poll):
                raise _Stop('the agent stopped')
        self._report(request, 'cleaning')

    @contextlib.contextmanager
    def _heartbeats(self, request):
        stop = threading.Event()

        def beat():
            while not stop.wait(self.heartbeat_interval):
                try:
                    self._report(request, 'cleaning')
                except _Stop:
                    # NOTE: the driver cannot be torn off half way; its
                    # end will be refused the same way.
                    return
                except Exception:
                    LOG.warning('heartbeat of cleaning try %s failed',
                                request['cleaning_uuid'], exc_info=True)

        thread = threading.Thread(target=beat, daemon=True,
                                  name='beat-%s' % request['cleaning_uuid'])
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _end(self, request, error=None):
        state = 'error' if error is not None else 'available'
        try:
            self._report(request, state, error=error, through_outage=True)
        except _Stop as exc:
            LOG.info('End of cleaning try %s refused: %s',
                     request['cleaning_uuid'], exc)
        except Exception:
            # The conductor's reaper starts the clean over if this is lost.
            LOG.exception('Could not report the end of cleaning try %s',
                          request['cleaning_uuid'])

    def _report(self, request, state, error=None, through_outage=False):
        """``through_outage``: sent again while the conductor's database
        is down (a clean's end: lost, the reaper would start the whole
        clean over), for up to [cleaning]heartbeat_timeout."""
        if self._cut.is_set():
            raise _Stop('the agent stopped')

        def send():
            self.conductor.cleaning_progress(
                context.get_admin_context(), request['deployable_uuid'],
                request['cleaning_uuid'], state, error=error)
        try:
            if not through_outage:
                return send()
            return self._through_outage(
                send, 'Report %r of cleaning try %s'
                % (state, request['cleaning_uuid']),
                self.heartbeat_interval, CONF.cleaning.heartbeat_timeout)
        except (exception.Conflict, exception.NotFound) as exc:
            raise _Stop(str(exc))

    def _on_stop(self):
        self._next.clear()
