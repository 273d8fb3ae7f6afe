"""Cluster configuration: parsed once, validated once, then frozen.

- :mod:`.model`: the typed, frozen model and its defaults (defined here only; ``cdk.json``
  holds what differs), one module per section (compute, FSx, capacity, EKS, HyperPod,
  standalone, training image, observability);
- :mod:`.loader`: the layers (defaults, ``cdk.json``, a profile, ``-c`` keys) merged;
- :mod:`.parse`: pydantic checks shape and types, then :data:`.rules.RULES` check the AWS
  rules that span fields (FSx capacity steps per deployment type, EFA needs, CIDR sizes, ...);
- :mod:`.rules`: one module per concern (stack name, compute, network, FSx, capacity,
  HyperPod, EKS, observability, standalone, tags);
- :mod:`.facts`: the AWS facts and limits the rules check, with their sources;
- :mod:`.errors`: every problem is a :class:`ConfigIssue` that names the field, the bad
  value, what it must be and where to read more; :func:`load_config` raises
  :class:`ConfigError` with all of them, before any construct is created.

Constructs never read context: they receive the frozen :class:`ClusterConfig`.
"""

from trn_ultracluster.config.errors import ConfigError, ConfigIssue
from trn_ultracluster.config.facts import region_of_az_id
from trn_ultracluster.config.loader import CONTEXT_KEY, PROFILE_CONTEXT_KEY, load_config
from trn_ultracluster.config.model import (
    CapacityConfig,
    ClusterConfig,
    DataRepositoryConfig,
    EksAddonVersionsConfig,
    EksConfig,
    FsxConfig,
    HyperPodConfig,
    HyperPodWorkerGroupConfig,
    LoadedConfig,
    NodeCounts,
    ObservabilityConfig,
    QuotasConfig,
    StandaloneConfig,
    TrainingImageConfig,
)
from trn_ultracluster.config.parse import parse_config

__all__ = [
    "CONTEXT_KEY",
    "PROFILE_CONTEXT_KEY",
    "CapacityConfig",
    "ClusterConfig",
    "ConfigError",
    "ConfigIssue",
    "DataRepositoryConfig",
    "EksAddonVersionsConfig",
    "EksConfig",
    "FsxConfig",
    "HyperPodConfig",
    "HyperPodWorkerGroupConfig",
    "LoadedConfig",
    "NodeCounts",
    "ObservabilityConfig",
    "QuotasConfig",
    "StandaloneConfig",
    "TrainingImageConfig",
    "load_config",
    "parse_config",
    "region_of_az_id",
]
