// Copyright © 2025 Apple Inc.

#include "mlx/backend/cuda/binary/binary.cuh"

namespace mlx::core {
BINARY_GPU(Remainder)
} // namespace mlx::core
