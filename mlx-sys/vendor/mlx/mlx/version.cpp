// Copyright © 2025 Apple Inc.

#include "mlx/version.h"

namespace mlx::core {

const char* version() {
  return MLX_VERSION;
}

} // namespace mlx::core
