"""Deployables that reach one function: one accelerator to a scheduler.

A card whose regions all sit behind its physical function (no SR-IOV)
reports that PF as the attach handle of every region. Attaching it hands
the whole card, every region behind it, to one workload: such siblings
are one accelerator, whichever region a request names. So they are
offered through one resource provider (``carrier_rp_name``), and one of
them may be given to a tenant only while every sibling behind the
function is clean (inventory/views.unavailable_reasons).

A card whose regions each have their own function (SR-IOV VFs) may also
report its whole card: a deployable reached through its PF, carrying
``WHOLE_CARD_TRAIT``. The card and its regions are one choice: the card
holds every region, a region keeps the card. So they are offered through
the card's provider too (``offered_by_card``), whose FPGA inventory is
one slot per region: a region takes one slot, the whole card all of them
(placement/tree.py), and Placement itself never offers both.

Both the conductor's report (the rp_uuid it stores for each deployable)
and the provider tree (the provider it offers them through) use these
functions, so they agree and an unchanged report writes nothing.
"""

# The trait of a whole-card deployable, and of the request for one: a
# device profile group asks for a whole card with it required.
WHOLE_CARD_TRAIT = 'CUSTOM_FPGA_WHOLE_CARD'


# The attribute each region of a card offered whole carries (the card
# deployable's name): its bind knows to look at the card, with no query
# for any other region.
WHOLE_CARD_ATTRIBUTE = 'whole_card'


def is_whole_card(traits):
    """Whether a deployable of these traits is its card's whole card."""
    return WHOLE_CARD_TRAIT in traits


def offered_by_card(members):
    """Whether a device's deployables, ``members`` ((name, traits) each),
    are offered by the device's own provider as one choice: a whole card
    beside the regions it holds."""
    members = list(members)
    return len(members) > 1 and any(is_whole_card(traits)
                                    for _name, traits in members)
from cyborg_lite.common import canonical_json


def handle_key(attach_info):
    """The identity of a handle's function: equal keys, same function
    (the database's claims compare the same canonical text)."""
    return canonical_json.dumps(attach_info)


def groups(members):
    """The groups of deployables that reach a common function.

    ``members``: (name, handle keys) per deployable of one device. Returns
    {name: frozenset of names} for every deployable that shares a function
    with another, directly or through a third; one sharing nothing is
    left out.
    """
    parent = {}

    def root(name):
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    owner_of_key = {}
    for name, keys in members:
        parent.setdefault(name, name)
        for key in keys:
            other = owner_of_key.setdefault(key, name)
            parent[root(name)] = root(other)
    by_root = {}
    for name in parent:
        by_root.setdefault(root(name), set()).add(name)
    return {name: frozenset(group) for group in by_root.values()
            if len(group) > 1 for name in group}


def carrier_rp_name(device_rp_name, name, group, all_names):
    """The name of the provider that offers deployable ``name``.

    Alone, its own child provider ``<device RP>_<name>``. In a ``group``
    that is every deployable of the device (a card reached through its
    PF), the device's provider. In a group of only some of them, the
    child provider of the group's first name.
    """
    if not group:
        return '%s_%s' % (device_rp_name, name)
    if group == frozenset(all_names):
        return device_rp_name
    return '%s_%s' % (device_rp_name, min(group))
