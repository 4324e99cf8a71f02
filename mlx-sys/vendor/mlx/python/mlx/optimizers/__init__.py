# Copyright © 2023-2024 Apple Inc.

from mlx.optimizers.optimizers import *
from mlx.optimizers.schedulers import *
