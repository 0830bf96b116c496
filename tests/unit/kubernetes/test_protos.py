"""The committed kubelet gRPC stubs are what `make protos` makes, and their
wire names are the kubelet's."""
import filecmp
import glob
import os
import shutil
import subprocess
import sys

import pytest

from tests import servers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PROTO_DIR = os.path.join('cyborg_lite', 'agent', 'dra', 'proto')


def _protoc_or_skip():
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        if servers.under_ci():
            raise
        pytest.skip('grpcio-tools is not installed (the test extras have it; '
                    'it fails instead under CI=true)')


def test_generated_modules_are_current(tmp_path):
    _protoc_or_skip()
    protos = sorted(glob.glob(os.path.join(ROOT, PROTO_DIR, '*.proto')))
    assert len(protos) == 3
    tree = tmp_path / PROTO_DIR
    tree.mkdir(parents=True)
    for proto in protos:
        shutil.copy(proto, tree)
    rel = [os.path.join(PROTO_DIR, os.path.basename(p)) for p in protos]
    subprocess.run([sys.executable, '-m', 'grpc_tools.protoc', '-I.',
                    '--python_out=.', '--grpc_python_out=.'] + rel,
                   cwd=tmp_path, check=True, capture_output=True)
    generated = sorted(os.path.basename(p) for p in glob.glob(
        str(tree / '*_pb2*.py')))
    committed = sorted(os.path.basename(p) for p in glob.glob(
        os.path.join(ROOT, PROTO_DIR, '*_pb2*.py')))
    assert generated == committed and len(generated) == 6
    stale = [name for name in generated if not filecmp.cmp(
        tree / name, os.path.join(ROOT, PROTO_DIR, name), shallow=False)]
    assert stale == [], 'stale generated code: run `make protos`'


def test_wire_names_are_the_kubelets():
    from cyborg_lite.agent.dra.proto import dra_v1_pb2
    from cyborg_lite.agent.dra.proto import dra_v1beta1_pb2
    from cyborg_lite.agent.dra.proto import pluginregistration_v1_pb2 as reg
    assert (reg.DESCRIPTOR.services_by_name['Registration'].full_name ==
            'pluginregistration.Registration')
    assert (dra_v1_pb2.DESCRIPTOR.services_by_name['DRAPlugin'].full_name ==
            'k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin')
    assert (dra_v1beta1_pb2.DESCRIPTOR.services_by_name['DRAPlugin']
            .full_name == 'k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin')
    # Field numbers are the interface: spot-check the ones a typo would hit.
    fields = {f.name: f.number
              for f in dra_v1_pb2.Device.DESCRIPTOR.fields}
    assert fields == {'request_names': 1, 'pool_name': 2, 'device_name': 3,
                      'cdi_device_ids': 4, 'share_id': 5}
    assert 'share_id' not in {
        f.name for f in dra_v1beta1_pb2.Device.DESCRIPTOR.fields}
    assert {f.name: f.number for f in reg.PluginInfo.DESCRIPTOR.fields} == {
        'type': 1, 'name': 2, 'endpoint': 3, 'supported_versions': 4}
    assert {f.name: f.number
            for f in dra_v1_pb2.Claim.DESCRIPTOR.fields} == {
        'namespace': 1, 'uid': 2, 'name': 3}
