"""MIG profiles, their placements on a GPU's memory slices, and what a
GPU can still make. Pure: text in, values out.

A MIG GPU has a row of memory slices (8 on A100 and H100); a GPU
instance of a profile takes ``size`` consecutive slices starting at one
of the profile's allowed starts. What the driver allows is read from
``nvidia-smi mig -lgipp`` (one line a profile; "Placement :" when there
is one start)::

    GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
    GPU  0 Profile ID  5 Placement : {0}:4

and the profiles' names and sizes from ``nvidia-smi mig -lgip`` (a table
whose rows are ``|   0  MIG 1g.5gb     19     7/7        4.75       No
14     0     0   |``, some drivers with a second row of CE/JPEG/OFA
counts). Which slices are taken is read from ``nvidia-smi mig -lgi``
(``Start:Size`` of each GPU instance). The counters a Kubernetes
partitionable device consumes are named as NVIDIA's DRA driver names
them: ``memory-slice-<i>``, one per slice, so a counter's index is the
placement.
"""
import collections
import re

from cyborg_lite.common import exception
from cyborg_lite.common import mig_placements

Profile = collections.namedtuple(
    'Profile', 'id name size starts memory_gib multiprocessors total')
Instance = collections.namedtuple('Instance', 'gi_id profile_id start size')

_LGIP_ROW = re.compile(
    r'\|\s+([0-9]+)\s+MIG\s+(\S+)\s+([0-9]+)\s+([0-9]+)/([0-9]+)\s+'
    r'([0-9]+(?:\.[0-9]+)?)\s+(?:Yes|No)\s+([0-9]+)\s+[0-9]+\s+[0-9]+\s+\|')
_LGIPP_LINE = re.compile(
    r'GPU\s+([0-9]+)\s+Profile ID\s+([0-9]+)\s+Placements?\s*:\s*'
    r'\{([0-9]+(?:,[0-9]+)*)\}:([0-9]+)')
_LGI_ROW = re.compile(
    r'\|\s+[0-9]+\s+MIG\s+\S+\s+([0-9]+)\s+([0-9]+)\s+([0-9]+):([0-9]+)'
    r'\s+\|')
MAX_SLICES = 32             # a counter set holds at most 32 counters


def _lines(output):
    if isinstance(output, bytes):
        output = output.decode('utf-8', 'replace')
    return [line.strip() for line in output.splitlines()]


def parse_lgip(output):
    """{profile id: (name, memory GiB, multiprocessors, total)} of GPU
    0's ``nvidia-smi mig -lgip -i <gpu>`` table (total: the most
    instances of the profile a GPU holds, 1 for a ``+me`` profile whose
    media engines are the GPU's only ones)."""
    rows = {}
    for line in _lines(output):
        match = _LGIP_ROW.fullmatch(line)
        if match:
            rows[int(match.group(3))] = (match.group(2),
                                         float(match.group(6)),
                                         int(match.group(7)),
                                         int(match.group(5)))
    if not rows:
        raise exception.HostDataError(where='nvidia-smi mig -lgip',
                                      reason='no profile rows')
    return rows


def parse_lgipp(output):
    """{profile id: (starts, size)} from ``nvidia-smi mig -lgipp``."""
    placements = {}
    for line in _lines(output):
        if not line:
            continue
        match = _LGIPP_LINE.fullmatch(line)
        if not match:
            raise exception.HostDataError(
                where='nvidia-smi mig -lgipp',
                reason='unexpected line %r' % line[:80])
        starts = tuple(int(s) for s in match.group(3).split(','))
        placements[int(match.group(2))] = (starts, int(match.group(4)))
    if not placements:
        raise exception.HostDataError(where='nvidia-smi mig -lgipp',
                                      reason='no placements')
    return placements


def profiles(lgip_output, lgipp_output):
    """The profiles a GPU offers, smallest first (by slices, then by
    the most starts): each with its allowed starts."""
    named = parse_lgip(lgip_output)
    out = []
    for pid, (starts, size) in parse_lgipp(lgipp_output).items():
        if pid not in named:
            raise exception.HostDataError(
                where='nvidia-smi mig -lgipp',
                reason='profile %d is not in -lgip' % pid)
        name, gib, sms, total = named[pid]
        out.append(Profile(pid, name, size, starts, gib, sms, total))
    return sorted(out, key=lambda p: (p.size, -len(p.starts), p.id))


def slice_count(gpu_profiles):
    """How many memory slices the GPU has: the end of the widest
    placement (8 on A100 and H100)."""
    count = max(s + p.size for p in gpu_profiles for s in p.starts)
    if count > MAX_SLICES:
        raise exception.HostDataError(
            where='nvidia-smi mig -lgipp',
            reason='%d memory slices, more than %d' % (count, MAX_SLICES))
    return count


def parse_lgi(output):
    """The GPU instances of ``nvidia-smi mig -lgi -i <gpu>``."""
    out = []
    for line in _lines(output):
        match = _LGI_ROW.fullmatch(line)
        if match:
            pid, gi_id, start, size = (int(g) for g in match.groups())
            out.append(Instance(gi_id, pid, start, size))
    return out


def free_slices(count, instances):
    """The memory slices no GPU instance takes."""
    taken = set()
    for instance in instances:
        taken |= mig_placements.slices(instance.start, instance.size)
    return frozenset(range(count)) - taken


def valid_starts(profile, free):
    """The starts of ``profile`` whose slices are all free."""
    return mig_placements.fitting(profile.size, profile.starts, free)


def makeable(profile, free, made=0):
    """How many instances of ``profile`` could still be made side by
    side on ``free``, ``made`` of them being there: what ``-lgip``
    shows as Free (starts of one size taken in order pack the most, as
    the earliest end does; never more than the profile's total)."""
    count = 0
    for start in profile.starts:
        taken = mig_placements.slices(start, profile.size)
        if taken <= free:
            free, count = free - taken, count + 1
    return max(0, min(count, profile.total - made))


def counter_names(start, size):
    """The ``memory-slice-<i>`` counters a placement consumes."""
    return ['memory-slice-%d' % i for i in range(start, start + size)]
