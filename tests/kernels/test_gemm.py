"""accel/gemm.py: the integer kernels' float products, on one BLAS thread with rows shared by customops'
threads, equal numpy's product and leave the process's BLAS thread count as it was."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from customops.accel import gemm


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((300, 257), (257, 190)), ((3, 40, 25), (3, 25, 960)), ((1, 25), (240, 25, 33)), ((700, 64), (64, 900))],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_product_is_numpys_on_integer_values(a_shape, b_shape, dtype) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-255, 256, a_shape).astype(dtype)
    b = rng.integers(-255, 256, b_shape).astype(dtype)
    expected = np.matmul(a.astype(np.int64), b.astype(np.int64))
    got = gemm.matmul(a, b)
    assert got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got.astype(np.int64), expected)


def test_the_blas_thread_count_is_restored() -> None:
    before = _blas_threads()
    a = np.ones((600, 600), np.float32)
    gemm.matmul(a, a)
    assert _blas_threads() == before
