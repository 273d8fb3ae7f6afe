"""trn_train: the TrnUltraCluster training program.

Runs on NeuronCores through torch-neuronx (PyTorch/XLA) inside the training container, and
unchanged on CPU (plain PyTorch, gloo) and XLA:CPU (``PJRT_DEVICE=CPU``) for tests.

Entry point: ``python -m trn_train {train-tokenizer,prepare-data,train,nxd-config,recipes} --help``.
"""

__version__ = "0.1.0"
