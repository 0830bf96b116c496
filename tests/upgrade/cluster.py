"""A multihost cluster (tests/functional/multihost/cluster.py) whose
services start from the previous release and move to this code one at a
time, each with the same config file it had.

Every service is a separate process from a console script: the old ones
from the previous release's venv (old_release.py), the new ones from this
venv. ``upgrade_schema`` runs this code's ``cyborg-lite-dbsync upgrade``
on the database the old services use; ``upgrade(name)`` stops one service
(SIGTERM) and starts this code's in its place.
"""
import json
import os
import subprocess

from tests.functional.multihost import cluster as multihost
from tests.upgrade import old_release


class Service(multihost.Service):
    """A service whose console script comes from ``bin_dir``; it runs in
    the cluster's dir, so that no tree but its own is on its path."""

    def __init__(self, name, script, conf_path, log_dir, bin_dir):
        super().__init__(name, script, conf_path, log_dir)
        self.script, self.cwd = script, log_dir
        self.use(bin_dir)

    def use(self, bin_dir):
        self.bin_dir = bin_dir
        self.argv[0] = os.path.join(bin_dir, self.script)

    def start(self):
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                cwd=self.cwd, env=old_release.clean_env())
        return self


class UpgradeCluster(multihost.Cluster):
    """PostgreSQL + RabbitMQ + Placement + api + conductors + agents of
    the previous release, upgraded in place."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.old_version, self.old_bin = old_release.install(
            os.path.join(self.basedir, 'previous-release'))
        self.schema_upgraded = False

    def _add(self, name, script):
        service = Service(name, script, self.conf_path(name), self.basedir,
                          self.old_bin)
        self.services[name] = service
        return service

    def _dbsync(self, bin_dir=None):
        proc = subprocess.run(
            [os.path.join(bin_dir or self.old_bin, 'cyborg-lite-dbsync'),
             '--config-file', self.conf_path('dbsync'), 'upgrade'],
            capture_output=True, text=True, timeout=120, cwd=self.basedir,
            env=old_release.clean_env())
        if proc.returncode != 0:
            raise RuntimeError('dbsync failed: %s%s' % (proc.stdout,
                                                       proc.stderr))

    def options_unknown_to(self, bin_dir):
        """{config file: [[section, option]]} that the release installed
        in ``bin_dir`` does not register (unknown_options.py)."""
        script = os.path.join(os.path.dirname(__file__),
                              'unknown_options.py')
        paths = sorted(self.conf_path(n) for n in
                       list(self.services) + ['dbsync'])
        proc = subprocess.run(
            [os.path.join(bin_dir, 'python'), script] + paths,
            capture_output=True, text=True, timeout=120, cwd=self.basedir,
            env=old_release.clean_env(), check=True)
        return {os.path.basename(p): found
                for p, found in json.loads(proc.stdout).items() if found}

    def upgrade_schema(self):
        """This code's expand migrations under the running old services."""
        self._dbsync(multihost.BIN)
        self.schema_upgraded = True

    def run_new(self, script, conf, *args):
        """This code's ``script`` with the config file of service
        ``conf`` (what an operator runs on that host); the
        CompletedProcess."""
        return subprocess.run(
            [os.path.join(multihost.BIN, script), '--config-file',
             self.conf_path(conf)] + list(args),
            capture_output=True, text=True, timeout=120, cwd=self.basedir,
            env=old_release.clean_env())

    def upgrade(self, name):
        """Stop ``name`` and start this code's in its place, with the same
        config file; waits until it serves."""
        service = self.services[name]
        service.stop()
        service.use(multihost.BIN)
        self.start_again(name)
        if name == 'api':
            multihost.servers.wait_for_port(self.api_port, 90,
                                            proc=service.proc)
        assert service.alive(), service.read_log()
        return service

    @property
    def new_bin(self):
        return multihost.BIN

    def running(self):
        """{service: the bin dir it runs from}."""
        return {n: s.bin_dir for n, s in self.services.items()}
