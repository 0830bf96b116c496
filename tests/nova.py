"""Nova's own code, run in a Python that has nova installed.

CYBORG_LITE_NOVA_PYTHON names that Python (.ci/run makes a venv with
``pip install nova==34.*`` and sets it). Without it a test is skipped on a
developer's machine, and fails under CI=true: CI must run Nova's code,
not only the copies of it in the tests.
"""
import json
import subprocess

from tests import servers

ENV = 'CYBORG_LITE_NOVA_PYTHON'


def python():
    """The path of a Python with nova, or skip (fail under CI)."""
    return servers.require_python(ENV, (
        'set %s to a Python with nova installed (python3 -m venv V && '
        'V/bin/pip install "nova==34.*"; .ci/run does) to run Nova\'s own '
        'code' % ENV))


def run(script, payload):
    """Run ``script`` in Nova's Python with ``payload`` as JSON on stdin;
    the JSON its last line of output holds."""
    result = subprocess.run([python(), '-W', 'ignore', '-c', script],
                            input=json.dumps(payload), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# Nova's translation of a device profile (the first of a GET
# /device_profiles?name= answer, on stdin) into its request groups.
REQUEST_GROUPS = '''
import json, sys
from nova import objects
objects.register_all()
from nova.accelerator import cyborg
profiles = json.load(sys.stdin)
groups = profiles[0]['groups']   # get_device_profile_groups: exactly one
groups_rgs = cyborg._CyborgClient.get_device_request_groups(
    None, groups, owner='port-1')
print(json.dumps({
    'devices': cyborg.get_device_amount_of_dp_groups(groups),
    'groups': [{'requester_id': rg.requester_id,
                'resources': rg.resources,
                'required': sorted(rg.required_traits),
                'forbidden': sorted(rg.forbidden_traits)}
               for rg in groups_rgs]}))
'''
