"""common/policy finds the API's default rules through their entry point."""
from cyborg_lite.api import policies
from cyborg_lite.common import policy


def test_defaults_are_the_api_rules():
    assert [r.name for r in policy.default_rules()] == [
        r.name for r in policies.list_rules()]
    assert 'cyborg:arq:update' in {r.name for r in policy.default_rules()}
