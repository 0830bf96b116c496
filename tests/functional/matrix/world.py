"""Hosts on the real services, in this process, where features meet.

The all-in-one's parts, each the real one: the API served over HTTP
(cheroot), the ConductorService publishing to the real Placement (the
session's, tests/functional/conftest.py) and to the kube-apiserver
stand-in (strict schemas), and per host an AgentManager with the fake
driver that serves the kubelet's DRA plugin on real unix sockets, which
a test client plays the kubelet on. Notifications go out through
oslo.messaging's Notifier (messagingv2) on ``inproc://`` to a
notification listener, as one on RabbitMQ hears them.

``Services`` (the API, the conductor, the database, the apiserver
stand-in, the listener) live for all the matrix tests; each test gets a
``Host`` of its own (its own name, agent, fake cards, providers and
slices), so tests never see each other's devices.

The test drives it as its users do: Nova (tests/functional/nova_order.py,
its scheduler kept to this host's tree: the session's Placement is
shared), libvirt (the fake host's vfio-pci action on the bound
function, drivers/fake_host.py), a kubelet, an operator over the API,
the hardware through the fake driver's files; the driver's cleans and
loads can be held half way (held.py). The agent scans when the test says
(``scan``), and once after each job or clean it ran (its report of what
the work left): ``settle()`` waits for those, so that a fault written
after it is read only by the scans the test asks for.

What it shows are the views every scenario checks:
``offers()`` (Placement: allocation candidates and reserved
inventories), ``slices()`` (the ResourceSlices' devices and their
taints), ``history(device)`` (GET /v2/devices/{uuid}/history) and
``heard_since(mark)`` (the notifications, each checked against its
schema: heard.py).

The world's parts, each a module of its own: services.py (the services
the hosts share), host.py (one host: its agent, kubelet and API reads),
nova.py (Nova and libvirt), kube.py (the Kubernetes claims and the
kubelet), programs.py (bitstreams, keys and program jobs), views.py
(Placement, the slices, the history and the notifications) and cards.py
(the fake driver's cards). The names the tests use are here.
"""
from tests.functional.matrix.cards import FIRST_FUNCTION
from tests.functional.matrix.cards import MEMORY_MB
from tests.functional.matrix.cards import REGION_TRAIT
from tests.functional.matrix.cards import REGION_TYPE
from tests.functional.matrix.host import Host
from tests.functional.matrix.nova import handle_address
from tests.functional.matrix.nova import NovaOnThisHost
from tests.functional.matrix.programs import new_image
from tests.functional.matrix.services import LATEST
from tests.functional.matrix.services import OPERATOR
from tests.functional.matrix.services import Services
from tests.functional.matrix.views import WIPE

__all__ = ['FIRST_FUNCTION', 'Host', 'LATEST', 'MEMORY_MB', 'NovaOnThisHost',
           'OPERATOR', 'REGION_TRAIT', 'REGION_TYPE', 'Services', 'WIPE',
           'handle_address', 'new_image']
