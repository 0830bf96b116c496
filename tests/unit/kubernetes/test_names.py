"""Kubernetes name rules and stable DNS-label names."""
import pytest

from cyborg_lite.kubernetes import names as k8s_names


@pytest.mark.parametrize('value,ok', [
    ('a', True), ('fpga-0000-5e-00-0-region0', True), ('0abc', True),
    ('a' * 63, True), ('a' * 64, False), ('-a', False), ('a-', False),
    ('A', False), ('a.b', False), ('', False), ('a\n', False), (3, False),
])
def test_dns_label(value, ok):
    assert k8s_names.is_dns_label(value) is ok


@pytest.mark.parametrize('value,ok', [
    ('cyborg-lite.openstack.org', True), ('a.b.c', True), ('a..b', False),
    ('.a', False), ('a.', False), ('a' * 253, True), ('a' * 254, False),
    ('Node-1', False), ('node-1\n', False),
])
def test_dns_subdomain(value, ok):
    assert k8s_names.is_dns_subdomain(value) is ok


@pytest.mark.parametrize('value,ok', [
    ('regionType', True), ('resource.kubernetes.io/pciBusID', True),
    ('_x', True), ('a' * 32, True), ('a' * 33, False), ('1abc', False),
    ('a-b', False), ('Bad.Domain/x', False), ('d.io/', False),
    ('%s/x' % ('a' * 64), False), ('a/b/c', False),
])
def test_qualified_name(value, ok):
    assert k8s_names.is_qualified_name(value) is ok


@pytest.mark.parametrize('value,ok', [
    ('cyborg-lite.openstack.org/in-use', True), ('unhealthy', True),
    ('x/-a', False), ('x/' + 'a' * 64, False), ('Bad_Prefix/x', False),
])
def test_label_key(value, ok):
    assert k8s_names.is_label_key(value) is ok


def test_label_value():
    assert k8s_names.is_label_value('')
    assert k8s_names.is_label_value('nova')
    assert not k8s_names.is_label_value('-nova')
    assert not k8s_names.is_label_value('a' * 64)


def test_pci_address_reads_plainly_and_is_stable():
    name = k8s_names.dns_label('fpga', '0000:5e:00.0', 'region0')
    assert name == 'fpga-0000-5e-00-0-region0'
    assert k8s_names.dns_label('fpga', '0000:5e:00.0', 'region0') == name


def test_lossy_or_long_names_are_hashed_and_distinct():
    upper = k8s_names.dns_label('pci', 'Card/A')
    lower = k8s_names.dns_label('pci', 'card-a')
    assert lower == 'pci-card-a'
    assert upper != lower and upper.startswith('pci-card-a-')
    long_a = k8s_names.dns_label('x' * 80, 'a')
    long_b = k8s_names.dns_label('x' * 80, 'b')
    for name in (upper, long_a, long_b):
        assert k8s_names.is_dns_label(name)
    assert long_a != long_b
    assert k8s_names.dns_label('a', hashed=True) != 'a'
    assert k8s_names.is_dns_label(k8s_names.dns_label('***'))


def test_dns_label_refuses_empty_parts():
    with pytest.raises(ValueError):
        k8s_names.dns_label('a', '')


def test_object_name_is_cut_and_hashed_when_too_long():
    assert k8s_names.dns_subdomain_name('n', 'd.io', '0') == 'n-d.io-0'
    long_node = 'n' * 250
    name = k8s_names.dns_subdomain_name(long_node, 'd.io', '0')
    assert k8s_names.is_dns_subdomain(name)
    assert name != k8s_names.dns_subdomain_name(long_node, 'd.io', '1')
