"""A generated fleet for the explain tests and bench: plain specs (dicts)
of hosts, cards and regions with every cause of an empty answer present,
and the inventories (inventory/views) made from them.

Each region gets at most a few causes, drawn at random (seeded); some
region types exist only on regions that have one given transient cause,
so a profile asking for that type is blocked exactly there.
"""
import random

from cyborg_lite.inventory import views

TRANSIENT_CAUSES = ('unhealthy', 'recovering', 'maintaining',
                    'pending_cleaning', 'cleaning', 'error', 'agent_down',
                    'bound', 'k8s', 'sibling_held')
REGION_TYPES = ('aa01', 'bb02')
FUNCTIONS = ('f001', 'f002', None)
TRAITS = ('CUSTOM_FAST', 'CUSTOM_SLOW', None)


def _region_spec(rng, host, card, index, region_type, causes):
    return {'name': '%s_card%d_region%d' % (host, card, index),
            'uuid': '%s-c%d-r%d' % (host, card, index),
            'rc': rng.choice(('FPGA', 'FPGA', 'FPGA', 'CUSTOM_NIC')),
            'region_type': region_type,
            'function_id': rng.choice(FUNCTIONS),
            'memory': rng.choice((2048, 4096, 8192)),
            'trait': rng.choice(TRAITS),
            'numa': rng.choice((0, 1, None)),
            'causes': set(causes)}


def _card_spec(rng, host, card, rare):
    causes = set()
    if not rare and rng.random() < 0.05:
        causes.add('maintaining')
    if not rare and rng.random() < 0.03:
        causes.add('unhealthy')
    regions = []
    for index in range(2):
        region_causes = set()
        if rare:
            region_causes.add(rare)
        elif rng.random() < 0.25:
            region_causes.add(rng.choice(TRANSIENT_CAUSES))
        region = _region_spec(
            rng, host, card, index,
            'rare_' + rare if rare else rng.choice(REGION_TYPES),
            region_causes)
        if rare:
            region['rc'] = 'FPGA'   # blocked by its cause, nothing else
        regions.append(region)
    # A card whose two regions share one PF: the sibling of a held
    # region is held with it.
    shared = any('sibling_held' in r['causes'] for r in regions)
    return {'identity': '%s-card%d' % (host, card),
            'vendor': rng.choice(('0x8086', '0x8086', '0x10ee')),
            'causes': causes, 'regions': regions, 'shared': shared}


def fleet_spec(hosts=1000, seed=44):
    """[{hostname, agent_down, cards: [card spec]}]; the rare region types
    (one per transient cause) live on the first hosts."""
    rng = random.Random(seed)
    spec = []
    for number in range(hosts):
        host = 'host%04d' % number
        rare = TRANSIENT_CAUSES[number] if number < len(TRANSIENT_CAUSES) \
            else None
        spec.append({'hostname': host,
                     'agent_down': rare == 'agent_down' or
                     (rare is None and rng.random() < 0.02),
                     'cards': [_card_spec(rng, host, card,
                                          rare if card == 0 else None)
                               for card in range(2)]})
    return spec


def _handles(card, region, index):
    """The region's attach handles: its own VF, or the card's PF shared
    with its sibling (then the held one is in use, the other held_by)."""
    causes = region['causes']
    in_use = bool(causes & {'bound', 'k8s'})
    if card['shared']:
        info = {'bus': '5e', 'device': '00', 'function': '0'}
        if 'sibling_held' in causes:
            return (views.AttachHandleView(
                uuid=region['uuid'] + '-h', attach_type='PCI',
                attach_info=info, in_use=False,
                held_by=('arq-sibling', 'sibling')),)
    else:
        info = {'bus': '5e', 'device': '00', 'function': str(index + 1)}
    return (views.AttachHandleView(
        uuid=region['uuid'] + '-h', attach_type='PCI', attach_info=info,
        in_use=in_use,
        k8s_claim='claim-' + region['uuid'] if 'k8s' in causes else None),)


def _region_view(card, region, index):
    causes = region['causes']
    health = next((h for h in ('unhealthy', 'recovering') if h in causes),
                  'healthy')
    state = next((s for s in ('pending_cleaning', 'cleaning', 'error')
                  if s in causes), 'available')
    return views.DeployableView(
        uuid=region['uuid'], name=region['name'],
        resource_class=region['rc'], region_type=region['region_type'],
        function_id=region['function_id'],
        local_memory_mb=region['memory'],
        traits=(region['trait'],) if region['trait'] else (),
        attach_handles=_handles(card, region, index), device_state=state,
        numa_node=region['numa'], health=health)


def inventories(spec):
    """The inventory/views.HostInventory of each host of ``spec``."""
    result = []
    for host in spec:
        devices = []
        for card in host['cards']:
            causes = card['causes'] | set().union(
                *(r['causes'] & {'maintaining'} for r in card['regions']))
            devices.append(views.DeviceView(
                uuid=card['identity'], type='FPGA', vendor=card['vendor'],
                identity=card['identity'],
                health='unhealthy' if 'unhealthy' in card['causes']
                else 'healthy',
                status='maintaining' if 'maintaining' in causes
                else 'enabled',
                agent_down=host['agent_down'],
                deployables=tuple(_region_view(card, r, i)
                                  for i, r in enumerate(card['regions']))))
        result.append(views.HostInventory(host['hostname'], tuple(devices)))
    return result
