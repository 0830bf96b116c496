"""Fixtures of the kubelet-side tests."""
import os
import shutil
import tempfile
import uuid

import pytest

from tests.functional.kubernetes import fake_node
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.unit.kubernetes import fake_apiserver

NODE = 'node-1'             # the node of the ``node`` fixture


@pytest.fixture
def short_dir():
    # Unix socket paths must stay under 108 bytes: not pytest's tmp_path.
    path = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def node(conf, short_dir):
    """The fake FPGA driver's one card of a node, programmed for real,
    and a bitstream of it (fake_node.FakeNode)."""
    conf.set_override('state_dir', os.path.join(short_dir, 'sim'),
                      group='fake_driver')
    conf.set_override('program_delay', 0, group='fake_driver')
    conf.set_override('num_cards', 1, group='fake_driver')
    node = fake_node.FakeNode(conf, NODE)
    path, function_id = fake_node.raw_image(short_dir, 'aes.bin',
                                            b'aes-256 accelerator')
    node.add_bitstream(fake_node.Bitstream(str(uuid.uuid4()), path,
                                           function_id))
    return node


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
