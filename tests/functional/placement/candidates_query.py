"""A device profile's groups as the query of Placement's
GET /allocation_candidates that a scheduler sends (granular request
groups, Placement 1.36): the scheduler's part, played by the tests.

Group i of the profile is request group ``_ACCEL<i>`` (``resources``
from ``resources:<RC>``, ``required`` from ``trait:<T>`` = required,
``!<T>`` for forbidden); the groups with ``accel:numa_affinity:
required`` share one NUMA node provider (cyborg_lite/placement/query.py).
"""
import os_traits

from cyborg_lite.placement import query

NUMA_GROUP = '_NUMA'


def group_suffix(index):
    """The request group suffix of the profile's group ``index`` (0-based)."""
    return '_ACCEL%d' % (index + 1)


def _prefixed(group, prefix):
    return sorted((key[len(prefix):].strip(), str(value).strip())
                  for key, value in group.items() if key.startswith(prefix))


def allocation_candidates_query(groups, in_tree=None):
    """[(parameter, value)] of GET /allocation_candidates for a device
    profile's ``groups`` (as the API stores them: string values); with
    ``in_tree``, every group within that provider's tree (one host)."""
    params, aligned = [], []
    for index, group in enumerate(groups):
        suffix = group_suffix(index)
        if in_tree:
            params.append(('in_tree' + suffix, in_tree))
        resources = ['%s:%s' % item for item in _prefixed(group,
                                                         'resources:')]
        traits = [name if how == 'required' else '!' + name
                  for name, how in _prefixed(group, 'trait:')]
        params.append(('resources' + suffix, ','.join(resources)))
        if traits:
            params.append(('required' + suffix, ','.join(traits)))
        if group.get(query.NUMA_AFFINITY_KEY) == 'required':
            aligned.append(suffix)
    if aligned:
        params.append(('required' + NUMA_GROUP, os_traits.HW_NUMA_ROOT))
        if in_tree:
            params.append(('in_tree' + NUMA_GROUP, in_tree))
        params.append(('same_subtree', ','.join([NUMA_GROUP] + aligned)))
    if len(groups) + bool(aligned) > 1:
        params.append(('group_policy', 'none'))
    return params
