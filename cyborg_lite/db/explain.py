"""What a device profile explain reads (api/handlers/device_profiles.py):
the profile, the images its groups name, the hosts' inventories and who
holds what, in one read transaction that sees one moment of the
database (session.snapshot_reader). Each table is read by its own home
(db/device_profiles, db/bitstreams, db/devices, db/fleet_kinds); the
funnel itself is placement/explain.py, pure.

The fleet comes grouped: the regions of one-region devices as kinds
counted by the database (db/fleet_kinds.rows, a few dozen rows for
thousands of regions), the devices of several regions region by region
(db/devices.fleet_rows). Single regions are read again only for the
hosts the answer shows (``rows_of``: the first near misses and holders
in the fleet's order), in the same transaction: the funnel runs in it
(``then``). Every region is counted, not only those a profile's groups
could reach: a region failing only its resource class or region type is
a near miss the answer names (docs/benchmarks-history.md sections 12,
13)."""
import collections
import functools

from cyborg_lite.common import collector
from cyborg_lite.db import bitstreams
from cyborg_lite.db import device_profiles
from cyborg_lite.db import devices
from cyborg_lite.db import fleet_kinds
from cyborg_lite.db.sql import session

Snapshot = collections.namedtuple(
    'Snapshot', ['profile', 'groups', 'fleet', 'bitstream_region_types',
                 'function_region_types'])


def _hosts_shown(s, hostnames, holders):
    """(FleetRows, holders or {} when not ``holders``) of every device of
    ``hostnames``, region by region, read in ``s``'s transaction."""
    where = devices.DEVICE.hostname.in_(sorted(hostnames))
    return (devices.fleet_rows(s, where),
            devices.holders(s, where) if holders else {})


def _fleet(s, hostname):
    where = devices.DEVICE.id.in_(fleet_kinds.MULTI_REGION)
    if hostname is not None:
        where = where & (devices.DEVICE.hostname == hostname)
    several = devices.fleet_rows(s, where)
    return several._replace(
        hostnames=fleet_kinds.hostnames(s, hostname),
        kind_rows=fleet_kinds.rows(s, hostname),
        rows_of=functools.partial(_hosts_shown, s))


@collector.held_off
def snapshot(visible_to, name, hostname, then):
    """``then(Snapshot)`` for profile ``name`` (as the caller may see it;
    DeviceProfileNotFound otherwise) over every host, or ``hostname``,
    called in the read transaction (the fleet's ``rows_of`` reads in
    it)."""
    with session.snapshot_reader() as s:
        profile = device_profiles.find(s.connection(), visible_to, name=name)
        groups = device_profiles.groups_of(profile)
        region_types, functions = bitstreams.images_of(
            s, {g['accel:bitstream_id'].strip().lower() for g in groups
                if g.get('accel:bitstream_id')},
            {g['accel:function_id'].strip() for g in groups
             if g.get('accel:function_id')}, profile.project_id)
        return then(Snapshot(profile, groups, _fleet(s, hostname),
                             region_types, functions))
