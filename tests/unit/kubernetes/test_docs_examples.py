"""The manifests in docs/kubernetes.md are valid Kubernetes 1.34-1.37
objects, and their FpgaConfig objects pass our own parser."""
import os
import re

import yaml

from cyborg_lite.kubernetes import claim_config
from tests.unit.kubernetes import inventories
from tests.unit.kubernetes import schemas

DOC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                   'kubernetes.md')


def _manifests():
    with open(DOC) as f:
        text = f.read()
    blocks = re.findall(r'```yaml\n(.*?)```', text, re.S)
    return [obj for block in blocks for obj in yaml.safe_load_all(block)]


def _opaque_parameters(obj):
    if isinstance(obj, dict):
        if 'opaque' in obj:
            yield obj['opaque']
        for value in obj.values():
            yield from _opaque_parameters(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _opaque_parameters(value)


def test_doc_manifests_are_valid():
    manifests = _manifests()
    assert [m['kind'] for m in manifests] == [
        'DeviceClass', 'DeviceClass', 'ResourceClaimTemplate', 'Pod',
        'ResourceClaimTemplate']
    for manifest in manifests:
        assert schemas.schema_errors(manifest) == [], manifest['kind']
    opaque = [o for m in manifests for o in _opaque_parameters(m)]
    assert len(opaque) == 3
    for entry in opaque:
        assert entry['driver'] == inventories.DRIVER
        claim_config.parse(entry['parameters'], inventories.DRIVER)
