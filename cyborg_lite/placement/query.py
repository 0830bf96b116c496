"""The device profile key that asks Placement for NUMA alignment.

A group with ``accel:numa_affinity: required`` must sit on one NUMA node:
a scheduler's GET /allocation_candidates adds a group with no resources,
``required_NUMA=HW_NUMA_ROOT``, and ``same_subtree=_NUMA,_ACCEL<i>,...``
(granular request groups, Placement 1.36), so the only candidates
Placement returns have one NUMA node provider above all of them (the
NUMA layer of placement/tree.py). A profile that names a node asks
``trait:CUSTOM_NUMA_NODE_<n>: required`` in each group instead, which
Nova's own translation of a profile already sends. (The tests' scheduler
stand-in builds that query: tests/functional/placement/candidates_query.py.)
"""

NUMA_AFFINITY_KEY = 'accel:numa_affinity'
NUMA_AFFINITY_VALUES = ('required',)
