#!/usr/bin/env python3
"""Golden data for mlx_rs::random: every sampler with explicit keys (results must match
bit for bit). Writes tests/data/random.json."""
import mlx.core as mx

from common import record, write

k = mx.random.key(7)
logits = mx.log(mx.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))


def cases():
    out = {}
    out["split_default"] = record(mx.random.split(k))
    out["split_5"] = record(mx.random.split(k, 5))
    out["bernoulli_default"] = record(mx.random.bernoulli(key=k))
    out["bernoulli_p_shape"] = record(mx.random.bernoulli(0.3, (4, 5), key=k))
    p = mx.array([0.1, 0.5, 0.9])
    out["bernoulli_p_array"] = record(mx.random.bernoulli(p, key=k))
    out["bernoulli_p_array_shape"] = record(mx.random.bernoulli(p, (2, 3), key=k))
    out["categorical"] = record(mx.random.categorical(logits, key=k))
    out["categorical_axis0"] = record(mx.random.categorical(logits, axis=0, key=k))
    out["categorical_shape"] = record(mx.random.categorical(logits, shape=(4, 2), key=k))
    out["categorical_num_samples"] = record(mx.random.categorical(logits, num_samples=6, key=k))
    out["gumbel"] = record(mx.random.gumbel((3, 4), key=k))
    out["gumbel_f16"] = record(mx.random.gumbel((5,), dtype=mx.float16, key=k))
    out["laplace"] = record(mx.random.laplace((3, 4), key=k))
    out["laplace_loc_scale"] = record(mx.random.laplace((6,), loc=1.5, scale=0.25, key=k))
    out["laplace_bf16"] = record(mx.random.laplace((6,), dtype=mx.bfloat16, key=k))
    mean = mx.array([1.0, -1.0])
    cov = mx.array([[1.0, 0.5], [0.5, 2.0]])
    out["multivariate_normal"] = record(mx.random.multivariate_normal(mean, cov, (3,), key=k, stream=mx.cpu))
    out["permutation_int"] = record(mx.random.permutation(10, key=k))
    x = mx.arange(12).reshape(3, 4)
    out["permutation_array"] = record(mx.random.permutation(x, key=k))
    out["permutation_array_axis1"] = record(mx.random.permutation(x, axis=1, key=k))
    out["randint"] = record(mx.random.randint(0, 10, (3, 4), key=k))
    out["randint_neg_int16"] = record(mx.random.randint(-5, 5, (6,), dtype=mx.int16, key=k))
    out["randint_array_bounds"] = record(mx.random.randint(mx.array([0, 10]), mx.array([5, 100]), (3, 2), key=k))
    out["truncated_normal"] = record(mx.random.truncated_normal(-1.0, 1.0, (3, 4), key=k))
    out["truncated_normal_bounds_shape"] = record(
        mx.random.truncated_normal(mx.array([-1.0, 0.0]), mx.array([[1.0], [2.0]]), key=k))
    out["truncated_normal_f16"] = record(mx.random.truncated_normal(-2.0, 0.5, (5,), dtype=mx.float16, key=k))
    out["normal_array_loc_scale"] = record(
        mx.random.normal((2, 3), loc=mx.array([0.0, 10.0, 100.0]), scale=mx.array([1.0, 0.1, 0.01]), key=k))
    out["normal_array_loc_scalar_scale"] = record(mx.random.normal((3,), loc=mx.array([1.0, 2.0, 3.0]), scale=2.0, key=k))
    out["normal_complex"] = record(mx.random.normal((3,), dtype=mx.complex64, key=k))
    out["uniform_f16"] = record(mx.random.uniform(shape=(4,), dtype=mx.float16, key=k))
    out["uniform_array_bounds"] = record(mx.random.uniform(mx.array([0.0, 5.0]), mx.array([1.0, 6.0]), (3, 2), key=k))
    return out


if __name__ == "__main__":
    write("random", cases())
