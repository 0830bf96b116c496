"""A generated fleet for the explain tests and bench: plain specs (dicts)
of hosts, cards and regions with every cause of an empty answer present,
and the rows (placement/explain.Fleet) made from them.

Each region gets at most a few causes, drawn at random (seeded); some
region types exist only on regions that have one given transient cause,
so a profile asking for that type is blocked exactly there. Cards have
two regions, or one (about 40% of those without a rare type).
"""
import json
import random

from cyborg_lite.placement import explain

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
    # Some cards have one region: the funnel counts a card of one region
    # on a path of its own.
    alone = not rare and rng.random() < 0.4
    for index in range(1 if alone else 2):
        region_causes = set()
        if rare:
            region_causes.add(rare)
        elif rng.random() < 0.25:
            cause = rng.choice(TRANSIENT_CAUSES)
            region_causes.add('bound' if alone and cause == 'sibling_held'
                              else cause)
        region = _region_spec(
            rng, host, card, index,
            'rare_' + rare if rare else rng.choice(REGION_TYPES),
            region_causes)
        if rare:
            region['rc'] = 'FPGA'   # blocked by its cause, nothing else
        regions.append(region)
    # A card whose two regions share one PF: the sibling of a held
    # region is held with it, by that region's bind (bound: the PF's
    # holder in the database too).
    shared = any('sibling_held' in r['causes'] for r in regions)
    if shared:
        holder = next((r for r in regions
                       if 'sibling_held' not in r['causes']), regions[0])
        holder['causes'] = (holder['causes'] - {'sibling_held'}) | {
            'bound'}
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


def _handles(card, region, index, handle_id, number):
    """The region's attach handle, and whether a sibling holds it
    through the card's PF, or a Kubernetes claim: (HandleRow, blocked,
    k8s claim or None). Its own VF, or the card's PF shared with its
    sibling (then the held one is in use, the other blocked)."""
    causes = region['causes']
    bus = '%02x' % (0x5e + number)     # each card of a host its own
    if card['shared']:
        info = {'bus': bus, 'device': '00', 'function': '0'}
    else:
        info = {'bus': bus, 'device': '00', 'function': str(index + 1)}
    held = card['shared'] and 'sibling_held' in causes
    row = explain.HandleRow(handle_id, json.dumps(info),
                            not held and bool(causes & {'bound', 'k8s'}))
    return (row, held,
            'claim-' + region['uuid'] if 'k8s' in causes else None)


def _region_row(host, card, device_id, region, region_id):
    causes = region['causes']
    card_causes = card['causes'] | set().union(
        *(r['causes'] & {'maintaining'} for r in card['regions']))
    return explain.RegionRow(
        hostname=host['hostname'],
        agent_state='down' if host['agent_down'] else 'up',
        device_id=device_id, device_uuid=card['identity'],
        device_type='FPGA', vendor=card['vendor'],
        status='maintaining' if 'maintaining' in card_causes
        else 'enabled',
        device_health='unhealthy' if 'unhealthy' in card['causes']
        else 'healthy',
        device_numa_node=None, id=region_id, uuid=region['uuid'],
        name=region['name'], num_accelerators=1,
        region_type=region['region_type'],
        function_id=region['function_id'],
        local_memory_mb=region['memory'],
        device_state=next((s for s in ('pending_cleaning', 'cleaning',
                                       'error') if s in causes),
                          'available'),
        health=next((h for h in ('unhealthy', 'recovering')
                     if h in causes), 'healthy'),
        numa_node=region['numa'])


def fleet(spec):
    """The placement/explain.Fleet of ``spec``: the rows db/explain.py
    would read of it."""
    regions, attributes, handles, blocked, claims = [], {}, {}, {}, {}
    for host in spec:
        for number, card in enumerate(host['cards']):
            device_id = len(regions) + 1
            for index, region in enumerate(card['regions']):
                region_id = len(regions) + 1
                regions.append(_region_row(host, card, device_id, region,
                                           region_id))
                attributes[region_id] = {'rc': region['rc']}
                if region['trait']:
                    attributes[region_id]['trait0'] = region['trait']
                row, held, claim = _handles(card, region, index,
                                            region_id * 10, number)
                handles[region_id] = [row]
                if held:
                    blocked[row.id] = ('arq-sibling', 'sibling')
                if claim:
                    claims[row.id] = claim
    return explain.Fleet(regions, attributes, handles, blocked, claims,
                         tuple(h['hostname'] for h in spec))


def write(fleet_, conn):
    """Insert ``fleet_`` (a placement/explain.Fleet of ``fleet``) into
    the database of ``conn`` as the agents and the binds would have left
    it: a blocked handle's function held by its sibling's bound handle
    (``in_use_function``), a claim's handle in use."""
    import sqlalchemy as sa

    from cyborg_lite.db import attach_handles
    from cyborg_lite.db import models
    now = models.utcnow()
    rows = fleet_.regions
    agents = {r.hostname: r.agent_state for r in rows}
    conn.execute(sa.insert(models.Agent), [
        {'hostname': h, 'state': state, 'heartbeat_at': now,
         'created_at': now} for h, state in agents.items()])
    devices = {r.device_id: r for r in rows}
    conn.execute(sa.insert(models.Device), [{
        'id': r.device_id, 'uuid': r.device_uuid, 'type': r.device_type,
        'vendor': r.vendor, 'model': 'PAC', 'std_board_info': '{}',
        'hostname': r.hostname, 'driver_name': 'fake',
        'identity': r.device_uuid, 'status': r.status,
        'health': r.device_health, 'numa_node': r.device_numa_node,
        'version': 1, 'created_at': now} for r in devices.values()])
    conn.execute(sa.insert(models.Deployable), [{
        'id': r.id, 'uuid': r.uuid, 'device_id': r.device_id,
        'name': r.name, 'num_accelerators': r.num_accelerators,
        'driver_name': 'fake', 'region_type': r.region_type,
        'function_id': r.function_id, 'local_memory_mb': r.local_memory_mb,
        'device_state': r.device_state, 'health': r.health,
        'numa_node': r.numa_node, 'version': 1, 'created_at': now}
        for r in rows])
    conn.execute(sa.insert(models.Attribute), [
        {'uuid': '%d-%s' % (region_id, key), 'deployable_id': region_id,
         'key': key, 'value': value, 'created_at': now}
        for region_id, attrs in fleet_.attributes.items()
        for key, value in attrs.items()])
    host_of = {r.id: r.hostname for r in rows}
    conn.execute(sa.insert(models.AttachHandle), [{
        'id': h.id, 'uuid': 'handle-%d' % h.id, 'deployable_id': region_id,
        'in_use': bool(h.in_use), 'attach_type': 'PCI',
        'attach_info': h.attach_info, 'version': 1, 'created_at': now,
        'in_use_function': attach_handles.function_key(
            host_of[region_id], h.attach_info) if h.in_use else None}
        for region_id, handles in fleet_.handles.items() for h in handles])
    region_of = {h.id: region_id for region_id, handles
                 in fleet_.handles.items() for h in handles}
    if fleet_.k8s_claims:
        conn.execute(sa.insert(models.KubernetesClaimDevice), [{
            'uuid': uid, 'claim_uid': uid, 'namespace': 'ns',
            'claim_name': uid, 'device_name': 'fpga', 'project_id': 'p',
            'pods': 'pod', 'deployable_id': region_of[handle_id],
            'attach_handle_id': handle_id, 'created_at': now}
            for handle_id, uid in fleet_.k8s_claims.items()])


BITSTREAM = '0b5e0000-0000-4000-8000-000000000001'
IMAGES = {BITSTREAM: 'bb02'}
BASE = {'resources:FPGA': '1'}
# The request groups explained over the fleet: (group, bitstreams known
# {uuid: region type}, the step the oracle in test_explain.py must find
# blocking): every constraint of the funnel blocks one of them.
PROFILES = [
    ({'resources:PGPU': '1'}, None, 'resource_class'),
    (dict(BASE, **{'trait:CUSTOM_NOPE': 'required'}), None, 'traits'),
    (dict(BASE, **{'trait:CUSTOM_FPGA_REGION_CC03': 'required'}), None,
     'region_type'),
    (dict(BASE, **{'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': '65536'}), None,
     'local_memory'),
    (dict(BASE, **{'trait:CUSTOM_FUNCTION_ID_F999': 'required'}), None,
     'function'),
    (dict(BASE, **{'accel:bitstream_id': BITSTREAM,
                   'trait:CUSTOM_FPGA_REGION_AA01': 'required'}), IMAGES,
     'function'),
    (dict(BASE, **{'trait:CUSTOM_NUMA_NODE_7': 'required'}), None, 'numa'),
] + [
    (dict(BASE, **{'trait:CUSTOM_FPGA_REGION_RARE_%s' % cause.upper():
                   'required'}), None, step)
    for cause, step in (('unhealthy', 'health'), ('recovering', 'health'),
                        ('maintaining', 'maintenance'),
                        ('pending_cleaning', 'cleaning'),
                        ('cleaning', 'cleaning'), ('error', 'cleaning'),
                        ('agent_down', 'agent_down'), ('bound', 'in_use'),
                        ('k8s', 'in_use'), ('sibling_held', 'in_use'))
] + [
    # Answers with candidates, and a mixed one.
    (BASE, None, None),
    (dict(BASE, **{'trait:CUSTOM_FAST': 'required',
                   'trait:CUSTOM_SLOW': 'forbidden',
                   'trait:CUSTOM_FPGA_REGION_BB02': 'required',
                   'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': '4096',
                   'trait:CUSTOM_FUNCTION_ID_F001': 'required',
                   'accel:numa_affinity': 'required'}), None, None),
]
