# Copyright © 2023 Apple Inc.

from mlx.nn import init, losses
from mlx.nn.layers import *
from mlx.nn.utils import (
    average_gradients,
    value_and_grad,
)
