"""One process, inproc:// messaging: the real ConductorService and
AgentManagers with the FAKE driver, whose simulated sysfs tree is the
hardware the programming tests look at."""
import uuid

import pytest
import sqlalchemy as sa
import webtest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.api import deploy
from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import context
from cyborg_lite.common import states
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from cyborg_lite.db import trusted_keys as keys_db
from cyborg_lite.drivers import fake
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import transport as rpc
from tests import signing_keys
from tests import waiting
from tests.unit.bitstreams import builders

HOST = 'node1'
CARD = '0000:5e:00.0'
REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
# The simulated regions start with builders.AFU_UUID loaded.
OLD_FUNCTION = builders.hex32(builders.AFU_UUID)
NEW_AFU = '5f0e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6'
NEW_FUNCTION = builders.hex32(NEW_AFU)


def configure(conf, tmp_path, program_delay=0.05):
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('report_interval', 3600, group='agent')
    conf.set_override('state_dir', str(tmp_path / 'fpga'),
                      group='fake_driver')
    conf.set_override('num_cards', 1, group='fake_driver')
    conf.set_override('regions_per_card', 2, group='fake_driver')
    conf.set_override('program_delay', program_delay, group='fake_driver')
    conf.set_override('store_dir', str(tmp_path / 'store'),
                      group='bitstreams')


@pytest.fixture
def make_env(conf, sqlite_db, tmp_path):
    """make_env(program_delay=0.05, **[fake_driver] overrides) -> a started
    Env; every one is stopped after the test."""
    envs = []

    def make(program_delay=0.05, **fake_driver):
        configure(conf, tmp_path, program_delay)
        for name, value in fake_driver.items():
            conf.set_override(name, value, group='fake_driver')
        envs.append(Env(conf).start())
        return envs[-1]
    yield make
    for env in envs:
        env.stop()
    rpc.cleanup()


def new_image(afu_uuid=NEW_AFU, interface=builders.INTERFACE_UUID):
    return builders.build_gbs(builders.gbs_metadata(
        interface_uuid=interface, afu_uuid=afu_uuid))


class Env:
    """A conductor and an agent on HOST; helpers to look at both."""

    def __init__(self, conf):
        self.conf = conf
        self.conductor = conductor_service.ConductorService(conf,
                                                            host='cond1')
        self.api = conductor_rpcapi.ConductorAPI(timeout=15)
        self.agent = None
        self.killed = []
        self.store = image_store.ImageStore()

    def start(self):
        self.conductor.start()
        self.start_agent()
        # NOTE: two regions (and the card too, with whole_card).
        assert waiting.until(lambda: len(self.regions()) >= 2)
        return self

    def new_driver(self):
        driver = fake.FakeDriver(self.conf)
        driver.name = 'fake'
        return driver

    def start_agent(self):
        self.agent = agent_manager.AgentManager(
            self.conf, host=HOST, drivers=[self.new_driver()])
        self.agent.start()
        assert waiting.until(lambda: self.agent._announced)
        return self.agent

    def kill_agent(self):
        """Stop the agent as a crash would: its job and cleaning threads
        are cut off from the conductor (the simulated write or wipe itself
        goes on)."""
        self.agent.stop(drain_jobs=False)
        self.killed.append(self.agent)
        self.agent = None

    def orphans_done(self, timeout=15.0):
        """Wait until the threads of killed agents have ended."""
        return waiting.until(lambda: all(
            a.jobs.idle() and a.cleaner.idle() for a in self.killed),
            timeout)

    def api_app(self, api_conf):
        """The API app (webtest) whose casts reach this conductor."""
        return webtest.TestApp(deploy.loadapp(
            api_conf, conductor_factory=lambda: self.api))

    def stop(self):
        if self.agent is not None:
            self.agent.stop()
        self.conductor.stop()
        assert self.orphans_done()

    # --- hardware and database ------------------------------------------

    def hardware(self, region='region0'):
        """The function id the simulated region holds now."""
        return self.new_driver().loaded_function(CARD, region)

    def regions(self):
        with session.reader() as s:
            return list(s.scalars(
                sa.select(models.Deployable)
                .join(models.Device)
                .where(models.Device.hostname == HOST)
                .order_by(models.Deployable.name)))

    def region(self, name='region0'):
        return [d for d in self.regions() if d.name.endswith('_' + name)][0]

    # --- bitstreams and jobs ----------------------------------------------

    def add_bitstream(self, image=None, stored=None, **values):
        """A bitstream row for ``image``; ``stored`` bytes go to the store
        instead when given (to model a corrupted or swapped file)."""
        image = new_image() if image is None else image
        fields = dict(name='bs-%s' % uuid.uuid4().hex[:6], format='gbs',
                      region_type=REGION_TYPE, function_id=NEW_FUNCTION,
                      visibility='public')
        fields.update(values)
        row = bitstreams_db.create(fields)
        sha256, size = self.store.save_stream([image])
        if stored is not None:
            with open(self.store.path(sha256), 'wb') as f:
                f.write(stored)
        return bitstreams_db.set_uploaded(row.uuid, sha256, size)

    def trust(self, key, project_id=None, name='lab'):
        """Register ``key``'s public key as an admin would."""
        return keys_db.create(signatures.load_key(
            signing_keys.public_pem(key)), name, project_id)

    def sign(self, bitstream, key, image=None, key_id=None):
        """Attach ``key``'s signature of ``image`` (the default image of
        add_bitstream) to ``bitstream``, as an upload would."""
        image = new_image() if image is None else image
        return bitstreams_db.set_signature(
            bitstream.uuid, signing_keys.sign(key, image), key_id)

    def program(self, bitstream_uuid, region='region0', ctxt=None):
        return self.api.program(ctxt or context.get_admin_context(),
                                bitstream_uuid, self.region(region).uuid)

    def wait_job(self, job_uuid, states=states.JOB_TERMINAL, timeout=15.0):
        job = waiting.until(lambda: _in_states(job_uuid, states), timeout)
        assert job, 'job %s never reached %s (it is %s)' % (
            job_uuid, states, jobs_db.get(job_uuid).state)
        return job


def _in_states(job_uuid, states):
    job = jobs_db.get(job_uuid)
    return job if job.state in states else None
