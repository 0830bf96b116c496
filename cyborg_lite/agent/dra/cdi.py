"""One CDI spec file per prepared claim (Container Device Interface).

Layout from the CDI spec (cncf-tags/container-device-interface SPEC.md):
kind ``<driver>/claim``, one device ``<claim uid>-<device>`` per allocated
device, file ``<driver>-claim_<claim uid>.json`` in the dynamic spec
directory (the name GenerateTransientSpecName makes), written in Prepare
and removed in Unprepare, as Kubernetes' example DRA driver does. The
container runtime applies a device's edits when the kubelet passes its id
``<kind>=<name>``.

cdiVersion 0.5.0 is the oldest that has what we use (hostPath in
deviceNodes, device names that start with a digit), so older runtimes
read it too.
"""
import os

from cyborg_lite.agent.dra import files

CDI_VERSION = '0.5.0'
CLASS = 'claim'


def kind(driver_name):
    return '%s/%s' % (driver_name, CLASS)


def device_id(driver_name, claim_uid, device):
    return '%s=%s-%s' % (kind(driver_name), claim_uid, device)


def spec_path(cdi_dir, driver_name, claim_uid):
    return os.path.join(cdi_dir, '%s-%s_%s.json' % (driver_name, CLASS,
                                                     claim_uid))


def build_spec(driver_name, claim_uid, prepared):
    """The spec for one claim; ``prepared`` is [(device name,
    PreparedDevice)]."""
    devices = []
    for name, device in prepared:
        edits = {}
        if device.env:
            edits['env'] = ['%s=%s' % pair for pair in device.env]
        if device.device_nodes:
            edits['deviceNodes'] = [n.to_cdi() for n in device.device_nodes]
        devices.append({'name': '%s-%s' % (claim_uid, name),
                        'containerEdits': edits})
    return {'cdiVersion': CDI_VERSION, 'kind': kind(driver_name),
            'devices': devices}


def write_spec(cdi_dir, driver_name, claim_uid, prepared):
    path = spec_path(cdi_dir, driver_name, claim_uid)
    files.write_json_atomically(path, build_spec(driver_name, claim_uid,
                                                 prepared))
    return path


def remove_spec(cdi_dir, driver_name, claim_uid):
    return files.remove(spec_path(cdi_dir, driver_name, claim_uid))
