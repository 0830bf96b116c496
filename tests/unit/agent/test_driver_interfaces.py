"""The agent uses a driver only for the interfaces it implements."""
from cyborg_lite.agent import programming
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.drivers import base
from tests.unit.agent.scripted_driver import ScriptedDriver
from tests.unit.conductor import report_helpers as h


class ProgramOnly(base.Driver, base.ProgrammingInterface):
    """Programs, reports nothing: must never be scanned."""
    name = 'programmer'

    def program(self, identity, region_name, image_path):
        raise AssertionError('not called here')

    def loaded_function(self, identity, region_name):
        return None


class Conductor:
    def __init__(self):
        self.reports, self.progress = [], []

    def report(self, ctxt, hostname, entries, numa_nodes=None):
        self.reports.append([e['driver'] for e in entries])

    def job_progress(self, ctxt, job_uuid, state, error=None, **extra):
        self.progress.append((job_uuid, state, error))


def test_only_discovery_drivers_are_scanned(conf):
    agent = agent_manager.AgentManager(
        conf, host='node1', conductor_api=Conductor(),
        drivers=[ScriptedDriver(conf, 'fpga', [h.fpga()]),
                 ProgramOnly(conf)])
    assert [e['driver'] for e in agent.scan()] == ['fpga']


def test_a_job_for_a_driver_that_cannot_program_fails(conf):
    conductor = Conductor()
    runner = programming.JobRunner('node1',
                                  [ScriptedDriver(conf, 'fpga', [])],
                                  conductor, fetch_image=None)
    runner.open()
    runner.submit({'uuid': 'job1', 'driver': 'fpga',
                   'identity': '0000:5e:00.0', 'region_name': 'region0'})
    runner.stop(drain=True)
    [(uuid, state, error)] = conductor.progress
    assert (uuid, state) == ('job1', 'failed')
    assert "no loaded driver named 'fpga' can program" in error
