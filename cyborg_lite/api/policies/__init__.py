"""Policy defaults in code, one module per resource.

``list_rules`` is the ``oslo.policy.policies`` entry point (namespace
``cyborg_lite``) from which etc/policy.yaml.sample is generated. A new
resource adds its module here.
"""
import itertools

from cyborg_lite.api.policies import accelerator_requests
from cyborg_lite.api.policies import attributes
from cyborg_lite.api.policies import base
from cyborg_lite.api.policies import bitstreams
from cyborg_lite.api.policies import deployables
from cyborg_lite.api.policies import device_profiles
from cyborg_lite.api.policies import devices
from cyborg_lite.api.policies import metrics
from cyborg_lite.api.policies import programs
from cyborg_lite.api.policies import provider_trees
from cyborg_lite.api.policies import resource_slices
from cyborg_lite.api.policies import services
from cyborg_lite.api.policies import trusted_keys


def list_rules():
    return list(itertools.chain(
        base.list_rules(),
        devices.list_rules(),
        deployables.list_rules(),
        attributes.list_rules(),
        device_profiles.list_rules(),
        accelerator_requests.list_rules(),
        bitstreams.list_rules(),
        programs.list_rules(),
        provider_trees.list_rules(),
        resource_slices.list_rules(),
        trusted_keys.list_rules(),
        metrics.list_rules(),
        services.list_rules(),
    ))
