"""``cyborg-lite resource-slice show <host>``: the ResourceSlices the
conductor would publish, from the real API, printed as manifests."""
import json

import yaml

from tests.functional.cli import bitstream_cli as b
from tests.functional.cli import conftest as c
from tests.unit.kubernetes import schemas


def test_yaml_documents_are_valid_resource_slices(cli):
    c.add_device('host1', regions=2)
    c.add_device('host2', pci='0000:af:00.0')
    result = cli('resource-slice', 'show', 'host1')
    assert result.rc == 0, result
    (obj,) = list(yaml.safe_load_all(result.stdout))
    assert schemas.schema_errors(obj) == []
    assert obj['spec']['nodeName'] == 'host1'
    assert [d['name'] for d in obj['spec']['devices']] == [
        'fpga-0000-5e-00-0-region0', 'fpga-0000-5e-00-0-region1']
    # Not in the conductor's [kubernetes]hosts: said on stderr.
    assert 'not published' in result.stderr


def test_json_is_the_same_list(cli):
    c.add_device('host1', regions=1)
    as_json = json.loads(cli('resource-slice', 'show', 'host1', '-o',
                             'json').stdout)
    as_yaml = list(yaml.safe_load_all(
        cli('resource-slice', 'show', 'host1').stdout))
    assert as_json == as_yaml and len(as_json) == 1


def test_unknown_host(cli):
    c.add_device('host1')
    b.one_line_error(cli('resource-slice', 'show', 'nohost'),
                     'No device of host nohost is known', 'HTTP 404')
