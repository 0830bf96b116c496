"""The agent's side of a job without RPC: JobRunner + image fetchers +
the FAKE driver (the hardware edge), reporting to the real conductor
manager; images come from the store or from a tiny local HTTP server."""
import hashlib
import http.server
import threading

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cyborg_lite.agent import image_fetch
from cyborg_lite.agent import programming as agent_programming
from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import programming
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import fake
from tests import servers
from tests import waiting
from tests.functional import programming_env as pe
from tests.unit.conductor import programming_flow_helpers as h

IMAGE = pe.new_image()


class DirectConductor:
    """ConductorAPI without the transport: the manager's methods, and its
    expected exceptions raised as themselves, as the RPC client does."""

    def __init__(self, manager):
        self.manager = manager

    def __getattr__(self, name):
        method = getattr(self.manager, name)

        def call(ctxt, *args, **kwargs):
            try:
                return method(ctxt, *args, **kwargs)
            except messaging.ExpectedException as exc:
                raise exc.exc_info[1]
        return call


@pytest.fixture
def setup(db, conf, tmp_path):
    """A region as the fake driver reports it, a bitstream, a flow whose
    casts land in a JobRunner with the fake driver."""
    pe.configure(conf, tmp_path, program_delay=0)
    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    [record] = driver.discover()
    region = h.add_region(name=device_records.deployable_db_name(
        h.HOST, record.identity, 'region0'))
    bitstream = bitstreams_db.create(dict(
        name='nlb', format='gbs', region_type=pe.REGION_TYPE,
        function_id=pe.NEW_FUNCTION, visibility='public'))
    sha256, size = image_store.ImageStore().save_stream([IMAGE])
    bitstreams_db.set_uploaded(bitstream.uuid, sha256, size)
    flow = programming.ProgrammingFlow(agent_api=_Cast())
    conductor = DirectConductor(conductor_manager.ConductorManager(
        'cond', programming=flow))
    runners = []

    def runner(fetch_image, drivers=(driver,)):
        flow.agent_api.runner = agent_programming.JobRunner(
            h.HOST, drivers, conductor, fetch_image,
            tmp_dir=str(tmp_path / 'agent-tmp'))
        runners.append(flow.agent_api.runner)
        flow.agent_api.runner.open()
        return flow.agent_api.runner

    def program():
        job = flow.program(context.get_admin_context(), bitstream.uuid,
                           region.uuid)
        return waiting.until(lambda: jobs_db.get(job['uuid']).state in
                           states.JOB_TERMINAL and jobs_db.get(job['uuid']))
    yield runner, program, driver, bitstream
    # A job's thread outlives the job's end (its last report, after_job):
    # it must be gone before the database is disposed of under it (a
    # closed SQLite connection used by a thread crashes the process).
    for each in runners:
        each.stop(drain=False)
        assert waiting.until(each.idle)


class _Cast:
    runner = None

    def program_region(self, ctxt, hostname, job):
        self.runner.submit(job)


class _Images(http.server.BaseHTTPRequestHandler):
    files = {}

    def do_GET(self):
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404, 'no such bitstream')
            return
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def image_api(conf):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Images)
    thread = servers.serve_in_thread(server)
    conf.set_override('image_source', 'http', group='agent')
    conf.set_override('endpoint_override', 'http://127.0.0.1:%d'
                      % server.server_port, group='image_api')
    yield _Images.files
    _Images.files.clear()
    server.shutdown()
    thread.join()


def test_local_store_image_programs_the_region(setup, conf):
    runner, program, driver, _bitstream = setup
    runner(image_fetch.make_fetcher(conf))
    assert program().state == 'succeeded'
    assert driver.loaded_function(pe.CARD, 'region0') == pe.NEW_FUNCTION


def test_http_image_programs_the_region(setup, conf, image_api):
    runner, program, driver, bitstream = setup
    image_api['/v2/bitstreams/%s/file' % bitstream.uuid] = IMAGE
    fetcher = image_fetch.make_fetcher(conf)
    assert isinstance(fetcher, image_fetch.HttpImages)
    runner(fetcher)
    assert program().state == 'succeeded'
    assert driver.loaded_function(pe.CARD, 'region0') == pe.NEW_FUNCTION


def test_http_error_fails_the_job(setup, conf, image_api):
    runner, program, driver, _bitstream = setup
    runner(image_fetch.make_fetcher(conf))
    done = program()
    assert done.state == 'failed' and 'HTTP 404' in done.error
    assert driver.loaded_function(pe.CARD, 'region0') == pe.OLD_FUNCTION


def test_missing_local_image_fails_the_job(setup, conf):
    runner, program, _driver, _bitstream = setup
    image_store.ImageStore().delete(hashlib.sha256(IMAGE).hexdigest())
    runner(image_fetch.make_fetcher(conf))
    done = program()
    assert done.state == 'failed' and 'No stored image' in done.error


def test_job_for_a_driver_not_loaded_fails_clearly(setup, conf):
    runner, program, _driver, _bitstream = setup
    runner(image_fetch.make_fetcher(conf), drivers=())
    done = program()
    assert done.state == 'failed'
    assert "no loaded driver named 'fake'" in done.error


def test_runner_holds_jobs_until_open_and_runs_one_per_region(conf, tmp_path):
    gate = threading.Event()
    seen = []

    def fetch(bitstream):
        seen.append(bitstream['uuid'])
        gate.wait(10)
        return [b'']

    reports = []

    class Conductor:
        def job_progress(self, ctxt, job_uuid, state, **kwargs):
            reports.append((job_uuid, state))

    driver = fake.FakeDriver(conf)
    driver.name = 'fake'
    runner = agent_programming.JobRunner(h.HOST, [driver], Conductor(), fetch)
    job = {'uuid': 'j1', 'driver': 'fake', 'identity': pe.CARD,
           'region_name': 'region0', 'bitstream': {'uuid': 'b1'}}
    assert runner.submit(job) is False and runner.running() == {}
    runner.open()
    assert waiting.until(lambda: seen == ['b1'])
    # The same region again (a resend while the first try runs): ignored.
    assert runner.submit(dict(job, uuid='j2')) is False
    assert runner.running() == {(pe.CARD, 'region0'): 'j1'}
    gate.set()
    runner.stop()
    assert runner.running() == {} and runner.idle()
    assert [r[0] for r in reports] == ['j1', 'j1']  # downloading, failed


def test_next_job_on_a_region_starts_once_the_last_one_reported(setup, conf):
    """Issue 13.9: a job created right after another on the same region
    ended is run at once, not dropped as "job A runs on ..." while the
    agent still finishes A's aftermath (its post-job report)."""
    runner, program, driver, _bitstream = setup
    aftermath = threading.Event()
    jobs = runner(image_fetch.make_fetcher(conf))
    jobs.after_job = lambda _driver: aftermath.wait(30)
    try:
        assert program().state == 'succeeded'
        # A's thread now sits in after_job; B comes while it does.
        second = program()
        assert second, 'the second job never ended: the agent dropped it'
        assert (second.state, second.attempts, second.error) == (
            'succeeded', 1, None)
    finally:
        aftermath.set()


def test_a_stale_try_on_a_live_agent_is_stopped_before_writing(setup, conf):
    """Try 1 was reaped while its agent was merely slow and try 2 began:
    the job message of try 1, run now, is refused at its first report and
    never reaches the region (the agent sends its try number)."""
    runner, program, driver, bitstream = setup
    jobs = runner(image_fetch.make_fetcher(conf))
    jobs.stop()   # nothing runs the job the flow sends: we do, below
    with session.reader() as s:
        [region] = s.scalars(sa.select(models.Deployable)).all()
    flow = programming.ProgrammingFlow(agent_api=_Cast())
    sent = []
    flow.agent_api.program_region = lambda ctxt, host, job: sent.append(job)
    job = flow.program(context.get_admin_context(), bitstream.uuid,
                       region.uuid)
    [try_one] = sent
    flow.progress(job['uuid'], 'downloading', try_number=1)
    jobs_db.reap(job['uuid'], 'silent')
    flow.progress(job['uuid'], 'downloading', try_number=2)

    stale = agent_programming.JobRunner(
        h.HOST, [driver], DirectConductor(conductor_manager.ConductorManager(
            'cond', programming=flow)), image_fetch.make_fetcher(conf))
    stale.open()
    assert stale.submit(try_one)
    assert waiting.until(stale.idle)
    assert driver.loaded_function(pe.CARD, 'region0') == pe.OLD_FUNCTION
    current = jobs_db.get(job['uuid'])
    assert (current.state, current.attempts) == ('downloading', 2)


class ProgressTroubles(DirectConductor):
    """DirectConductor whose ``progress_method`` (job_progress) goes
    through ``progress(call, ctxt, *args, **kwargs)``, where a test makes
    its trouble."""
    progress_method = 'job_progress'

    def __getattr__(self, name):
        call = super().__getattr__(name)
        if name != self.progress_method:
            return call
        return lambda *args, **kwargs: self.progress(call, *args, **kwargs)


class DyingConductor(ProgressTroubles):
    """Each first report of a state is lost as to a conductor killed while
    it handled the call: ``applied`` says whether it had written it."""

    def __init__(self, manager, applied):
        super().__init__(manager)
        self.applied = applied
        self.lost = []

    def progress(self, call, ctxt, job_uuid, state, **kwargs):
        if state not in self.lost:
            self.lost.append(state)
            if self.applied:
                call(ctxt, job_uuid, state, **kwargs)
            raise messaging.MessagingTimeout('no reply')
        return call(ctxt, job_uuid, state, **kwargs)


@pytest.mark.parametrize('applied', [False, True],
                         ids=['lost before', 'applied, reply lost'])
def test_a_report_that_got_no_answer_is_sent_again(setup, conf, applied):
    runner, program, driver, _bitstream = setup
    jobs = runner(image_fetch.make_fetcher(conf))
    jobs.conductor = DyingConductor(jobs.conductor.manager, applied)
    job = program()
    assert (job.state, job.error) == ('succeeded', None)
    assert jobs.conductor.lost == ['downloading', 'programming', 'verifying',
                                   'succeeded']
    assert driver.loaded_function(pe.CARD, 'region0') == pe.NEW_FUNCTION


class ConductorWithoutDatabase(ProgressTroubles):
    """The first ``outages`` reports of each state, but those ``spared``,
    meet the conductor's database down (DatabaseUnavailable, as the RPC
    client raises it). The state is the call's last positional argument
    (job_progress and cleaning_progress alike)."""

    def __init__(self, manager, outages, spared=()):
        super().__init__(manager)
        self.outages = outages
        self.spared = spared
        self.refused = []

    def progress(self, call, ctxt, *args, **kwargs):
        state = args[-1]
        if state not in self.spared and \
                self.refused.count(state) < self.outages:
            self.refused.append(state)
            raise exception.DatabaseUnavailable()
        return call(ctxt, *args, **kwargs)


def test_a_report_the_database_refused_is_sent_again(setup, conf):
    # Before: the success met the outage, the agent reported the job
    # failed (which met it too) and a programmed region's job was left to
    # the reaper.
    conf.set_override('heartbeat_interval', 1, group='programming')
    runner, program, driver, _bitstream = setup
    jobs = runner(image_fetch.make_fetcher(conf))
    jobs.conductor = ConductorWithoutDatabase(jobs.conductor.manager, 1)
    job = program()
    assert (job.state, job.attempts, job.error) == ('succeeded', 1, None)
    assert jobs.conductor.refused == ['downloading', 'programming',
                                      'verifying', 'succeeded']
    assert driver.loaded_function(pe.CARD, 'region0') == pe.NEW_FUNCTION
