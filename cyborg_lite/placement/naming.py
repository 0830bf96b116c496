"""Names and uuids of resource providers, shared by the conductor's report,
its Placement sync and the bind workflow so all three agree. (A
deployable's name in the database is common/device_records.py's.)

The Placement model of docs/architecture.md: the device RP is
``<host>_<pci address>`` (``<host>_<identity>`` for non-PCI devices) and
each region RP is
``<device rp name>_<deployable name>``. A whole-GPU deployable (resource
class PGPU) is the device RP itself. RP uuids are uuid3(NAMESPACE_DNS, name)
as Cyborg makes them, so a re-created provider keeps its uuid.
"""
import hashlib
import uuid

from cyborg_lite.common import resources


def device_rp_name(hostname, identity):
    return '%s_%s' % (hostname, identity)


def numa_rp_name(hostname, node):
    """The NUMA node provider between the compute node and the devices
    of that node (ours: Nova makes none)."""
    return '%s_numa%d' % (hostname, node)


def deployable_rp_name(hostname, identity, deployable_name,
                       resource_class=None):
    if resource_class in resources.WHOLE_DEVICE_RESOURCE_CLASSES:
        return device_rp_name(hostname, identity)
    return '%s_%s' % (device_rp_name(hostname, identity), deployable_name)


_DNS_NAMESPACE = uuid.NAMESPACE_DNS.bytes


def rp_uuid(rp_name):
    """str(uuid.uuid3(uuid.NAMESPACE_DNS, rp_name)), computed without the
    UUID object: every publish names each provider of its host twice, and
    the object was two thirds of the cost."""
    digest = bytearray(hashlib.md5(_DNS_NAMESPACE + rp_name.encode(),
                                   usedforsecurity=False).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30   # version 3
    digest[8] = (digest[8] & 0x3F) | 0x80   # RFC 4122 variant
    h = digest.hex()
    return '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
