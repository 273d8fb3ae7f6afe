"""AWS facts and limits that the configuration rules check, each with its source, and the
documentation link every message points to, one module per concern: :mod:`.links`,
:mod:`.network`, :mod:`.fsx`, :mod:`.services` (HyperPod, EKS, Kubernetes),
:mod:`.neuron_stacks`, :mod:`.tags_alarms`. Every name is importable from this package.

Instance facts (NeuronCores, EFA cards, AZ IDs seen) live in
:mod:`trn_ultracluster.contracts.catalog`; the VPC address plan in
:mod:`trn_ultracluster.network_plan`.
"""

from trn_ultracluster.config.facts.fsx import *  # noqa: F403
from trn_ultracluster.config.facts.links import *  # noqa: F403
from trn_ultracluster.config.facts.network import *  # noqa: F403
from trn_ultracluster.config.facts.neuron_stacks import *  # noqa: F403
from trn_ultracluster.config.facts.services import *  # noqa: F403
from trn_ultracluster.config.facts.tags_alarms import *  # noqa: F403
