# Copyright © 2023 Apple Inc.

import mlx.core as mx

from ._ext import axpby
