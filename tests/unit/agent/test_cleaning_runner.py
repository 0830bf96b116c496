"""agent/cleaning.CleaningRunner against the real conductor manager (no
transport) and a database; the driver is the hardware edge, scripted."""
import threading

import pytest

from cyborg_lite.common import exception
from cyborg_lite.agent import cleaning as agent_cleaning
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import cleaning
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import report
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import base
from tests import waiting
from tests.unit.conductor import bind_helpers as h
from tests.unit.conductor.test_cleaning_flow import RecordingAgents
from tests.unit.conductor.test_programming_flow_agent import (
    ConductorWithoutDatabase)
from tests.unit.conductor.test_programming_flow_agent import DirectConductor


class CleaningDriver(base.Driver, base.CleaningInterface):
    """Cleans when the test says go; fails when told to."""

    def __init__(self, name='fake', error=None):
        super().__init__(None)
        self.name = name
        self.error = error
        self.go = threading.Event()
        self.go.set()
        self.cleaned = []

    def clean(self, identity, deployable_name):
        assert self.go.wait(30)
        if self.error:
            raise exception.CleaningError(reason=self.error)
        self.cleaned.append((identity, deployable_name))


class DiscoveryOnly(base.Driver, base.DiscoveryInterface):
    name = 'fake'

    def discover(self):
        return []


@pytest.fixture
def setup(db):
    flow = cleaning.CleaningFlow(agent_api=RecordingAgents())
    conductor = DirectConductor(conductor_manager.ConductorManager(
        'cond', cleaning=flow))
    runners = []

    def runner(driver, heartbeat_interval=1, **kwargs):
        runner = agent_cleaning.CleaningRunner(
            'host1', [driver], conductor, heartbeat_interval, **kwargs)
        runners.append(runner)
        return runner

    def release():
        """A region released and its try sent: (region, the request)."""
        region = h.make_region()
        arq_uuid = h.make_arq()
        bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                       notifier=h.RecordingNotifier())
        arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
        flow.start(['host1'])
        return region, flow.agent_api.sent[-1][1]
    yield runner, release, flow
    for r in runners:
        r.stop(drain=False)
        assert waiting.until(r.idle)


def _state(region):
    with session.reader() as s:
        return s.get(models.Deployable, region['deployable_id'])


def _wait(region, state):
    return waiting.read_until(lambda: _state(region),
                              lambda r: r.device_state == state,
                              what='%s' % state)


def test_a_try_runs_the_driver_and_reports_available(setup):
    runner, release, _flow = setup
    driver = CleaningDriver()
    worker = runner(driver)
    worker.open()
    region, request = release()

    worker.submit(request)

    _wait(region, 'available')
    assert driver.cleaned == [(request['identity'],
                               request['deployable_name'])]


def test_a_driver_failure_is_reported_as_error(setup):
    runner, release, _flow = setup
    worker = runner(CleaningDriver(error='port reset refused'))
    worker.open()
    region, request = release()
    worker.submit(request)
    row = _wait(region, 'error')
    assert row.cleaning_error == 'Cleaning failed: port reset refused'


def test_a_driver_without_cleaning_has_nothing_to_clean_with(setup):
    runner, release, _flow = setup
    worker = runner(DiscoveryOnly(None))
    worker.open()
    region, request = release()
    worker.submit(request)
    _wait(region, 'available')


def test_a_driver_not_loaded_here_is_an_error(setup):
    runner, release, _flow = setup
    worker = runner(CleaningDriver(name='other'))
    worker.open()
    region, request = release()
    worker.submit(request)
    row = _wait(region, 'error')
    assert "no loaded driver named 'fake'" in row.cleaning_error


def test_requests_wait_until_open_and_a_stale_one_never_cleans(setup):
    runner, release, flow = setup
    driver = CleaningDriver()
    worker = runner(driver)
    region, stale = release()
    worker.submit(stale)
    # Held: the conductor does not know of this agent's start yet; its
    # announcement then abandons the try and sends a new one.
    assert driver.cleaned == [] and _state(region).device_state == \
        'cleaning'
    flow.agent_started('host1')
    fresh = flow.agent_api.sent[-1][1]
    assert fresh['cleaning_uuid'] != stale['cleaning_uuid']
    worker.submit(fresh)

    worker.open()

    row = _wait(region, 'available')
    assert row.cleaning_uuid == fresh['cleaning_uuid']
    assert waiting.until(worker.idle)
    # The stale try was refused before the driver ran.
    assert len(driver.cleaned) == 1


def test_a_clean_waits_for_the_programming_job_on_its_region(setup):
    runner, release, _flow = setup
    driver = CleaningDriver()
    job_running = threading.Event()
    job_running.set()
    asked = []

    def region_busy(key):
        asked.append(key)
        return job_running.is_set()
    worker = runner(driver, region_busy=region_busy, busy_poll=0.05)
    worker.open()
    region, request = release()

    worker.submit(request)
    # It keeps asking while the job's thread works on the region.
    assert waiting.until(lambda: len(asked) >= 3)
    assert driver.cleaned == []
    assert set(asked) == {(request['identity'], request['deployable_name'])}
    assert _state(region).device_state == 'cleaning'

    job_running.clear()
    _wait(region, 'available')
    assert len(driver.cleaned) == 1


def test_a_clean_waiting_for_a_programming_job_keeps_beating(setup,
                                                             monkeypatch):
    # Silent for [cleaning]heartbeat_timeout, the try would be abandoned
    # by the conductor's reaper and sent again while this one waits.
    runner, release, _flow = setup
    beats, beat = [], cleaning_db.beat
    monkeypatch.setattr(cleaning_db, 'beat',
                        lambda *args: beats.append(args) or beat(*args))
    driver = CleaningDriver()
    job_running = threading.Event()
    job_running.set()
    worker = runner(driver, heartbeat_interval=0.05, busy_poll=0.01,
                    region_busy=lambda key: job_running.is_set())
    worker.open()
    region, request = release()

    worker.submit(request)

    # The start, then a beat per interval while the job holds the region.
    assert waiting.until(lambda: len(beats) >= 4, timeout=10)
    assert driver.cleaned == []
    assert set(beats) == {(request['deployable_uuid'],
                           request['cleaning_uuid'])}
    job_running.clear()
    _wait(region, 'available')
    assert len(driver.cleaned) == 1


def test_a_newer_try_for_a_busy_region_runs_after_the_current_one(setup):
    runner, release, _flow = setup
    driver = CleaningDriver()
    driver.go.clear()
    worker = runner(driver)
    worker.open()
    region, first = release()
    worker.submit(first)
    second = dict(first, cleaning_uuid='0' * 8)
    third = dict(first, cleaning_uuid='1' * 8)
    assert worker.submit(first) is False   # the same try twice
    worker.submit(second)
    worker.submit(third)
    assert worker.running() == {(first['identity'],
                                 first['deployable_name']):
                                first['cleaning_uuid']}

    driver.go.set()

    _wait(region, 'available')
    assert waiting.until(worker.idle)
    # The first ran; of the waiting ones only the newest was tried (and
    # refused before the driver: the conductor knows no such try).
    assert len(driver.cleaned) == 1


class EndsMeetAnOutage(ConductorWithoutDatabase):
    """A clean's end (not its start or heartbeats) meets the conductor's
    database down, ``outages`` times."""
    progress_method = 'cleaning_progress'

    def __init__(self, manager, outages):
        super().__init__(manager, outages, spared=('cleaning',))


def test_an_end_the_database_refused_is_sent_again(setup):
    # Before: the end was logged as lost and the region stayed cleaning
    # until the reaper started the whole clean over.
    runner, release, _flow = setup
    driver = CleaningDriver()
    worker = runner(driver)
    worker.conductor = EndsMeetAnOutage(worker.conductor.manager, 2)
    worker.open()
    region, request = release()

    worker.submit(request)

    _wait(region, 'available')
    assert worker.conductor.refused == ['available', 'available']
    assert len(driver.cleaned) == 1


def test_an_end_refused_past_the_heartbeat_timeout_is_left_to_the_reaper(
        setup, conf):
    conf.set_override('heartbeat_timeout', 1, group='cleaning')
    runner, release, _flow = setup
    worker = runner(CleaningDriver())
    worker.conductor = EndsMeetAnOutage(worker.conductor.manager, 100)
    worker.open()
    region, request = release()

    worker.submit(request)

    assert waiting.until(worker.idle)
    assert 2 <= len(worker.conductor.refused) <= 3
    assert _state(region).device_state == 'cleaning'


class OutOfView(CleaningDriver, base.DiscoveryInterface):
    """Its scan lists no region: each one's function is with another
    driver (vfio-pci, for a guest)."""

    def discover(self):
        return []


def _reporting(acknowledged=True):
    """after_clean as the agent's: its scan (every driver's when
    ``full``) applied by the conductor; the ack, or None when the
    conductor did not take it. The calls' ``full`` in ``.fulls``."""
    def after_clean(driver, full=False):
        after_clean.fulls.append(full)
        if not acknowledged:
            return None
        return report.handle_report('host1', [
            agent_manager.driver_entry(driver.name, [])])
    after_clean.fulls = []
    return after_clean


def test_a_region_out_of_view_is_left_alone_and_waits(setup):
    """Released while its function is still with vfio-pci, its host's
    scans having said so before (then a scan's diff sends nothing): the
    try reports the full scan first, so the conductor notes the region
    out of view, then its end; the driver never runs, the region waits
    and no try is sent again."""
    runner, release, flow = setup
    driver = OutOfView()
    after_clean = _reporting()
    worker = runner(driver, after_clean=after_clean)
    worker.open()
    region, request = release()

    worker.submit(request)

    row = _wait(region, 'pending_cleaning')
    assert row.cleaning_error == cleaning_db.WAIT_REASON
    assert after_clean.fulls == [True] and driver.cleaned == []
    assert flow.start(['host1']) == []


def test_an_out_of_view_scan_the_conductor_did_not_take_ends_nothing(
        setup):
    """Its end alone would read as a failed wipe (error): the try is
    left to the conductor's reaper, which sends it again."""
    runner, release, _flow = setup
    driver = OutOfView()
    worker = runner(driver, after_clean=_reporting(acknowledged=False))
    worker.open()
    region, request = release()

    worker.submit(request)

    assert waiting.until(worker.idle)
    assert _state(region).device_state == 'cleaning'
    assert driver.cleaned == []
