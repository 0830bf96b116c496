"""Fixtures of the kubelet-side tests."""
import shutil
import tempfile

import pytest

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
