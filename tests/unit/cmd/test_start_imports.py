"""What a service's start imports: an agent that serves no Kubernetes
loads no Kubernetes client, and none loads what it never uses (the agent
no SQLAlchemy nor alembic: the import contract agent-no-database says so
for its code; this says so for the process, function-level imports and
third-party packages included). Each is a fresh interpreter: the test
process has imported everything already."""
import subprocess
import sys

_LOADED = ('import sys, %s; '
           'print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))')


def _top_level_modules_after(module):
    out = subprocess.run([sys.executable, '-c', _LOADED % module],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_agent_command_loads_no_database_nor_kubernetes_client():
    loaded = _top_level_modules_after('cyborg_lite.cmd.agent')
    assert 'cyborg_lite' in loaded
    assert loaded.isdisjoint({'kubernetes', 'sqlalchemy', 'alembic',
                              'grpc'}), loaded
