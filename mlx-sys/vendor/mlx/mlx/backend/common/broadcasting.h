// Copyright © 2024 Apple Inc.

#pragma once

#include "mlx/array.h"

namespace mlx::core {

void broadcast(const array& in, array& out);

} // namespace mlx::core
