"""Run a driver's scans through the agent's health monitor, as the agent
does (discover, then read_health), and read what it would report."""
import os
import shutil

from cyborg_lite.agent import health as health_mod
from tests.unit.drivers.conftest import fixture_path


def monitor(conf, host='node1', to_fault=2, to_clear=2):
    conf.set_override('readings_to_fault', to_fault, group='health')
    conf.set_override('readings_to_clear', to_clear, group='health')
    return health_mod.HealthMonitor(conf, host)


def scan(monitor, driver, times=1):
    """{identity: (health, reason, {deployable: (health, reason)})} after
    ``times`` scans."""
    for _ in range(times):
        records = monitor.apply(driver, driver.discover())
    return {r.identity: (r.health, r.health_reason,
                         {d.name: (d.health, d.health_reason)
                          for d in r.deployables})
            for r in records}


def overlay(root, *parts):
    """Copy the files of a fixture overlay over a host tree."""
    source = fixture_path(*parts)
    for dirpath, _dirs, files in os.walk(source):
        for name in files:
            path = os.path.join(dirpath, name)
            target = os.path.join(str(root),
                                  os.path.relpath(path, source))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)
