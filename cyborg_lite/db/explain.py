"""What a device profile explain reads (api/handlers/device_profiles.py):
the profile, the images its groups name, the hosts' inventories and who
holds what, in one read transaction that sees one moment of the
database (session.snapshot_reader). The fleet is plain tuples of the
columns the funnel asks, one statement per table (db/devices.fleet_rows),
not host views. Each table is read by its own home (db/device_profiles,
db/bitstreams, db/devices); the funnel itself is placement/explain.py,
pure.

Every region is read, not only those a profile's groups could reach: a
region failing only its resource class or region type is a near miss the
answer names, and the groups of a served profile reach every region
anyway (docs/benchmarks-history.md section 12)."""
import collections

from cyborg_lite.common import collector
from cyborg_lite.db import bitstreams
from cyborg_lite.db import device_profiles
from cyborg_lite.db import devices
from cyborg_lite.db.sql import session

Snapshot = collections.namedtuple(
    'Snapshot', ['profile', 'groups', 'fleet', 'holders',
                 'bitstream_region_types', 'function_region_types'])


@collector.held_off
def snapshot(visible_to, name, hostname=None):
    """The Snapshot for profile ``name`` (as the caller may see it;
    DeviceProfileNotFound otherwise) over every host, or ``hostname``."""
    with session.snapshot_reader() as s:
        profile = device_profiles.find(s.connection(), visible_to, name=name)
        groups = device_profiles.groups_of(profile)
        region_types, functions = bitstreams.images_of(
            s, {g['accel:bitstream_id'].strip().lower() for g in groups
                if g.get('accel:bitstream_id')},
            {g['accel:function_id'].strip() for g in groups
             if g.get('accel:function_id')}, profile.project_id)
        return Snapshot(profile, groups,
                        devices.fleet_rows(s, hostname),
                        devices.holders(s, hostname), region_types,
                        functions)
