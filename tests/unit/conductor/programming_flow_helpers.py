"""Rows and a recording agent for the programming-flow unit tests."""
import uuid

from cyborg_lite.common import device_records
from cyborg_lite.conductor import programming
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.bitstreams import builders
from tests.unit.bitstreams.conftest import add_bitstream  # noqa: F401

HOST = 'host1'
CARD = '0000:5e:00.0'
REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
OLD_FUNCTION = builders.hex32(builders.AFU_UUID)


def add_region(region='region0', hostname=HOST, name=None):
    """A device and one region named as an agent report names them."""
    with session.writer() as s:
        device = s.query(models.Device).filter_by(
            hostname=hostname, identity=CARD).one_or_none()
        if device is None:
            device = models.Device(
                uuid=str(uuid.uuid4()), type='FPGA', vendor='0x8086',
                model='pac', hostname=hostname, driver_name='fake',
                identity=CARD)
            s.add(device)
            s.flush()
        dep = models.Deployable(
            uuid=str(uuid.uuid4()), device_id=device.id,
            name=name or device_records.deployable_db_name(hostname, CARD,
                                                           region),
            driver_name='fake', region_type=REGION_TYPE,
            function_id=OLD_FUNCTION)
        s.add(dep)
    return dep


class RecordingAgents:
    """The agents' side of the cast: what was sent to which host.

    ``on_job(job)`` may answer for the agent (as the agent would, by the
    conductor's progress calls)."""

    def __init__(self, on_job=None):
        self.sent = []
        self.on_job = on_job

    def program_region(self, ctxt, hostname, job):
        self.sent.append((hostname, job))
        if self.on_job is not None:
            self.on_job(job)

    def uuids(self):
        return [job['uuid'] for _host, job in self.sent]


def make_flow(on_job=None, after_success=None):
    agents = RecordingAgents(on_job)
    return programming.ProgrammingFlow(
        agent_api=agents, after_success=after_success), agents


def walk(flow, job_uuid, states=('downloading', 'programming', 'verifying')):
    for state in states:
        flow.progress(job_uuid, state)
