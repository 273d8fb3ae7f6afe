"""The model and the data of train.py: a 3-layer perceptron and a synthetic classification set.

The MLP has the shape of the one in Neuron's "Multi-Layer Perceptron Training Tutorial"
(aws-neuron-samples, torch-neuronx/training/mnist_mlp/model.py: two hidden layers of 120 and
84 units, ReLU, log-softmax output for NLLLoss). The data replaces MNIST, which would need a
download: points in ``features`` dimensions labelled by a fixed random linear "teacher", a task
the MLP can learn in a few epochs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Input ``(batch, input_size)`` -> log-probabilities ``(batch, output_size)``."""

    def __init__(self, input_size=64, output_size=10, layers=(120, 84)):
        super().__init__()
        self.fc1 = nn.Linear(input_size, layers[0])
        self.fc2 = nn.Linear(layers[0], layers[1])
        self.fc3 = nn.Linear(layers[1], output_size)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(self.fc3(x), dim=1)


def synthetic_dataset(samples, features=64, classes=10, seed=0):
    """``samples`` points of ``features`` floats and their class (0..classes-1).

    The same ``seed`` gives the same data in every process, so each rank can build the whole
    set and a DistributedSampler hands each rank its share.
    """
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    teacher = torch.randn(features, classes, generator=gen)
    y = (x @ teacher).argmax(dim=1)
    return torch.utils.data.TensorDataset(x, y)
