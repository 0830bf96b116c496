"""common/topology: cpulists, the host's nodes, KEP-6072's list form."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import topology


def _nodes(rows, sockets):
    return [{'node': n, 'cpulist': '', 'socket': s, 'distances': row}
            for n, (row, s) in enumerate(zip(rows, sockets))]


def test_cpulists_as_the_kernel_prints_them():
    assert topology.parse_cpulist('0-3,8,10-11') == [0, 1, 2, 3, 8, 10, 11]
    assert topology.parse_cpulist('') == []
    for bad in ('3-0', '0-3,3', '0,,1', ' 0', '0-3\n', '70000', 7, None):
        with pytest.raises(exception.Invalid):
            topology.parse_cpulist(bad)


def test_same_distance_on_another_socket_is_left_out():
    """deviceattribute's own case: node 2 is as near as node 1 but on the
    other socket."""
    nodes = _nodes([[10, 12, 12, 20], [12, 10, 20, 12], [12, 20, 10, 12],
                    [20, 12, 12, 10]], [0, 0, 1, 1])
    assert topology.numa_node_list(0, nodes) == [0, 1]
    assert topology.numa_node_list(3, nodes) == [3, 2]


def test_an_unknown_socket_is_kept_and_an_unknown_node_stands_alone():
    nodes = _nodes([[12, 10, 12], [10, 12, 12], [12, 12, 10]],
                   [None, None, 0])
    nodes[0]['distances'], nodes[1]['distances'] = [10, 12, 12], \
        [12, 10, 12]
    assert topology.numa_node_list(1, nodes) == [1, 0, 2]
    assert topology.numa_node_list(7, nodes) == [7]
    assert topology.numa_node_list(0, []) == [0]


def test_rows_follow_the_online_nodes_not_their_numbers():
    nodes = [{'node': 0, 'cpulist': '0-3', 'socket': 0,
              'distances': [10, 12]},
             {'node': 2, 'cpulist': '4-7', 'socket': 0,
              'distances': [12, 10]}]
    assert topology.check_numa_nodes(nodes) == nodes
    assert topology.numa_node_list(2, nodes) == [2, 0]


@pytest.mark.parametrize('mutate', [
    lambda n: n[0].update(distances=[10]),
    lambda n: n[0].update(distances=[11, 21]),
    lambda n: n[1].update(node=0),
    lambda n: n[0].update(socket=-1),
    lambda n: n[0].update(cpulist='a'),
    lambda n: n[0].update(extra=1),
    lambda n: n[0].update(distances=[10, True]),
    lambda n: n[0].pop('socket'),
])
def test_host_nodes_are_checked_whole(mutate):
    nodes = _nodes([[10, 21], [21, 10]], [0, 1])
    topology.check_numa_nodes(nodes)
    mutate(nodes)
    with pytest.raises(exception.Invalid):
        topology.check_numa_nodes(nodes)
