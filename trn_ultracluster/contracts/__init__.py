"""Contracts: what the stack, the job CLI, the lifecycle scripts and the training image
agree on, each defined once.

Standard library only: the training image ships this package (``training/Dockerfile``), and
the HyperPod lifecycle bucket carries it beside the lifecycle scripts, which read it instead
of copies.

- :mod:`.catalog`: Trainium instance types (NeuronCores, EFA network cards, peak FLOPS).
- :mod:`.outputs`: the stack output keys and the ``none`` sentinel.
- :mod:`.shared_storage`: the layout of the shared file system.
- :mod:`.neuron_env`: the Neuron/EFA environment of training processes.
- :mod:`.recipes`: the training recipes.
- :mod:`.hyperpod`: instance group names and the job environment's ``TRN_*`` variables.
"""
