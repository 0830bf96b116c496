"""programming_env's conductor and agent in one process over inproc://, with
the agent serving the kubelet plugin on real unix sockets and reading
claims from the kube-apiserver stand-in (tests and bench/k8s_prepare.py)."""
from cyborg_lite.agent import manager as agent_manager
from tests import waiting
from tests.functional import programming_env as pe

REGION0 = 'fpga-0000-5e-00-0-region0'
REGION1 = 'fpga-0000-5e-00-0-region1'


def configure(conf, tmp_path, short_dir, namespace_projects=None):
    """programming_env's options, and [kubernetes] for pe.HOST with the
    kubelet's directories under ``short_dir`` (socket paths are short)."""
    pe.configure(conf, tmp_path)
    for name, value in (('enabled', True), ('hosts', [pe.HOST]),
                        ('namespace_projects', namespace_projects or {}),
                        ('kubelet_registry_dir', short_dir + '/reg'),
                        ('kubelet_plugins_dir', short_dir + '/plugins'),
                        ('cdi_dir', short_dir + '/cdi'),
                        ('plugin_state_dir', short_dir + '/state'),
                        ('prepare_timeout', 30.0)):
        conf.set_override(name, value, group='kubernetes')
    conf.set_override('inventory_sinks', [], group='conductor')


class K8sEnv(pe.Env):
    """programming_env.Env whose agent serves the kubelet plugin."""

    def __init__(self, conf, apiserver):
        super().__init__(conf)
        self.apiserver = apiserver
        self.clients = []

    def start_agent(self):
        client = self.apiserver.api_client()
        self.clients.append(client)
        self.agent = agent_manager.AgentManager(
            self.conf, host=pe.HOST, drivers=[self.new_driver()],
            k8s_api_client=client)
        self.agent.start()
        assert waiting.until(lambda: self.agent._announced)
        return self.agent

    def stop(self):
        super().stop()
        for client in self.clients:
            client.close()


