"""Fixtures of the kubelet-side tests."""
import shutil
import tempfile

import pytest

from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.unit.kubernetes import fake_apiserver


@pytest.fixture
def short_dir():
    # Unix socket paths must stay under 108 bytes: not pytest's tmp_path.
    path = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def apiserver():
    """The kube-apiserver stand-in, empty."""
    server = fake_apiserver.FakeKubeApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def kubelet(env, short_dir):
    """A kubelet registered with the plugin of the module's ``env``."""
    kubelet = kubelet_mod.TestKubelet(short_dir + '/reg')
    kubelet.register()
    yield kubelet
    kubelet.close()
